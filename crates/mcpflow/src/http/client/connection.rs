//! State shared by every task of one HTTP client connection: configuration, the
//! session id and protocol version, the handshake messages kept for re-initializing,
//! the requests still owed an answer, and the channel to the session's reader.

use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use mcpflow_protocol::RequestId;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use reqwest::{Method, RequestBuilder, Response, Url};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::TokenProvider;
use super::outgoing::Outgoing;
use super::sse::SseEvent;
use crate::error::TransportError;
use crate::http::{PROTOCOL_VERSION_HEADER, SESSION_ID_HEADER};
use crate::session::Answer;
use crate::transport::{FrameRouter, InboundFrame, ReadFrame};

/// What a POST asks for: a JSON body or an event stream.
pub(super) const ACCEPT_POST: &str = "application/json, text/event-stream";
/// What a GET asks for.
pub(super) const ACCEPT_STREAM: &str = "text/event-stream";
/// Longest part of an error body quoted in an error.
const BODY_SNIPPET_CHARS: usize = 300;
/// Longest wait for an error body to quote.
const BODY_SNIPPET_WAIT: Duration = Duration::from_secs(2);

/// The checked configuration.
pub(super) struct Config {
    pub(super) url: Url,
    pub(super) headers: HeaderMap,
    pub(super) bearer: Option<TokenProvider>,
    pub(super) oauth: Option<Arc<crate::auth::oauth::OAuthClient>>,
    pub(super) max_reconnects: u32,
    pub(super) sse_idle_timeout: Duration,
    pub(super) reconnect_delay: Duration,
    pub(super) close_timeout: Duration,
    pub(super) max_frame_bytes: usize,
    pub(super) reinitialize_on_404: bool,
    pub(super) legacy_sse_fallback: bool,
}

/// What the session's reader receives.
#[derive(Debug)]
pub(super) enum Delivery {
    /// A message, or a request of this side that failed in transport.
    Frame(InboundFrame),
    /// The connection is over (the legacy event stream ended), for this reason.
    End(TransportError),
}

/// Which transport the server speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mode {
    /// Not known until `initialize` is answered.
    Probing,
    /// Streamable HTTP.
    Streamable,
    /// HTTP+SSE of 2024-11-05: POST to this endpoint, answers on the event stream.
    Legacy(Url),
}

/// The session the server assigned.
#[derive(Debug, Clone)]
pub(super) struct SessionId {
    pub(super) header: HeaderValue,
    pub(super) text: String,
}

/// The handshake as this side sent it, for re-initializing after the session expired.
#[derive(Debug, Clone)]
pub(super) struct Handshake {
    pub(super) initialize_id: RequestId,
    pub(super) initialize: Bytes,
    pub(super) initialized: Option<Bytes>,
}

#[derive(Debug)]
struct State {
    mode: Mode,
    session: Option<SessionId>,
    protocol_version: Option<HeaderValue>,
    handshake: Option<Handshake>,
}

/// Requests of this side still owed an answer by one POST (or its resumed stream).
/// Settled once every one was answered, failed or abandoned; a POST without requests
/// (a notification or a response) never settles.
#[derive(Debug, Default)]
pub(super) struct Waiter {
    ids: Mutex<Vec<RequestId>>,
    settled: CancellationToken,
}

impl Waiter {
    pub(super) fn is_settled(&self) -> bool {
        self.settled.is_cancelled()
    }

    /// Run `future` unless the waiter settles first (then `None`). Only for futures
    /// that may be dropped without losing a message.
    pub(super) async fn unless_settled<F: Future>(&self, future: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            () = self.settled.cancelled() => None,
            output = future => Some(output),
        }
    }

    fn remove(&self, id: &RequestId) {
        let mut ids = lock(&self.ids);
        ids.retain(|i| !i.correlates_with(id));
        if ids.is_empty() {
            self.settled.cancel();
        }
    }
}

/// Shared by the reader, the writer and every POST and stream task.
pub(super) struct Connection {
    pub(super) config: Config,
    http: reqwest::Client,
    state: Mutex<State>,
    inbound: mpsc::Sender<Delivery>,
    waiting: Mutex<Vec<(RequestId, Arc<Waiter>)>>,
    tasks: Mutex<JoinSet<()>>,
    stopped: CancellationToken,
    /// Held while re-initializing, so one expired session is replaced once.
    pub(super) reinitializing: tokio::sync::Mutex<()>,
    /// Bumped when the standalone stream is (re)started; older loops stop.
    standalone: AtomicU64,
    /// A 2026-07-28 request was sent: cancelling means closing the request's stream.
    per_request: std::sync::atomic::AtomicBool,
    /// Set by the engine before it reads.
    pub(super) router: OnceLock<FrameRouter>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connection {
    pub(super) fn new(
        config: Config,
        http: reqwest::Client,
        inbound: mpsc::Sender<Delivery>,
    ) -> Self {
        Connection {
            config,
            http,
            state: Mutex::new(State {
                mode: Mode::Probing,
                session: None,
                protocol_version: None,
                handshake: None,
            }),
            inbound,
            waiting: Mutex::new(Vec::new()),
            tasks: Mutex::new(JoinSet::new()),
            stopped: CancellationToken::new(),
            reinitializing: tokio::sync::Mutex::new(()),
            standalone: AtomicU64::new(0),
            router: OnceLock::new(),
            per_request: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Run `task` until it ends or the connection stops.
    pub(super) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut tasks = lock(&self.tasks);
        while tasks.try_join_next().is_some() {}
        if !self.stopped.is_cancelled() {
            tasks.spawn(task);
        }
    }

    /// Stop every task and end reading.
    pub(super) fn stop(&self) {
        self.stopped.cancel();
        lock(&self.tasks).abort_all();
    }

    pub(super) async fn stopped(&self) {
        self.stopped.cancelled().await;
    }

    pub(super) fn mode(&self) -> Mode {
        lock(&self.state).mode.clone()
    }

    pub(super) fn set_mode(&self, mode: Mode) {
        lock(&self.state).mode = mode;
    }

    pub(super) fn session(&self) -> Option<SessionId> {
        lock(&self.state).session.clone()
    }

    pub(super) fn clear_session(&self) {
        lock(&self.state).session = None;
    }

    pub(super) fn handshake(&self) -> Option<Handshake> {
        lock(&self.state).handshake.clone()
    }

    /// Adopt the session id of an `initialize` response, when it carries one.
    pub(super) fn capture_session(&self, response: &Response) {
        let Some(value) = response.headers().get(SESSION_ID_HEADER) else {
            return;
        };
        let Ok(text) = value.to_str() else {
            tracing::warn!("ignored a session id that is not visible ASCII");
            return;
        };
        tracing::debug!(session = text, "the server assigned a session");
        lock(&self.state).session = Some(SessionId {
            header: value.clone(),
            text: text.to_owned(),
        });
    }

    /// Note the negotiated protocol version from an `initialize` result.
    pub(super) fn capture_version(&self, result: &[u8]) {
        #[derive(Deserialize)]
        struct Init<'a> {
            #[serde(rename = "protocolVersion", borrow)]
            protocol_version: Cow<'a, str>,
        }
        if let Ok(init) = serde_json::from_slice::<Init<'_>>(result)
            && let Ok(value) = HeaderValue::from_str(&init.protocol_version)
        {
            tracing::debug!(version = %init.protocol_version, "negotiated protocol version");
            lock(&self.state).protocol_version = Some(value);
        }
    }

    /// Keep the handshake for re-initializing, and stop waiting for requests the
    /// session cancelled.
    pub(super) fn observe_outgoing(&self, outgoing: &Outgoing) {
        if outgoing.is_initialize()
            && let Some(id) = outgoing.meta.id()
        {
            lock(&self.state).handshake = Some(Handshake {
                initialize_id: id.clone(),
                initialize: outgoing.bytes.clone(),
                initialized: None,
            });
        } else if outgoing.is_initialized_notification() {
            if let Some(handshake) = lock(&self.state).handshake.as_mut() {
                handshake.initialized = Some(outgoing.bytes.clone());
            }
        } else if let Some(id) = outgoing.cancels() {
            self.settle(id);
        }
        if outgoing.mirrored().is_some() {
            self.per_request.store(true, Ordering::Relaxed);
        }
    }

    /// Whether 2026-07-28 requests were sent on this connection.
    pub(super) fn is_per_request(&self) -> bool {
        self.per_request.load(Ordering::Relaxed)
    }

    /// An HTTP request with the headers every request carries: `Accept`, the custom
    /// headers, the session id, the protocol version (when `with_version`) and the
    /// access token (with its DPoP proof when the token is bound to a key).
    pub(super) async fn prepare(
        &self,
        method: Method,
        url: Url,
        accept: &'static str,
        with_version: bool,
    ) -> RequestBuilder {
        let authorization = match (&self.config.oauth, &self.config.bearer) {
            // Boxed: a large future that a client without OAuth never needs.
            (Some(oauth), _) => Box::pin(oauth.authorization(method.as_str(), &url)).await,
            (None, Some(provider)) => provider().await.map(|t| (format!("Bearer {t}"), None)),
            (None, None) => None,
        };
        let (session, version) = {
            let state = lock(&self.state);
            (
                state.session.as_ref().map(|s| s.header.clone()),
                state.protocol_version.clone(),
            )
        };
        let mut request = self
            .http
            .request(method, url)
            .headers(self.config.headers.clone())
            .header(ACCEPT, accept);
        if let Some(session) = session {
            request = request.header(SESSION_ID_HEADER, session);
        }
        if with_version && let Some(version) = version {
            request = request.header(PROTOCOL_VERSION_HEADER, version);
        }
        if let Some((authorization, proof)) = authorization
            && let Ok(mut value) = reqwest::header::HeaderValue::from_str(&authorization)
        {
            // Kept out of any debug output, as `bearer_auth` does.
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
            if let Some(proof) = proof {
                request = request.header("DPoP", proof);
            }
        }
        request
    }

    /// Record that `ids` are owed an answer.
    pub(super) fn register(&self, ids: &[RequestId]) -> Arc<Waiter> {
        let waiter = Arc::new(Waiter {
            ids: Mutex::new(ids.to_vec()),
            settled: CancellationToken::new(),
        });
        if !ids.is_empty() {
            let mut waiting = lock(&self.waiting);
            waiting.extend(ids.iter().map(|id| (id.clone(), waiter.clone())));
        }
        waiter
    }

    /// Whether any request is owed an answer.
    pub(super) fn has_pending(&self) -> bool {
        !lock(&self.waiting).is_empty()
    }

    /// `id` was answered or abandoned.
    fn settle(&self, id: &RequestId) {
        let found = {
            let mut waiting = lock(&self.waiting);
            waiting
                .iter()
                .position(|(i, _)| i.correlates_with(id))
                .map(|at| waiting.swap_remove(at).1)
        };
        if let Some(waiter) = found {
            waiter.remove(id);
        }
    }

    /// Fail every request `waiter` still owes with `error`.
    pub(super) async fn fail(&self, waiter: &Waiter, error: TransportError) {
        let ids: Vec<RequestId> = std::mem::take(&mut *lock(&waiter.ids));
        waiter.settled.cancel();
        {
            let mut waiting = lock(&self.waiting);
            waiting.retain(|(i, _)| !ids.iter().any(|id| id.correlates_with(i)));
        }
        for id in ids {
            tracing::warn!(%id, %error, "request failed in transport");
            let frame = InboundFrame::RequestFailed {
                id,
                error: error.clone(),
            };
            self.hand_over(frame).await;
        }
    }

    /// Fail the requests of `outgoing`, or log when it has none (a notification or a
    /// response: nothing waits for it).
    pub(super) async fn fail_frame(
        &self,
        outgoing: &Outgoing,
        waiter: &Waiter,
        error: TransportError,
    ) {
        if outgoing.is_request() {
            self.fail(waiter, error).await;
        } else {
            tracing::warn!(%error, "could not send {}", outgoing.describe());
        }
    }

    /// Route `frame` from this task, or queue it for the reader if the engine is not
    /// reading.
    async fn hand_over(&self, frame: InboundFrame) {
        if let Err(frame) = FrameRouter::route_if_set(&self.router, frame).await {
            let _ = self.inbound.send(Delivery::Frame(frame)).await;
        }
    }

    /// End the connection: the reader returns `error`.
    pub(super) async fn end(&self, error: TransportError) {
        let _ = self.inbound.send(Delivery::End(error)).await;
    }

    /// Pass an event's message to the reader.
    pub(super) async fn deliver_event(&self, event: SseEvent) {
        if !event.is_message() {
            if !event.event.is_empty() && event.event != "message" {
                tracing::debug!(event = %event.event, "ignored an event of an unknown type");
            }
            return;
        }
        match event.oversized {
            Some(len) => {
                let frame = InboundFrame::Oversized {
                    len,
                    prefix: event.data,
                    limit: self.config.max_frame_bytes,
                };
                self.hand_over(frame).await;
            }
            None => self.deliver(event.data).await,
        }
    }

    /// Pass a message (or a batch, split into its messages) to the reader, noting the
    /// answers it carries. A result without an id (some servers answer notifications
    /// with one) is dropped.
    pub(super) async fn deliver(&self, bytes: Vec<u8>) {
        if bytes.trim_ascii_start().starts_with(b"[") {
            let items = serde_json::from_slice::<Vec<&RawValue>>(&bytes).map(|items| {
                items
                    .into_iter()
                    .map(|i| i.get().as_bytes().to_vec())
                    .collect::<Vec<_>>()
            });
            if let Ok(items) = items {
                for item in items {
                    self.deliver_one(item).await;
                }
                return;
            }
        }
        self.deliver_one(bytes).await;
    }

    async fn deliver_one(&self, bytes: Vec<u8>) {
        // Read once: the session routes what is read here.
        let read = ReadFrame::read(Bytes::from(bytes));
        let answers = match read.answer() {
            Answer::Unaddressed => {
                tracing::debug!("dropped a response without a readable id");
                return;
            }
            Answer::Nothing => None,
            Answer::To(id, result) => {
                if let Some(result) = result
                    && self
                        .handshake()
                        .is_some_and(|h| h.initialize_id.correlates_with(id))
                {
                    self.capture_version(result);
                }
                Some(id.clone())
            }
        };
        self.hand_over(InboundFrame::Read(read)).await;
        // Only once the answer is queued for the reader may its POST stop reading.
        if let Some(id) = answers {
            self.settle(&id);
        }
    }

    /// The generation of a newly started standalone stream.
    pub(super) fn next_standalone(&self) -> u64 {
        self.standalone.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether the standalone stream of `generation` is still the current one.
    pub(super) fn is_current_standalone(&self, generation: u64) -> bool {
        self.standalone.load(Ordering::Relaxed) == generation
    }

    /// Send `DELETE` with the session id (streamable HTTP only), bounded by the close
    /// timeout. A 405 means the server does not let clients end sessions.
    pub(super) async fn terminate_session(&self) {
        if self.mode() != Mode::Streamable {
            return;
        }
        let Some(session) = self.session() else {
            return;
        };
        let delete = async {
            self.prepare(Method::DELETE, self.config.url.clone(), ACCEPT_POST, true)
                .await
                .send()
                .await
        };
        match tokio::time::timeout(self.config.close_timeout, delete).await {
            Ok(Ok(response)) => tracing::debug!(
                session = session.text,
                status = response.status().as_u16(),
                "ended the session"
            ),
            Ok(Err(e)) => {
                tracing::debug!(session = session.text, error = %describe(&e), "DELETE failed")
            }
            Err(_) => tracing::debug!(session = session.text, "DELETE got no answer in time"),
        }
    }
}

/// A reqwest error with its chain of causes (`... : tcp connect error: Connection refused`).
pub(super) fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The start of a response body, for an error message.
pub(super) async fn body_snippet(response: Response) -> String {
    use futures_util::StreamExt;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    let read = async {
        while body.len() < BODY_SNIPPET_CHARS * 4 {
            match stream.next().await {
                Some(Ok(chunk)) => body.extend_from_slice(&chunk),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(BODY_SNIPPET_WAIT, read).await;
    snippet_of(&body)
}

/// A body as one trimmed line of at most [`BODY_SNIPPET_CHARS`] characters for an error.
pub(super) fn snippet_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".to_owned();
    }
    match text.char_indices().nth(BODY_SNIPPET_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Whether a response is an event stream.
pub(super) fn is_event_stream(response: &Response) -> bool {
    content_type(response).starts_with("text/event-stream")
}

/// The response's content type, lowercased (empty when absent).
pub(super) fn content_type(response: &Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}
