//! Tasks on a 2026-07-28 connection: the `io.modelcontextprotocol/tasks` extension.
//! Each task request declares the extension in its `clientCapabilities`; the server
//! alone decides to answer a `tools/call` with a task; `tasks/get` shows it (with its
//! input requests, result or error), `tasks/update` answers its input requests and
//! `tasks/cancel` asks it to stop.

use std::collections::HashSet;
use std::time::Duration;

use mcpflow_protocol::meta2026::CLIENT_CAPABILITIES_KEY;
use mcpflow_protocol::methods::{self, method};
use mcpflow_protocol::mrtr::MaybeInputRequired;
use mcpflow_protocol::tasks::{self as classic, TaskIdParams, TaskStatus};
use mcpflow_protocol::tasks2026::{
    DetailedTask, MaybeTask, TASKS_EXTENSION, TASKS_UPDATE, UpdateTaskParams,
};
use mcpflow_protocol::{CallToolRequestParams, CallToolResult, JsonObject, MirroredParams};

use super::per_request::PerRequest;
use super::tasks::{MAX_POLL, MIN_POLL, TaskStart};
use super::{ClientHandle, mrtr};
use crate::error::SessionError;
use crate::session::RequestOptions;

/// A 2026-07-28 task in the shape the 2025-11-25 calls return.
fn classic_task(task: mcpflow_protocol::tasks2026::Task) -> classic::Task {
    classic::Task {
        task_id: task.task_id,
        status: task.status,
        status_message: task.status_message,
        created_at: task.created_at,
        last_updated_at: task.last_updated_at,
        ttl: task.ttl_ms,
        poll_interval: task.poll_interval_ms,
        meta: task.meta,
        ..classic::Task::default()
    }
}

impl PerRequest {
    /// Options whose `_meta` declares the tasks extension on top of this client's
    /// per-request capabilities (the server must not make a task of a request that did
    /// not).
    fn with_extension(&self) -> RequestOptions {
        let mut capabilities = self.identity.capabilities.clone();
        capabilities
            .extensions
            .get_or_insert_default()
            .insert(TASKS_EXTENSION.to_owned(), serde_json::json!({}));
        let mut meta = JsonObject::new();
        if let Ok(value) = serde_json::to_value(&capabilities) {
            meta.insert(CLIENT_CAPABILITIES_KEY.to_owned(), value);
        }
        RequestOptions::new().meta(meta)
    }

    /// Options for a request about task `task_id`: the extension declared, the task id
    /// mirrored in `Mcp-Name`.
    fn about_task(&self, handle: &ClientHandle, task_id: &str) -> RequestOptions {
        let named = MirroredParams {
            name: Some(task_id),
            arguments: None,
        };
        self.mirror(handle, named, self.with_extension())
    }

    /// `tools/call` declaring the extension; `input_required` rounds before the task
    /// exists are fulfilled as for any call.
    pub(super) async fn start_tool_task(
        &self,
        handle: &ClientHandle,
        params: &CallToolRequestParams,
    ) -> Result<TaskStart, SessionError> {
        let options = self.mirror_of::<methods::CallTool>(handle, params, self.with_extension());
        let answer: MaybeTask<CallToolResult> =
            mrtr::request_with_input(handle, method::TOOLS_CALL, params, options).await?;
        Ok(match answer {
            MaybeTask::Task(created) => TaskStart::Task(Box::new(classic::CreateTaskResult {
                task: classic_task(created.task),
                ..classic::CreateTaskResult::default()
            })),
            MaybeTask::Done(MaybeInputRequired::Complete(result)) => {
                TaskStart::Done(Box::new(result))
            }
            MaybeTask::Done(MaybeInputRequired::InputRequired(_)) => {
                return Err(SessionError::Codec {
                    method: method::TOOLS_CALL.into(),
                    detail: "an input_required answer inside a finished call".to_owned(),
                });
            }
        })
    }

    /// `tasks/get`.
    pub(super) async fn task_details(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<DetailedTask, SessionError> {
        handle
            .peer
            .request(
                method::TASKS_GET,
                &TaskIdParams::new(task_id),
                self.about_task(handle, task_id),
            )
            .await
    }

    /// `tasks/get`, in the 2025-11-25 shape.
    pub(super) async fn get_task(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<classic::Task, SessionError> {
        self.task_details(handle, task_id)
            .await
            .map(|d| classic_task(d.task))
    }

    /// `tasks/cancel` (an empty ack), then the task as `tasks/get` shows it: cancelling
    /// is cooperative, so it may still be `working` or have ended otherwise.
    pub(super) async fn cancel_task(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<classic::Task, SessionError> {
        let _ack: JsonObject = handle
            .peer
            .request(
                method::TASKS_CANCEL,
                &TaskIdParams::new(task_id),
                self.about_task(handle, task_id),
            )
            .await?;
        self.get_task(handle, task_id).await
    }

    /// Poll `tasks/get` until the task ends, answering its input requests with this
    /// client's callbacks (each key once: keys are unique over the task's life, and the
    /// server applies `tasks/update` eventually).
    pub(super) async fn wait_task(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<CallToolResult, SessionError> {
        let mut answered: HashSet<String> = HashSet::new();
        loop {
            let detailed = self.task_details(handle, task_id).await?;
            match detailed.task.status {
                TaskStatus::Completed => {
                    let result = detailed.result.unwrap_or_default();
                    return serde_json::from_value(serde_json::Value::Object(result)).map_err(
                        |e| SessionError::Codec {
                            method: method::TASKS_GET.into(),
                            detail: format!(
                                "the completed task's result is not a tool result: {e}"
                            ),
                        },
                    );
                }
                TaskStatus::Failed => {
                    return Err(match detailed.error {
                        Some(error) => SessionError::Rejected {
                            method: method::TOOLS_CALL.into(),
                            error,
                        },
                        None => SessionError::Codec {
                            method: method::TASKS_GET.into(),
                            detail: format!("task {task_id} failed without an error"),
                        },
                    });
                }
                TaskStatus::Cancelled => {
                    return Err(SessionError::Codec {
                        method: method::TASKS_GET.into(),
                        detail: format!("task {task_id} was cancelled"),
                    });
                }
                _ => {}
            }
            let pending: mcpflow_protocol::mrtr::InputRequests = detailed
                .input_requests
                .unwrap_or_default()
                .into_iter()
                .filter(|(key, _)| !answered.contains(key))
                .collect();
            if !pending.is_empty() {
                let keys: Vec<String> = pending.keys().cloned().collect();
                let responses = mrtr::fulfil(handle, method::TOOLS_CALL, pending).await?;
                let update = UpdateTaskParams {
                    task_id: task_id.to_owned(),
                    input_responses: responses,
                    meta: None,
                };
                let _ack: JsonObject = handle
                    .peer
                    .request(TASKS_UPDATE, &update, self.about_task(handle, task_id))
                    .await?;
                answered.extend(keys);
                continue;
            }
            let poll = detailed
                .task
                .poll_interval_ms
                .map_or(MIN_POLL, Duration::from_millis)
                .clamp(MIN_POLL, MAX_POLL);
            tokio::time::sleep(poll).await;
        }
    }
}
