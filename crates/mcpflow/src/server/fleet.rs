//! What the instances of one server share besides announcements ([`bus`](super::bus)):
//! the 2026-07-28 tasks they run, and the single-use `requestState` they consumed.
//!
//! With a [`SharedTaskStore`] ([`ServerBuilder::shared_tasks`]), a task's record (the
//! instance running it, its owner, and the task as `tasks/get` shows it) is written
//! before `CreateTaskResult` goes out and again at every change of the task. Any
//! instance then answers `tasks/get` from the record; `tasks/update` and `tasks/cancel`
//! on another instance are sent to the one running the task; a task whose instance is
//! gone reads as `failed`. The HTTP server's session store
//! (`http::server::fleet::RedisSessionStore`, feature `redis`) is one.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{ServerBuilder, ServerInner};
use crate::session::BoxFuture;

/// Why a shared store could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be reached or refused the command.
    #[error("the shared store is unavailable: {detail}")]
    Unavailable {
        /// What failed.
        detail: String,
    },
    /// The store holds something this version cannot read.
    #[error("the shared store holds an unreadable entry: {detail}")]
    Corrupt {
        /// What could not be read.
        detail: String,
    },
}

/// What a store keeps of one task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The number of the instance running it.
    pub node: u32,
    /// Who may see it: the owner key of the principal that created it, or `None` for
    /// anyone who holds its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The task as `tasks/get` answers it (a 2026-07-28 `DetailedTask`).
    pub task: Box<RawValue>,
}

/// What one instance asks of the instance running a task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "camelCase")]
#[non_exhaustive]
pub enum TaskCommand {
    /// `tasks/update`: answers to the task's input requests, by key.
    Update {
        /// The task.
        id: String,
        /// `inputResponses`, as the client sent them.
        answers: serde_json::Map<String, serde_json::Value>,
    },
    /// `tasks/cancel`.
    Cancel {
        /// The task.
        id: String,
    },
}

/// What a store does with a command sent to this instance.
pub type DeliverTaskCommand = Arc<dyn Fn(TaskCommand) -> BoxFuture<'static, ()> + Send + Sync>;

/// The tasks of a fleet, shared: records any instance reads, and commands for the
/// instance running a task. See the [module documentation](self).
pub trait SharedTaskStore: Send + Sync + fmt::Debug + 'static {
    /// This instance's number, unique among the live instances.
    fn node(&self) -> u32;

    /// Save task `id`'s record, expiring after `ttl`.
    fn put_task(
        &self,
        id: &str,
        record: &TaskRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>>;

    /// Task `id`'s record; `None` when unknown or expired.
    fn get_task(&self, id: &str) -> BoxFuture<'static, Result<Option<TaskRecord>, StoreError>>;

    /// Whether instance `node` is alive.
    fn node_alive(&self, node: u32) -> BoxFuture<'static, Result<bool, StoreError>>;

    /// Send `command` to instance `node`.
    fn send_task_command(
        &self,
        node: u32,
        command: TaskCommand,
    ) -> BoxFuture<'static, Result<(), StoreError>>;

    /// Start handing the commands sent to this instance to `deliver`; called once, when
    /// the server is built.
    fn deliver_task_commands(&self, deliver: DeliverTaskCommand);
}

/// The single-use `requestState` tokens a fleet consumed, so that a state a handler
/// made single-use ([`ServerContext::single_use_state`]) is accepted once across every
/// instance.
///
/// [`ServerContext::single_use_state`]: crate::server::ServerContext::single_use_state
pub trait ConsumedStates: Send + Sync + fmt::Debug + 'static {
    /// Consume `token`, remembering it for `ttl`: `true` the first time, `false` after.
    fn consume(&self, token: &str, ttl: Duration) -> BoxFuture<'static, Result<bool, StoreError>>;
}

impl ServerBuilder {
    /// Remember consumed single-use `requestState` tokens in `store`, shared by every
    /// instance behind the endpoint. Default: in this process, which is enough for one
    /// instance.
    pub fn consumed_states(mut self, store: Arc<dyn ConsumedStates>) -> Self {
        self.consumed_states = Some(store);
        self
    }

    /// Share this server's 2026-07-28 tasks with the other instances behind its endpoint
    /// through `store` (see [`server::fleet`](crate::server::fleet)). Default: none, a task is known
    /// to the instance that runs it only.
    pub fn shared_tasks(mut self, store: Arc<dyn SharedTaskStore>) -> Self {
        self.shared_tasks = Some(store);
        self
    }
}

/// Hand the commands sent to this instance to `server`'s tasks, holding it weakly.
pub(super) fn attach(store: &Arc<dyn SharedTaskStore>, server: &Arc<ServerInner>) {
    let server: Weak<ServerInner> = Arc::downgrade(server);
    store.deliver_task_commands(Arc::new(move |command| {
        let server = server.upgrade().map(|inner| super::Server { inner });
        Box::pin(async move {
            if let Some(server) = server {
                super::tasks::shared::apply(&server, command).await;
            }
        })
    }));
}
