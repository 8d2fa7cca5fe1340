//! The POST, GET and DELETE handlers of the MCP endpoint.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use mcpflow_protocol::{ErrorCode, ErrorObject, Message, RequestId};
use tokio::sync::oneshot;

use super::body::read_body;
use super::checks::{accepts, check_session_version, header, precheck, stated_version};
use super::events::{EventReceiver, parse_event_id, sse_body};
use super::fleet::{self, tail};
use super::new_session_id;
use super::posted::{Posted, ReadAhead};
use super::session::{First, HttpSession, Reply, ReplyMode, StreamError};
use super::table::AppState;
use crate::http::{LAST_EVENT_ID_HEADER, SESSION_ID_HEADER};
use crate::server::Principal;
use crate::transport::InboundFrame;

/// An HTTP error with a JSON-RPC error body (no id unless known), as the spec allows.
#[derive(Debug)]
pub(crate) struct Refusal {
    status: StatusCode,
    code: ErrorCode,
    id: Option<RequestId>,
    message: String,
    /// Close the connection after answering (the request was not read to its end).
    close: bool,
    /// Seconds for `Retry-After`.
    retry_after: Option<u32>,
}

impl Refusal {
    /// Close the connection after this answer.
    pub(crate) fn closing(mut self) -> Self {
        self.close = true;
        self
    }

    /// Ask the client to retry after `seconds`.
    pub(crate) fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        tracing::debug!(status = %self.status, message = %self.message, "refused an HTTP request");
        let body =
            Message::error(self.id, ErrorObject::new(self.code, self.message)).to_json_string();
        let mut response =
            (self.status, [(CONTENT_TYPE, "application/json")], body).into_response();
        let headers = response.headers_mut();
        if self.status == StatusCode::METHOD_NOT_ALLOWED {
            headers.insert("allow", HeaderValue::from_static("POST"));
        }
        if self.close {
            headers.insert(CONNECTION, HeaderValue::from_static("close"));
        }
        if let Some(seconds) = self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

pub(crate) fn refuse(
    status: StatusCode,
    code: ErrorCode,
    id: Option<RequestId>,
    message: String,
) -> Refusal {
    Refusal {
        status,
        code,
        id,
        message,
        close: false,
        retry_after: None,
    }
}

pub(super) fn bad_request(message: impl Into<String>) -> Refusal {
    refuse(
        StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_REQUEST,
        None,
        message.into(),
    )
}

/// The session a request names: 400 without one, 404 when unknown or terminated. In a
/// fleet, a session another instance started is found in the store.
async fn find_session(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    principal: Option<&Arc<Principal>>,
) -> Result<Arc<HttpSession>, Refusal> {
    let Some(id) = header(headers, SESSION_ID_HEADER) else {
        return Err(bad_request(if headers.contains_key(SESSION_ID_HEADER) {
            "Mcp-Session-Id is not visible ASCII, so it names no session of this server"
        } else {
            "missing Mcp-Session-Id header: send `initialize` first and then the session id it returned"
        }));
    };
    if let Some(shared) = &state.config.sessions {
        let session = fleet::endpoint::find(state, shared, id, principal).await?;
        check_session_version(&session, headers)?;
        session.touch();
        return Ok(session);
    }
    match state.session(id) {
        Some(session) => {
            check_session_version(&session, headers)?;
            session.touch();
            Ok(session)
        }
        None => Err(refuse(
            StatusCode::NOT_FOUND,
            ErrorCode::INVALID_REQUEST,
            None,
            format!(
                "session `{id}` is unknown or has been terminated; start a new session with `initialize`"
            ),
        )),
    }
}

pub(super) fn sse_response(
    events: EventReceiver,
    state: &AppState,
    session: Option<&str>,
) -> Response {
    let mut response = Response::new(sse_body(events, state.config.keep_alive));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    with_session(response, session)
}

fn with_session(mut response: Response, session: Option<&str>) -> Response {
    if let Some(id) = session
        && let Ok(value) = HeaderValue::from_str(id)
    {
        response.headers_mut().insert(SESSION_ID_HEADER, value);
    }
    response
}

pub(super) fn stream_error(e: StreamError) -> Refusal {
    match e {
        StreamError::Gone => refuse(
            StatusCode::NOT_FOUND,
            ErrorCode::INVALID_REQUEST,
            None,
            "the session has been terminated; start a new one with `initialize`".into(),
        ),
        StreamError::DuplicateId(id) => refuse(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            Some(id.clone()),
            format!("request id {id} is already in flight in this session"),
        ),
        StreamError::Conflict => refuse(
            StatusCode::CONFLICT,
            ErrorCode::INVALID_REQUEST,
            None,
            "a standalone event stream is already open for this session".into(),
        ),
        StreamError::UnknownEvent => bad_request("Last-Event-ID names no event of this session"),
        StreamError::Expired => refuse(
            StatusCode::GONE,
            ErrorCode::INVALID_REQUEST,
            None,
            "the events after Last-Event-ID are no longer held; the stream cannot be resumed"
                .into(),
        ),
        StreamError::NotResumable => {
            bad_request("this server keeps no events, so streams cannot be resumed")
        }
    }
}

/// `POST /mcp`: one JSON-RPC message or batch.
pub(crate) async fn post(
    State(state): State<Arc<AppState>>,
    principal: Option<Extension<Arc<Principal>>>,
    read_ahead: Option<Extension<ReadAhead>>,
    request: axum::extract::Request,
) -> Result<Response, Refusal> {
    // The request itself rather than a `HeaderMap` extractor, which would copy the headers.
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    precheck(&state, &headers)?;
    let content_type = header(&headers, CONTENT_TYPE.as_str()).unwrap_or("");
    if !content_type
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::INVALID_REQUEST,
            None,
            format!("Content-Type must be application/json, not `{content_type}`"),
        ));
    }
    let (json_ok, sse_ok) = accepts(&headers);
    if !json_ok && !sse_ok {
        return Err(refuse(
            StatusCode::NOT_ACCEPTABLE,
            ErrorCode::INVALID_REQUEST,
            None,
            "Accept must include application/json and text/event-stream".into(),
        ));
    }
    let mut posted = match read_ahead.and_then(|Extension(ahead)| ahead.take()) {
        Some(posted) => posted,
        None => {
            Posted::read(read_body(body, &headers, state.config.body, &state.body_budget).await?)?
        }
    };
    if !state.config.stateless
        && state.server.serves_per_request()
        && !headers.contains_key(SESSION_ID_HEADER)
        && let Some(request) = posted.single()
        && super::sessionless::is_sessionless_post(&headers, request)
    {
        let post = super::sessionless::check(&state.server, &headers, request)?;
        return super::sessionless::post(&state, post, principal, posted.frame, sse_ok, json_ok)
            .await;
    }

    let stateless = state.config.stateless;
    let (session, created) = if stateless {
        // No `initialize` says the version here: the header does.
        let version = stated_version(&headers);
        if posted.batch && !version.supports_batches() {
            return Err(batches_refused());
        }
        let id = posted.single().map(|request| request.id.clone());
        let slot = state.slots.admit(id.as_ref(), &state.stopping).await?;
        let (session, transport) = HttpSession::new(String::new(), state.session_settings(false));
        let served = state.server.serve_as(transport, session.principal.clone());
        served.peer().set_accept_batches(version.supports_batches());
        tokio::spawn(async move {
            let _slot = slot;
            served.wait().await;
        });
        (session, true)
    } else if headers.contains_key(SESSION_ID_HEADER) {
        // An unknown or ended session is 404 first, `initialize` or not: the client
        // starts a new one.
        let principal = principal.as_ref().map(|Extension(p)| p);
        let session = find_session(&state, &headers, principal).await?;
        if posted.initialize.is_some() {
            return Err(bad_request(
                "this session is already initialized; send `initialize` without Mcp-Session-Id to start a new one",
            ));
        }
        if !posted.requests.is_empty() {
            session.mark_used();
        }
        (session, false)
    } else if posted.initialize.is_some() {
        if let Some(shared) = &state.config.sessions {
            fleet::endpoint::make_room(shared, &state).await?;
        }
        let id = new_session_id().map_err(|e| {
            tracing::error!(error = %e, "no session id: the OS random number generator failed");
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::INTERNAL_ERROR,
                None,
                "the server could not generate a session id".into(),
            )
        })?;
        (state.create_session(id, false)?.0, true)
    } else {
        if let Some(answer) =
            super::sessionless::not_a_request(&state.server, &headers, &posted.frame)
        {
            return answer;
        }
        return Err(bad_request(
            "missing Mcp-Session-Id header: send `initialize` first and then the session id it returned",
        ));
    };
    if posted.batch && !stateless && !session.version().is_some_and(|v| v.supports_batches()) {
        return Err(batches_refused());
    }
    // The auth layer checked a named session's owner; a new one is bound here.
    if created && let Some(Extension(principal)) = principal {
        session.bind(principal);
    }
    let shared = state.config.sessions.as_ref().filter(|_| !stateless);
    if created
        && let Some(shared) = shared
        && let Err(refusal) = fleet::endpoint::record(shared, &state, &session, &posted.body).await
    {
        state.remove_session(&session.id);
        return Err(refusal);
    }
    let sender = session
        .sender()
        .ok_or(StreamError::Gone)
        .map_err(stream_error)?;
    for id in &posted.cancels {
        session.cancelled(id);
    }
    session.drain().await;
    let new_id = (created && !stateless).then_some(session.id.as_str());

    if posted.requests.is_empty() {
        // An answer to a server-to-client request of another instance goes to it.
        if let Some(shared) = shared
            && let Some(node) = fleet::endpoint::answer_elsewhere(&posted.frame, shared)
        {
            fleet::endpoint::forward(shared, node, &session.id, &posted.body).await?;
            return Ok(StatusCode::ACCEPTED.into_response());
        }
        session
            .deliver(&sender, InboundFrame::Read(posted.frame))
            .await
            .map_err(stream_error)?;
        return Ok(with_session(StatusCode::ACCEPTED.into_response(), new_id));
    }
    let mode = if !sse_ok || (state.config.json_response && json_ok) {
        ReplyMode::Json
    } else if json_ok && posted.requests.len() == 1 && !posted.batch {
        ReplyMode::FirstDecides
    } else {
        ReplyMode::Sse
    };
    let keep = stateless.then(|| sender.clone());
    let reply = session
        .open(&posted.requests, mode, posted.initialize.as_ref(), keep)
        .map_err(stream_error)?;
    session.drain().await;
    let batch = posted.batch;
    session
        .deliver(&sender, InboundFrame::Read(posted.frame))
        .await
        .map_err(stream_error)?;
    drop(sender);
    let gone = || {
        refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::INTERNAL_ERROR,
            None,
            "the session ended before the request was answered".into(),
        )
    };
    match reply {
        Reply::Sse(events) => Ok(sse_response(events, &state, new_id)),
        Reply::FirstDecides(first) => match decided(&session, &posted.requests[0], first)
            .await
            .map_err(|_| gone())?
        {
            First::Json(answer) => Ok(with_session(
                json_response(StatusCode::OK, answer.body),
                new_id,
            )),
            First::Stream(events) => Ok(sse_response(events, &state, new_id)),
        },
        Reply::Json(done) => {
            let bodies = done.await.map_err(|_| gone())?;
            let body = if batch {
                let mut out = b"[".to_vec();
                for (i, answer) in bodies.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(&answer.body);
                }
                out.push(b']');
                Bytes::from(out)
            } else {
                bodies
                    .into_iter()
                    .next()
                    .map(|answer| answer.body)
                    .unwrap_or_default()
            };
            Ok(with_session(json_response(StatusCode::OK, body), new_id))
        }
    }
}

/// The 400 for a batch under a version without batches.
fn batches_refused() -> Refusal {
    bad_request("JSON-RPC batches are only accepted under protocol version 2025-03-26")
}

/// How long a POST waits for its first message before its answer becomes an event
/// stream anyway: a slow call gets a stream that is primed for resumption and kept
/// alive, a quick one its answer as one JSON body.
const FIRST_MESSAGE_WAIT: Duration = Duration::from_secs(1);

/// What the first message for request `id` decided, or an event stream once
/// [`FIRST_MESSAGE_WAIT`] passed without one.
pub(super) async fn decided(
    session: &HttpSession,
    id: &RequestId,
    mut first: oneshot::Receiver<First>,
) -> Result<First, oneshot::error::RecvError> {
    tokio::select! {
        first = &mut first => return first,
        () = tokio::time::sleep(FIRST_MESSAGE_WAIT) => {}
    }
    session.stream_now(id);
    session.drain().await;
    first.await
}

pub(super) fn json_response(status: StatusCode, body: Bytes) -> Response {
    (status, [(CONTENT_TYPE, "application/json")], body).into_response()
}

/// 405 from a stateless server, for the methods only sessions have.
fn stateful_only(state: &AppState, why: &'static str) -> Result<(), Refusal> {
    if state.config.stateless {
        Err(method_not_allowed(why))
    } else {
        Ok(())
    }
}

/// `GET /mcp`: the standalone event stream, or a resumed one (`Last-Event-ID`).
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    principal: Option<Extension<Arc<Principal>>>,
    headers: HeaderMap,
) -> Result<Response, Refusal> {
    precheck(&state, &headers)?;
    stateful_only(&state, "a stateless server has no standalone event stream")?;
    super::sessionless::post_only(&state.server, &headers, "standalone event stream")?;
    if !accepts(&headers).1 {
        return Err(refuse(
            StatusCode::NOT_ACCEPTABLE,
            ErrorCode::INVALID_REQUEST,
            None,
            "Accept must include text/event-stream".into(),
        ));
    }
    let principal = principal.as_ref().map(|Extension(p)| p);
    let session = find_session(&state, &headers, principal).await?;
    let last = header(&headers, LAST_EVENT_ID_HEADER);
    if last.is_none() && headers.contains_key(LAST_EVENT_ID_HEADER) {
        return Err(bad_request(
            "Last-Event-ID is not visible ASCII, so it names no event",
        ));
    }
    if let Some(shared) = &state.config.sessions
        && let Some(last) = last
    {
        let (stream, seq) = parse_event_id(last)
            .ok_or(StreamError::UnknownEvent)
            .map_err(stream_error)?;
        let idle = state.config.idle_timeout;
        let events = tail::resume(
            shared.clone(),
            session,
            stream,
            seq,
            &state.queue_budget,
            idle,
        )
        .await
        .map_err(|e| match e {
            tail::ResumeError::Stream(e) => stream_error(e),
            tail::ResumeError::Store(e) => fleet::endpoint::unavailable(&e),
        })?;
        return Ok(sse_response(events, &state, None));
    }
    let events = session.get_stream(last).map_err(stream_error)?;
    session.drain().await;
    Ok(sse_response(events, &state, None))
}

/// `DELETE /mcp`: end the session.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    principal: Option<Extension<Arc<Principal>>>,
    headers: HeaderMap,
) -> Result<Response, Refusal> {
    precheck(&state, &headers)?;
    stateful_only(&state, "a stateless server has no sessions to end")?;
    super::sessionless::post_only(&state.server, &headers, "sessions to end")?;
    let principal = principal.as_ref().map(|Extension(p)| p);
    let session = find_session(&state, &headers, principal).await?;
    if let Some(shared) = &state.config.sessions {
        shared
            .remove(&session.id)
            .await
            .map_err(|e| fleet::endpoint::unavailable(&e))?;
    }
    state.remove_session(&session.id);
    Ok(StatusCode::OK.into_response())
}

fn method_not_allowed(why: &str) -> Refusal {
    refuse(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::INVALID_REQUEST,
        None,
        why.to_owned(),
    )
}
