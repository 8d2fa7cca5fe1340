//! `mcpflow demo`: an in-process server and client over a zero-capacity memory
//! transport, walking through the situations that hang other MCP stacks.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpflow::RequestOptions;
use mcpflow::client::Client;
use mcpflow::protocol::methods::method;
use mcpflow::protocol::{
    CallToolRequestParams, CallToolResult, ContentBlock, CreateMessageRequestParams,
    CreateMessageResult, SamplingMessage, Tool,
};
use mcpflow::server::{Server, ServerBuilder, ToolError};
use mcpflow::transport::MemoryTransport;
use tokio::sync::mpsc;
use tokio::time::timeout;

use crate::everything::object;

/// The error of a failed demo step.
pub type DemoError = Box<dyn std::error::Error + Send + Sync>;

/// Longest wait of any single step.
const STEP: Duration = Duration::from_secs(5);

/// Events the server's tools report to the narration.
#[derive(Debug)]
enum ServerEvent {
    SlowTaskStarted,
    SlowTaskCancelled,
}

/// Wait at most [`STEP`] for `fut`, naming `what` on timeout.
async fn bounded<T>(what: &str, fut: impl Future<Output = T>) -> Result<T, DemoError> {
    timeout(STEP, fut)
        .await
        .map_err(|_| format!("{what}: no answer within {STEP:?}").into())
}

fn names(tools: &[Tool]) -> String {
    tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn first_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(ContentBlock::as_text)
        .unwrap_or("<no text>")
        .to_owned()
}

/// The demo's server, for `mcpflow serve demo` (stdio): progress with a log line per
/// step, a tool that registers another tool while it runs (`tools/list_changed`
/// mid-call), sampling during a call, and a slow tool to cancel.
pub(crate) fn stdio_demo_server(configure: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Server {
    let (events, _unobserved) = mpsc::unbounded_channel();
    configure(demo_builder(events)).build()
}

fn demo_server(events: mpsc::UnboundedSender<ServerEvent>) -> Server {
    demo_builder(events).build()
}

fn demo_builder(events: mpsc::UnboundedSender<ServerEvent>) -> ServerBuilder {
    Server::builder("mcpflow-demo-server", env!("CARGO_PKG_VERSION"))
        .tool(
            Tool::new("count_to_three", "Counts to three, reporting progress", Tool::empty_input_schema()),
            |_args, cx| async move {
                for step in 1..=3_u32 {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    let message = format!("step {step}");
                    let _ = cx.log(mcpflow::protocol::LoggingLevel::Info, message.as_str()).await;
                    cx.progress(f64::from(step), Some(3.0), Some(&message))
                        .await
                        .map_err(|e| ToolError::failed(e.to_string()))?;
                }
                Ok(CallToolResult::text("counted to 3"))
            },
        )
        .tool(
            Tool::new(
                "install_plugin",
                "Registers the tool `plugin_hello` while it runs",
                Tool::empty_input_schema(),
            ),
            |_args, cx| async move {
                cx.server()
                    .add_tool(
                        Tool::new("plugin_hello", "Says hello from the plugin", Tool::empty_input_schema()),
                        |_args, _cx| async { Ok(CallToolResult::text("hello from the plugin")) },
                    )
                    .await;
                // Keep the call open while the client reacts to tools/list_changed.
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(CallToolResult::text("plugin installed"))
            },
        )
        .tool(
            Tool::new(
                "ask_model",
                "Asks the client's model a question (sampling)",
                object(serde_json::json!({
                    "type": "object",
                    "properties": { "question": { "type": "string" } },
                    "required": ["question"]
                })),
            ),
            |args, cx| async move {
                let question = args.get("question").and_then(|v| v.as_str()).unwrap_or("?").to_owned();
                let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(question)], 50);
                let answer = cx.create_message(params).await.map_err(|e| ToolError::failed(e.to_string()))?;
                let text = answer.content.blocks().iter().find_map(ContentBlock::as_text).unwrap_or("").to_owned();
                Ok(CallToolResult::text(format!("the model ({}) said: {text}", answer.model)))
            },
        )
        .tool(
            Tool::new("slow_task", "Runs for 30 s unless cancelled", Tool::empty_input_schema()),
            move |_args, cx| {
                let events = events.clone();
                async move {
                    let _ = events.send(ServerEvent::SlowTaskStarted);
                    tokio::select! {
                        () = cx.cancellation().cancelled() => {
                            let _ = events.send(ServerEvent::SlowTaskCancelled);
                            Err(ToolError::failed("cancelled"))
                        }
                        () = tokio::time::sleep(Duration::from_secs(30)) => Ok(CallToolResult::text("finished")),
                    }
                }
            },
        )
}

/// Run the demo, narrating to stdout.
///
/// # Errors
/// The first step that failed or did not finish in time.
pub async fn run() -> Result<(), DemoError> {
    println!(
        "mcpflow demo: a server and a client in one process, over a zero-capacity memory transport"
    );
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let server = demo_server(events_tx);
    let (client_side, server_side) = MemoryTransport::pair(0);
    let running = server.serve(server_side);

    // What the notification handler saw after reloading tools on list_changed.
    let (reloads_tx, mut reloads) = mpsc::unbounded_channel::<Result<Vec<String>, String>>();
    let sampling_log: Arc<Mutex<Vec<String>>> = Arc::default();
    let sampling_seen = sampling_log.clone();
    let client = bounded(
        "connect",
        Client::builder("mcpflow-demo-client", env!("CARGO_PKG_VERSION"))
            .on_sampling(move |params, cx| {
                let seen = sampling_seen.clone();
                async move {
                    let question = params
                        .messages
                        .first()
                        .and_then(|m| m.content.blocks().iter().find_map(ContentBlock::as_text))
                        .unwrap_or("")
                        .to_owned();
                    // Re-entrant: a request to the server from inside a server request.
                    let tools = cx.client().tools().await.map(|t| t.len()).unwrap_or(0);
                    seen.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(format!(
                            "asked {question:?}; listed {tools} tools from inside the handler"
                        ));
                    Ok(CreateMessageResult::assistant_text("demo-model", "42"))
                }
            })
            .on_notification(move |notification, client| {
                let reloads = reloads_tx.clone();
                async move {
                    if notification.method == method::TOOL_LIST_CHANGED {
                        // The handler awaits a request on the same connection: the reload that
                        // deadlocks a single receive loop.
                        let reloaded = client
                            .tools()
                            .await
                            .map(|tools| tools.iter().map(|t| t.name.clone()).collect())
                            .map_err(|e| e.to_string());
                        let _ = reloads.send(reloaded);
                    }
                }
            })
            .connect(client_side),
    )
    .await??;
    let info = client.server_info();
    println!(
        "connected to {} {} (protocol {})",
        info.server_info.name,
        info.server_info.version,
        info.protocol_version.as_str()
    );

    // (a) progress before the result
    println!();
    println!("1. Progress arrives before the result");
    println!("   calling count_to_three");
    let reports = Arc::new(Mutex::new(0_u32));
    let counted = reports.clone();
    let options = RequestOptions::new().timeout(STEP).on_progress(move |p| {
        *counted.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
        println!(
            "   progress {}{total}: {}",
            p.progress,
            p.message.unwrap_or_default()
        );
    });
    let result = bounded(
        "count_to_three",
        client.call_tool_with(&CallToolRequestParams::new("count_to_three"), options),
    )
    .await??;
    let got = *reports.lock().unwrap_or_else(PoisonError::into_inner);
    println!(
        "   result: {} ({got} progress reports, all before it)",
        first_text(&result)
    );
    if got != 3 {
        return Err(format!("expected 3 progress reports before the result, got {got}").into());
    }

    // (b) tools/list_changed mid-call
    println!();
    println!("2. tools/list_changed during a call, and a handler that reloads the list");
    let before = bounded("tools/list", client.tools()).await??;
    println!("   tools before: {}", names(&before));
    println!("   calling install_plugin (it registers plugin_hello while running)");
    let result = bounded(
        "install_plugin",
        client.call_tool("install_plugin", serde_json::json!({})),
    )
    .await??;
    println!("   result: {}", first_text(&result));
    let reloaded = bounded("the list_changed handler", reloads.recv())
        .await?
        .ok_or("the notification handler stopped")??;
    println!(
        "   the on_notification handler got notifications/tools/list_changed and reloaded: {}",
        reloaded.join(", ")
    );
    let after = bounded("tools/list", client.tools()).await??;
    println!("   client.tools() after: {}", names(&after));
    if !after.iter().any(|t| t.name == "plugin_hello") {
        return Err("the cached tool list did not pick up plugin_hello".into());
    }
    let hello = bounded(
        "plugin_hello",
        client.call_tool("plugin_hello", serde_json::json!({})),
    )
    .await??;
    println!("   calling plugin_hello: {}", first_text(&hello));

    // (c) sampling during a call
    println!();
    println!("3. A sampling request served during a call");
    println!("   calling ask_model");
    let result = bounded(
        "ask_model",
        client.call_tool(
            "ask_model",
            serde_json::json!({ "question": "What is six times seven?" }),
        ),
    )
    .await??;
    for line in sampling_log
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
    {
        println!("   on_sampling handler: {line}");
    }
    println!("   result: {}", first_text(&result));
    if result.is_error() {
        return Err(format!("ask_model failed: {}", first_text(&result)).into());
    }

    // (d) cancellation
    println!();
    println!("4. Cancelling a call");
    let pending = bounded(
        "start slow_task",
        client.start_call_tool(
            &CallToolRequestParams::new("slow_task"),
            RequestOptions::new(),
        ),
    )
    .await??;
    match bounded("slow_task to start", events.recv()).await? {
        Some(ServerEvent::SlowTaskStarted) => {
            println!("   server: slow_task is running (it would take 30 s)")
        }
        other => return Err(format!("unexpected server event: {other:?}").into()),
    }
    pending.cancel("the user pressed stop");
    println!("   client: cancelled the call (notifications/cancelled sent)");
    match bounded("the server to observe cancellation", events.recv()).await? {
        Some(ServerEvent::SlowTaskCancelled) => {
            println!("   server: slow_task observed the cancellation and stopped");
        }
        other => return Err(format!("unexpected server event: {other:?}").into()),
    }
    bounded("ping after cancellation", client.ping()).await??;
    println!("   the connection still answers: ping ok");

    bounded("client close", client.close()).await?;
    bounded("server close", running.close()).await?;
    println!();
    println!("demo finished: progress, list_changed, sampling and cancellation all behaved");
    Ok(())
}
