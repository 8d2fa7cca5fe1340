//! The reader: the one task that reads the transport and routes each message.
//!
//! Its only `.await` is the transport read (and the stop signal beside it). Responses
//! complete their pending entry; progress goes to its request's channel;
//! `notifications/cancelled` trips the handler's token; other notifications go to the
//! notification lane; requests are admitted (and started as tasks, a burst's together)
//! or refused at once. Replies the reader makes itself (errors, pings, busy answers) go
//! on the writer's control queue. That queue is drained by the writer alone, never by
//! user code; when it is full the peer is sending faster than it reads our replies, and
//! the reader waits for the writer before reading more: back-pressure on the flooding
//! peer, with nothing lost.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll, Waker};

use mcpflow_protocol::jsonrpc::{
    DecodeError, Decoded, Notification, decode, peek_notification, peek_response,
};
use mcpflow_protocol::{ErrorCode, ErrorObject, Message, RequestId};
use memchr::memmem::Finder;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::head;
use super::inbound::{NewRequests, Refusal};
use super::pending::{DeferredWakes, Failure, ProgressUpdate, ResultJson};
use super::{Peer, Service, Shared};
use crate::error::{CloseReason, TransportError};
use crate::transport::{FrameKind, FrameReader, InboundFrame};

/// Frames, or bytes of them, handled before deferred wake-ups go out even if more
/// input is buffered.
const WAKE_EVERY_FRAMES: usize = 64;
const WAKE_EVERY_BYTES: usize = 1024 * 1024;

/// Searchers built once: building one per frame costs more than the search.
static RESULT_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"result\""));
static PROGRESS_METHOD: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"notifications/progress"));

pub(crate) async fn run_reader<R: FrameReader>(
    mut reader: R,
    shared: Arc<Shared>,
    service: Arc<dyn Service>,
    peer: Peer,
) {
    // A panic here (in `Service::observe_notification`, say) ends the connection.
    let _on_panic = super::ShutdownOnPanic::new(&shared, "reader");
    let mut router = Router {
        shared: shared.clone(),
        service,
        peer,
        wakes: DeferredWakes::default(),
        new_requests: NewRequests::default(),
    };
    let mut replies = Vec::new();
    let mut since_wake = (0, 0);
    let reason = 'read: loop {
        // Stop first so a close is never delayed by a flood of input.
        if shared.reader_stop.is_stopped() {
            break CloseReason::ClosedLocally;
        }
        // Take what is already buffered without waiting; wake the callers that got
        // events, and start the requests admitted, before waiting for more, so a burst
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

struct Router {
    shared: Arc<Shared>,
    service: Arc<dyn Service>,
    peer: Peer,
    wakes: DeferredWakes,
    /// Admitted requests, started in groups (see [`NewRequests`]).
    new_requests: NewRequests,
}

type Replies = Vec<super::writer::Outbound>;

impl Router {
    /// Wake the callers that got events and start the requests admitted: before the
    /// reader waits, every so often in a long burst, and when it stops.
    fn release(&mut self) {
        self.wakes.wake_all();
        self.new_requests.start();
    }

    fn dispatch(&mut self, frame: InboundFrame, replies: &mut Replies) {
        match frame {
            InboundFrame::Message(bytes) if self.progress_in_place(&bytes) => {}
            InboundFrame::Message(bytes) if head::opens_request(&bytes) => {
                self.request_or_decode(&bytes, replies);
            }
            InboundFrame::Message(bytes) => {
                if let Some(bytes) = self.response_in_place(bytes) {
                    self.request_or_decode(&bytes, replies);
                }
            }
            InboundFrame::RequestFailed { id, error } => {
                if !self.shared.pending.complete(
                    &id,
                    Err(Failure::Transport(error)),
                    &mut self.wakes,
                ) {
                    tracing::debug!(%id, "ignored a transport failure of an unknown or finished request");
                }
            }
            InboundFrame::Oversized { len, prefix, limit } => {
                tracing::warn!(len, limit, "skipped an oversized frame");
                if let Some(id) = sniff_request_id(&prefix) {
                    self.reply_error(
                        replies,
                        Some(id),
                        ErrorObject::new(
                            ErrorCode::INVALID_REQUEST,
                            format!(
                                "invalid request: the message of at least {len} bytes exceeds the limit of {limit} bytes (max_frame_bytes)"
                            ),
                        )
                        .with_data(serde_json::json!({ "maxFrameBytes": limit })),
                    );
                }
            }
        }
    }

    /// A request read from its head, or else any frame by the full decode.
    fn request_or_decode(&mut self, bytes: &[u8], replies: &mut Replies) {
        match head::request_head(bytes) {
            Some(request) => self.route(Message::Request(request), replies),
            None => self.decode_and_route(bytes, replies),
        }
    }

    fn decode_and_route(&mut self, bytes: &[u8], replies: &mut Replies) {
        match decode(bytes) {
            Decoded::Single(Ok(message)) => self.route(message, replies),
            Decoded::Single(Err(e)) => self.reject(&e, replies),
            Decoded::Batch(items) => {
                if self.shared.accept_batches.load(Ordering::Relaxed) {
                    for item in items {
                        match item {
                            Ok(message) => self.route(message, replies),
                            Err(e) => self.reject(&e, replies),
                        }
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

    /// Complete a pending request with a success response whose result stays in its
    /// frame, so the caller decodes it from there and a large result is never copied.
    /// Gives the frame back, with nothing done, for anything else.
    fn response_in_place(&mut self, bytes: Vec<u8>) -> Option<Vec<u8>> {
        // The usual head names the result without reading it; a frame that opens with
        // it and does not match goes to the full decode, which answers requests and
        // completes any other response. Other frames that name `result` near their
        // start (after the id, or first) take the full parse here.
        let (text, id, range) = if bytes.starts_with(head::ID_FIRST) {
            let Some((id, range)) = head::response_head(&bytes) else {
                return Some(bytes);
            };
            match String::from_utf8(bytes) {
                Ok(text) => (text, id, range),
                Err(e) => return Some(e.into_bytes()),
            }
        } else if RESULT_KEY.find(&bytes[..bytes.len().min(160)]).is_some() {
            let text = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => return Some(e.into_bytes()),
            };
            let Some((id, range)) = result_range(&text) else {
                return Some(text.into_bytes());
            };
            (text, id, range)
        } else {
            return Some(bytes);
        };
        let result = match ResultJson::in_frame(text, range) {
            Ok(result) => result,
            Err(text) => return Some(text.into_bytes()),
        };
        if !self
            .shared
            .pending
            .complete(&id, Ok(result), &mut self.wakes)
        {
            tracing::debug!(%id, "ignored a response to an unknown or finished request");
        }
        None
    }

    fn route(&mut self, message: Message, replies: &mut Replies) {
        match message {
            Message::Response(r) => {
                if !self.shared.pending.complete(
                    &r.id,
                    Ok(ResultJson::Owned(r.result)),
                    &mut self.wakes,
                ) {
                    tracing::debug!(id = %r.id, "ignored a response to an unknown or finished request");
                }
            }
            Message::Error(e) => match e.id {
                Some(id) => {
                    if !self.shared.pending.complete(
                        &id,
                        Err(Failure::Rejected(e.error)),
                        &mut self.wakes,
                    ) {
                        tracing::debug!(%id, "ignored an error response to an unknown or finished request");
                    }
                }
                None => {
                    tracing::warn!(error = %e.error, "the peer reported an error about an unreadable message")
                }
            },
            Message::Notification(n) => self.notification(n),
            Message::Request(r) if r.method == "ping" => {
                let empty = RawValue::from_string("{}".to_owned());
                if let Ok(empty) = empty {
                    replies.push(super::outbound(
                        &Message::response(r.id.clone(), empty),
                        FrameKind::Response(Some(r.id)),
                    ));
                }
            }
            Message::Request(r) => {
                let admitted =
                    self.shared
                        .inbound
                        .admit(r, &self.service, &self.peer, &mut self.new_requests);
                if let Err(refusal) = admitted {
                    if matches!(refusal, Refusal::Busy(_)) {
                        tracing::warn!("refused a request: handler slots and queue are full");
                    }
                    let (id, error) = self.shared.inbound.refusal_error(&refusal);
                    self.reply_error(replies, Some(id), error);
                }
            }
        }
    }

    /// Deliver a progress notification for a pending request straight from the frame,
    /// without building a message (a long call may get thousands of them). False, with
    /// nothing done, for anything else: the frame then takes the general path.
    fn progress_in_place(&mut self, bytes: &[u8]) -> bool {
        // A frame that opens with an id is no notification; of the others, only frames
        // that name the method near their start pay for the extra look.
        if bytes.starts_with(head::ID_FIRST) {
            return false;
        }
        // This SDK's layout: the params are read once, straight into the update.
        if let Some((token, update)) = head::progress_params(bytes).and_then(read_report) {
            return self
                .shared
                .pending
                .progress(token, Some(update), &mut self.wakes);
        }
        let head = &bytes[..bytes.len().min(160)];
        if PROGRESS_METHOD.find(head).is_none() {
            return false;
        }
        let Some(("notifications/progress", Some(params))) = peek_notification(bytes) else {
            return false;
        };
        let Some((token, update)) = read_progress(params) else {
            return false;
        };
        self.shared.pending.progress(token, update, &mut self.wakes)
    }

    fn notification(&mut self, n: Notification) {
        match n.method.as_str() {
            "notifications/progress" => {
                if let Some(params) = n.params.as_deref()
                    && let Some((token, update)) = read_progress(params)
                {
                    if self.shared.pending.progress(token, update, &mut self.wakes) {
                        return;
                    }
                    if token
                        .parse::<i64>()
                        .is_ok_and(|t| t < self.shared.next_id.load(Ordering::Relaxed))
                    {
                        tracing::debug!(%token, "ignored progress for a finished request");
                        return;
                    }
                }
                self.enqueue_on_lane(n);
            }
            "notifications/cancelled" => {
                #[derive(Deserialize)]
                struct Cancelled {
                    #[serde(rename = "requestId")]
                    request_id: Option<RequestId>,
                }
                let id = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Cancelled>(p.get()).ok())
                    .and_then(|c| c.request_id);
                match id {
                    Some(id) if self.shared.inbound.cancel(&id) => {
                        tracing::debug!(%id, "the peer cancelled a request");
                    }
                    Some(id) => {
                        tracing::debug!(%id, "ignored a cancellation of an unknown or finished request")
                    }
                    None => tracing::debug!("ignored a cancellation without a readable requestId"),
                }
                self.enqueue_on_lane(n);
            }
            _ => self.enqueue_on_lane(n),
        }
    }

    fn enqueue_on_lane(&mut self, n: Notification) {
        self.service.observe_notification(&n, &self.peer);
        self.shared.lane.push(n);
    }

    fn reject(&mut self, e: &DecodeError, replies: &mut Replies) {
        if e.is_response() {
            tracing::warn!(error = %e, "ignored a malformed response");
            return;
        }
        tracing::debug!(error = %e, "answered a malformed message");
        self.reply_error(replies, e.id().cloned(), e.to_error_object());
    }

    fn reply_error(&mut self, replies: &mut Replies, id: Option<RequestId>, error: ErrorObject) {
        let kind = FrameKind::Response(id.clone());
        replies.push(super::outbound(&Message::error(id, error), kind));
    }
}

/// The id of a response and where its result lies in `text`, by the full parse.
fn result_range(text: &str) -> Option<(RequestId, std::ops::Range<usize>)> {
    let (id, result) = peek_response(text)?;
    let start = result
        .get()
        .as_ptr()
        .addr()
        .checked_sub(text.as_ptr().addr())?;
    Some((id, start..start + result.get().len()))
}

/// Read a progress notification once: the JSON text of its `progressToken` (when that is
/// a string or an integer) and the update itself (`None` when the rest is malformed; the
/// request still counts it as activity, and the update is dropped with a log).
fn read_progress(params: &RawValue) -> Option<(&str, Option<ProgressUpdate>)> {
    #[derive(Deserialize)]
    struct Fields<'a> {
        #[serde(rename = "progressToken", borrow)]
        token: &'a RawValue,
        #[serde(default, borrow)]
        progress: Option<&'a RawValue>,
        #[serde(default, borrow)]
        total: Option<&'a RawValue>,
        #[serde(default, borrow)]
        message: Option<&'a RawValue>,
    }
    fn field<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<Option<T>> {
        match raw {
            None => Some(None),
            Some(raw) => serde_json::from_str(raw.get()).ok().map(Some),
        }
    }
    let fields: Fields<'_> = serde_json::from_str(params.get()).ok()?;
    let text = token_text(fields.token)?;
    let update = (|| {
        Some(ProgressUpdate {
            progress: field(fields.progress)??,
            total: field::<Option<f64>>(fields.total)?.flatten(),
            message: field::<Option<String>>(fields.message)?.flatten(),
        })
    })();
    Some((text, update))
}

/// A well-formed progress report's params read in one pass: the token's JSON text and
/// the update. `None` for anything else, which [`read_progress`] then reads leniently.
fn read_report(params: &[u8]) -> Option<(&str, ProgressUpdate)> {
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
    // (A struct would also be read from an array.)
    if !params.starts_with(b"{") {
        return None;
    }
    let report: Report<'_> = serde_json::from_str(std::str::from_utf8(params).ok()?).ok()?;
    Some((
        token_text(report.token)?,
        ProgressUpdate {
            progress: report.progress,
            total: report.total,
            message: report.message,
        },
    ))
}

/// A progress token's JSON text, when it is a string or an integer.
fn token_text(token: &RawValue) -> Option<&str> {
    let text = token.get();
    (text.starts_with('"') || text.parse::<i64>().is_ok()).then_some(text)
}

/// The id of a request from the first bytes of a frame too large to parse, when it
/// plainly sits at the top level (`{"jsonrpc":"2.0","id":7,...`).
fn sniff_request_id(prefix: &[u8]) -> Option<RequestId> {
    let text = std::str::from_utf8(prefix).ok().or_else(|| {
        let valid = std::str::from_utf8(prefix).err()?.valid_up_to();
        std::str::from_utf8(&prefix[..valid]).ok()
    })?;
    let at = text.find("\"id\"")?;
    let before = &text[..at];
    if before.matches('{').count() != 1
        || before.contains('[')
        || !before.trim_start().starts_with('{')
    {
        return None;
    }
    let rest = text[at + 4..].trim_start().strip_prefix(':')?.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        let end = s.find('"')?;
        let id = &s[..end];
        return (!id.contains('\\')).then(|| RequestId::string(id));
    }
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    let next = rest[digits.len()..].chars().next()?;
    if !matches!(next, ',' | '}' | ' ') {
        return None;
    }
    RequestId::parse_integer(&digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_top_level_ids_only() {
        assert_eq!(
            sniff_request_id(br#"{"jsonrpc":"2.0","id":42,"method":"x","params":{"a":"xxxx"#),
            Some(RequestId::number(42))
        );
        assert_eq!(
            sniff_request_id(br#"{"id":"abc","jsonrpc":"2.0""#),
            Some(RequestId::string("abc"))
        );
        assert_eq!(sniff_request_id(br#"{"params":{"id":3}"#), None);
        assert_eq!(sniff_request_id(br#"{"jsonrpc":"2.0","id":12345"#), None);
    }

    /// The one-pass read of a report agrees with the lenient one on every well-formed
    /// report, and leaves every other one to it (which still finds the token, so the
    /// report counts as activity).
    #[test]
    fn a_report_is_read_in_one_pass_only_when_well_formed() {
        for params in [
            r#"{"progressToken":7,"progress":1}"#,
            r#"{"progressToken":"t-1","progress":2.5,"total":10,"message":"half"}"#,
            r#"{"progressToken":7,"progress":3,"total":null,"message":null,"_meta":{}}"#,
        ] {
            let raw = RawValue::from_string(params.to_owned()).expect("valid JSON");
            let (token, update) = read_report(params.as_bytes()).expect(params);
            let (lenient_token, lenient) = read_progress(&raw).expect(params);
            assert_eq!(token, lenient_token, "{params}");
            assert_eq!(Some(update), lenient, "{params}");
        }
        for (params, lenient_token) in [
            (r#"{"progressToken":7,"progress":"a lot"}"#, Some("7")),
            (r#"{"progressToken":7,"total":3}"#, Some("7")),
            (r#"{"progressToken":7,"progress":1,"progress":2}"#, None),
            (r#"{"progressToken":{"a":1},"progress":1}"#, None),
            (r#"{"progressToken":1.5,"progress":1}"#, None),
            (r#"{"progress":1}"#, None),
        ] {
            assert!(read_report(params.as_bytes()).is_none(), "{params}");
            let raw = RawValue::from_string(params.to_owned()).expect("valid JSON");
            let lenient = read_progress(&raw);
            assert_eq!(
                lenient.as_ref().map(|(token, _)| *token),
                lenient_token,
                "{params}"
            );
            assert!(
                lenient.is_none_or(|(_, update)| update.is_none()),
                "{params}"
            );
        }
        for params in [r#"{"progressToken":7,"progress":1},"id":1"#, "{", "[7,1]"] {
            assert!(read_report(params.as_bytes()).is_none(), "{params}");
        }
    }
}
