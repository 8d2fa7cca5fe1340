//! The Redis store's building blocks: JSON values under keys, and lists one instance
//! takes from with a blocking pop on a connection of its own.

use std::sync::Arc;
use std::time::Duration;

use redis::{AsyncConnectionConfig, Pipeline};

use super::{
    CONNECT_TIMEOUT, INBOX_TTL, RESPONSE_TIMEOUT, RedisSessionStore, corrupt, millis, unavailable,
};
use crate::http::server::fleet::StoreError;
use crate::session::BoxFuture;

impl RedisSessionStore {
    /// Push `payload` onto the list `key`, which expires unless taken.
    pub(super) fn push(
        &self,
        key: String,
        payload: Vec<u8>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let mut conn = self.conn.clone();
        Box::pin(async move {
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

    /// Set `key` to `value` as JSON, expiring after `ttl`.
    pub(super) fn set_json<T: serde::Serialize>(
        &self,
        key: String,
        value: &T,
        ttl: Duration,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let mut conn = self.conn.clone();
        let value = serde_json::to_vec(value);
        Box::pin(async move {
            redis::cmd("SET")
                .arg(key)
                .arg(value.map_err(corrupt)?)
                .arg("PX")
                .arg(millis(ttl))
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    /// The JSON value under `key` (read by `GETEX ... PX ttl`, restarting its timer, when
    /// `ttl` is given); `None` when absent.
    pub(super) fn get_json<T: serde::de::DeserializeOwned + 'static>(
        &self,
        key: String,
        ttl: Option<Duration>,
    ) -> BoxFuture<'static, Result<Option<T>, StoreError>> {
        let mut conn = self.conn.clone();
        Box::pin(async move {
            let mut command = redis::cmd(if ttl.is_some() { "GETEX" } else { "GET" });
            command.arg(key);
            if let Some(ttl) = ttl {
                command.arg("PX").arg(millis(ttl));
            }
            let value: Option<Vec<u8>> = command
                .query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))?;
            value
                .map(|v| serde_json::from_slice(&v).map_err(corrupt))
                .transpose()
        })
    }

    /// Push `value` as JSON onto the list `key`, which expires unless taken.
    pub(super) fn push_json<T: serde::Serialize>(
        &self,
        key: String,
        value: &T,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        match serde_json::to_vec(value) {
            Ok(payload) => self.push(key, payload),
            Err(e) => Box::pin(async move { Err(corrupt(e)) }),
        }
    }

    /// Hand each value pushed onto this instance's list `key` to `deliver`, from now on;
    /// a payload that does not read as a `T` is dropped.
    pub(super) fn take_json<T: serde::de::DeserializeOwned + 'static>(
        &self,
        key: String,
        deliver: Arc<dyn Fn(T) -> BoxFuture<'static, ()> + Send + Sync>,
    ) {
        let take: Take = Arc::new(move |payload| match serde_json::from_slice::<T>(&payload) {
            Ok(value) => deliver(value),
            Err(e) => {
                tracing::debug!(error = %e, "ignored an unreadable message pushed to this instance");
                Box::pin(async {})
            }
        });
        let task = tokio::spawn(take_pushed(self.client.clone(), key, take));
        self.tasks_mut().push(task);
    }
}

/// What a list's taker does with each payload.
type Take = Arc<dyn Fn(Vec<u8>) -> BoxFuture<'static, ()> + Send + Sync>;

/// How long one wait for a pushed payload lasts before it is asked again.
const INBOX_WAIT: Duration = Duration::from_secs(1);

/// Take each payload pushed onto `key`, on a connection of its own (a blocking pop holds
/// its connection), reconnecting with backoff.
async fn take_pushed(client: redis::Client, key: String, take: Take) {
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
                tracing::warn!(error = %e, key = %key, "could not connect to Redis to take messages");
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
                Ok(Some((_, payload))) => take(payload).await,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, key = %key, "lost the Redis connection that takes messages");
                    break;
                }
            }
        }
    }
}
