//! Tasks in 2026-07-28: the `io.modelcontextprotocol/tasks` extension.
//!
//! A `tools/call` of a tool with task support, from a request that declared the
//! extension, starts as an ordinary 2026-07-28 request: input its handler asks for
//! first goes back as `input_required` rounds of the call (input before a task is
//! resolved synchronously, as SEP-2663 advises). As soon as a poll of the handler ends
//! waiting on anything else (a timer, I/O, or
//! [`ServerContext::continue_as_task`]), the server makes the call a task: the task is
//! stored first, then the client gets `resultType: "task"`, and the handler goes on in
//! the background. A handler that finishes on its first poll answers directly (the
//! spec's immediate-result shortcut). A tool whose task support is `required` called
//! without the extension is refused with -32021.
//!
//! Inside the task, the handler's input calls park the task `input_required` with
//! `inputRequests` on `tasks/get`; `tasks/update` delivers the answers. The task
//! belongs to the request's principal ([`Principal::owner_key`]) when the HTTP server
//! authorizes requests, and otherwise to anyone who holds its id: a per-request (2026-07-28) request
//! has no connection to own it, and the id (128 random bits) is then the only
//! credential, as bearer capability. Serve tasks behind authorization when task results
//! are private.
//!
//! [`ServerContext::continue_as_task`]: crate::server::ServerContext::continue_as_task
//! [`Principal::owner_key`]: crate::server::Principal::owner_key

use std::sync::{Arc, OnceLock};
use std::task::Poll;

use mcpflow_protocol::mrtr::InputRequest;
use mcpflow_protocol::tasks::TaskStatus;
use mcpflow_protocol::tasks2026::{
    CreateTaskResult, TASKS_EXTENSION, TASKS_NOTIFICATION, UpdateTaskParams,
};
use mcpflow_protocol::tools::TaskSupport;
use mcpflow_protocol::{ClientCapabilities, EmptyResult, ErrorObject};
use serde_json::Value;

use super::clock::now_iso8601;
use super::store::{TaskEntry, TaskOwner};
use crate::error::SessionError;
use crate::server::bus::{Announcement, TaskNotice};
use crate::server::fleet::TaskCommand;
use crate::server::methods::required;
use crate::server::per_request::mrtr::{self, Round};
use crate::server::{Server, ServerContext};
use crate::session::{BoxFuture, Reply, RequestCancel, RequestHead};

/// A `tools/call` that may become a task: the cancellation its handler runs with from
/// the start (so the task keeps it once the request is gone), and the task once made.
#[derive(Debug, Default)]
pub(crate) struct Escalation {
    pub(crate) cancel: Arc<RequestCancel>,
    task: OnceLock<Arc<TaskEntry>>,
}

impl Escalation {
    /// The task the call became, once it did.
    pub(crate) fn task(&self) -> Option<&Arc<TaskEntry>> {
        self.task.get()
    }
}

/// Whether the request declared the tasks extension.
pub(crate) fn declared(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// -32021 naming the extension.
fn undeclared() -> ErrorObject {
    crate::server::per_request::missing_capability(
        serde_json::json!({ "extensions": { TASKS_EXTENSION: {} } }),
        &format!("extension `{TASKS_EXTENSION}`"),
    )
}

/// Whether this 2026-07-28 `tools/call` may become a task; -32021 for a tool that runs
/// only as a task called without the extension.
pub(crate) fn candidate(
    server: &Server,
    head: &RequestHead,
    caps: &ClientCapabilities,
) -> Result<Option<Arc<Escalation>>, ErrorObject> {
    let Some(name) = head.name.get() else {
        return Ok(None);
    };
    match server.registry().task_support(name) {
        Some(TaskSupport::Optional | TaskSupport::Required) if declared(caps) => {
            Ok(Some(Arc::default()))
        }
        Some(TaskSupport::Required) => Err(undeclared()),
        _ => Ok(None),
    }
}

/// Add the extension to what `server/discover` declares, in place of 2025-11-25's
/// `tasks` capability.
pub(crate) fn advertise(caps: &mut mcpflow_protocol::ServerCapabilities) {
    if caps.tasks.take().is_some() {
        caps.extensions.get_or_insert_default().insert(
            TASKS_EXTENSION.to_owned(),
            Value::Object(Default::default()),
        );
    }
}

/// Run one round of a call that may become a task: as [`mrtr::run`], except that a poll
/// ending without input asked makes the call a task.
pub(crate) async fn run(
    server: &Server,
    owner: TaskOwner,
    round: &Arc<Round>,
    escalation: &Arc<Escalation>,
    mut answer: BoxFuture<'static, Result<Reply, ErrorObject>>,
) -> mrtr::Outcome {
    let asked = std::future::poll_fn(|cx| match answer.as_mut().poll(cx) {
        Poll::Ready(done) => Poll::Ready(Err(done)),
        Poll::Pending => Poll::Ready(Ok(round.take_asked())),
    })
    .await;
    let asked = match asked {
        Err(done) => return mrtr::Outcome::Done(done),
        Ok(asked) => asked,
    };
    if !asked.is_empty() {
        // Input before the task: a round of the call itself.
        return mrtr::Outcome::InputRequired(round.input_required(asked));
    }
    let store = server.inner.tasks.clone();
    let entry = match store.create_with(owner, None, escalation.cancel.clone()) {
        Ok(entry) => entry,
        Err(e) => return mrtr::Outcome::Done(Err(e)),
    };
    // Set before the handler is polled again, so its next input call finds the task.
    let _ = escalation.task.set(entry.clone());
    // Polled within the call's server span.
    if let Some(origin) = crate::telemetry::current_traceparent() {
        let _ = entry.origin.set(origin);
    }
    // In a fleet, every instance must find the task before its creator learns of it.
    if let Err(e) = super::shared::mirror(server, &entry).await {
        entry.cancel.cancel();
        store.remove(&entry);
        return mrtr::Outcome::Done(Err(e));
    }
    let created = CreateTaskResult::new(entry.detailed().task);
    tokio::spawn(run_task(server.clone(), entry, answer));
    mrtr::Outcome::Task(created)
}

/// Drive a 2026-07-28 task: its handler until it ends, is cancelled or expires; then
/// keep its outcome until expiry. No connection bounds it.
async fn run_task(
    server: Server,
    entry: Arc<TaskEntry>,
    run: BoxFuture<'static, Result<Reply, ErrorObject>>,
) {
    let store = server.inner.tasks.clone();
    let expiry = tokio::time::sleep_until(entry.expires);
    tokio::pin!(expiry);
    let mut state = entry.subscribe();
    let outcome = tokio::select! {
        outcome = run => Some(outcome),
        () = &mut expiry => None,
        _ = state.wait_for(|s| s.status.is_terminal()) => None,
    };
    if let Some(outcome) = outcome {
        // 2026-07-28: a tool error still completes its task; only a JSON-RPC error fails it.
        let outcome = outcome.map(|reply| (reply.get().to_owned(), false));
        if store.finish(&entry, outcome).is_some() {
            notify(&server, &entry).await;
        }
    }
    expiry.await;
    entry.cancel.cancel();
    store.remove(&entry);
}

/// The task changed: its record in a fleet's store, then `notifications/tasks` with the
/// full task to the listen streams that asked for it.
pub(crate) async fn notify(server: &Server, entry: &TaskEntry) {
    // The state of this change, taken before the store's round trip lets the task move on.
    let params = serde_json::to_value(entry.detailed());
    if let Err(e) = super::shared::mirror(server, entry).await {
        tracing::warn!(task = %entry.id, error = %e.message, "the task's record in the shared store is behind");
    }
    let Ok(params) = params else {
        return;
    };
    // Through the bus, when there is one, to the listen streams of every instance.
    let owner = match entry.owner() {
        TaskOwner::Principal(key) => Some(key.to_string()),
        TaskOwner::Anyone | TaskOwner::Connection(_) => None,
    };
    if server.inner.bus.is_some() && !matches!(entry.owner(), TaskOwner::Connection(_)) {
        let notice = TaskNotice {
            id: entry.id.clone(),
            owner,
            params,
        };
        server
            .announce(Announcement::task(TASKS_NOTIFICATION, notice))
            .await;
        return;
    }
    server
        .inner
        .listeners
        .announce_task(TASKS_NOTIFICATION, &entry.id, entry.owner(), params)
        .await;
}

/// An input call of a handler running as a task: park the task `input_required` with
/// `request` under `key`, and wait for `tasks/update` to answer it.
///
/// # Errors
/// [`SessionError::Rejected`] when the task ends first.
pub(crate) async fn ask(
    server: &Server,
    entry: &Arc<TaskEntry>,
    key: String,
    request: InputRequest,
) -> Result<Value, SessionError> {
    let method = request.method().to_owned();
    let asked = entry.modify(|s| {
        if s.status.is_terminal() {
            return false;
        }
        s.inputs.insert(key.clone(), request);
        s.status = TaskStatus::InputRequired;
        s.updated_at = now_iso8601();
        true
    });
    if asked {
        notify(server, entry).await;
    }
    let mut state = entry.subscribe();
    let answered = state
        .wait_for(|s| s.answers.contains_key(&key) || s.status.is_terminal())
        .await
        .is_ok_and(|s| s.answers.contains_key(&key));
    let mut answer = None;
    if answered {
        entry.modify(|s| {
            answer = s.answers.remove(&key);
            false
        });
    }
    answer.ok_or_else(|| SessionError::Rejected {
        method: method.into(),
        error: ErrorObject::internal(format!(
            "task {} ended before the client answered",
            entry.id
        )),
    })
}

/// Where the task a `tasks/get|update|cancel` names is: here, or (`Err` of its id) on
/// another instance of a fleet, for a request that declared the extension. -32021
/// without it, -32602 for a task unknown to this owner.
fn task_of(cx: &ServerContext) -> Result<Result<Arc<TaskEntry>, String>, ErrorObject> {
    if !declared(&cx.client_capabilities()) {
        return Err(undeclared());
    }
    let id = cx.request().head().task_id.required("taskId")?;
    match cx.server().inner.tasks.get(&cx.task_owner(), id) {
        Ok(entry) => {
            cx.request().operation().link_to(entry.origin.get());
            Ok(Ok(entry))
        }
        Err(_) if cx.server().inner.shared_tasks.is_some() => Ok(Err(id.clone())),
        Err(e) => Err(e),
    }
}

/// `tasks/get`: the task with its input requests, result or error.
pub(crate) async fn get(cx: ServerContext) -> Result<Reply, ErrorObject> {
    match task_of(&cx)? {
        Ok(entry) => cx.reply(entry.detailed()),
        Err(id) => cx.reply(super::shared::get(cx.server(), &cx.task_owner(), &id).await?),
    }
}

/// `tasks/update`: hand the answers to the input calls waiting for them; unknown and
/// already answered keys are ignored. An empty acknowledgement.
pub(crate) async fn update(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let place = task_of(&cx)?;
    let p: UpdateTaskParams = required(&cx)?;
    let mut answers = serde_json::Map::new();
    for (key, response) in p.input_responses {
        answers.insert(
            key,
            serde_json::to_value(response).map_err(ErrorObject::invalid_params)?,
        );
    }
    match place {
        Ok(entry) => {
            if super::shared::answer(&entry, answers) {
                notify(cx.server(), &entry).await;
            }
        }
        Err(id) => {
            let command = TaskCommand::Update {
                id: id.clone(),
                answers,
            };
            super::shared::send(cx.server(), &cx.task_owner(), &id, command).await?;
        }
    }
    cx.reply(EmptyResult::default())
}

/// `tasks/cancel`: cooperative; the same empty acknowledgement for a task that has
/// already ended.
pub(crate) async fn cancel(cx: ServerContext) -> Result<Reply, ErrorObject> {
    match task_of(&cx)? {
        Ok(entry) => {
            if cx.server().inner.tasks.cancel(&entry).is_ok() {
                notify(cx.server(), &entry).await;
            }
        }
        Err(id) => {
            let command = TaskCommand::Cancel { id: id.clone() };
            super::shared::send(cx.server(), &cx.task_owner(), &id, command).await?;
        }
    }
    cx.reply(EmptyResult::default())
}
