//! What one server instance announces, carried to every instance behind the same
//! endpoint: list changes and resource updates reach the `subscriptions/listen` streams
//! (and handshake-era connections) held by any of them, and a 2026-07-28 task's changes
//! the listen streams that asked for the task.
//!
//! Without a bus a server announces to its own connections only. With one
//! ([`ServerBuilder::bus`]), an announcement is published on the bus and delivered to
//! this instance's connections when the bus hands it back, as to every other
//! instance's: each stream gets it once, whichever instance it is held by. The bus is
//! at most once, as `subscriptions/listen` is (its streams are not resumable): an
//! announcement published while an instance is reconnecting to the bus does not reach
//! that instance's streams.
//!
//! [`RedisBus`] (feature `redis`) carries announcements over Redis pub/sub.
// Without the feature the item is not in this build's docs: the links go to docs.rs.
#![cfg_attr(
    not(feature = "redis"),
    doc = "",
    doc = "[`RedisBus`]: <https://docs.rs/mcpflow/latest/mcpflow/server/bus/struct.RedisBus.html>"
)]

use std::fmt;
use std::sync::{Arc, Weak};

use serde::{Deserialize, Serialize};

use super::{Server, ServerBuilder, ServerInner};
use crate::session::BoxFuture;

#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
pub use self::redis::RedisBus;

/// One announcement: a `*/list_changed` notification, `notifications/resources/updated`
/// for one resource, or `notifications/tasks` for one 2026-07-28 task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Announcement {
    /// The notification's method.
    pub method: String,
    /// The resource, for `notifications/resources/updated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The task, for `notifications/tasks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskNotice>,
}

/// A 2026-07-28 task's change, for the listen streams that asked for the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskNotice {
    /// The task.
    pub id: String,
    /// The owner key of the principal it belongs to; `None` for anyone with its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The notification's params: the task's full state.
    pub params: serde_json::Value,
}

impl Announcement {
    /// `method` for one task.
    pub(crate) fn task(method: &str, task: TaskNotice) -> Announcement {
        Announcement {
            method: method.to_owned(),
            uri: None,
            task: Some(task),
        }
    }
}

/// What a bus does with an announcement it receives: deliver it to this instance's
/// connections.
pub type Deliver = Arc<dyn Fn(Announcement) -> BoxFuture<'static, ()> + Send + Sync>;

/// Why a bus could not publish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BusError {
    /// The bus's backing service could not be reached or refused the command.
    #[error("the notification bus is unavailable: {detail}")]
    Unavailable {
        /// What failed.
        detail: String,
    },
}

/// Carries [`Announcement`]s between the instances of one server.
///
/// Implement it over the pub/sub a deployment already runs; [`RedisBus`] is one.
/// `publish` sends to every instance, this one included; `deliver_to` is called once,
/// when the server is built, and from then on the bus calls `deliver` for every
/// announcement any instance published, one at a time, until the bus is dropped.
#[cfg_attr(
    not(feature = "redis"),
    doc = "",
    doc = "[`RedisBus`]: <https://docs.rs/mcpflow/latest/mcpflow/server/bus/struct.RedisBus.html>"
)]
pub trait NotificationBus: Send + Sync + 'static {
    /// Send `announcement` to every instance.
    ///
    /// # Errors
    /// When the bus cannot take it; the server then delivers it to its own
    /// connections and logs a warning.
    fn publish(&self, announcement: &Announcement) -> BoxFuture<'static, Result<(), BusError>>;

    /// Start handing every instance's announcements to `deliver`.
    fn deliver_to(&self, deliver: Deliver);
}

impl fmt::Debug for dyn NotificationBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NotificationBus")
    }
}

impl ServerBuilder {
    /// Announce list changes and resource updates through `bus`, so that the
    /// `subscriptions/listen` streams and connections held by every instance behind one
    /// endpoint get them (see [`server::bus`](crate::server::bus)). Default: none, each
    /// instance announces to its own connections.
    pub fn bus(mut self, bus: Arc<dyn NotificationBus>) -> Self {
        self.bus = Some(bus);
        self
    }
}

/// Hand the bus's announcements to `server`'s connections. The bus holds the server
/// weakly: a server dropped stops taking them.
pub(super) fn attach(bus: &Arc<dyn NotificationBus>, server: &Arc<ServerInner>) {
    let server: Weak<ServerInner> = Arc::downgrade(server);
    bus.deliver_to(Arc::new(move |announcement| {
        let server = server.upgrade().map(|inner| Server { inner });
        Box::pin(async move {
            if let Some(server) = server {
                server.deliver(&announcement).await;
            }
        })
    }));
}

impl Server {
    /// Announce through the bus, or to this instance's connections without one (or
    /// when the bus fails, which is logged).
    pub(super) async fn announce(&self, announcement: Announcement) {
        if let Some(bus) = &self.inner.bus {
            match bus.publish(&announcement).await {
                Ok(()) => return,
                Err(e) => tracing::warn!(
                    error = %e,
                    method = %announcement.method,
                    "announced to this instance only"
                ),
            }
        }
        self.deliver(&announcement).await;
    }
}
