//! The notification lane: the peer's notifications, handled one at a time in receive
//! order, apart from responses.
//!
//! The reader pushes without waiting. Responses never pass through here, so a
//! notification handler may await requests on the same connection (reload the tool
//! list on `tools/list_changed`) without deadlock. The queue is bounded: a queued
//! `*/list_changed` (or an identical `resources/updated`) absorbs the next one, which
//! loses nothing because the queued one has not been handled yet; past the bound other
//! notifications are dropped with a warning.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use mcpflow_protocol::jsonrpc::Notification;
use tokio::sync::{Notify, watch};

use super::{Peer, Service, catch_unwind};

pub(crate) struct NotificationLane {
    state: Mutex<LaneState>,
    ready: Notify,
    capacity: usize,
    /// The sequence number up to which every offered notification has been handled
    /// (or absorbed, or dropped).
    handled: watch::Sender<u64>,
}

#[derive(Default)]
struct LaneState {
    /// Queued notifications with their sequence numbers.
    queue: VecDeque<(u64, Notification)>,
    /// Notifications offered so far (the last sequence number).
    offered: u64,
    dropped: u64,
    closed: bool,
}

tokio::task_local! {
    /// Set while a notification handler runs, so a barrier awaited from the lane itself
    /// returns at once instead of waiting for its own handler.
    static ON_LANE: ();
}

/// Whether a notification of this method may be absorbed by a queued one.
fn coalescable(method: &str) -> bool {
    method.ends_with("/list_changed") || method == "notifications/resources/updated"
}

/// Whether a queued notification absorbs `new`: the same `list_changed`, or the same
/// `resources/updated` for the same resource.
fn coalesces((_, queued): &(u64, Notification), new: &Notification) -> bool {
    queued.method == new.method
        && (new.method.ends_with("/list_changed")
            || queued.params.as_ref().map(|p| p.get()) == new.params.as_ref().map(|p| p.get()))
}

impl NotificationLane {
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(NotificationLane {
            state: Mutex::new(LaneState::default()),
            ready: Notify::new(),
            capacity,
            handled: watch::channel(0).0,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue a notification. Never waits.
    pub(crate) fn push(&self, notification: Notification) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.offered += 1;
        let seq = state.offered;
        // Only coalescable kinds pay for the scan; a log flood does not.
        if coalescable(&notification.method)
            && state.queue.iter().any(|q| coalesces(q, &notification))
        {
            return;
        }
        if state.queue.len() >= self.capacity {
            state.dropped += 1;
            if state.dropped == 1 || state.dropped.is_multiple_of(1000) {
                tracing::warn!(
                    method = %notification.method,
                    dropped = state.dropped,
                    capacity = self.capacity,
                    "notification lane full; dropping notifications (raise SessionConfig::notification_lane_capacity or handle them faster)"
                );
            }
            return;
        }
        state.queue.push_back((seq, notification));
        drop(state);
        self.ready.notify_one();
    }

    /// Wait until every notification offered so far has been handled. Returns at once
    /// when called from a notification handler (it would otherwise wait for itself) or
    /// once the lane has stopped.
    pub(crate) async fn settled(&self) {
        if ON_LANE.try_with(|()| ()).is_ok() {
            return;
        }
        let target = self.lock().offered;
        let mut handled = self.handled.subscribe();
        let _ = handled.wait_for(|h| *h >= target).await;
    }

    fn mark_handled(&self, seq: u64) {
        self.handled.send_if_modified(|h| {
            let advanced = seq > *h;
            *h = (*h).max(seq);
            advanced
        });
    }

    /// Stop accepting; the run loop ends once the queue is drained.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    /// Release every barrier (the lane will handle nothing more).
    fn release_all(&self) {
        self.handled.send_replace(u64::MAX);
    }

    /// Handle queued notifications until closed and drained.
    pub(crate) async fn run(self: Arc<Self>, service: Arc<dyn Service>, peer: Peer) {
        let _release = ReleaseOnExit(&self);
        loop {
            let next = {
                let mut state = self.lock();
                match state.queue.pop_front() {
                    Some(n) => Some(n),
                    None => {
                        // Drained: everything offered (absorbed or dropped too) is done.
                        let offered = state.offered;
                        let closed = state.closed;
                        drop(state);
                        self.mark_handled(offered);
                        if closed {
                            return;
                        }
                        None
                    }
                }
            };
            match next {
                Some((seq, notification)) => {
                    let method = notification.method.clone();
                    let operation = crate::telemetry::Operation::start(
                        crate::telemetry::Side::Server,
                        super::method_name(&method),
                        None,
                        peer.facts(),
                    );
                    let handler = tracing::Instrument::instrument(
                        service.handle_notification(notification, peer.clone()),
                        operation.span(),
                    );
                    let handled = ON_LANE.scope((), catch_unwind(handler)).await;
                    if handled.is_err() {
                        tracing::error!(%method, "notification handler panicked");
                    }
                    self.mark_handled(seq);
                }
                None => self.ready.notified().await,
            }
        }
    }
}

struct ReleaseOnExit<'a>(&'a NotificationLane);

impl Drop for ReleaseOnExit<'_> {
    fn drop(&mut self) {
        self.0.release_all();
    }
}
