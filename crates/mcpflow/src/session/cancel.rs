//! One request's cancellation state, shared by the table of running requests, the
//! request's task and its handler: an atomic and a waker, because a
//! [`CancellationToken`] takes a lock on every clone, check and drop; the token a
//! handler may ask for is made only when it asks.

use std::future::poll_fn;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering, fence};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;
use tokio_util::sync::CancellationToken;

/// States above running (0).
const CANCELLED: u8 = 1;
/// Cancelled, and the handler is to be dropped without a grace.
const ABORTED: u8 = 2;

/// Whether a request was cancelled (by the peer or a close) or aborted (its handler
/// outlived the last grace).
#[derive(Debug, Default)]
pub(crate) struct RequestCancel {
    state: AtomicU8,
    waker: AtomicWaker,
    /// Made the first time a handler asks for a token.
    token: OnceLock<CancellationToken>,
}

impl RequestCancel {
    /// Cancel the request: its handler's token trips and its task stops waiting for it.
    pub(crate) fn cancel(&self) {
        self.raise(CANCELLED);
    }

    /// Cancel the request and have its task drop the handler at once.
    pub(crate) fn abort(&self) {
        self.raise(ABORTED);
    }

    fn raise(&self, to: u8) {
        if self.state.fetch_max(to, Ordering::SeqCst) >= to {
            return;
        }
        // Pairs with the fence in `token`: either that sees the state, or this sees
        // the token.
        fence(Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
        self.waker.wake();
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.state.load(Ordering::Acquire) >= CANCELLED
    }

    /// The token a handler holds, tripped with the request.
    pub(crate) fn token(&self) -> &CancellationToken {
        let token = self.token.get_or_init(CancellationToken::new);
        fence(Ordering::SeqCst);
        if self.state.load(Ordering::SeqCst) >= CANCELLED {
            token.cancel();
        }
        token
    }

    /// Resolves once the request is cancelled (or aborted).
    pub(crate) async fn cancelled(&self) {
        poll_fn(|cx| self.poll_at_least(CANCELLED, cx)).await;
    }

    /// Resolves once the request is aborted.
    pub(crate) async fn aborted(&self) {
        poll_fn(|cx| self.poll_at_least(ABORTED, cx)).await;
    }

    /// Only the request's own task waits (for cancellation around its handler, for
    /// abortion around all of it), so one waker serves both.
    fn poll_at_least(&self, state: u8, cx: &mut Context<'_>) -> Poll<()> {
        if self.state.load(Ordering::Acquire) >= state {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        if self.state.load(Ordering::Acquire) >= state {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_asked_for_before_or_after_cancel_is_tripped() {
        let before = RequestCancel::default();
        let token = before.token().clone();
        assert!(!token.is_cancelled());
        before.cancel();
        assert!(token.is_cancelled() && before.is_cancelled());

        let after = RequestCancel::default();
        after.cancel();
        assert!(after.token().is_cancelled());
    }

    #[test]
    fn waits_end_at_the_state_asked_for_and_wake_the_task() {
        use std::future::Future;
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        use std::task::{Wake, Waker};

        struct Wakes(AtomicUsize);
        impl Wake for Wakes {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let woken = || wakes.0.load(Ordering::SeqCst);

        let cancel = RequestCancel::default();
        let mut cancelled = std::pin::pin!(cancel.cancelled());
        let mut aborted = std::pin::pin!(cancel.aborted());
        assert!(cancelled.as_mut().poll(&mut cx).is_pending());
        assert!(aborted.as_mut().poll(&mut cx).is_pending());

        cancel.cancel();
        assert_eq!(woken(), 1);
        assert!(cancelled.as_mut().poll(&mut cx).is_ready());
        assert!(
            aborted.as_mut().poll(&mut cx).is_pending(),
            "cancelled is not aborted"
        );

        cancel.abort();
        assert_eq!(woken(), 2);
        assert!(aborted.as_mut().poll(&mut cx).is_ready());

        // Abort never steps back to cancelled, and a repeat wakes no one.
        cancel.cancel();
        cancel.abort();
        assert_eq!(woken(), 2);
        assert_eq!(cancel.state.load(Ordering::Acquire), ABORTED);
    }
}
