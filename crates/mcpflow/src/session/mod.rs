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
#![doc = include_str!("../../../../docs/concurrency.md")]

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use mcpflow_protocol::jsonrpc::{Notification, Request};
use mcpflow_protocol::{ErrorObject, Message, RequestId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::SessionConfig;
use crate::error::{CloseReason, SessionError};
use crate::transport::{FrameKind, FrameMeta, Transport};

mod cancel;
mod context;
mod head;
mod inbound;
mod lane;
mod pending;
mod pool;
mod reader;
mod reply;
mod stop;
mod writer;

pub use context::RequestContext;
pub use pending::{ProgressCallback, ProgressUpdate, RequestEvent, RequestOptions};
pub use reply::Reply;

use inbound::Inbound;
use lane::NotificationLane;
pub(crate) use pending::ResultJson;
use pending::{Deadline, Failure, PendingEvent, PendingTable};
use pool::FramePool;
use stop::Stop;
use writer::{Direct, DirectWrite, Outbound, Signal};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the session calls for the peer's requests and notifications. The client and
/// the server implement it; most users never do.
///
/// Concurrency contract: requests run concurrently, each in its own task, at most
/// `max_concurrent_requests` at once. Notifications run on the notification lane, one at
/// a time, in receive order; a notification handler may await requests on the same
/// session. [`Service::observe_notification`] runs on the reader itself and must not
/// block.
pub trait Service: Send + Sync + 'static {
    /// Answer one request from the peer: its result, serialized with [`Reply::json`] (or
    /// from raw JSON), or the error to send.
    fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply, ErrorObject>>;

    /// Handle one notification from the peer (on the lane).
    fn handle_notification(&self, notification: Notification, peer: Peer)
    -> BoxFuture<'static, ()>;

    /// Look at a notification as it is read, before it is queued on the lane. Runs on
    /// the reader: cheap, synchronous bookkeeping only (mark a cache stale).
    fn observe_notification(&self, notification: &Notification, peer: &Peer) {
        let _ = (notification, peer);
    }
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
    inbound: Arc<Inbound>,
    lane: Arc<NotificationLane>,
    reader_stop: Stop,
    /// Buffers for small frames on their way to the writer.
    pool: Arc<FramePool>,
}

impl Shared {
    /// The connection has ended: record why (first cause wins), fail every pending
    /// request, stop the reader, and let the lane drain.
    pub(crate) fn shutdown(&self, reason: CloseReason) {
        let _ = self.reason.set(reason);
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
            serialize(&Message::notification(
                "notifications/cancelled",
                Some(params),
            )),
            FrameMeta {
                kind: FrameKind::Notification,
                related,
            },
        );
        // The ordered queue keeps the cancellation behind its request; if it is full,
        // the control queue still gets it out.
        if let Err(mpsc::error::TrySendError::Full(frame)) = self.outbound.try_send(frame) {
            let _ = self.control.try_send(frame);
        }
    }
}

/// A reply the reader queues on the control queue.
pub(crate) fn outbound(message: &Message, kind: FrameKind) -> Outbound {
    Outbound::new(
        serialize(message),
        FrameMeta {
            kind,
            related: None,
        },
    )
}

/// A result at least this large is written after its response's head instead of being
/// copied into one frame buffer with it.
const INLINE_RESULT_BYTES: usize = 64 * 1024;

/// The frame for `message`; a large response's result is not copied.
fn into_frame(message: Message, meta: FrameMeta) -> Outbound {
    match message {
        Message::Response(r) if r.result.get().len() >= INLINE_RESULT_BYTES => {
            let mut head = Vec::with_capacity(64);
            Message::write_response_head(&r.id, &mut head);
            Outbound {
                result: Some(r.result),
                ..Outbound::new(head, meta)
            }
        }
        message => Outbound::new(serialize(&message), meta),
    }
}

fn serialize(message: &Message) -> Vec<u8> {
    let payload = match message {
        Message::Request(r) => r.params.as_ref().map_or(0, |p| p.get().len()),
        Message::Notification(n) => n.params.as_ref().map_or(0, |p| p.get().len()),
        Message::Response(r) => r.result.get().len(),
        Message::Error(_) => 0,
    };
    let mut bytes = Vec::with_capacity(128 + payload);
    message.write_json(&mut bytes);
    bytes
}

/// A handle for sending to the peer: requests, notifications. Cheap to clone.
///
/// Every request has a timeout (the session's `request_timeout` unless
/// [`RequestOptions`] say otherwise), and dropping a request's future sends
/// `notifications/cancelled`.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
    related: Option<RequestId>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("related", &self.related)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl Peer {
    pub(crate) fn with_related(&self, id: RequestId) -> Peer {
        Peer {
            shared: self.shared.clone(),
            related: Some(id),
        }
    }

    /// Send a request and wait for its result.
    ///
    /// # Errors
    /// [`SessionError::Rejected`] with the peer's error, [`SessionError::Timeout`],
    /// [`SessionError::Closed`] when the connection ends first, or
    /// [`SessionError::Codec`] when params or result do not (de)serialize.
    pub async fn request<P, R>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
    ) -> Result<R, SessionError>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        self.request_decoded(method, params, options, |result| {
            serde_json::from_str(result.get())
        })
        .await
    }

    /// As [`request`](Self::request), with the result decoded by `decode` from where it
    /// was read (a large one can then take the frame's buffer).
    pub(crate) async fn request_decoded<P, R>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
        decode: impl FnOnce(ResultJson) -> Result<R, serde_json::Error>,
    ) -> Result<R, SessionError>
    where
        P: Serialize + ?Sized,
    {
        let pending = self
            .start_request(method, options, |id, options| {
                request_frame(method, params, options, id)
            })
            .await?;
        let result = pending.result_json().await?;
        decode(result).map_err(|e| SessionError::Codec {
            method: method.into(),
            detail: format!("unexpected result shape: {e}"),
        })
    }

    /// Send a request with raw params and wait for its raw result.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> Result<Box<RawValue>, SessionError> {
        self.send_request(method, params, options)
            .await?
            .response()
            .await
    }

    /// Send a request and return its [`PendingRequest`], to read progress as a stream
    /// with [`PendingRequest::next_event`].
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended, [`SessionError::Timeout`]
    /// when the writer queue stays full past the timeout, [`SessionError::Codec`] when
    /// progress or `_meta` options are used with params that are not an object.
    pub async fn send_request(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> Result<PendingRequest, SessionError> {
        self.start_request(method, options, |id, options| {
            let (params, alias) = with_meta(method, params, options, id)?;
            let message = Message::request(RequestId::number(id), method, params);
            Ok((serialize(&message), alias))
        })
        .await
    }

    /// Register a request, build its frame with `frame` (given the id; it returns the
    /// bytes and the caller's own progress token, if any) and queue it.
    async fn start_request(
        &self,
        method: &str,
        options: RequestOptions,
        frame: impl FnOnce(i64, &RequestOptions) -> Result<(Vec<u8>, Option<String>), SessionError>,
    ) -> Result<PendingRequest, SessionError> {
        let config = &self.shared.config;
        let now = Instant::now();
        let deadline = Deadline {
            started: now,
            last_activity: now,
            timeout: options.timeout.unwrap_or(config.request_timeout),
            max_total: options.max_total.unwrap_or(config.max_request_timeout),
            reset_on_progress: options.reset_on_progress.unwrap_or(true),
        };
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (bytes, alias) = frame(id, &options)?;
        let (events, sequential) =
            self.shared
                .pending
                .insert(id, alias, deadline)
                .map_err(|reason| SessionError::Closed {
                    method: method.into(),
                    reason,
                })?;
        let mut pending = PendingRequest {
            id,
            method: method_name(method),
            events,
            shared: self.shared.clone(),
            on_progress: options.on_progress,
            finished: false,
            // Nothing to cancel until the request is queued.
            cancellable: false,
            related: self.related.clone(),
        };
        let frame = Outbound::new(
            bytes,
            FrameMeta {
                kind: FrameKind::Request,
                related: self.related.clone(),
            },
        );
        // A sequential caller's request (the only one in flight, after one that was
        // alone too) is written at once when the writer is idle; with more in flight,
        // or at the start of a burst, the writer batches them. Else it is queued at
        // once when there is room; else it waits, bounded by the request's clock.
        let frame = if sequential {
            match self.shared.direct.write_now(frame) {
                Direct::Written => {
                    pending.cancellable = !options.never_cancel;
                    return Ok(pending);
                }
                Direct::Declined(frame) => frame,
            }
        } else {
            frame
        };
        let frame = frame.pooled(&self.shared.pool);
        let queued = match self.shared.outbound.try_send(frame) {
            Ok(()) => Ok(Ok(())),
            Err(mpsc::error::TrySendError::Closed(_)) => Ok(Err(())),
            Err(mpsc::error::TrySendError::Full(frame)) => Box::pin(tokio::time::timeout_at(
                deadline.at(),
                self.shared.outbound.send(frame),
            ))
            .await
            .map(|sent| sent.map_err(drop)),
        };
        match queued {
            Ok(Ok(())) => {
                pending.cancellable = !options.never_cancel;
                Ok(pending)
            }
            Ok(Err(())) => {
                pending.finished = true;
                self.shared.pending.remove(id);
                Err(SessionError::Closed {
                    method: method.into(),
                    reason: self.shared.close_reason(),
                })
            }
            Err(_) => {
                pending.finished = true;
                self.shared.pending.remove(id);
                Err(deadline.expired_error(method))
            }
        }
    }

    /// Send a notification.
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended, [`SessionError::Codec`]
    /// when the params do not serialize.
    pub async fn notify_raw<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), SessionError> {
        // Serialized straight into the frame: notifications (progress above all) are
        // the most frequent message a handler sends.
        let mut bytes = Vec::with_capacity(128);
        Message::write_notification(method, params, &mut bytes).map_err(|e| {
            SessionError::Codec {
                method: method.into(),
                detail: format!("params do not serialize: {e}"),
            }
        })?;
        let frame = Outbound::new(
            bytes,
            FrameMeta {
                kind: FrameKind::Notification,
                related: self.related.clone(),
            },
        )
        .pooled(&self.shared.pool);
        self.shared
            .outbound
            .send(frame)
            .await
            .map_err(|_| SessionError::Closed {
                method: method.into(),
                reason: self.shared.close_reason(),
            })
    }

    /// Ask the transport to end the stream carrying the answer to the request this peer
    /// handle is related to, once what is queued before it is written. Streamable HTTP
    /// does so when the stream can be resumed; other transports ignore it.
    pub(crate) async fn end_related_stream(&self) {
        if self.related.is_none() {
            return;
        }
        let frame = Outbound::signal(Signal::EndStream, self.related.clone());
        let _ = self.shared.outbound.send(frame).await;
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.ended.is_cancelled()
    }

    /// Wait until the connection ends.
    pub async fn closed(&self) {
        self.shared.ended.cancelled().await;
    }

    /// Why the connection ended, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.shared.reason.get().cloned()
    }

    /// Wait until every notification received so far has been handled on the
    /// notification lane. Await it after a call returns to know that the notifications
    /// the peer sent before the response (logs, `list_changed`) have run their handlers.
    /// Returns at once inside a notification handler (it would wait for itself) and once
    /// the connection has ended.
    pub async fn notifications_handled(&self) {
        self.shared.lane.settled().await;
    }

    /// Requests sent and not yet answered.
    pub fn pending_requests(&self) -> usize {
        self.shared.pending.len()
    }

    /// Peer requests admitted and not yet answered (running or queued).
    pub fn requests_in_flight(&self) -> usize {
        self.shared.inbound.in_flight()
    }

    /// Accept JSON-RPC batches from the peer (only protocol 2025-03-26 allows them).
    pub fn set_accept_batches(&self, accept: bool) {
        self.shared.accept_batches.store(accept, Ordering::Relaxed);
    }

    /// The session's configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.shared.config
    }
}

/// A method name to keep with a request: a static string for every method the protocol
/// defines, a copy otherwise.
pub(crate) fn method_name(method: &str) -> Cow<'static, str> {
    use mcpflow_protocol::methods::method::{NOTIFICATIONS, REQUESTS};
    REQUESTS
        .iter()
        .chain(NOTIFICATIONS)
        .find(|known| **known == method)
        .map_or_else(
            || Cow::Owned(method.to_owned()),
            |known| Cow::Borrowed(*known),
        )
}

/// Built once: building a searcher per request costs more than the search.
pub(crate) static META_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"_meta\""));

/// A request's frame with `params` serialized straight into it, the progress token
/// (when asked for, and the params have no `_meta` of their own) written as their first
/// member. Other `_meta` cases go through [`with_meta`].
fn request_frame<P: Serialize + ?Sized>(
    method: &str,
    params: &P,
    options: &RequestOptions,
    id: i64,
) -> Result<(Vec<u8>, Option<String>), SessionError> {
    let codec = |e: serde_json::Error| SessionError::Codec {
        method: method.into(),
        detail: format!("params do not serialize: {e}"),
    };
    let mut bytes = Vec::with_capacity(160);
    Message::write_request_head(&RequestId::number(id), method, &mut bytes);
    // The token is written ahead of the params, so they need not move to make room
    // for it: the params' own `{` becomes the comma after it.
    let token_first = options.want_progress && options.meta.is_none();
    if token_first {
        bytes.push(b'{');
        write_progress_member(&mut bytes, id);
    }
    let start = bytes.len();
    serde_json::to_writer(&mut bytes, params).map_err(codec)?;
    if !options.want_progress && options.meta.is_none() {
        bytes.push(b'}');
        return Ok((bytes, None));
    }
    let simple =
        token_first && bytes.get(start) == Some(&b'{') && META_KEY.find(&bytes[start..]).is_none();
    if !simple {
        // The rare cases: merge into an existing `_meta`, or add the options' entries.
        let text = std::str::from_utf8(&bytes[start..]).map_err(|e| SessionError::Codec {
            method: method.into(),
            detail: e.to_string(),
        })?;
        let raw = RawValue::from_string(text.to_owned()).map_err(codec)?;
        let (params, alias) = with_meta(method, Some(raw), options, id)?;
        let message = Message::request(RequestId::number(id), method, params);
        return Ok((serialize(&message), alias));
    }
    if bytes.get(start + 1) == Some(&b'}') {
        // The params were `{}`: the token is all they hold.
        bytes.truncate(start);
        bytes.push(b'}');
    } else {
        bytes[start] = b',';
    }
    bytes.push(b'}');
    Ok((bytes, None))
}

/// How a request's progress token opens, as [`write_progress_member`] writes it.
const TOKEN_MEMBER: &str = r#""_meta":{"progressToken":"#;

/// Append `"_meta":{"progressToken":ID}`, a member of a request's params.
fn write_progress_member(out: &mut Vec<u8>, id: i64) {
    out.extend_from_slice(TOKEN_MEMBER.as_bytes());
    out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.push(b'}');
}

/// Params that open with a progress token as this SDK's requests write it first
/// (`{"_meta":{"progressToken":TOKEN}` and the rest): the token's text, and what
/// follows its `}`. `None` for params laid out any other way.
pub(crate) fn split_leading_token(params: &str) -> Option<(&str, &str)> {
    params
        .strip_prefix('{')?
        .strip_prefix(TOKEN_MEMBER)?
        .split_once('}')
}

/// Put the progress token and `_meta` entries into the params, as the options ask.
fn with_meta(
    method: &str,
    params: Option<Box<RawValue>>,
    options: &RequestOptions,
    id: i64,
) -> Result<(Option<Box<RawValue>>, Option<String>), SessionError> {
    if !options.want_progress && options.meta.is_none() {
        return Ok((params, None));
    }
    // The common case, a progress token and nothing else: splice it into the object's
    // text instead of parsing and re-serializing the params.
    if options.meta.is_none() {
        let text = params.as_ref().map_or("{}", |p| p.get()).trim_start();
        if let Some(rest) = text.strip_prefix('{')
            && !text.contains("\"_meta\"")
        {
            let rest = rest.trim_start();
            let mut spliced = Vec::with_capacity(48 + rest.len());
            spliced.push(b'{');
            write_progress_member(&mut spliced, id);
            if !rest.starts_with('}') {
                spliced.push(b',');
            }
            spliced.extend_from_slice(rest.as_bytes());
            let spliced = String::from_utf8(spliced).ok();
            if let Some(raw) = spliced.and_then(|text| RawValue::from_string(text).ok()) {
                return Ok((Some(raw), None));
            }
        }
    }
    let codec = |detail: String| SessionError::Codec {
        method: method.into(),
        detail,
    };
    let mut object: serde_json::Map<String, serde_json::Value> = match &params {
        None => serde_json::Map::new(),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|_| codec("progress and `_meta` options need object params".to_owned()))?,
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    let serde_json::Value::Object(meta) = meta else {
        return Err(codec("`_meta` in params must be an object".to_owned()));
    };
    if let Some(extra) = &options.meta {
        meta.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let mut alias = None;
    if options.want_progress {
        match meta.get("progressToken") {
            Some(token) => alias = Some(token.to_string()),
            None => {
                meta.insert("progressToken".to_owned(), id.into());
            }
        }
    }
    let raw = serde_json::value::to_raw_value(&object).map_err(|e| codec(e.to_string()))?;
    Ok((Some(raw), alias))
}

/// A request in flight: read its progress as a stream with [`next_event`](Self::next_event)
/// or wait for the result with [`response`](Self::response). Dropping it before the
/// outcome sends `notifications/cancelled` (unless the request may not be cancelled).
pub struct PendingRequest {
    id: i64,
    method: Cow<'static, str>,
    events: Arc<pending::Events>,
    shared: Arc<Shared>,
    on_progress: Option<ProgressCallback>,
    finished: bool,
    cancellable: bool,
    related: Option<RequestId>,
}

impl fmt::Debug for PendingRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingRequest")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

/// An event of a pending request, its result still where it was read.
enum Step {
    Progress(ProgressUpdate),
    Done(Result<ResultJson, SessionError>),
}

impl PendingRequest {
    /// The request's id.
    pub fn id(&self) -> RequestId {
        RequestId::number(self.id)
    }

    /// The next progress report or the outcome; `None` once the outcome was returned.
    pub async fn next_event(&mut self) -> Option<RequestEvent> {
        Some(match self.next_step().await? {
            Step::Progress(update) => RequestEvent::Progress(update),
            Step::Done(result) => {
                RequestEvent::Done(result.and_then(|r| owned_result(&self.method, r)))
            }
        })
    }

    /// Wait for the result, calling the progress callback (if any) for each report first.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn response(self) -> Result<Box<RawValue>, SessionError> {
        let method = self.method.clone();
        owned_result(&method, self.result_json().await?)
    }

    /// As [`response`](Self::response), with the result left where it was read.
    async fn result_json(mut self) -> Result<ResultJson, SessionError> {
        loop {
            match self.next_step().await {
                Some(Step::Progress(update)) => {
                    if let Some(callback) = &self.on_progress {
                        callback(update);
                    }
                }
                Some(Step::Done(result)) => return result,
                None => {
                    return Err(SessionError::Closed {
                        method: self.method.as_ref().into(),
                        reason: self.shared.close_reason(),
                    });
                }
            }
        }
    }

    async fn next_step(&mut self) -> Option<Step> {
        if self.finished {
            return None;
        }
        loop {
            // The session's sweeper queues the timeout as the outcome, so a response
            // that came first always wins.
            match std::future::poll_fn(|cx| self.events.poll_next(cx)).await {
                PendingEvent::Progress(update) => match update {
                    Some(update) => return Some(Step::Progress(update)),
                    None => tracing::debug!("ignored malformed progress"),
                },
                PendingEvent::Outcome(outcome) => {
                    // A timeout is also told to the peer (`notifications/cancelled`).
                    if matches!(outcome, Err(Failure::Expired(_))) {
                        self.abandon("timed out");
                    }
                    self.finished = true;
                    let result = outcome.map_err(|failure| match failure {
                        Failure::Rejected(error) => SessionError::Rejected {
                            method: self.method.as_ref().into(),
                            error,
                        },
                        Failure::Closed(reason) => SessionError::Closed {
                            method: self.method.as_ref().into(),
                            reason,
                        },
                        Failure::Transport(error) => SessionError::Transport {
                            method: self.method.as_ref().into(),
                            error,
                        },
                        Failure::Expired(deadline) => deadline.expired_error(&self.method),
                    });
                    return Some(Step::Done(result));
                }
            }
        }
    }

    /// Stop waiting and tell the peer (`notifications/cancelled` with `reason`).
    pub fn cancel(mut self, reason: &str) {
        self.abandon(reason);
    }

    fn abandon(&mut self, reason: &str) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.shared.pending.remove(self.id);
        if self.cancellable && !self.shared.ended.is_cancelled() {
            self.shared
                .courtesy_cancel(self.id, reason, self.related.clone());
        }
    }
}

/// A result as a value of its own, for the callers that take one.
fn owned_result(method: &str, result: ResultJson) -> Result<Box<RawValue>, SessionError> {
    result.into_raw().map_err(|e| SessionError::Codec {
        method: method.into(),
        detail: format!("unreadable result: {e}"),
    })
}

impl Drop for PendingRequest {
    fn drop(&mut self) {
        self.abandon("the caller stopped waiting");
    }
}

/// A running connection: owns its reader, writer, lane and request-timer tasks and its
/// request handlers. Dropping it aborts them all; [`Session::close`] ends it in order.
pub struct Session {
    peer: Peer,
    reader: Option<JoinHandle<()>>,
    writer: Option<JoinHandle<()>>,
    lane: Option<JoinHandle<()>>,
    /// Fails pending requests whose time is up; ends with the connection.
    sweeper: Option<JoinHandle<()>>,
    writer_stop: Arc<Stop>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Start the engine on `transport`: reader, writer and notification lane run from
    /// now on, before any handshake.
    pub fn start<T: Transport>(
        transport: T,
        service: Arc<dyn Service>,
        config: SessionConfig,
    ) -> Session {
        let (reader, writer) = transport.split();
        let (outbound_tx, outbound_rx) = mpsc::channel(config.writer_queue_capacity.get());
        // The control queue holds the reader's own replies; sized so a peer must flood
        // us while not reading before one is dropped.
        let (control_tx, control_rx) = mpsc::channel(config.writer_queue_capacity.get().max(1024));
        let sink = writer::sink(writer);
        let direct: Arc<dyn DirectWrite> = Arc::new(writer::DirectWriter::new(
            &sink,
            control_tx.clone(),
            outbound_tx.clone(),
        ));
        let pool = Arc::new(FramePool::default());
        let inbound = Inbound::new(
            config.max_concurrent_requests.get(),
            config.request_queue_capacity,
            config.close_grace,
            outbound_tx.clone(),
            direct.clone(),
            pool.clone(),
        );
        let lane = NotificationLane::new(config.notification_lane_capacity.get());
        let shared = Arc::new(Shared {
            config,
            next_id: AtomicI64::new(1),
            pending: Arc::default(),
            direct,
            outbound: outbound_tx,
            control: control_tx,
            ended: CancellationToken::new(),
            reason: OnceLock::new(),
            accept_batches: AtomicBool::new(false),
            inbound,
            lane: lane.clone(),
            reader_stop: Stop::default(),
            pool,
        });
        let peer = Peer {
            shared: shared.clone(),
            related: None,
        };
        let writer_stop = Arc::new(Stop::default());
        let writer = tokio::spawn(writer::run_writer(
            writer::WriterSink(sink),
            control_rx,
            outbound_rx,
            writer_stop.clone(),
            shared.clone(),
        ));
        let lane = tokio::spawn(lane.run(service.clone(), peer.clone()));
        let sweeper = tokio::spawn({
            let shared = shared.clone();
            async move {
                let _on_panic = ShutdownOnPanic::new(&shared, "request timer");
                pending::run_sweeper(shared.pending.clone(), shared.ended.clone()).await;
            }
        });
        let reader = tokio::spawn(reader::run_reader(reader, shared, service, peer.clone()));
        Session {
            peer,
            reader: Some(reader),
            writer: Some(writer),
            lane: Some(lane),
            sweeper: Some(sweeper),
            writer_stop,
        }
    }

    /// The handle for sending to the peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Wait until the connection ends (the peer closed it, the transport failed, or
    /// `close` was called).
    pub async fn closed(&self) {
        self.peer.closed().await;
    }

    /// End the connection in order, each step bounded by the close grace: stop reading,
    /// fail pending requests, let in-flight handlers finish (when the peer ended the
    /// stream) or cancel them (when this side closes), drain the notification lane,
    /// flush the writer and close the transport (for a child process: close stdin,
    /// wait, `SIGTERM`, `SIGKILL`).
    pub async fn close(mut self) {
        let shared = self.peer.shared.clone();
        let grace = shared.config.close_grace;
        let peer_ended = shared
            .reason
            .get()
            .is_some_and(|r| !matches!(r, CloseReason::ClosedLocally));
        shared.reader_stop.stop();
        if let Some(reader) = self.reader.take() {
            join_bounded(reader, grace, "reader").await;
        }
        shared.shutdown(CloseReason::ClosedLocally);
        if let Some(sweeper) = self.sweeper.take() {
            join_bounded(sweeper, grace, "request timer").await;
        }
        shared.inbound.close(grace, !peer_ended).await;
        if let Some(lane) = self.lane.take() {
            join_bounded(lane, grace, "notification lane").await;
        }
        self.writer_stop.stop();
        if let Some(writer) = self.writer.take() {
            // The transport's own close (a child's shutdown sequence) has its own bounds.
            join_bounded(writer, grace * 4, "writer").await;
        }
    }

    /// Wait for the connection to end, then close it in order.
    pub async fn run_to_end(self) {
        self.closed().await;
        self.close().await;
    }
}

async fn join_bounded(mut handle: JoinHandle<()>, grace: std::time::Duration, what: &str) {
    if tokio::time::timeout(grace, &mut handle).await.is_err() {
        tracing::warn!("{what} did not stop within {grace:?}; aborting it");
        handle.abort();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let shared = &self.peer.shared;
        shared.shutdown(CloseReason::ClosedLocally);
        shared.inbound.abort_all();
        let handles = [
            self.reader.take(),
            self.lane.take(),
            self.sweeper.take(),
            self.writer.take(),
        ];
        for handle in handles.into_iter().flatten() {
            handle.abort();
        }
    }
}

/// Ends the connection when an engine task panics, so that no pending request waits for
/// an answer or a timeout that task would have delivered: they fail at once, naming it.
pub(crate) struct ShutdownOnPanic<'a> {
    shared: &'a Shared,
    task: &'static str,
}

impl<'a> ShutdownOnPanic<'a> {
    pub(crate) fn new(shared: &'a Shared, task: &'static str) -> Self {
        ShutdownOnPanic { shared, task }
    }
}

impl Drop for ShutdownOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!(
                task = self.task,
                "an engine task panicked; closing the connection"
            );
            self.shared.shutdown(CloseReason::EngineStopped(self.task));
        }
    }
}

/// Run a future, turning a panic into `Err(())`.
pub(crate) async fn catch_unwind<F: Future + Unpin>(future: F) -> Result<F::Output, ()> {
    CatchUnwind { inner: future }.await
}

struct CatchUnwind<F> {
    inner: F,
}

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.inner;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(poll) => poll.map(Ok),
            Err(_) => Poll::Ready(Err(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Option<Box<RawValue>> {
        Some(RawValue::from_string(text.to_owned()).expect("valid JSON"))
    }

    fn spliced(params: Option<Box<RawValue>>, options: &RequestOptions) -> serde_json::Value {
        let (params, _) = with_meta("m", params, options, 7).expect("object params");
        serde_json::from_str(params.expect("params").get()).expect("valid JSON")
    }

    /// Answers every request with its params, after letting the others run.
    struct EchoParams;

    impl Service for EchoParams {
        fn handle_request(
            &self,
            request: Request,
            _cx: RequestContext,
        ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
            Box::pin(async move {
                tokio::task::yield_now().await;
                Ok(Reply::json(&request.params).expect("params serialize"))
            })
        }
        fn handle_notification(&self, _n: Notification, _peer: Peer) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    /// Requests and answers queued to the writer travel in pooled buffers, which the
    /// writer gives back: after a burst each side has spare buffers to use again.
    #[tokio::test]
    async fn queued_frames_go_back_to_the_pool_once_written() {
        let (a, b) = crate::transport::MemoryTransport::pair(64);
        let client = Session::start(a, Arc::new(EchoParams), Default::default());
        let server = Session::start(b, Arc::new(EchoParams), Default::default());
        let peer = client.peer().clone();
        let calls = (0..32).map(|i| {
            let peer = peer.clone();
            async move {
                let echoed: serde_json::Value = peer
                    .request(
                        "test/echo",
                        &serde_json::json!({ "n": i }),
                        RequestOptions::new(),
                    )
                    .await
                    .expect("answered");
                assert_eq!(echoed, serde_json::json!({ "n": i }));
            }
        });
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            futures_util::future::join_all(calls),
        )
        .await
        .expect("a burst of 32 echo requests was not answered within 10 s");
        assert!(
            client.peer().shared.pool.spare() > 0,
            "requests were pooled"
        );
        assert!(server.peer().shared.pool.spare() > 0, "answers were pooled");
        let closed = async { tokio::join!(client.close(), server.close()) };
        tokio::time::timeout(std::time::Duration::from_secs(10), closed)
            .await
            .expect("the two sessions of the burst did not close within 10 s");
    }

    #[test]
    fn the_progress_member_is_written_for_every_id() {
        for (id, text) in [
            (7, r#""_meta":{"progressToken":7}"#),
            (
                i64::MIN,
                r#""_meta":{"progressToken":-9223372036854775808}"#,
            ),
            (i64::MAX, r#""_meta":{"progressToken":9223372036854775807}"#),
        ] {
            let mut out = Vec::new();
            write_progress_member(&mut out, id);
            assert_eq!(out, text.as_bytes());
        }
    }

    #[test]
    fn typed_params_are_framed_as_raw_ones_are() {
        let cases = [
            serde_json::json!({}),
            serde_json::json!({"name": "x", "arguments": {"text": "}{"}}),
            serde_json::json!({"name": "x", "arguments": {"_meta": 1}}),
            serde_json::json!({"_meta": {"k": 1}, "name": "y"}),
            serde_json::json!({"_meta": {"progressToken": "mine"}}),
        ];
        let mut meta = serde_json::Map::new();
        meta.insert("vendor".to_owned(), serde_json::json!(true));
        let options = [
            RequestOptions::new(),
            RequestOptions::new().with_progress_token(),
            RequestOptions::new().with_progress_token().meta(meta),
        ];
        for params in &cases {
            for options in &options {
                let (direct, direct_alias) = request_frame("m", params, options, 7).unwrap();
                let raw = serde_json::value::to_raw_value(params).unwrap();
                let (spliced, alias) = with_meta("m", Some(raw), options, 7).unwrap();
                let framed = serialize(&Message::request(RequestId::number(7), "m", spliced));
                let value = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap();
                assert_eq!(value(&direct), value(&framed), "{params:?}");
                assert_eq!(direct_alias, alias);
            }
        }
        assert!(request_frame("m", &[1], &RequestOptions::new().with_progress_token(), 7).is_err());
        // The token as the params' first member, in one compact frame.
        let progress = RequestOptions::new().with_progress_token();
        for (params, frame) in [
            (
                serde_json::json!({}),
                r#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"progressToken":7}}}"#,
            ),
            (
                serde_json::json!({"name": "x"}),
                r#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"progressToken":7},"name":"x"}}"#,
            ),
        ] {
            let (direct, _) = request_frame("m", &params, &progress, 7).unwrap();
            assert_eq!(String::from_utf8(direct).unwrap(), frame);
        }
    }

    #[test]
    fn progress_tokens_are_spliced_in_or_merged() {
        let progress = RequestOptions::new().with_progress_token();
        assert_eq!(
            spliced(None, &progress),
            serde_json::json!({"_meta": {"progressToken": 7}})
        );
        assert_eq!(
            spliced(raw(" { } "), &progress),
            serde_json::json!({"_meta": {"progressToken": 7}})
        );
        assert_eq!(
            spliced(raw(r#"{"name":"x","arguments":{"a":[1]}}"#), &progress),
            serde_json::json!({"_meta": {"progressToken": 7}, "name": "x", "arguments": {"a": [1]}})
        );
        // Existing `_meta` is merged, and a caller's own token is kept.
        assert_eq!(
            spliced(raw(r#"{"_meta":{"k":1}}"#), &progress),
            serde_json::json!({"_meta": {"k": 1, "progressToken": 7}})
        );
        assert_eq!(
            spliced(raw(r#"{"_meta":{"progressToken":"mine"}}"#), &progress),
            serde_json::json!({"_meta": {"progressToken": "mine"}})
        );
        assert!(with_meta("m", raw("[1]"), &progress, 7).is_err());
    }
}
