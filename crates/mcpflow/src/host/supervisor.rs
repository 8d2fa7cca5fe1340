//! One supervisor task per server: it owns the connection, follows its lists into the
//! catalog, checks that the server still answers, and reconnects with exponential
//! backoff, jitter and a crash-loop limit.
//!
//! A connection to a child process ends by itself when the process exits; one over HTTP
//! may not (nothing is open between requests), so the supervisor pings a server that
//! has no call in flight every [`ReconnectPolicy::probe_every`], and at once after a
//! call failed to reach it. A ping that cannot reach the server, or two in a row that
//! time out, end the connection like any other loss.
//!
//! Callers never wait on the supervisor: a call takes the current connection from the
//! [`ServerSlot`] or, during an outage, fails at once with the cause and the time of
//! the next attempt.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Semaphore, broadcast, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::HostEvent;
use super::call::InFlight;
use super::catalog::{Catalog, ServerLists, follow_lists};
use super::error::HostError;
use crate::client::{Client, ClientBuilder, ClientHandle};
use crate::error::SessionError;
use crate::session::BoxFuture;

/// Opens one connection to a server: starts the transport and runs `builder`'s
/// handshake on it. The host calls it again for each reconnect.
pub type Connector =
    Arc<dyn Fn(ClientBuilder) -> BoxFuture<'static, Result<Client, ConnectFailure>> + Send + Sync>;

/// Why a [`Connector`] could not connect.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{cause}")]
pub struct ConnectFailure {
    cause: Arc<str>,
    /// Whether another attempt may succeed.
    retry: bool,
}

impl ConnectFailure {
    /// A failure described by `cause` (a spawn error, a handshake error); the server
    /// is tried again with backoff.
    pub fn new(cause: impl fmt::Display) -> ConnectFailure {
        ConnectFailure {
            cause: cause.to_string().into(),
            retry: true,
        }
    }

    /// A failure no retry can mend (a configuration error): the server is
    /// [`Health::Failed`] at once.
    pub fn permanent(cause: impl fmt::Display) -> ConnectFailure {
        ConnectFailure {
            retry: false,
            ..ConnectFailure::new(cause)
        }
    }
}

/// The state of one server's connection, as [`ToolHost::health`](super::ToolHost::health)
/// reports it and [`HostEvent::Health`] announces each change.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Health {
    /// The first connection is being made.
    Connecting,
    /// Connected, and every list the server offers was fetched.
    Ready,
    /// Connected, but a list could not be fetched: the catalog keeps its last good
    /// copy (never an empty one in its place).
    Degraded {
        /// Which list failed and why.
        cause: Arc<str>,
    },
    /// The connection was lost or could not be made; the next attempt is at `retry_at`.
    Reconnecting {
        /// Why the last connection ended or the last attempt failed.
        cause: Arc<str>,
        /// Failures in a row so far.
        attempt: u32,
        /// When the next attempt starts.
        retry_at: Instant,
    },
    /// Too many failures in a row: the supervisor stopped trying.
    Failed {
        /// The last failure.
        cause: Arc<str>,
    },
    /// The host closed.
    Closed,
}

impl Health {
    /// Whether calls can be made (ready or degraded).
    pub fn is_connected(&self) -> bool {
        matches!(self, Health::Ready | Health::Degraded { .. })
    }
}

/// When and how often a supervisor reconnects.
#[derive(Debug, Clone)]
#[must_use]
pub struct ReconnectPolicy {
    initial_delay: Duration,
    max_delay: Duration,
    max_failures: u32,
    stable_after: Duration,
    connect_timeout: Duration,
    probe_every: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_failures: 5,
            stable_after: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(30),
            probe_every: Duration::from_secs(5),
        }
    }
}

impl ReconnectPolicy {
    /// The delay before the first retry; it doubles with each failure in a row, and a
    /// random part of up to half of it is taken off so servers restarted together do
    /// not reconnect in step. Default: 500 ms.
    pub fn initial_delay(mut self, d: Duration) -> Self {
        self.initial_delay = d;
        self
    }

    /// The longest delay between attempts. Default: 30 s.
    pub fn max_delay(mut self, d: Duration) -> Self {
        self.max_delay = d;
        self
    }

    /// Failures in a row after which the server is [`Health::Failed`] (0: never
    /// retry). A connection that stayed up for [`stable_after`](Self::stable_after)
    /// resets the count. Default: 5.
    pub fn max_failures(mut self, n: u32) -> Self {
        self.max_failures = n;
        self
    }

    /// How long a connection must last to count as healthy again. Default: 60 s.
    pub fn stable_after(mut self, d: Duration) -> Self {
        self.stable_after = d;
        self
    }

    /// The longest a connection attempt (start and handshake) may take. Default: 30 s.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }

    /// How often a connected server with no call in flight is pinged to see that it
    /// still answers (an HTTP server's death shows no other way until the next call);
    /// each ping may take as long again. `Duration::ZERO` turns the pings off. Default:
    /// 5 s.
    pub fn probe_every(mut self, d: Duration) -> Self {
        self.probe_every = d;
        self
    }

    /// The delay after `failures` failures in a row, with jitter.
    fn delay(&self, failures: u32) -> Duration {
        let doubled = self.initial_delay.saturating_mul(
            1u32.checked_shl(failures.saturating_sub(1))
                .unwrap_or(u32::MAX),
        );
        let full = doubled.min(self.max_delay);
        let jitter = RandomState::new().build_hasher().finish() % 1000;
        full.saturating_sub(full / 2 * u32::try_from(jitter).unwrap_or(0) / 1000)
    }
}

/// What the host knows about one server, shared by its supervisor and the callers.
pub(crate) struct ServerSlot {
    pub(crate) name: Arc<str>,
    pub(crate) index: usize,
    health: watch::Sender<Health>,
    client: Mutex<Option<ClientHandle>>,
    /// The optional per-server limit on calls in flight.
    pub(crate) in_flight: Option<Arc<Semaphore>>,
    /// The host's calls in flight here.
    pub(crate) calls: Arc<InFlight>,
    events: broadcast::Sender<HostEvent>,
    /// Woken when a call could not reach the server: check it now.
    suspect: tokio::sync::Notify,
}

impl ServerSlot {
    pub(crate) fn new(
        name: Arc<str>,
        index: usize,
        max_in_flight: Option<usize>,
        events: broadcast::Sender<HostEvent>,
    ) -> ServerSlot {
        ServerSlot {
            name,
            index,
            health: watch::channel(Health::Connecting).0,
            client: Mutex::new(None),
            in_flight: max_in_flight.map(|n| Arc::new(Semaphore::new(n))),
            calls: Arc::default(),
            events,
            suspect: tokio::sync::Notify::new(),
        }
    }

    /// A call could not reach the server: have the supervisor check it now.
    pub(crate) fn suspect(&self) {
        self.suspect.notify_one();
    }

    pub(crate) fn health(&self) -> Health {
        self.health.borrow().clone()
    }

    pub(crate) fn watch_health(&self) -> watch::Receiver<Health> {
        self.health.subscribe()
    }

    fn set_health(&self, health: Health) {
        let changed = self.health.send_if_modified(|h| {
            let changed = *h != health;
            *h = health.clone();
            changed
        });
        if changed {
            tracing::info!(server = %self.name, ?health, "server health");
            let _ = self.events.send(HostEvent::Health {
                server: self.name.clone(),
                health,
            });
        }
    }

    fn set_client(&self, client: Option<ClientHandle>) {
        *self.client.lock().unwrap_or_else(PoisonError::into_inner) = client;
    }

    /// The live connection, or why there is none.
    pub(crate) fn client(&self) -> Result<ClientHandle, HostError> {
        let client = self
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match client {
            Some(client) if !client.peer().is_closed() => Ok(client),
            _ => Err(self.unavailable()),
        }
    }

    /// [`HostError::ServerUnavailable`] from the current health.
    pub(crate) fn unavailable(&self) -> HostError {
        let (cause, retry_in) = match self.health() {
            Health::Reconnecting {
                cause, retry_at, ..
            } => (
                cause,
                Some(retry_at.saturating_duration_since(Instant::now())),
            ),
            Health::Connecting => ("the first connection is still being made".into(), None),
            Health::Failed { cause } => (
                format!("{cause} (gave up reconnecting after repeated failures)").into(),
                None,
            ),
            Health::Closed => ("the host is closed".into(), None),
            Health::Ready | Health::Degraded { .. } => {
                ("the connection just ended; reconnecting".into(), None)
            }
        };
        HostError::ServerUnavailable {
            server: self.name.to_string(),
            cause: cause.to_string(),
            retry_in,
        }
    }
}

/// Everything a supervisor needs, owned by its task.
pub(crate) struct Supervisor {
    pub(crate) slot: Arc<ServerSlot>,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) connector: Connector,
    /// A fresh client builder (with the host's callbacks) for each connection.
    pub(crate) builder: Arc<dyn Fn() -> ClientBuilder + Send + Sync>,
    pub(crate) policy: ReconnectPolicy,
    pub(crate) stop: CancellationToken,
}

impl Supervisor {
    /// Connect, follow, reconnect, until `stop` or the crash-loop limit.
    pub(crate) async fn run(self) {
        let slot = &self.slot;
        let mut failures = 0u32;
        let mut epoch = 0u64;
        loop {
            epoch += 1;
            let attempt = tokio::time::timeout(
                self.policy.connect_timeout,
                (self.connector)((self.builder)()),
            );
            let attempt = tokio::select! {
                () = self.stop.cancelled() => break,
                attempt = attempt => attempt,
            };
            let cause: Arc<str> = match attempt {
                Err(_) => format!(
                    "connecting took longer than {:?}",
                    self.policy.connect_timeout
                )
                .into(),
                Ok(Err(e)) if !e.retry => {
                    slot.set_health(Health::Failed { cause: e.cause });
                    return;
                }
                Ok(Err(e)) => e.cause,
                Ok(Ok(client)) => {
                    let connected_at = Instant::now();
                    let ended = self.serve(&client, epoch).await;
                    slot.set_client(None);
                    client.close().await;
                    let Some(cause) = ended else { break };
                    if connected_at.elapsed() >= self.policy.stable_after {
                        failures = 0;
                    }
                    cause
                }
            };
            failures += 1;
            tracing::warn!(server = %slot.name, %cause, failures, "server connection lost");
            if failures > self.policy.max_failures {
                self.catalog
                    .commit(slot.index, epoch, ServerLists::default());
                slot.set_health(Health::Failed { cause });
                return;
            }
            let delay = self.policy.delay(failures);
            slot.set_health(Health::Reconnecting {
                cause,
                attempt: failures,
                retry_at: Instant::now() + delay,
            });
            tokio::select! {
                () = self.stop.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
        }
        slot.set_client(None);
        slot.set_health(Health::Closed);
    }

    /// Serve one connection until it ends (`Some(cause)`) or the host stops (`None`).
    async fn serve(&self, client: &Client, epoch: u64) -> Option<Arc<str>> {
        let slot = &self.slot;
        let handle = client.handle();
        slot.set_client(Some(handle.clone()));
        let catalog = &self.catalog;
        let follow = follow_lists(handle.clone(), self.stop.clone(), |lists, errors| {
            catalog.commit(slot.index, epoch, lists);
            // Ready only once the lists are in the catalog: after a reconnect, that
            // is the resync.
            slot.set_health(if errors.is_empty() {
                Health::Ready
            } else {
                Health::Degraded {
                    cause: errors.join("; ").into(),
                }
            });
        });
        tokio::select! {
            () = self.stop.cancelled() => None,
            () = client.closed() => Some(
                handle
                    .peer()
                    .close_reason()
                    .map_or_else(|| "the connection ended".to_owned(), |r| r.to_string())
                    .into(),
            ),
            cause = self.probe(&handle) => Some(cause),
            () = async { follow.await; std::future::pending::<()>().await } => None,
        }
    }

    /// Resolves, with the cause, once the server stops answering: a ping while no call
    /// is in flight, every probe interval and whenever a call could not reach it, that
    /// fails to reach the server, or two in a row that time out. A JSON-RPC error is an
    /// answer. Never resolves with the probes off.
    async fn probe(&self, handle: &ClientHandle) -> Arc<str> {
        let every = self.policy.probe_every;
        if every.is_zero() {
            return std::future::pending().await;
        }
        let mut timeouts = 0;
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {
                    if self.slot.calls.len() > 0 {
                        continue;
                    }
                }
                () = self.slot.suspect.notified() => {}
            }
            match tokio::time::timeout(every, handle.ping()).await {
                Ok(Ok(()) | Err(SessionError::Rejected { .. })) => timeouts = 0,
                Ok(Err(e)) => return format!("the server stopped answering: {e}").into(),
                Err(_) => {
                    timeouts += 1;
                    if timeouts >= 2 {
                        return format!(
                            "the server stopped answering: two pings in a row got no answer within {every:?}"
                        )
                        .into();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_defaults_hold() {
        let policy = ReconnectPolicy::default();
        assert_eq!(policy.initial_delay, Duration::from_millis(500));
        assert_eq!(policy.max_delay, Duration::from_secs(30));
        assert_eq!(policy.max_failures, 5);
        assert_eq!(policy.stable_after, Duration::from_secs(60));
        assert_eq!(policy.connect_timeout, Duration::from_secs(30));
        assert_eq!(policy.probe_every, Duration::from_secs(5));
        assert_eq!(super::super::DEFAULT_TOOL_TIMEOUT, Duration::from_secs(300));
        assert_eq!(
            super::super::DEFAULT_MAX_TOTAL,
            Duration::from_secs(30 * 60)
        );
    }

    #[test]
    fn the_delay_doubles_up_to_the_cap_with_jitter_of_at_most_half() {
        let policy = ReconnectPolicy::default()
            .initial_delay(Duration::from_secs(1))
            .max_delay(Duration::from_secs(8));
        for (failures, full) in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 8), (40, 8)] {
            let full = Duration::from_secs(full);
            for _ in 0..20 {
                let d = policy.delay(failures);
                assert!(d <= full && d >= full / 2, "{failures}: {d:?} of {full:?}");
            }
        }
    }
}
