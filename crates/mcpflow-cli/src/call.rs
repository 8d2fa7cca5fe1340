//! `mcpflow call`: call one tool, showing its progress and logs live.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcpflow::RequestOptions;
use mcpflow::client::Client;
use mcpflow::protocol::CallToolRequestParams;
use serde_json::{Value, json};

use crate::args::ServerArgs;
use crate::connect::{Connection, connect};
use crate::failure::{EXIT_TOOL_ERROR, Failure};
use crate::input::{ArgsInput, read_args, typed_pairs};
use crate::live::Live;
use crate::render::{Saver, print_blocks};
use crate::signals::Interrupt;
use crate::task::{self, TaskRun};
use crate::verbs::list_all;

/// What `mcpflow call` was asked.
#[derive(Debug)]
pub struct CallRequest {
    /// The tool.
    pub tool: String,
    /// `ARGS_JSON`, `@file`, `-` or `key=value` words.
    pub args: Vec<String>,
    /// Where to save binary content.
    pub out: Option<PathBuf>,
    /// `tool` is a tool host's catalog name (`server__tool`) of this server's tool.
    pub catalog_of: Option<String>,
}

/// Run `mcpflow call`; the exit code.
pub async fn run(request: CallRequest, server: &ServerArgs, interrupt: &Interrupt) -> u8 {
    match call(request, server, interrupt).await {
        Ok(code) => code,
        Err(failure) => failure.report(server.json),
    }
}

async fn call(
    request: CallRequest,
    server: &ServerArgs,
    interrupt: &Interrupt,
) -> Result<u8, Failure> {
    let input = read_args(&request.args)?;
    let mut saver = Saver::new(request.out.clone())?;
    let live = Arc::new(Live::new(server.json));
    let (on_log, on_note) = (live.clone(), live.clone());
    let builder = Client::builder("mcpflow-call", env!("CARGO_PKG_VERSION"))
        .on_log(move |log, _client| {
            on_log.log(&log);
            async {}
        })
        .on_notification(move |n, _client| {
            on_note.count(&n.method);
            async {}
        });
    let conn = connect(server, builder, interrupt).await?;
    let request = match &request.catalog_of {
        Some(server_name) => match remote_name(&conn, server_name, &request.tool, server).await {
            Ok(tool) => CallRequest { tool, ..request },
            Err(failure) => {
                conn.close().await;
                return Err(failure);
            }
        },
        None => request,
    };
    let arguments = match input {
        ArgsInput::Object(map) => Ok(map),
        ArgsInput::Pairs(pairs) => schema_of(&conn, &request.tool, server.timeout)
            .await
            .and_then(|schema| typed_pairs(&pairs, schema.as_ref())),
    };
    let arguments = match arguments {
        Ok(arguments) => arguments,
        Err(failure) => {
            conn.close().await;
            return Err(failure);
        }
    };
    let on_progress = live.clone();
    let options = RequestOptions::new()
        .timeout(Duration::from_secs_f64(server.timeout))
        .on_progress(move |update| on_progress.progress(&update));
    let params = CallToolRequestParams::new(&request.tool).with_arguments(arguments);
    // A tool that runs only as a task is called as one, its status shown as it goes.
    let as_task = task::required(&conn.client, &request.tool).await;
    let task_run = TaskRun::default();
    let outcome = tokio::select! {
        outcome = async {
            if as_task {
                task::run(&conn.client, &params, server.json, &task_run).await
            } else {
                conn.client.call_tool_with(&params, options).await
            }
        } => Some(outcome),
        // Dropping the call sends `notifications/cancelled`; a task is cancelled below.
        () = interrupt.pressed() => None,
    };
    live.finish();
    let result = match outcome {
        None => {
            if let Some(id) = task_run.id() {
                let cancel = conn.client.cancel_task(&id);
                let _ = tokio::time::timeout(Duration::from_secs(2), cancel).await;
            }
            conn.close_hurried().await;
            return Err(Failure::interrupted());
        }
        Some(Err(e)) => {
            let failure = conn.failure(&e);
            conn.close_hurried().await;
            return Err(failure);
        }
        Some(Ok(result)) => result,
    };
    // Logs sent before the result may still be on the notification lane.
    conn.client.notifications_handled().await;
    conn.close().await;
    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
    if server.json {
        let (notifications, progress, logs) = live.to_json();
        let mut out = json!({ "result": value, "notifications": notifications, "progress": progress, "logs": logs });
        if let Some(task) = task_run.last() {
            out["task"] = serde_json::to_value(task).unwrap_or(Value::Null);
        }
        println!("{out}");
    } else {
        let blocks = value["content"].as_array().cloned().unwrap_or_default();
        print_blocks(&blocks, &mut saver);
        if let Some(structured) = &result.structured_content {
            outln!("structured: {structured}");
        }
        let counts = live.counts();
        let counts = if counts.is_empty() {
            "none".to_owned()
        } else {
            counts
                .iter()
                .map(|(m, n)| format!("{m}={n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let status = if result.is_error() {
            "tool error (isError: true)"
        } else {
            "ok"
        };
        outln!(
            "-- {status}; {} content block(s); notifications: {counts}",
            blocks.len()
        );
    }
    Ok(if result.is_error() {
        EXIT_TOOL_ERROR
    } else {
        0
    })
}

/// The input schema of `tool`, for typing `key=value` arguments (`None` when the server
/// does not list it).
/// The remote name of the tool whose catalog name on `server_name` is `catalog_name`.
async fn remote_name(
    conn: &Connection,
    server_name: &str,
    catalog_name: &str,
    args: &ServerArgs,
) -> Result<String, Failure> {
    let policy = mcpflow::host::NamePolicy::Prefixed;
    let listed = list_all(conn, "tools/list", "tools", args.timeout).await?;
    listed
        .items
        .iter()
        .filter_map(|t| t["name"].as_str())
        .find(|remote| policy.catalog_name(server_name, remote) == catalog_name)
        .map(str::to_owned)
        .ok_or_else(|| {
            Failure::usage(format!(
                "server `{server_name}` offers no tool with the catalog name `{catalog_name}`; `mcpflow list tools --config FILE --server {server_name}` lists its tools"
            ))
        })
}

async fn schema_of(conn: &Connection, tool: &str, timeout: f64) -> Result<Option<Value>, Failure> {
    let listed = list_all(conn, "tools/list", "tools", timeout).await?;
    Ok(listed
        .items
        .into_iter()
        .find(|t| t["name"] == tool)
        .and_then(|t| t.get("inputSchema").cloned()))
}
