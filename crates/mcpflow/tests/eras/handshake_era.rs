//! Handshake-era features, each between mcpflow's client and server (over every transport
//! where the feature crosses one) or against a scripted peer: sampling with tools, URL
//! elicitation, structured output checked without a cached tool list, identity and the
//! callbacks' request context, and resource updates announced from outside a handler.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::{Arc, Mutex};

use common::{Kind, WITH_HTTP, bounded, connect, tool};
use mcpflow::client::Client;
use mcpflow::protocol::elicitation::ElicitUrlParams;
use mcpflow::protocol::resources::{ReadResourceResult, Resource, ResourceContents};
use mcpflow::protocol::sampling::{SamplingMessage, ToolChoice, ToolChoiceMode, stop_reason};
use mcpflow::protocol::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, Icon, JsonObject, LoggingLevel, Role, Root, Tool,
};
use mcpflow::server::{Server, ServerContext, Structured, ToolError};
use mcpflow::{RequestOptions, SessionError};
use serde_json::json;
use tokio::sync::Notify;

fn weather_tool() -> Tool {
    Tool::new(
        "get_weather",
        "The weather in a city",
        Tool::empty_input_schema(),
    )
}

/// A tool that runs a sampling loop with tools: the model asks for `get_weather`, the
/// tool "runs" it and samples again with the result.
fn sampling_server() -> Server {
    Server::builder("sampler", "1")
        .tool(tool("plan"), |_args, cx: ServerContext| async move {
            let mut params = CreateMessageRequestParams::new(
                vec![SamplingMessage::user_text("weather in Paris?")],
                100,
            );
            params.tools = Some(vec![weather_tool()]);
            params.tool_choice = Some(ToolChoice {
                mode: Some(ToolChoiceMode::Auto),
                ..Default::default()
            });
            let first = cx
                .create_message(params.clone())
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            let Some(ContentBlock::ToolUse(call)) = first.content.blocks().first().cloned() else {
                return Err(ToolError::failed(format!(
                    "expected tool_use, got {first:?}"
                )));
            };
            let result = mcpflow::protocol::content::ToolResultContent {
                tool_use_id: call.id.clone(),
                content: vec![ContentBlock::text("sunny")],
                ..Default::default()
            };
            params.messages.push(SamplingMessage::new(
                Role::Assistant,
                ContentBlock::ToolUse(call),
            ));
            params.messages.push(SamplingMessage::new(
                Role::User,
                ContentBlock::ToolResult(result),
            ));
            let second = cx
                .create_message(params)
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            let text = second.content.blocks()[0]
                .as_text()
                .unwrap_or("")
                .to_owned();
            Ok(CallToolResult::text(text))
        })
        .build()
}

/// A model that calls `get_weather` once, then answers with what the tool said.
async fn model(params: CreateMessageRequestParams) -> CreateMessageResult {
    let last = params.messages.last().unwrap();
    if let Some(ContentBlock::ToolResult(result)) = last.content.blocks().first() {
        let said = result.content[0].as_text().unwrap_or("").to_owned();
        return CreateMessageResult::assistant_text("m", format!("Paris is {said}"));
    }
    let call = mcpflow::protocol::content::ToolUseContent {
        id: "call-1".into(),
        name: "get_weather".into(),
        input: json!({"city": "Paris"}).as_object().cloned().unwrap(),
        ..Default::default()
    };
    let mut answer = CreateMessageResult::assistant_text("m", "");
    answer.content = vec![ContentBlock::ToolUse(call)].into();
    answer.stop_reason = Some(stop_reason::TOOL_USE.to_owned());
    answer
}

#[tokio::test]
async fn sampling_with_tools_runs_a_tool_loop_over_every_transport() {
    for kind in WITH_HTTP {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let builder = Client::builder("agent", "1").on_sampling_with_tools(move |params, _cx| {
            let record = record.clone();
            async move {
                let tools: Vec<String> = params
                    .tools
                    .iter()
                    .flatten()
                    .map(|t| t.name.clone())
                    .collect();
                record
                    .lock()
                    .unwrap()
                    .push((tools, params.tool_choice.clone()));
                Ok(model(params).await)
            }
        });
        let (client, _guard) = connect(kind, &sampling_server(), builder).await;
        let caps = &client.server_info();
        assert!(caps.capabilities.tools.is_some());
        let result = bounded(
            &format!("{kind:?}: plan"),
            client.call_tool("plan", json!({})),
        )
        .await
        .unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("Paris is sunny"),
            "{kind:?}"
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{kind:?}: two sampling rounds");
        assert_eq!(seen[0].0, vec!["get_weather".to_owned()], "{kind:?}");
        assert_eq!(
            seen[0].1.as_ref().and_then(|c| c.mode),
            Some(ToolChoiceMode::Auto),
            "{kind:?}"
        );
        bounded("close", client.close()).await;
    }
}

#[tokio::test]
async fn a_client_without_sampling_tools_is_never_sent_tools() {
    let calls = Arc::new(Mutex::new(0));
    let count = calls.clone();
    let builder = Client::builder("agent", "1").on_sampling(move |params, _cx| {
        *count.lock().unwrap() += 1;
        async move { Ok(model(params).await) }
    });
    let (client, _guard) = connect(Kind::Memory1, &sampling_server(), builder).await;
    let result = bounded("plan", client.call_tool("plan", json!({})))
        .await
        .unwrap();
    assert!(result.is_error());
    let text = result.content[0].as_text().unwrap();
    assert!(text.contains("sampling.tools"), "{text}");
    assert_eq!(
        *calls.lock().unwrap(),
        0,
        "the request never left the server"
    );
    bounded("close", client.close()).await;
}

/// A tool that needs the user to authorize it in the browser first: it fails with
/// -32042 until the test completes the elicitation from outside the handler.
struct Authorization {
    granted: Mutex<bool>,
    context: Mutex<Option<ServerContext>>,
}

fn authorizing_server(auth: Arc<Authorization>) -> Server {
    Server::builder("calendar", "1")
        // A typed tool: its ToolError stays a protocol error.
        .typed_tool("events", "Calendar events", move |_args: Empty, cx| {
            let auth = auth.clone();
            async move {
                if *auth.granted.lock().unwrap() {
                    return Ok(CallToolResult::text("3 events"));
                }
                *auth.context.lock().unwrap() = Some(cx);
                Err(ToolError::url_elicitation_required(vec![ElicitUrlParams {
                    message: "Authorize calendar access".into(),
                    url: "https://example.com/authorize?id=el-1".into(),
                    elicitation_id: Some("el-1".into()),
                    ..Default::default()
                }]))
            }
        })
        .build()
}

#[tokio::test]
async fn url_elicitation_required_reaches_the_handler_and_completion_allows_the_retry() {
    for kind in WITH_HTTP {
        let auth = Arc::new(Authorization {
            granted: Mutex::new(false),
            context: Mutex::new(None),
        });
        let shown = Arc::new(Mutex::new(Vec::new()));
        let completed = Arc::new(Notify::new());
        let (show, done) = (shown.clone(), completed.clone());
        let builder = Client::builder("agent", "1")
            .on_elicitation(true, move |params, cx| {
                let show = show.clone();
                async move {
                    assert!(
                        cx.request().is_none(),
                        "an error's elicitation answers no request"
                    );
                    if let ElicitRequestParams::Url(url) = params {
                        show.lock().unwrap().push(url.url);
                    }
                    Ok(ElicitResult::accept(JsonObject::new()))
                }
            })
            .on_elicitation_complete(move |params, _client| {
                let done = done.clone();
                async move {
                    assert_eq!(params.elicitation_id, "el-1");
                    done.notify_one();
                }
            });
        let (client, _guard) = connect(kind, &authorizing_server(auth.clone()), builder).await;
        let error = bounded(
            &format!("{kind:?}: first call"),
            client.call_tool("events", json!({})),
        )
        .await
        .unwrap_err();
        let required = error.url_elicitation_required().expect("a -32042 error");
        assert_eq!(
            required.elicitations[0].elicitation_id.as_deref(),
            Some("el-1")
        );
        assert_eq!(
            *shown.lock().unwrap(),
            vec!["https://example.com/authorize?id=el-1".to_owned()],
            "{kind:?}: the handler saw the URL before the error returned"
        );
        // The user finished in the browser: the server says so from outside the call.
        *auth.granted.lock().unwrap() = true;
        let context = auth.context.lock().unwrap().clone().unwrap();
        bounded(
            "elicitation/complete",
            context.notify_elicitation_complete("el-1"),
        )
        .await
        .unwrap();
        bounded(
            &format!("{kind:?}: completion reaches the client"),
            completed.notified(),
        )
        .await;
        let result = bounded("retry", client.call_tool("events", json!({})))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("3 events"));
        bounded("close", client.close()).await;
    }
}

#[derive(serde::Deserialize, mcpflow::JsonSchema)]
struct Empty {}

#[derive(serde::Serialize, mcpflow::JsonSchema)]
struct Point {
    x: i32,
}

fn output_server() -> Server {
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"]
    });
    let mut liar = tool("liar");
    liar.output_schema = schema.as_object().cloned();
    let mut honest = tool("honest");
    honest.output_schema = liar.output_schema.clone();
    Server::builder("outputs", "1")
        .tool(liar, |_a, _c| async {
            let mut result = CallToolResult::text("{\"n\":\"seven\"}");
            result.structured_content = Some(json!({"n": "seven"}));
            Ok(result)
        })
        .tool(honest, |_a, _c| async {
            let mut result = CallToolResult::text("{\"n\":7}");
            result.structured_content = Some(json!({"n": 7}));
            Ok(result)
        })
        .typed_tool("numbers", "A list", |_: Empty, _cx| async {
            Ok::<_, String>(Structured(vec![1, 2, 3]))
        })
        .typed_tool("points", "Points", |_: Empty, _cx| async {
            Ok::<_, String>(Structured(vec![Point { x: 1 }]))
        })
        .build()
}

#[tokio::test]
async fn structured_output_is_checked_on_a_first_call_without_a_listed_tool() {
    for kind in WITH_HTTP {
        let (client, _guard) = connect(kind, &output_server(), Client::builder("c", "1")).await;
        assert!(client.tools_snapshot().is_none(), "nothing listed yet");
        let error = bounded("liar", client.call_tool("liar", json!({})))
            .await
            .unwrap_err();
        match &error {
            SessionError::InvalidToolOutput { tool, path, detail } => {
                assert_eq!((tool.as_str(), path.as_str()), ("liar", "/n"), "{kind:?}");
                assert!(detail.contains("integer"), "{detail}");
            }
            other => panic!("{kind:?}: expected InvalidToolOutput, got {other:?}"),
        }
        let ok = bounded("honest", client.call_tool("honest", json!({}))).await;
        assert!(ok.is_ok(), "{kind:?}: {ok:?}");
        assert_eq!(
            client.tool_list_fetches(),
            1,
            "{kind:?}: listed once for both calls"
        );
        bounded("close", client.close()).await;
    }
}

#[tokio::test]
async fn a_non_object_structured_result_travels_wrapped_and_reads_back_typed() {
    let (client, _guard) = connect(Kind::Stdio, &output_server(), Client::builder("c", "1")).await;
    let tools = bounded("tools", client.tools()).await.unwrap();
    for name in ["numbers", "points"] {
        let schema = tools.iter().find(|t| t.name == name).unwrap();
        let schema = schema.output_schema.as_ref().unwrap();
        assert_eq!(schema["type"], "object", "{name}: an object root");
        assert_eq!(schema["required"], json!(["result"]), "{name}");
        assert_eq!(schema["properties"]["result"]["type"], "array", "{name}");
    }
    let points = tools.iter().find(|t| t.name == "points").unwrap();
    let points = points.output_schema.as_ref().unwrap();
    assert!(
        points.contains_key("$defs"),
        "definitions stay at the root: {points:?}"
    );
    let raw = bounded("numbers", client.call_tool("numbers", json!({})))
        .await
        .unwrap();
    assert_eq!(raw.structured_content, Some(json!({"result": [1, 2, 3]})));
    let numbers: Vec<i32> = bounded("typed", client.call_tool_typed("numbers", json!({})))
        .await
        .unwrap();
    assert_eq!(numbers, vec![1, 2, 3]);
    let points = bounded("points", client.call_tool("points", json!({})))
        .await
        .unwrap();
    assert_eq!(
        points.structured_content,
        Some(json!({"result": [{"x": 1}]}))
    );
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn identity_reaches_the_peer_and_a_log_names_its_logger() {
    let seen_client = Arc::new(Mutex::new(None));
    let record = seen_client.clone();
    let server = Server::builder("ident", "2.0")
        .title("Identity Server")
        .description("Answers who it is")
        .website_url("https://example.com")
        .icons(vec![Icon {
            src: "https://example.com/icon.png".into(),
            ..Default::default()
        }])
        .tool(tool("who"), move |_a, cx: ServerContext| {
            let record = record.clone();
            async move {
                *record.lock().unwrap() = cx.client_info();
                cx.log_from("db", LoggingLevel::Info, "connected")
                    .await
                    .ok();
                Ok(CallToolResult::text("ok"))
            }
        })
        .build();
    let logs = Arc::new(Mutex::new(Vec::new()));
    let log = logs.clone();
    let builder = Client::builder("agent", "1")
        .title("Agent")
        .description("An agent")
        .on_log(move |params, _c| {
            log.lock().unwrap().push(params.logger.clone());
            async {}
        });
    let (client, _guard) = connect(Kind::Stdio, &server, builder).await;
    let info = &client.server_info().server_info;
    assert_eq!(info.title.as_deref(), Some("Identity Server"));
    assert_eq!(info.description.as_deref(), Some("Answers who it is"));
    assert_eq!(info.website_url.as_deref(), Some("https://example.com"));
    assert_eq!(info.icons.as_ref().map(Vec::len), Some(1));
    bounded("who", client.call_tool("who", json!({})))
        .await
        .unwrap();
    bounded("logs", client.handle().notifications_handled()).await;
    let seen = seen_client.lock().unwrap().clone().unwrap();
    assert_eq!(
        (seen.title.as_deref(), seen.description.as_deref()),
        (Some("Agent"), Some("An agent"))
    );
    assert_eq!(*logs.lock().unwrap(), vec![Some("db".to_owned())]);
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn client_callbacks_report_progress_and_see_cancellation() {
    let progress = Arc::new(Mutex::new(Vec::new()));
    let reported = progress.clone();
    let cancelled = Arc::new(Notify::new());
    let server = Server::builder("asker", "1")
        .tool(tool("ask"), move |_a, cx: ServerContext| {
            let reported = reported.clone();
            async move {
                let params =
                    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10);
                let options = RequestOptions::new().on_progress(move |update| {
                    reported.lock().unwrap().push(update.message.clone());
                });
                let answer: CreateMessageResult = cx
                    .peer()
                    .request("sampling/createMessage", &params, options)
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                Ok(CallToolResult::text(answer.model))
            }
        })
        .tool(
            tool("roots-then-give-up"),
            |_a, cx: ServerContext| async move {
                // The roots request is dropped unanswered: the client sees it cancelled.
                let _ = tokio::time::timeout(std::time::Duration::from_millis(50), cx.list_roots())
                    .await;
                Ok(CallToolResult::text("gave up"))
            },
        )
        .build();
    let builder = || {
        let saw_cancel = cancelled.clone();
        Client::builder("agent", "1")
            .on_sampling(|_params, cx| async move {
                cx.progress(1.0, Some(2.0), Some("thinking")).await.unwrap();
                Ok(CreateMessageResult::assistant_text("model-x", "hello"))
            })
            .on_roots(move |cx| {
                let saw_cancel = saw_cancel.clone();
                async move {
                    cx.cancellation().cancelled().await;
                    saw_cancel.notify_one();
                    Ok(vec![Root::new("file:///tmp", "tmp")])
                }
            })
    };
    for kind in [Kind::Memory1, Kind::Stdio] {
        progress.lock().unwrap().clear();
        let (client, _guard) = connect(kind, &server, builder()).await;
        let result = bounded("ask", client.call_tool("ask", json!({})))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("model-x"));
        assert_eq!(
            *progress.lock().unwrap(),
            vec![Some("thinking".to_owned())],
            "{kind:?}"
        );
        let result = bounded("give up", client.call_tool("roots-then-give-up", json!({})))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("gave up"));
        bounded(
            &format!("{kind:?}: the roots callback sees the cancellation"),
            cancelled.notified(),
        )
        .await;
        bounded("close", client.close()).await;
    }
}

#[tokio::test]
async fn a_resource_update_announced_from_outside_reaches_only_its_subscribers() {
    let server = Server::builder("files", "1")
        .resource(Resource::new("file:///a", "a"), |uri, _cx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri, "A",
            )]))
        })
        .build();
    for kind in WITH_HTTP {
        let updates = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let (record, signal) = (updates.clone(), arrived.clone());
        let builder = Client::builder("c", "1").on_notification(move |n, _c| {
            let (record, signal) = (record.clone(), signal.clone());
            async move {
                if n.method == "notifications/resources/updated" {
                    let uri = n.params.map(|p| p.get().to_owned()).unwrap_or_default();
                    record.lock().unwrap().push(uri);
                    signal.notify_one();
                }
            }
        });
        let (client, _guard) = connect(kind, &server, builder).await;
        bounded("subscribe", client.subscribe("file:///a"))
            .await
            .unwrap();
        server.notify_resource_updated("file:///b").await;
        server.notify_resource_updated("file:///a").await;
        bounded(&format!("{kind:?}: resources/updated"), arrived.notified()).await;
        bounded("handled", client.handle().notifications_handled()).await;
        let updates = updates.lock().unwrap().clone();
        assert_eq!(
            updates.len(),
            1,
            "{kind:?}: only the subscribed URI: {updates:?}"
        );
        assert!(updates[0].contains("file:///a"), "{updates:?}");
        bounded("close", client.close()).await;
    }
}

#[tokio::test]
async fn resources_and_prompts_can_be_added_and_removed_at_run_time() {
    let server = Server::builder("live", "1")
        .resource(Resource::new("file:///a", "a"), |uri, _cx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri, "A",
            )]))
        })
        .prompt(
            mcpflow::protocol::prompts::Prompt::new("p", "P"),
            |_args, _cx| async { Ok(mcpflow::protocol::GetPromptResult::new(vec![])) },
        )
        .build();
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let builder = Client::builder("c", "1").on_notification(move |n, _c| {
        let _ = tx.send(n.method);
        async {}
    });
    let (client, _guard) = connect(Kind::Memory1, &server, builder).await;
    let mut changed = async |method: &str| {
        let got = bounded(method, changes.recv()).await;
        assert_eq!(got.as_deref(), Some(method));
    };
    assert_eq!(
        bounded("resources", client.resources())
            .await
            .unwrap()
            .len(),
        1
    );
    server
        .add_resource(Resource::new("file:///b", "b"), |uri, _cx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri, "B",
            )]))
        })
        .await;
    changed("notifications/resources/list_changed").await;
    let resources = bounded("resources again", client.resources())
        .await
        .unwrap();
    assert_eq!(resources.len(), 2, "the list refreshed on list_changed");
    let read = bounded("read b", client.read_resource("file:///b"))
        .await
        .unwrap();
    assert_eq!(read.contents[0].uri(), "file:///b");
    assert!(server.remove_resource("file:///a").await);
    assert!(!server.remove_resource("file:///a").await, "already gone");
    changed("notifications/resources/list_changed").await;
    assert_eq!(
        bounded("resources", client.resources())
            .await
            .unwrap()
            .len(),
        1
    );

    server
        .add_prompt(
            mcpflow::protocol::prompts::Prompt::new("q", "Q"),
            |_args, _cx| async { Ok(mcpflow::protocol::GetPromptResult::new(vec![])) },
        )
        .await;
    changed("notifications/prompts/list_changed").await;
    assert_eq!(bounded("prompts", client.prompts()).await.unwrap().len(), 2);
    assert!(server.remove_prompt("p").await);
    changed("notifications/prompts/list_changed").await;
    let prompts = bounded("prompts", client.prompts()).await.unwrap();
    assert_eq!(
        prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        vec!["q"]
    );
    bounded("close", client.close()).await;
}

/// A server with progress, completions and a full identity, for the scripted peers below.
fn scripted_target() -> Server {
    Server::builder("target", "1")
        .title("Target")
        .description("For scripted peers")
        .tool(tool("echo"), |_a, _c| async {
            Ok(CallToolResult::text("echo"))
        })
        .tool(tool("progress"), |_a, cx: ServerContext| async move {
            cx.progress(1.0, Some(2.0), Some("half")).await.ok();
            Ok(CallToolResult::text("done"))
        })
        .completion(|_params, _cx| async { Ok(mcpflow::protocol::CompleteResult::default()) })
        .build()
}

async fn raw_initialize(peer: &mut common::RawPeer, id: u32, version: &str) -> serde_json::Value {
    peer.send(json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    }))
    .await;
    bounded("the answer to initialize", peer.recv())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_second_initialize_on_one_connection_is_refused_and_changes_nothing() {
    let (c, s) = common::pair(Kind::Stdio);
    let _running = scripted_target().serve(s);
    let mut peer = common::RawPeer::new(c);
    let first = raw_initialize(&mut peer, 1, "2025-11-25").await;
    assert_eq!(first["result"]["protocolVersion"], "2025-11-25");
    let second = raw_initialize(&mut peer, 2, "2025-03-26").await;
    assert_eq!(second["id"], 2);
    assert_eq!(second["error"]["code"], -32600, "{second}");
    let message = second["error"]["message"].as_str().unwrap();
    assert!(message.contains("already initialized"), "{message}");
    // Still 2025-11-25: a batch (2025-03-26 only) is refused.
    peer.send(json!([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]))
        .await;
    let refused = bounded("the batch's refusal", peer.recv()).await.unwrap();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
}

#[tokio::test]
async fn a_2024_11_05_peer_gets_only_what_that_version_defines() {
    let (c, s) = common::pair(Kind::Stdio);
    let _running = scripted_target().serve(s);
    let mut peer = common::RawPeer::new(c);
    let init = raw_initialize(&mut peer, 1, "2024-11-05").await;
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], "2024-11-05");
    assert!(
        result["capabilities"].get("completions").is_none(),
        "{result}"
    );
    assert!(result["capabilities"].get("tools").is_some(), "{result}");
    assert_eq!(
        result["serverInfo"],
        json!({"name": "target", "version": "1"})
    );
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "progress", "arguments": {}, "_meta": {"progressToken": "p"}}}))
        .await;
    let progress = bounded("progress", peer.recv()).await.unwrap();
    assert_eq!(progress["method"], "notifications/progress");
    assert_eq!(
        progress["params"],
        json!({"progressToken": "p", "progress": 1.0, "total": 2.0})
    );

    // The same server gives a 2025-11-25 peer all of it.
    let (c, s) = common::pair(Kind::Stdio);
    let _running = scripted_target().serve(s);
    let mut peer = common::RawPeer::new(c);
    let init = raw_initialize(&mut peer, 1, "2025-11-25").await;
    assert!(init["result"]["capabilities"].get("completions").is_some());
    assert_eq!(init["result"]["serverInfo"]["title"], "Target");
}

#[tokio::test]
async fn a_batch_on_a_byte_stream_is_answered_with_one_array() {
    for kind in [Kind::Stdio, Kind::Memory1] {
        let (c, s) = common::pair(kind);
        let _running = scripted_target().serve(s);
        let mut peer = common::RawPeer::new(c);
        raw_initialize(&mut peer, 1, "2025-03-26").await;
        peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        peer.send(json!([
            {"jsonrpc": "2.0", "id": 10, "method": "ping"},
            {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "echo", "arguments": {}}},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "id": 12, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "id": 13},
        ]))
        .await;
        let answer = bounded(&format!("{kind:?}: the batch's answer"), peer.recv())
            .await
            .unwrap();
        let answers = answer
            .as_array()
            .unwrap_or_else(|| panic!("{kind:?}: not an array: {answer}"));
        let by_id = |id: i64| {
            answers
                .iter()
                .find(|a| a["id"] == id)
                .unwrap_or_else(|| panic!("{kind:?}: no answer to {id} in {answer}"))
        };
        assert_eq!(answers.len(), 4, "{kind:?}: {answer}");
        assert_eq!(by_id(10)["result"], json!({}));
        assert_eq!(by_id(11)["result"]["content"][0]["text"], "echo");
        let init = &by_id(12)["error"];
        assert_eq!(init["code"], -32600, "{kind:?}: {init}");
        assert!(
            init["message"].as_str().unwrap().contains("batch"),
            "{init}"
        );
        assert!(
            by_id(13).get("error").is_some(),
            "{kind:?}: the malformed item: {answer}"
        );

        // A batch of notifications alone gets no answer; the next request is answered.
        peer.send(json!([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]))
            .await;
        peer.send(json!({"jsonrpc": "2.0", "id": 20, "method": "ping"}))
            .await;
        let next = bounded("ping after notifications", peer.recv())
            .await
            .unwrap();
        assert_eq!(next["id"], 20, "{kind:?}: {next}");
    }
}
