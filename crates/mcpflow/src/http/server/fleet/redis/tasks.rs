//! [`SharedTaskStore`] and [`ConsumedStates`] over the same Redis: a task's record
//! under `{p}:task:{id}`, the commands for an instance on its list `{p}:tasks:{n}`, a
//! consumed single-use `requestState` token under `{p}:used:{token}`.

use std::time::Duration;

use super::{RedisSessionStore, unavailable};
use crate::http::server::fleet::SessionStore;
use crate::server::fleet::{
    ConsumedStates, DeliverTaskCommand, SharedTaskStore, StoreError, TaskCommand, TaskRecord,
};
use crate::session::BoxFuture;

impl SharedTaskStore for RedisSessionStore {
    fn node(&self) -> u32 {
        self.node
    }

    fn put_task(
        &self,
        id: &str,
        record: &TaskRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.set_json(self.task_key(id), record, ttl)
    }

    fn get_task(&self, id: &str) -> BoxFuture<'static, Result<Option<TaskRecord>, StoreError>> {
        self.get_json(self.task_key(id), None)
    }

    fn node_alive(&self, node: u32) -> BoxFuture<'static, Result<bool, StoreError>> {
        self.is_alive(node)
    }

    fn send_task_command(
        &self,
        node: u32,
        command: TaskCommand,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.push_json(self.task_commands_key(node), &command)
    }

    fn deliver_task_commands(&self, deliver: DeliverTaskCommand) {
        self.take_json(self.task_commands_key(self.node), deliver);
    }
}

impl ConsumedStates for RedisSessionStore {
    fn consume(&self, token: &str, ttl: Duration) -> BoxFuture<'static, Result<bool, StoreError>> {
        let mut conn = self.conn.clone();
        let key = format!("{}:used:{token}", self.prefix);
        Box::pin(async move {
            // Set only when absent: the first to consume it gets OK, every later one nil.
            let set: Option<String> = redis::cmd("SET")
                .arg(key)
                .arg(1)
                .arg("NX")
                .arg("PX")
                .arg(super::millis(ttl))
                .query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(set.is_some())
        })
    }
}
