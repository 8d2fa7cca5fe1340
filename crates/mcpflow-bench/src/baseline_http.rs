//! The baseline over streamable HTTP, with no SDK: an axum handler at `POST /mcp` and a
//! reqwest client. The server answers `initialize` and plain calls with one JSON body,
//! notifications with 202, and a call that asks for progress with an event stream
//! carrying the progress notifications, then the response. The client reads either,
//! feeding progress to its [`ProgressLog`] in order, and writes its requests as its
//! [`Layout`] lays them out.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::baseline::{
    CallParams, Inbound, ProgressIn, empty_reply, encode, first_text, initialize_reply,
    progress_note, tool_reply,
};
use crate::common::{ProgressLog, big_text};
use crate::layout::{Layout, notification_frame, request_frame, tool_call_frame};

/// Events an event stream buffers ahead of the connection.
const QUEUE: usize = 1024;
/// The protocol version both sides speak.
const PROTOCOL_VERSION: &str = "2025-06-18";
/// The session header (the baseline server assigns none; the client carries one if given).
const SESSION_ID: &str = "mcp-session-id";

/// The MCP endpoint at `/mcp`.
pub fn router() -> Router {
    Router::new().route("/mcp", post(handle))
}

fn json_body(frame: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], frame).into_response()
}

fn sse_event(message: &[u8]) -> Bytes {
    let mut event = Vec::with_capacity(message.len() + 8);
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(message);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

async fn handle(body: Bytes) -> Response {
    let Ok(msg) = serde_json::from_slice::<Inbound<'_>>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let (Some(id), Some(method)) = (msg.id, msg.method) else {
        return StatusCode::ACCEPTED.into_response(); // a notification or a response
    };
    match method {
        "initialize" => json_body(initialize_reply(id)),
        "tools/call" => {
            let Some(params) = msg
                .params
                .and_then(|p| serde_json::from_str::<CallParams<'_>>(p.get()).ok())
            else {
                return StatusCode::BAD_REQUEST.into_response();
            };
            match params.name {
                "echo" => json_body(tool_reply(id, &params.arguments.text)),
                "big" => json_body(tool_reply(id, big_text(params.arguments.bytes))),
                "progress" => match params.meta {
                    Some(meta) => progress_stream(id, meta.progress_token, params.arguments.count),
                    None => json_body(tool_reply(id, "done")),
                },
                _ => json_body(encode(&serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": -32602, "message": "unknown tool"}
                }))),
            }
        }
        _ => json_body(empty_reply(id)),
    }
}

/// An event stream: `count` progress notifications from a producing task, then the result.
fn progress_stream(id: u64, token: serde_json::Value, count: u64) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(QUEUE);
    tokio::spawn(async move {
        for i in 1..=count {
            if tx
                .send(sse_event(&progress_note(&token, i, count)))
                .await
                .is_err()
            {
                return;
            }
        }
        let _ = tx.send(sse_event(&tool_reply(id, "done"))).await;
    });
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|event| (Ok::<_, Infallible>(event), rx))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(events),
    )
        .into_response()
}

/// The baseline HTTP client: one pooled `reqwest::Client`, one POST per message.
pub struct Client {
    http: reqwest::Client,
    url: String,
    session: Option<HeaderValue>,
    initialized: bool,
    layout: Layout,
    next_id: AtomicU64,
    log: Arc<ProgressLog>,
}

impl Client {
    /// Run `initialize` and `notifications/initialized` against the endpoint at `url`,
    /// every request written as `layout` writes it.
    pub async fn connect(
        url: String,
        log: Arc<ProgressLog>,
        layout: Layout,
    ) -> Result<Client, String> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| format!("creating the HTTP client: {e}"))?;
        let mut client = Client {
            http,
            url,
            session: None,
            initialized: false,
            layout,
            next_id: AtomicU64::new(1),
            log,
        };
        let id = client.next_id.fetch_add(1, Ordering::Relaxed);
        let response = client
            .post(request_frame(
                layout,
                id,
                "initialize",
                serde_json::json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "baseline", "version": "1.0.0"}
                }),
            ))
            .await?;
        client.session = response.headers().get(SESSION_ID).cloned();
        client.answer(response, id).await?;
        client.initialized = true;
        let response = client
            .post(notification_frame(layout, "notifications/initialized"))
            .await?;
        if !response.status().is_success() {
            return Err(format!(
                "notifications/initialized: HTTP {}",
                response.status()
            ));
        }
        Ok(client)
    }

    async fn post(&self, body: Vec<u8>) -> Result<reqwest::Response, String> {
        let mut request = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        if self.initialized {
            request = request.header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        if let Some(session) = &self.session {
            request = request.header(SESSION_ID, session.clone());
        }
        request.body(body).send().await.map_err(|e| e.to_string())
    }

    /// Call a tool and return its first text block.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
        progress_token: Option<u64>,
    ) -> Result<String, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = tool_call_frame(self.layout, id, name, arguments, progress_token);
        let response = self.post(frame).await?;
        first_text(&self.answer(response, id).await?)
    }

    /// End the session, if the server assigned one.
    pub async fn close(self) {
        if let Some(session) = self.session {
            let _ = self
                .http
                .delete(&self.url)
                .header(SESSION_ID, session)
                .send()
                .await;
        }
    }

    /// The result of request `id` from a JSON body or an event stream.
    async fn answer(
        &self,
        mut response: reqwest::Response,
        id: u64,
    ) -> Result<Box<RawValue>, String> {
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !event_stream {
            let body = response.bytes().await.map_err(|e| e.to_string())?;
            return self
                .dispatch(&body, id)
                .unwrap_or_else(|| Err("the JSON body is not the response".to_owned()));
        }
        let mut pending: Vec<u8> = Vec::new();
        let mut data: Vec<u8> = Vec::new();
        // Bytes of `pending` known to hold no newline: a long line arriving in many
        // chunks is scanned once, not once per chunk.
        let mut scanned = 0;
        loop {
            let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? else {
                return Err("the event stream ended before the response".to_owned());
            };
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(len) = pending[scanned..].iter().position(|&b| b == b'\n') {
                let len = scanned + len - start;
                let line = &pending[start..start + len];
                start += len + 1;
                scanned = start;
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.is_empty() {
                    if !data.is_empty() {
                        if let Some(outcome) = self.dispatch(&data, id) {
                            return outcome;
                        }
                        data.clear();
                    }
                } else if let Some(value) = line.strip_prefix(b"data:") {
                    if !data.is_empty() {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
                }
            }
            pending.drain(..start);
            scanned = pending.len();
        }
    }

    /// Handle one message: progress goes to the log; the response to `id` is returned.
    fn dispatch(&self, frame: &[u8], id: u64) -> Option<Result<Box<RawValue>, String>> {
        let msg = serde_json::from_slice::<Inbound<'_>>(frame).ok()?;
        if let Some(method) = msg.method {
            if method == "notifications/progress"
                && let Some(p) = msg
                    .params
                    .and_then(|p| serde_json::from_str::<ProgressIn>(p.get()).ok())
            {
                self.log.record(p.progress);
            }
            return None;
        }
        if msg.id != Some(id) {
            return None;
        }
        Some(match (msg.result, msg.error) {
            (Some(result), _) => Ok(result),
            (None, Some(error)) => Err(error.get().to_owned()),
            (None, None) => Err("response without result".to_owned()),
        })
    }
}
