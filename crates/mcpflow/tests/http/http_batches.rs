//! JSON-RPC batches over streamable HTTP, driven in process through
//! [`HttpServer::router`]: a session at 2025-03-26 takes every batch it is sent and
//! keeps the version it negotiated, and a stateless server takes batches under the
//! version its header names (2025-03-26 without one) and refuses them, at once, under
//! any other. Every wait is bounded, so an answer that never ends fails the test.
#![cfg(feature = "http-server")]

use crate::common;

use axum::Router;
use axum::http::{HeaderValue, StatusCode};
use common::http::post_through;
use mcpflow::http::server::HttpServer;
use mcpflow::server::Server;
use serde_json::{Value, json};

fn router(stateless: bool) -> Router {
    let server = Server::builder("batches", "1.0.0").build();
    HttpServer::new(server).stateless(stateless).router()
}

/// POST `body` with these headers; the status, the session the answer names and the
/// whole body.
async fn post(
    router: &Router,
    headers: &[(&str, &str)],
    body: Value,
) -> (StatusCode, Option<String>, String) {
    let headers: Vec<_> = headers
        .iter()
        .map(|(name, value)| (*name, HeaderValue::from_str(value).expect("a header value")))
        .collect();
    let (status, headers, body) = post_through(router, &headers, body.to_string()).await;
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, session, body)
}

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

/// Each id of `ids` has its result in `body` (an event stream or a JSON array).
fn assert_answered(what: &str, body: &str, ids: &[u64]) {
    for id in ids {
        assert!(
            body.contains(&format!("\"id\":{id},\"result\"")),
            "{what}: no result for id {id} in {body}"
        );
    }
}

#[tokio::test]
async fn a_2025_03_26_session_takes_every_batch_and_keeps_its_version() {
    let router = router(false);
    // Id 1 for `initialize`, which the batches below use again.
    let (status, session, body) = post(
        &router,
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let session = session.expect("initialize names a session");
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-03-26"),
    ];
    let (status, _, body) = post(
        &router,
        &headers,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");

    for round in 0..3 {
        let what = format!("batch {round}");
        let (status, _, body) = post(&router, &headers, json!([ping(1), ping(2)])).await;
        assert_eq!(status, StatusCode::OK, "{what}: {body}");
        assert_answered(&what, &body, &[1, 2]);
    }
    let (status, _, body) = post(&router, &headers, ping(1)).await;
    assert_eq!(status, StatusCode::OK, "a lone request with id 1: {body}");

    // The session still knows its version: a request naming another is refused.
    let (status, _, body) = post(
        &router,
        &[
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        ping(3),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("negotiated"), "{body}");
}

#[tokio::test]
async fn a_stateless_server_takes_batches_only_under_2025_03_26() {
    let router = router(true);
    for (what, headers) in [
        (
            "2025-03-26 named",
            &[("mcp-protocol-version", "2025-03-26")][..],
        ),
        ("no version header", &[][..]),
    ] {
        let (status, _, body) = post(&router, headers, json!([ping(1), ping(2)])).await;
        assert_eq!(status, StatusCode::OK, "{what}: {body}");
        assert_answered(what, &body, &[1, 2]);
    }
    for version in ["2025-06-18", "2025-11-25"] {
        let (status, _, body) = post(
            &router,
            &[("mcp-protocol-version", version)],
            json!([ping(1), ping(2)]),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "a batch under {version}: {body}"
        );
        assert!(body.contains("only accepted under"), "{body}");
    }
}
