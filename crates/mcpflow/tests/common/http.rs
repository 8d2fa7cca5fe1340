//! Streamable HTTP at the wire: a server on a loopback port, and the events of an SSE
//! body as a raw client reads them.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode};
use mcpflow::http::server::{HttpServer, RunningHttpServer};
use tower::ServiceExt;

use super::bounded;

/// `server` on a free loopback port.
pub async fn serve(server: HttpServer) -> RunningHttpServer {
    bounded("bind", server.bind("127.0.0.1:0"))
        .await
        .expect("bind a loopback port")
}

/// A POST of `body` to `/mcp` through `router`, in process: loopback `Host`, JSON and
/// event streams accepted, and `headers` (a name given twice is sent twice). Its
/// status, headers and whole body.
pub async fn post_through(
    router: &axum::Router,
    headers: &[(&str, HeaderValue)],
    body: String,
) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, value.clone());
    }
    let request = request.body(Body::from(body)).expect("a request");
    let response = bounded("the router's answer", router.clone().oneshot(request))
        .await
        .expect("the router is infallible");
    let (parts, body) = response.into_parts();
    let bytes = bounded("the whole answer", axum::body::to_bytes(body, usize::MAX))
        .await
        .expect("the body");
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// One server-sent event: its id and its data lines, joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub data: String,
}

/// The events of an SSE body, by the rules of the `text/event-stream` format: an event
/// ends at a blank line; a line is `field: value` (one space after the colon is
/// dropped); a line opening with `:` is a comment. Blocks of comments alone (keep-alives)
/// are not events.
pub fn sse_events(body: &str) -> Vec<SseEvent> {
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let mut event = SseEvent {
            id: None,
            data: String::new(),
        };
        let mut fields = 0;
        let mut data = Vec::new();
        for line in block.lines() {
            if line.is_empty() || line.starts_with(':') {
                continue;
            }
            fields += 1;
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => event.id = Some(value.to_owned()),
                "data" => data.push(value),
                _ => {}
            }
        }
        if fields > 0 {
            event.data = data.join("\n");
            events.push(event);
        }
    }
    events
}
