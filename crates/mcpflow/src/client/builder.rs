//! Building a client: identity, callbacks and limits, then the handshake that
//! [`ClientBuilder::connect`] runs.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpflow_protocol::jsonrpc::Notification;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCompleteNotificationParams, EmptyParams, ErrorObject,
    HANDSHAKE_VERSIONS, Implementation, InitializeRequestParams, InitializeResult, JsonObject,
    LoggingLevel, LoggingMessageNotificationParams, ProtocolVersion, Root,
};

use super::adapter::EraAdapter;
use super::era::{self, Era, EraMemory, Probe};
use super::headers::ToolHeaders;
use super::output::OutputValidators;
use super::per_request;
use super::service::ClientService;
use super::{Caches, Client, ClientContext, ClientHandle, ClientShared};
use crate::config::SessionConfig;
use crate::error::SessionError;
use crate::session::{BoxFuture, RequestOptions, Session};
use crate::transport::Transport;

/// Answers `sampling/createMessage`.
pub type SamplingHandler = Arc<
    dyn Fn(
            CreateMessageRequestParams,
            ClientContext,
        ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>>
        + Send
        + Sync,
>;
/// Answers `elicitation/create` (form and URL modes), and sees the URL elicitations of
/// a `-32042` error.
pub type ElicitationHandler = Arc<
    dyn Fn(
            ElicitRequestParams,
            ClientContext,
        ) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>>
        + Send
        + Sync,
>;
/// Answers `roots/list`.
pub type RootsHandler =
    Arc<dyn Fn(ClientContext) -> BoxFuture<'static, Result<Vec<Root>, ErrorObject>> + Send + Sync>;
/// Receives `notifications/elicitation/complete`, on the notification lane.
pub type ElicitationCompleteHandler = Arc<
    dyn Fn(ElicitationCompleteNotificationParams, ClientHandle) -> BoxFuture<'static, ()>
        + Send
        + Sync,
>;
/// Receives `notifications/message`, on the notification lane.
pub type LogHandler = Arc<
    dyn Fn(LoggingMessageNotificationParams, ClientHandle) -> BoxFuture<'static, ()> + Send + Sync,
>;
/// Receives every server notification, on the notification lane, in receive order.
pub type NotificationHandler =
    Arc<dyn Fn(Notification, ClientHandle) -> BoxFuture<'static, ()> + Send + Sync>;

/// The handshake failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// `initialize` did not succeed, or the `server/discover` probe before it: the
    /// connection ended during it, the server refused the authorization, or (for a
    /// client pinned to [`Era::PerRequest`]) it got no answer in time.
    #[error("initialize failed: {0}")]
    Initialize(#[from] SessionError),
    /// The server does not speak 2026-07-28 and the client was pinned to it
    /// ([`Era::PerRequest`]), or it speaks only versions this client does not. It holds
    /// what `server/discover` got: the server's error (`-32601` from a handshake-only
    /// server), or why its answer does not do.
    #[error("the server does not speak 2026-07-28: {0}")]
    HandshakeOnly(SessionError),
    /// The server chose a protocol version this client does not speak.
    #[error(
        "the server chose protocol version {chosen}, which this client does not support (supported: {supported})"
    )]
    UnsupportedVersion {
        /// What the server answered.
        chosen: String,
        /// What this client speaks.
        supported: String,
    },
}

/// Builds a [`Client`]: identity, callbacks, limits.
#[must_use]
pub struct ClientBuilder {
    info: Implementation,
    protocol_version: ProtocolVersion,
    config: SessionConfig,
    handlers: Handlers,
    era: Era,
    era_memory: EraMemory,
    discover_timeout: Duration,
    max_input_rounds: usize,
    log_level: Option<LoggingLevel>,
}

/// Default wait for the `server/discover` probe before falling back to `initialize`.
const DISCOVER_TIMEOUT: Duration = Duration::from_secs(5);
/// Default most `input_required` rounds of one request.
const MAX_INPUT_ROUNDS: usize = 8;

/// The callbacks a builder was given; the client's service answers with them.
#[derive(Default, Clone)]
pub(super) struct Handlers {
    pub(super) sampling: Option<SamplingHandler>,
    pub(super) sampling_tools: bool,
    pub(super) elicitation: Option<ElicitationHandler>,
    pub(super) url_elicitation: bool,
    pub(super) roots: Option<RootsHandler>,
    pub(super) roots_list_changed: bool,
    pub(super) elicitation_complete: Option<ElicitationCompleteHandler>,
    pub(super) log: Option<LogHandler>,
    pub(super) notification: Option<NotificationHandler>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("protocol_version", &self.protocol_version)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    pub(super) fn new(info: Implementation) -> ClientBuilder {
        ClientBuilder {
            info,
            protocol_version: ProtocolVersion::LATEST_HANDSHAKE,
            config: SessionConfig::default(),
            handlers: Handlers::default(),
            era: Era::Handshake,
            era_memory: EraMemory::new(),
            discover_timeout: DISCOVER_TIMEOUT,
            max_input_rounds: MAX_INPUT_ROUNDS,
            log_level: None,
        }
    }

    /// Which protocol era to speak (default [`Era::Handshake`]; [`Era::Auto`] probes with
    /// `server/discover`, speaks 2026-07-28 when the server does, else runs the
    /// `initialize` handshake).
    pub fn era(mut self, era: Era) -> Self {
        self.era = era;
        self
    }

    /// What connections learnt of the server's era, shared with other builders that
    /// connect to the same server (default: a memory of this builder's own, so every
    /// connection in [`Era::Auto`] probes). See [`EraMemory`].
    pub fn era_memory(mut self, memory: EraMemory) -> Self {
        self.era_memory = memory;
        self
    }

    /// Longest wait for the answer to the `server/discover` probe in [`Era::Auto`]; past
    /// it the server is taken to speak only the handshake era. Default: 5 s. Pinned to
    /// [`Era::PerRequest`], the probe has nothing to fall back to and waits the
    /// [request timeout](crate::SessionConfigBuilder::request_timeout) instead.
    pub fn discover_timeout(mut self, timeout: Duration) -> Self {
        self.discover_timeout = timeout;
        self
    }

    /// Most `input_required` rounds (2026-07-28) one request may take before it fails.
    /// Default: 8.
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_input_rounds = rounds;
        self
    }

    /// With a 2026-07-28 server: ask for log messages at or above `level` on every
    /// request (`_meta` `logLevel`); without it the server sends none.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// The protocol version to ask for (default: the newest handshake version,
    /// 2025-11-25). The server may answer with an older one it supports.
    pub fn protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.protocol_version = version;
        self
    }

    /// The display name sent in `clientInfo.title`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// A description sent in `clientInfo.description`.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.info.description = Some(text.into());
        self
    }

    /// The home page sent in `clientInfo.websiteUrl`.
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.info.website_url = Some(url.into());
        self
    }

    /// Icons sent in `clientInfo.icons`.
    pub fn icons(mut self, icons: Vec<mcpflow_protocol::Icon>) -> Self {
        self.info.icons = Some(icons);
        self
    }

    /// Limits and timeouts of the connection.
    pub fn session_config(mut self, config: SessionConfig) -> Self {
        self.config = config;
        self
    }

    /// Serve `sampling/createMessage` (declares the `sampling` capability). The handler
    /// may call the server back. Requests with `tools` are refused; see
    /// [`on_sampling_with_tools`](Self::on_sampling_with_tools).
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams, ClientContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.handlers.sampling = Some(Arc::new(move |p, c| Box::pin(handler(p, c))));
        self.handlers.sampling_tools = false;
        self
    }

    /// Serve `sampling/createMessage` with tools (declares `sampling` with `tools`,
    /// 2025-11-25): the handler gets the request's `tools` and `tool_choice`, and may
    /// answer with [`ContentBlock::ToolUse`](mcpflow_protocol::ContentBlock::ToolUse)
    /// blocks and the stop reason `toolUse`; the server runs the tools and asks again
    /// with their results.
    pub fn on_sampling_with_tools<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams, ClientContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        let mut builder = self.on_sampling(handler);
        builder.handlers.sampling_tools = true;
        builder
    }

    /// Serve `elicitation/create` in form mode, and in URL mode too when `url_mode`
    /// (declares the `elicitation` capability with those modes).
    ///
    /// With `url_mode`, a request that fails with `-32042` (URL elicitation required)
    /// hands each of the error's URL elicitations to `handler` too, before the error
    /// returns to the caller ([`SessionError::url_elicitation_required`] reads it); the
    /// caller retries once [`on_elicitation_complete`](Self::on_elicitation_complete)
    /// reports them done.
    pub fn on_elicitation<F, Fut>(mut self, url_mode: bool, handler: F) -> Self
    where
        F: Fn(ElicitRequestParams, ClientContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.handlers.elicitation = Some(Arc::new(move |p, c| Box::pin(handler(p, c))));
        self.handlers.url_elicitation = url_mode;
        self
    }

    /// Serve `roots/list` (declares `roots` with `listChanged`; tell the server about
    /// changes with [`ClientHandle::notify_roots_list_changed`]).
    pub fn on_roots<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ClientContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Root>, ErrorObject>> + Send + 'static,
    {
        self.handlers.roots = Some(Arc::new(move |c| Box::pin(handler(c))));
        self.handlers.roots_list_changed = true;
        self
    }

    /// Serve a fixed list of roots.
    pub fn roots(self, roots: Vec<Root>) -> Self {
        let roots = Arc::new(roots);
        self.on_roots(move |_| {
            let roots = roots.clone();
            async move { Ok(roots.as_ref().clone()) }
        })
    }

    /// Receive `notifications/elicitation/complete` (a URL elicitation finished) on the
    /// notification lane.
    pub fn on_elicitation_complete<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitationCompleteNotificationParams, ClientHandle) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.handlers.elicitation_complete = Some(Arc::new(move |p, c| Box::pin(handler(p, c))));
        self
    }

    /// Receive log messages (`notifications/message`) on the notification lane. The
    /// handler may await requests to the server.
    pub fn on_log<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(LoggingMessageNotificationParams, ClientHandle) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.handlers.log = Some(Arc::new(move |p, c| Box::pin(handler(p, c))));
        self
    }

    /// Receive every server notification on the notification lane, one at a time, in
    /// receive order (after the built-in handling: log handler, list refresh). The
    /// handler may await requests to the server.
    pub fn on_notification<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Notification, ClientHandle) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.handlers.notification = Some(Arc::new(move |n, c| Box::pin(handler(n, c))));
        self
    }

    fn capabilities(&self) -> ClientCapabilities {
        self.handshake_capabilities()
    }

    fn handshake_capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.handlers.sampling.is_some() {
            caps = caps.with_sampling();
            if self.handlers.sampling_tools
                && let Some(sampling) = caps.sampling.as_mut()
            {
                sampling.tools = Some(JsonObject::new());
            }
        }
        if self.handlers.elicitation.is_some() {
            caps = caps.with_elicitation();
            if self.handlers.url_elicitation
                && let Some(e) = caps.elicitation.as_mut()
            {
                e.form = Some(JsonObject::new());
                e.url = Some(JsonObject::new());
            }
        }
        if self.handlers.roots.is_some() {
            caps = caps.with_roots(self.handlers.roots_list_changed);
        }
        caps
    }

    /// Start the engine on `transport` and find the server's era: unless pinned to the
    /// handshake, or the [`EraMemory`] knows the server speaks only the handshake, probe
    /// with `server/discover` ([`Era`]); a 2026-07-28 server is then spoken to per
    /// request, every request carrying the per-request `_meta`. Otherwise run the
    /// handshake: `initialize` (never cancelled, bounded by the request timeout), then
    /// `notifications/initialized`.
    ///
    /// # Errors
    /// [`ConnectError`] when `initialize` fails, the server picks a version this
    /// client does not speak, or (with [`Era::PerRequest`]) it does not speak 2026-07-28.
    pub async fn connect<T: Transport>(self, transport: T) -> Result<Client, ConnectError> {
        let capabilities = self.capabilities();
        let tool_headers = Arc::new(ToolHeaders::default());
        let shared = Arc::new(ClientShared {
            handlers: self.handlers.clone(),
            server: OnceLock::new(),
            era: OnceLock::new(),
            max_input_rounds: self.max_input_rounds,
            caches: OnceLock::new(),
            tool_headers: tool_headers.clone(),
            output_validators: OutputValidators::default(),
        });
        let service = Arc::new(ClientService {
            shared: shared.clone(),
        });
        // Pinned to the per-request era, the probe has no handshake to fall back to: it
        // waits as long as any request.
        let discover_wait = match self.era {
            Era::PerRequest => self.config.request_timeout,
            Era::Auto | Era::Handshake => self.discover_timeout,
        };
        let session = Session::start(transport, service, self.config);
        session.peer().note_side(crate::telemetry::Side::Client);
        let handle = ClientHandle {
            peer: session.peer().clone(),
            shared,
        };
        let _ = handle
            .shared
            .caches
            .set(Caches::new(&handle.peer, &tool_headers));
        // Era::PerRequest always probes: it must fail when the server is not per-request.
        let probes = match self.era {
            Era::Handshake => false,
            Era::Auto => !self.era_memory.knows_handshake_only(),
            Era::PerRequest => true,
        };
        if probes {
            let identity = era::Identity {
                version: mcpflow_protocol::PER_REQUEST_VERSIONS[0].clone(),
                capabilities: per_request_capabilities(&capabilities),
                info: self.info.clone(),
            };
            let probe = era::probe(&handle.peer, &identity, self.log_level, discover_wait).await;
            match probe {
                Probe::PerRequest {
                    version,
                    discovered,
                } => {
                    self.era_memory.remember_handshake_only(false);
                    let identity = era::Identity {
                        version,
                        ..identity
                    };
                    per_request::speak(
                        &handle,
                        identity,
                        *discovered,
                        self.log_level,
                        self.discover_timeout,
                    )
                    .await;
                    return Ok(Client { handle, session });
                }
                Probe::Failed(e) if e.is_closed() || era::refused_authorization(&e) => {
                    session.close().await;
                    return Err(ConnectError::Initialize(e));
                }
                Probe::Failed(e) => {
                    session.close().await;
                    return Err(ConnectError::HandshakeOnly(e));
                }
                Probe::Handshake(why) if self.era == Era::PerRequest => {
                    session.close().await;
                    // A probe that timed out says nothing of the era: it is the error.
                    return Err(match why {
                        SessionError::Timeout { .. } => ConnectError::Initialize(why),
                        why => ConnectError::HandshakeOnly(why),
                    });
                }
                Probe::Handshake(why) => {
                    tracing::debug!("the server speaks the handshake era ({why})");
                    self.era_memory.remember_handshake_only(true);
                }
            }
        }
        let params = InitializeRequestParams::new(self.protocol_version, capabilities, self.info);
        let init: Result<InitializeResult, SessionError> = handle
            .peer
            .request(
                method::INITIALIZE,
                &params,
                RequestOptions::new().never_cancel(),
            )
            .await;
        let init = match init {
            Ok(init) => init,
            Err(e) => {
                // The assumption failed: probe again next time.
                self.era_memory.remember_handshake_only(false);
                session.close().await;
                return Err(e.into());
            }
        };
        if !HANDSHAKE_VERSIONS.contains(&init.protocol_version) {
            session.close().await;
            return Err(ConnectError::UnsupportedVersion {
                chosen: init.protocol_version.as_str().to_owned(),
                supported: HANDSHAKE_VERSIONS
                    .iter()
                    .map(ProtocolVersion::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        handle
            .peer
            .set_accept_batches(init.protocol_version.supports_batches());
        handle.peer.note_version(init.protocol_version.as_str());
        let _ = handle.shared.server.set(init);
        let _ = handle.shared.era.set(EraAdapter::Handshake);
        if let Err(e) = handle
            .peer
            .notify_raw(method::INITIALIZED, Some(&EmptyParams::default()))
            .await
        {
            session.close().await;
            return Err(e.into());
        }
        Ok(Client { handle, session })
    }
}

/// 2026-07-28 client capabilities: `roots` is `{}` (no `listChanged`).
fn per_request_capabilities(handshake: &ClientCapabilities) -> ClientCapabilities {
    let mut caps = handshake.clone();
    if caps.roots.is_some() {
        caps.roots = Some(Default::default());
    }
    caps
}
