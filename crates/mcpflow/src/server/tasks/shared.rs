//! 2026-07-28 tasks across the instances of a fleet ([`SharedTaskStore`]): each task's
//! record written at its creation and at every change, the methods answered for a task
//! another instance runs, and the commands that instance takes.

use std::sync::Arc;

use mcpflow_protocol::ErrorObject;
use mcpflow_protocol::tasks::TaskStatus;
use mcpflow_protocol::tasks2026::DetailedTask;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::clock::now_iso8601;
use super::store::{TaskEntry, TaskOwner};
use crate::server::Server;
use crate::server::fleet::{SharedTaskStore, StoreError, TaskCommand, TaskRecord};

fn unavailable(e: &StoreError) -> ErrorObject {
    tracing::warn!(error = %e, "the shared task store is unavailable");
    ErrorObject::internal(format!(
        "the shared task store is unavailable ({e}); retry shortly"
    ))
}

fn unknown(id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("unknown or expired task: {id}"))
}

fn owner_key(owner: &TaskOwner) -> Option<String> {
    match owner {
        TaskOwner::Principal(key) => Some(key.to_string()),
        TaskOwner::Anyone | TaskOwner::Connection(_) => None,
    }
}

/// Write `entry`'s record to the fleet's store, when there is one: before the client
/// learns of the task, and after each change.
///
/// # Errors
/// When the store cannot take it.
pub(crate) async fn mirror(server: &Server, entry: &TaskEntry) -> Result<(), ErrorObject> {
    let Some(store) = &server.inner.shared_tasks else {
        return Ok(());
    };
    let _order = entry.mirrored.lock().await;
    let task = serde_json::to_string(&entry.detailed())
        .ok()
        .and_then(|text| RawValue::from_string(text).ok())
        .ok_or_else(|| ErrorObject::internal("the task could not be written"))?;
    let record = TaskRecord {
        node: store.node(),
        owner: owner_key(entry.owner()),
        task,
    };
    let ttl = entry.expires.saturating_duration_since(Instant::now());
    store
        .put_task(&entry.id, &record, ttl)
        .await
        .map_err(|e| unavailable(&e))
}

/// The record of task `id` for `owner`, from the fleet's store: -32602 when there is
/// none (or no store, or another owner's).
async fn record(
    server: &Server,
    owner: &TaskOwner,
    id: &str,
) -> Result<(Arc<dyn SharedTaskStore>, TaskRecord), ErrorObject> {
    let store = server
        .inner
        .shared_tasks
        .clone()
        .ok_or_else(|| unknown(id))?;
    let record = store
        .get_task(id)
        .await
        .map_err(|e| unavailable(&e))?
        .ok_or_else(|| unknown(id))?;
    let allowed = match owner {
        TaskOwner::Principal(key) => record.owner.as_deref() == Some(&**key),
        TaskOwner::Anyone => record.owner.is_none(),
        TaskOwner::Connection(_) => false,
    };
    if !allowed {
        return Err(unknown(id));
    }
    Ok((store, record))
}

/// `tasks/get` of a task another instance runs: its record, `failed` when that instance
/// is gone before the task ended.
pub(crate) async fn get(
    server: &Server,
    owner: &TaskOwner,
    id: &str,
) -> Result<DetailedTask, ErrorObject> {
    let (store, record) = record(server, owner, id).await?;
    let mut task: DetailedTask = serde_json::from_str(record.task.get())
        .map_err(|e| ErrorObject::internal(format!("the task's record is unreadable: {e}")))?;
    if !task.task.status.is_terminal() && matches!(store.node_alive(record.node).await, Ok(false)) {
        task.task.status = TaskStatus::Failed;
        task.task.status_message = Some("the server instance running this task stopped".to_owned());
        task.task.last_updated_at = now_iso8601();
        task.input_requests = None;
        task.error = Some(ErrorObject::internal(
            "the server instance running this task stopped before it ended",
        ));
    }
    Ok(task)
}

/// `tasks/update` or `tasks/cancel` of a task another instance runs: sent to it (both
/// are eventually consistent).
pub(crate) async fn send(
    server: &Server,
    owner: &TaskOwner,
    id: &str,
    command: TaskCommand,
) -> Result<(), ErrorObject> {
    let (store, record) = record(server, owner, id).await?;
    store
        .send_task_command(record.node, command)
        .await
        .map_err(|e| unavailable(&e))
}

/// Take a command another instance sent for a task this one runs.
pub(crate) async fn apply(server: &Server, command: TaskCommand) {
    let id = match &command {
        TaskCommand::Update { id, .. } | TaskCommand::Cancel { id } => id.clone(),
    };
    let Some(entry) = server.inner.tasks.find(&id) else {
        tracing::debug!(task = %id, "a command for a task not held here");
        return;
    };
    let changed = match command {
        TaskCommand::Update { answers, .. } => answer(&entry, answers),
        TaskCommand::Cancel { .. } => server.inner.tasks.cancel(&entry).is_ok(),
    };
    if changed {
        super::per_request::notify(server, &entry).await;
    }
}

/// Hand `answers` to the input calls of `entry` waiting for them; whether any was taken.
pub(crate) fn answer(entry: &TaskEntry, answers: Map<String, Value>) -> bool {
    entry.modify(|s| {
        if s.status.is_terminal() {
            return false;
        }
        let mut took = false;
        for (key, answer) in answers {
            if s.inputs.remove(&key).is_some() {
                s.answers.insert(key, answer);
                took = true;
            }
        }
        if took && s.inputs.is_empty() && s.status == TaskStatus::InputRequired {
            s.status = TaskStatus::Working;
            s.updated_at = now_iso8601();
        }
        took
    })
}
