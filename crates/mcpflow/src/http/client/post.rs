//! One POST per outbound frame: send it in order, read the answer (none, a JSON body
//! or an event stream), and turn every failure into a failed request naming the cause.
//! A 404 for an expired session goes to [`expiry`](super::expiry).

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, Response, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::authorize;
use super::connection::{
    ACCEPT_POST, Connection, Mode, Waiter, body_snippet, content_type, describe, is_event_stream,
    snippet_of,
};
use super::expiry::expired;
use super::legacy;
use super::outgoing::Outgoing;
use super::sse::Cursor;
use super::stream::{EventReader, drain, follow, start_standalone};
use crate::error::TransportError;
use crate::transport::Mirrored;
use mcpflow_protocol::ErrorObject;

/// Longest wait for a notification or response to be accepted before the next frame
/// is sent anyway (order is kept while the server answers promptly).
const ACK_WAIT: Duration = Duration::from_secs(5);

/// Lets the next frame's POST go when dropped.
pub(super) type Gate = Option<oneshot::Sender<()>>;

/// POST one frame after the previous one went out.
///
/// A request lets the next frame go as soon as its POST has started (its answer may
/// take long); a notification or response once the server accepted it (at most
/// [`ACK_WAIT`]); `notifications/initialized` once the standalone stream is answered too.
pub(super) async fn send(
    conn: Arc<Connection>,
    outgoing: Outgoing,
    previous: Option<oneshot::Receiver<()>>,
    sent: oneshot::Sender<()>,
) {
    if let Some(previous) = previous {
        let _ = previous.await;
    }
    let waiter = conn.register(outgoing.ids());
    let mut gate = Some(sent);
    post(&conn, &outgoing, &waiter, &mut gate, true).await;
}

/// Send `future`, letting the next frame go once it has started (a request) or once it
/// resolves, at most after [`ACK_WAIT`] (anything else).
async fn acknowledged<F: Future>(future: F, gate: &mut Gate, request: bool) -> F::Output {
    if gate.is_none() {
        return future.await;
    }
    tokio::pin!(future);
    if request {
        let first = std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
        gate.take();
        return match first {
            Poll::Ready(output) => output,
            Poll::Pending => future.await,
        };
    }
    match tokio::time::timeout(ACK_WAIT, &mut future).await {
        Ok(output) => output,
        Err(_) => {
            gate.take();
            future.await
        }
    }
}

pub(super) fn post<'a>(
    conn: &'a Arc<Connection>,
    outgoing: &'a Outgoing,
    waiter: &'a Waiter,
    gate: &'a mut Gate,
    may_reinitialize: bool,
) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
    Box::pin(async move {
        // The cold paths below are boxed so that every POST's future stays small: it is
        // moved into the heap once per frame.
        if let Mode::Legacy(endpoint) = conn.mode() {
            Box::pin(legacy::post(conn, outgoing, waiter, endpoint, gate)).await;
            return;
        }
        // Never send with a session that is being replaced.
        drop(conn.reinitializing.lock().await);
        // 2026-07-28 has no cancellation over HTTP: closing the request's stream (done
        // when its waiter settled) is the cancellation.
        if outgoing.is_cancellation() && conn.is_per_request() && conn.session().is_none() {
            gate.take();
            return;
        }
        let sent_session = conn.session();
        let with_version = !outgoing.is_initialize() && outgoing.mirrored().is_none();
        let mut sends = 0;
        let response = loop {
            let generation = authorize::generation(conn);
            let mut request = conn
                .prepare(
                    Method::POST,
                    conn.config.url.clone(),
                    ACCEPT_POST,
                    with_version,
                )
                .await
                .header(CONTENT_TYPE, "application/json");
            if let Some(mirrored) = outgoing.mirrored() {
                request = per_request_headers(outgoing, mirrored, request);
            }
            let request = request.body(outgoing.bytes.clone());
            // A request answered elsewhere or cancelled meanwhile needs no answer here.
            let Some(response) = waiter
                .unless_settled(acknowledged(request.send(), gate, outgoing.is_request()))
                .await
            else {
                return;
            };
            let response = match response {
                Ok(response) => response,
                Err(e) => {
                    let detail =
                        format!("could not send {}: {}", outgoing.describe(), describe(&e));
                    conn.fail_frame(outgoing, waiter, http("POST", None, detail))
                        .await;
                    return;
                }
            };
            match authorize::after(conn, "POST", &response, generation, &mut sends).await {
                authorize::Step::Proceed => break response,
                authorize::Step::Retry => {}
                authorize::Step::Fail(error) => {
                    conn.fail_frame(outgoing, waiter, error).await;
                    return;
                }
            }
        };
        let status = response.status();
        if outgoing.mirrored().is_some() && !status.is_success() {
            refused_per_request(conn, outgoing, waiter, response).await;
            return;
        }
        if outgoing.is_initialize() {
            conn.capture_session(&response);
            if conn.mode() == Mode::Probing {
                if conn.config.legacy_sse_fallback && matches!(status.as_u16(), 400 | 404 | 405) {
                    // A per-request (2026-07-28) server's refusal is an answer, not a reason to try the
                    // transport of 2024-11-05.
                    let body = read_body(conn, response).await.unwrap_or_default();
                    if per_request_error_for(&body, outgoing).is_some() {
                        conn.deliver(body).await;
                        return;
                    }
                    let body = snippet_of(&body);
                    Box::pin(legacy::fall_back(
                        conn, outgoing, waiter, status, body, gate,
                    ))
                    .await;
                    return;
                }
                if status.is_success() {
                    conn.set_mode(Mode::Streamable);
                }
            }
        }
        if status == StatusCode::NOT_FOUND
            && let Some(session) = sent_session
        {
            Box::pin(expired(
                conn,
                outgoing,
                waiter,
                gate,
                &session.text,
                may_reinitialize,
            ))
            .await;
            return;
        }
        if !status.is_success() {
            let detail = format!(
                "the server rejected {}: {}",
                outgoing.describe(),
                body_snippet(response).await
            );
            conn.fail_frame(
                outgoing,
                waiter,
                http("POST", Some(status.as_u16()), detail),
            )
            .await;
            return;
        }
        if outgoing.is_initialized_notification() {
            start_standalone(conn, gate.take());
        }
        gate.take();
        read_answer(conn, outgoing, waiter, response).await;
    })
}

/// The 2026-07-28 headers of a request, as the client gave them with the frame:
/// `MCP-Protocol-Version` (its `_meta`'s), `Mcp-Method`, `Mcp-Name` (tool or prompt
/// name, resource URI, task id) and `Mcp-Param-*` for the tool's `x-mcp-header`
/// arguments.
fn per_request_headers(
    outgoing: &Outgoing,
    mirrored: &Mirrored,
    mut request: reqwest::RequestBuilder,
) -> reqwest::RequestBuilder {
    request = request
        .header(
            crate::http::PROTOCOL_VERSION_HEADER,
            mirrored.version.as_str(),
        )
        .header("Mcp-Method", outgoing.method().unwrap_or_default());
    if let Some(name) = &mirrored.name {
        request = request.header("Mcp-Name", name);
    }
    for (header, value) in &mirrored.params {
        request = request.header(header, value);
    }
    request
}

/// The JSON-RPC error in `body` when it answers `outgoing` with an error code only 2026-07-28 servers send
/// (or any error carrying the request's id, for a 2026-07-28 request).
fn per_request_error_for(body: &[u8], outgoing: &Outgoing) -> Option<ErrorObject> {
    #[derive(Deserialize)]
    struct Refusal {
        #[serde(default)]
        id: Option<mcpflow_protocol::RequestId>,
        error: ErrorObject,
    }
    let refusal: Refusal = serde_json::from_slice(body).ok()?;
    let ours = refusal
        .id
        .as_ref()
        .is_some_and(|id| outgoing.ids().iter().any(|i| i.correlates_with(id)));
    let per_request_code = crate::client::era_error(refusal.error.code);
    (ours && (per_request_code || outgoing.mirrored().is_some())).then_some(refusal.error)
}

/// A 2026-07-28 request answered with an error status: a JSON-RPC error for it is its
/// answer (`-32022`, `-32020`, `-32602` on 400, `-32601` on 404); any other body fails
/// it with the status, which makes a probe fall back to `initialize`.
async fn refused_per_request(
    conn: &Arc<Connection>,
    outgoing: &Outgoing,
    waiter: &Waiter,
    response: Response,
) {
    let status = response.status();
    let body = match read_body(conn, response).await {
        Ok(body) => body,
        Err(error) => {
            conn.fail_frame(outgoing, waiter, error).await;
            return;
        }
    };
    if per_request_error_for(&body, outgoing).is_some() {
        conn.deliver(body).await;
        if !waiter.is_settled() {
            let detail = format!("the error answer to {} was not taken", outgoing.describe());
            conn.fail(waiter, http("POST", Some(status.as_u16()), detail))
                .await;
        }
        return;
    }
    let detail = format!(
        "the server rejected {}: {}",
        outgoing.describe(),
        snippet_of(&body)
    );
    conn.fail_frame(
        outgoing,
        waiter,
        http("POST", Some(status.as_u16()), detail),
    )
    .await;
}

/// The start of a body, for an error message.
pub(super) fn http(context: &'static str, status: Option<u16>, detail: String) -> TransportError {
    TransportError::Http {
        context,
        status,
        detail,
    }
}

/// Read a successful POST's answer: nothing (202), a JSON body or an event stream.
async fn read_answer(
    conn: &Arc<Connection>,
    outgoing: &Outgoing,
    waiter: &Waiter,
    response: Response,
) {
    let status = response.status();
    if is_event_stream(&response) {
        let reader = EventReader::new(response, Cursor::default(), conn);
        if outgoing.is_request() {
            follow(conn, waiter, reader).await;
        } else {
            drain(conn, reader).await;
        }
        return;
    }
    if status == StatusCode::ACCEPTED {
        if outgoing.is_request() {
            let detail = format!(
                "the server accepted {} with 202 Accepted, which carries no answer",
                outgoing.describe()
            );
            conn.fail(waiter, http("POST", Some(202), detail)).await;
        }
        return;
    }
    let content = content_type(&response);
    let json = content.starts_with("application/json");
    let body = match read_body(conn, response).await {
        Ok(body) => body,
        Err(error) => {
            conn.fail_frame(outgoing, waiter, error).await;
            return;
        }
    };
    if body.trim_ascii().is_empty() {
        if outgoing.is_request() {
            let detail = format!(
                "the server answered {} with an empty body",
                outgoing.describe()
            );
            conn.fail(waiter, http("POST", Some(status.as_u16()), detail))
                .await;
        }
        return;
    }
    if !json && serde_json::from_slice::<&RawValue>(&body).is_err() {
        let text = String::from_utf8_lossy(&body);
        let detail = format!(
            "the server answered {} with `{}`, neither JSON nor an event stream: {}",
            outgoing.describe(),
            content_type_of(&content),
            text.chars().take(300).collect::<String>().trim()
        );
        conn.fail_frame(
            outgoing,
            waiter,
            http("POST", Some(status.as_u16()), detail),
        )
        .await;
        return;
    }
    conn.deliver(body).await;
    if outgoing.is_request() && !waiter.is_settled() {
        let detail = format!(
            "the JSON answer to {} did not contain its response",
            outgoing.describe()
        );
        conn.fail(waiter, http("POST", Some(status.as_u16()), detail))
            .await;
    }
}

fn content_type_of(content: &str) -> &str {
    if content.is_empty() {
        "no content type"
    } else {
        content
    }
}

/// A whole response body, bounded in size and by the idle limit between chunks.
pub(super) async fn read_body(
    conn: &Connection,
    response: Response,
) -> Result<Vec<u8>, TransportError> {
    let limit = conn.config.max_frame_bytes;
    let idle = conn.config.sse_idle_timeout;
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => {
                let detail = format!(
                    "no bytes of the response body for {idle:?} (sse_idle_timeout); the server or the network stalled"
                );
                return Err(http("POST", None, detail));
            }
            Ok(None) => return Ok(body),
            Ok(Some(Err(e))) => {
                return Err(http(
                    "POST",
                    None,
                    format!("the response body failed: {}", describe(&e)),
                ));
            }
            Ok(Some(Ok(chunk))) => {
                if body.len() + chunk.len() > limit {
                    let detail =
                        format!("the response body exceeds {limit} bytes (max_frame_bytes)");
                    return Err(http("POST", None, detail));
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}
