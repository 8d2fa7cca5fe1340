//! [`Stop`]: the signal that ends the reader or the writer, one task waiting on each.
//! A flag and one waker slot, because those loops check it beside their input every
//! time they go idle, and a `CancellationToken` would take a lock each time.

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;

/// A one-way stop signal with a single waiting task.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    stopped: AtomicBool,
    waker: AtomicWaker,
}

impl Stop {
    /// Signal the stop (again is harmless) and wake the waiting task.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// Whether [`stop`](Self::stop) was called.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Resolves once stopped. Cancel-safe. Only one task may wait at a time: a second
    /// one's waker replaces the first's.
    pub(crate) async fn stopped(&self) {
        poll_fn(|cx| self.poll_stopped(cx)).await;
    }

    pub(crate) fn poll_stopped(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_stopped() {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        // A stop between the check and the registration woke no one: check again.
        if self.is_stopped() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_waiting_task_wakes_on_stop() {
        let stop = Arc::new(Stop::default());
        let waiter = tokio::spawn({
            let stop = stop.clone();
            async move { stop.stopped().await }
        });
        // Let the waiter register before the stop (a stop first also ends it at once).
        tokio::task::yield_now().await;
        assert!(!stop.is_stopped());
        stop.stop();
        assert!(stop.is_stopped());
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("the waiter ended within 5 s of the stop")
            .expect("the waiter did not panic");
        // Stopped stays stopped.
        tokio::time::timeout(std::time::Duration::from_secs(5), stop.stopped())
            .await
            .expect("a second wait on a stopped signal ends at once");
    }
}
