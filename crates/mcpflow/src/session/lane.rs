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
use tokio::sync::Notify;

use super::{Peer, Service, catch_unwind};

pub(crate) struct NotificationLane {
    state: Mutex<LaneState>,
    ready: Notify,
    capacity: usize,
}

#[derive(Default)]
struct LaneState {
    queue: VecDeque<Notification>,
    dropped: u64,
    closed: bool,
}

fn coalesces(queued: &Notification, new: &Notification) -> bool {
    queued.method == new.method
        && (new.method.ends_with("/list_changed")
            || (new.method == "notifications/resources/updated"
                && queued.params.as_ref().map(|p| p.get()) == new.params.as_ref().map(|p| p.get())))
}

impl NotificationLane {
    pub(crate) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(NotificationLane {
            state: Mutex::new(LaneState::default()),
            ready: Notify::new(),
            capacity,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue a notification. Never waits.
    pub(crate) fn push(&self, notification: Notification) {
        let mut state = self.lock();
        if state.closed || state.queue.iter().any(|q| coalesces(q, &notification)) {
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
        state.queue.push_back(notification);
        drop(state);
        self.ready.notify_one();
    }

    /// Stop accepting; the run loop ends once the queue is drained.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    /// Handle queued notifications until closed and drained.
    pub(crate) async fn run(self: Arc<Self>, service: Arc<dyn Service>, peer: Peer) {
        loop {
            let next = {
                let mut state = self.lock();
                match state.queue.pop_front() {
                    Some(n) => Some(n),
                    None if state.closed => return,
                    None => None,
                }
            };
            match next {
                Some(notification) => {
                    let method = notification.method.clone();
                    let handled =
                        catch_unwind(service.handle_notification(notification, peer.clone())).await;
                    if handled.is_err() {
                        tracing::error!(%method, "notification handler panicked");
                    }
                }
                None => self.ready.notified().await,
            }
        }
    }
}
