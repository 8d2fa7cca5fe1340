//! [`RedisBus`]: announcements over Redis pub/sub (feature `redis`).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Announcement, BusError, Deliver, NotificationBus};
use crate::session::BoxFuture;

/// The channel of [`RedisBus::connect`].
const DEFAULT_CHANNEL: &str = "mcpflow:announcements";
/// The first wait before resubscribing after the subscription failed; doubled up to
/// [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long one attempt to connect to Redis, and one command, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// A [`NotificationBus`] over Redis pub/sub: every instance publishes on one channel
/// and subscribes to it. The subscription reconnects by itself, backing off up to 5 s
/// between attempts; publishing goes through a connection that reconnects too, and
/// fails (the instance then announces to its own connections, with a warning) while
/// Redis is unreachable.
///
/// ```no_run
/// use std::sync::Arc;
/// use mcpflow::server::Server;
/// use mcpflow::server::bus::RedisBus;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let bus = RedisBus::connect("redis://127.0.0.1:6379").await?;
/// let server = Server::builder("fleet", "1.0.0").bus(Arc::new(bus)).build();
/// # drop(server);
/// # Ok(())
/// # }
/// ```
pub struct RedisBus {
    client: redis::Client,
    publisher: ConnectionManager,
    channel: Arc<str>,
    /// Whether the subscription is active now.
    subscribed: watch::Sender<bool>,
    /// The subscriber, aborted when the bus is dropped.
    task: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBus")
            .field("channel", &self.channel)
            .field("subscribed", &*self.subscribed.borrow())
            .finish_non_exhaustive()
    }
}

fn unavailable(e: &redis::RedisError) -> BusError {
    BusError::Unavailable {
        detail: e.to_string(),
    }
}

impl RedisBus {
    /// Connect to the Redis at `url` (`redis://HOST:PORT[/DB]`), publishing on the
    /// channel `mcpflow:announcements`.
    ///
    /// # Errors
    /// When the URL is not a Redis URL or Redis cannot be reached.
    pub async fn connect(url: &str) -> Result<RedisBus, BusError> {
        let client = redis::Client::open(url).map_err(|e| unavailable(&e))?;
        // Bounded, so that a server starting without Redis, or a publish while it is
        // down, fails in seconds rather than after the client's own many retries.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        let publisher = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(RedisBus {
            client,
            publisher,
            channel: Arc::from(DEFAULT_CHANNEL),
            subscribed: watch::channel(false).0,
            task: Mutex::new(None),
        })
    }

    /// Use the channel `name` instead: one per server, when several servers share one
    /// Redis. Set it before the bus is given to a server.
    #[must_use]
    pub fn channel(mut self, name: &str) -> RedisBus {
        self.channel = Arc::from(name);
        self
    }

    /// Wait until the subscription is active (announcements published from now on
    /// reach this instance).
    pub async fn subscribed(&self) {
        let mut subscribed = self.subscribed.subscribe();
        let _ = subscribed.wait_for(|on| *on).await;
    }
}

impl NotificationBus for RedisBus {
    fn publish(&self, announcement: &Announcement) -> BoxFuture<'static, Result<(), BusError>> {
        let mut publisher = self.publisher.clone();
        let channel = self.channel.clone();
        let payload = serde_json::to_string(announcement);
        Box::pin(async move {
            let payload = payload.map_err(|e| BusError::Unavailable {
                detail: e.to_string(),
            })?;
            publisher
                .publish::<_, _, ()>(&*channel, payload)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn deliver_to(&self, deliver: Deliver) {
        let subscriber = subscribe(
            self.client.clone(),
            self.channel.clone(),
            self.subscribed.clone(),
            deliver,
        );
        let task = tokio::spawn(subscriber);
        let old = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(task);
        if let Some(old) = old {
            old.abort();
        }
    }
}

impl Drop for RedisBus {
    fn drop(&mut self) {
        if let Some(task) = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

/// Subscribe to `channel` and hand each announcement to `deliver`, resubscribing with
/// backoff whenever the subscription fails or ends.
async fn subscribe(
    client: redis::Client,
    channel: Arc<str>,
    subscribed: watch::Sender<bool>,
    deliver: Deliver,
) {
    let mut backoff = MIN_BACKOFF;
    loop {
        match listen(&client, &channel, &subscribed, &deliver).await {
            Ok(()) => {
                backoff = MIN_BACKOFF;
                tracing::warn!(channel = %channel, "the Redis subscription ended; resubscribing");
            }
            Err(e) => tracing::warn!(error = %e, "could not subscribe to the Redis channel"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One subscription: `Ok` when it ended after it was active, `Err` when it could not
/// be made.
async fn listen(
    client: &redis::Client,
    channel: &str,
    subscribed: &watch::Sender<bool>,
    deliver: &Deliver,
) -> redis::RedisResult<()> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    subscribed.send_replace(true);
    tracing::debug!(channel, "subscribed to the notification bus");
    let mut messages = pubsub.on_message();
    while let Some(message) = messages.next().await {
        match serde_json::from_slice::<Announcement>(message.get_payload_bytes()) {
            Ok(announcement) => deliver(announcement).await,
            Err(e) => tracing::debug!(error = %e, "ignored a message on the bus"),
        }
    }
    subscribed.send_replace(false);
    Ok(())
}
