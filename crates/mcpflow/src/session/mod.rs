//! The engine: one connection's reader, writer, pending table and its timer,
//! notification lane and request tasks.
//!
//! ```text
//! transport ──frames──▶ reader ──┬─ response ──▶ pending table ──▶ caller (PendingRequest)
//!                                ├─ progress ──▶ that request's channel (before its response)
//!                                ├─ cancelled ─▶ the handler's token
//!                                ├─ notification ▶ lane (one at a time, in order) ▶ Service
//!                                └─ request ───▶ admission ▶ task (under the limit) ▶ Service
//! Peer / handlers ──▶ writer queue ──▶ writer (batches, one flush per batch) ──▶ transport
//! ```
//!
//! Guarantees (each has a named test in `tests/engine.rs`):
//! 1. the reader never waits on user code: its only await is the transport read;
//! 2. notifications are handled one at a time, in receive order, apart from responses,
//!    so a handler may await requests on the same connection; a request's progress is
//!    delivered in order and before its response is returned;
//! 3. peer requests run concurrently under a limit, then wait in a bounded queue, then
//!    get a busy error at once;
//! 4. one writer owns the sink, batches, and flushes once per batch; a stalled peer
//!    slows senders, never the reader;
//! 5. the engine runs before the handshake: `initialize` is a request like any other;
//! 6. every request ends: default timeout, reset by progress, capped in total;
//!    cancellation on timeout and drop; every pending request fails with the cause on
//!    every exit path;
//! 7. close is orderly and bounded; no task outlives its session;
//! 8. bad input gets a JSON-RPC error or a log line, and the connection keeps serving.
//!
//! The files, in the order a message passes them: `reader` (each frame read once, by
//! `read`, then routed), `head` (a request's params read once), `pending` and
//! `deadline` (this side's requests and their clocks), `inbound` (the peer's requests:
//! admission and tasks), `context` (what a handler gets), `lane` (notifications in
//! order), `reply` and `encode` (messages as frames), `writer` (the one task that
//! writes). `peer` and `options` are the sending API;
//! `lifecycle` starts and closes the tasks.
//!
#![doc = include_str!("../../docs/concurrency.md")]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::{Arc, OnceLock};

use mcpflow_protocol::jsonrpc::Notification;
use mcpflow_protocol::{ErrorObject, Message, RequestId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::SessionConfig;
use crate::error::CloseReason;
use crate::transport::FrameMeta;

mod batch;
mod cancel;
mod context;
mod deadline;
mod encode;
mod head;
mod inbound;
mod lane;
mod lifecycle;
mod options;
mod peer;
mod pending;
mod read;
mod reader;
mod reply;
mod route;
mod stop;
mod throttle;
mod writer;

pub use context::RequestContext;
pub use head::JsonText;
pub(crate) use head::{Member, RequestHead};
pub use lifecycle::Session;
pub use options::{ProgressCallback, ProgressUpdate, RequestEvent, RequestOptions};
pub use peer::{Peer, PendingRequest};
#[cfg(feature = "http-client")]
pub(crate) use read::Answer;
pub use read::ReadFrame;
#[cfg(feature = "http-server")]
pub(crate) use read::ReadRequest;
pub use reply::Reply;
pub use route::FrameRouter;

pub(crate) use cancel::RequestCancel;
pub(crate) use lifecycle::{ShutdownOnPanic, catch_unwind};
pub(crate) use peer::method_name;

use inbound::Inbound;
use lane::NotificationLane;
use pending::PendingTable;
use stop::Stop;
use writer::{DirectWrite, Outbound};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the session calls for the peer's requests and notifications. The client and
/// the server implement it; most users never do.
///
/// Concurrency contract: requests run concurrently, each in its own task, at most
/// `max_concurrent_requests` at once. Notifications run on the notification lane, one at
/// a time, in receive order; a notification handler may await requests on the same
/// session. [`Service::observe_notification`] runs where the message is routed and must
/// not block.
pub trait Service: Send + Sync + 'static {
    /// Answer the peer's request for `method`: its result, serialized with
    /// [`Reply::json`] (or from raw JSON), or the error to send. Its id and params are in
    /// `cx` ([`RequestContext::params`], [`RequestContext::decode_params`]).
    fn handle_request(
        &self,
        method: &str,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply, ErrorObject>>;

    /// Handle one notification from the peer (on the lane).
    fn handle_notification(&self, notification: Notification, peer: Peer)
    -> BoxFuture<'static, ()>;

    /// Look at a notification as it is read, before it is queued on the lane. Runs where
    /// the message is routed (the reader, or the task a transport routes it from with a
    /// [`FrameRouter`]): cheap, synchronous bookkeeping only (mark a cache stale).
    fn observe_notification(&self, notification: &Notification, peer: &Peer) {
        let _ = (notification, peer);
    }
}

/// What every request this side sends carries: `_meta` entries (a request's own win over
/// them) and, for the 2026-07-28 envelope, the protocol version its HTTP headers mirror.
pub(crate) struct RequestEnvelope {
    pub(crate) meta: serde_json::Map<String, serde_json::Value>,
    pub(crate) mirrored: Option<Arc<crate::transport::Mirrored>>,
}

/// State shared by the session's tasks and every [`Peer`] handle.
pub(crate) struct Shared {
    config: SessionConfig,
    next_id: AtomicI64,
    pending: Arc<PendingTable>,
    outbound: mpsc::Sender<Outbound>,
    control: mpsc::Sender<Outbound>,
    /// The way past the writer queues, for a sequential caller's requests (the
    /// inbound table holds it too, for answers).
    direct: Arc<dyn DirectWrite>,
    ended: CancellationToken,
    reason: OnceLock<CloseReason>,
    accept_batches: AtomicBool,
    /// What every request this side sends carries (the 2026-07-28 per-request
    /// envelope), set once the era is known.
    envelope: std::sync::RwLock<Option<Arc<RequestEnvelope>>>,
    inbound: Arc<Inbound>,
    lane: Arc<NotificationLane>,
    reader_stop: Stop,
    /// What telemetry reports of this connection.
    facts: crate::telemetry::ConnectionFacts,
}

impl Shared {
    /// The connection has ended: record why (first cause wins), fail every pending
    /// request, stop the reader, and let the lane drain.
    pub(crate) fn shutdown(&self, reason: CloseReason) {
        if self.reason.set(reason).is_ok() {
            let error = match self.reason.get() {
                Some(CloseReason::Transport(_)) => Some("transport"),
                Some(CloseReason::EngineStopped(_)) => Some("_OTHER"),
                _ => None,
            };
            crate::telemetry::session_ended(&self.facts, error);
        }
        let reason = self
            .reason
            .get()
            .cloned()
            .unwrap_or(CloseReason::ClosedLocally);
        self.pending.close(&reason);
        self.lane.close();
        self.reader_stop.stop();
        self.ended.cancel();
    }

    /// Whether the connection ended other than by this side's close (the peer ended it,
    /// the transport failed): in-flight handlers then get the grace to finish.
    fn peer_ended(&self) -> bool {
        self.reason
            .get()
            .is_some_and(|r| !matches!(r, CloseReason::ClosedLocally))
    }

    fn close_reason(&self) -> CloseReason {
        self.reason
            .get()
            .cloned()
            .unwrap_or(CloseReason::ClosedLocally)
    }

    fn courtesy_cancel(&self, id: i64, reason: &str, related: Option<RequestId>) {
        let params = serde_json::json!({ "requestId": id, "reason": reason });
        let Ok(params) = serde_json::value::to_raw_value(&params) else {
            return;
        };
        let frame = Outbound::new(
            encode::serialize(&Message::notification(
                "notifications/cancelled",
                Some(params),
            )),
            FrameMeta::cancellation(RequestId::number(id)).related_to(related),
        );
        // The ordered queue keeps the cancellation behind its request; if it is full,
        // the control queue still gets it out.
        if let Err(mpsc::error::TrySendError::Full(frame)) = self.outbound.try_send(frame) {
            let _ = self.control.try_send(frame);
        }
    }
}
