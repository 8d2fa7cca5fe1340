//! The streamable HTTP server at the wire: a raw HTTP peer (reqwest) checks sessions,
//! event streams, resumption, routing of server-to-client requests, DNS-rebinding
//! protection and the answer to every malformed request. Every wait is bounded.
#![cfg(all(feature = "http-server", feature = "http-client"))]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::bounded;
use common::http::{SseEvent, serve, sse_events};
use mcpflow::RequestOptions;
use mcpflow::http::server::{EventStore, HttpServer, InMemoryEventStore, StreamKey};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::Server;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// A server with the tools the scenarios need. `release` lets `wait_then_answer`
/// finish; `slow` never finishes on its own.
/// The text of the `large` tool: over the size at which an event shares its message,
/// with characters that JSON escapes.
fn large_text() -> String {
    "line one\nsaid \"hi\"\t".repeat(8 * 1024)
}

fn test_server(release: Arc<Notify>) -> Server {
    Server::builder("http-test", "1.0.0")
        .tool(
            Tool::new("large", "About 160 KiB of text", Tool::empty_input_schema()),
            |_args, _cx| async move { Ok(CallToolResult::text(large_text())) },
        )
        .tool(
            Tool::new(
                "count",
                "Three progress reports, then done",
                Tool::empty_input_schema(),
            ),
            |_args, cx| async move {
                for i in 1..=3 {
                    let _ = cx.progress(f64::from(i), Some(3.0), None).await;
                }
                Ok(CallToolResult::text("counted"))
            },
        )
        .tool(
            Tool::new(
                "wait_then_answer",
                "Ends its stream, then answers when released",
                Tool::empty_input_schema(),
            ),
            move |_args, cx| {
                let release = release.clone();
                async move {
                    let _ = cx.progress(1.0, None, Some("before the break")).await;
                    cx.close_event_stream().await;
                    release.notified().await;
                    Ok(CallToolResult::text("answered after the break"))
                }
            },
        )
        .tool(
            Tool::new(
                "ask_client",
                "Pings the client during the call",
                Tool::empty_input_schema(),
            ),
            |_args, cx| async move {
                let pong: Value = cx
                    .peer()
                    .request("ping", &json!({}), RequestOptions::new())
                    .await
                    .map_err(|e| mcpflow::server::ToolError::failed(e.to_string()))?;
                Ok(CallToolResult::text(format!("client answered {pong}")))
            },
        )
        .tool(
            Tool::new(
                "install",
                "Adds a tool (list_changed)",
                Tool::empty_input_schema(),
            ),
            |_args, cx| async move {
                cx.server()
                    .add_tool(
                        Tool::new("installed", "Added", Tool::empty_input_schema()),
                        |_a, _cx| async { Ok(CallToolResult::text("installed")) },
                    )
                    .await;
                Ok(CallToolResult::text("done"))
            },
        )
        .tool(
            Tool::new(
                "sample",
                "Asks the client's model",
                Tool::empty_input_schema(),
            ),
            |_args, cx| async move {
                let params = mcpflow::protocol::CreateMessageRequestParams::new(
                    vec![mcpflow::protocol::SamplingMessage::user_text("hi")],
                    16,
                );
                match cx.create_message(params).await {
                    Ok(_) => Ok(CallToolResult::text("sampled")),
                    Err(e) => Ok(CallToolResult::error(e.to_string())),
                }
            },
        )
        .tool(
            Tool::new("slow", "Never finishes", Tool::empty_input_schema()),
            |_args, cx| async move {
                cx.cancellation().cancelled().await;
                Ok(CallToolResult::text("cancelled"))
            },
        )
        .build()
}

struct Peer {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
}

impl Peer {
    fn new(url: &str) -> Self {
        Peer {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            session: None,
        }
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.raw_post(
            body,
            "application/json",
            "application/json, text/event-stream",
        )
    }

    fn raw_post(&self, body: &Value, content_type: &str, accept: &str) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", content_type)
            .header("accept", accept)
            .body(body.to_string());
        if let Some(s) = &self.session {
            request = request.header("mcp-session-id", s);
        }
        request
    }

    async fn initialize(&mut self, capabilities: Value) {
        let response = bounded(
            "initialize",
            self.post(
                &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":capabilities,
                "clientInfo":{"name":"raw","version":"1"}}}),
            )
            .send(),
        )
        .await
        .expect("initialize is answered");
        assert_eq!(response.status(), StatusCode::OK);
        let session = response
            .headers()
            .get("mcp-session-id")
            .expect("initialize assigns a session")
            .to_str()
            .expect("ascii")
            .to_owned();
        let body = bounded("initialize body", response.text())
            .await
            .expect("body");
        assert!(
            body.contains("\"protocolVersion\":\"2025-11-25\""),
            "{body}"
        );
        self.session = Some(session);
        let ack = bounded(
            "initialized",
            self.post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
                .send(),
        )
        .await
        .expect("initialized is accepted");
        assert_eq!(ack.status(), StatusCode::ACCEPTED);
    }

    /// POST a request and read its answer: its whole event stream (it must end), or a
    /// JSON body, as one event without an id.
    async fn call(&self, what: &str, body: &Value) -> Vec<SseEvent> {
        let response = bounded(what, self.post(body).send())
            .await
            .expect("answered");
        answer(what, response).await
    }

    /// POST a request accepting only an event stream, and read the whole stream.
    async fn call_streamed(&self, what: &str, body: &Value) -> Vec<SseEvent> {
        let request = self.raw_post(body, "application/json", "text/event-stream");
        let response = bounded(what, request.send()).await.expect("answered");
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "{what}"
        );
        answer(what, response).await
    }

    async fn get(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", self.session.as_deref().unwrap_or(""));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        bounded("GET", request.send()).await.expect("GET answered")
    }
}

/// An answer: an event stream's events, or a JSON body as one event without an id.
async fn answer(what: &str, response: reqwest::Response) -> Vec<SseEvent> {
    assert_eq!(response.status(), StatusCode::OK, "{what}");
    let content_type = response.headers()["content-type"].clone();
    let body = bounded(what, response.text())
        .await
        .expect("the answer ends");
    match content_type.to_str().expect("ascii") {
        "text/event-stream" => sse_events(&body),
        "application/json" => vec![SseEvent {
            id: None,
            data: body,
        }],
        other => panic!("{what}: answered as {other}"),
    }
}

fn call_tool(id: u64, name: &str, progress: bool) -> Value {
    let mut params = json!({"name": name, "arguments": {}});
    if progress {
        params["_meta"] = json!({"progressToken": format!("p{id}")});
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

#[tokio::test]
async fn sessions_start_at_initialize_and_end_with_delete() {
    let running = serve(HttpServer::new(test_server(Arc::default()))).await;
    let url = running.url();
    let mut peer = Peer::new(&url);
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"});

    // No session yet: 400, not a new session.
    let response = bounded("ping without a session", peer.post(&ping).send())
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = response.text().await.expect("body");
    assert!(body.contains("Mcp-Session-Id"), "{body}");

    peer.initialize(json!({})).await;
    let id = peer.session.clone().expect("session id");
    assert_eq!(id.len(), 32, "128 random bits as hex: {id}");
    let mut other = Peer::new(&url);
    other.initialize(json!({})).await;
    assert_ne!(other.session, peer.session, "each session gets its own id");

    let events = peer.call("ping in the session", &ping).await;
    assert_eq!(
        events.last().map(|e| e.data.as_str()),
        Some(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
    );

    let unknown = Peer {
        session: Some("0".repeat(32)),
        ..Peer::new(&url)
    };
    let response = bounded("unknown session", unknown.post(&ping).send())
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    let response = bounded(
        "DELETE",
        peer.http.delete(&url).header("mcp-session-id", &id).send(),
    )
    .await
    .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    for (what, status) in [
        (
            "POST after DELETE",
            peer.post(&ping).send().await.expect("answered").status(),
        ),
        ("GET after DELETE", peer.get(None).await.status()),
    ] {
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{what}: a terminated session is unknown"
        );
    }
    // The other session is untouched.
    assert_eq!(
        other.call("other session", &ping).await.len(),
        1,
        "the pong, as a JSON body"
    );
    bounded("shutdown", running.shutdown()).await;
}

/// Counts what an in-memory event store is asked to keep.
struct CountingStore {
    inner: InMemoryEventStore,
    appended: Arc<AtomicUsize>,
}

impl EventStore for CountingStore {
    fn append(&self, key: &StreamKey, seq: u64, message: bytes::Bytes) {
        self.appended.fetch_add(1, Ordering::SeqCst);
        self.inner.append(key, seq, message);
    }
    fn after(&self, key: &StreamKey, seq: u64) -> Option<Vec<(u64, bytes::Bytes)>> {
        self.inner.after(key, seq)
    }
    fn remove_session(&self, session: &str) {
        self.inner.remove_session(session);
    }
}

#[tokio::test]
async fn an_answer_sent_before_anything_else_is_one_json_body_and_kept_nowhere() {
    let appended = Arc::new(AtomicUsize::new(0));
    let store = CountingStore {
        inner: InMemoryEventStore::default(),
        appended: appended.clone(),
    };
    let running = serve(HttpServer::new(test_server(Arc::default())).event_store(store)).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;
    let kept_by_initialize = appended.load(Ordering::SeqCst);

    let response = bounded(
        "quick call",
        peer.post(&call_tool(1, "large", false)).send(),
    )
    .await
    .expect("answered");
    assert_eq!(response.headers()["content-type"], "application/json");
    let text = bounded("quick call body", response.text()).await;
    let body: Value = serde_json::from_str(&text.expect("body")).expect("json");
    assert_eq!(body["id"], 1);
    assert_eq!(body["result"]["content"][0]["text"], large_text().as_str());
    assert_eq!(
        appended.load(Ordering::SeqCst),
        kept_by_initialize,
        "an answer that is not a stream is not stored"
    );

    // Progress before the answer: the answer is an event stream, stored for resumption.
    let events = peer.call("count", &call_tool(2, "count", true)).await;
    assert_eq!(
        events.len(),
        5,
        "priming, three progress, the result: {events:?}"
    );
    assert!(events.iter().all(|e| e.id.is_some()), "{events:?}");
    assert_eq!(appended.load(Ordering::SeqCst), kept_by_initialize + 4);

    // A client that accepts only JSON gets the answer alone, progress or not.
    let request = peer.raw_post(
        &call_tool(3, "count", true),
        "application/json",
        "application/json",
    );
    let response = bounded("JSON only", request.send())
        .await
        .expect("answered");
    assert_eq!(response.headers()["content-type"], "application/json");
    let text = bounded("JSON only body", response.text()).await;
    let body: Value = serde_json::from_str(&text.expect("body")).expect("json");
    assert_eq!(body["result"]["content"][0]["text"], "counted");
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn progress_precedes_the_result_on_a_primed_stream_that_then_ends() {
    let running = serve(HttpServer::new(test_server(Arc::default()))).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;

    let events = peer.call("count", &call_tool(1, "count", true)).await;
    assert_eq!(
        events.len(),
        5,
        "priming, three progress reports, the result: {events:?}"
    );
    assert_eq!(
        events[0],
        SseEvent {
            id: Some("2-0".to_owned()),
            data: String::new()
        },
        "the priming event"
    );
    for (i, SseEvent { id, data }) in events[1..4].iter().enumerate() {
        let message: Value = serde_json::from_str(data).expect("json");
        assert_eq!(message["method"], "notifications/progress");
        assert_eq!(message["params"]["progress"], json!(i as f64 + 1.0));
        assert_eq!(message["params"]["progressToken"], "p1");
        assert_eq!(id.as_deref(), Some(format!("2-{}", i + 1).as_str()));
    }
    let result: Value = serde_json::from_str(&events[4].data).expect("json");
    assert_eq!(result["id"], 1);
    assert_eq!(result["result"]["content"][0]["text"], "counted");
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn a_large_result_arrives_whole_and_replays_whole() {
    let running = serve(HttpServer::new(test_server(Arc::default()))).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;
    let text = large_text();
    assert!(text.len() > 128 * 1024);

    let events = peer
        .call_streamed("large", &call_tool(3, "large", false))
        .await;
    assert_eq!(events.len(), 2, "priming and the result");
    let result: Value = serde_json::from_str(&events[1].data).expect("json");
    assert_eq!(result["id"], 3);
    assert_eq!(result["result"]["content"][0]["text"], text.as_str());

    // The same event again, from the event store.
    let prime = events[0].id.clone().expect("a primed stream");
    let replay = peer.get(Some(&prime)).await;
    assert_eq!(replay.status(), StatusCode::OK);
    let replayed = sse_events(&bounded("replay", replay.text()).await.expect("ends"));
    assert_eq!(replayed, events[1..], "the stored event, byte for byte");
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn a_stream_ended_mid_call_resumes_with_last_event_id() {
    let release = Arc::new(Notify::new());
    let server =
        HttpServer::new(test_server(release.clone())).retry_interval(Duration::from_millis(250));
    let running = serve(server).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;

    // The POST stream ends while the call is still running: priming (with retry), then
    // the progress sent before the break.
    let response = bounded(
        "POST",
        peer.post(&call_tool(7, "wait_then_answer", true)).send(),
    )
    .await
    .expect("answered");
    let raw = bounded("the stream ends mid-call", response.text())
        .await
        .expect("body");
    assert!(raw.starts_with("id: 2-0\nretry: 250\ndata: \n\n"), "{raw}");
    let events = sse_events(&raw);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[1].data.contains("before the break"));

    // Resuming after the priming event replays the progress, then carries the result.
    release.notify_one();
    let resumed = peer.get(Some("2-0")).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let events = sse_events(
        &bounded("resumed stream", resumed.text())
            .await
            .expect("ends"),
    );
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].id.as_deref(), Some("2-1"));
    assert!(
        events[1].data.contains("answered after the break"),
        "{events:?}"
    );

    // Resuming again after the last event: nothing more, and the stream ends.
    let again = peer.get(Some("2-2")).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(
        bounded("empty replay", again.text()).await.expect("ends"),
        ""
    );
    // Event ids this session never issued, and one that is not ASCII.
    for bogus in ["99-0", "nonsense", "caf\u{e9}"] {
        assert_eq!(
            peer.get(Some(bogus)).await.status(),
            StatusCode::BAD_REQUEST,
            "{bogus}"
        );
    }
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn a_server_request_rides_the_stream_of_the_call_that_made_it() {
    let running = serve(HttpServer::new(test_server(Arc::default()))).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;

    let mut response = bounded("POST", peer.post(&call_tool(3, "ask_client", false)).send())
        .await
        .expect("answered");
    let mut seen = String::new();
    let ping_id = loop {
        let chunk = bounded("the server's ping on the call's stream", response.chunk())
            .await
            .expect("readable")
            .expect("the stream stays open until the call is answered");
        seen.push_str(std::str::from_utf8(&chunk).expect("utf8"));
        if let Some(SseEvent { data, .. }) = sse_events(&seen)
            .into_iter()
            .find(|e| e.data.contains("\"ping\""))
        {
            let request: Value = serde_json::from_str(&data).expect("json");
            break request["id"].clone();
        }
    };
    let answer = bounded(
        "POST the answer",
        peer.post(&json!({"jsonrpc":"2.0","id":ping_id,"result":{}}))
            .send(),
    )
    .await
    .expect("answered");
    assert_eq!(answer.status(), StatusCode::ACCEPTED);
    let rest = bounded("the rest of the stream", response.text())
        .await
        .expect("ends");
    assert!(rest.contains("client answered {}"), "{rest}");
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn the_standalone_stream_carries_list_changed_and_is_unique() {
    let server = test_server(Arc::default());
    let running = serve(HttpServer::new(server.clone())).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;

    let mut stream = peer.get(None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    assert_eq!(
        peer.get(None).await.status(),
        StatusCode::CONFLICT,
        "one standalone stream per session"
    );

    server
        .add_tool(
            Tool::new("late", "Added at run time", Tool::empty_input_schema()),
            |_a, _cx| async { Ok(CallToolResult::text("late")) },
        )
        .await;
    let mut seen = String::new();
    while !seen.contains("notifications/tools/list_changed") {
        let chunk = bounded("list_changed on the GET stream", stream.chunk())
            .await
            .expect("readable")
            .expect("the stream stays open");
        seen.push_str(std::str::from_utf8(&chunk).expect("utf8"));
    }
    drop(stream);
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn dns_rebinding_is_refused_unless_allow_listed() {
    let running = serve(HttpServer::new(test_server(Arc::default()))).await;
    let url = running.url();
    let peer = Peer::new(&url);
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}});
    for (what, header, value) in [
        ("foreign Host", "host", "evil.example.com"),
        ("foreign Origin", "origin", "http://evil.example.com"),
    ] {
        let response = bounded(what, peer.post(&init).header(header, value).send())
            .await
            .expect("answered");
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{what}");
        let body = response.text().await.expect("body");
        assert!(
            body.contains("evil.example.com") && body.contains("allowed"),
            "{what}: {body}"
        );
    }
    let local_origin = peer
        .post(&init)
        .header("origin", "http://localhost:5173")
        .send();
    assert_eq!(
        bounded("loopback Origin", local_origin)
            .await
            .expect("answered")
            .status(),
        StatusCode::OK
    );
    bounded("shutdown", running.shutdown()).await;

    let listed = HttpServer::new(test_server(Arc::default())).allowed_hosts(["mcp.example.com"]);
    let running = serve(listed).await;
    let peer = Peer::new(&running.url());
    let allowed = peer.post(&init).header("host", "mcp.example.com").send();
    assert_eq!(
        bounded("allow-listed Host", allowed)
            .await
            .expect("answered")
            .status(),
        StatusCode::OK
    );
    bounded("shutdown", running.shutdown()).await;
}

/// A page from an allowed origin gets its preflight answered and may read the answers
/// and the session id; a page from any other origin gets a refused preflight and no
/// CORS header (field defect 12: `--allow-origin` gave 405 and no CORS headers).
#[tokio::test]
async fn pages_from_allowed_origins_get_cors_and_others_are_refused() {
    let app = "https://app.example.com";
    let http = HttpServer::new(test_server(Arc::default())).allowed_origins([app]);
    let running = serve(http).await;
    let url = running.url();
    let client = reqwest::Client::new();
    let preflight = |origin: &str| {
        client
            .request(reqwest::Method::OPTIONS, &url)
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type, mcp-session-id, mcp-protocol-version, authorization, mcp-param-city",
            )
            .send()
    };
    let answer = bounded("a preflight from the allowed origin", preflight(app))
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::NO_CONTENT);
    let header = |name: &str| {
        answer
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    assert_eq!(header("access-control-allow-origin"), app);
    assert!(header("access-control-allow-methods").contains("delete"));
    for needed in [
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "authorization",
        "last-event-id",
        "mcp-param-city",
    ] {
        assert!(
            header("access-control-allow-headers").contains(needed),
            "{needed}"
        );
    }
    let refused = bounded(
        "a preflight from another origin",
        preflight("https://evil.example.com"),
    )
    .await
    .expect("answered");
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(
        refused
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );

    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"page","version":"1"}}});
    let answer = bounded(
        "initialize from the allowed origin",
        client
            .post(&url)
            .header("origin", app)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send(),
    )
    .await
    .expect("answered");
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()["access-control-allow-origin"], app);
    let exposed = answer.headers()["access-control-expose-headers"]
        .to_str()
        .expect("text")
        .to_ascii_lowercase();
    assert!(
        exposed.contains("mcp-session-id") && exposed.contains("www-authenticate"),
        "{exposed}"
    );
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn malformed_requests_get_clear_http_errors_and_the_session_survives() {
    let server = HttpServer::new(test_server(Arc::default())).max_body_bytes(4096);
    let running = serve(server).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
    let big = json!({"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"x".repeat(5000)}});
    let batch = json!([{"jsonrpc":"2.0","id":3,"method":"ping"}]);
    let init = json!({"jsonrpc":"2.0","id":4,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}});

    let cases: Vec<(&str, reqwest::RequestBuilder, StatusCode, &str)> = vec![
        (
            "wrong content type",
            peer.raw_post(&ping, "text/plain", "application/json, text/event-stream"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type",
        ),
        (
            "unacceptable Accept",
            peer.raw_post(&ping, "application/json", "text/html"),
            StatusCode::NOT_ACCEPTABLE,
            "Accept",
        ),
        (
            "malformed JSON",
            peer.post(&ping).body("{\"jsonrpc\":"),
            StatusCode::BAD_REQUEST,
            "-32700",
        ),
        (
            "not JSON-RPC",
            peer.post(&json!({"hello": 1})),
            StatusCode::BAD_REQUEST,
            "-32600",
        ),
        (
            "oversized body",
            peer.post(&big),
            StatusCode::PAYLOAD_TOO_LARGE,
            "4096",
        ),
        (
            "unknown protocol version",
            peer.post(&ping)
                .header("mcp-protocol-version", "1999-01-01"),
            StatusCode::BAD_REQUEST,
            "1999-01-01",
        ),
        (
            "a version other than the session's",
            peer.post(&ping)
                .header("mcp-protocol-version", "2025-06-18"),
            StatusCode::BAD_REQUEST,
            "does not match the version this session negotiated in `initialize`, `2025-11-25`",
        ),
        (
            "a handshake version in a later session",
            peer.post(&ping)
                .header("mcp-protocol-version", "2026-07-28"),
            StatusCode::BAD_REQUEST,
            "`2026-07-28` does not match",
        ),
        (
            "initialize inside a batch",
            peer.post(&json!([init.clone()])),
            StatusCode::BAD_REQUEST,
            "must not be part of a JSON-RPC batch",
        ),
        (
            "batch under 2025-11-25",
            peer.post(&batch),
            StatusCode::BAD_REQUEST,
            "2025-03-26",
        ),
        (
            "initialize inside a session",
            peer.post(&init),
            StatusCode::BAD_REQUEST,
            "already initialized",
        ),
        (
            "PUT",
            peer.http.put(&peer.url),
            StatusCode::METHOD_NOT_ALLOWED,
            "",
        ),
    ];
    for (what, request, status, needle) in cases {
        let response = bounded(what, request.send()).await.expect("answered");
        assert_eq!(response.status(), status, "{what}");
        let body = response.text().await.expect("body");
        assert!(body.contains(needle), "{what}: {body}");
    }
    // A malformed response is refused without naming its id: JSON-RPC answers requests
    // only, and MCP allows a body for a refused response only without an id.
    for (what, body) in [
        ("a malformed response", json!({"id":7,"result":{}})),
        (
            "a malformed error response",
            json!({"jsonrpc":"1.0","id":8,"error":{"code":1,"message":"m"}}),
        ),
        (
            "a batch holding a malformed response",
            json!([{"jsonrpc":"2.0","id":9,"method":"ping"},{"id":10,"result":{}}]),
        ),
    ] {
        let response = bounded(what, peer.post(&body).send())
            .await
            .expect("answered");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{what}");
        let text = bounded(what, response.text()).await.expect("body");
        let error: Value = serde_json::from_str(&text).expect("a JSON-RPC error");
        assert_eq!(error["id"], Value::Null, "{what}: {error}");
        assert!(error["error"]["code"].is_i64(), "{what}: {error}");
    }
    let events = peer.call("ping after the bad requests", &ping).await;
    assert_eq!(events.len(), 1, "the pong: {events:?}");
    assert!(events[0].data.contains(r#""result":{}"#), "{events:?}");
    // 2025-03-26, the version a missing header implies, counts as no header.
    let implied = bounded(
        "the implied version",
        peer.post(&ping)
            .header("mcp-protocol-version", "2025-03-26")
            .send(),
    )
    .await
    .expect("answered");
    assert_eq!(implied.status(), StatusCode::OK);
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn json_responses_and_stateless_mode() {
    let server = HttpServer::new(test_server(Arc::default())).json_response(true);
    let running = serve(server).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;
    let response = bounded(
        "JSON answer",
        peer.post(&call_tool(5, "count", true)).send(),
    )
    .await
    .expect("answered");
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value =
        serde_json::from_str(&response.text().await.expect("body")).expect("one JSON body");
    assert_eq!(body["result"]["content"][0]["text"], "counted");
    bounded("shutdown", running.shutdown()).await;

    let running = serve(HttpServer::new(test_server(Arc::default())).stateless(true)).await;
    let peer = Peer::new(&running.url());
    let response = bounded(
        "stateless call",
        peer.post(&call_tool(1, "count", false)).send(),
    )
    .await
    .expect("answered");
    assert!(
        response.headers().get("mcp-session-id").is_none(),
        "no sessions"
    );
    let text = bounded("stateless stream", response.text())
        .await
        .expect("ends");
    assert!(text.contains("counted"), "{text}");
    assert_eq!(
        peer.get(None).await.status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
    // A server-to-client request has no session to go on: the refusal says so rather
    // than blame the client for its capabilities (field defect 11).
    let response = bounded(
        "stateless sampling",
        peer.post(&call_tool(2, "sample", false)).send(),
    )
    .await
    .expect("answered");
    let text = bounded("its stream", response.text()).await.expect("ends");
    assert!(
        text.contains("stateless") && !text.contains("did not declare"),
        "{text}"
    );
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn cancelling_a_call_ends_its_stream() {
    let running = serve(HttpServer::new(test_server(Arc::default()))).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;
    let response = bounded("POST slow", peer.post(&call_tool(9, "slow", false)).send())
        .await
        .expect("answered");
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}});
    let ack = bounded("POST cancel", peer.post(&cancel).send())
        .await
        .expect("answered");
    assert_eq!(ack.status(), StatusCode::ACCEPTED);
    // A cancelled request is never answered; its stream must end rather than hang.
    let rest = bounded("the cancelled call's stream ends", response.text())
        .await
        .expect("ends");
    assert!(!rest.contains("\"result\""), "{rest}");
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn idle_sessions_expire_and_shutdown_ends_open_streams() {
    let server = HttpServer::new(test_server(Arc::default()))
        .session_idle_timeout(Duration::from_millis(200));
    let running = serve(server).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
    // Each probe counts as activity, so wait well past the idle timeout before each one.
    bounded("the idle session expires", async {
        loop {
            tokio::time::sleep(Duration::from_millis(600)).await;
            let status = peer.post(&ping).send().await.expect("answered").status();
            if status == StatusCode::NOT_FOUND {
                break;
            }
        }
    })
    .await;

    // A call in flight when the server shuts down: its stream ends, nothing hangs.
    peer.session = None;
    peer.initialize(json!({})).await;
    let response = bounded("POST slow", peer.post(&call_tool(2, "slow", false)).send())
        .await
        .expect("answered");
    bounded("shutdown", running.shutdown()).await;
    let _ = bounded("the open stream ends at shutdown", response.text()).await;
}

#[tokio::test]
async fn list_changed_rides_a_request_stream_until_the_client_opens_a_get_stream() {
    let running = serve(HttpServer::new(test_server(Arc::default()))).await;
    let mut peer = Peer::new(&running.url());
    peer.initialize(json!({})).await;
    // No GET stream yet: the notification must not be dropped.
    let events = peer.call("install", &call_tool(4, "install", false)).await;
    let methods: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
    let changed = methods
        .iter()
        .position(|d| d.contains("notifications/tools/list_changed"))
        .unwrap_or_else(|| panic!("list_changed on the call's stream: {methods:?}"));
    let result = methods
        .iter()
        .position(|d| d.contains("\"id\":4"))
        .expect("the result");
    assert!(changed < result, "{methods:?}");
    bounded("shutdown", running.shutdown()).await;
}
