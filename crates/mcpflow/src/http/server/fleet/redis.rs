//! [`RedisSessionStore`]: a fleet's handshake-era sessions in Redis (feature `redis`).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncConnectionConfig, Pipeline};
use tokio::task::JoinHandle;

use super::{
    Append, DeliverForwarded, Entries, Forwarded, Room, SessionRecord, SessionStore, StoreError,
    StoredEvent,
};
use crate::http::server::StreamKey;
use crate::session::BoxFuture;
use entries::{Entry, contiguous, fields};

mod entries;
mod lists;
mod tasks;

/// How long one attempt to connect to Redis, and one command, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// An instance whose lease was not renewed for this long counts as dead.
const LEASE: Duration = Duration::from_secs(5);
/// How often an instance renews its lease.
const RENEW_EVERY: Duration = Duration::from_millis(1500);
/// How long a forwarded message waits for its instance to take it.
const INBOX_TTL: Duration = Duration::from_secs(60);
/// Instance numbers wrap here (ids carry them below 2^53, the integers JSON keeps exact).
const MAX_NODE: i64 = (1 << 20) - 1;

/// A [`SessionStore`] in Redis. Keys, under a prefix (`mcpflow` by default):
///
/// | key | type | what | expires |
/// | --- | --- | --- | --- |
/// | `{p}:nodes` | counter | instance numbers handed out | never |
/// | `{p}:node:{n}` | string | instance `n` is alive | 5 s unless renewed (every 1.5 s) |
/// | `{p}:session:{id}` | string | the session's record (JSON) | the session idle timeout, restarted on use |
/// | `{p}:streams:{id}` | set | the session's stream numbers | with the streams |
/// | `{p}:sessions` | sorted set | every session, by when it was last used (for the fleet's cap) | entries older than the idle timeout are pruned |
/// | `{p}:stream:{id}:{n}` | stream | stream `n`'s events, entry `1-{seq}` for event `seq` | the session idle timeout or [`event_ttl`](Self::event_ttl), the shorter, after its last event |
/// | `{p}:inbox:{n}` | list | messages forwarded to instance `n` | 60 s |
/// | `{p}:task:{id}` | string | a 2026-07-28 task's record ([`SharedTaskStore`](crate::server::fleet::SharedTaskStore)) | with the task |
/// | `{p}:tasks:{n}` | list | task commands for instance `n` | 60 s |
/// | `{p}:used:{token}` | string | a consumed single-use `requestState` ([`ConsumedStates`](crate::server::fleet::ConsumedStates)) | an hour, as the state |
///
/// Each stream log keeps about its last [`max_events`](Self::max_events) events. Keys and
/// logs hold the truth; no command relies on pub/sub, so nothing is lost while an
/// instance reconnects. Commands time out after 2 s, and a lost connection is made
/// again on the next command.
///
/// ```no_run
/// use std::sync::Arc;
/// use mcpflow::http::server::HttpServer;
/// use mcpflow::http::server::fleet::RedisSessionStore;
/// use mcpflow::server::Server;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = RedisSessionStore::connect("redis://127.0.0.1:6379").await?;
/// let server = Server::builder("fleet", "1.0.0").build();
/// let http = HttpServer::new(server).session_store(Arc::new(store));
/// # drop(http);
/// # Ok(())
/// # }
/// ```
pub struct RedisSessionStore {
    client: redis::Client,
    conn: ConnectionManager,
    prefix: Arc<str>,
    node: u32,
    event_ttl: Duration,
    max_events: usize,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field("prefix", &self.prefix)
            .field("node", &self.node)
            .field("event_ttl", &self.event_ttl)
            .field("max_events", &self.max_events)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: &redis::RedisError) -> StoreError {
    StoreError::Unavailable {
        detail: e.to_string(),
    }
}

fn corrupt(detail: impl fmt::Display) -> StoreError {
    StoreError::Corrupt {
        detail: detail.to_string(),
    }
}

/// Now, in milliseconds since the Unix epoch: the score of a session's last use.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisSessionStore {
    /// Connect to the Redis at `url` (`redis://HOST:PORT[/DB]`), take an instance number
    /// and start renewing this instance's lease.
    ///
    /// # Errors
    /// When the URL is not a Redis URL or Redis cannot be reached.
    pub async fn connect(url: &str) -> Result<RedisSessionStore, StoreError> {
        Self::connect_with_prefix(url, "mcpflow").await
    }

    /// [`connect`](Self::connect), with keys under `prefix` instead of `mcpflow`: one
    /// prefix per server when several servers share one Redis.
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub async fn connect_with_prefix(
        url: &str,
        prefix: &str,
    ) -> Result<RedisSessionStore, StoreError> {
        let client = redis::Client::open(url).map_err(|e| unavailable(&e))?;
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        let mut conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| unavailable(&e))?;
        let node = take_node(&mut conn, prefix)
            .await
            .map_err(|e| unavailable(&e))?;
        let store = RedisSessionStore {
            client,
            conn,
            prefix: Arc::from(prefix),
            node,
            event_ttl: Duration::from_secs(600),
            max_events: 1024,
            tasks: Mutex::new(Vec::new()),
        };
        let renewing = {
            let (mut conn, key) = (store.conn.clone(), store.node_key(node));
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(RENEW_EVERY);
                loop {
                    ticks.tick().await;
                    if let Err(e) = set_lease(&mut conn, &key).await {
                        tracing::warn!(error = %e, "could not renew this instance's lease in Redis");
                    }
                }
            })
        };
        store.tasks_mut().push(renewing);
        tracing::debug!(node, "joined the fleet");
        Ok(store)
    }

    /// Keep each stream's events for `ttl` after its last one (default 10 minutes): how
    /// long a client may take to resume.
    #[must_use]
    pub fn event_ttl(mut self, ttl: Duration) -> Self {
        self.event_ttl = ttl;
        self
    }

    /// Keep about the last `n` events of each stream (default 1,024); resuming before
    /// them fails with 410.
    #[must_use]
    pub fn max_events(mut self, n: usize) -> Self {
        self.max_events = n.max(1);
        self
    }

    fn tasks_mut(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn node_key(&self, node: u32) -> String {
        format!("{}:node:{node}", self.prefix)
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}:session:{id}", self.prefix)
    }

    /// The fleet's sessions, by when each was last used.
    fn index_key(&self) -> String {
        format!("{}:sessions", self.prefix)
    }

    /// A handle sharing this store's connection and keys, for a future that outlives
    /// the borrow (it starts no tasks of its own).
    fn clone_handle(&self) -> RedisSessionStore {
        RedisSessionStore {
            client: self.client.clone(),
            conn: self.conn.clone(),
            prefix: self.prefix.clone(),
            node: self.node,
            event_ttl: self.event_ttl,
            max_events: self.max_events,
            tasks: Mutex::new(Vec::new()),
        }
    }

    fn streams_key(&self, id: &str) -> String {
        format!("{}:streams:{id}", self.prefix)
    }

    fn stream_key(&self, key: &StreamKey) -> String {
        format!("{}:stream:{}:{}", self.prefix, key.session, key.stream)
    }

    fn inbox_key(&self, node: u32) -> String {
        format!("{}:inbox:{node}", self.prefix)
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{id}", self.prefix)
    }

    fn task_commands_key(&self, node: u32) -> String {
        format!("{}:tasks:{node}", self.prefix)
    }
}

/// A number no live instance holds, with its lease taken: counted up, skipping numbers
/// whose lease is held (the counter starts again when Redis lost its data).
async fn take_node(conn: &mut ConnectionManager, prefix: &str) -> redis::RedisResult<u32> {
    loop {
        let counted: i64 = redis::cmd("INCR")
            .arg(format!("{prefix}:nodes"))
            .query_async(conn)
            .await?;
        let node = u32::try_from(counted.rem_euclid(MAX_NODE) + 1).unwrap_or(1);
        let taken: Option<String> = redis::cmd("SET")
            .arg(format!("{prefix}:node:{node}"))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(millis(LEASE))
            .query_async(conn)
            .await?;
        if taken.is_some() {
            return Ok(node);
        }
    }
}

async fn set_lease(conn: &mut ConnectionManager, key: &str) -> redis::RedisResult<()> {
    redis::cmd("SET")
        .arg(key)
        .arg(1)
        .arg("PX")
        .arg(millis(LEASE))
        .query_async(conn)
        .await
}

impl Drop for RedisSessionStore {
    fn drop(&mut self) {
        for task in self.tasks_mut().drain(..) {
            task.abort();
        }
    }
}

impl SessionStore for RedisSessionStore {
    fn node(&self) -> u32 {
        self.node
    }

    fn create(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let mut conn = self.conn.clone();
        let (key, index, id) = (self.session_key(id), self.index_key(), id.to_owned());
        let record = serde_json::to_vec(record);
        Box::pin(async move {
            Pipeline::new()
                .cmd("SET")
                .arg(key)
                .arg(record.map_err(corrupt)?)
                .arg("PX")
                .arg(millis(ttl))
                .ignore()
                .cmd("ZADD")
                .arg(index)
                .arg(now_ms())
                .arg(id)
                .ignore()
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn load(
        &self,
        id: &str,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<Option<SessionRecord>, StoreError>> {
        self.get_json(self.session_key(id), Some(ttl))
    }

    fn touch(
        &self,
        ids: &[&str],
        ttl: Duration,
    ) -> BoxFuture<'static, Result<Vec<bool>, StoreError>> {
        let mut pipe = Pipeline::new();
        let now = now_ms();
        for id in ids {
            pipe.cmd("PEXPIRE")
                .arg(self.session_key(id))
                .arg(millis(ttl));
            // Its place in the order of use; XX: an ended session does not come back.
            pipe.cmd("ZADD")
                .arg(self.index_key())
                .arg("XX")
                .arg(now)
                .arg(id)
                .ignore();
        }
        let mut conn = self.conn.clone();
        Box::pin(async move {
            pipe.query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn remove(&self, id: &str) -> BoxFuture<'static, Result<(), StoreError>> {
        let mut conn = self.conn.clone();
        let (session, streams) = (self.session_key(id), self.streams_key(id));
        let stream_prefix = format!("{}:stream:{id}:", self.prefix);
        let (index, member) = (self.index_key(), id.to_owned());
        Box::pin(async move {
            redis::cmd("ZREM")
                .arg(index)
                .arg(member)
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| unavailable(&e))?;
            let numbers: Vec<u64> = redis::cmd("SMEMBERS")
                .arg(&streams)
                .query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))?;
            let mut del = redis::cmd("DEL");
            del.arg(session).arg(streams);
            for n in numbers {
                del.arg(format!("{stream_prefix}{n}"));
            }
            del.query_async::<()>(&mut conn)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn make_room(
        &self,
        max: usize,
        idle_for: Duration,
        horizon: Duration,
    ) -> BoxFuture<'static, Result<Room, StoreError>> {
        let mut conn = self.conn.clone();
        let index = self.index_key();
        let this = self.clone_handle();
        Box::pin(async move {
            let now = now_ms();
            let (count, oldest): (usize, Vec<(String, u64)>) = Pipeline::new()
                .cmd("ZREMRANGEBYSCORE")
                .arg(&index)
                .arg("-inf")
                .arg(format!("({}", now.saturating_sub(millis(horizon))))
                .ignore()
                .cmd("ZCARD")
                .arg(&index)
                .cmd("ZRANGE")
                .arg(&index)
                .arg(0)
                .arg(0)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))?;
            if count < max {
                return Ok(Room::Free);
            }
            match oldest.into_iter().next() {
                Some((id, used)) if used < now.saturating_sub(millis(idle_for)) => {
                    this.remove(&id).await?;
                    Ok(Room::Evicted(id))
                }
                _ => Ok(Room::Full),
            }
        })
    }

    fn prune(&self, horizon: Duration) -> BoxFuture<'static, Result<(), StoreError>> {
        let (mut conn, index) = (self.conn.clone(), self.index_key());
        Box::pin(async move {
            redis::cmd("ZREMRANGEBYSCORE")
                .arg(index)
                .arg("-inf")
                .arg(format!("({}", now_ms().saturating_sub(millis(horizon))))
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn append(
        &self,
        entries: Vec<Append>,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let mut pipe = Pipeline::new();
        let ttl = millis(ttl.min(self.event_ttl));
        let built = (|| {
            for Append { key, seq, event } in &entries {
                let stream = self.stream_key(key);
                let xadd = pipe
                    .cmd("XADD")
                    .arg(&stream)
                    .arg("MAXLEN")
                    .arg("~")
                    .arg(self.max_events)
                    .arg(format!("1-{seq}"));
                for (field, value) in fields(event)? {
                    xadd.arg(field).arg(value);
                }
                pipe.ignore();
                pipe.cmd("PEXPIRE").arg(&stream).arg(ttl).ignore();
                if matches!(event, StoredEvent::Opened { .. }) {
                    let streams = self.streams_key(&key.session);
                    pipe.cmd("SADD").arg(&streams).arg(key.stream).ignore();
                    pipe.cmd("PEXPIRE").arg(&streams).arg(ttl).ignore();
                }
            }
            Ok::<_, StoreError>(())
        })();
        let mut conn = self.conn.clone();
        Box::pin(async move {
            built?;
            pipe.query_async::<()>(&mut conn)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn read(
        &self,
        key: &StreamKey,
        after: Option<u64>,
        wait: Duration,
    ) -> BoxFuture<'static, Result<Option<Entries>, StoreError>> {
        let stream = self.stream_key(key);
        let mut conn = self.conn.clone();
        let client = self.client.clone();
        Box::pin(async move {
            let from = after.map_or_else(|| "-".to_owned(), |a| format!("(1-{a}"));
            let entries: Vec<Entry> = redis::cmd("XRANGE")
                .arg(&stream)
                .arg(from)
                .arg("+")
                .query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))?;
            let Some(after) = after.filter(|_| entries.is_empty() && !wait.is_zero()) else {
                return contiguous(entries, after);
            };
            // Nothing yet: wait on a connection of its own, as a blocking read holds the
            // connection it is sent on.
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(CONNECT_TIMEOUT))
                .set_response_timeout(Some(wait + RESPONSE_TIMEOUT));
            let mut blocking = client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(|e| unavailable(&e))?;
            let read: Option<Vec<(String, Vec<Entry>)>> = redis::cmd("XREAD")
                .arg("BLOCK")
                .arg(millis(wait))
                .arg("STREAMS")
                .arg(&stream)
                .arg(format!("1-{after}"))
                .query_async(&mut blocking)
                .await
                .map_err(|e| unavailable(&e))?;
            let entries = read
                .into_iter()
                .flatten()
                .flat_map(|(_, entries)| entries)
                .collect();
            contiguous(entries, Some(after))
        })
    }

    fn is_alive(&self, node: u32) -> BoxFuture<'static, Result<bool, StoreError>> {
        let (mut conn, key) = (self.conn.clone(), self.node_key(node));
        Box::pin(async move {
            redis::cmd("EXISTS")
                .arg(key)
                .query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn forward(&self, node: u32, message: Forwarded) -> BoxFuture<'static, Result<(), StoreError>> {
        self.push_json(self.inbox_key(node), &message)
    }

    fn deliver_to(&self, deliver: DeliverForwarded) {
        self.take_json(self.inbox_key(self.node), deliver);
    }
}
