//! [`RedisSessionStore`]: a fleet's handshake-era sessions in Redis (feature `redis`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use mcpflow_protocol::RequestId;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncConnectionConfig, Pipeline};
use tokio::task::JoinHandle;

use super::{
    Append, DeliverForwarded, Entries, Forwarded, SessionRecord, SessionStore, StoreError,
    StoredEvent,
};
use crate::http::server::StreamKey;
use crate::session::BoxFuture;

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
/// | `{p}:stream:{id}:{n}` | stream | stream `n`'s events, entry `1-{seq}` for event `seq` | [`event_ttl`](Self::event_ttl) after its last event |
/// | `{p}:inbox:{n}` | list | messages forwarded to instance `n` | 60 s |
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

    fn streams_key(&self, id: &str) -> String {
        format!("{}:streams:{id}", self.prefix)
    }

    fn stream_key(&self, key: &StreamKey) -> String {
        format!("{}:stream:{}:{}", self.prefix, key.session, key.stream)
    }

    fn inbox_key(&self, node: u32) -> String {
        format!("{}:inbox:{node}", self.prefix)
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

/// An entry's fields: `o` (the ids a stream owes, JSON) for its opening; `m` (the
/// message) and `a` (the id it answers, JSON) for a message.
fn fields(event: &StoredEvent) -> Result<Vec<(&'static str, Vec<u8>)>, StoreError> {
    Ok(match event {
        StoredEvent::Opened { owes } => vec![("o", serde_json::to_vec(owes).map_err(corrupt)?)],
        StoredEvent::Message { message, answers } => {
            let mut fields = vec![("m", message.to_vec())];
            if let Some(id) = answers {
                fields.push(("a", serde_json::to_vec(id).map_err(corrupt)?));
            }
            fields
        }
    })
}

type Entry = (String, HashMap<String, Vec<u8>>);

fn entry(entry: Entry) -> Result<(u64, StoredEvent), StoreError> {
    let (id, mut map) = entry;
    let seq = id
        .strip_prefix("1-")
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| corrupt(format!("stream entry id `{id}`")))?;
    if let Some(owes) = map.remove("o") {
        let owes: Vec<RequestId> = serde_json::from_slice(&owes).map_err(corrupt)?;
        return Ok((seq, StoredEvent::Opened { owes }));
    }
    let message = map
        .remove("m")
        .ok_or_else(|| corrupt(format!("stream entry `{id}` has no message")))?;
    let answers = match map.remove("a") {
        Some(a) => Some(serde_json::from_slice::<RequestId>(&a).map_err(corrupt)?),
        None => None,
    };
    Ok((
        seq,
        StoredEvent::Message {
            message: Bytes::from(message),
            answers,
        },
    ))
}

/// Entries read after `after`: `None` when some between were dropped from the log.
fn contiguous(entries: Vec<Entry>, after: Option<u64>) -> Result<Option<Entries>, StoreError> {
    let entries: Vec<(u64, StoredEvent)> =
        entries.into_iter().map(entry).collect::<Result<_, _>>()?;
    let first = after.map_or(0, |a| a + 1);
    match entries.first() {
        Some((seq, _)) if *seq != first => Ok(None),
        None if after.is_none() => Ok(None),
        _ => Ok(Some(entries)),
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
        let (mut conn, key) = (self.conn.clone(), self.session_key(id));
        let record = serde_json::to_vec(record);
        Box::pin(async move {
            let record = record.map_err(corrupt)?;
            redis::cmd("SET")
                .arg(key)
                .arg(record)
                .arg("PX")
                .arg(millis(ttl))
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
        let (mut conn, key) = (self.conn.clone(), self.session_key(id));
        Box::pin(async move {
            let record: Option<Vec<u8>> = redis::cmd("GETEX")
                .arg(key)
                .arg("PX")
                .arg(millis(ttl))
                .query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))?;
            record
                .map(|r| serde_json::from_slice(&r).map_err(corrupt))
                .transpose()
        })
    }

    fn touch(
        &self,
        ids: &[&str],
        ttl: Duration,
    ) -> BoxFuture<'static, Result<Vec<bool>, StoreError>> {
        let mut pipe = Pipeline::new();
        for id in ids {
            pipe.cmd("PEXPIRE")
                .arg(self.session_key(id))
                .arg(millis(ttl));
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
        Box::pin(async move {
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

    fn append(&self, entries: Vec<Append>) -> BoxFuture<'static, Result<(), StoreError>> {
        let mut pipe = Pipeline::new();
        let ttl = millis(self.event_ttl);
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
        let (mut conn, key) = (self.conn.clone(), self.inbox_key(node));
        let payload = serde_json::to_vec(&message);
        Box::pin(async move {
            let payload = payload.map_err(corrupt)?;
            Pipeline::new()
                .cmd("RPUSH")
                .arg(&key)
                .arg(payload)
                .ignore()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(millis(INBOX_TTL))
                .ignore()
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn deliver_to(&self, deliver: DeliverForwarded) {
        let (client, key) = (self.client.clone(), self.inbox_key(self.node));
        let task = tokio::spawn(take_forwarded(client, key, deliver));
        self.tasks_mut().push(task);
    }
}

/// How long one wait for a forwarded message lasts before it is asked again.
const INBOX_WAIT: Duration = Duration::from_secs(1);

/// Take each message forwarded to this instance, on a connection of its own (a
/// blocking pop holds its connection), reconnecting with backoff.
async fn take_forwarded(client: redis::Client, key: String, deliver: DeliverForwarded) {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(INBOX_WAIT + RESPONSE_TIMEOUT));
    let mut backoff = Duration::from_millis(100);
    loop {
        let mut conn = match client
            .get_multiplexed_async_connection_with_config(&config)
            .await
        {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "could not connect to Redis for forwarded messages");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        loop {
            let popped: redis::RedisResult<Option<(String, Vec<u8>)>> = redis::cmd("BLPOP")
                .arg(&key)
                .arg(INBOX_WAIT.as_secs_f64())
                .query_async(&mut conn)
                .await;
            match popped {
                Ok(Some((_, payload))) => match serde_json::from_slice::<Forwarded>(&payload) {
                    Ok(message) => deliver(message).await,
                    Err(e) => {
                        tracing::debug!(error = %e, "ignored an unreadable forwarded message")
                    }
                },
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "lost the Redis connection for forwarded messages");
                    break;
                }
            }
        }
    }
}
