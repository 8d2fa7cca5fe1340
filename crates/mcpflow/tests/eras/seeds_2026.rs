//! The seed guarantees in the 2026-07-28 era: the mcpflow client pinned to
//! [`Era::PerRequest`] against the mcpflow server, over memory (capacity 0, 1 and large),
//! newline framing over a socket pair (as stdio) and streamable HTTP. List changes
//! arrive on the `subscriptions/listen` stream, server requests as `input_required`.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Kind, MEMORY, WITH_HTTP, bounded, tool};
use mcpflow::client::{Client, ClientBuilder, Era};
use mcpflow::protocol::{
    CallToolRequestParams, CallToolResult, ElicitRequestParams, ElicitResult, JsonObject,
};
use mcpflow::server::{Server, ServerContext, ToolError};
use mcpflow::{RequestOptions, SessionError};
use serde_json::json;
use tokio::sync::Notify;

fn per_request(name: &str) -> ClientBuilder {
    Client::builder(name, "1").era(Era::PerRequest)
}

/// agent-framework#4866 in 2026-07-28: the tool announces a new tool during the call
/// and withholds its result until the client has reloaded its list from the
/// announcement (which arrives on the listen stream, not the call's).
async fn list_change_reloaded_during_a_long_call(kind: Kind) {
    let relisted = Arc::new(Notify::new());
    let waited = relisted.clone();
    let server = Server::builder("seed-001-2026", "1")
        .tool(tool("mutate"), move |_a, cx: ServerContext| {
            let waited = waited.clone();
            async move {
                assert!(cx.is_per_request(), "a 2026-07-28 request");
                cx.server()
                    .add_tool(tool("added"), |_a, _cx| async {
                        Ok(CallToolResult::text("added"))
                    })
                    .await;
                tokio::time::timeout(Duration::from_secs(10), waited.notified())
                    .await
                    .map_err(|_| ToolError::failed("the client never re-listed"))?;
                Ok(CallToolResult::text("mutated+relisted"))
            }
        })
        .build();
    let signal = relisted.clone();
    let builder = per_request("agent").on_notification(move |n, client| {
        let signal = signal.clone();
        async move {
            if n.method == "notifications/tools/list_changed" {
                let tools = client.tools().await.expect("reload on the lane");
                if tools.iter().any(|t| t.name == "added") {
                    signal.notify_one();
                }
            }
        }
    });
    let (client, _server) = common::connect(kind, &server, builder).await;
    assert!(client.is_per_request());
    let initial = bounded(&format!("{kind:?}: initial tool load"), client.tools())
        .await
        .unwrap();
    assert_eq!(initial.len(), 1);
    let result = bounded(
        &format!("{kind:?}: the call returns after the client re-listed"),
        client.call_tool("mutate", json!({})),
    )
    .await
    .expect("call");
    assert_eq!(
        result.content[0].as_text(),
        Some("mutated+relisted"),
        "{kind:?}"
    );
    let names: Vec<String> = bounded("refreshed list", client.tools())
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["mutate", "added"], "{kind:?}");
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn list_change_reloaded_during_a_long_call_on_every_transport() {
    for kind in WITH_HTTP {
        list_change_reloaded_during_a_long_call(kind).await;
    }
}

/// python-sdk#594 in 2026-07-28: progress sent before the result is delivered, in
/// order, before the call returns.
async fn progress_before_response(kind: Kind) {
    let server = Server::builder("seed-000-2026", "1")
        .tool(tool("with_progress"), |_a, cx: ServerContext| async move {
            for i in 0..3 {
                let _ = cx.progress(f64::from(i), Some(3.0), Some("working")).await;
            }
            Ok(CallToolResult::text("Tool finished successfully"))
        })
        .build();
    let (client, _server) = common::connect(kind, &server, per_request("t")).await;
    assert!(client.is_per_request());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| log.lock().unwrap().push(p.progress));
    let result = bounded(
        &format!("{kind:?}: call_tool after progress"),
        client.call_tool_with(&CallToolRequestParams::new("with_progress"), options),
    )
    .await
    .expect("call");
    assert_eq!(
        result.content[0].as_text(),
        Some("Tool finished successfully")
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![0.0, 1.0, 2.0],
        "{kind:?}: all progress, in order, before the result"
    );
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn progress_before_response_on_every_transport() {
    for kind in WITH_HTTP {
        progress_before_response(kind).await;
    }
}

fn waits_for_cancellation(observed: Arc<Notify>) -> Server {
    Server::builder("slow", "1")
        .tool(tool("slow"), move |_a, cx: ServerContext| {
            let observed = observed.clone();
            async move {
                cx.cancellation().cancelled().await;
                observed.notify_one();
                Ok(CallToolResult::text("never sent"))
            }
        })
        .build()
}

/// A call that times out is cancelled at the server: its handler sees the
/// cancellation, and the connection keeps serving.
async fn timeout_reaches_the_handler(kind: Kind) {
    let cancelled = Arc::new(Notify::new());
    let server = waits_for_cancellation(cancelled.clone());
    let (client, _server) = common::connect(kind, &server, per_request("t")).await;
    let wait = cancelled.notified();
    let options = RequestOptions::new().timeout(Duration::from_millis(300));
    let err = bounded(
        &format!("{kind:?}: the call times out"),
        client.call_tool_with(&CallToolRequestParams::new("slow"), options),
    )
    .await
    .expect_err("times out");
    assert!(matches!(err, SessionError::Timeout { .. }), "{err}");
    bounded(
        &format!("{kind:?}: the server handler observed the cancellation"),
        wait,
    )
    .await;
    bounded("ping after the timeout", client.ping())
        .await
        .expect("still serving");
    bounded("close", client.close()).await;
}

#[tokio::test(start_paused = true)]
async fn timeout_reaches_the_handler_in_memory() {
    for kind in MEMORY {
        timeout_reaches_the_handler(kind).await;
    }
}

/// Real sockets race a paused clock's auto-advance: these run on the real clock.
#[tokio::test]
async fn timeout_reaches_the_handler_over_stdio_framing_and_http() {
    for kind in [Kind::Stdio, Kind::Http] {
        timeout_reaches_the_handler(kind).await;
    }
}

/// An elicitation answered through `input_required` while other calls run: a call
/// held open on the server does not delay the rounds, and every call gets its own
/// result.
async fn elicitation_while_other_calls_run(kind: Kind) {
    let release = Arc::new(Notify::new());
    let held = release.clone();
    let server = Server::builder("asker", "1")
        .tool(tool("ask"), |_a, cx: ServerContext| async move {
            let form = ElicitRequestParams::form(
                "Your name?",
                json!({"type": "object", "properties": {"name": {"type": "string"}}})
                    .as_object()
                    .cloned()
                    .unwrap(),
            );
            let answer = cx
                .elicit(form)
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            let name = answer
                .content
                .as_ref()
                .and_then(|c| c.get("name"))
                .and_then(|v| v.as_str())
                .unwrap_or("nobody")
                .to_owned();
            Ok(CallToolResult::text(format!("hello {name}")))
        })
        .tool(tool("held"), move |_a, _cx| {
            let held = held.clone();
            async move {
                held.notified().await;
                Ok(CallToolResult::text("released"))
            }
        })
        .tool(tool("echo"), |_a, _cx| async {
            Ok(CallToolResult::text("echo"))
        })
        .build();
    let builder = per_request("agent").on_elicitation(false, |_params, cx| async move {
        // The callback may call the server too, while the round is open.
        cx.client()
            .ping()
            .await
            .map_err(mcpflow::protocol::ErrorObject::internal)?;
        let mut content = JsonObject::new();
        content.insert("name".to_owned(), json!("Ada"));
        Ok(ElicitResult::accept(content))
    });
    let (client, _server) = common::connect(kind, &server, builder).await;
    let held_call = tokio::spawn({
        let client = client.handle();
        async move { client.call_tool("held", json!({})).await }
    });
    let asks: Vec<_> = (0..3)
        .map(|_| {
            let client = client.handle();
            tokio::spawn(async move { client.call_tool("ask", json!({})).await })
        })
        .collect();
    let echoes: Vec<_> = (0..5)
        .map(|_| {
            let client = client.handle();
            tokio::spawn(async move { client.call_tool("echo", json!({})).await })
        })
        .collect();
    for ask in asks {
        let result = bounded(&format!("{kind:?}: the elicited call"), ask)
            .await
            .unwrap()
            .expect("ask");
        assert_eq!(result.content[0].as_text(), Some("hello Ada"), "{kind:?}");
    }
    for echo in echoes {
        let result = bounded(&format!("{kind:?}: a concurrent call"), echo)
            .await
            .unwrap()
            .expect("echo");
        assert_eq!(result.content[0].as_text(), Some("echo"));
    }
    release.notify_one();
    let result = bounded(&format!("{kind:?}: the held call"), held_call)
        .await
        .unwrap()
        .expect("held");
    assert_eq!(result.content[0].as_text(), Some("released"));
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn elicitation_while_other_calls_run_on_every_transport() {
    for kind in WITH_HTTP {
        elicitation_while_other_calls_run(kind).await;
    }
}
