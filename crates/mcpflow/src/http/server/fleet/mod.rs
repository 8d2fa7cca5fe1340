//! What the instances of one server share about handshake-era sessions, so that any
//! instance behind a plain load balancer serves any request of any session.
//!
//! With a [`SessionStore`] ([`HttpServer::session_store`](super::HttpServer::session_store)):
//!
//! - **Sessions.** `initialize` writes the session's record (the client's `initialize`
//!   request and the principal that owns the session) before it is answered. An
//!   instance that gets a request for a session it does not hold reads the record and
//!   starts its own copy of the session from it, by answering that `initialize` again
//!   to itself; every request restarts the record's idle timer, and `DELETE` on any
//!   instance ends the session everywhere.
//! - **Event streams.** Every event of a resumable stream is stored, and acknowledged,
//!   before its id goes out. Stream numbers carry the instance's number, so event ids
//!   are unique in the fleet. `GET` with `Last-Event-ID` on any instance replays the
//!   stream from the store and then follows it; when the instance that wrote it is
//!   gone, each request the stream still owed is answered with an error, so a client
//!   never waits on a dead instance.
//! - **Server-to-client requests.** Their ids carry the instance's number too: the
//!   client's answer, on whichever instance it lands, is forwarded to the instance
//!   whose handler waits for it (the handler never moves).
//! - **The cap.** [`max_sessions`](super::HttpServer::max_sessions) counts the fleet's
//!   sessions: at the cap a new session ends the one used least recently, if it is idle,
//!   and is refused with 503 otherwise.
//! - **Trouble.** While the store cannot be reached, requests that need it are answered
//!   503 with `Retry-After`; nothing falls back to memory.
//!
//! `RedisSessionStore` (feature `redis`) keeps all of it in Redis.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use mcpflow_protocol::RequestId;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::events::StreamKey;
pub use crate::server::fleet::StoreError;
use crate::session::BoxFuture;

pub(super) mod endpoint;
#[cfg(feature = "redis")]
mod redis;
pub(super) mod tail;
#[cfg(feature = "redis")]
pub use self::redis::RedisSessionStore;

/// What a store keeps of one session.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The client's `initialize` request, as it sent it.
    pub initialize: Box<RawValue>,
    /// The owner key of the principal that created the session, with authorization on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl SessionRecord {
    /// The record of a session started by `initialize` (one JSON-RPC request).
    ///
    /// # Errors
    /// When `initialize` is not JSON.
    pub fn new(initialize: &[u8], owner: Option<String>) -> Result<SessionRecord, StoreError> {
        let text = std::str::from_utf8(initialize).map_err(|e| StoreError::Corrupt {
            detail: e.to_string(),
        })?;
        let initialize =
            RawValue::from_string(text.to_owned()).map_err(|e| StoreError::Corrupt {
                detail: e.to_string(),
            })?;
        Ok(SessionRecord { initialize, owner })
    }
}

/// One entry of a stream's log.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StoredEvent {
    /// The stream opened (its priming event, number 0): the requests whose responses
    /// it carries, none for the standalone `GET` stream.
    Opened {
        /// The requests it answers.
        owes: Vec<RequestId>,
    },
    /// A message sent on the stream.
    Message {
        /// The JSON-RPC message.
        message: Bytes,
        /// The request it answers, when it is a response.
        answers: Option<RequestId>,
    },
}

/// Entries of a stream's log, each with its number, in order.
pub type Entries = Vec<(u64, StoredEvent)>;

/// An entry to append: event `seq` of stream `key`.
#[derive(Debug, Clone)]
pub struct Append {
    /// The stream.
    pub key: StreamKey,
    /// Its number in the stream: 0 for [`StoredEvent::Opened`], then 1, 2, ...
    pub seq: u64,
    /// The entry.
    pub event: StoredEvent,
}

/// What [`SessionStore::make_room`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Room {
    /// The fleet is under its cap.
    Free,
    /// This session, idle, was ended to make room.
    Evicted(String),
    /// Every session is in use: none was ended.
    Full,
}

/// A client's message for the instance whose handler waits for it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forwarded {
    /// The session it belongs to.
    pub session: String,
    /// The message (a response to a server-to-client request).
    pub message: Box<RawValue>,
}

/// What a store does with a message forwarded to this instance.
pub type DeliverForwarded =
    std::sync::Arc<dyn Fn(Forwarded) -> BoxFuture<'static, ()> + Send + Sync>;

/// The shared state of a fleet's handshake-era sessions: records, event logs, which
/// instances are alive, and messages forwarded between instances. See the
/// [module documentation](self).
///
/// Every method returns once the store acknowledged it. `RedisSessionStore` (feature
/// `redis`) is one; a store over another database implements the same methods.
pub trait SessionStore: Send + Sync + fmt::Debug + 'static {
    /// This instance's number, unique among the live instances, from 1 to 2^20 - 1.
    fn node(&self) -> u32;

    /// Save a new session's record, expiring after `ttl` without use.
    fn create(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>>;

    /// A session's record, its idle timer restarted at `ttl`; `None` when it is unknown,
    /// ended or expired.
    fn load(
        &self,
        id: &str,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<Option<SessionRecord>, StoreError>>;

    /// Restart the idle timers of sessions at `ttl`; for each, whether it still exists.
    fn touch(
        &self,
        ids: &[&str],
        ttl: Duration,
    ) -> BoxFuture<'static, Result<Vec<bool>, StoreError>>;

    /// End a session everywhere: its record and its streams' logs.
    fn remove(&self, id: &str) -> BoxFuture<'static, Result<(), StoreError>>;

    /// Make room for a new session under the fleet's cap of `max` sessions: when the
    /// fleet holds `max`, end the one used least recently if it has not been used for
    /// `idle_for` (busy sessions are touched more often than that). Sessions not used
    /// for `horizon` (the idle timeout) have expired and do not count.
    fn make_room(
        &self,
        max: usize,
        idle_for: Duration,
        horizon: Duration,
    ) -> BoxFuture<'static, Result<Room, StoreError>>;

    /// Forget, from the fleet's count, the sessions not used for `horizon` (their
    /// records have expired); called now and then by every instance.
    fn prune(&self, horizon: Duration) -> BoxFuture<'static, Result<(), StoreError>>;

    /// Append entries to streams' logs, in order, each log expiring `ttl` after its last
    /// entry (the session's idle timeout: a log outliving its session serves no one; a
    /// store may keep logs for less).
    fn append(
        &self,
        entries: Vec<Append>,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>>;

    /// The entries of a stream after number `after` (all of them, [`StoredEvent::Opened`]
    /// included, for `None`), in order, waiting up to `wait` for one when there are none
    /// yet. `Ok(None)` when the stream is unknown, or when entries after `after` were
    /// dropped from its log, so that resuming would lose messages.
    fn read(
        &self,
        key: &StreamKey,
        after: Option<u64>,
        wait: Duration,
    ) -> BoxFuture<'static, Result<Option<Entries>, StoreError>>;

    /// Whether instance `node` is alive.
    fn is_alive(&self, node: u32) -> BoxFuture<'static, Result<bool, StoreError>>;

    /// Hand `message` to instance `node`.
    fn forward(&self, node: u32, message: Forwarded) -> BoxFuture<'static, Result<(), StoreError>>;

    /// Start handing messages forwarded to this instance to `deliver`; called once, when
    /// the HTTP server is built.
    fn deliver_to(&self, deliver: DeliverForwarded);
}

/// Stream numbers and server-to-client request ids of one instance: its number in the
/// high bits, so that those of different instances never meet.
const NODE_SHIFT: u32 = 32;

/// The first number of instance `node`'s streams (and of its request ids).
pub(crate) fn node_base(node: u32) -> u64 {
    u64::from(node) << NODE_SHIFT
}

/// The instance a stream number, or a request id, belongs to.
pub(crate) fn node_of(n: u64) -> u32 {
    u32::try_from(n >> NODE_SHIFT).unwrap_or(0)
}

/// The instance a server-to-client request id belongs to, when it is one of a fleet's.
pub(crate) fn node_of_request(id: &RequestId) -> Option<u32> {
    let n = u64::try_from(id.as_number()?).ok()?;
    Some(node_of(n)).filter(|&node| node > 0)
}
