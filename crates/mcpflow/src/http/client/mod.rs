//! The streamable HTTP client transport (protocol 2025-03-26 and later), with the
//! HTTP+SSE transport of 2024-11-05 as a fallback.
//!
//! Every outbound message is POSTed to the server's MCP endpoint, in the order the
//! session sends them, each on its own task so a long answer never holds up the next
//! message. Answers arrive as a JSON body or as an event stream on that POST; a
//! standalone `GET` stream, opened after initialization, carries what the server sends
//! on its own.
//!
//! - **Sessions and versions.** The `Mcp-Session-Id` the server assigns at `initialize`
//!   and the negotiated `MCP-Protocol-Version` go on every later request. A `404` on a
//!   request carrying the session id means the session expired: the transport runs the
//!   original `initialize` again (its answer is not passed on), adopts the new session
//!   id and retries the request once ([`HttpClientBuilder::reinitialize_on_404`]).
//! - **Resumption.** When an event stream ends before the answers it owes, the transport
//!   reconnects with `GET` and `Last-Event-ID`, after the server's `retry:` delay,
//!   at most [`max_reconnects`](HttpClientBuilder::max_reconnects) times in a row.
//! - **Failures name their cause.** An error status (with the start of the body), a
//!   stream that ended or failed with nothing to resume from, exhausted reconnects, a
//!   refused or reset connection, an event stream silent past
//!   [`sse_idle_timeout`](HttpClientBuilder::sse_idle_timeout): each fails the affected
//!   requests at once with [`SessionError::Transport`](crate::SessionError::Transport)
//!   carrying [`TransportError::Http`], while the connection stays open.
//! - **2026-07-28.** A request the client sent in the per-request era is sent without a
//!   session, with `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the
//!   `Mcp-Param-*` headers of the tool's `x-mcp-header` arguments, as the client gave
//!   them with the frame ([`FrameMeta`]: the frame is never read back). A JSON-RPC
//!   error in a 4xx body is its answer; an empty or unreadable body fails it, which
//!   makes the client's probe fall back to `initialize`. Cancelling it closes its
//!   stream.
//! - **Legacy servers.** When the first POST (`initialize`) is answered 400, 404 or 405
//!   without a 2026-07-28 error in its body, the transport opens the URL as an HTTP+SSE
//!   event stream, waits for its `endpoint` event and POSTs every message there; answers
//!   arrive on that stream. When that stream ends, the connection ends.
//! - **Authorization.** With [`HttpClientBuilder::oauth`], a 401 (or a 403
//!   `insufficient_scope`) runs the OAuth 2.1 flow of [`crate::auth`] and the request is
//!   sent again; the token then goes on every request, streams and `DELETE` included.
//!   [`HttpClientBuilder::bearer_token`] supplies a token from elsewhere instead.
//! - **Redirects.** A `307` or `308` within the endpoint's origin is followed; any
//!   other redirect fails the request with an error naming where it pointed: a `301`,
//!   `302` or `303` would turn the POST into a GET, and another origin would receive the
//!   custom headers.
//! - **Close** sends `DELETE` with the session id (bounded by
//!   [`close_timeout`](HttpClientBuilder::close_timeout)) and stops every stream.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use mcpflow::client::Client;
//! use mcpflow::http::client::HttpClientTransport;
//!
//! let transport = HttpClientTransport::builder("http://127.0.0.1:3000/mcp")
//!     .header("x-api-key", "secret")
//!     .bearer_token(|| async { Some("token".to_owned()) })
//!     .max_reconnects(5)
//!     .sse_idle_timeout(Duration::from_secs(120))
//!     .build()?;
//! let client = Client::builder("agent", "1.0").connect(transport).await?;
//! let tools = client.tools().await?;
//! println!("{} tools", tools.len());
//! client.close().await;
//! # Ok(()) }
//! ```

mod authorize;
mod connection;
mod expiry;
mod legacy;
mod outgoing;
mod post;
mod redirect;
mod sse;
mod stream;
pub(crate) mod tls;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::{mpsc, oneshot};

use crate::config::DEFAULT_MAX_FRAME_BYTES;
use crate::error::TransportError;
use crate::session::BoxFuture;
use crate::transport::{
    Frame, FrameMeta, FrameReader, FrameRouter, FrameWriter, InboundFrame, Transport, WriteNow,
};

use connection::{Connection, Delivery};
use outgoing::Outgoing;

/// Frames the transport holds for the session's reader before its streams wait.
const INBOUND_CAPACITY: usize = 64;

/// Returns the bearer token for one request (`None`: send no `Authorization` header).
type TokenProvider = Arc<dyn Fn() -> BoxFuture<'static, Option<String>> + Send + Sync>;

/// The configuration could not be turned into a transport.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The server URL does not parse, or is not `http`/`https`.
    #[error("invalid MCP server URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A custom header name or value is not valid in HTTP.
    #[error("invalid header `{name}`: {reason}")]
    InvalidHeader {
        /// The header name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be created (TLS setup).
    #[error("could not create the HTTP client: {0}")]
    Client(String),
}

/// Configures an [`HttpClientTransport`]. Start with [`HttpClientTransport::builder`].
#[derive(Clone)]
#[must_use]
pub struct HttpClientBuilder {
    url: String,
    headers: Vec<(String, String)>,
    bearer: Option<TokenProvider>,
    oauth: Option<crate::auth::OAuthConfig>,
    max_reconnects: u32,
    sse_idle_timeout: Duration,
    reconnect_delay: Duration,
    connect_timeout: Duration,
    close_timeout: Duration,
    max_frame_bytes: usize,
    reinitialize_on_404: bool,
    legacy_sse_fallback: bool,
}

impl fmt::Debug for HttpClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientBuilder")
            .field("url", &self.url)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("bearer", &self.bearer.is_some())
            .field("oauth", &self.oauth)
            .field("max_reconnects", &self.max_reconnects)
            .field("sse_idle_timeout", &self.sse_idle_timeout)
            .field("reconnect_delay", &self.reconnect_delay)
            .field("connect_timeout", &self.connect_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("reinitialize_on_404", &self.reinitialize_on_404)
            .field("legacy_sse_fallback", &self.legacy_sse_fallback)
            .finish()
    }
}

impl HttpClientBuilder {
    fn new(url: String) -> Self {
        HttpClientBuilder {
            url,
            headers: Vec::new(),
            bearer: None,
            oauth: None,
            max_reconnects: 5,
            sse_idle_timeout: Duration::from_secs(300),
            reconnect_delay: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(10),
            close_timeout: Duration::from_secs(2),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            reinitialize_on_404: true,
            legacy_sse_fallback: true,
        }
    }

    /// Send this header on every request (POST, GET and DELETE). May be repeated.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Call `provider` before every request and send what it returns as
    /// `Authorization: Bearer <token>` (`None`: no header). Default: no token.
    pub fn bearer_token<F, Fut>(mut self, provider: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<String>> + Send + 'static,
    {
        self.bearer = Some(Arc::new(move || Box::pin(provider())));
        self
    }

    /// Run OAuth 2.1 when the server asks for it: on a 401 (or a 403
    /// `insufficient_scope`), discover the authorization server, obtain a token as
    /// `config` says and send the request again; then send the token on every request.
    /// Replaces [`bearer_token`](Self::bearer_token). Default: off.
    pub fn oauth(mut self, config: crate::auth::OAuthConfig) -> Self {
        self.oauth = Some(config);
        self
    }

    /// Most reconnect attempts in a row for one event stream (a resumed stream that
    /// delivers events starts the count again). When they are used up, the requests
    /// that stream owed fail. Default: 5.
    pub fn max_reconnects(mut self, n: u32) -> Self {
        self.max_reconnects = n;
        self
    }

    /// Longest silence (no bytes at all) on an event stream or response body that
    /// still owes answers; past it those requests fail. A silent standalone `GET`
    /// stream is reopened instead. Raise it for tools that run long without progress.
    /// Default: 300 s.
    pub fn sse_idle_timeout(mut self, timeout: Duration) -> Self {
        self.sse_idle_timeout = timeout;
        self
    }

    /// Wait before reconnecting an event stream whose server sent no `retry:` field.
    /// A server's `retry:` value wins, but a reconnect waits at least 100 ms and at most
    /// 30 s (or this delay, when longer) whatever the server asks. Default: 1 s.
    pub fn reconnect_delay(mut self, delay: Duration) -> Self {
        self.reconnect_delay = delay;
        self
    }

    /// Longest wait for a TCP (and TLS) connection to the server. Default: 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Longest wait, on close, for queued messages to be sent and for the `DELETE`
    /// that ends the session. Default: 2 s.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Largest accepted message (an event's data or a JSON body), in bytes. A larger
    /// event is skipped and reported to the session; a larger JSON body fails its
    /// request. Default: 32 MiB.
    pub fn max_frame_bytes(mut self, n: usize) -> Self {
        self.max_frame_bytes = n;
        self
    }

    /// On `404 Not Found` for a request carrying the session id (the session expired),
    /// run the original `initialize` again, adopt the new session and retry the
    /// request once. When off, such requests fail with an error naming the expired
    /// session. Default: on.
    pub fn reinitialize_on_404(mut self, on: bool) -> Self {
        self.reinitialize_on_404 = on;
        self
    }

    /// When the first POST (`initialize`) is answered 400, 404 or 405 (and its body is
    /// not a 2026-07-28 JSON-RPC error), try the HTTP+SSE transport of 2024-11-05 on the
    /// same URL. Default: on.
    pub fn legacy_sse_fallback(mut self, on: bool) -> Self {
        self.legacy_sse_fallback = on;
        self
    }

    /// Check the configuration and create the transport. Nothing is sent until a
    /// session starts on it.
    ///
    /// # Errors
    /// [`BuildError`] for a URL that is not `http`/`https` (or `https` without the
    /// `rustls` feature), an invalid header, or an HTTP client that cannot be created.
    pub fn build(self) -> Result<HttpClientTransport, BuildError> {
        let invalid_url = |reason: String| BuildError::InvalidUrl {
            url: self.url.clone(),
            reason,
        };
        let url = Url::parse(&self.url).map_err(|e| invalid_url(e.to_string()))?;
        match url.scheme() {
            "http" => {}
            "https" if cfg!(feature = "rustls") => {}
            "https" => {
                return Err(invalid_url(
                    "https needs the `rustls` feature of mcpflow".to_owned(),
                ));
            }
            other => return Err(invalid_url(format!("unsupported scheme `{other}`"))),
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let invalid = |reason: String| BuildError::InvalidHeader {
                name: name.clone(),
                reason,
            };
            let header =
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(e.to_string()))?;
            let value = HeaderValue::from_str(value).map_err(|e| invalid(e.to_string()))?;
            headers.append(header, value);
        }
        let client = || tls::client_builder().connect_timeout(self.connect_timeout);
        let http = client()
            .redirect(redirect::policy())
            .build()
            .map_err(|e| BuildError::Client(e.to_string()))?;
        let oauth = match self.oauth {
            // The authorization server's redirects are its own: reqwest's default policy.
            Some(c) => Some(Arc::new(crate::auth::oauth::OAuthClient::new(
                c,
                client()
                    .build()
                    .map_err(|e| BuildError::Client(e.to_string()))?,
                url.clone(),
            ))),
            None => None,
        };
        let config = connection::Config {
            url,
            headers,
            bearer: self.bearer,
            oauth,
            max_reconnects: self.max_reconnects,
            sse_idle_timeout: self.sse_idle_timeout,
            reconnect_delay: self.reconnect_delay,
            close_timeout: self.close_timeout,
            max_frame_bytes: self.max_frame_bytes,
            reinitialize_on_404: self.reinitialize_on_404,
            legacy_sse_fallback: self.legacy_sse_fallback,
        };
        Ok(HttpClientTransport { config, http })
    }
}

/// A client transport speaking streamable HTTP to one MCP endpoint (see the
/// [module docs](self)). Hand it to [`ClientBuilder::connect`](crate::client::ClientBuilder::connect).
pub struct HttpClientTransport {
    config: connection::Config,
    http: reqwest::Client,
}

impl fmt::Debug for HttpClientTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientTransport")
            .field("url", &self.config.url.as_str())
            .finish_non_exhaustive()
    }
}

impl HttpClientTransport {
    /// Start configuring a transport to the MCP endpoint at `url`
    /// (e.g. `http://127.0.0.1:3000/mcp`).
    pub fn builder(url: impl Into<String>) -> HttpClientBuilder {
        HttpClientBuilder::new(url.into())
    }

    /// A transport to `url` with the default configuration.
    ///
    /// # Errors
    /// As [`HttpClientBuilder::build`].
    pub fn new(url: impl Into<String>) -> Result<HttpClientTransport, BuildError> {
        HttpClientTransport::builder(url).build()
    }

    /// The server URL.
    pub fn url(&self) -> &str {
        self.config.url.as_str()
    }
}

impl Transport for HttpClientTransport {
    type Reader = HttpClientReader;
    type Writer = HttpClientWriter;

    fn carrier(&self) -> crate::transport::Carrier {
        crate::transport::Carrier::Http
    }

    fn split(self) -> (HttpClientReader, HttpClientWriter) {
        let (tx, rx) = mpsc::channel(INBOUND_CAPACITY);
        let conn = Arc::new(Connection::new(self.config, self.http, tx));
        let owner = Arc::new(Owner { conn: conn.clone() });
        (
            HttpClientReader {
                inbound: rx,
                conn: conn.clone(),
                _owner: owner.clone(),
                ended: false,
            },
            HttpClientWriter {
                conn,
                _owner: owner,
                last_sent: None,
                closed: false,
            },
        )
    }
}

/// Stops every task of the connection when both halves are gone.
struct Owner {
    conn: Arc<Connection>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.conn.stop();
    }
}

/// The receiving half of an [`HttpClientTransport`]: messages from every POST
/// response, resumed stream and the standalone stream, in the order each stream
/// delivered them.
pub struct HttpClientReader {
    inbound: mpsc::Receiver<Delivery>,
    conn: Arc<Connection>,
    _owner: Arc<Owner>,
    ended: bool,
}

impl fmt::Debug for HttpClientReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientReader")
            .field("url", &self.conn.config.url.as_str())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl FrameReader for HttpClientReader {
    /// Answers to a server's batch are POSTed one by one, each routed by its id.
    fn answers_batches_whole(&self) -> bool {
        false
    }

    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
        if self.ended {
            return Ok(None);
        }
        // A close ends reading at once; both branches are cancel-safe.
        let delivery = tokio::select! {
            biased;
            () = self.conn.stopped() => None,
            delivery = self.inbound.recv() => delivery,
        };
        match delivery {
            Some(Delivery::Frame(frame)) => Ok(Some(frame)),
            Some(Delivery::End(error)) => {
                self.ended = true;
                Err(error)
            }
            None => {
                self.ended = true;
                Ok(None)
            }
        }
    }

    /// Each POST's response is routed from the task reading it.
    fn set_router(&mut self, router: FrameRouter) {
        let _ = self.conn.router.set(router);
    }
}

impl HttpClientWriter {
    /// Start the POST of `frame`, after the previous frame's.
    fn post(&mut self, frame: Frame, meta: &FrameMeta) {
        let outgoing = Outgoing::new(frame.into_bytes(), meta);
        self.conn.observe_outgoing(&outgoing);
        let (sent, next) = oneshot::channel();
        let previous = self.last_sent.replace(next);
        let conn = self.conn.clone();
        self.conn.spawn(post::send(conn, outgoing, previous, sent));
    }
}

/// The sending half of an [`HttpClientTransport`]: one POST per frame.
pub struct HttpClientWriter {
    conn: Arc<Connection>,
    _owner: Arc<Owner>,
    /// Fires when the previous frame's POST lets the next one go.
    last_sent: Option<oneshot::Receiver<()>>,
    closed: bool,
}

impl fmt::Debug for HttpClientWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientWriter")
            .field("url", &self.conn.config.url.as_str())
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl FrameWriter for HttpClientWriter {
    async fn write_frame(&mut self, frame: Frame, meta: &FrameMeta) -> Result<(), TransportError> {
        if self.closed {
            return Err(TransportError::Http {
                context: "POST",
                status: None,
                detail: "the transport was closed".to_owned(),
            });
        }
        self.post(frame, meta);
        Ok(())
    }

    /// Starting a POST never waits, so the caller's task may do it.
    fn try_write_now(&mut self, frame: &Frame, meta: &FrameMeta) -> WriteNow {
        if self.closed {
            return WriteNow::Declined;
        }
        self.post(frame.clone(), meta);
        WriteNow::Sent
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }

    async fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let limit = self.conn.config.close_timeout;
        if let Some(last) = self.last_sent.take() {
            // Let queued messages (a final notification) go out first.
            let _ = tokio::time::timeout(limit, last).await;
        }
        self.conn.stop();
        self.conn.terminate_session().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_defaults() {
        let b = HttpClientTransport::builder("http://127.0.0.1:1/mcp");
        assert_eq!(b.max_reconnects, 5);
        assert_eq!(b.sse_idle_timeout, Duration::from_secs(300));
        assert_eq!(b.reconnect_delay, Duration::from_secs(1));
        assert_eq!(b.connect_timeout, Duration::from_secs(10));
        assert_eq!(b.close_timeout, Duration::from_secs(2));
        assert_eq!(b.max_frame_bytes, 32 * 1024 * 1024);
        assert!(b.reinitialize_on_404);
        assert!(b.legacy_sse_fallback);
    }

    #[test]
    fn rejects_bad_urls_and_headers() {
        assert!(matches!(
            HttpClientTransport::new("not a url"),
            Err(BuildError::InvalidUrl { .. })
        ));
        assert!(matches!(
            HttpClientTransport::new("ftp://example.com/mcp"),
            Err(BuildError::InvalidUrl { .. })
        ));
        let bad = HttpClientTransport::builder("http://127.0.0.1:1/mcp")
            .header("bad header", "x")
            .build();
        assert!(matches!(bad, Err(BuildError::InvalidHeader { .. })));
        let bad = HttpClientTransport::builder("http://127.0.0.1:1/mcp")
            .header("x-ok", "line\nbreak")
            .build();
        assert!(matches!(bad, Err(BuildError::InvalidHeader { .. })));
    }
}
