//! The streamable HTTP server: one MCP endpoint answering POST, GET and DELETE.
//!
//! [`HttpServer`] wraps a [`Server`] and serves each MCP session on the same engine as
//! every other transport, so the same guarantees hold: progress before the result, an
//! ordered notification lane, bounded admission, and no request left without an answer
//! or an error.
//!
//! - **Sessions.** `initialize` (a POST without `Mcp-Session-Id`) creates a session
//!   whose id comes from the operating system's CSPRNG. Other requests without the
//!   header get 400; an unknown or terminated id gets 404, after which a client starts
//!   over. `DELETE` ends a session; sessions idle past
//!   [`session_idle_timeout`](HttpServer::session_idle_timeout) end on their own.
//! - **Responses.** A POST with requests is answered with an event stream carrying the
//!   responses and, before them, the progress, logs and server-to-client requests its
//!   handlers send; or with one JSON body when the client accepts only JSON or
//!   [`json_response`](HttpServer::json_response) is set. Each event is written as it
//!   is produced. Notifications and responses alone get 202.
//! - **The standalone stream.** `GET` opens the stream for messages not caused by a
//!   request (`list_changed`, requests of the server's own). Until the client opens
//!   it, such messages ride the newest open request stream instead of being dropped.
//! - **Resumability** (SEP-1699). With an [`EventStore`] (in memory by default), events
//!   have ids; a stream to a 2025-11-25 client opens with a priming event carrying an id
//!   and `retry`; a client that lost a stream resumes it with `GET` and `Last-Event-ID`.
//! - **DNS-rebinding protection.** `Host` and `Origin` must name a loopback host unless
//!   allow-listed; [`bind`](HttpServer::bind) on a non-loopback address turns the check
//!   off unless an allow-list was given.
//! - **Stateless mode** ([`stateless`](HttpServer::stateless)) serves each POST on its
//!   own short-lived session, for horizontal scaling; it has no GET stream, and a
//!   server-to-client request cannot be answered there.
//!
//! ```no_run
//! use mcpflow::http::server::HttpServer;
//! use mcpflow::protocol::{CallToolResult, Tool};
//! use mcpflow::server::Server;
//!
//! # #[tokio::main] async fn main() -> std::io::Result<()> {
//! let server = Server::builder("hello", "1.0.0")
//!     .tool(Tool::new("hello", "Say hello", Tool::empty_input_schema()), |_args, _cx| async {
//!         Ok(CallToolResult::text("hello"))
//!     })
//!     .build();
//! let running = HttpServer::new(server).bind("127.0.0.1:3000").await?;
//! println!("serving {}", running.url());
//! running.wait().await;
//! # Ok(()) }
//! ```
//!
//! To mount the endpoint in an application of your own, take the [`axum::Router`] from
//! [`HttpServer::router`]; it is also a `tower::Service`.

mod events;
mod guard;
mod handlers;
mod session;

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use events::{EventStore, InMemoryEventStore, StreamKey};
use guard::HostGuard;
use session::HttpSession;

use crate::server::Server;

/// Serves a [`Server`] over streamable HTTP. See the [module documentation](self).
pub struct HttpServer {
    server: Server,
    config: Config,
    hosts_set: bool,
}

#[derive(Clone)]
struct Config {
    endpoint: String,
    stateless: bool,
    json_response: bool,
    idle_timeout: Duration,
    max_sessions: usize,
    max_body_bytes: usize,
    store: Option<Arc<dyn EventStore>>,
    retry: Option<Duration>,
    keep_alive: Duration,
    guard: HostGuard,
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("endpoint", &self.config.endpoint)
            .field("stateless", &self.config.stateless)
            .field("json_response", &self.config.json_response)
            .field("idle_timeout", &self.config.idle_timeout)
            .field("max_sessions", &self.config.max_sessions)
            .field("max_body_bytes", &self.config.max_body_bytes)
            .field("resumable", &self.config.store.is_some())
            .field("guard", &self.config.guard)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Serve `server` at `/mcp`, with sessions, SSE responses, an in-memory event store
    /// (1,024 events per session), `retry: 1000`, a 30-minute idle timeout, at most
    /// 10,000 sessions, 16 MiB bodies, and loopback-only `Host`/`Origin`.
    pub fn new(server: Server) -> Self {
        HttpServer {
            server,
            config: Config {
                endpoint: "/mcp".to_owned(),
                stateless: false,
                json_response: false,
                idle_timeout: Duration::from_secs(30 * 60),
                max_sessions: 10_000,
                max_body_bytes: 16 * 1024 * 1024,
                store: Some(Arc::new(InMemoryEventStore::default())),
                retry: Some(Duration::from_millis(1000)),
                keep_alive: Duration::from_secs(15),
                guard: HostGuard::loopback(),
            },
            hosts_set: false,
        }
    }

    /// The endpoint's path (default `/mcp`).
    pub fn endpoint(mut self, path: impl Into<String>) -> Self {
        self.config.endpoint = path.into();
        self
    }

    /// Serve each POST on its own session with no `Mcp-Session-Id` (default off).
    pub fn stateless(mut self, on: bool) -> Self {
        self.config.stateless = on;
        self
    }

    /// Answer requests with one JSON body instead of an event stream when the client
    /// accepts both (default off). Progress and logs of such a request are not sent.
    pub fn json_response(mut self, on: bool) -> Self {
        self.config.json_response = on;
        self
    }

    /// End sessions with no request and nothing in flight for this long (default 30 min).
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.config.idle_timeout = idle;
        self
    }

    /// Refuse new sessions (503) beyond this many (default 10,000).
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.config.max_sessions = n;
        self
    }

    /// Refuse request bodies larger than this (413; default 16 MiB).
    pub fn max_body_bytes(mut self, n: usize) -> Self {
        self.config.max_body_bytes = n;
        self
    }

    /// Keep events in `store` so streams can be resumed (default: in memory).
    pub fn event_store(mut self, store: impl EventStore) -> Self {
        self.config.store = Some(Arc::new(store));
        self
    }

    /// Keep no events: streams cannot be resumed, and are not primed.
    pub fn without_event_store(mut self) -> Self {
        self.config.store = None;
        self
    }

    /// The `retry` interval announced in priming events (default 1 s): how long a
    /// client waits before reconnecting to a stream the server ended.
    pub fn retry_interval(mut self, retry: Duration) -> Self {
        self.config.retry = Some(retry);
        self
    }

    /// Send an SSE comment on a silent stream after this long (default 15 s).
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.config.keep_alive = every;
        self
    }

    /// Accept these `Host` values (`name` for any port, or `name:port`) instead of the
    /// loopback names; an `Origin` on one of these hosts is accepted too.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config
            .guard
            .set_hosts(hosts.into_iter().map(Into::into).collect());
        self.hosts_set = true;
        self
    }

    /// Accept browser requests from these origins (`https://app.example.com`).
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config
            .guard
            .set_origins(origins.into_iter().map(Into::into).collect());
        self.hosts_set = true;
        self
    }

    /// Accept any `Host` and `Origin` (no DNS-rebinding protection): for servers behind
    /// a proxy that checks them, or on public addresses.
    pub fn allow_any_host(mut self) -> Self {
        self.config.guard = HostGuard::off();
        self.hosts_set = true;
        self
    }

    /// The endpoint as an axum router, to serve or to nest in an application.
    pub fn router(self) -> Router {
        self.into_parts().0
    }

    fn into_parts(self) -> (Router, Arc<AppState>) {
        let endpoint = self.config.endpoint.clone();
        let state = Arc::new(AppState {
            server: self.server,
            config: self.config,
            sessions: Mutex::new(HashMap::new()),
            reaper: Mutex::new(None),
        });
        let router = Router::new()
            .route(
                &endpoint,
                post(handlers::post)
                    .get(handlers::get)
                    .delete(handlers::delete),
            )
            .with_state(state.clone());
        (router, state)
    }

    /// Listen on `addr` and serve until [`RunningHttpServer::shutdown`]. On a
    /// non-loopback address, `Host` checks are off unless an allow-list was given.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn bind(
        mut self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> std::io::Result<RunningHttpServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        if !local_addr.ip().is_loopback() && !self.hosts_set {
            tracing::info!(%local_addr, "not bound to loopback: Host and Origin checks are off");
            self.config.guard = HostGuard::off();
        }
        let endpoint = self.config.endpoint.clone();
        let (router, state) = self.into_parts();
        let stop = CancellationToken::new();
        let shutdown = stop.clone();
        let task = tokio::spawn(async move {
            // Each SSE event is written as soon as it is produced; with Nagle's
            // algorithm on, the next small write waits for the client's delayed ACK
            // (about 40 ms per answer).
            let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(error = %e, "could not set TCP_NODELAY");
                }
            });
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled().await })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "the HTTP server stopped");
            }
        });
        Ok(RunningHttpServer {
            local_addr,
            endpoint,
            stop,
            task: Some(task),
            state,
        })
    }
}

/// A server listening on a socket, from [`HttpServer::bind`]. Dropping it stops the
/// server as [`shutdown`](Self::shutdown) does, without waiting.
pub struct RunningHttpServer {
    local_addr: SocketAddr,
    endpoint: String,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
    state: Arc<AppState>,
}

impl Drop for RunningHttpServer {
    fn drop(&mut self) {
        if !self.stop.is_cancelled() {
            self.state.end_all_sessions();
            self.stop.cancel();
        }
    }
}

impl fmt::Debug for RunningHttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningHttpServer")
            .field("local_addr", &self.local_addr)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl RunningHttpServer {
    /// The address it listens on (with the port chosen when binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint's URL, e.g. `http://127.0.0.1:3000/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr, self.endpoint)
    }

    /// Serve until the process ends (the server does not stop on its own).
    pub async fn wait(mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// The number of live sessions.
    pub fn session_count(&self) -> usize {
        lock(&self.state.sessions).len()
    }

    /// Stop accepting connections and end every session (open event streams end, and
    /// in-flight handlers get the close grace); connections still open after 5 seconds
    /// are cut.
    pub async fn shutdown(mut self) {
        self.state.end_all_sessions();
        self.stop.cancel();
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(5), &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

/// State shared by the handlers.
pub(crate) struct AppState {
    server: Server,
    config: Config,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    reaper: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for AppState {
    fn drop(&mut self) {
        self.end_all_sessions();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    fn end_all_sessions(&self) {
        if let Some(reaper) = lock(&self.reaper).take() {
            reaper.abort();
        }
        let sessions: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.terminate();
        }
    }

    fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        lock(&self.sessions).get(id).cloned()
    }

    fn remove_session(&self, id: &str) {
        let removed = lock(&self.sessions).remove(id);
        if let Some(session) = removed {
            tracing::debug!(session = id, "session ended");
            session.terminate();
        }
    }

    fn create_session(self: &Arc<Self>, id: String) -> Result<Arc<HttpSession>, handlers::Refusal> {
        let (session, transport) = {
            let mut sessions = lock(&self.sessions);
            if sessions.len() >= self.config.max_sessions {
                drop(sessions);
                return Err(handlers::refuse(
                    StatusCode::SERVICE_UNAVAILABLE,
                    mcpflow_protocol::ErrorCode::INTERNAL_ERROR,
                    None,
                    format!(
                        "the server already serves {} sessions (max_sessions); try again later",
                        self.config.max_sessions
                    ),
                ));
            }
            let (session, transport) =
                HttpSession::new(id.clone(), self.config.store.clone(), self.config.retry);
            sessions.insert(id.clone(), session.clone());
            (session, transport)
        };
        let running = self.server.serve(transport);
        let state = Arc::downgrade(self);
        tokio::spawn(async move {
            running.wait().await;
            if let Some(state) = state.upgrade() {
                state.remove_session(&id);
            }
        });
        self.start_reaper();
        tracing::debug!(session = %session.id, "session started");
        Ok(session)
    }

    /// End idle sessions now and then; started with the first session, inside the runtime.
    fn start_reaper(self: &Arc<Self>) {
        let mut reaper = lock(&self.reaper);
        if reaper.is_some() {
            return;
        }
        let state: Weak<AppState> = Arc::downgrade(self);
        let idle = self.config.idle_timeout;
        let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
        *reaper = Some(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            loop {
                ticks.tick().await;
                let Some(state) = state.upgrade() else { return };
                let idle_ids: Vec<String> = lock(&state.sessions)
                    .iter()
                    .filter(|(_, s)| s.is_idle(idle))
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in idle_ids {
                    tracing::info!(session = %id, "ending an idle session");
                    state.remove_session(&id);
                }
            }
        }));
    }
}

/// 128 bits from the operating system's CSPRNG, as 32 hex digits; an error when the
/// host has no entropy source (ids must never be guessable).
pub(crate) fn new_session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
