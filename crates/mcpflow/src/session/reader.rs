//! The reader: the one task that reads the transport and routes each message.
//!
//! Its only `.await` is the transport read (and the stop signal beside it). Each frame is
//! decoded once, by serde, whatever its key order ([`decode`]); responses complete their
//! pending entry with their result still in the frame; progress goes to its request's
//! channel; `notifications/cancelled` trips the handler's token; other notifications go
//! to the notification lane; requests are admitted (and started as tasks, a burst's
//! together) or refused at once. Replies the reader makes itself (errors, pings, busy
//! answers) go on the writer's control queue. That queue is drained by the writer
//! alone, never by user code; when it is full the peer is sending faster than it reads
//! our replies, and the reader waits for the writer before reading more: back-pressure
//! on the flooding peer, with nothing lost.
//!
//! The routing itself is [`Router`]'s, which a [`FrameRouter`](super::FrameRouter) also
//! runs, in the task a transport received a message in (`route.rs`).

use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use mcpflow_protocol::jsonrpc::{DecodeError, Notification, id_of_prefix, response_id_of_prefix};
use mcpflow_protocol::{ErrorCode, ErrorObject, Message, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::batch::BatchAnswers;
use super::inbound::{NewRequests, Refusal};
use super::options::ProgressUpdate;
use super::pending::{DeferredWakes, Failure};
use super::read::{Item, Items, cancelled};
use super::route::Routing;
use super::throttle::Throttle;
use crate::config::LARGE_MESSAGE_BYTES;
use crate::error::{CloseReason, TransportError};
use crate::transport::{FrameKind, FrameMeta, FrameReader, InboundFrame};

/// Frames, or bytes of them, handled before deferred wake-ups go out even if more
/// input is buffered.
const WAKE_EVERY_FRAMES: usize = 64;
const WAKE_EVERY_BYTES: usize = 1024 * 1024;

pub(crate) async fn run_reader<R: FrameReader>(mut reader: R, routing: Arc<Routing>) {
    let shared = routing.shared.clone();
    // A panic here (in `Service::observe_notification`, say) ends the connection.
    let _on_panic = super::ShutdownOnPanic::new(&shared, "reader");
    let mut router = Router::new(routing);
    let mut replies = Vec::new();
    let mut since_wake = (0, 0);
    let reason = 'read: loop {
        // Stop first so a close is never delayed by a flood of input.
        if shared.reader_stop.is_stopped() {
            break CloseReason::ClosedLocally;
        }
        // Take what is already buffered without waiting; wake the callers that got
        // progress, and start the requests admitted, before waiting for more, so a burst
        // of progress costs a wake-up per burst, not one per report.
        let frame = match buffered_frame(&mut reader) {
            Some(frame) => frame,
            None => {
                router.release();
                since_wake = (0, 0);
                tokio::select! {
                    biased;
                    () = shared.reader_stop.stopped() => break CloseReason::ClosedLocally,
                    frame = reader.read_frame() => frame,
                }
            }
        };
        match frame {
            Ok(Some(frame)) => {
                if let InboundFrame::Message(bytes) = &frame {
                    since_wake.1 += bytes.len();
                }
                router.dispatch(frame, &mut replies);
            }
            Ok(None) => break CloseReason::PeerClosed,
            Err(e) => break CloseReason::Transport(e),
        }
        since_wake.0 += 1;
        if since_wake.0 >= WAKE_EVERY_FRAMES
            || since_wake.1 >= WAKE_EVERY_BYTES
            || (!replies.is_empty() && router.wakes.len() > 0)
        {
            router.release();
            since_wake = (0, 0);
        }
        // Requests never wait behind a full group or a reply that waits for room.
        if router.new_requests.is_full() || !replies.is_empty() {
            router.new_requests.start();
        }
        for reply in replies.drain(..) {
            tokio::select! {
                biased;
                () = shared.reader_stop.stopped() => break 'read CloseReason::ClosedLocally,
                sent = shared.control.send(reply) => if sent.is_err() {
                    break 'read CloseReason::ClosedLocally;
                },
            }
        }
    };
    router.release();
    let refused = lock(&router.routing.busy).take_unreported();
    if refused > 0 {
        tracing::warn!(
            refused,
            "refused more requests before the connection ended: handler slots and queue were full"
        );
    }
    tracing::debug!(%reason, "reader stopped");
    shared.shutdown(reason);
}

/// The next frame if the transport has one ready, without waiting. `read_frame` is
/// cancel-safe, so a poll that is not ready loses nothing.
fn buffered_frame<R: FrameReader>(
    reader: &mut R,
) -> Option<Result<Option<InboundFrame>, TransportError>> {
    let mut cx = Context::from_waker(Waker::noop());
    let read = std::pin::pin!(reader.read_frame());
    match read.poll(&mut cx) {
        Poll::Ready(frame) => Some(frame),
        Poll::Pending => None,
    }
}

/// Routes messages: the reader's own, and one per message a transport routes from
/// elsewhere ([`super::FrameRouter`]).
pub(super) struct Router {
    routing: Arc<Routing>,
    pub(super) wakes: DeferredWakes,
    /// Admitted requests, started in groups (see [`NewRequests`]).
    pub(super) new_requests: NewRequests,
}

type Replies = Vec<super::writer::Outbound>;

fn lock(busy: &Mutex<Throttle>) -> MutexGuard<'_, Throttle> {
    busy.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Router {
    pub(super) fn new(routing: Arc<Routing>) -> Router {
        Router {
            routing,
            wakes: DeferredWakes::default(),
            new_requests: NewRequests::default(),
        }
    }

    /// Wake the callers that got events and start the requests admitted: before the
    /// reader waits, every so often in a long burst, and when it stops.
    fn release(&mut self) {
        self.wakes.wake_all();
        self.new_requests.start();
    }

    pub(super) fn dispatch(&mut self, frame: InboundFrame, replies: &mut Replies) {
        match frame {
            InboundFrame::Message(bytes) => self.route_items(Items::of(&bytes), replies),
            InboundFrame::Read(read) => self.route_items(read.items, replies),
            InboundFrame::RequestFailed { id, error } => {
                if !self
                    .routing
                    .shared
                    .pending
                    .complete(&id, Err(Failure::Transport(error)))
                {
                    tracing::debug!(%id, "ignored a transport failure of an unknown or finished request");
                }
            }
            InboundFrame::Oversized { len, prefix, limit } => {
                tracing::warn!(len, limit, "skipped an oversized frame");
                let too_large = format!(
                    "the message of at least {len} bytes exceeds the limit of {limit} bytes (max_frame_bytes)"
                );
                if let Some(id) = response_id_of_prefix(&prefix) {
                    // A response too large to read: its request fails now, saying why.
                    self.routing
                        .shared
                        .pending
                        .complete(&id, Err(Failure::Unreadable(too_large)));
                } else if let Some(id) = id_of_prefix(&prefix) {
                    self.reply_error(
                        replies,
                        Some(id),
                        ErrorObject::new(
                            ErrorCode::INVALID_REQUEST,
                            format!("invalid request: {too_large}"),
                        )
                        .with_data(serde_json::json!({ "maxFrameBytes": limit })),
                    );
                }
            }
        }
    }

    /// Route a frame's messages.
    fn route_items(&mut self, items: Items<'_>, replies: &mut Replies) {
        match items {
            Items::Single(Ok(item)) => self.route(item, replies, None),
            Items::Single(Err(e)) => self.reject(&e, replies),
            Items::Batch(items) => {
                if self.routing.shared.accept_batches.load(Ordering::Relaxed) {
                    let batch = BatchAnswers::new();
                    let mut own = Vec::new();
                    let answers = if self.routing.whole_batches {
                        &mut own
                    } else {
                        &mut *replies
                    };
                    for item in items {
                        match item {
                            Ok(item) => self.route(item, answers, Some(&batch)),
                            Err(e) => self.reject(&e, answers),
                        }
                    }
                    if self.routing.whole_batches {
                        replies.extend(batch.seal(own));
                    }
                } else {
                    self.reply_error(
                        replies,
                        None,
                        ErrorObject::new(
                            ErrorCode::INVALID_REQUEST,
                            "invalid request: JSON-RPC batches are only accepted under protocol version 2025-03-26",
                        ),
                    );
                }
            }
        }
    }

    /// Route one message; `batch` when it came in one.
    fn route(&mut self, item: Item<'_>, replies: &mut Replies, batch: Option<&Arc<BatchAnswers>>) {
        match item {
            Item::Response { id, result } => {
                // The caller decodes the result from the frame itself: never copied.
                if !self.routing.shared.pending.complete(&id, Ok(result)) {
                    tracing::debug!(%id, "ignored a response to an unknown or finished request");
                }
            }
            Item::Error(e) => match e.id {
                Some(id) => {
                    if !self
                        .routing
                        .shared
                        .pending
                        .complete(&id, Err(Failure::Rejected(e.error)))
                    {
                        tracing::debug!(%id, "ignored an error response to an unknown or finished request");
                    }
                }
                None => {
                    tracing::warn!(error = %e.error, "the peer reported an error about an unreadable message")
                }
            },
            Item::Notification { method, params } => {
                self.notification(method, params);
            }
            // Answered here: liveness must not wait for a handler slot.
            Item::Request(request) if request.method == "ping" => {
                let empty = RawValue::from_string("{}".to_owned());
                if let Ok(empty) = empty {
                    let id = request.id;
                    replies.push(super::encode::outbound(
                        &Message::response(id.clone(), empty),
                        FrameKind::Response(Some(id)),
                    ));
                }
            }
            Item::Request(request) if batch.is_some() && request.method == "initialize" => {
                self.reply_error(
                    replies,
                    Some(request.id),
                    ErrorObject::new(
                        ErrorCode::INVALID_REQUEST,
                        "invalid request: `initialize` must not be part of a JSON-RPC batch",
                    ),
                );
            }
            Item::Request(request) => {
                let admitted = self.routing.shared.inbound.admit(
                    request,
                    &self.routing.service,
                    &self.routing.peer,
                    &mut self.new_requests,
                    batch.filter(|_| self.routing.whole_batches),
                );
                if let Err(refusal) = admitted {
                    if matches!(refusal, Refusal::Busy(_))
                        && let Some(refused) = lock(&self.routing.busy).hit()
                    {
                        tracing::warn!(
                            refused,
                            "refused requests: handler slots and queue are full (SessionConfig::max_concurrent_requests, request_queue_capacity)"
                        );
                    }
                    let (id, error) = self.routing.shared.inbound.refusal_error(&refusal);
                    self.reply_error(replies, Some(id), error);
                }
            }
        }
    }

    fn notification(&mut self, method: Cow<'_, str>, params: Option<Cow<'_, RawValue>>) {
        match &*method {
            "notifications/progress" => {
                if let Some((token, update)) = params.as_deref().and_then(read_progress) {
                    if self
                        .routing
                        .shared
                        .pending
                        .progress(token, update, &mut self.wakes)
                    {
                        return;
                    }
                    if token
                        .parse::<i64>()
                        .is_ok_and(|t| t < self.routing.shared.next_id.load(Ordering::Relaxed))
                    {
                        tracing::debug!(%token, "ignored progress for a finished request");
                        return;
                    }
                }
            }
            "notifications/cancelled" => match cancelled(&method, params.as_deref()) {
                Some(id) if self.routing.shared.inbound.cancel(&id) => {
                    tracing::debug!(%id, "the peer cancelled a request");
                }
                Some(id) => {
                    tracing::debug!(%id, "ignored a cancellation of an unknown or finished request")
                }
                None => tracing::debug!("ignored a cancellation without a readable requestId"),
            },
            _ => {}
        }
        let n = Notification {
            method: method.into_owned(),
            params: params.map(Cow::into_owned),
        };
        self.routing
            .service
            .observe_notification(&n, &self.routing.peer);
        self.routing.shared.lane.push(n);
    }

    fn reject(&mut self, e: &DecodeError, replies: &mut Replies) {
        if e.is_response() {
            // Never answered; the request it answers fails now rather than time out.
            let failed = e.response_to().is_some_and(|id| {
                let failure = Failure::Unreadable(e.to_string());
                self.routing.shared.pending.complete(id, Err(failure))
            });
            if !failed {
                tracing::warn!(error = %e, "ignored a malformed response");
            }
            return;
        }
        tracing::debug!(error = %e, "answered a malformed message");
        self.reply_error(replies, e.id().cloned(), e.to_error_object());
    }

    fn reply_error(&mut self, replies: &mut Replies, id: Option<RequestId>, error: ErrorObject) {
        let kind = FrameKind::Response(id.clone());
        replies.push(super::encode::error_frame(id, error, FrameMeta::new(kind)));
    }
}

/// `part`, text the decoder borrowed from `frame`, as bytes sharing the frame's buffer.
/// A small part of a large frame is copied out instead, so that it does not keep the
/// whole frame alive while a caller holds it.
pub(crate) fn part_of(frame: &Bytes, part: &str) -> Bytes {
    let start = part
        .as_ptr()
        .addr()
        .checked_sub(frame.as_ptr().addr())
        .filter(|start| start + part.len() <= frame.len());
    match start {
        Some(start) if frame.len() < LARGE_MESSAGE_BYTES || part.len() >= frame.len() / 2 => {
            frame.slice(start..start + part.len())
        }
        _ => Bytes::copy_from_slice(part.as_bytes()),
    }
}

/// A progress notification's params, read once: the JSON text of its `progressToken`
/// (a string or an integer) and the report. A report whose other fields are malformed
/// still names its token (the request counts it as activity) but has no update.
fn read_progress(params: &RawValue) -> Option<(&str, Option<ProgressUpdate>)> {
    #[derive(Deserialize)]
    struct Report<'a> {
        #[serde(rename = "progressToken", borrow)]
        token: &'a RawValue,
        progress: f64,
        #[serde(default)]
        total: Option<f64>,
        #[serde(default)]
        message: Option<String>,
    }
    #[derive(Deserialize)]
    struct TokenOnly<'a> {
        #[serde(rename = "progressToken", borrow)]
        token: &'a RawValue,
    }
    // Params are an object or an array (the decoder checked); a struct would also be
    // read from an array.
    if !params.get().starts_with('{') {
        return None;
    }
    let (token, update) = match serde_json::from_str::<Report<'_>>(params.get()) {
        Ok(report) => (
            report.token,
            Some(ProgressUpdate {
                progress: report.progress,
                total: report.total,
                message: report.message,
            }),
        ),
        Err(_) => (
            serde_json::from_str::<TokenOnly<'_>>(params.get())
                .ok()?
                .token,
            None,
        ),
    };
    // A token is an integer or a string: the values a request id may take.
    serde_json::from_str::<RequestId>(token.get()).ok()?;
    Some((token.get(), update))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).expect("valid JSON")
    }

    #[test]
    fn a_report_is_read_in_any_layout_and_a_malformed_one_still_names_its_token() {
        let update = |progress, total, message: Option<&str>| ProgressUpdate {
            progress,
            total,
            message: message.map(str::to_owned),
        };
        for (params, token, expected) in [
            (
                r#"{"progressToken":7,"progress":1}"#,
                "7",
                Some(update(1.0, None, None)),
            ),
            (
                r#"{"progress":2.5,"message":"half","total":10,"progressToken":"t-1"}"#,
                r#""t-1""#,
                Some(update(2.5, Some(10.0), Some("half"))),
            ),
            (
                r#"{ "progressToken" : 7 , "progress" : 3, "total":null,"message":null,"_meta":{}}"#,
                "7",
                Some(update(3.0, None, None)),
            ),
            (r#"{"progressToken":7,"progress":"a lot"}"#, "7", None),
            (r#"{"total":3,"progressToken":7}"#, "7", None),
        ] {
            let raw = raw(params);
            let (read_token, read_update) = read_progress(&raw).expect(params);
            assert_eq!((read_token, read_update), (token, expected), "{params}");
        }
        for params in [
            r#"{"progressToken":{"a":1},"progress":1}"#,
            r#"{"progressToken":1.5,"progress":1}"#,
            r#"{"progressToken":true,"progress":1}"#,
            r#"{"progress":1}"#,
            "[7,1]",
        ] {
            assert!(read_progress(&raw(params)).is_none(), "{params}");
        }
    }

    #[test]
    fn a_part_shares_its_frame_unless_it_is_a_small_part_of_a_large_one() {
        let frame = Bytes::from(r#"{"jsonrpc":"2.0","id":1,"result":{"a":[1,"x"]}}"#);
        let text = std::str::from_utf8(&frame).expect("UTF-8");
        let part = part_of(&frame, &text[33..46]);
        assert_eq!(&part[..], br#"{"a":[1,"x"]}"#);
        assert_eq!(part.as_ptr(), frame[33..].as_ptr(), "a slice of the frame");

        let padding = "p".repeat(2 * LARGE_MESSAGE_BYTES);
        let large = Bytes::from(format!(r#"{{"result":{{"ok":true}},"x":"{padding}"}}"#));
        let text = std::str::from_utf8(&large).expect("UTF-8");
        let part = part_of(&large, &text[10..21]);
        assert_eq!(&part[..], br#"{"ok":true}"#);
        assert_ne!(part.as_ptr(), large[10..].as_ptr(), "copied out");

        let elsewhere = part_of(&frame, "{}");
        assert_eq!(&elsewhere[..], b"{}", "text from elsewhere is copied");
    }
}
