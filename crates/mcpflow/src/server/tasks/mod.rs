//! Tasks (2025-11-25, experimental): a `tools/call` with a `task` param is answered at
//! once with the created task, and the tool runs in the background; the client polls
//! `tasks/get`, takes the outcome with `tasks/result`, lists and cancels.
//!
//! A task lives until its time to live runs out (then its handler is dropped and its
//! result freed) or its connection closes (no task outlives its connection). While its
//! handler waits for the user (elicitation, sampling) the task is `input_required`, and
//! the request travels with the client's `tasks/result`, as the spec asks.
//!
//! These tasks belong to a connection (an HTTP session). The 2026-07-28 extension
//! ([`per_request`]) keeps its tasks in the same store, owned by a principal or by whoever
//! holds the id, so they outlive the per-request call that created them.

mod clock;
pub(super) mod methods;
pub(crate) mod per_request;
pub(crate) mod shared;
mod store;

use std::sync::Arc;
use std::time::Duration;

use mcpflow_protocol::meta::RELATED_TASK_KEY;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::tasks::{CreateTaskResult, TaskStatus};
use mcpflow_protocol::{CallToolResult, ErrorObject};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

pub(crate) use store::{TaskEntry, TaskOwner, TaskStore};

use super::ServerContext;
use crate::error::SessionError;
use crate::session::{BoxFuture, Peer, Reply, RequestOptions};

/// Bounds on the tasks a server holds: how many, how many bytes of results, and how
/// long each lives.
///
/// ```
/// use std::time::Duration;
/// use mcpflow::server::{Server, TaskLimits};
///
/// let limits = TaskLimits::default()
///     .with_max_tasks(100)
///     .with_max_ttl(Duration::from_secs(600));
/// let server = Server::builder("s", "1").task_limits(limits).build();
/// # drop(server);
/// ```
#[derive(Debug, Clone)]
pub struct TaskLimits {
    pub(crate) max_tasks: usize,
    pub(crate) max_result_bytes: usize,
    pub(crate) default_ttl: Duration,
    pub(crate) max_ttl: Duration,
    pub(crate) poll_interval: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_tasks: 1024,
            max_result_bytes: 64 << 20,
            default_ttl: Duration::from_secs(5 * 60),
            max_ttl: Duration::from_secs(60 * 60),
            poll_interval: Duration::from_millis(500),
        }
    }
}

impl TaskLimits {
    /// Most tasks held at once, over all connections. At the limit a new task takes the
    /// place of the oldest finished one (its result is forgotten before its time to
    /// live ends); when every task held is running, a task-augmented call is refused
    /// (`-32603`, `data.reason = "tasks_full"`). Default: 1024.
    pub fn with_max_tasks(mut self, n: usize) -> Self {
        self.max_tasks = n;
        self
    }

    /// Most bytes of finished results kept at once; a result that does not fit fails its
    /// task with a message saying so. Default: 64 MiB.
    pub fn with_max_result_bytes(mut self, n: usize) -> Self {
        self.max_result_bytes = n;
        self
    }

    /// Time to live of a task whose client asked for none. Default: 5 minutes.
    pub fn with_default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = ttl;
        self
    }

    /// Longest time to live granted, whatever the client asks. Default: 1 hour.
    pub fn with_max_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl;
        self
    }

    /// The `pollInterval` suggested to clients. Default: 500 ms.
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }
}

impl super::Server {
    /// How many tasks the server holds now (running, or finished and not yet expired).
    pub fn task_count(&self) -> usize {
        self.inner.tasks.usage().0
    }

    /// The bytes of finished task results the server keeps now.
    pub fn task_result_bytes(&self) -> usize {
        self.inner.tasks.usage().1
    }
}

/// The `tasks` capability of a server with tools that run as tasks: list, cancel and
/// task-augmented `tools/call`.
pub(crate) fn capability() -> mcpflow_protocol::capabilities::TasksCapability {
    let empty = || serde_json::Map::new();
    let mut call = serde_json::Map::new();
    call.insert("call".to_owned(), serde_json::Value::Object(empty()));
    let mut requests = serde_json::Map::new();
    requests.insert("tools".to_owned(), serde_json::Value::Object(call));
    mcpflow_protocol::capabilities::TasksCapability {
        list: Some(empty()),
        cancel: Some(empty()),
        requests: Some(requests),
        ..Default::default()
    }
}

/// The tool run a task performs, given the task's own context.
pub(crate) type TaskWork = Box<
    dyn FnOnce(ServerContext) -> BoxFuture<'static, Result<CallToolResult, ErrorObject>> + Send,
>;

/// Create a task for this `tools/call`, start `work` in the background and answer with
/// the task.
pub(crate) fn start(
    cx: &ServerContext,
    ttl_ms: Option<u64>,
    work: TaskWork,
) -> Result<Reply, ErrorObject> {
    let store = cx.server().inner.tasks.clone();
    let entry = store.create(cx.task_owner(), ttl_ms)?;
    if let Some(origin) = cx.request().operation().traceparent() {
        let _ = entry.origin.set(origin);
    }
    let task_cx = cx.for_task(entry.clone());
    let peer = task_cx.peer().clone();
    let run = work(task_cx);
    tokio::spawn(run_task(store, entry.clone(), peer, run));
    let created = CreateTaskResult {
        task: entry.snapshot(),
        ..CreateTaskResult::default()
    };
    cx.reply(created)
}

/// Drive one task: its handler until it ends, expires or the connection closes; then
/// keep its outcome until expiry or close; then forget it.
async fn run_task(
    store: Arc<TaskStore>,
    entry: Arc<TaskEntry>,
    peer: Peer,
    run: BoxFuture<'static, Result<CallToolResult, ErrorObject>>,
) {
    let expiry = tokio::time::sleep_until(entry.expires);
    tokio::pin!(expiry);
    // The handler's future is dropped as soon as it ends: a finished task keeps only
    // its entry until it expires.
    let outcome = tokio::select! {
        outcome = run => Some(outcome),
        () = &mut expiry => None,
        () = peer.closed() => None,
    };
    if let Some(outcome) = outcome {
        let outcome = outcome.and_then(|call| stored_result(call, &entry.id));
        if let Some(task) = store.finish(&entry, outcome) {
            // Boxed: held only while sending, not in every task's runner for its life.
            Box::pin(notify_status(&peer, &task)).await;
        }
        tokio::select! {
            () = &mut expiry => {}
            () = peer.closed() => {}
        }
    }
    entry.cancel.cancel();
    store.remove(&entry);
}

/// The result's JSON text as `tasks/result` returns it (tagged with its task), and
/// whether it reports a tool error (the task then `failed`, as 2025-11-25 says).
fn stored_result(mut call: CallToolResult, task_id: &str) -> Result<(String, bool), ErrorObject> {
    call.meta.get_or_insert_default().insert(
        RELATED_TASK_KEY.to_owned(),
        serde_json::json!({ "taskId": task_id }),
    );
    let is_error = call.is_error();
    let text = serde_json::to_string(&call).map_err(ErrorObject::internal)?;
    Ok((text, is_error))
}

/// `notifications/tasks/status` with the full task; a closed connection has no one to
/// tell.
pub(crate) async fn notify_status(peer: &Peer, task: &mcpflow_protocol::tasks::Task) {
    if let Err(e) = peer.notify_raw(method::TASK_STATUS, Some(task)).await {
        tracing::debug!(error = %e, task = %task.task_id, "task status not sent");
    }
}

/// Send `method` to the client on behalf of a task: the task turns `input_required`,
/// the request waits for the client's `tasks/result` and travels on its stream tagged
/// with the task, and the task is `working` again once the client answers.
///
/// # Errors
/// As [`Peer::request`], or [`SessionError::Rejected`] when the task ends first.
pub(crate) async fn ask<P: Serialize, R: DeserializeOwned>(
    entry: &TaskEntry,
    peer: &Peer,
    method: &str,
    params: &P,
) -> Result<R, SessionError> {
    let codec = |e: serde_json::Error| SessionError::Codec {
        method: method.into(),
        detail: e.to_string(),
    };
    let mut value = serde_json::to_value(params).map_err(codec)?;
    if let serde_json::Value::Object(map) = &mut value {
        let meta = map
            .entry("_meta")
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        if let serde_json::Value::Object(meta) = meta {
            meta.insert(
                RELATED_TASK_KEY.to_owned(),
                serde_json::json!({ "taskId": entry.id }),
            );
        }
    }
    let raw = RawValue::from_string(value.to_string()).map_err(codec)?;
    if let Some(task) = entry.set_live_status(TaskStatus::InputRequired) {
        notify_status(peer, &task).await;
    }
    let mut state = entry.subscribe();
    let waited = state
        .wait_for(|s| s.route.is_some() || s.status.is_terminal())
        .await
        .map(|s| s.route.clone());
    let Ok(Some(route)) = waited else {
        return Err(SessionError::Rejected {
            method: method.into(),
            error: ErrorObject::internal(format!(
                "task {} ended before the client answered",
                entry.id
            )),
        });
    };
    let answer = peer
        .with_related(route)
        .request_raw(method, Some(raw), RequestOptions::new())
        .await;
    if let Some(task) = entry.set_live_status(TaskStatus::Working) {
        notify_status(peer, &task).await;
    }
    serde_json::from_str(answer?.get()).map_err(codec)
}
