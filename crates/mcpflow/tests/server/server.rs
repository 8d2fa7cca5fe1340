//! The server: capabilities derived from what is registered, resources and templates,
//! subscriptions, log levels.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::Arc;

use common::{Kind, RawPeer, bounded, pair};
use mcpflow::client::Client;
use mcpflow::protocol::resources::{Resource, ResourceTemplate};
use mcpflow::protocol::{CallToolResult, LoggingLevel, ReadResourceResult, ResourceContents, Tool};
use mcpflow::server::Server;
use serde_json::json;
use tokio::sync::Notify;

#[tokio::test]
async fn capabilities_follow_what_is_registered() {
    let bare = Server::builder("bare", "1")
        .logging(false)
        .build()
        .capabilities();
    assert!(
        bare.tools.is_none()
            && bare.resources.is_none()
            && bare.prompts.is_none()
            && bare.logging.is_none()
    );
    let full = Server::builder("full", "1")
        .tool(
            Tool::new("t", "d", Tool::empty_input_schema()),
            |_a, _c| async { Ok(CallToolResult::text("x")) },
        )
        .resource(Resource::new("x://a", "a"), |uri, _c| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri, "a",
            )]))
        })
        .completion(|_p, _c| async { Ok(mcpflow::protocol::CompleteResult::new(vec![])) })
        .build()
        .capabilities();
    assert_eq!(full.tools.unwrap().list_changed, Some(true));
    let resources = full.resources.unwrap();
    assert_eq!(
        (resources.subscribe, resources.list_changed),
        (Some(true), Some(true))
    );
    assert!(full.logging.is_some() && full.completions.is_some() && full.prompts.is_none());
}

#[tokio::test]
async fn resources_templates_and_subscriptions() {
    let server = Server::builder("res", "1")
        .resource(
            Resource::new("test://static", "static").with_mime_type("text/plain"),
            |uri, _c| async move {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    uri,
                    "static text",
                )]))
            },
        )
        .resource_template(
            ResourceTemplate::new("test://items/{id}/data", "item"),
            |uri, vars, _c| async move {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    uri,
                    format!("item {}", vars["id"]),
                )]))
            },
        )
        .tool(
            Tool::new("touch", "update a resource", Tool::empty_input_schema()),
            |_a, cx| async move {
                let _ = cx.notify_resource_updated("test://static").await;
                Ok(CallToolResult::text("touched"))
            },
        )
        .build();
    let (c, s) = pair(Kind::Memory0);
    let _running = server.serve(s);
    let updated = Arc::new(Notify::new());
    let signal = updated.clone();
    let client = Client::builder("t", "1").on_notification(move |n, _c| {
        let signal = signal.clone();
        async move {
            if n.method == "notifications/resources/updated" {
                signal.notify_one();
            }
        }
    });
    let client = bounded("connect", client.connect(c))
        .await
        .expect("connect");
    let read = bounded("read", client.read_resource("test://static"))
        .await
        .expect("read");
    assert!(matches!(&read.contents[0], ResourceContents::Text(t) if t.text == "static text"));
    let item = bounded("template", client.read_resource("test://items/42/data"))
        .await
        .expect("template");
    assert!(matches!(&item.contents[0], ResourceContents::Text(t) if t.text == "item 42"));
    let err = bounded("unknown", client.read_resource("test://nope"))
        .await
        .expect_err("not found");
    assert_eq!(err.rejection().map(|e| e.code.0), Some(-32002));
    assert_eq!(
        bounded("templates", client.list_all_resource_templates())
            .await
            .unwrap()
            .len(),
        1
    );
    bounded("subscribe", client.subscribe("test://static"))
        .await
        .expect("subscribe");
    let wait = updated.notified();
    bounded("touch", client.call_tool("touch", json!({})))
        .await
        .expect("call");
    bounded("resources/updated after subscribe", wait).await;
    bounded("unsubscribe", client.unsubscribe("test://static"))
        .await
        .expect("unsubscribe");
    bounded("close", client.close()).await;
}

/// `logging/setLevel` filters what the server sends.
#[tokio::test]
async fn log_level_filters_messages() {
    let server = Server::builder("logger", "1")
        .tool(
            Tool::new("log", "logs twice", Tool::empty_input_schema()),
            |_a, cx| async move {
                let _ = cx.log(LoggingLevel::Debug, "debug").await;
                let _ = cx.log(LoggingLevel::Error, "error").await;
                Ok(CallToolResult::text("ok"))
            },
        )
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::builder("t", "1").on_log(move |m, _c| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(m.data);
        }
    });
    let client = bounded("connect", client.connect(c))
        .await
        .expect("connect");
    bounded("call", client.call_tool("log", json!({})))
        .await
        .expect("call");
    assert_eq!(bounded("first", rx.recv()).await.unwrap(), json!("debug"));
    assert_eq!(bounded("second", rx.recv()).await.unwrap(), json!("error"));
    bounded("set level", client.set_logging_level(LoggingLevel::Warning))
        .await
        .expect("setLevel");
    bounded("call", client.call_tool("log", json!({})))
        .await
        .expect("call");
    assert_eq!(
        bounded("only the error", rx.recv()).await.unwrap(),
        json!("error")
    );
    bounded("close", client.close()).await;
}

/// A server keeps answering requests that arrive before `initialize` and answers
/// `ping` at any time.
#[tokio::test]
async fn requests_before_initialize_are_served() {
    let server = Server::builder("early", "1")
        .tool(
            Tool::new("t", "d", Tool::empty_input_schema()),
            |_a, _c| async { Ok(CallToolResult::text("x")) },
        )
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let mut peer = RawPeer::new(c);
    peer.send(json!({"jsonrpc":"2.0","id":"p","method":"ping"}))
        .await;
    assert_eq!(
        bounded("ping", peer.recv()).await.unwrap(),
        json!({"jsonrpc":"2.0","id":"p","result":{}})
    );
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
        .await;
    let list = bounded("tools/list", peer.recv()).await.unwrap();
    assert_eq!(list["result"]["tools"][0]["name"], "t");
}

/// Under 2025-03-26 (and only then) a JSON-RPC batch is received and each request in
/// it answered.
#[tokio::test]
async fn batches_are_received_under_2025_03_26_only() {
    for (version, accepted) in [("2025-03-26", true), ("2025-06-18", false)] {
        let server = Server::builder("batch", "1")
            .tool(
                Tool::new("t", "d", Tool::empty_input_schema()),
                |_a, _c| async { Ok(CallToolResult::text("x")) },
            )
            .build();
        let (c, s) = pair(Kind::Memory1);
        let _running = server.serve(s);
        let mut peer = RawPeer::new(c);
        peer.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":version,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}})).await;
        let init = bounded("initialize", peer.recv()).await.unwrap();
        assert_eq!(init["result"]["protocolVersion"], version);
        peer.send_text(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":3,"method":"tools/list"}]"#).await;
        if accepted {
            // Answered as one array, as JSON-RPC asks.
            let answer = bounded("the batch's answer", peer.recv()).await.unwrap();
            let mut ids: Vec<_> = answer
                .as_array()
                .unwrap_or_else(|| panic!("not an array: {answer}"))
                .iter()
                .map(|a| a["id"].clone())
                .collect();
            ids.sort_by_key(|v| v.as_i64());
            assert_eq!(ids, [json!(2), json!(3)]);
        } else {
            let reply = bounded("refusal", peer.recv()).await.unwrap();
            assert_eq!(reply["error"]["code"], -32600, "{reply}");
        }
    }
}

/// Arguments are checked against the tool's `inputSchema` before the handler runs.
/// Under 2025-11-25 a violation is a tool execution error (SEP-1303: `isError`, so the
/// model can correct itself); under older versions a -32602 protocol error. Both name
/// the path and the reason.
#[tokio::test]
async fn arguments_are_validated_against_the_input_schema() {
    let schema = json!({
        "type": "object",
        "properties": {"count": {"type": "integer", "minimum": 1}},
        "required": ["count"],
        "additionalProperties": false
    });
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for (version, expect_tool_error) in [("2025-11-25", true), ("2025-06-18", false)] {
        let seen = ran.clone();
        let server = Server::builder("strict", "1")
            .tool(
                Tool::new("repeat", "repeats", schema.as_object().unwrap().clone()),
                move |args, _cx| {
                    let seen = seen.clone();
                    async move {
                        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        Ok(CallToolResult::text(format!("{}", args["count"])))
                    }
                },
            )
            .build();
        let (c, s) = pair(Kind::Memory1);
        let _running = server.serve(s);
        let client = Client::builder("t", "1").protocol_version(
            mcpflow::protocol::ProtocolVersion::from_static(match version {
                "2025-11-25" => "2025-11-25",
                _ => "2025-06-18",
            }),
        );
        let client = bounded("connect", client.connect(c))
            .await
            .expect("connect");
        let ok = bounded(
            "valid call",
            client.call_tool("repeat", json!({"count": 2})),
        )
        .await
        .expect("valid");
        assert_eq!(ok.content[0].as_text(), Some("2"));
        let bad = bounded(
            "invalid call",
            client.call_tool("repeat", json!({"count": 0, "extra": true})),
        )
        .await;
        if expect_tool_error {
            let result = bad.expect("a tool error, not a protocol error");
            assert!(result.is_error());
            let text = result.content[0].as_text().unwrap();
            assert!(text.contains("/count") && text.contains("extra"), "{text}");
        } else {
            let err = bad.expect_err("a protocol error");
            let rejection = err.rejection().expect("rejected");
            assert_eq!(rejection.code.0, -32602);
            assert_eq!(
                rejection.data.as_ref().unwrap()["errors"][0]["path"],
                "/count",
                "{rejection:?}"
            );
        }
        bounded("close", client.close()).await;
    }
    assert_eq!(
        ran.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the handler never saw invalid arguments"
    );
}

/// A handler sees the request's `_meta`, vendor keys and progress token included.
#[tokio::test]
async fn handlers_see_the_request_meta() {
    let server = Server::builder("meta", "1")
        .tool(
            Tool::new("meta", "echoes _meta", Tool::empty_input_schema()),
            |_a, cx| async move {
                let meta = cx.meta().cloned().unwrap_or_default();
                Ok(CallToolResult::text(
                    serde_json::Value::Object(meta).to_string(),
                ))
            },
        )
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let mut extra = mcpflow::protocol::JsonObject::new();
    extra.insert("com.example/trace".into(), json!("abc"));
    let options = mcpflow::RequestOptions::new()
        .meta(extra)
        .with_progress_token();
    let result = bounded(
        "call with _meta",
        client.call_tool_with(
            &mcpflow::protocol::CallToolRequestParams::new("meta"),
            options,
        ),
    )
    .await
    .expect("call");
    let meta: serde_json::Value =
        serde_json::from_str(result.content[0].as_text().unwrap()).unwrap();
    assert_eq!(meta["com.example/trace"], "abc");
    assert!(meta["progressToken"].is_i64(), "{meta}");
    bounded("close", client.close()).await;
}

/// Completion routes per prompt argument and template variable; the resolved
/// arguments reach the completer; more than 100 candidates are cut with `hasMore`.
#[tokio::test]
async fn completion_routes_by_argument() {
    use mcpflow::protocol::prompts::{Prompt, PromptArgument};
    use mcpflow::protocol::{
        CompleteRequestParams, CompletionReference, GetPromptResult, PromptMessage,
    };
    let server = Server::builder("complete", "1")
        .prompt(
            Prompt::new("trip", "plan a trip")
                .with_argument(PromptArgument::new("country", "where", true))
                .with_argument(PromptArgument::new("city", "which city", true)),
            |_a, _c| async { Ok(GetPromptResult::new(vec![PromptMessage::user_text("go")])) },
        )
        .complete_argument(
            CompletionReference::prompt("trip"),
            "city",
            |prefix, resolved, _cx| async move {
                let cities: &[&str] = match resolved.get("country").map(String::as_str) {
                    Some("fr") => &["paris", "lyon", "lille"],
                    _ => &["london", "leeds"],
                };
                cities
                    .iter()
                    .filter(|c| c.starts_with(&prefix))
                    .map(|c| (*c).to_owned())
                    .collect()
            },
        )
        .complete_argument(
            CompletionReference::resource("x://{n}"),
            "n",
            |_prefix, _resolved, _cx| async move { (0..250).map(|i| i.to_string()).collect() },
        )
        .build();
    assert!(server.capabilities().completions.is_some());
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let mut params = CompleteRequestParams::new(CompletionReference::prompt("trip"), "city", "l");
    params.context = serde_json::from_value(json!({"arguments": {"country": "fr"}})).unwrap();
    let done = bounded("complete city", client.complete(&params))
        .await
        .expect("complete");
    assert_eq!(done.completion.values, ["lyon", "lille"]);
    let many = bounded(
        "complete n",
        client.complete(&CompleteRequestParams::new(
            CompletionReference::resource("x://{n}"),
            "n",
            "",
        )),
    )
    .await
    .expect("complete");
    assert_eq!(many.completion.values.len(), 100);
    assert_eq!(
        (many.completion.total, many.completion.has_more),
        (Some(250), Some(true))
    );
    let none = bounded(
        "unrouted argument",
        client.complete(&CompleteRequestParams::new(
            CompletionReference::prompt("trip"),
            "country",
            "f",
        )),
    )
    .await
    .expect("complete");
    assert!(none.completion.values.is_empty());
    bounded("close", client.close()).await;
}
