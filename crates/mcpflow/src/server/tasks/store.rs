//! The task store: every task a server holds, bounded in number and in the bytes of
//! the results it keeps, each bound to its owner (the connection that created it) and
//! removed when its time to live runs out.
//!
//! It knows statuses, outcomes and where a task's requests to the client travel, not
//! how any protocol era spells them: the 2025-11-25 methods read it through
//! [`TaskEntry::snapshot`], and the 2026-07-28 extension (`ttlMs`, `tasks/update`) can
//! read the same entries.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpflow_protocol::mrtr::InputRequests;
use mcpflow_protocol::tasks::{Task, TaskStatus};
use mcpflow_protocol::{ErrorCode, ErrorObject, RequestId};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use super::TaskLimits;
use super::clock::now_iso8601;
use crate::session::RequestCancel;

/// Who may see a task.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum TaskOwner {
    /// The connection (or HTTP session) that created it (2025-11-25).
    Connection(u64),
    /// The authorized principal that created it ([`Principal::owner_key`]), 2026-07-28.
    ///
    /// [`Principal::owner_key`]: crate::server::Principal::owner_key
    Principal(Arc<str>),
    /// Anyone who holds its id: a 2026-07-28 task created without authorization, which
    /// must outlive the per-request call that created it.
    Anyone,
}

/// How a task ended, as its underlying request would have answered.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    /// The result's JSON text.
    Result(Arc<str>),
    /// A JSON-RPC error.
    Error(ErrorObject),
}

/// What changes over a task's life.
#[derive(Clone, Debug)]
pub(crate) struct TaskState {
    pub(crate) status: TaskStatus,
    pub(crate) message: Option<String>,
    pub(crate) updated_at: String,
    /// Set once, with the terminal status.
    pub(crate) outcome: Option<Outcome>,
    /// The `tasks/result` request now waiting, whose stream carries the task's
    /// requests to the client.
    pub(crate) route: Option<RequestId>,
    /// 2026-07-28: the input requests not answered yet, keyed as `tasks/get` shows them.
    pub(crate) inputs: InputRequests,
    /// 2026-07-28: answers `tasks/update` delivered, until their input call takes them.
    pub(crate) answers: BTreeMap<String, Value>,
}

/// One task.
#[derive(Debug)]
pub(crate) struct TaskEntry {
    pub(crate) id: String,
    owner: TaskOwner,
    /// Creation order, for listing and cursors.
    seq: u64,
    created_at: String,
    ttl: Duration,
    poll_interval: Duration,
    /// When the store forgets the task, on tokio's clock.
    pub(crate) expires: Instant,
    /// The handler's cancellation: tripped by `tasks/cancel`, expiry or close.
    pub(crate) cancel: Arc<RequestCancel>,
    state: watch::Sender<TaskState>,
    /// Held while the task's record is written to a fleet's store, so that the last
    /// write carries the last state.
    pub(crate) mirrored: tokio::sync::Mutex<()>,
    /// The trace context of the request that created the task, which the spans of
    /// later requests about it link to.
    pub(crate) origin: std::sync::OnceLock<String>,
}

impl TaskEntry {
    /// The task as the 2025-11-25 methods show it.
    pub(crate) fn snapshot(&self) -> Task {
        let state = self.state.borrow();
        Task {
            task_id: self.id.clone(),
            status: state.status,
            status_message: state.message.clone(),
            created_at: self.created_at.clone(),
            last_updated_at: state.updated_at.clone(),
            ttl: Some(duration_ms(self.ttl)),
            poll_interval: Some(duration_ms(self.poll_interval)),
            ..Task::default()
        }
    }

    /// The task as 2026-07-28 shows it, with what its status calls for.
    pub(crate) fn detailed(&self) -> mcpflow_protocol::tasks2026::DetailedTask {
        use mcpflow_protocol::tasks2026::{DetailedTask, Task as PerRequestTask};
        let state = self.state.borrow();
        let mut detailed = DetailedTask {
            task: PerRequestTask {
                task_id: self.id.clone(),
                status: state.status,
                status_message: state.message.clone(),
                created_at: self.created_at.clone(),
                last_updated_at: state.updated_at.clone(),
                ttl_ms: Some(duration_ms(self.ttl)),
                poll_interval_ms: Some(duration_ms(self.poll_interval)),
                meta: None,
            },
            ..DetailedTask::default()
        };
        match (state.status, &state.outcome) {
            (TaskStatus::InputRequired, _) if !state.inputs.is_empty() => {
                detailed.input_requests = Some(state.inputs.clone());
            }
            (TaskStatus::Completed, Some(Outcome::Result(text))) => {
                // Written by this server from a tool result, so it reads back.
                detailed.result = serde_json::from_str(text).ok();
            }
            (TaskStatus::Failed, Some(Outcome::Error(error))) => {
                detailed.error = Some(error.clone());
            }
            _ => {}
        }
        detailed
    }

    /// Modify the state; `true` (and watchers woken) when `change` says it changed.
    pub(crate) fn modify(&self, change: impl FnOnce(&mut TaskState) -> bool) -> bool {
        self.state.send_if_modified(change)
    }

    /// Who may see the task.
    pub(crate) fn owner(&self) -> &TaskOwner {
        &self.owner
    }

    pub(crate) fn status(&self) -> TaskStatus {
        self.state.borrow().status
    }

    /// Watch the task's state change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<TaskState> {
        self.state.subscribe()
    }

    /// Move a live task to `status` (`working` or `input_required`); the new
    /// snapshot when it changed. Terminal tasks never change.
    pub(crate) fn set_live_status(&self, status: TaskStatus) -> Option<Task> {
        let changed = self.state.send_if_modified(|s| {
            if s.status.is_terminal() || s.status == status {
                return false;
            }
            s.status = status;
            s.updated_at = now_iso8601();
            true
        });
        changed.then(|| self.snapshot())
    }

    /// Route the task's requests to the client through the `tasks/result` request `id`.
    pub(crate) fn set_route(&self, id: RequestId) {
        self.state.send_modify(|s| s.route = Some(id));
    }

    /// Stop routing through `id` (its `tasks/result` ended).
    pub(crate) fn clear_route(&self, id: &RequestId) {
        self.state.send_if_modified(|s| {
            let ours = s.route.as_ref() == Some(id);
            if ours {
                s.route = None;
            }
            ours
        });
    }

    fn result_bytes(&self) -> usize {
        match &self.state.borrow().outcome {
            Some(Outcome::Result(text)) => text.len(),
            _ => 0,
        }
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Every task of a server.
#[derive(Debug)]
pub(crate) struct TaskStore {
    limits: TaskLimits,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    tasks: HashMap<String, Arc<TaskEntry>>,
    next_seq: u64,
    result_bytes: usize,
}

impl Held {
    /// Make room for a new task by forgetting the oldest finished one before its time
    /// to live ends; `false` when every task held is still running.
    fn evict_oldest_finished(&mut self) -> bool {
        let oldest = self
            .tasks
            .values()
            .filter(|e| e.status().is_terminal())
            .min_by_key(|e| e.seq)
            .cloned();
        let Some(entry) = oldest else {
            return false;
        };
        self.tasks.remove(&entry.id);
        self.result_bytes = self.result_bytes.saturating_sub(entry.result_bytes());
        true
    }
}

impl TaskStore {
    pub(crate) fn new(limits: TaskLimits) -> TaskStore {
        TaskStore {
            limits,
            held: Mutex::default(),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many tasks the store holds, and the bytes of their kept results.
    pub(crate) fn usage(&self) -> (usize, usize) {
        let held = self.held();
        (held.tasks.len(), held.result_bytes)
    }

    /// A new `working` task for `owner`, living `ttl_ms` (capped by the limits; the
    /// default when absent).
    ///
    /// # Errors
    /// `-32603` with `data.reason = "tasks_full"` when the store holds its maximum.
    pub(crate) fn create(
        &self,
        owner: TaskOwner,
        ttl_ms: Option<u64>,
    ) -> Result<Arc<TaskEntry>, ErrorObject> {
        self.create_with(owner, ttl_ms, Arc::default())
    }

    /// [`create`](Self::create), for a handler already running with `cancel`.
    pub(crate) fn create_with(
        &self,
        owner: TaskOwner,
        ttl_ms: Option<u64>,
        cancel: Arc<RequestCancel>,
    ) -> Result<Arc<TaskEntry>, ErrorObject> {
        let ttl = ttl_ms
            .map_or(self.limits.default_ttl, Duration::from_millis)
            .min(self.limits.max_ttl);
        let id = new_task_id()?;
        let now = now_iso8601();
        let mut held = self.held();
        if held.tasks.len() >= self.limits.max_tasks && !held.evict_oldest_finished() {
            return Err(ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "this server holds its maximum of {} tasks, all of them running; retry once some finish",
                    self.limits.max_tasks
                ),
            )
            .with_data(serde_json::json!({ "reason": "tasks_full" })));
        }
        let seq = held.next_seq;
        held.next_seq += 1;
        let entry = Arc::new(TaskEntry {
            id: id.clone(),
            owner,
            seq,
            created_at: now.clone(),
            ttl,
            poll_interval: self.limits.poll_interval,
            expires: Instant::now() + ttl,
            cancel,
            state: watch::Sender::new(TaskState {
                status: TaskStatus::Working,
                message: None,
                updated_at: now,
                outcome: None,
                route: None,
                inputs: InputRequests::new(),
                answers: BTreeMap::new(),
            }),
            mirrored: tokio::sync::Mutex::new(()),
            origin: std::sync::OnceLock::new(),
        });
        held.tasks.insert(id, entry.clone());
        Ok(entry)
    }

    /// `owner`'s task `id`.
    ///
    /// # Errors
    /// `-32602` when there is none: unknown, expired, or another owner's.
    pub(crate) fn get(&self, owner: &TaskOwner, id: &str) -> Result<Arc<TaskEntry>, ErrorObject> {
        self.held()
            .tasks
            .get(id)
            .filter(|e| e.owner == *owner && Instant::now() < e.expires)
            .cloned()
            .ok_or_else(|| ErrorObject::invalid_params(format!("unknown or expired task: {id}")))
    }

    /// Task `id`, whoever owns it, unless expired.
    pub(crate) fn find(&self, id: &str) -> Option<Arc<TaskEntry>> {
        self.held()
            .tasks
            .get(id)
            .filter(|e| Instant::now() < e.expires)
            .cloned()
    }

    /// A page of `owner`'s tasks, oldest first, after `cursor`, and the next cursor.
    ///
    /// # Errors
    /// `-32602` for a cursor this store did not hand out.
    pub(crate) fn list(
        &self,
        owner: &TaskOwner,
        cursor: Option<&str>,
        page: usize,
    ) -> Result<(Vec<Task>, Option<String>), ErrorObject> {
        let after = match cursor {
            None => None,
            Some(c) => Some(
                c.parse::<u64>()
                    .map_err(|_| ErrorObject::invalid_params(format!("invalid cursor {c:?}")))?,
            ),
        };
        let now = Instant::now();
        let mut mine: Vec<Arc<TaskEntry>> = self
            .held()
            .tasks
            .values()
            .filter(|e| e.owner == *owner && now < e.expires && after.is_none_or(|a| e.seq > a))
            .cloned()
            .collect();
        mine.sort_by_key(|e| e.seq);
        let more = mine.len() > page;
        mine.truncate(page);
        let next = more
            .then(|| mine.last().map(|e| e.seq.to_string()))
            .flatten();
        Ok((mine.iter().map(|e| e.snapshot()).collect(), next))
    }

    /// End a live task with `outcome`: `completed`, or `failed` for an error or an
    /// `isError` result. A result beyond the store's byte budget is not kept: the task
    /// fails saying so. The new snapshot, or `None` when the task had already ended.
    pub(crate) fn finish(
        &self,
        entry: &TaskEntry,
        outcome: Result<(String, bool), ErrorObject>,
    ) -> Option<Task> {
        let (outcome, failed, message) = match outcome {
            Ok((text, is_error)) => {
                let mut held = self.held();
                if held.result_bytes + text.len() > self.limits.max_result_bytes {
                    let why = format!(
                        "the result ({} bytes) does not fit in the {} bytes this server keeps for task results",
                        text.len(),
                        self.limits.max_result_bytes
                    );
                    (Outcome::Error(ErrorObject::internal(&why)), true, Some(why))
                } else {
                    held.result_bytes += text.len();
                    (Outcome::Result(text.into()), is_error, None)
                }
            }
            Err(error) => {
                let message = Some(error.message.clone());
                (Outcome::Error(error), true, message)
            }
        };
        let kept = match &outcome {
            Outcome::Result(text) => text.len(),
            Outcome::Error(_) => 0,
        };
        let status = if failed {
            TaskStatus::Failed
        } else {
            TaskStatus::Completed
        };
        if self.end(entry, status, message, outcome) {
            Some(entry.snapshot())
        } else {
            self.held().result_bytes -= kept;
            None
        }
    }

    /// Cancel a live task: `cancelled` before this returns, and the handler's token
    /// tripped.
    ///
    /// # Errors
    /// `-32602` when the task has already ended.
    pub(crate) fn cancel(&self, entry: &TaskEntry) -> Result<Task, ErrorObject> {
        let outcome = Outcome::Error(ErrorObject::internal("the task was cancelled"));
        let message = Some("cancelled by the client".to_owned());
        if !self.end(entry, TaskStatus::Cancelled, message, outcome) {
            return Err(ErrorObject::invalid_params(format!(
                "task {} has already ended ({:?}); it cannot be cancelled",
                entry.id,
                entry.status()
            )));
        }
        entry.cancel.cancel();
        Ok(entry.snapshot())
    }

    /// Move a live task to the terminal `status`; `false` when it had already ended.
    fn end(
        &self,
        entry: &TaskEntry,
        status: TaskStatus,
        message: Option<String>,
        outcome: Outcome,
    ) -> bool {
        entry.state.send_if_modified(|s| {
            if s.status.is_terminal() {
                return false;
            }
            s.status = status;
            s.message = message;
            s.updated_at = now_iso8601();
            s.outcome = Some(outcome);
            true
        })
    }

    /// Forget a task and free its result.
    pub(crate) fn remove(&self, entry: &TaskEntry) {
        let bytes = entry.result_bytes();
        let mut held = self.held();
        if held.tasks.remove(&entry.id).is_some() {
            held.result_bytes = held.result_bytes.saturating_sub(bytes);
            // A table sized for a burst would otherwise stay that size.
            if held.tasks.capacity() > 64 && held.tasks.len() < held.tasks.capacity() / 4 {
                held.tasks.shrink_to_fit();
            }
        }
    }
}

/// 128 bits from the operating system's CSPRNG as 32 hex digits: task ids are the only
/// handle on a task, so they must never be guessable.
fn new_task_id() -> Result<String, ErrorObject> {
    use std::fmt::Write;
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorObject::internal(format!("no entropy for a task id: {e}")))?;
    Ok(bytes.iter().fold(String::with_capacity(32), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}
