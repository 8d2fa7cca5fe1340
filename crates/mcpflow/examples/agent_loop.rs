//! An agent loop over a [`ToolHost`]: two servers behind one catalog that the loop
//! hands to its model each turn, kept current while the `research` server adds a tool
//! in the middle of a call and the `clock` server restarts. The "model" here is a
//! script that picks the next tool; a real agent puts an LLM in its place.
//!
//! Run with `cargo run -p mcpflow --example agent_loop`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpflow::host::{
    ConnectFailure, HostEvent, ReconnectPolicy, ServerOptions, ToolHost, connector,
    memory_connector,
};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::{RunningServer, Server};
use mcpflow::transport::MemoryTransport;
use serde_json::json;

fn tool(name: &str, description: &str) -> Tool {
    Tool::new(name, description, Tool::empty_input_schema())
}

/// A server whose `research` tool registers `summarize` while it runs.
fn research_server() -> Server {
    Server::builder("research", "1.0.0")
        .tool(
            tool("research", "Looks a topic up"),
            |_args, cx| async move {
                cx.server()
                    .add_tool(
                        tool("summarize", "Summarizes the findings"),
                        |_a, _c| async {
                            Ok(CallToolResult::text(
                                "summary: MCP connects models to tools",
                            ))
                        },
                    )
                    .await;
                Ok(CallToolResult::text("found 3 sources on MCP"))
            },
        )
        .build()
}

fn clock_server() -> Server {
    Server::builder("clock", "1.0.0")
        .tool(tool("now", "The time"), |_args, _cx| async {
            Ok(CallToolResult::text("12:00"))
        })
        .build()
}

#[allow(dead_code)]
#[tokio::main(flavor = "current_thread")]
async fn main() {
    for line in run().await {
        println!("{line}");
    }
}

/// Run the loop; what it did, a line per step.
pub async fn run() -> Vec<String> {
    let mut log = Vec::new();
    // The clock's connector keeps its running side, so the example can "restart" it.
    let clock = clock_server();
    let clock_running: Arc<Mutex<Option<RunningServer>>> = Arc::default();
    let clock_connector = connector({
        let running = clock_running.clone();
        move |builder| {
            let (client_side, server_side) = MemoryTransport::pair(16);
            *running.lock().unwrap_or_else(|e| e.into_inner()) = Some(clock.serve(server_side));
            async move {
                builder
                    .connect(client_side)
                    .await
                    .map_err(ConnectFailure::new)
            }
        }
    });
    let host = ToolHost::builder()
        .reconnect(ReconnectPolicy::default().initial_delay(Duration::from_millis(50)))
        .server(ServerOptions::new(
            "research",
            memory_connector(research_server()),
        ))
        .server(ServerOptions::new("clock", clock_connector))
        .start();
    let mut events = host.events();
    host.wait_ready().await;

    // Each turn, the model sees the catalog as it is now; the script plays the model.
    let script = ["research__research", "research__summarize", "clock__now"];
    for (turn, wanted) in script.iter().enumerate() {
        let snapshot = host.snapshot();
        let offered: Vec<String> = snapshot.model_tools().into_iter().map(|t| t.name).collect();
        log.push(format!("turn {turn}: the model sees {offered:?}"));
        if turn == 2 {
            // The clock server restarts between turns: it goes away, the host sees the
            // connection drop and reconnects.
            let mut restart = host.events();
            let old = clock_running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(old) = old {
                old.close().await;
            }
            log.push(format!("turn {turn}: the clock server restarted"));
            let clock = |e: &HostEvent, connected: bool| {
                matches!(e, HostEvent::Health { server, health }
                    if &**server == "clock" && health.is_connected() == connected)
            };
            wait_for(&mut restart, |e| clock(e, false)).await;
            wait_for(&mut restart, |e| clock(e, true)).await;
        }
        match host.call(wanted, json!({})).await {
            Ok(result) => log.push(format!(
                "turn {turn}: {wanted} -> {}",
                result.content[0].as_text().unwrap_or("")
            )),
            // What a model would read, to decide what to do next.
            Err(e) => log.push(format!(
                "turn {turn}: {wanted} failed: {}",
                e.to_model_text()
            )),
        }
        if turn == 0 {
            // `research` added `summarize` mid-call: the next turn's catalog has it.
            wait_for(&mut events, |e| {
                matches!(e, HostEvent::CatalogChanged(c)
                if c.added.iter().any(|item| item.name == "research__summarize"))
            })
            .await;
        }
    }
    host.close().await;
    log
}

/// The next host event that satisfies `pred` (a real agent would keep a bound here).
async fn wait_for(
    events: &mut tokio::sync::broadcast::Receiver<HostEvent>,
    pred: impl Fn(&HostEvent) -> bool,
) {
    let wait = async {
        while let Ok(event) = events.recv().await {
            if pred(&event) {
                return;
            }
        }
    };
    if tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .is_err()
    {
        eprintln!("no such event within 10 s");
    }
}
