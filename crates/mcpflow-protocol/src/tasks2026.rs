//! Tasks in 2026-07-28: the `io.modelcontextprotocol/tasks` extension (SEP-2663).
//!
//! The client declares [`TASKS_EXTENSION`] in each request's client capabilities; the
//! server alone decides to answer a `tools/call` with a [`CreateTaskResult`]
//! (`resultType: "task"`); the client polls `tasks/get` ([`DetailedTask`]), answers
//! the task's input requests with `tasks/update` and may `tasks/cancel` it. The
//! 2025-11-25 `tasks/result` and `tasks/list` are gone.

use serde::{Deserialize, Serialize};

use crate::jsonrpc::ErrorObject;
use crate::meta::{JsonObject, Meta};
use crate::meta2026::ResultType;
use crate::mrtr::{InputRequests, InputResponses};
pub use crate::tasks::TaskStatus;

/// The extension's identifier, in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `tasks/update`: the client's answers to a task's input requests.
pub const TASKS_UPDATE: &str = "tasks/update";
/// `notifications/tasks`: a task's full state, on a `subscriptions/listen` stream.
pub const TASKS_NOTIFICATION: &str = "notifications/tasks";

/// A task as 2026-07-28 shows it: `ttlMs` and `pollIntervalMs` in place of
/// 2025-11-25's `ttl` and `pollInterval`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Server-chosen, unguessable id.
    pub task_id: String,
    /// Current status.
    pub status: TaskStatus,
    /// Human-readable status detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last change.
    pub last_updated_at: String,
    /// Time to live in milliseconds from creation; `null` means unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The answer to a request the server turned into a task: the task itself, flat,
/// with `resultType: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// `task`.
    pub result_type: ResultType,
    /// The new task.
    #[serde(flatten)]
    pub task: Task,
}

impl CreateTaskResult {
    /// The result announcing `task`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult {
            result_type: ResultType::Task,
            task,
        }
    }
}

/// The result of `tasks/get` (and the params of `notifications/tasks`): the task, with
/// what its status calls for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// `complete` on a `tasks/get` result; absent in a notification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// `input_required`: what the task waits for, keyed for `tasks/update`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// `completed`: the underlying request's result (a tool error included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// `failed`: the JSON-RPC error the underlying request ended with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// Params of `tasks/update`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Answers keyed as the task's `inputRequests` were.
    pub input_responses: InputResponses,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// A result that is either complete (`T`), input required, or a created task; read by
/// `resultType`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MaybeTask<T> {
    /// The final result, or a request for input.
    Done(crate::mrtr::MaybeInputRequired<T>),
    /// A task was created.
    Task(CreateTaskResult),
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for MaybeTask<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = serde_json::Value::deserialize(deserializer)?;
        if value.get("resultType").and_then(serde_json::Value::as_str) == Some("task") {
            serde_json::from_value(value)
                .map(MaybeTask::Task)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(value)
                .map(MaybeTask::Done)
                .map_err(D::Error::custom)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_created_task_is_flat_and_uses_the_ms_names() {
        let created = CreateTaskResult::new(Task {
            task_id: "t1".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            last_updated_at: "2026-01-01T00:00:00Z".into(),
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(500),
            ..Task::default()
        });
        let value = serde_json::to_value(&created).expect("serializes");
        assert_eq!(
            value,
            json!({"resultType": "task", "taskId": "t1", "status": "working",
                   "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
                   "ttlMs": 60000, "pollIntervalMs": 500})
        );
        let back: MaybeTask<JsonObject> = serde_json::from_value(value).expect("reads back");
        assert_eq!(back, MaybeTask::Task(created));
        let unlimited = Task::default();
        assert_eq!(
            serde_json::to_value(&unlimited).expect("ser")["ttlMs"],
            json!(null)
        );
    }

    #[test]
    fn a_detailed_task_carries_what_its_status_calls_for() {
        let value = json!({"resultType": "complete", "taskId": "t", "status": "input_required",
            "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": null,
            "inputRequests": {"k": {"method": "roots/list"}}});
        let task: DetailedTask = serde_json::from_value(value.clone()).expect("reads");
        assert_eq!(task.task.status, TaskStatus::InputRequired);
        assert_eq!(task.input_requests.as_ref().map(|r| r.len()), Some(1));
        assert_eq!(serde_json::to_value(&task).expect("ser"), value);
    }
}
