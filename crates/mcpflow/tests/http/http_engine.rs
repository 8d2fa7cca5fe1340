//! What only HTTP can do to a client, against mcpflow's real server: the server goes
//! away mid-call, and the session expires between calls. (The seed hangs, re-entrant
//! callbacks and the progress flood run over HTTP with every other transport:
//! `common::WITH_HTTP` in `seeds.rs` and `engine.rs`.) Every wait is bounded.
#![cfg(all(feature = "http-server", feature = "http-client"))]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::http::serve;
use common::{bounded, tool};
use mcpflow::SessionError;
use mcpflow::client::Client;
use mcpflow::http::client::HttpClientTransport;
use mcpflow::http::server::{HttpServer, RunningHttpServer};
use mcpflow::protocol::CallToolResult;
use mcpflow::server::Server;
use serde_json::json;
use tokio::sync::Notify;

async fn connect(running: &RunningHttpServer, builder: mcpflow::client::ClientBuilder) -> Client {
    let transport = HttpClientTransport::new(running.url()).expect("a valid URL");
    bounded("connect over HTTP", builder.connect(transport))
        .await
        .expect("connect")
}

/// The server goes away mid-call: the call fails with the cause instead of waiting
/// for its timeout.
#[tokio::test]
async fn a_server_that_goes_away_mid_call_fails_the_call_with_the_cause() {
    let started = Arc::new(Notify::new());
    let signal = started.clone();
    let server = Server::builder("vanishing", "1")
        .tool(tool("slow"), move |_args, cx| {
            let signal = signal.clone();
            async move {
                signal.notify_one();
                cx.cancellation().cancelled().await;
                Ok(CallToolResult::text("cancelled"))
            }
        })
        .build();
    let running = serve(HttpServer::new(server)).await;
    let client = connect(&running, Client::builder("t", "1")).await;
    let call = tokio::spawn({
        let client = client.handle();
        async move { client.call_tool("slow", json!({})).await }
    });
    bounded("the call is running", started.notified()).await;
    bounded("shutdown", running.shutdown()).await;
    let outcome = bounded("the call fails once the server is gone", call)
        .await
        .expect("task");
    let error = outcome.expect_err("the server went away");
    assert!(
        matches!(
            error,
            SessionError::Transport { .. } | SessionError::Closed { .. }
        ),
        "{error:?}"
    );
    assert!(!matches!(error, SessionError::Timeout { .. }), "{error}");
    bounded("close", client.close()).await;
}

/// The server restarts and forgets its sessions; the client's next call meets 404,
/// starts a new session with the same `initialize`, and the call succeeds.
#[tokio::test]
async fn a_session_lost_in_a_server_restart_is_replaced_transparently() {
    let initializations = Arc::new(AtomicUsize::new(0));
    let count = initializations.clone();
    let server = Server::builder("restarting", "1")
        .tool(tool("hello"), |_args, _cx| async {
            Ok(CallToolResult::text("hello"))
        })
        .on_initialize(move |_params, _cx| {
            count.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
        .build();
    let first = serve(HttpServer::new(server.clone())).await;
    let addr = first.local_addr();
    let client = connect(&first, Client::builder("t", "1")).await;
    let result = bounded("a call", client.call_tool("hello", json!({})))
        .await
        .expect("call");
    assert_eq!(result.content[0].as_text(), Some("hello"));
    bounded("shutdown", first.shutdown()).await;

    let second = bounded(
        "restart on the same port",
        HttpServer::new(server).bind(addr),
    )
    .await
    .expect("rebind the port");
    let result = bounded(
        "a call after the restart",
        client.call_tool("hello", json!({})),
    )
    .await
    .expect("the client re-initializes and the call succeeds");
    assert_eq!(result.content[0].as_text(), Some("hello"));
    assert_eq!(
        initializations.load(Ordering::SeqCst),
        2,
        "one initialize per server"
    );
    assert_eq!(second.session_count(), 1);
    bounded("close", client.close()).await;
    bounded("shutdown", second.shutdown()).await;
}
