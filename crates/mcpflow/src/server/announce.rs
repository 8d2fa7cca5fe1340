//! What a running server changes and announces: tools, resources and prompts added or
//! removed at run time, and the notifications that reach every connection (or, for a
//! resource update, those subscribed to it), sent from anywhere.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, PoisonError, Weak};

use mcpflow_protocol::methods::method;
use mcpflow_protocol::prompts::Prompt;
use mcpflow_protocol::resources::Resource;
use mcpflow_protocol::{
    CallToolResult, ErrorObject, GetPromptResult, JsonObject, ReadResourceResult, Tool,
};

use super::bus::Announcement;
use super::connection::Connection;
use super::registry::{PromptEntry, Registry, ResourceEntry, ToolEntry};
use super::{Server, ServerContext, ToolError};
use crate::session::Peer;

impl Server {
    fn update_registry(&self, change: impl FnOnce(&mut Registry)) {
        let mut registry = self
            .inner
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        change(&mut registry);
    }

    /// Add (or replace) a tool at run time and notify connected clients
    /// (`notifications/tools/list_changed`).
    pub async fn add_tool<F, Fut>(&self, tool: Tool, handler: F)
    where
        F: Fn(JsonObject, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        let entry = ToolEntry::new(tool, Arc::new(move |args, cx| Box::pin(handler(args, cx))));
        self.update_registry(|r| r.upsert_tool(entry));
        self.broadcast(method::TOOL_LIST_CHANGED).await;
    }

    /// Remove a tool and notify connected clients. Returns whether it existed.
    pub async fn remove_tool(&self, name: &str) -> bool {
        self.remove(method::TOOL_LIST_CHANGED, |r| {
            remove_where(&mut r.tools, |t| t.tool.name == name)
        })
        .await
    }

    /// Add (or replace, by URI) a resource at run time and notify connected clients
    /// (`notifications/resources/list_changed`). A server built without resources
    /// declares the `resources` capability only to clients that connect afterwards.
    pub async fn add_resource<F, Fut>(&self, resource: Resource, handler: F)
    where
        F: Fn(String, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        let entry = ResourceEntry {
            resource,
            handler: Arc::new(move |uri, _vars, cx| Box::pin(handler(uri, cx))),
        };
        self.update_registry(|r| {
            remove_where(&mut r.resources, |e| e.resource.uri == entry.resource.uri);
            r.resources.push(entry);
        });
        self.broadcast(method::RESOURCE_LIST_CHANGED).await;
    }

    /// Remove a resource by URI and notify connected clients. Returns whether it existed.
    pub async fn remove_resource(&self, uri: &str) -> bool {
        self.remove(method::RESOURCE_LIST_CHANGED, |r| {
            remove_where(&mut r.resources, |e| e.resource.uri == uri)
        })
        .await
    }

    /// Add (or replace, by name) a prompt at run time and notify connected clients
    /// (`notifications/prompts/list_changed`).
    pub async fn add_prompt<F, Fut>(&self, prompt: Prompt, handler: F)
    where
        F: Fn(BTreeMap<String, String>, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        let entry = PromptEntry {
            prompt,
            handler: Arc::new(move |args, cx| Box::pin(handler(args, cx))),
        };
        self.update_registry(|r| {
            remove_where(&mut r.prompts, |e| e.prompt.name == entry.prompt.name);
            r.prompts.push(entry);
        });
        self.broadcast(method::PROMPT_LIST_CHANGED).await;
    }

    /// Remove a prompt by name and notify connected clients. Returns whether it existed.
    pub async fn remove_prompt(&self, name: &str) -> bool {
        self.remove(method::PROMPT_LIST_CHANGED, |r| {
            remove_where(&mut r.prompts, |e| e.prompt.name == name)
        })
        .await
    }

    /// Apply `remove` to the registry; when it removed something, announce
    /// `notification`. Whether it removed something.
    async fn remove(&self, notification: &str, remove: impl FnOnce(&mut Registry) -> bool) -> bool {
        let mut removed = false;
        self.update_registry(|r| removed = remove(r));
        if removed {
            self.broadcast(notification).await;
        }
        removed
    }

    /// Notify every connected client that the tool list changed.
    pub async fn notify_tool_list_changed(&self) {
        self.broadcast(method::TOOL_LIST_CHANGED).await;
    }

    /// Notify every connected client that the prompt list changed.
    pub async fn notify_prompt_list_changed(&self) {
        self.broadcast(method::PROMPT_LIST_CHANGED).await;
    }

    /// Notify every connected client that the resource list changed.
    pub async fn notify_resource_list_changed(&self) {
        self.broadcast(method::RESOURCE_LIST_CHANGED).await;
    }

    /// Tell every client subscribed to `uri` that the resource changed
    /// (`notifications/resources/updated`), from anywhere: a file watcher, another
    /// task. Clients that did not subscribe to `uri` are not told.
    pub async fn notify_resource_updated(&self, uri: &str) {
        self.announce(Announcement {
            method: method::RESOURCE_UPDATED.to_owned(),
            uri: Some(uri.to_owned()),
            task: None,
        })
        .await;
    }

    /// Deliver an announcement to this instance's listen streams and connections: a
    /// resource update to those subscribed to its resource, a list change to every
    /// handshake-era connection and the listen streams that asked for it.
    pub(super) async fn deliver(&self, announcement: &Announcement) {
        let (notification, uri) = (announcement.method.as_str(), announcement.uri.as_deref());
        if let Some(task) = &announcement.task {
            let owner = match &task.owner {
                Some(key) => super::tasks::TaskOwner::Principal(key.as_str().into()),
                None => super::tasks::TaskOwner::Anyone,
            };
            let params = task.params.clone();
            self.inner
                .listeners
                .announce_task(notification, &task.id, &owner, params)
                .await;
            return;
        }
        self.inner.listeners.announce(notification, uri).await;
        for (peer, connection) in self.connections() {
            let Some(connection) = connection.upgrade() else {
                continue;
            };
            if let Some(uri) = uri {
                let _ = connection.notify_resource_updated(&peer, uri).await;
            } else if connection.takes_broadcasts() {
                let _ = peer.notify_raw::<()>(notification, None).await;
            }
        }
    }

    /// The connections still open.
    fn connections(&self) -> Vec<(Peer, Weak<Connection>)> {
        let mut connections = self
            .inner
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        connections.prune();
        connections.open.clone()
    }

    /// Announce a list change to handshake-era connections and to the listen streams
    /// that asked for it, on every instance when there is a bus.
    async fn broadcast(&self, notification: &str) {
        self.announce(Announcement {
            method: notification.to_owned(),
            uri: None,
            task: None,
        })
        .await;
    }
}

/// Remove the items `matches` picks; whether there were any.
fn remove_where<T>(items: &mut Vec<T>, matches: impl Fn(&T) -> bool) -> bool {
    let before = items.len();
    items.retain(|item| !matches(item));
    items.len() != before
}

/// The connections a server announces to. Closed ones are dropped when the list has
/// doubled since the last pruning, so adding one costs O(1) amortized however many are
/// open.
#[derive(Default)]
pub(super) struct Connections {
    open: Vec<(Peer, Weak<Connection>)>,
    prune_at: usize,
}

impl Connections {
    /// Track one more connection.
    pub(super) fn push(&mut self, peer: Peer, connection: Weak<Connection>) {
        if self.open.len() >= self.prune_at {
            self.prune();
        }
        self.open.push((peer, connection));
    }

    fn prune(&mut self) {
        self.open.retain(|(peer, _)| !peer.is_closed());
        self.prune_at = (self.open.len() * 2).max(64);
    }
}
