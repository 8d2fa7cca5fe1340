//! `mcpflow call` on a tool that runs only as a task (`taskSupport: required`): start
//! it as a task, show each status it passes through, and take its result.

use std::sync::Mutex;
use std::time::Duration;

use mcpflow::SessionError;
use mcpflow::client::{ClientHandle, TaskStart, TaskWaitError};
use mcpflow::protocol::tasks::{Task, TaskStatus};
use mcpflow::protocol::tools::TaskSupport;
use mcpflow::protocol::{CallToolRequestParams, CallToolResult};
use serde_json::Value;

/// No deadline of its own: `--timeout` and Ctrl-C end a task wait.
const UNBOUNDED: Duration = Duration::from_secs(365 * 24 * 3600);

/// What a task run leaves for the caller: the task's id (to cancel it on an
/// interrupt) and its last status (for the JSON output).
#[derive(Debug, Default)]
pub struct TaskRun {
    id: Mutex<Option<String>>,
    last: Mutex<Option<Task>>,
}

impl TaskRun {
    /// The id of the task started, if one was.
    pub fn id(&self) -> Option<String> {
        self.id.lock().ok().and_then(|id| id.clone())
    }

    /// The last status seen, if a task was started.
    pub fn last(&self) -> Option<Task> {
        self.last.lock().ok().and_then(|t| t.clone())
    }

    fn record(&self, task: &Task, quiet: bool) {
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let changed = last
            .as_ref()
            .is_none_or(|l| l.status != task.status || l.status_message != task.status_message);
        if changed && !quiet {
            let status = serde_json::to_value(task.status).unwrap_or(Value::Null);
            let status = status.as_str().unwrap_or("unknown");
            match &task.status_message {
                Some(m) => errln!("task {}: {status} ({m})", task.task_id),
                None => errln!("task {}: {status}", task.task_id),
            }
        }
        *last = Some(task.clone());
    }
}

/// Whether the server lists `tool` as runnable only as a task.
pub async fn required(client: &ClientHandle, tool: &str) -> bool {
    client.tools().await.is_ok_and(|tools| {
        tools
            .iter()
            .any(|t| t.name == tool && t.task_support() == TaskSupport::Required)
    })
}

/// Run the call as a task: start it, poll at the server's interval until it ends or
/// needs input (showing each status on stderr unless `quiet`), then take its result.
///
/// # Errors
/// As the requests it makes.
pub async fn run(
    client: &ClientHandle,
    params: &CallToolRequestParams,
    quiet: bool,
    run: &TaskRun,
) -> Result<CallToolResult, SessionError> {
    let arguments = params.arguments.clone().map_or(Value::Null, Value::Object);
    let created = match client
        .start_tool_task(&params.name, arguments, None)
        .await?
    {
        TaskStart::Task(created) => created,
        // 2026-07-28: the server may answer at once instead of making a task.
        TaskStart::Done(result) => return Ok(*result),
        other => {
            return Err(SessionError::Codec {
                method: "tools/call".into(),
                detail: format!("a task start this command does not know: {other:?}"),
            });
        }
    };
    let id = created.task.task_id.clone();
    if let Ok(mut slot) = run.id.lock() {
        *slot = Some(id.clone());
    }
    run.record(&created.task, quiet);
    if client.is_per_request() {
        // 2026-07-28 has no tasks/result: the wait polls and answers the task's input
        // requests itself; the session's own limits bound it.
        let result = client
            .await_task(&id, UNBOUNDED)
            .await
            .map_err(|e| match e {
                TaskWaitError::Session(e) => e,
                TaskWaitError::DeadlinePassed { after, .. } => SessionError::Timeout {
                    method: "tasks/get".into(),
                    after,
                },
                other => SessionError::Codec {
                    method: "tasks/get".into(),
                    detail: other.to_string(),
                },
            });
        if let Ok(task) = client.get_task(&id).await {
            run.record(&task, quiet);
        }
        return result;
    }
    loop {
        let task = client.get_task(&id).await?;
        run.record(&task, quiet);
        if task.status.is_terminal() || task.status == TaskStatus::InputRequired {
            break;
        }
        let poll = task.poll_interval.unwrap_or(500).clamp(10, 5000);
        tokio::time::sleep(Duration::from_millis(poll)).await;
    }
    let result = client.task_result(&id).await;
    if let Ok(task) = client.get_task(&id).await {
        run.record(&task, quiet);
    }
    result
}
