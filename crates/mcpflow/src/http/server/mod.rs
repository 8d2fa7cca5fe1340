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
//! - **Responses.** A POST of one request is answered when its first message is known:
//!   the response itself goes back as one JSON body (nothing is stored for it);
//!   anything else first (progress, a log, a server-to-client request), or no message
//!   within a second, starts an event stream that carries it, what follows and the
//!   response, each event written as it is produced. A batch is answered with an event
//!   stream. One JSON body always when the client accepts only JSON or
//!   [`json_response`](HttpServer::json_response) is set, and an event stream always
//!   when it accepts only that. Notifications and responses alone get 202.
//! - **The standalone stream.** `GET` opens the stream for messages not caused by a
//!   request (`list_changed`, requests of the server's own). Until the client opens
//!   it, such messages ride the newest open request stream instead of being dropped.
//! - **Resumability** (SEP-1699). With an [`EventStore`] (in memory by default), events
//!   have ids; a stream to a 2025-11-25 client opens with a priming event carrying an id
//!   and `retry`; a client that lost a stream resumes it with `GET` and `Last-Event-ID`.
//! - **DNS-rebinding protection.** `Host` and `Origin` must name a loopback host unless
//!   allow-listed; [`bind`](HttpServer::bind) on a non-loopback address turns the check
//!   off unless an allow-list was given.
//! - **Authorization** ([`auth`](HttpServer::auth), with `http-client`): OAuth bearer
//!   tokens checked by a token verifier, protected-resource metadata at the well-known
//!   paths, 401/403 challenges, scopes per tool or method, sessions bound to the
//!   principal that created them; see the [`auth`] module.
//! - **Stateless mode** ([`stateless`](HttpServer::stateless)) serves each POST on its
//!   own short-lived session, for horizontal scaling; it has no GET stream, and a
//!   server-to-client request cannot be answered there.
//! - **Several instances** ([`session_store`](HttpServer::session_store)) share
//!   handshake-era sessions, their resumable streams and the answers to server-to-client
//!   requests, so that any instance behind a plain load balancer serves any request;
//!   see [`fleet`].
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
//! [`HttpServer::router`]; it is also a `tower::Service`. The connection limits below
//! are then the application's to set; the others hold.
//!
//! # Limits
//!
//! Each has a builder method; `docs/deployment.md` says what each protects against.
//!
//! | limit | default | when reached |
//! | --- | --- | --- |
//! | [`header_timeout`](HttpServer::header_timeout) | 20 s | the connection is closed (also an idle keep-alive one) |
//! | [`max_connections`](HttpServer::max_connections) | 7/8 of the open-file limit, at most 10,000 | a new connection takes the place of the oldest that has sent no request in 1 s; else it waits in the listen backlog |
//! | [`write_timeout`](HttpServer::write_timeout) | 30 s | the connection is closed; an event stream can be resumed |
//! | [`max_body_bytes`](HttpServer::max_body_bytes) | 16 MiB | 413, from `Content-Length` before reading |
//! | [`body_timeout`](HttpServer::body_timeout) | 30 s | 408 |
//! | [`max_buffered_body_bytes`](HttpServer::max_buffered_body_bytes) | 256 MiB | 503 with `Retry-After` |
//! | [`max_queued_event_bytes`](HttpServer::max_queued_event_bytes) | 256 MiB (and 64 MiB per stream) | a stream whose client is behind is cut; it can be resumed |
//! | [`max_sessions`](HttpServer::max_sessions) | 10,000 | an idle session is evicted (unused ones first, oldest first); 503 when none is idle |
//! | [`max_sessionless_requests`](HttpServer::max_sessionless_requests) | 1,024 running, and [`sessionless_queue_capacity`](HttpServer::sessionless_queue_capacity) 4,096 waiting | requests without a session (2026-07-28, or stateless mode) wait for a slot; past the queue, 503 with `Retry-After` |
//! | [`session_idle_timeout`](HttpServer::session_idle_timeout) | 30 min | the session ends |
//! | [`unused_session_idle_timeout`](HttpServer::unused_session_idle_timeout) | 1 min | a session that served only `initialize` ends |
//!
//! A malformed body is answered 400. [`RunningHttpServer::stats`] reports what the
//! server holds and how many sessions it ended on its own.

#[cfg(feature = "http-client")]
pub mod auth;
mod body;
mod checks;
mod cors;
mod events;
pub mod fleet;
mod guard;
mod handlers;
mod listener;
mod posted;
mod routes;
mod running;
pub use running::{HttpServerStats, RunningHttpServer};
mod session;
mod session_transport;
mod sessionless;
mod slots;
mod table;

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use body::BodyLimits;
pub use events::{EventStore, InMemoryEventStore, StreamKey};
use guard::HostGuard;
use listener::ConnectionLimits;
#[cfg(unix)]
pub use listener::raise_open_file_limit;
use table::{AppState, lock};

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
    unused_idle_timeout: Duration,
    max_sessions: usize,
    max_sessionless_requests: usize,
    sessionless_queue_capacity: usize,
    body: BodyLimits,
    max_buffered_body_bytes: usize,
    max_queued_event_bytes: usize,
    max_connections: Option<usize>,
    header_timeout: Duration,
    write_timeout: Duration,
    store: Option<Arc<dyn EventStore>>,
    /// A fleet's shared sessions, in place of `store`.
    sessions: Option<Arc<dyn fleet::SessionStore>>,
    retry: Option<Duration>,
    keep_alive: Duration,
    guard: HostGuard,
    #[cfg(feature = "http-client")]
    auth: Option<Arc<auth::ResourceAuth>>,
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("endpoint", &self.config.endpoint)
            .field("stateless", &self.config.stateless)
            .field("json_response", &self.config.json_response)
            .field("idle_timeout", &self.config.idle_timeout)
            .field("unused_idle_timeout", &self.config.unused_idle_timeout)
            .field("max_sessions", &self.config.max_sessions)
            .field(
                "max_sessionless_requests",
                &self.config.max_sessionless_requests,
            )
            .field(
                "sessionless_queue_capacity",
                &self.config.sessionless_queue_capacity,
            )
            .field("body", &self.config.body)
            .field(
                "max_buffered_body_bytes",
                &self.config.max_buffered_body_bytes,
            )
            .field(
                "max_queued_event_bytes",
                &self.config.max_queued_event_bytes,
            )
            .field("max_connections", &self.config.max_connections)
            .field("header_timeout", &self.config.header_timeout)
            .field("write_timeout", &self.config.write_timeout)
            .field("resumable", &self.config.store.is_some())
            .field("guard", &self.config.guard)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Serve `server` at `/mcp`, with sessions, SSE responses, an in-memory event store
    /// (1,024 events per session), `retry: 1000`, loopback-only `Host`/`Origin`, and
    /// the limits of the [module documentation](self#limits).
    pub fn new(server: Server) -> Self {
        HttpServer {
            server,
            config: Config {
                endpoint: "/mcp".to_owned(),
                stateless: false,
                json_response: false,
                idle_timeout: Duration::from_secs(30 * 60),
                unused_idle_timeout: Duration::from_secs(60),
                max_sessions: 10_000,
                max_sessionless_requests: 1024,
                sessionless_queue_capacity: 4096,
                body: BodyLimits {
                    max_bytes: 16 * 1024 * 1024,
                    timeout: Duration::from_secs(30),
                },
                max_buffered_body_bytes: 256 * 1024 * 1024,
                max_queued_event_bytes: 256 * 1024 * 1024,
                max_connections: None,
                header_timeout: Duration::from_secs(20),
                write_timeout: Duration::from_secs(30),
                store: Some(Arc::new(InMemoryEventStore::default())),
                sessions: None,
                retry: Some(Duration::from_millis(1000)),
                keep_alive: Duration::from_secs(15),
                guard: HostGuard::loopback(),
                #[cfg(feature = "http-client")]
                auth: None,
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

    /// Answer every request with one JSON body, even one that sends progress, logs or
    /// requests before its response, when the client accepts both (default off: such a
    /// request gets an event stream). Progress and logs of such a request are not sent.
    pub fn json_response(mut self, on: bool) -> Self {
        self.config.json_response = on;
        self
    }

    /// End sessions with no request and nothing in flight for this long (default 30 min).
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.config.idle_timeout = idle;
        self
    }

    /// End sessions that never served more than their `initialize` after this long
    /// idle (default 1 min; never longer than the session idle timeout).
    pub fn unused_session_idle_timeout(mut self, idle: Duration) -> Self {
        self.config.unused_idle_timeout = idle;
        self
    }

    /// At most this many sessions (default 10,000). A new session beyond it evicts an
    /// idle one, or is refused with 503 when none is idle.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.config.max_sessions = n;
        self
    }

    /// Run at most this many requests served without a session at once: 2026-07-28
    /// requests without `Mcp-Session-Id`, and every POST in [stateless](Self::stateless)
    /// mode (default 1,024). Each has an engine connection of its own, so the
    /// per-connection limit of [`SessionConfig`](crate::SessionConfig) bounds
    /// none of them together. Past it a request waits for a slot, up to
    /// [`sessionless_queue_capacity`](Self::sessionless_queue_capacity) of them; past
    /// that it is refused with 503 and `Retry-After`. `subscriptions/listen` streams
    /// take no slot.
    pub fn max_sessionless_requests(mut self, n: usize) -> Self {
        self.config.max_sessionless_requests = n.max(1);
        self
    }

    /// How many requests without a session may wait for a slot when
    /// [`max_sessionless_requests`](Self::max_sessionless_requests) run (default 4,096).
    pub fn sessionless_queue_capacity(mut self, n: usize) -> Self {
        self.config.sessionless_queue_capacity = n;
        self
    }

    /// Refuse request bodies larger than this (413, from `Content-Length` before
    /// reading when it is given; default 16 MiB).
    pub fn max_body_bytes(mut self, n: usize) -> Self {
        self.config.body.max_bytes = n;
        self
    }

    /// Refuse a request whose body has not arrived in full within this long (408;
    /// default 30 s).
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.config.body.timeout = timeout;
        self
    }

    /// Buffer at most this many bytes of request bodies across all requests; a body
    /// that would go beyond is refused with 503 (default 256 MiB).
    pub fn max_buffered_body_bytes(mut self, n: usize) -> Self {
        self.config.max_buffered_body_bytes = n;
        self
    }

    /// Queue at most this many bytes of events across all event streams; beyond it, a
    /// stream whose client is behind, or whose next event is over 64 KiB, loses its
    /// connection, and can resume from the event store (default 256 MiB; each stream
    /// may also fall at most 64 MiB behind).
    pub fn max_queued_event_bytes(mut self, n: usize) -> Self {
        self.config.max_queued_event_bytes = n;
        self
    }

    /// Serve at most this many connections at once (with [`bind`](Self::bind)). At the
    /// cap, a new connection takes the place of the oldest one that has not sent a
    /// whole request within 1 s (slowloris); when there is none, new connections wait
    /// in the listen backlog. Default: seven eighths of the process's open-file limit
    /// at `bind`, at most 10,000.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.config.max_connections = Some(n.max(1));
        self
    }

    /// Close a connection whose request headers have not arrived in full within this
    /// long, which includes an idle keep-alive connection waiting for its next request
    /// (with [`bind`](Self::bind); default 20 s).
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.config.header_timeout = timeout;
        self
    }

    /// Close a connection whose client has taken no byte of a response for this long
    /// (with [`bind`](Self::bind); default 30 s). A closed event stream can be resumed.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.config.write_timeout = timeout;
        self
    }

    /// Keep events in `store` so streams can be resumed (default: in memory).
    pub fn event_store(mut self, store: impl EventStore) -> Self {
        self.config.store = Some(Arc::new(store));
        self
    }

    /// Share sessions with the other instances of this server through `store`, so that
    /// any of them serves any request of any handshake-era session behind a plain load
    /// balancer (see [`fleet`]). Its event logs take the place of the
    /// [`event_store`](Self::event_store). Sessionless 2026-07-28 requests never touch it.
    pub fn session_store(mut self, store: Arc<dyn fleet::SessionStore>) -> Self {
        self.config.sessions = Some(store);
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

    /// Accept browser requests from these origins (`https://app.example.com`; `*` for
    /// any): their preflights are answered and their pages may read the answers (CORS),
    /// as may pages served from an allowed host. Other origins are refused (403).
    ///
    /// ```
    /// # use mcpflow::http::server::HttpServer;
    /// # use mcpflow::server::Server;
    /// let server = Server::builder("calc", "1.0.0").build();
    /// let http = HttpServer::new(server).allowed_origins(["https://app.example.com"]);
    /// # drop(http);
    /// ```
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

    /// Authorize every request with OAuth bearer tokens, and serve the
    /// protected-resource metadata (default: no authorization). See [`auth`].
    #[cfg(feature = "http-client")]
    pub fn auth(mut self, auth: auth::ResourceAuth) -> Self {
        self.config.auth = Some(Arc::new(auth));
        self
    }

    /// The endpoint as an axum router, to serve or to nest in an application.
    pub fn router(self) -> Router {
        self.into_parts().0
    }

    fn into_parts(self) -> (Router, Arc<AppState>) {
        let endpoint = self.config.endpoint.clone();
        let state = Arc::new(AppState::new(self.server, self.config));
        if let Some(shared) = &state.config.sessions {
            shared.deliver_to(fleet::endpoint::deliver_forwarded(Arc::downgrade(&state)));
        }
        let mcp = post(handlers::post)
            .get(handlers::get)
            .delete(handlers::delete);
        // Only with authorization configured: a layer costs every request its boxing.
        #[cfg(feature = "http-client")]
        let mcp = if state.config.auth.is_some() {
            mcp.layer(axum::middleware::from_fn_with_state(
                state.clone(),
                auth::authorize,
            ))
        } else {
            mcp
        };
        // Outside the authorization layer: a preflight carries no token, and a page must
        // be able to read a 401's challenge.
        let mcp = mcp.layer(axum::middleware::from_fn_with_state(
            state.clone(),
            cors::cors,
        ));
        #[allow(unused_mut)] // mutated only with authorization compiled in
        let mut router = Router::new().route(&endpoint, mcp);
        #[cfg(feature = "http-client")]
        if let Some(resource) = &state.config.auth {
            for path in auth::metadata_paths(resource) {
                router = router.route(&path, axum::routing::get(auth::serve_metadata));
            }
        }
        let router = router.layer(axum::middleware::from_fn(body::close_if_unread));
        (router.with_state(state.clone()), state)
    }

    /// Listen on `addr` and serve until [`RunningHttpServer::shutdown`]. On a
    /// non-loopback address, `Host` checks are off unless an allow-list was given.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn bind(
        self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> std::io::Result<RunningHttpServer> {
        self.serve_listener(tokio::net::TcpListener::bind(addr).await?)
    }

    /// Serve on a listener already bound (e.g. when the address must be known before
    /// the server is configured), as [`bind`](Self::bind) does.
    ///
    /// # Errors
    /// When the listener's address cannot be read.
    pub fn serve_listener(
        mut self,
        listener: tokio::net::TcpListener,
    ) -> std::io::Result<RunningHttpServer> {
        let local_addr = listener.local_addr()?;
        if !local_addr.ip().is_loopback() && !self.hosts_set {
            tracing::info!(%local_addr, "not bound to loopback: Host and Origin checks are off");
            self.config.guard = HostGuard::off();
        }
        let endpoint = self.config.endpoint.clone();
        let limits = ConnectionLimits {
            max_connections: self
                .config
                .max_connections
                .unwrap_or_else(default_max_connections),
            header_timeout: self.config.header_timeout,
            write_timeout: self.config.write_timeout,
        };
        let (router, state) = self.into_parts();
        let stop = CancellationToken::new();
        let task = tokio::spawn(listener::serve(
            listener,
            router,
            limits,
            state.connections.clone(),
            stop.clone(),
        ));
        #[cfg(feature = "otel")]
        running::observe(local_addr, Arc::downgrade(&state));
        Ok(RunningHttpServer {
            local_addr,
            endpoint,
            stop,
            task: Some(task),
            state,
        })
    }
}

/// The connection cap when none is set: seven eighths of the open-file limit (the rest
/// for the files and sockets the server's own work needs), at most 10,000.
fn default_max_connections() -> usize {
    let from_files = listener::open_file_limit().map_or(usize::MAX, |n| {
        usize::try_from(n / 8 * 7).unwrap_or(usize::MAX)
    });
    from_files.clamp(1, 10_000)
}

/// 128 bits from the operating system's CSPRNG, as 32 hex digits; an error when the
/// host has no entropy source (ids must never be guessable).
pub(crate) fn new_session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
