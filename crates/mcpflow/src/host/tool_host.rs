//! [`ToolHost`] and its builder: the servers, the policies, the callbacks; then one
//! supervisor task per server, owned by the host and awaited by [`ToolHost::close`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::HostEvent;
use super::call::{
    Approval, ApprovalHook, Deadlines, ElicitationRequest, HostElicitationHandler,
    HostSamplingHandler, InputValidators, ToolCallInfo,
};
use super::catalog::{Catalog, CatalogRules, refetch};
use super::config::{ConfigError, ServersConfig};
use super::connect::connector_for;
use super::names::{CollisionPolicy, NamePolicy};
use super::server_options::ServerOptions;
use super::snapshot::CatalogSnapshot;
use super::supervisor::{
    ConnectFailure, Connector, Health, ReconnectPolicy, ServerSlot, Supervisor,
};
use crate::client::{Client, ClientBuilder, EraMemory};
use crate::config::SessionConfig;

/// Events kept for a slow [`ToolHost::events`] receiver before it starts missing them.
const EVENT_CAPACITY: usize = 256;

/// Builds a [`ToolHost`].
#[must_use]
pub struct ToolHostBuilder {
    client_name: String,
    client_version: String,
    session_config: Option<SessionConfig>,
    servers: Vec<ServerOptions>,
    rules: CatalogRules,
    reconnect: ReconnectPolicy,
    timeout: Option<Duration>,
    max_total: Option<Duration>,
    approval: Option<ApprovalHook>,
    sampling: Option<HostSamplingHandler>,
    elicitation: Option<HostElicitationHandler>,
}

impl fmt::Debug for ToolHostBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHostBuilder")
            .field("client_name", &self.client_name)
            .field("servers", &self.servers)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl ToolHostBuilder {
    /// Add a server (configuration order decides `FirstWins` and `LastWins`). A
    /// server of the same name as one added before replaces it, in its place: calls
    /// dispatch by server name, so two of one name cannot both be reached.
    pub fn server(mut self, server: ServerOptions) -> Self {
        match self.servers.iter_mut().find(|s| s.name == server.name) {
            Some(known) => *known = server,
            None => self.servers.push(server),
        }
        self
    }

    /// Add every enabled server of an `mcpServers` file, in name order, with
    /// variables expanded through `lookup` (e.g. `|n| std::env::var(n).ok()`). An entry
    /// whose variables cannot be expanded is added as a server that is
    /// [`Health::Failed`](super::Health::Failed) at once, naming the variable: one bad
    /// entry does not keep the others from running.
    ///
    /// # Errors
    /// None today: the `Result` leaves room for a file-wide check.
    pub fn servers_config(
        mut self,
        config: &ServersConfig,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        for name in config.names() {
            if config.is_disabled(name) {
                continue;
            }
            let connector = match config
                .server(name)
                .and_then(|s| s.expanded_for(name, &lookup))
            {
                Ok(server) => connector_for(&server),
                Err(e) => failing(e),
            };
            self = self.server(ServerOptions::new(name, connector));
        }
        Ok(self)
    }

    /// As [`servers_config`](Self::servers_config), with the OAuth configuration
    /// `oauth(name, server)` gives each HTTP server (variables expanded; `None`: no
    /// OAuth, e.g. when its `headers` carry the token). See [`connector_with_oauth`].
    ///
    /// # Errors
    /// As [`servers_config`](Self::servers_config).
    ///
    /// [`connector_with_oauth`]: super::connector_with_oauth
    #[cfg(feature = "http-client")]
    pub fn servers_config_with_oauth(
        mut self,
        config: &ServersConfig,
        lookup: impl Fn(&str) -> Option<String>,
        mut oauth: impl FnMut(&str, &super::RemoteServer) -> Option<crate::auth::OAuthConfig>,
    ) -> Result<Self, ConfigError> {
        for name in config.names() {
            if config.is_disabled(name) {
                continue;
            }
            let server = match config
                .server(name)
                .and_then(|s| s.expanded_for(name, &lookup))
            {
                Ok(server) => server,
                Err(e) => {
                    self = self.server(ServerOptions::new(name, failing(e)));
                    continue;
                }
            };
            let connector = match &server {
                super::ServerConfig::Remote(remote) => match oauth(name, remote) {
                    Some(oauth) => super::connector_with_oauth(&server, oauth),
                    None => connector_for(&server),
                },
                _ => connector_for(&server),
            };
            self = self.server(ServerOptions::new(name, connector));
        }
        Ok(self)
    }

    /// The `clientInfo` sent to each server. Default: `mcpflow-host` and this crate's version.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_name = name.into();
        self.client_version = version.into();
        self
    }

    /// Limits and timeouts of each connection (its lists' fetches use its request timeout).
    pub fn session_config(mut self, config: SessionConfig) -> Self {
        self.session_config = Some(config);
        self
    }

    /// How tools and prompts are named (default: [`NamePolicy::Prefixed`]).
    pub fn names(mut self, policy: NamePolicy) -> Self {
        self.rules.names = policy;
        self
    }

    /// What a name clash does (default: [`CollisionPolicy::Error`]).
    pub fn collisions(mut self, policy: CollisionPolicy) -> Self {
        self.rules.collisions = policy;
        self
    }

    /// The reconnect policy of every server without its own.
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }

    /// The deadline of calls without answer or progress, for servers without their
    /// own. Default: 300 s.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// The cap on a call's total time, for servers without their own. Default: 30 min.
    pub fn max_total(mut self, d: Duration) -> Self {
        self.max_total = Some(d);
        self
    }

    /// Ask `hook` before each call; a denied call is not sent.
    pub fn approval<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(ToolCallInfo) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Approval> + Send + 'static,
    {
        self.approval = Some(Arc::new(move |info| Box::pin(hook(info))));
        self
    }

    /// Answer the servers' `sampling/createMessage` with `handler(server, params, cx)`.
    /// Without it, the host does not declare sampling and every request is declined at
    /// once.
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(
                String,
                mcpflow_protocol::CreateMessageRequestParams,
                crate::client::ClientContext,
            ) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: std::future::Future<
                Output = Result<
                    mcpflow_protocol::CreateMessageResult,
                    mcpflow_protocol::ErrorObject,
                >,
            > + Send
            + 'static,
    {
        self.sampling = Some(Arc::new(move |s, p, c| Box::pin(handler(s, p, c))));
        self
    }

    /// Answer the servers' `elicitation/create` (form mode) with `handler`, which is
    /// told the server and, when one can tell, the tool call that caused the request.
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<
                Output = Result<mcpflow_protocol::ElicitResult, mcpflow_protocol::ErrorObject>,
            > + Send
            + 'static,
    {
        self.elicitation = Some(Arc::new(move |r| Box::pin(handler(r))));
        self
    }

    /// Start a supervisor per server and return at once; the servers connect
    /// concurrently ([`ToolHost::wait_ready`] waits for the first attempt of each).
    /// Must run inside a tokio runtime.
    pub fn start(self) -> ToolHost {
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let catalog = Arc::new(Catalog::new(
            self.rules.clone(),
            self.servers
                .iter()
                .map(|s| (s.name.clone(), s.filter.clone()))
                .collect(),
            events.clone(),
        ));
        let stop = CancellationToken::new();
        let mut slots = Vec::new();
        let mut deadlines = Vec::new();
        let mut supervisors = Vec::new();
        for (index, server) in self.servers.into_iter().enumerate() {
            let slot = Arc::new(ServerSlot::new(
                server.name.clone(),
                index,
                server.max_in_flight,
                events.clone(),
            ));
            let mut limits = server.deadlines;
            limits.timeout = limits.timeout.or(self.timeout);
            limits.max_total = limits.max_total.or(self.max_total);
            deadlines.push(limits);
            let builder = client_builder(
                &slot,
                &self.client_name,
                &self.client_version,
                self.session_config.clone(),
                self.sampling.clone(),
                self.elicitation.clone(),
            );
            let supervisor = Supervisor {
                slot: slot.clone(),
                catalog: catalog.clone(),
                connector: server.connector,
                builder,
                policy: server.reconnect.unwrap_or_else(|| self.reconnect.clone()),
                stop: stop.clone(),
            };
            supervisors.push(tokio::spawn(supervisor.run()));
            slots.push(slot);
        }
        ToolHost {
            inner: Arc::new(HostInner {
                slots,
                deadlines,
                catalog,
                events,
                stop,
                calls_stop: CancellationToken::new(),
                supervisors: Mutex::new(supervisors),
                approval: self.approval,
                validators: InputValidators::default(),
            }),
        }
    }
}

/// A fresh client builder for each connection to `slot`, with the host's callbacks
/// bound to that server, and one memory of its era for all of them (a server found to
/// speak only the handshake era is not probed again when the host reconnects).
fn client_builder(
    slot: &Arc<ServerSlot>,
    name: &str,
    version: &str,
    session_config: Option<SessionConfig>,
    sampling: Option<HostSamplingHandler>,
    elicitation: Option<HostElicitationHandler>,
) -> Arc<dyn Fn() -> ClientBuilder + Send + Sync> {
    let (name, version) = (name.to_owned(), version.to_owned());
    let server = slot.name.to_string();
    let calls = slot.calls.clone();
    let era_memory = EraMemory::new();
    Arc::new(move || {
        let mut builder =
            Client::builder(name.clone(), version.clone()).era_memory(era_memory.clone());
        if let Some(config) = &session_config {
            builder = builder.session_config(config.clone());
        }
        if let Some(sampling) = sampling.clone() {
            let server = server.clone();
            builder = builder.on_sampling(move |params, cx| sampling(server.clone(), params, cx));
        }
        if let Some(elicitation) = elicitation.clone() {
            let (server, calls) = (server.clone(), calls.clone());
            builder = builder.on_elicitation(false, move |params, context| {
                elicitation(ElicitationRequest {
                    server: server.clone(),
                    call: calls.sole(),
                    params,
                    context,
                })
            });
        }
        builder
    })
}

pub(crate) struct HostInner {
    slots: Vec<Arc<ServerSlot>>,
    deadlines: Vec<Deadlines>,
    pub(crate) catalog: Arc<Catalog>,
    events: broadcast::Sender<HostEvent>,
    /// Stops the supervisors (which close their connections).
    stop: CancellationToken,
    /// Refuses new calls and ends those in flight.
    pub(crate) calls_stop: CancellationToken,
    supervisors: Mutex<Vec<JoinHandle<()>>>,
    pub(crate) approval: Option<ApprovalHook>,
    pub(crate) validators: InputValidators,
}

impl HostInner {
    pub(crate) fn server(&self, name: &str) -> Option<(&ServerSlot, &Deadlines)> {
        let index = self.slots.iter().position(|s| &*s.name == name)?;
        Some((&self.slots[index], &self.deadlines[index]))
    }
}

impl Drop for HostInner {
    fn drop(&mut self) {
        // Dropped without `close`: the supervisors must not outlive the host.
        self.calls_stop.cancel();
        self.stop.cancel();
        for task in self
            .supervisors
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
    }
}

/// Many MCP servers behind one live catalog, for an agent: one supervisor per server
/// owning its connection and reconnecting it, tools named so that they never clash
/// silently, calls by catalog name that always end with the real cause.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use mcpflow::host::{ServerOptions, ToolHost, memory_connector};
/// use mcpflow::protocol::{CallToolResult, Tool};
/// use mcpflow::server::Server;
///
/// let server = Server::builder("weather", "1.0.0")
///     .tool(Tool::new("forecast", "Tomorrow's weather", Tool::empty_input_schema()), |_args, _cx| async {
///         Ok(CallToolResult::text("sunny"))
///     })
///     .build();
/// // Real hosts use `connector_for` (a command or a URL) or `servers_config`.
/// let connector = memory_connector(server);
/// let host = ToolHost::builder()
///     .server(ServerOptions::new("weather", connector))
///     .start();
/// host.wait_ready().await;
/// let turn = host.snapshot(); // the tools this model turn sees
/// assert_eq!(turn.tool_names(), ["weather__forecast"]);
/// let result = host.call("weather__forecast", serde_json::json!({})).await;
/// let text = match result {
///     Ok(result) => result.content[0].as_text().unwrap_or_default().to_owned(),
///     Err(e) => e.to_model_text(), // what the model should read when a call fails
/// };
/// assert_eq!(text, "sunny");
/// host.close().await;
/// # }
/// ```
#[derive(Clone)]
pub struct ToolHost {
    pub(crate) inner: Arc<HostInner>,
}

impl fmt::Debug for ToolHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHost")
            .field("servers", &self.health_all())
            .finish_non_exhaustive()
    }
}

impl ToolHost {
    /// Start building a host.
    pub fn builder() -> ToolHostBuilder {
        ToolHostBuilder {
            client_name: "mcpflow-host".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            session_config: None,
            servers: Vec::new(),
            rules: CatalogRules::default(),
            reconnect: ReconnectPolicy::default(),
            timeout: None,
            max_total: None,
            approval: None,
            sampling: None,
            elicitation: None,
        }
    }

    /// The current catalog. Take one per model turn: it never changes under you.
    pub fn snapshot(&self) -> Arc<CatalogSnapshot> {
        self.inner.catalog.snapshot()
    }

    /// A receiver that sees each new catalog snapshot.
    pub fn watch_catalog(&self) -> watch::Receiver<Arc<CatalogSnapshot>> {
        self.inner.catalog.watch()
    }

    /// Catalog changes, name collisions and health transitions from now on.
    pub fn events(&self) -> broadcast::Receiver<HostEvent> {
        self.inner.events.subscribe()
    }

    /// The health of server `name`.
    pub fn health(&self, name: &str) -> Option<Health> {
        self.inner.server(name).map(|(slot, _)| slot.health())
    }

    /// Every server's health, in configuration order.
    pub fn health_all(&self) -> Vec<(String, Health)> {
        self.inner
            .slots
            .iter()
            .map(|s| (s.name.to_string(), s.health()))
            .collect()
    }

    /// Wait until every server's first connection attempt has ended (ready, degraded,
    /// reconnecting or failed), bounded by each server's connect timeout; returns
    /// every server's health then.
    pub async fn wait_ready(&self) -> Vec<(String, Health)> {
        let waits = self.inner.slots.iter().map(|slot| {
            let mut health = slot.watch_health();
            async move {
                let _ = health.wait_for(|h| *h != Health::Connecting).await;
            }
        });
        futures_util::future::join_all(waits).await;
        self.health_all()
    }

    /// Refetch every list of every connected server now (as a `list_changed` would)
    /// and wait for the fetches; the catalog then holds their result.
    pub async fn refresh(&self) {
        let fetches = self.inner.slots.iter().filter_map(|slot| {
            let client = slot.client().ok()?;
            Some(async move {
                refetch(&client).await;
                client.notifications_handled().await;
            })
        });
        futures_util::future::join_all(fetches).await;
    }

    /// Close: refuse new calls, end those in flight ([`HostError::Cancelled`](super::HostError::Cancelled),
    /// with `notifications/cancelled` sent), stop every supervisor and await it; each
    /// closes its connection (reaping a child process) on the way out.
    pub async fn close(&self) {
        self.inner.calls_stop.cancel();
        self.inner.stop.cancel();
        let tasks: Vec<JoinHandle<()>> = self
            .inner
            .supervisors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        for task in tasks {
            if let Err(e) = task.await
                && e.is_panic()
            {
                tracing::error!("a server supervisor panicked: {e}");
            }
        }
    }

    /// How many calls are in flight on each server (for diagnostics and tests).
    pub fn calls_in_flight(&self) -> HashMap<String, usize> {
        self.inner
            .slots
            .iter()
            .map(|s| (s.name.to_string(), s.calls.len()))
            .collect()
    }
}

/// A connector that always fails with `error`, permanently.
fn failing(error: ConfigError) -> Connector {
    let cause = error.to_string();
    super::connector(move |_builder| {
        let cause = cause.clone();
        async move { Err(ConnectFailure::permanent(cause)) }
    })
}
