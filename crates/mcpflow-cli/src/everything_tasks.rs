//! The tools the conformance scenarios of the tasks extension (`tasks-*`) call, written
//! against the ordinary handler API: to a 2026-07-28 client that declared the
//! extension the task-capable ones answer with a task; to a 2025-11-25 client they are
//! ordinary tools (called as tasks when it asks).

use std::time::Duration;

use mcpflow::protocol::tools::TaskSupport;
use mcpflow::protocol::{CallToolResult, ElicitAction, ElicitRequestParams, ErrorObject, Tool};
use mcpflow::server::{ServerBuilder, ServerContext, ToolError};
use serde_json::{Value, json};

use crate::everything::object;

fn tool(name: &str, description: &str, properties: Value, support: TaskSupport) -> Tool {
    let schema = object(json!({ "type": "object", "properties": properties }));
    Tool::new(name, description, schema).with_task_support(support)
}

fn failed(what: &str, e: mcpflow::SessionError) -> ToolError {
    match e.rejection() {
        Some(error) => ToolError::Protocol(error.clone()),
        None => ToolError::failed(format!("{what} failed: {e}")),
    }
}

/// Ask a yes/no question under `key`; the user's `confirm`, false unless accepted.
async fn confirm(cx: &ServerContext, key: &str, message: &str) -> Result<bool, ToolError> {
    let schema = object(json!({
        "type": "object",
        "properties": { "confirm": { "type": "boolean" } },
        "required": ["confirm"]
    }));
    let answer = cx
        .input_key(key)
        .elicit(ElicitRequestParams::form(message, schema))
        .await
        .map_err(|e| failed("elicitation", e))?;
    Ok(answer.action == ElicitAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("confirm"))
            .and_then(Value::as_bool)
            .unwrap_or(false))
}

/// Sleep, or end early when the task is cancelled.
async fn work(cx: &ServerContext, duration: Duration) -> Result<(), ToolError> {
    tokio::select! {
        () = tokio::time::sleep(duration) => Ok(()),
        () = cx.cancellation().cancelled() => Err(ToolError::failed("cancelled")),
    }
}

/// Register the tasks-extension fixtures.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            tool(
                "greet",
                "Greets by name, at once (never a task)",
                json!({ "name": { "type": "string" } }),
                TaskSupport::Forbidden,
            ),
            |args, _cx| async move {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("World");
                Ok(CallToolResult::text(format!("Hello, {name}!")))
            },
        )
        .tool(
            tool(
                "slow_compute",
                "Works for `seconds` seconds (a task when the client takes tasks), then answers",
                json!({ "seconds": { "type": "number" }, "label": { "type": "string" } }),
                TaskSupport::Optional,
            ),
            |args, cx| async move {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                let label = args.get("label").and_then(Value::as_str).unwrap_or("job");
                if seconds > 0.0 {
                    work(&cx, Duration::from_secs_f64(seconds.min(3600.0))).await?;
                }
                Ok(CallToolResult::text(format!(
                    "{label}: done after {seconds}s"
                )))
            },
        )
        .tool(
            tool(
                "failing_job",
                "Runs only as a task; fails with a tool error after about a second",
                json!({}),
                TaskSupport::Required,
            ),
            |_args, cx| async move {
                work(&cx, Duration::from_secs(1)).await?;
                Err(ToolError::failed("the job failed"))
            },
        )
        .tool(
            tool(
                "protocol_error_job",
                "A task that ends with a JSON-RPC error",
                json!({}),
                TaskSupport::Optional,
            ),
            |_args, cx| async move {
                work(&cx, Duration::from_millis(200)).await?;
                Err(ToolError::Protocol(ErrorObject::internal(
                    "the job hit an internal error",
                )))
            },
        )
        .tool(
            tool(
                "confirm_delete",
                "A task that asks the user to confirm deleting `filename`",
                json!({ "filename": { "type": "string" } }),
                TaskSupport::Optional,
            ),
            |args, cx| async move {
                cx.continue_as_task().await;
                let file = args.get("filename").and_then(Value::as_str).unwrap_or("?");
                let yes = confirm(&cx, "confirm", &format!("Delete {file}?")).await?;
                let what = if yes { "deleted" } else { "kept" };
                Ok(CallToolResult::text(format!("{what} {file}")))
            },
        )
        .tool(
            tool(
                "multi_input",
                "A task that asks two questions at once",
                json!({}),
                TaskSupport::Optional,
            ),
            |_args, cx| async move {
                cx.continue_as_task().await;
                let (first, second) = tokio::join!(
                    confirm(&cx, "first", "First question?"),
                    confirm(&cx, "second", "Second question?"),
                );
                Ok(CallToolResult::text(format!(
                    "first: {}, second: {}",
                    first?, second?
                )))
            },
        )
        .tool(
            tool(
                "test_tool_with_task",
                "Asks the user's name first, then goes on as a task that greets them",
                json!({}),
                TaskSupport::Required,
            ),
            |_args, cx| async move {
                let schema = object(json!({
                    "type": "object",
                    "properties": { "name": { "type": "string" } },
                    "required": ["name"]
                }));
                let answer = cx
                    .input_key("user_name")
                    .elicit(ElicitRequestParams::form("What is your name?", schema))
                    .await
                    .map_err(|e| failed("elicitation", e))?;
                cx.continue_as_task().await;
                let name = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("nobody")
                    .to_owned();
                Ok(CallToolResult::text(format!("Hello, {name}!")))
            },
        )
}
