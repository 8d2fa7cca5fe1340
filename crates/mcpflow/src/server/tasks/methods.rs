//! `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (2025-11-25): each
//! sees only the tasks of the connection that asks.

use mcpflow_protocol::tasks::ListTasksResult;
use mcpflow_protocol::{ErrorObject, RequestId};
use serde_json::value::RawValue;

use super::notify_status;
use super::store::{Outcome, TaskEntry};
use crate::server::ServerContext;
use crate::session::Reply;

fn task_of(cx: &ServerContext) -> Result<std::sync::Arc<TaskEntry>, ErrorObject> {
    let id = cx.request().head().task_id.required("taskId")?;
    let entry = cx.server().inner.tasks.get(&cx.task_owner(), id)?;
    cx.request().operation().link_to(entry.origin.get());
    Ok(entry)
}

pub(crate) async fn get(cx: ServerContext) -> Result<Reply, ErrorObject> {
    cx.reply(task_of(&cx)?.snapshot())
}

pub(crate) async fn list(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let server = cx.server();
    let (tasks, next_cursor) = server.inner.tasks.list(
        &cx.task_owner(),
        cx.request()
            .head()
            .cursor
            .optional("cursor")?
            .map(String::as_str),
        server.inner.page_size,
    )?;
    cx.reply(ListTasksResult {
        tasks,
        next_cursor,
        ..ListTasksResult::default()
    })
}

pub(crate) async fn cancel(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let entry = task_of(&cx)?;
    let task = cx.server().inner.tasks.cancel(&entry)?;
    notify_status(&cx.peer().unrelated(), &task).await;
    cx.reply(task)
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
pub(crate) async fn result(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let entry = task_of(&cx)?;
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
