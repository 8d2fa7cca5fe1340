//! The session table of the streamable HTTP server at its cap and over time, driven in
//! process through [`HttpServer::router`] on a paused clock: idle sessions are evicted
//! for new ones (those that never served more than `initialize` first, each group
//! oldest first), busy ones never are, unused sessions expire sooner than used ones,
//! and an ended or malformed session id is answered as such. Every wait is bounded.
#![cfg(feature = "http-server")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode};
use common::bounded;
use common::http::post_through;
use mcpflow::http::server::HttpServer;
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::Server;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tower::ServiceExt;

/// `echo` answers at once; `hold` answers once `release` is notified.
fn router(release: Arc<Notify>, configure: impl FnOnce(HttpServer) -> HttpServer) -> Router {
    let server = Server::builder("sessions", "1.0.0")
        .tool(
            Tool::new("echo", "Answers at once", Tool::empty_input_schema()),
            |_args, _cx| async { Ok(CallToolResult::text("ok")) },
        )
        .tool(
            Tool::new("hold", "Answers when released", Tool::empty_input_schema()),
            move |_args, _cx| {
                let release = release.clone();
                async move {
                    release.notified().await;
                    Ok(CallToolResult::text("released"))
                }
            },
        )
        .build();
    configure(HttpServer::new(server)).router()
}

async fn send(
    router: &Router,
    method: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> Response<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let request = request.body(body).expect("a request");
    bounded("the router's answer", router.clone().oneshot(request))
        .await
        .expect("the router is infallible")
}

async fn read(response: Response<Body>) -> String {
    let bytes = bounded(
        "the body",
        axum::body::to_bytes(response.into_body(), usize::MAX),
    )
    .await
    .expect("the body");
    String::from_utf8_lossy(&bytes).into_owned()
}

async fn initialize(router: &Router) -> Result<String, (StatusCode, String)> {
    let response = send(
        router,
        "POST",
        None,
        Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        ),
    )
    .await;
    let status = response.status();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let retry_after = response.headers().get("retry-after").is_some();
    let body = read(response).await;
    match id {
        Some(id) if status == StatusCode::OK => Ok(id),
        _ => {
            assert!(retry_after, "a refused session says when to retry: {body}");
            Err((status, body))
        }
    }
}

fn call(tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
}

/// The status of an `echo` call on `session` (reading its whole answer).
async fn echo(router: &Router, session: &str) -> StatusCode {
    let response = send(router, "POST", Some(session), Some(call("echo"))).await;
    let status = response.status();
    read(response).await;
    status
}

/// A clock step, so that sessions created one after another are ordered in time.
async fn tick() {
    tokio::time::advance(Duration::from_millis(10)).await;
}

#[tokio::test(start_paused = true)]
async fn at_the_cap_idle_sessions_are_evicted_unused_first_then_least_recently_used() {
    let router = router(Arc::default(), |s| s.max_sessions(3));
    let used = initialize(&router).await.expect("a session");
    tick().await;
    assert_eq!(echo(&router, &used).await, StatusCode::OK);
    let unused_old = initialize(&router).await.expect("a session");
    tick().await;
    let unused_new = initialize(&router).await.expect("a session");
    tick().await;

    let fourth = initialize(&router).await.expect("room is made at the cap");
    assert_eq!(
        echo(&router, &unused_old).await,
        StatusCode::NOT_FOUND,
        "the oldest unused session went"
    );
    assert_eq!(
        echo(&router, &used).await,
        StatusCode::OK,
        "a used session stays while unused ones remain"
    );
    tick().await;
    // `unused_new` and `fourth` are unused; `used` was just used.
    assert_eq!(echo(&router, &fourth).await, StatusCode::OK);
    tick().await;
    let fifth = initialize(&router).await.expect("room is made at the cap");
    assert_eq!(echo(&router, &unused_new).await, StatusCode::NOT_FOUND);
    tick().await;
    assert_eq!(echo(&router, &fifth).await, StatusCode::OK);
    tick().await;

    // All three are used now: the least recently used goes.
    let sixth = initialize(&router).await.expect("room is made at the cap");
    assert_eq!(
        echo(&router, &used).await,
        StatusCode::NOT_FOUND,
        "the least recently used went"
    );
    for session in [&fourth, &fifth, &sixth] {
        assert_eq!(echo(&router, session).await, StatusCode::OK);
    }
}

#[tokio::test(start_paused = true)]
async fn a_session_with_a_request_in_flight_or_an_open_stream_is_never_evicted() {
    let release = Arc::new(Notify::new());
    let router = router(release.clone(), |s| s.max_sessions(2));
    let streaming = initialize(&router).await.expect("a session");
    let listening = send(&router, "GET", Some(&streaming), None).await;
    assert_eq!(
        listening.status(),
        StatusCode::OK,
        "the standalone stream is open"
    );
    tick().await;
    let busy = initialize(&router).await.expect("a session");
    let holding = send(&router, "POST", Some(&busy), Some(call("hold"))).await;
    assert_eq!(holding.status(), StatusCode::OK, "the call is in flight");
    tick().await;

    let (status, body) = initialize(&router).await.expect_err("no session is idle");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("max_sessions"), "{body}");

    release.notify_one();
    assert!(read(holding).await.contains("released"));
    let newcomer = initialize(&router)
        .await
        .expect("the finished session made room");
    assert_eq!(echo(&router, &busy).await, StatusCode::NOT_FOUND);
    assert_eq!(
        echo(&router, &streaming).await,
        StatusCode::OK,
        "the open stream kept its session"
    );
    assert_eq!(echo(&router, &newcomer).await, StatusCode::OK);
    drop(listening);
}

#[tokio::test(start_paused = true)]
async fn unused_sessions_expire_sooner_than_used_ones() {
    let router = router(Arc::default(), |s| {
        s.unused_session_idle_timeout(Duration::from_secs(60))
            .session_idle_timeout(Duration::from_secs(30 * 60))
    });
    let unused = initialize(&router).await.expect("a session");
    let used = initialize(&router).await.expect("a session");
    assert_eq!(echo(&router, &used).await, StatusCode::OK);

    tokio::time::sleep(Duration::from_secs(2 * 60)).await;
    assert_eq!(
        echo(&router, &unused).await,
        StatusCode::NOT_FOUND,
        "unused: gone after 1 min idle"
    );
    assert_eq!(
        echo(&router, &used).await,
        StatusCode::OK,
        "used: still there after 2 min"
    );

    tokio::time::sleep(Duration::from_secs(31 * 60)).await;
    assert_eq!(
        echo(&router, &used).await,
        StatusCode::NOT_FOUND,
        "used: gone after 30 min idle"
    );
}

/// A session id that names no session is 404, whatever the POST carries (an
/// `initialize` included: the client is to start anew without the header); one that
/// is not visible ASCII is 400 saying so, not taken for a missing header.
#[tokio::test(start_paused = true)]
async fn an_ended_or_malformed_session_id_is_named_as_such() {
    let router = router(Arc::default(), |s| s);
    let session = initialize(&router).await.expect("a session");
    let ended = send(&router, "DELETE", Some(&session), None).await;
    assert_eq!(ended.status(), StatusCode::OK, "{}", read(ended).await);
    let initialize_again = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let response = send(&router, "POST", Some(&session), Some(initialize_again)).await;
    let status = response.status();
    let body = read(response).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("terminated"), "{body}");

    let malformed = HeaderValue::from_bytes(b"caf\xe9").expect("an opaque header value");
    let (status, _, body) = post_through(
        &router,
        &[("mcp-session-id", malformed)],
        call("echo").to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("not visible ASCII"), "{body}");
}

/// An MCP header given twice is refused with 400 naming it, rather than read by its
/// first value: two sessions, or two versions, in one request.
#[tokio::test(start_paused = true)]
async fn an_mcp_header_given_twice_is_refused() {
    let router = router(Arc::default(), |s| s);
    let first = initialize(&router).await.expect("a session");
    let second = initialize(&router).await.expect("a session");
    for (name, values) in [
        ("mcp-session-id", [first.as_str(), second.as_str()]),
        ("mcp-protocol-version", ["2025-11-25", "garbage"]),
    ] {
        let mut headers = Vec::new();
        if name != "mcp-session-id" {
            headers.push((
                "mcp-session-id",
                HeaderValue::from_str(&first).expect("ascii"),
            ));
        }
        for value in values {
            headers.push((name, HeaderValue::from_str(value).expect("ascii")));
        }
        let (status, _, body) = post_through(&router, &headers, call("echo").to_string()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name} twice: {body}");
        assert!(
            body.contains(name) && body.contains("more than once"),
            "{body}"
        );
    }
    assert_eq!(
        echo(&router, &first).await,
        StatusCode::OK,
        "the session serves on"
    );
}
