//! mcpflow's side: a `Server` with the three tools and calls through a `Client`.

use std::sync::Arc;

use mcpflow::RequestOptions;
use mcpflow::client::Client;
use mcpflow::protocol::{CallToolRequestParams, CallToolResult, ContentBlock, Tool};
use mcpflow::server::{Server, ToolError};
use serde_json::Value;

use crate::common::{ProgressLog, big_text};

/// The benchmark server: `echo`, `progress` and `big`.
pub fn server() -> Server {
    let schema = Tool::empty_input_schema;
    Server::builder("mcpflow-bench", "1.0.0")
        .tool(
            Tool::new("echo", "Echo the text back", schema()),
            |args, _cx| async move {
                let text = args
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Ok(CallToolResult::text(text))
            },
        )
        .tool(
            Tool::new("progress", "Report progress `count` times", schema()),
            |args, cx| async move {
                let count = args.get("count").and_then(Value::as_u64).unwrap_or(0);
                for i in 1..=count {
                    cx.progress(i as f64, Some(count as f64), None)
                        .await
                        .map_err(|e| ToolError::failed(e.to_string()))?;
                }
                Ok(CallToolResult::text("done"))
            },
        )
        .tool(
            Tool::new("big", "Return `bytes` bytes of text", schema()),
            |args, _cx| async move {
                let bytes = args.get("bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
                Ok(CallToolResult::text(big_text(bytes)))
            },
        )
        .build()
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
