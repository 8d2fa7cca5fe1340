//! The two hangs mcpflow exists to make impossible, and their re-entrant relatives,
//! each over every transport (memory with capacity 0, 1 and large; newline framing
//! over a real socket pair, as stdio).
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::Arc;

use common::{ALL, Kind, WITH_HTTP, bounded, pair, tool};
use mcpflow::RequestOptions;
use mcpflow::client::Client;
use mcpflow::protocol::{
    CallToolRequestParams, CallToolResult, CreateMessageRequestParams, CreateMessageResult,
    LoggingLevel, SamplingMessage,
};
use mcpflow::server::Server;
use serde_json::json;
use tokio::sync::Notify;

/// python-sdk#594: a tool sends progress before its result; the call must complete
/// with every progress report delivered first.
async fn seed_000_progress_before_response(kind: Kind) {
    let server = Server::builder("seed-000", "1")
        .tool(tool("with_progress"), |_args, cx| async move {
            for i in 0..3 {
                let _ = cx.progress(f64::from(i), Some(3.0), Some("working")).await;
            }
            Ok(CallToolResult::text("Tool finished successfully"))
        })
        .build();
    let (client, _server) = common::connect(kind, &server, Client::builder("t", "1")).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| log.lock().unwrap().push(p.progress));
    let result = bounded(
        "seed-000: call_tool after progress",
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
        "all progress, in order, before the result"
    );
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn seed_000_progress_before_response_memory_capacity_0() {
    seed_000_progress_before_response(Kind::Memory0).await;
}
#[tokio::test]
async fn seed_000_progress_before_response_memory_capacity_1() {
    seed_000_progress_before_response(Kind::Memory1).await;
}
#[tokio::test]
async fn seed_000_progress_before_response_memory_large() {
    seed_000_progress_before_response(Kind::MemoryLarge).await;
}
#[tokio::test]
async fn seed_000_progress_before_response_over_stdio_framing() {
    seed_000_progress_before_response(Kind::Stdio).await;
}
#[tokio::test]
async fn seed_000_progress_before_response_over_http() {
    seed_000_progress_before_response(Kind::Http).await;
}

/// agent-framework#4866, strictest form: a scripted server sends `tools/list_changed`
/// during a call and withholds the call's result until the client has re-listed the
/// tools. A client whose reload runs on its receive loop deadlocks here.
async fn seed_001_list_changed_reload_during_call(kind: Kind) {
    let (c, s) = pair(kind);
    let server = tokio::spawn(async move {
        let mut peer = common::RawPeer::new(s);
        peer.accept_initialize().await;
        let list = |id: &serde_json::Value, names: &[&str]| {
            let tools: Vec<_> = names
                .iter()
                .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                .collect();
            json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
        };
        let first = peer.recv_until(|m| m["method"] == "tools/list").await;
        peer.send(list(&first["id"], &["mutate"])).await;
        let call = peer.recv_tool_call().await;
        peer.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
            .await;
        // Withhold the call's result until the client re-lists.
        let relist = peer.recv_until(|m| m["method"] == "tools/list").await;
        peer.send(list(&relist["id"], &["mutate", "added"])).await;
        peer.send(json!({"jsonrpc": "2.0", "id": call["id"],
            "result": {"content": [{"type": "text", "text": "mutated+relisted"}]}}))
            .await;
        peer
    });
    let client = bounded("connect", Client::builder("agent", "1").connect(c))
        .await
        .expect("connect");
    let initial = bounded("initial tool load", client.tools())
        .await
        .expect("tools");
    assert_eq!(initial.len(), 1);
    let result = bounded(
        "seed-001: call returns after the re-list",
        client.call_tool("mutate", json!({})),
    )
    .await
    .expect("call succeeds");
    assert_eq!(result.content[0].as_text(), Some("mutated+relisted"));
    let names: Vec<String> = bounded("refreshed list", client.tools())
        .await
        .expect("tools")
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["mutate", "added"]);
    assert_eq!(
        client.tool_list_fetches(),
        2,
        "the initial load and one refresh"
    );
    let _peer = bounded("scripted server", server)
        .await
        .expect("server script");
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn seed_001_list_changed_reload_during_call_memory_capacity_0() {
    seed_001_list_changed_reload_during_call(Kind::Memory0).await;
}
#[tokio::test]
async fn seed_001_list_changed_reload_during_call_memory_capacity_1() {
    seed_001_list_changed_reload_during_call(Kind::Memory1).await;
}
#[tokio::test]
async fn seed_001_list_changed_reload_during_call_over_stdio_framing() {
    seed_001_list_changed_reload_during_call(Kind::Stdio).await;
}

/// A notification handler that itself awaits `tools/list` on `list_changed` (the
/// exact agent-framework code shape) while a call is pending.
async fn notification_handler_awaits_tools_list(kind: Kind) {
    let server = Server::builder("reentrant", "1")
        .tool(tool("mutate"), |_args, cx| async move {
            cx.server().notify_tool_list_changed().await;
            Ok(CallToolResult::text("done"))
        })
        .build();
    let reloaded = Arc::new(Notify::new());
    let signal = reloaded.clone();
    let client = Client::builder("agent", "1").on_notification(move |n, client| {
        let signal = signal.clone();
        async move {
            if n.method == "notifications/tools/list_changed" {
                let tools = client.list_all_tools().await.expect("reload on the lane");
                assert_eq!(tools.len(), 1);
                signal.notify_one();
            }
        }
    });
    let (client, _server) = common::connect(kind, &server, client).await;
    let wait = reloaded.notified();
    let result = bounded(
        "call with list_changed",
        client.call_tool("mutate", json!({})),
    )
    .await
    .expect("call");
    assert_eq!(result.content[0].as_text(), Some("done"));
    bounded("handler reloaded the tool list", wait).await;
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn notification_handler_awaits_tools_list_on_every_transport() {
    for kind in WITH_HTTP {
        notification_handler_awaits_tools_list(kind).await;
    }
}

/// The server asks for sampling during a call; the client's sampling callback calls
/// `tools/list` on the same connection before answering.
async fn sampling_during_call_whose_callback_lists_tools(kind: Kind) {
    let server = Server::builder("sampler", "1")
        .tool(tool("ask"), |_args, cx| async move {
            let reply = cx
                .create_message(CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text("hi")],
                    10,
                ))
                .await
                .map_err(|e| mcpflow::server::ToolError::failed(e.to_string()))?;
            let text = reply.content.blocks()[0]
                .as_text()
                .unwrap_or_default()
                .to_owned();
            Ok(CallToolResult::text(format!("model said: {text}")))
        })
        .build();
    let client = Client::builder("agent", "1").on_sampling(|_params, cx| async move {
        let tools = cx
            .client()
            .list_all_tools()
            .await
            .map_err(mcpflow::protocol::ErrorObject::internal)?;
        Ok(CreateMessageResult::assistant_text(
            "m",
            format!("{} tools", tools.len()),
        ))
    });
    let (client, _server) = common::connect(kind, &server, client).await;
    let result = bounded("sampling during call", client.call_tool("ask", json!({})))
        .await
        .expect("call");
    assert_eq!(result.content[0].as_text(), Some("model said: 1 tools"));
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn sampling_during_call_whose_callback_lists_tools_on_every_transport() {
    for kind in WITH_HTTP {
        sampling_during_call_whose_callback_lists_tools(kind).await;
    }
}

/// rmcp's handshake hang: an `initialize` handler that sends and awaits a log
/// notification (the engine runs before the handshake).
#[tokio::test]
async fn initialize_handler_sends_and_awaits_a_log_notification() {
    for kind in ALL {
        let server = Server::builder("init-logger", "1")
            .on_initialize(|_params, cx| async move {
                cx.log(LoggingLevel::Info, "initializing")
                    .await
                    .map_err(mcpflow::protocol::ErrorObject::internal)?;
                Ok(())
            })
            .build();
        let (c, s) = pair(kind);
        let _running = server.serve(s);
        let logged = Arc::new(Notify::new());
        let signal = logged.clone();
        let client = Client::builder("t", "1").on_log(move |m, _c| {
            let signal = signal.clone();
            async move {
                assert_eq!(m.data, json!("initializing"));
                signal.notify_one();
            }
        });
        let client = bounded("connect while initialize logs", client.connect(c))
            .await
            .expect("connect");
        bounded("the log sent by the initialize handler", logged.notified()).await;
        bounded("close", client.close()).await;
    }
}

/// A client log handler awaits `tools/list` on a log notification that arrives before
/// the `initialize` result (the server logs from its initialize hook).
#[tokio::test]
async fn client_log_handler_awaits_tools_list_before_initialize_result() {
    for kind in ALL {
        let server = Server::builder("early-logger", "1")
            .tool(tool("t"), |_a, _c| async { Ok(CallToolResult::text("x")) })
            .on_initialize(|_params, cx| async move {
                cx.log(LoggingLevel::Info, "early")
                    .await
                    .map_err(mcpflow::protocol::ErrorObject::internal)?;
                Ok(())
            })
            .build();
        let (c, s) = pair(kind);
        let _running = server.serve(s);
        let listed = Arc::new(tokio::sync::Mutex::new(None));
        let done = Arc::new(Notify::new());
        let (slot, signal) = (listed.clone(), done.clone());
        let client = Client::builder("t", "1").on_log(move |_m, client| {
            let (slot, signal) = (slot.clone(), signal.clone());
            async move {
                let tools = client
                    .list_all_tools()
                    .await
                    .expect("tools/list from the log handler");
                *slot.lock().await = Some(tools.len());
                signal.notify_one();
            }
        });
        let wait = done.notified();
        let client = bounded(
            "connect with a re-entrant early log handler",
            client.connect(c),
        )
        .await
        .expect("connect");
        bounded("the log handler's tools/list", wait).await;
        assert_eq!(*listed.lock().await, Some(1));
        bounded("close", client.close()).await;
    }
}

/// A `list_changed` handler that reads the cached tool list must see the new list, not
/// the one the notification made stale (the refresh it started is awaited). The call
/// holds its result until the handler saw the added tool.
async fn list_changed_handler_sees_the_new_tool_list(kind: Kind) {
    let saw_new_list = Arc::new(tokio::sync::Notify::new());
    let server = Server::builder("mutating", "1").build();
    let gate = saw_new_list.clone();
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
    let gate = saw_new_list.clone();
    let builder = Client::builder("agent", "1").on_notification(move |n, client| {
        let gate = gate.clone();
        async move {
            if n.method == "notifications/tools/list_changed" {
                let tools = client.tools().await.expect("tools during the call");
                if tools.iter().any(|t| t.name == "added") {
                    gate.notify_one();
                }
            }
        }
    });
    let (client, _server) = common::connect(kind, &server, builder).await;
    assert_eq!(
        bounded("initial load", client.tools())
            .await
            .expect("tools")
            .len(),
        1
    );
    let result = bounded(
        "the handler sees the added tool, so the call returns",
        client.call_tool("mutate", json!({})),
    )
    .await
    .expect("call succeeds");
    assert_eq!(result.content[0].as_text(), Some("mutated+relisted"));
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn list_changed_handler_sees_the_new_tool_list_on_every_transport() {
    for kind in WITH_HTTP {
        list_changed_handler_sees_the_new_tool_list(kind).await;
    }
}
