//! The client: negotiation, typed calls, all-pages helpers, progress as a stream,
//! callbacks (elicitation, roots), and the rule that `initialize` is never cancelled.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::time::Duration;

use common::{Kind, RawPeer, bounded, bounded_for, pair, tool};
use mcpflow::client::{Client, ConnectError, Era};
use mcpflow::protocol::completion::CompletionReference;
use mcpflow::protocol::prompts::{Prompt, PromptArgument};
use mcpflow::protocol::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    ElicitRequestParams, ElicitResult, GetPromptRequestParams, GetPromptResult, JsonObject,
    PromptMessage, ProtocolVersion, Root,
};
use mcpflow::server::{Server, ToolError};
use mcpflow::session::RequestEvent;
use mcpflow::{RequestOptions, SessionConfig, SessionError};
use serde_json::json;

/// Each handshake version the client speaks is accepted when the server picks it.
#[tokio::test]
async fn client_accepts_every_handshake_version_the_server_picks() {
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let (c, s) = pair(Kind::Memory1);
        let server = tokio::spawn(async move {
            let mut peer = RawPeer::new(s);
            let init = peer.recv().await.unwrap();
            assert_eq!(
                init["params"]["protocolVersion"], "2025-11-25",
                "the client asks for the newest"
            );
            peer.send(json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":version,"capabilities":{},"serverInfo":{"name":"old","version":"1"}}})).await;
            peer.recv_until(|m| m["method"] == "notifications/initialized")
                .await;
            peer
        });
        let client = bounded(
            "connect",
            Client::builder("t", "1").era(Era::Handshake).connect(c),
        )
        .await
        .expect(version);
        assert_eq!(client.server_info().protocol_version.as_str(), version);
        let _peer = bounded("server", server).await;
        bounded("close", client.close()).await;
    }
}

/// A version the client does not speak fails the handshake with a clear error.
#[tokio::test]
async fn client_rejects_a_version_it_does_not_speak() {
    let (c, s) = pair(Kind::Memory1);
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::new(s);
        let init = peer.recv().await.unwrap();
        peer.send(json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"x","version":"1"}}})).await;
        peer
    });
    let err = bounded(
        "connect",
        Client::builder("t", "1").era(Era::Handshake).connect(c),
    )
    .await
    .expect_err("unsupported");
    assert!(
        matches!(err, ConnectError::UnsupportedVersion { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("1999-01-01"));
    let _peer = bounded("server", server).await;
}

/// The server negotiates: an older requested version is kept, an unknown one gets
/// the server's newest.
#[tokio::test]
async fn server_negotiates_the_protocol_version() {
    for (asked, expected) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2030-01-01", "2025-11-25"),
    ] {
        let server = Server::builder("s", "1").build();
        let (c, s) = pair(Kind::Memory1);
        let _running = server.serve(s);
        let client =
            Client::builder("t", "1").protocol_version(ProtocolVersion::from_static(asked));
        let client = bounded("connect", client.connect(c))
            .await
            .expect("connect");
        assert_eq!(
            client.server_info().protocol_version.as_str(),
            expected,
            "asked for {asked}"
        );
        bounded("close", client.close()).await;
    }
}

/// `initialize` is never cancelled, even when it times out.
#[tokio::test(start_paused = true)]
async fn initialize_is_never_cancelled_even_on_timeout() {
    let (c, s) = pair(Kind::Memory1);
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::new(s);
        let init = peer.recv().await.unwrap();
        assert_eq!(init["method"], "initialize");
        // Say nothing; the next thing the client sends must not be a cancellation.
        peer.recv().await
    });
    let config = SessionConfig::builder()
        .request_timeout(Duration::from_secs(3))
        .build();
    let err = bounded_for(
        Duration::from_secs(60),
        "connect",
        Client::builder("t", "1")
            .era(Era::Handshake)
            .session_config(config)
            .connect(c),
    )
    .await
    .expect_err("times out");
    assert!(
        matches!(err, ConnectError::Initialize(SessionError::Timeout { .. })),
        "{err}"
    );
    let next = bounded_for(Duration::from_secs(60), "server sees the end", server)
        .await
        .unwrap();
    assert!(
        next.is_none(),
        "the client sent {next:?} instead of closing"
    );
}

/// All-pages helpers follow cursors; the cached list covers every page.
#[tokio::test]
async fn list_helpers_follow_every_page() {
    let mut builder = Server::builder("paged", "1").page_size(3);
    for i in 0..10 {
        builder = builder.tool(tool(&format!("t{i}")), |_a, _c| async {
            Ok(CallToolResult::text("x"))
        });
    }
    let server = builder.build();
    let (c, s) = pair(Kind::Memory0);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let first = bounded("one page", client.list_tools(None))
        .await
        .expect("page");
    assert_eq!(first.tools.len(), 3);
    assert_eq!(first.next_cursor.as_deref(), Some("3"));
    assert_eq!(
        bounded("all pages", client.list_all_tools())
            .await
            .expect("all")
            .len(),
        10
    );
    assert_eq!(
        bounded("cached list", client.tools())
            .await
            .expect("cached")
            .len(),
        10
    );
    bounded("close", client.close()).await;
}

/// Progress as a stream: events in order, then the outcome.
#[tokio::test]
async fn progress_as_a_stream_then_the_result() {
    let server = Server::builder("s", "1")
        .tool(tool("steps"), |_a, cx| async move {
            for i in 1..=3 {
                let _ = cx
                    .progress(f64::from(i), Some(3.0), Some(&format!("step {i}")))
                    .await;
            }
            Ok(CallToolResult::text("done"))
        })
        .build();
    let (c, s) = pair(Kind::Memory0);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let mut call = bounded(
        "start",
        client.start_call_tool(&CallToolRequestParams::new("steps"), RequestOptions::new()),
    )
    .await
    .expect("start");
    let mut messages = Vec::new();
    loop {
        match bounded("next event", call.next_event())
            .await
            .expect("an event")
        {
            RequestEvent::Progress(p) => messages.push(p.message.unwrap_or_default()),
            RequestEvent::Done(result) => {
                let result: CallToolResult =
                    serde_json::from_str(result.expect("ok").get()).unwrap();
                assert_eq!(result.content[0].as_text(), Some("done"));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(messages, ["step 1", "step 2", "step 3"]);
    assert!(
        call.next_event().await.is_none(),
        "nothing after the outcome"
    );
    bounded("close", client.close()).await;
}

/// Elicitation in form mode; URL mode is refused with -32602 when not declared.
#[tokio::test]
async fn elicitation_form_mode_and_undeclared_url_mode() {
    let server = Server::builder("s", "1")
        .tool(tool("ask"), |_a, cx| async move {
            let mut schema = JsonObject::new();
            schema.insert("type".into(), json!("object"));
            schema.insert("properties".into(), json!({"name": {"type": "string"}}));
            let form = cx
                .elicit(ElicitRequestParams::form("Your name?", schema))
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            let url = cx
                .elicit(ElicitRequestParams::url(
                    "Log in",
                    "https://example.com/login",
                    "e1",
                ))
                .await;
            let name = form
                .content
                .and_then(|c| c.get("name").cloned())
                .unwrap_or_default();
            Ok(CallToolResult::text(format!(
                "{name}; url: {}",
                url.is_err()
            )))
        })
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = Client::builder("t", "1").on_elicitation(false, |params, _c| async move {
        assert!(matches!(params, ElicitRequestParams::Form(_)));
        let mut content = JsonObject::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult::accept(content))
    });
    let client = bounded("connect", client.connect(c))
        .await
        .expect("connect");
    let result = bounded("call", client.call_tool("ask", json!({})))
        .await
        .expect("call");
    assert_eq!(result.content[0].as_text(), Some("\"Ada\"; url: true"));
    bounded("close", client.close()).await;
}

/// Roots: the server lists them; the client announces changes.
#[tokio::test]
async fn roots_are_served_and_changes_announced() {
    let changed = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = changed.clone();
    let server = Server::builder("s", "1")
        .tool(tool("roots"), |_a, cx| async move {
            let roots = cx
                .list_roots()
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            Ok(CallToolResult::text(
                roots
                    .roots
                    .iter()
                    .map(|r| r.uri.clone())
                    .collect::<Vec<_>>()
                    .join(","),
            ))
        })
        .on_notification(move |n, _p| {
            let signal = signal.clone();
            async move {
                if n.method == "notifications/roots/list_changed" {
                    signal.notify_one();
                }
            }
        })
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = Client::builder("t", "1").roots(vec![Root::new("file:///work", "work")]);
    let client = bounded("connect", client.connect(c))
        .await
        .expect("connect");
    let result = bounded("call", client.call_tool("roots", json!({})))
        .await
        .expect("call");
    assert_eq!(result.content[0].as_text(), Some("file:///work"));
    let wait = changed.notified();
    bounded("announce", client.notify_roots_list_changed())
        .await
        .expect("notify");
    bounded("the server saw roots/list_changed", wait).await;
    bounded("close", client.close()).await;
}

/// A server request the client has no handler for gets -32601 at once.
#[tokio::test]
async fn sampling_without_a_handler_is_refused_at_once() {
    let server = Server::builder("s", "1")
        .tool(tool("ask"), |_a, cx| async move {
            let err = cx
                .create_message(mcpflow::protocol::CreateMessageRequestParams::new(
                    vec![mcpflow::protocol::SamplingMessage::user_text("hi")],
                    5,
                ))
                .await
                .expect_err("the client declared no sampling");
            Ok(CallToolResult::text(err.to_string()))
        })
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let result = bounded("call", client.call_tool("ask", json!({})))
        .await
        .expect("call");
    assert!(
        result.content[0].as_text().unwrap().contains("sampling"),
        "{result:?}"
    );
    bounded("close", client.close()).await;
}

/// Prompts with required arguments, and completion.
#[tokio::test]
async fn prompts_check_required_arguments_and_complete() {
    let server = Server::builder("s", "1")
        .prompt(
            Prompt::new("greet", "Greets").with_argument(PromptArgument::new("name", "who", true)),
            |args, _cx| async move {
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    format!("Hello {}", args["name"]),
                )]))
            },
        )
        .completion(|params, _cx| async move {
            let prefix = params.argument.value.clone();
            Ok(CompleteResult::new(
                ["Ada", "Alan", "Grace"]
                    .iter()
                    .filter(|n| n.starts_with(&prefix))
                    .map(|s| (*s).to_owned())
                    .collect(),
            ))
        })
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let prompt = bounded(
        "get",
        client.get_prompt(&GetPromptRequestParams::new("greet").with_argument("name", "Ada")),
    )
    .await
    .expect("prompt");
    assert_eq!(prompt.messages[0].content.as_text(), Some("Hello Ada"));
    let err = bounded(
        "missing argument",
        client.get_prompt(&GetPromptRequestParams::new("greet")),
    )
    .await
    .expect_err("missing");
    assert_eq!(err.rejection().map(|e| e.code.0), Some(-32602));
    let done = bounded(
        "complete",
        client.complete(&CompleteRequestParams::new(
            CompletionReference::prompt("greet"),
            "name",
            "A",
        )),
    )
    .await
    .expect("complete");
    assert_eq!(done.completion.values, ["Ada", "Alan"]);
    assert_eq!(
        bounded("cached prompts", client.prompts())
            .await
            .expect("prompts")
            .len(),
        1
    );
    bounded("close", client.close()).await;
}
