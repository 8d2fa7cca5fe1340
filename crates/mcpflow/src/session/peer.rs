//! [`Peer`], the handle for sending to the other side, and [`PendingRequest`], one
//! request in flight.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use mcpflow_protocol::{Message, RequestId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::deadline::Deadline;
use super::encode::{raw_request_frame, request_frame};
use super::options::{ProgressCallback, ProgressUpdate, RequestEvent, RequestOptions};
use super::pending::{self, Failure, PendingEvent};
use super::writer::{Direct, Outbound, Signal};
use super::{RequestEnvelope, Shared};
use crate::config::SessionConfig;
use crate::error::{CloseReason, SessionError};
use crate::telemetry::{ConnectionFacts, Operation, Side};
use crate::transport::{FrameKind, FrameMeta};

/// A handle for sending to the peer: requests, notifications. Cheap to clone.
///
/// Every request has a timeout (the session's `request_timeout` unless
/// [`RequestOptions`] say otherwise), and dropping a request's future sends
/// `notifications/cancelled`.
#[derive(Clone)]
pub struct Peer {
    pub(super) shared: Arc<Shared>,
    pub(super) related: Option<RequestId>,
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

    /// The same connection, for messages that belong to no request of the peer's.
    pub(crate) fn unrelated(&self) -> Peer {
        Peer {
            shared: self.shared.clone(),
            related: None,
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
        self.request_operated(method, params, options)
            .await
            .map(|(result, _)| result)
    }

    /// As [`request`](Self::request), with the request's telemetry operation, for a
    /// caller that records more of the outcome (a tool result's `isError`).
    pub(crate) async fn request_operated<P, R>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
    ) -> Result<(R, Operation), SessionError>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let pending = self
            .start_request(method, options, |id, options| {
                request_frame(method, params, options, id)
            })
            .await?;
        let operation = pending.operation.clone();
        let result = pending.result_text().await?;
        // Decoded straight from the frame the response came in.
        let result = serde_json::from_slice(&result).map_err(|e| {
            operation.failed("unreadable", "unexpected result shape");
            SessionError::Codec {
                method: method.into(),
                detail: format!("unexpected result shape: {e}"),
            }
        })?;
        Ok((result, operation))
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
            raw_request_frame(method, params, options, id)
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
        let mut options = self.with_request_meta(options);
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
        let operation = self.operation(method, id, &mut options);
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
            operation,
        };
        let meta = FrameMeta::request(
            RequestId::number(id),
            pending.method.clone(),
            options.mirrored.clone(),
        );
        let frame = Outbound::new(bytes, meta.related_to(self.related.clone()));
        // A lone caller's request goes out from this task when the writer is idle,
        // which saves a hand-off; a burst is left to the writer to batch. A queued
        // request waits for room at most until its deadline.
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
        // Open and closed around the queueing: a notification has no answer to wait for.
        let _operation =
            Operation::start(Side::Client, method_name(method), None, &self.shared.facts);
        // Serialized straight into the frame: notifications (progress above all) are
        // the most frequent message a handler sends.
        let meta = if method == PROGRESS {
            FrameMeta::notification(FrameKind::Progress, Cow::Borrowed(PROGRESS))
        } else {
            FrameMeta::notification(FrameKind::Notification, method_name(method))
        };
        let mut bytes = Vec::with_capacity(128);
        Message::write_notification(method, params, &mut bytes).map_err(|e| {
            SessionError::Codec {
                method: method.into(),
                detail: format!("params do not serialize: {e}"),
            }
        })?;
        let frame = Outbound::new(bytes, meta.related_to(self.related.clone()));
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

    /// Put these `_meta` entries on every request sent from now on (`None`: stop). A
    /// request's own [`RequestOptions::meta`] entries win over them. (The client sets the
    /// 2026-07-28 per-request envelope its own way, which also tells the HTTP transport
    /// what to mirror into headers.)
    pub fn set_request_meta(&self, meta: Option<serde_json::Map<String, serde_json::Value>>) {
        self.set_envelope(meta.map(|meta| RequestEnvelope {
            meta,
            mirrored: None,
        }));
    }

    /// Put `envelope` on every request sent from now on (`None`: stop).
    pub(crate) fn set_envelope(&self, envelope: Option<RequestEnvelope>) {
        let mut slot = self
            .shared
            .envelope
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *slot = envelope.map(Arc::new);
    }

    fn with_request_meta(&self, mut options: RequestOptions) -> RequestOptions {
        let envelope = self
            .shared
            .envelope
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(envelope) = envelope {
            if options.mirrored.is_none() {
                options.mirrored.clone_from(&envelope.mirrored);
            }
            options.envelope = Some(envelope);
        }
        options
    }

    /// The client span of request `id`, its trace context put into the request's
    /// `_meta` (a caller's own `traceparent` wins).
    fn operation(&self, method: &str, id: i64, options: &mut RequestOptions) -> Operation {
        let operation = Operation::start(
            Side::Client,
            method_name(method),
            options.subject.as_deref(),
            &self.shared.facts,
        );
        operation.set_id(&RequestId::number(id));
        if let Some(context) = operation.trace_context() {
            let meta = options.meta.get_or_insert_with(serde_json::Map::new);
            if !meta.contains_key("traceparent") {
                meta.extend(context);
            }
        }
        operation
    }

    /// What telemetry reports of this connection.
    pub(crate) fn facts(&self) -> &ConnectionFacts {
        &self.shared.facts
    }

    /// Which side of the connection this is (the client or server layer says), for
    /// telemetry.
    pub(crate) fn note_side(&self, side: Side) {
        let _ = self.shared.facts.side.set(side);
    }

    /// The protocol version this connection negotiated, for telemetry.
    pub(crate) fn note_version(&self, version: &str) {
        let _ = self
            .shared
            .facts
            .version
            .set(crate::telemetry::version_text(version));
    }

    /// The session's configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.shared.config
    }
}

/// The method of progress notifications, the most frequent message a handler sends.
const PROGRESS: &str = mcpflow_protocol::methods::method::PROGRESS;

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
    operation: Operation,
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
    Done(Result<Bytes, SessionError>),
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
        owned_result(&method, self.result_text().await?)
    }

    /// As [`response`](Self::response), with the result's JSON text left where it was read.
    async fn result_text(mut self) -> Result<Bytes, SessionError> {
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
                    if let Err(failure) = &outcome {
                        self.record(failure);
                    }
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
                        Failure::Unreadable(reason) => SessionError::Codec {
                            method: self.method.as_ref().into(),
                            detail: format!(
                                "the response is unreadable, its result lost: {reason}"
                            ),
                        },
                        Failure::Expired(deadline) => deadline.expired_error(&self.method),
                    });
                    return Some(Step::Done(result));
                }
            }
        }
    }

    /// Record on the request's span how it failed.
    fn record(&self, failure: &Failure) {
        let operation = &self.operation;
        match failure {
            Failure::Rejected(error) => operation.rejected(error.code, &error.message),
            Failure::Closed(reason) => operation.failed("closed", &reason.to_string()),
            Failure::Transport(error) => operation.failed("transport", &error.to_string()),
            Failure::Unreadable(reason) => operation.failed("unreadable", reason),
            Failure::Expired(_) => operation.failed("timeout", "no answer in time"),
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
        self.operation.failed("cancelled", reason);
        self.finished = true;
        self.shared.pending.remove(self.id);
        if self.cancellable && !self.shared.ended.is_cancelled() {
            self.shared
                .courtesy_cancel(self.id, reason, self.related.clone());
        }
    }
}

/// A result as a value of its own, for the callers that take one.
fn owned_result(method: &str, result: Bytes) -> Result<Box<RawValue>, SessionError> {
    serde_json::from_slice(&result).map_err(|e| SessionError::Codec {
        method: method.into(),
        detail: format!("unreadable result: {e}"),
    })
}

impl Drop for PendingRequest {
    fn drop(&mut self) {
        self.abandon("the caller stopped waiting");
    }
}
