//! Tasks from the client's side: start a tool call as a task, poll it, take its
//! result, list and cancel, and await one with a deadline. On a 2026-07-28 connection
//! the same calls speak the `io.modelcontextprotocol/tasks` extension
//! ([`tasks_per_request`](super::tasks_per_request)), where `tasks/result` and `tasks/list` do not
//! exist. The calls ask the connection's era ([`EraAdapter`](super::adapter::EraAdapter));
//! the 2025-11-25 ways are the functions below.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcpflow_protocol::methods::{self, method};
use mcpflow_protocol::tasks::{
    CreateTaskResult, ListTasksResult, Task, TaskIdParams, TaskMetadata, TaskStatus,
};
use mcpflow_protocol::{CallToolRequestParams, CallToolResult, PaginatedRequestParams};

use super::ClientHandle;
use crate::error::SessionError;
use crate::session::RequestOptions;

/// Polling bounds, whatever the server suggests: never busier than 10 ms, never
/// slower than 5 s.
pub(super) const MIN_POLL: Duration = Duration::from_millis(10);
pub(super) const MAX_POLL: Duration = Duration::from_secs(5);

/// Why [`ClientHandle::await_task`] gave up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskWaitError {
    /// A request to the server failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The task did not end before the deadline; it was cancelled (`tasks/cancel`).
    #[error("task {task_id} did not end within {after:?}; it was cancelled")]
    DeadlinePassed {
        /// The task.
        task_id: String,
        /// The deadline that passed.
        after: Duration,
    },
}

/// What a tool call started as a task came back with
/// ([`ClientHandle::start_tool_task`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TaskStart {
    /// The server made the call a task (always so in 2025-11-25). In 2026-07-28 the
    /// task's `ttlMs` and `pollIntervalMs` read as `ttl` and `poll_interval`.
    Task(Box<CreateTaskResult>),
    /// The server answered at once with the tool's result (2026-07-28 only: there the
    /// server alone decides whether a call becomes a task).
    Done(Box<CallToolResult>),
}

impl ClientHandle {
    /// Call a tool as a task (`tools/call` with a `task` param): the server answers at
    /// once with the created task, and runs the tool in the background. `ttl` asks how
    /// long the server keeps the task (it may grant less; 2026-07-28 has no such
    /// request, so it is ignored there). Progress the tool reports arrives as
    /// `notifications/progress` with a string token, on the notification handler.
    ///
    /// On a 2026-07-28 connection the call declares the tasks extension and the server
    /// decides: when it answers at once with the tool's result, this returns
    /// [`SessionError::Codec`] (the tool has run); use
    /// [`start_tool_task`](Self::start_tool_task) to receive such results.
    ///
    /// # Errors
    /// As [`Peer::request`](crate::Peer::request); `-32601` when the tool does not run
    /// as a task.
    ///
    /// # Example
    /// ```no_run
    /// # async fn f(client: mcpflow::client::ClientHandle) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// let created = client.call_tool_as_task("report", serde_json::json!({}), None).await?;
    /// let result = client.await_task(&created.task.task_id, Duration::from_secs(60)).await?;
    /// # drop(result); Ok(()) }
    /// ```
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: serde_json::Value,
        ttl: Option<Duration>,
    ) -> Result<CreateTaskResult, SessionError> {
        match self.start_tool_task(name, arguments, ttl).await? {
            TaskStart::Task(created) => Ok(*created),
            TaskStart::Done(_) => Err(SessionError::Codec {
                method: method::TOOLS_CALL.into(),
                detail: format!(
                    "the server ran `{name}` at once instead of as a task; \
                     start_tool_task returns such results"
                ),
            }),
        }
    }

    /// Call a tool as a task, as [`call_tool_as_task`](Self::call_tool_as_task), and
    /// also take the result when a 2026-07-28 server answers at once.
    ///
    /// # Errors
    /// As [`call_tool_as_task`](Self::call_tool_as_task).
    pub async fn start_tool_task(
        &self,
        name: &str,
        arguments: serde_json::Value,
        ttl: Option<Duration>,
    ) -> Result<TaskStart, SessionError> {
        let params = super::calls::tool_params(name, arguments)?;
        self.era().start_tool_task(self, params, ttl).await
    }

    /// `tasks/get`: the task's status now (on a 2026-07-28 connection, without its
    /// result or input requests: see [`task_details`](Self::task_details)).
    ///
    /// # Errors
    /// As [`Peer::request`](crate::Peer::request); `-32602` for an unknown or expired task.
    pub async fn get_task(&self, task_id: &str) -> Result<Task, SessionError> {
        self.era().get_task(self, task_id).await
    }

    /// The task as 2026-07-28's `tasks/get` shows it: status, and its input requests,
    /// result or error.
    ///
    /// # Errors
    /// As [`Peer::request`](crate::Peer::request); [`SessionError::Codec`] on a
    /// 2025-11-25 connection.
    pub async fn task_details(
        &self,
        task_id: &str,
    ) -> Result<mcpflow_protocol::tasks2026::DetailedTask, SessionError> {
        self.era().task_details(self, task_id).await
    }

    /// `tasks/result`: waits until the task ends (at most the session's maximum request
    /// time) and returns what the tool call returned. While the task needs input, the
    /// server's elicitation or sampling requests arrive with this request.
    ///
    /// # Errors
    /// As [`Peer::request`](crate::Peer::request): the tool call's own JSON-RPC error, or
    /// `-32602` for an unknown task; [`SessionError::Codec`] on a 2026-07-28 connection,
    /// which has no `tasks/result`.
    pub async fn task_result(&self, task_id: &str) -> Result<CallToolResult, SessionError> {
        self.era().task_result(self, task_id).await
    }

    /// `tasks/list`: one page of this connection's tasks.
    ///
    /// # Errors
    /// As [`Peer::request`](crate::Peer::request); [`SessionError::Codec`] on a
    /// 2026-07-28 connection, which has no `tasks/list`.
    pub async fn list_tasks(&self, cursor: Option<&str>) -> Result<ListTasksResult, SessionError> {
        let params = PaginatedRequestParams {
            cursor: cursor.map(str::to_owned),
            ..PaginatedRequestParams::default()
        };
        self.era().list_tasks(self, &params).await
    }

    /// `tasks/cancel`: the task, now `cancelled`. In 2026-07-28 cancelling is
    /// cooperative and acknowledged empty: this returns the task as `tasks/get` shows it
    /// next, which may still be `working`.
    ///
    /// # Errors
    /// As [`Peer::request`](crate::Peer::request); `-32602` when the task has already
    /// ended (2025-11-25).
    pub async fn cancel_task(&self, task_id: &str) -> Result<Task, SessionError> {
        self.era().cancel_task(self, task_id).await
    }

    /// Wait for a task's result until `deadline` passes: poll `tasks/get` at the
    /// server's `pollInterval`, and once the task ends or needs input take
    /// `tasks/result` (which carries the server's input requests to this client's
    /// callbacks). Past the deadline the task is cancelled. On a 2026-07-28 connection
    /// it polls `tasks/get` at the task's `pollIntervalMs`, answers the task's input
    /// requests with the same callbacks through `tasks/update`, and reads the result
    /// (or the JSON-RPC error of a `failed` task) from `tasks/get`.
    ///
    /// # Errors
    /// [`TaskWaitError::DeadlinePassed`] past the deadline, else
    /// [`TaskWaitError::Session`] as [`task_result`](Self::task_result).
    pub async fn await_task(
        &self,
        task_id: &str,
        deadline: Duration,
    ) -> Result<CallToolResult, TaskWaitError> {
        match tokio::time::timeout(deadline, self.era().wait_task(self, task_id)).await {
            Ok(answer) => Ok(answer?),
            Err(_) => {
                if let Err(e) = self.cancel_task(task_id).await {
                    tracing::debug!(error = %e, task = task_id, "cancelling a task past its deadline failed");
                }
                Err(TaskWaitError::DeadlinePassed {
                    task_id: task_id.to_owned(),
                    after: deadline,
                })
            }
        }
    }
}

/// `tools/call` with a `task` param (2025-11-25).
pub(super) async fn start(
    handle: &ClientHandle,
    mut params: CallToolRequestParams,
    ttl: Option<Duration>,
) -> Result<TaskStart, SessionError> {
    static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);
    params.task = Some(TaskMetadata {
        ttl: ttl.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        ..TaskMetadata::default()
    });
    // A string token: an integer one below the next request id would be taken for a
    // finished request's and dropped once the call has answered.
    let token = format!("task-{}", NEXT_TOKEN.fetch_add(1, Ordering::Relaxed));
    params
        .meta
        .get_or_insert_default()
        .insert("progressToken".to_owned(), token.into());
    handle
        .peer
        .request(method::TOOLS_CALL, &params, RequestOptions::new())
        .await
        .map(|created| TaskStart::Task(Box::new(created)))
}

/// `tasks/result` (2025-11-25), waiting at most the session's maximum request time.
pub(super) async fn result(
    handle: &ClientHandle,
    task_id: &str,
) -> Result<CallToolResult, SessionError> {
    let wait = handle.peer.config().max_request_timeout();
    handle
        .peer
        .request(
            method::TASKS_RESULT,
            &TaskIdParams::new(task_id),
            RequestOptions::new().timeout(wait),
        )
        .await
}

/// Poll `tasks/get` at the server's `pollInterval` until the task ends or needs input,
/// then take `tasks/result` (2025-11-25).
pub(super) async fn wait(
    handle: &ClientHandle,
    task_id: &str,
) -> Result<CallToolResult, SessionError> {
    loop {
        let task: Task = handle
            .request::<methods::GetTask>(&TaskIdParams::new(task_id), RequestOptions::new())
            .await?;
        if task.status.is_terminal() || task.status == TaskStatus::InputRequired {
            return result(handle, task_id).await;
        }
        let poll = task
            .poll_interval
            .map_or(MIN_POLL, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL);
        tokio::time::sleep(poll).await;
    }
}
