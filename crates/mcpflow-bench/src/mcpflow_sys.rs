//! mcpflow's side: a `Server` with the three tools and calls through a `Client`, in
//! either protocol era.

use std::sync::Arc;

use mcpflow::RequestOptions;
use mcpflow::client::{Client, ClientBuilder, Era};
use mcpflow::protocol::{CallToolRequestParams, CallToolResult, ContentBlock};
use mcpflow::schemars::JsonSchema;
use mcpflow::server::Server;
use serde::Deserialize;
use serde_json::Value;
use std::convert::Infallible;

use crate::common::{ProgressLog, big_text};

/// `echo` arguments.
#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

/// `progress` arguments.
#[derive(Deserialize, JsonSchema)]
struct Progress {
    count: u64,
}

/// `big` arguments.
#[derive(Deserialize, JsonSchema)]
struct Big {
    bytes: u64,
}

/// The benchmark server: `echo`, `progress` and `big`, typed tools as the README writes
/// them (the other systems' servers decode typed arguments too). It serves both eras, as
/// by default, so `mcpflow` and `mcpflow-2026` differ only in their client.
pub fn server() -> Server {
    Server::builder("mcpflow-bench", "1.0.0")
        .per_request_era(true)
        .typed_tool("echo", "Echo the text back", |args: Echo, _cx| async move {
            Ok::<_, Infallible>(args.text)
        })
        .typed_tool(
            "progress",
            "Report progress `count` times",
            |args: Progress, cx| async move {
                for i in 1..=args.count {
                    cx.progress(i as f64, Some(args.count as f64), None)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok::<_, String>("done")
            },
        )
        .typed_tool(
            "big",
            "Return `bytes` bytes of text",
            |args: Big, _cx| async move {
                Ok::<_, Infallible>(CallToolResult::text(big_text(args.bytes as usize)))
            },
        )
        .build()
}

/// The client of `system`: `mcpflow` runs the `initialize` handshake; `mcpflow-2026`
/// speaks the per-request era (2026-07-28: `server/discover`, then every request carries
/// its own `_meta`; over HTTP each call is a POST without a session).
pub fn client(system: &str) -> ClientBuilder {
    let era = if system == "mcpflow-2026" {
        Era::PerRequest
    } else {
        Era::Handshake
    };
    Client::builder("mcpflow-bench", "1.0.0").era(era)
}

/// The first block's text, moved out of the result (as the other systems do).
fn first_text(result: CallToolResult) -> Result<String, String> {
    match result.content.into_iter().next() {
        Some(ContentBlock::Text(text)) => Ok(text.text),
        _ => Err("no text in the result".to_owned()),
    }
}

/// `tools/call` through [`ClientHandle::call_tool`](mcpflow::client::ClientHandle::call_tool), as the README shows.
pub async fn call(client: &Client, name: &str, arguments: Value) -> Result<String, String> {
    let result = client
        .call_tool(name, arguments)
        .await
        .map_err(|e| e.to_string())?;
    first_text(result)
}

/// `progress` with an `on_progress` callback feeding `log`.
pub async fn call_progress(
    client: &Client,
    count: u64,
    log: Arc<ProgressLog>,
) -> Result<String, String> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("count".to_owned(), Value::from(count));
    let mut params = CallToolRequestParams::new("progress");
    params.arguments = Some(arguments);
    let options = RequestOptions::new().on_progress(move |p| log.record(p.progress));
    let result = client
        .call_tool_with(&params, options)
        .await
        .map_err(|e| e.to_string())?;
    first_text(result)
}
