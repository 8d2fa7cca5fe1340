//! The server-wide bound on requests served without a session: each 2026-07-28
//! request of its own, and each POST in stateless mode, runs on an engine connection
//! of its own, so the engine's per-connection limit bounds nothing across them. At most
//! `running` of them run at once; up to `queued` more wait for a slot in their POST's
//! task; past that a POST is refused at once with 503 and `Retry-After`.
//! `subscriptions/listen` streams take no slot: they are open for as long as the
//! client listens, and do no work of their own.

use std::sync::Arc;

use axum::http::StatusCode;
use mcpflow_protocol::{ErrorCode, RequestId};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::handlers::{Refusal, refuse};

/// Slots for requests served without a session.
pub(crate) struct SessionlessSlots {
    /// Running and waiting, together.
    admitted: Arc<Semaphore>,
    running: Arc<Semaphore>,
    max_running: usize,
    max_queued: usize,
}

/// A request's hold on its slot, until it is dropped with the request's exchange.
pub(crate) struct SessionlessSlot {
    _admitted: OwnedSemaphorePermit,
    _running: OwnedSemaphorePermit,
}

impl SessionlessSlots {
    pub(crate) fn new(max_running: usize, max_queued: usize) -> Self {
        let max_running = max_running.clamp(1, Semaphore::MAX_PERMITS);
        let max_queued = max_queued.min(Semaphore::MAX_PERMITS - max_running);
        SessionlessSlots {
            admitted: Arc::new(Semaphore::new(max_running + max_queued)),
            running: Arc::new(Semaphore::new(max_running)),
            max_running,
            max_queued,
        }
    }

    /// A slot to run in, once one is free; 503 at once when the queue is full too, or
    /// when the server stops while this request waits.
    pub(crate) async fn admit(
        &self,
        id: Option<&RequestId>,
        stopping: &CancellationToken,
    ) -> Result<SessionlessSlot, Refusal> {
        let busy = |why: String| {
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::INTERNAL_ERROR,
                id.cloned(),
                why,
            )
            .retry_after(1)
        };
        let admitted = self.admitted.clone().try_acquire_owned().map_err(|_| {
            busy(format!(
                "server busy: {} requests without a session running and {} waiting (max_sessionless_requests, sessionless_queue_capacity); try again later",
                self.max_running, self.max_queued
            ))
        })?;
        let running = tokio::select! {
            running = self.running.clone().acquire_owned() => running,
            () = stopping.cancelled() => {
                return Err(busy("the server is shutting down".to_owned()));
            }
        };
        // The semaphores are never closed; were one, the request is refused, not lost.
        let running = running.map_err(|_| busy("the server is shutting down".to_owned()))?;
        Ok(SessionlessSlot {
            _admitted: admitted,
            _running: running,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// `future`'s output, within 5 s of the paused clock.
    async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
        tokio::time::timeout(Duration::from_secs(5), future)
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for: {what}"))
    }

    /// Poll `future` once: whether it is still pending.
    async fn pending<F: std::future::Future>(future: &mut std::pin::Pin<Box<F>>) -> bool {
        std::future::poll_fn(|cx| std::task::Poll::Ready(future.as_mut().poll(cx).is_pending()))
            .await
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_running_slots_requests_wait_and_past_the_queue_are_refused() {
        let slots = SessionlessSlots::new(1, 1);
        let stopping = CancellationToken::new();
        let first = within("a free slot", slots.admit(None, &stopping))
            .await
            .expect("a free slot");
        let mut waiting = Box::pin(slots.admit(None, &stopping));
        assert!(pending(&mut waiting).await, "the second request waits");
        let refused = within(
            "the refusal",
            slots.admit(Some(&RequestId::number(3)), &stopping),
        )
        .await
        .err()
        .expect("running and queue are full");
        let response = axum::response::IntoResponse::into_response(refused);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(response.headers().contains_key("retry-after"));
        drop(first);
        let admitted = within("the waiting request to get the freed slot", waiting).await;
        assert!(admitted.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_request_is_refused_when_the_server_stops() {
        let slots = SessionlessSlots::new(1, 4);
        let stopping = CancellationToken::new();
        let _running = within("a free slot", slots.admit(None, &stopping))
            .await
            .expect("a free slot");
        let waiting = slots.admit(None, &stopping);
        stopping.cancel();
        let refused = within("the wait to end with the server", waiting).await;
        assert!(refused.is_err());
    }
}
