//! Calls through the tool host: deadlines (idle, total, queued) on the paused clock,
//! `notifications/cancelled` and late answers, sampling declined without a handler,
//! elicitation tied to its call, approval, and the text a model reads.

#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::{Kind, RawPeer, bounded, pair, tool};
use mcpflow::host::{
    Approval, CallOptions, HostError, ServerOptions, TimeoutPhase, ToolHost, connector,
    memory_connector,
};
use mcpflow::protocol::{CallToolResult, ElicitRequestParams, ElicitResult, JsonObject};
use mcpflow::server::Server;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

/// A host of one scripted raw server named `raw`; the test gets the server's side.
async fn raw_host(timeout: Duration) -> (ToolHost, RawPeer) {
    let (peers, mut next) = mpsc::unbounded_channel();
    let host = ToolHost::builder()
        .timeout(timeout)
        .server(ServerOptions::new(
            "raw",
            connector(move |builder| {
                let (client_side, server_side) = pair(Kind::Memory1);
                let _ = peers.send(RawPeer::new(server_side));
                async move {
                    builder
                        .connect(client_side)
                        .await
                        .map_err(mcpflow::host::ConnectFailure::new)
                }
            }),
        ))
        .start();
    let mut peer = bounded("a connection", next.recv()).await.unwrap();
    bounded("initialize", peer.accept_initialize()).await;
    let list = bounded(
        "tools/list",
        peer.recv_until(|m| m["method"] == "tools/list"),
    )
    .await;
    peer.send(
        json!({"jsonrpc": "2.0", "id": list["id"], "result": {"tools": [
            {"name": "work", "inputSchema": {"type": "object"}}
        ]}}),
    )
    .await;
    let mut catalog = host.watch_catalog();
    bounded(
        "the catalog",
        catalog.wait_for(|s| s.tool("raw__work").is_some()),
    )
    .await
    .unwrap();
    (host, peer)
}

/// The next `tools/call` (answering any `tools/list` on the way with the same tool).
async fn next_call(peer: &mut RawPeer) -> Value {
    loop {
        let m = bounded("a message", peer.recv()).await.expect("open");
        if m["method"] == "tools/call" {
            return m;
        }
        if m["method"] == "tools/list" {
            peer.send(
                json!({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [
                    {"name": "work", "inputSchema": {"type": "object"}}
                ]}}),
            )
            .await;
        }
    }
}

fn text_result(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

#[tokio::test(start_paused = true)]
async fn a_never_answering_tool_times_out_is_cancelled_and_its_late_answer_ignored() {
    let (host, mut peer) = raw_host(Duration::from_secs(5)).await;
    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call("raw__work", json!({})).await }
    });
    let request = next_call(&mut peer).await;
    let outcome = bounded("the timeout", call).await.unwrap();
    match &outcome {
        Err(HostError::Timeout {
            phase: TimeoutPhase::Idle,
            after,
            server,
            ..
        }) => {
            assert_eq!(*after, Duration::from_secs(5));
            assert_eq!(server, "raw");
        }
        other => panic!("expected an idle timeout, got {other:?}"),
    }
    assert!(
        outcome
            .unwrap_err()
            .to_model_text()
            .contains("timed out after 5s")
    );
    let cancelled = bounded(
        "notifications/cancelled",
        peer.recv_until(|m| m["method"] == "notifications/cancelled"),
    )
    .await;
    assert_eq!(cancelled["params"]["requestId"], request["id"]);
    // The late answer is ignored, and the connection keeps working.
    peer.send(text_result(&request["id"], "late")).await;
    let again = tokio::spawn({
        let host = host.clone();
        async move { host.call("raw__work", json!({})).await }
    });
    let second = next_call(&mut peer).await;
    assert_ne!(second["id"], request["id"]);
    peer.send(text_result(&second["id"], "on time")).await;
    let result = bounded("the second call", again)
        .await
        .unwrap()
        .expect("a result");
    assert_eq!(result.content[0].as_text(), Some("on time"));
    bounded("close", host.close()).await;
}

#[tokio::test(start_paused = true)]
async fn a_progress_reporting_call_outlives_the_idle_timeout_but_not_the_cap() {
    let server = Server::builder("s", "1")
        .tool(tool("long"), |_a, cx| async move {
            for i in 0.. {
                tokio::time::sleep(Duration::from_secs(1)).await;
                cx.progress(f64::from(i), None, None).await.ok();
            }
            Ok(CallToolResult::text("never"))
        })
        .build();
    let host = ToolHost::builder()
        .server(ServerOptions::new("s", memory_connector(server)))
        .start();
    let mut catalog = host.watch_catalog();
    bounded(
        "the catalog",
        catalog.wait_for(|s| s.tool("s__long").is_some()),
    )
    .await
    .unwrap();
    let reports = Arc::new(AtomicUsize::new(0));
    let options = CallOptions::new()
        .timeout(Duration::from_secs(2))
        .max_total(Duration::from_secs(10))
        .on_progress({
            let reports = reports.clone();
            move |_| {
                reports.fetch_add(1, Ordering::SeqCst);
            }
        });
    let outcome = bounded_paused(host.call_with("s__long", json!({}), options)).await;
    match outcome {
        Err(HostError::Timeout {
            phase: TimeoutPhase::Total,
            after,
            ..
        }) => assert_eq!(after, Duration::from_secs(10)),
        other => panic!("expected the total cap, got {other:?}"),
    }
    // Past the 2 s idle timeout many times over, kept alive by progress.
    assert!(reports.load(Ordering::SeqCst) >= 5, "{reports:?}");
    bounded("close", host.close()).await;
}

/// A bounded wait on the paused clock, past the deadlines under test.
async fn bounded_paused<F: std::future::Future>(fut: F) -> F::Output {
    common::bounded_for(Duration::from_secs(60), "the call", fut).await
}

#[tokio::test]
async fn sampling_during_a_call_without_a_handler_is_declined_at_once() {
    let (host, mut peer) = raw_host(Duration::from_secs(300)).await;
    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call("raw__work", json!({})).await }
    });
    let request = next_call(&mut peer).await;
    peer.send(json!({"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}}))
        .await;
    let answer = bounded(
        "the answer to sampling",
        peer.recv_until(|m| m["id"] == "s-1"),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    assert!(
        !call.is_finished(),
        "the call did not wait on, nor end with, the sampling"
    );
    peer.send(text_result(&request["id"], "done")).await;
    let result = bounded("the call", call).await.unwrap().expect("a result");
    assert_eq!(result.content[0].as_text(), Some("done"));
    bounded("close", host.close()).await;
}

#[tokio::test]
async fn elicitation_reaches_the_handler_with_the_call_that_caused_it() {
    let server = Server::builder("s", "1")
        .tool(tool("ask"), |_a, cx| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            let params =
                ElicitRequestParams::form("Your name?", schema.as_object().cloned().unwrap());
            let answer = cx
                .elicit(params)
                .await
                .map_err(|e| mcpflow::server::ToolError::failed(e.to_string()))?;
            Ok(CallToolResult::text(
                serde_json::to_string(&answer.content).unwrap_or_default(),
            ))
        })
        .build();
    let seen = Arc::new(std::sync::Mutex::new(None));
    let host = ToolHost::builder()
        .on_elicitation({
            let seen = seen.clone();
            move |request| {
                *seen.lock().unwrap() = Some((request.server.clone(), request.call.clone()));
                async move {
                    let mut content = JsonObject::new();
                    content.insert("name".into(), json!("Ada"));
                    Ok(ElicitResult::accept(content))
                }
            }
        })
        .server(ServerOptions::new("s", memory_connector(server)))
        .start();
    let mut catalog = host.watch_catalog();
    bounded(
        "the catalog",
        catalog.wait_for(|s| s.tool("s__ask").is_some()),
    )
    .await
    .unwrap();
    let result = bounded("the call", host.call("s__ask", json!({"why": "greeting"}))).await;
    assert!(
        result.expect("a result").content[0]
            .as_text()
            .unwrap_or_default()
            .contains("Ada")
    );
    let (server, call) = seen.lock().unwrap().clone().expect("the handler ran");
    assert_eq!(server, "s");
    let call = call.expect("the call is known");
    assert_eq!(call.name, "s__ask");
    assert_eq!(call.arguments, json!({"why": "greeting"}));
    bounded("close", host.close()).await;
}

#[tokio::test]
async fn approval_tool_errors_and_bad_arguments_stop_or_explain_the_call() {
    let ran = Arc::new(AtomicBool::new(false));
    let integer =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let server = Server::builder("s", "1")
        .tool(tool("danger"), {
            let ran = ran.clone();
            move |_a, _c| {
                ran.store(true, Ordering::SeqCst);
                async { Ok(CallToolResult::text("boom")) }
            }
        })
        .tool(tool("fails"), |_a, _c| async {
            Ok(CallToolResult::error("disk full on /var"))
        })
        .tool(
            mcpflow::protocol::Tool::new("strict", "", integer.as_object().cloned().unwrap()),
            |_a, _c| async { Ok(CallToolResult::text("ok")) },
        )
        .build();
    let host = ToolHost::builder()
        .approval(|info| async move {
            if info.tool.name == "danger" {
                Approval::Deny("destructive tools need a human".into())
            } else {
                Approval::Approve
            }
        })
        .server(ServerOptions::new("s", memory_connector(server)))
        .start();
    let mut catalog = host.watch_catalog();
    bounded("the catalog", catalog.wait_for(|s| s.tools().count() == 3))
        .await
        .unwrap();
    let denied = bounded("danger", host.call("s__danger", json!({}))).await;
    assert!(
        matches!(&denied, Err(HostError::Denied { reason, .. }) if reason.contains("human")),
        "{denied:?}"
    );
    assert!(!ran.load(Ordering::SeqCst), "a denied call is not sent");
    let failed = bounded("fails", host.call("s__fails", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(failed, HostError::ToolFailed { .. }));
    assert!(
        failed.to_model_text().contains("disk full on /var"),
        "{}",
        failed.to_model_text()
    );
    let invalid = bounded("strict", host.call("s__strict", json!({"n": "x"})))
        .await
        .unwrap_err();
    assert!(
        matches!(&invalid, HostError::InvalidArguments { detail, .. } if detail.contains("/n")),
        "{invalid:?}"
    );
    assert!(invalid.never_sent());
    bounded("close", host.close()).await;
}

#[tokio::test(start_paused = true)]
async fn past_the_in_flight_limit_a_call_waits_within_its_deadline_only() {
    let entered = Arc::new(Notify::new());
    let server = Server::builder("s", "1")
        .tool(tool("block"), {
            let entered = entered.clone();
            move |_a, _c| {
                let entered = entered.clone();
                async move {
                    entered.notify_one();
                    std::future::pending::<()>().await;
                    Ok(CallToolResult::text("never"))
                }
            }
        })
        .build();
    let host = ToolHost::builder()
        .server(
            ServerOptions::new("s", memory_connector(server))
                .max_in_flight(NonZeroUsize::new(1).unwrap())
                .timeout(Duration::from_secs(3600)),
        )
        .start();
    let mut catalog = host.watch_catalog();
    bounded(
        "the catalog",
        catalog.wait_for(|s| s.tool("s__block").is_some()),
    )
    .await
    .unwrap();
    let first = tokio::spawn({
        let host = host.clone();
        async move { host.call("s__block", json!({})).await }
    });
    bounded("the first call runs", entered.notified()).await;
    let options = CallOptions::new().timeout(Duration::from_secs(3));
    let second = bounded_paused(host.call_with("s__block", json!({}), options)).await;
    match &second {
        Err(
            e @ HostError::Timeout {
                phase: TimeoutPhase::Queued,
                ..
            },
        ) => assert!(e.never_sent()),
        other => panic!("expected a queued timeout, got {other:?}"),
    }
    assert_eq!(host.calls_in_flight()["s"], 1);
    bounded("close", host.close()).await;
    let first = bounded("the first call ends", first).await.unwrap();
    assert!(
        matches!(first, Err(HostError::Cancelled { .. })),
        "{first:?}"
    );
    let after = host.call("s__block", json!({})).await;
    assert!(matches!(after, Err(HostError::Closed)), "{after:?}");
}

#[tokio::test]
async fn a_caller_cancelling_a_call_sends_notifications_cancelled() {
    let (host, mut peer) = raw_host(Duration::from_secs(300)).await;
    let token = tokio_util::sync::CancellationToken::new();
    let call = tokio::spawn({
        let (host, token) = (host.clone(), token.clone());
        async move {
            host.call_with("raw__work", json!({}), CallOptions::new().cancel_on(token))
                .await
        }
    });
    let request = next_call(&mut peer).await;
    token.cancel();
    let outcome = bounded("the cancelled call", call).await.unwrap();
    assert!(
        matches!(&outcome, Err(HostError::Cancelled { reason, .. }) if reason.contains("caller")),
        "{outcome:?}"
    );
    let cancelled = bounded(
        "notifications/cancelled",
        peer.recv_until(|m| m["method"] == "notifications/cancelled"),
    )
    .await;
    assert_eq!(cancelled["params"]["requestId"], request["id"]);
    bounded("close", host.close()).await;
}
