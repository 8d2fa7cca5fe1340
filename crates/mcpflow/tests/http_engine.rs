//! The engine's guarantees hold over streamable HTTP: mcpflow's client against
//! mcpflow's server on a loopback socket, through the same scenarios as the other
//! transports (the two seed hangs, re-entrant callbacks, a flood of progress) and a
//! server that goes away mid-call. Every wait is bounded.
#![cfg(all(feature = "http-server", feature = "http-client"))]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{bounded, bounded_for};
use mcpflow::client::Client;
use mcpflow::http::client::HttpClientTransport;
use mcpflow::http::server::{HttpServer, RunningHttpServer};
use mcpflow::protocol::{
    CallToolRequestParams, CallToolResult, CreateMessageRequestParams, CreateMessageResult,
    SamplingMessage, Tool,
};
use mcpflow::server::Server;
use mcpflow::{RequestOptions, SessionError};
use serde_json::json;
use tokio::sync::Notify;

fn tool(name: &str) -> Tool {
    Tool::new(name, format!("the {name} tool"), Tool::empty_input_schema())
}

async fn serve(server: Server) -> RunningHttpServer {
    bounded("bind", HttpServer::new(server).bind("127.0.0.1:0"))
        .await
        .expect("bind a loopback port")
}

async fn connect(running: &RunningHttpServer, builder: mcpflow::client::ClientBuilder) -> Client {
    let transport = HttpClientTransport::new(running.url()).expect("a valid URL");
    bounded("connect over HTTP", builder.connect(transport))
        .await
        .expect("connect")
}

/// Seed 000 (python-sdk#594): progress, then the result, all delivered in order.
#[tokio::test]
async fn seed_000_progress_before_response_over_http() {
    let server = Server::builder("seed-000", "1")
        .tool(tool("with_progress"), |_args, cx| async move {
            for i in 0..3 {
                let _ = cx.progress(f64::from(i), Some(3.0), Some("working")).await;
            }
            Ok(CallToolResult::text("Tool finished successfully"))
        })
        .build();
    let running = serve(server).await;
    let client = connect(&running, Client::builder("t", "1")).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| log.lock().unwrap().push(p.progress));
    let result = bounded(
        "seed-000 over HTTP",
        client.call_tool_with(&CallToolRequestParams::new("with_progress"), options),
    )
    .await
    .expect("call succeeds");
    assert_eq!(
        result.content[0].as_text(),
        Some("Tool finished successfully")
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![0.0, 1.0, 2.0],
        "all progress, in order, first"
    );
    bounded("close", client.close()).await;
    bounded("shutdown", running.shutdown()).await;
}

/// Seed 001 with a real server: a call adds a tool (so `list_changed` arrives during
/// the call) and holds its result until the client has re-listed the tools.
#[tokio::test]
async fn seed_001_list_changed_reload_during_call_over_http() {
    let relisted = Arc::new(Notify::new());
    let server = Server::builder("seed-001", "1").build();
    let gate = relisted.clone();
    server
        .add_tool(tool("mutate"), move |_args, cx| {
            let gate = gate.clone();
            async move {
                cx.server()
                    .add_tool(tool("added"), |_a, _cx| async {
                        Ok(CallToolResult::text("added"))
                    })
                    .await;
                gate.notified().await;
                Ok(CallToolResult::text("mutated+relisted"))
            }
        })
        .await;
    let running = serve(server).await;
    let gate = relisted.clone();
    let builder = Client::builder("agent", "1").on_notification(move |n, client| {
        let gate = gate.clone();
        async move {
            if n.method == "notifications/tools/list_changed" {
                // The reload the agents in the seed reports deadlock on.
                let tools = client.tools().await.expect("re-list during the call");
                if tools.iter().any(|t| t.name == "added") {
                    gate.notify_one();
                }
            }
        }
    });
    let client = connect(&running, builder).await;
    assert_eq!(
        bounded("initial load", client.tools())
            .await
            .expect("tools")
            .len(),
        1
    );
    let result = bounded("seed-001 over HTTP", client.call_tool("mutate", json!({})))
        .await
        .expect("call succeeds");
    assert_eq!(result.content[0].as_text(), Some("mutated+relisted"));
    bounded("close", client.close()).await;
    bounded("shutdown", running.shutdown()).await;
}

/// A sampling callback that itself calls the server, during the call that asked.
#[tokio::test]
async fn sampling_during_a_call_whose_callback_lists_tools_over_http() {
    let server = Server::builder("sampler", "1")
        .tool(tool("ask"), |_args, cx| async move {
            let params =
                CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10);
            let reply = cx
                .create_message(params)
                .await
                .map_err(|e| mcpflow::server::ToolError::failed(e.to_string()))?;
            let text = reply.content.blocks()[0]
                .as_text()
                .unwrap_or_default()
                .to_owned();
            Ok(CallToolResult::text(format!("model said: {text}")))
        })
        .build();
    let running = serve(server).await;
    let builder = Client::builder("agent", "1").on_sampling(|_params, client| async move {
        let tools = client
            .list_all_tools()
            .await
            .map_err(mcpflow::protocol::ErrorObject::internal)?;
        Ok(CreateMessageResult::assistant_text(
            "m",
            format!("{} tools", tools.len()),
        ))
    });
    let client = connect(&running, builder).await;
    let result = bounded(
        "sampling during a call over HTTP",
        client.call_tool("ask", json!({})),
    )
    .await
    .expect("call succeeds");
    assert_eq!(result.content[0].as_text(), Some("model said: 1 tools"));
    bounded("close", client.close()).await;
    bounded("shutdown", running.shutdown()).await;
}

/// Ten thousand progress events, each its own SSE event, all before the result.
#[tokio::test]
async fn ten_thousand_progress_notifications_in_order_over_http() {
    const N: u32 = 10_000;
    let server = Server::builder("flood", "1")
        .tool(tool("flood"), |_args, cx| async move {
            for i in 0..N {
                let _ = cx.progress(f64::from(i), Some(f64::from(N)), None).await;
            }
            Ok(CallToolResult::text("done"))
        })
        .build();
    let running = serve(server).await;
    let client = connect(&running, Client::builder("t", "1")).await;
    let seen = Arc::new(Mutex::new(Vec::with_capacity(N as usize)));
    let log = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| log.lock().unwrap().push(p.progress));
    let result = bounded_for(
        Duration::from_secs(60),
        "10,000 progress events over HTTP",
        client.call_tool_with(&CallToolRequestParams::new("flood"), options),
    )
    .await
    .expect("call succeeds");
    assert_eq!(result.content[0].as_text(), Some("done"));
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(
        seen.len(),
        N as usize,
        "every progress event arrived before the result"
    );
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order");
    bounded("close", client.close()).await;
    bounded("shutdown", running.shutdown()).await;
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
    let running = serve(server).await;
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
