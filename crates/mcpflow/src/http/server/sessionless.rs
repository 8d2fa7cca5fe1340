//! Streamable HTTP, 2026-07-28 shape: a POST without `Mcp-Session-Id` whose request is
//! a 2026-07-28 one is served on its own, without a session. Its headers must agree with
//! its body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`: 400 +
//! -32020), and a JSON error answer gets the HTTP status the spec gives its code (404
//! for -32601, 400 for the envelope errors). Each such request runs on an engine
//! connection of its own, which lives as long as the request. A 2026-07-28 POST that is
//! not one request is a notification (202) or refused ([`not_a_request`]); its GET or
//! DELETE gets 405 ([`post_only`]).

use std::borrow::Cow;
use std::sync::Arc;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{ErrorCode, HANDSHAKE_VERSIONS, PER_REQUEST_VERSIONS, RequestId};
use serde_json::Value;

use super::handlers::{Refusal, decided, json_response, refuse, sse_response, stream_error};
use super::session::{First, HttpSession, JsonAnswer, Reply, ReplyMode, StreamError};
use super::table::AppState;
use crate::http::{PROTOCOL_VERSION_HEADER, SESSION_ID_HEADER};
use crate::server::{Principal, Server, is_per_request};
use crate::session::ReadRequest;
use crate::transport::{InboundFrame, ReadFrame};

const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// The one request of a 2026-07-28 POST.
pub(crate) struct SessionlessPost {
    pub(crate) id: RequestId,
    /// `subscriptions/listen`: a stream, which takes no slot.
    pub(crate) listen: bool,
}

/// Whether a POST without a session carries a 2026-07-28 request: its body has the
/// envelope (or a method only that era has), or its `MCP-Protocol-Version` names no
/// handshake version (a handshake `initialize` without the envelope stays handshake era).
pub(crate) fn is_sessionless_post(headers: &HeaderMap, request: &ReadRequest) -> bool {
    if is_per_request(&request.method, request.head()) {
        return true;
    }
    let header_per_request = version_header(headers)
        .is_some_and(|v| !HANDSHAKE_VERSIONS.iter().any(|h| h.as_str() == v));
    header_per_request && request.method != method::INITIALIZE
}

fn version_header(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(PROTOCOL_VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
}

/// The 2026-07-28 version a message without a session names in `MCP-Protocol-Version`,
/// when `server` serves that era. `None` for any other.
fn per_request_version<'a>(server: &Server, headers: &'a HeaderMap) -> Option<&'a str> {
    let version = version_header(headers)?;
    (server.serves_per_request() && PER_REQUEST_VERSIONS.iter().any(|v| v.as_str() == version))
        .then_some(version)
}

/// 405 for a GET or a DELETE without a session from a 2026-07-28 client: that version
/// has neither (its endpoint takes POST only; `subscriptions/listen` is its stream).
pub(crate) fn post_only(server: &Server, headers: &HeaderMap, what: &str) -> Result<(), Refusal> {
    if headers.contains_key(SESSION_ID_HEADER) {
        return Ok(());
    }
    match per_request_version(server, headers) {
        Some(version) => Err(refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::INVALID_REQUEST,
            None,
            format!("{version} has no {what}: its endpoint takes POST only"),
        )),
        None => Ok(()),
    }
}

/// The answer to a POST without a session whose `MCP-Protocol-Version` is a 2026-07-28
/// one and whose body is not one request (those go to [`check`] and [`post`]). That
/// version's body is a single request or notification: a notification is accepted
/// (202) and changes nothing, as the version defines none for HTTP (a request is
/// cancelled by closing its stream); a batch or a response is refused, saying why.
/// `None` for a POST of another version, or to a server that does not serve 2026-07-28.
pub(crate) fn not_a_request(
    server: &Server,
    headers: &HeaderMap,
    frame: &ReadFrame,
) -> Option<Result<Response, Refusal>> {
    let version = per_request_version(server, headers)?;
    let refused = |message: String| {
        Some(Err(refuse(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            None,
            message,
        )))
    };
    if frame.is_batch() {
        return refused(format!(
            "a {version} POST carries one message: JSON-RPC batches are not part of this version"
        ));
    }
    if frame.is_notification() {
        return Some(Ok(StatusCode::ACCEPTED.into_response()));
    }
    refused(format!(
        "a {version} client POSTs requests and notifications only: this server sends it no requests to answer"
    ))
}

fn mismatch(id: &RequestId, message: String) -> Refusal {
    refuse(
        StatusCode::BAD_REQUEST,
        ErrorCode::HEADER_MISMATCH,
        Some(id.clone()),
        message,
    )
}

/// A header value, with the `=?base64?...?=` sentinel decoded.
fn decoded<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<Cow<'a, str>>, ()> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| ())?;
    if let Some(inner) = text
        .strip_prefix("=?base64?")
        .and_then(|t| t.strip_suffix("?="))
    {
        let bytes = STANDARD.decode(inner).map_err(|_| ())?;
        return String::from_utf8(bytes)
            .map(|s| Some(Cow::Owned(s)))
            .map_err(|_| ());
    }
    Ok(Some(Cow::Borrowed(text)))
}

/// Check the headers of a 2026-07-28 POST against its body.
pub(crate) fn check(
    server: &Server,
    headers: &HeaderMap,
    request: &ReadRequest,
) -> Result<SessionlessPost, Refusal> {
    let id = &request.id;
    let method_name = request.method.as_str();
    if !Server::has_per_request_method(method_name) {
        // Some (`ping`) the engine itself would answer; a 2026-07-28 request gets none.
        return Err(refuse(
            StatusCode::NOT_FOUND,
            ErrorCode::METHOD_NOT_FOUND,
            Some(id.clone()),
            format!("method not found: {method_name} (not a 2026-07-28 method)"),
        ));
    }
    let head = request.head();
    let meta = head.meta();
    let header = |name: &str| {
        decoded(headers, name).map_err(|()| mismatch(id, format!("header `{name}` is not valid")))
    };
    match header(PROTOCOL_VERSION_HEADER)? {
        None => {
            return Err(mismatch(
                id,
                "missing MCP-Protocol-Version header".to_owned(),
            ));
        }
        Some(sent) => {
            let body = meta
                .and_then(|m| m.protocol_version.as_ref())
                .and_then(|v| v.decode::<String>().ok());
            if let Some(body) = body
                && body != sent
            {
                return Err(mismatch(
                    id,
                    format!(
                        "MCP-Protocol-Version `{sent}` does not match `_meta` protocolVersion `{body}`"
                    ),
                ));
            }
        }
    }
    match header(METHOD_HEADER)? {
        Some(sent) if sent == method_name => {}
        Some(sent) => {
            return Err(mismatch(
                id,
                format!("Mcp-Method `{sent}` does not match the body's method `{method_name}`"),
            ));
        }
        None => return Err(mismatch(id, "missing Mcp-Method header".to_owned())),
    }
    let named = match method_name {
        method::TOOLS_CALL | method::PROMPTS_GET => head.name.get(),
        method::RESOURCES_READ => head.uri.get(),
        // Tasks extension: the task id.
        method::TASKS_GET | method::TASKS_CANCEL | mcpflow_protocol::tasks2026::TASKS_UPDATE => {
            head.task_id.get()
        }
        _ => None,
    };
    if let Some(name) = named {
        match header(NAME_HEADER)? {
            Some(sent) if sent == *name => {}
            Some(sent) => {
                return Err(mismatch(
                    id,
                    format!("Mcp-Name `{sent}` does not match `{name}`"),
                ));
            }
            None => return Err(mismatch(id, "missing Mcp-Name header".to_owned())),
        }
    }
    if method_name == method::TOOLS_CALL
        && let Some(tool) = head.name.get()
    {
        let mirrored = server.tool_param_headers(tool);
        if !mirrored.is_empty() {
            let arguments: serde_json::Map<String, Value> = head
                .arguments
                .get()
                .and_then(|a| a.decode().ok())
                .unwrap_or_default();
            for (argument, header_name) in mirrored {
                check_param(headers, id, &header_name, arguments.get(&argument))?;
            }
        }
    }
    Ok(SessionlessPost {
        id: id.clone(),
        listen: method_name == method::SUBSCRIPTIONS_LISTEN,
    })
}

/// One `Mcp-Param-{name}` header against its argument: required when the argument is
/// present and not null, equal to its value (integers compared as numbers).
fn check_param(
    headers: &HeaderMap,
    id: &RequestId,
    header_name: &str,
    argument: Option<&Value>,
) -> Result<(), Refusal> {
    let name = format!("{PARAM_HEADER_PREFIX}{}", header_name.to_ascii_lowercase());
    let sent = decoded(headers, &name)
        .map_err(|()| mismatch(id, format!("header `Mcp-Param-{header_name}` is not valid")))?;
    let expected = match argument {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Ok(()),
    };
    let Some(sent) = sent else {
        return Err(mismatch(
            id,
            format!("missing header `Mcp-Param-{header_name}`"),
        ));
    };
    let numeric_equal = matches!(argument, Some(Value::Number(_)))
        && sent.parse::<f64>().ok() == expected.parse::<f64>().ok();
    if sent == expected || numeric_equal {
        Ok(())
    } else {
        Err(mismatch(
            id,
            format!("header `Mcp-Param-{header_name}` does not match the argument"),
        ))
    }
}

/// The HTTP status a 2026-07-28 JSON answer with this error code gets: 404 for an
/// unknown method, 400 for an envelope or capability refusal, else 200.
pub(crate) fn status_of(error: Option<ErrorCode>) -> StatusCode {
    match error {
        Some(ErrorCode::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            ErrorCode::INVALID_PARAMS
            | ErrorCode::HEADER_MISMATCH
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Serve one 2026-07-28 request without a session: a connection of its own that lives
/// as long as the request.
pub(crate) async fn post(
    state: &Arc<AppState>,
    post: SessionlessPost,
    principal: Option<Extension<Arc<Principal>>>,
    frame: ReadFrame,
    sse_ok: bool,
    json_ok: bool,
) -> Result<Response, Refusal> {
    let slot = if post.listen {
        None
    } else {
        Some(state.slots.admit(Some(&post.id), &state.stopping).await?)
    };
    let (session, transport) = HttpSession::new(String::new(), state.session_settings(false));
    if let Some(Extension(principal)) = principal {
        session.bind(principal);
    }
    // The session keeps no sender of its own: the engine ends once the stream and the
    // cancel guard below are done with theirs.
    let sender = session
        .take_sender()
        .ok_or(StreamError::Gone)
        .map_err(stream_error)?;
    let served = state
        .server
        .serve_per_request(transport, session.principal.clone())
        .wait();
    let (stopping, ended) = (state.stopping.clone(), session.clone());
    let exchange = state.exchanges.start();
    // This task runs the exchange's engine (its tasks joined into one) to its close.
    tokio::spawn(async move {
        let (_exchange, _slot) = (exchange, slot);
        tokio::pin!(served);
        tokio::select! {
            () = &mut served => {}
            () = stopping.cancelled() => {
                ended.terminate();
                served.await;
            }
        }
    });
    let mode = match (sse_ok, json_ok) {
        (true, false) => ReplyMode::Sse,
        (false, _) => ReplyMode::Json,
        (true, true) => ReplyMode::FirstDecides,
    };
    let reply = session
        .open(
            std::slice::from_ref(&post.id),
            mode,
            None,
            Some(sender.clone()),
        )
        .map_err(stream_error)?;
    session
        .deliver(&sender, InboundFrame::Read(frame))
        .await
        .map_err(stream_error)?;
    let cancel = CancelOnDrop::new(sender, session.clone(), post.id.clone());
    let gone = || {
        refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::INTERNAL_ERROR,
            Some(post.id.clone()),
            "the server ended before the request was answered".into(),
        )
    };
    let events = match reply {
        Reply::Sse(events) => events,
        Reply::FirstDecides(first) => match decided(&session, &post.id, first).await {
            Ok(First::Stream(events)) => events,
            Ok(First::Json(answer)) => {
                cancel.disarm();
                return Ok(sessionless_json(answer));
            }
            Err(_) => return Err(gone()),
        },
        Reply::Json(done) => {
            let answered = done.await;
            if answered.is_ok() {
                cancel.disarm();
            }
            let answer = answered
                .map_err(|_| gone())?
                .into_iter()
                .next()
                .unwrap_or(JsonAnswer {
                    body: Bytes::new(),
                    error: None,
                });
            return Ok(sessionless_json(answer));
        }
    };
    let mut response = sse_response(events, state, None);
    // Dropped with the body: after the answer, a cancel of a finished request that the
    // engine ignores.
    let body = std::mem::take(response.body_mut()).into_data_stream();
    *response.body_mut() = Body::from_stream(futures_util::StreamExt::map(body, move |chunk| {
        let _ = &cancel;
        chunk
    }));
    Ok(response)
}

/// A 2026-07-28 JSON answer, with the HTTP status its error code calls for.
fn sessionless_json(answer: JsonAnswer) -> Response {
    json_response(status_of(answer.error), answer.body)
}

/// Cancels a sessionless 2026-07-28 request when its response is dropped before it was
/// answered: a client closing the response stream cancels the request (there is no
/// `notifications/cancelled` over HTTP), so the handler sees its cancellation instead
/// of running on unobserved, and the stream that waited for its answer is released, so
/// the exchange ends.
pub(crate) struct CancelOnDrop {
    inbound: Option<tokio::sync::mpsc::Sender<crate::transport::InboundFrame>>,
    session: Arc<HttpSession>,
    id: RequestId,
}

impl CancelOnDrop {
    pub(crate) fn new(
        inbound: tokio::sync::mpsc::Sender<crate::transport::InboundFrame>,
        session: Arc<HttpSession>,
        id: RequestId,
    ) -> Self {
        CancelOnDrop {
            inbound: Some(inbound),
            session,
            id,
        }
    }

    /// The request was answered: nothing to cancel.
    pub(crate) fn disarm(mut self) {
        self.inbound = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(inbound) = self.inbound.take() else {
            return;
        };
        // The stream owes no answer any more: it ends, and with it its hold on the
        // engine.
        self.session.cancelled(&self.id);
        let cancel = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": &self.id, "reason": "the client closed the response stream"},
        });
        let Ok(bytes) = serde_json::to_vec(&cancel) else {
            return;
        };
        let frame = crate::transport::InboundFrame::Message(bytes.into());
        if let Err(tokio::sync::mpsc::error::TrySendError::Full(frame)) = inbound.try_send(frame)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = inbound.send(frame).await;
            });
        }
    }
}
