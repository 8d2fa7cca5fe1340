//! `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (2025-11-25): each
//! sees only the tasks of the connection that asks.

use mcpflow_protocol::tasks::{ListTasksResult, TaskIdParams};
use mcpflow_protocol::{ErrorObject, PaginatedRequestParams, RequestId};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::notify_status;
use super::store::{Outcome, TaskEntry};
use crate::server::ServerContext;
use crate::session::Reply;

type Params = Option<Box<RawValue>>;

fn decode<T: DeserializeOwned + Default>(params: &Params, needed: bool) -> Result<T, ErrorObject> {
    match params {
        None if needed => Err(ErrorObject::invalid_params("missing params")),
        None => Ok(T::default()),
        Some(raw) => serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params),
    }
}

fn task_of(params: &Params, cx: &ServerContext) -> Result<std::sync::Arc<TaskEntry>, ErrorObject> {
    let p: TaskIdParams = decode(params, true)?;
    cx.server().inner.tasks.get(&cx.task_owner(), &p.task_id)
}

fn json<T: serde::Serialize>(value: &T) -> Result<Reply, ErrorObject> {
    Reply::json(value).map_err(ErrorObject::internal)
}

pub(crate) async fn get(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    json(&task_of(&params, &cx)?.snapshot())
}

pub(crate) async fn list(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: PaginatedRequestParams = decode(&params, false)?;
    let server = cx.server();
    let (tasks, next_cursor) = server.inner.tasks.list(
        &cx.task_owner(),
        p.cursor.as_deref(),
        server.inner.page_size,
    )?;
    json(&ListTasksResult {
        tasks,
        next_cursor,
        ..ListTasksResult::default()
    })
}

pub(crate) async fn cancel(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let entry = task_of(&params, &cx)?;
    let task = cx.server().inner.tasks.cancel(&entry)?;
    notify_status(&cx.peer().unrelated(), &task).await;
    json(&task)
}

/// Clears the task's route to this `tasks/result` when it ends, however it ends.
struct Route<'a> {
    entry: &'a TaskEntry,
    id: RequestId,
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        self.entry.clear_route(&self.id);
    }
}

/// Wait until the task ends and answer what its `tools/call` would have; meanwhile the
/// task's requests to the client travel with this request.
pub(crate) async fn result(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let entry = task_of(&params, &cx)?;
    let id = cx.request().id().clone();
    entry.set_route(id.clone());
    let _route = Route { entry: &entry, id };
    let mut state = entry.subscribe();
    let ended = tokio::select! {
        state = state.wait_for(|s| s.outcome.is_some()) => state.ok().and_then(|s| s.outcome.clone()),
        () = tokio::time::sleep_until(entry.expires) => None,
        () = cx.cancellation().cancelled() => None,
    };
    match ended {
        Some(Outcome::Result(text)) => RawValue::from_string(text.to_string())
            .map(Reply::from)
            .map_err(ErrorObject::internal),
        Some(Outcome::Error(error)) => Err(error),
        None => Err(ErrorObject::invalid_params(format!(
            "task {} expired before it ended",
            entry.id
        ))),
    }
}
