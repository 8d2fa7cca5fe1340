//! `subscriptions/listen` (2026-07-28): a long-lived request whose stream carries the
//! list changes and resource updates the client asked for, each tagged with the listen
//! request's id. It ends when the client cancels it (closing the HTTP stream, or
//! `notifications/cancelled` on stdio), when the connection ends (stdin closed), or gracefully with
//! a final result when the server ends it ([`Server::close_subscriptions`]).

use std::sync::{Arc, Mutex, PoisonError};

use mcpflow_protocol::meta2026::set_subscription_id;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use mcpflow_protocol::{ErrorObject, RequestId};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::server::methods::required;
use crate::server::tasks::TaskOwner;
use crate::server::{Server, ServerContext};
use crate::session::{Peer, Reply};

/// The open listen streams of a server.
#[derive(Debug, Default)]
pub(crate) struct Listeners {
    list: Mutex<Vec<Arc<Listener>>>,
}

#[derive(Debug)]
struct Listener {
    id: RequestId,
    /// Tagged with the listen request, so HTTP puts its messages on that stream.
    peer: Peer,
    filter: SubscriptionFilter,
    end: CancellationToken,
    /// Whose tasks it may hear about.
    task_owner: TaskOwner,
}

impl Listener {
    fn wants(&self, notification: &str, uri: Option<&str>) -> bool {
        let f = &self.filter;
        match notification {
            method::TOOL_LIST_CHANGED => f.tools_list_changed == Some(true),
            method::PROMPT_LIST_CHANGED => f.prompts_list_changed == Some(true),
            method::RESOURCE_LIST_CHANGED => f.resources_list_changed == Some(true),
            method::RESOURCE_UPDATED => f
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uri.is_some_and(|u| uris.iter().any(|s| s == u))),
            _ => false,
        }
    }
}

impl Listeners {
    fn open(&self) -> Vec<Arc<Listener>> {
        let mut list = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|l| !l.peer.is_closed() && !l.end.is_cancelled());
        list.clone()
    }

    fn remove(&self, listener: &Arc<Listener>) {
        self.list
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|l| !Arc::ptr_eq(l, listener));
    }

    /// Send `notification` (with `uri` for a resource update) to every stream that asked.
    pub(crate) async fn announce(&self, notification: &str, uri: Option<&str>) {
        for listener in self.open() {
            if !listener.wants(notification, uri) {
                continue;
            }
            let mut params = serde_json::Map::new();
            if let Some(uri) = uri {
                params.insert("uri".to_owned(), Value::from(uri));
            }
            let mut meta = None;
            set_subscription_id(&mut meta, &listener.id);
            if let Some(meta) = meta {
                params.insert("_meta".to_owned(), Value::Object(meta));
            }
            let _ = listener.peer.notify_raw(notification, Some(&params)).await;
        }
    }

    /// Send `notification` (params `task`, the task's full state) to every stream of
    /// `owner` that asked for task `id` (tasks extension).
    pub(crate) async fn announce_task(
        &self,
        notification: &str,
        id: &str,
        owner: &TaskOwner,
        mut task: Value,
    ) {
        for listener in self.open() {
            let wanted = (*owner == TaskOwner::Anyone || listener.task_owner == *owner)
                && listener
                    .filter
                    .task_ids
                    .as_ref()
                    .is_some_and(|ids| ids.iter().any(|t| t == id));
            if !wanted {
                continue;
            }
            if let Value::Object(params) = &mut task {
                let mut meta = None;
                set_subscription_id(&mut meta, &listener.id);
                if let Some(meta) = meta {
                    params.insert("_meta".to_owned(), Value::Object(meta));
                }
            }
            let _ = listener.peer.notify_raw(notification, Some(&task)).await;
        }
    }

    /// End every stream with its final result.
    pub(crate) fn close_all(&self) {
        for listener in self.open() {
            listener.end.cancel();
        }
    }
}

impl Server {
    /// End every open `subscriptions/listen` stream gracefully: each gets its final
    /// result (`resultType: "complete"` tagged with its subscription id). Clients may
    /// listen again afterwards.
    pub fn close_subscriptions(&self) {
        self.inner.listeners.close_all();
    }
}

/// The part of `requested` this server can honour; -32021 for task ids asked without
/// the tasks extension.
fn honoured(
    cx: &ServerContext,
    requested: &SubscriptionFilter,
) -> Result<SubscriptionFilter, ErrorObject> {
    let server = cx.server();
    let task_ids = requested.task_ids.clone().filter(|ids| !ids.is_empty());
    if task_ids.is_some() && !crate::server::tasks::per_request::declared(&cx.client_capabilities())
    {
        return Err(crate::server::per_request::missing_capability(
            serde_json::json!({ "extensions": { mcpflow_protocol::tasks2026::TASKS_EXTENSION: {} } }),
            "extension `io.modelcontextprotocol/tasks` (for `taskIds`)",
        ));
    }
    let caps = server.capabilities();
    let wanted =
        |asked: Option<bool>, offered: bool| (asked == Some(true) && offered).then_some(true);
    let resources = caps.resources.as_ref();
    Ok(SubscriptionFilter {
        tools_list_changed: wanted(requested.tools_list_changed, caps.tools.is_some()),
        prompts_list_changed: wanted(requested.prompts_list_changed, caps.prompts.is_some()),
        resources_list_changed: wanted(requested.resources_list_changed, resources.is_some()),
        resource_subscriptions: requested
            .resource_subscriptions
            .clone()
            .filter(|_| resources.is_some_and(|r| r.subscribe == Some(true))),
        task_ids,
        ..Default::default()
    })
}

/// Acknowledge, then stream until the stream ends.
pub(crate) async fn listen(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: SubscriptionsListenRequestParams = required(&cx)?;
    let server = cx.server().clone();
    let id = cx.request().id().clone();
    let filter = honoured(&cx, &p.notifications)?;
    let mut ack = SubscriptionsAcknowledgedNotificationParams {
        notifications: filter.clone(),
        ..Default::default()
    };
    set_subscription_id(&mut ack.meta, &id);
    let listener = Arc::new(Listener {
        id: id.clone(),
        peer: cx.peer().clone(),
        filter,
        end: CancellationToken::new(),
        task_owner: cx.task_owner(),
    });
    // Registered before the acknowledgement goes out: a client that waits for it
    // misses nothing announced afterwards.
    server
        .inner
        .listeners
        .list
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(listener.clone());
    if let Err(e) = cx
        .peer()
        .notify_raw(method::SUBSCRIPTIONS_ACKNOWLEDGED, Some(&ack))
        .await
    {
        server.inner.listeners.remove(&listener);
        return Err(ErrorObject::internal(e));
    }
    // A connection that ends (stdin at its end) ends the stream at once: it would
    // otherwise hold the close for its whole grace, waiting for an answer nobody reads.
    tokio::select! {
        () = cx.cancellation().cancelled() => {}
        () = listener.end.cancelled() => {}
        () = cx.peer().closed() => {}
    }
    server.inner.listeners.remove(&listener);
    let mut done = SubscriptionsListenResult::default();
    set_subscription_id(&mut done.meta, &id);
    cx.reply(done)
}
