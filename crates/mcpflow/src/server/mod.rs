//! The server: a builder of tools, resources, prompts and completions, and the
//! per-connection service that answers MCP requests with them.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use mcpflow::server::Server;
//! use mcpflow::protocol::{CallToolResult, Tool};
//! use mcpflow::transport::MemoryTransport;
//!
//! let server = Server::builder("echo-server", "1.0.0")
//!     .tool(Tool::new("echo", "Echo the text back", Tool::empty_input_schema()), |args, _cx| async move {
//!         let text = args.get("text").and_then(|v| v.as_str()).unwrap_or_default().to_owned();
//!         Ok(CallToolResult::text(text))
//!     })
//!     .build();
//! let (_client_side, server_side) = MemoryTransport::pair(1);
//! let running = server.serve(server_side);
//! # drop(running); }
//! ```
//!
//! Capabilities are derived from what is registered. Unknown methods get `-32601`;
//! an unknown tool or prompt, a bad cursor or missing arguments `-32602`; an unknown
//! resource `-32002`.

mod announce;
pub mod bus;
mod connection;
mod context;
mod dispatch;
mod era;
mod finish;
pub mod fleet;
mod methods;
mod per_request;
mod principal;
mod registry;
mod running;
pub use running::RunningServer;
mod tasks;
mod typed;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use mcpflow_protocol::jsonrpc::Notification;
use mcpflow_protocol::prompts::Prompt;
use mcpflow_protocol::resources::{Resource, ResourceTemplate};
use mcpflow_protocol::{
    CallToolResult, CompleteRequestParams, CompleteResult, ErrorObject, GetPromptResult,
    Implementation, InitializeRequestParams, JsonObject, ReadResourceResult, ServerCapabilities,
    Tool,
};

pub(crate) use connection::{Connection, Handshake};
pub use context::ServerContext;
pub use per_request::{CacheHints, StateKey};
pub use principal::Principal;

/// Whether a request for `method` with this head is a 2026-07-28 one: it carries the
/// per-request envelope, or its method exists only in that era.
pub(crate) fn is_per_request(method: &str, head: &crate::session::RequestHead) -> bool {
    methods::only_per_request(method) || head.carries_envelope()
}
pub(crate) use principal::PrincipalSlot;
pub use registry::{
    ArgumentCompleter, CompletionHandler, PromptHandler, ResourceHandler, ToolError, ToolHandler,
};
use registry::{CompletionRoute, PromptEntry, Registry, ResourceEntry, TemplateEntry, ToolEntry};
pub use tasks::TaskLimits;
pub use typed::{NoArguments, Structured, ToolOutput, output_schema_of, schema_of};

use crate::config::SessionConfig;
use crate::session::{BoxFuture, Peer, Session};
use crate::transport::Transport;

/// Runs before the `initialize` result is sent, with a full context: it may log, and
/// send and await requests to the client.
pub type InitializeHook = Arc<
    dyn Fn(InitializeRequestParams, ServerContext) -> BoxFuture<'static, Result<(), ErrorObject>>
        + Send
        + Sync,
>;
/// Called on the notification lane for each client notification the server does not
/// handle itself (and for `notifications/roots/list_changed`).
pub type NotificationHook = Arc<dyn Fn(Notification, Peer) -> BoxFuture<'static, ()> + Send + Sync>;

/// A server: what it offers and how it answers. Cheap to clone; every connection
/// served from it shares the same tools, resources and prompts.
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

struct ServerInner {
    info: Implementation,
    /// `info` as the `serverInfo` of 2026-07-28 result `_meta`, made once.
    info_json: serde_json::Value,
    instructions: Option<String>,
    registry: RwLock<Registry>,
    completion: Option<CompletionHandler>,
    logging: bool,
    subscriptions: bool,
    page_size: usize,
    config: SessionConfig,
    on_initialize: Option<InitializeHook>,
    on_notification: Option<NotificationHook>,
    /// Every task of every connection, within the server's task limits.
    tasks: Arc<tasks::TaskStore>,
    /// Every connection served, for what the server announces to all of them.
    connections: Mutex<announce::Connections>,
    /// Whether 2026-07-28 requests are served.
    per_request: bool,
    cache_hints: CacheHints,
    state_key: StateKey,
    /// The open `subscriptions/listen` streams.
    listeners: per_request::Listeners,
    /// Carries announcements to every instance, when set.
    bus: Option<Arc<dyn bus::NotificationBus>>,
    /// Shares 2026-07-28 tasks with every instance, when set.
    shared_tasks: Option<Arc<dyn fleet::SharedTaskStore>>,
    /// Single-use `requestState` tokens consumed: shared by every instance when set,
    /// else `consumed`.
    consumed_states: Option<Arc<dyn fleet::ConsumedStates>>,
    consumed: per_request::single_use::Consumed,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Server`].
#[must_use]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    registry: Registry,
    completion: Option<CompletionHandler>,
    logging: bool,
    subscriptions: bool,
    page_size: usize,
    config: SessionConfig,
    on_initialize: Option<InitializeHook>,
    on_notification: Option<NotificationHook>,
    per_request: bool,
    cache_hints: CacheHints,
    state_key: Option<StateKey>,
    task_limits: TaskLimits,
    bus: Option<Arc<dyn bus::NotificationBus>>,
    shared_tasks: Option<Arc<dyn fleet::SharedTaskStore>>,
    consumed_states: Option<Arc<dyn fleet::ConsumedStates>>,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// Apply a registration function: `builder.with(add_tool).with(greet_prompt)`, for
    /// the functions the attribute macros generate or your own.
    pub fn with(self, register: impl FnOnce(Self) -> Self) -> Self {
        register(self)
    }

    /// Instructions for the client's model, sent in the `initialize` result.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// The display name sent in `serverInfo.title` (2025-06-18 and later).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// A description sent in `serverInfo.description` (2025-11-25 and later).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.info.description = Some(text.into());
        self
    }

    /// The home page sent in `serverInfo.websiteUrl` (2025-11-25 and later).
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.info.website_url = Some(url.into());
        self
    }

    /// Icons sent in `serverInfo.icons` (2025-11-25 and later).
    pub fn icons(mut self, icons: Vec<mcpflow_protocol::Icon>) -> Self {
        self.info.icons = Some(icons);
        self
    }

    /// Register a tool.
    pub fn tool<F, Fut>(self, tool: Tool, handler: F) -> Self
    where
        F: Fn(JsonObject, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        self.tool_entry(ToolEntry::new(
            tool,
            Arc::new(move |args, cx| Box::pin(handler(args, cx))),
        ))
    }

    pub(crate) fn tool_entry(mut self, entry: ToolEntry) -> Self {
        self.registry.upsert_tool(entry);
        self
    }

    /// Register a resource with a fixed URI.
    pub fn resource<F, Fut>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(String, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        self.registry.resources.push(ResourceEntry {
            resource,
            handler: Arc::new(move |uri, _vars, cx| Box::pin(handler(uri, cx))),
        });
        self
    }

    /// Register a resource template (`scheme://items/{id}`); the handler gets the URI
    /// and the template's variables.
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(String, HashMap<String, String>, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, ErrorObject>> + Send + 'static,
    {
        self.registry.templates.push(TemplateEntry {
            template,
            handler: Arc::new(move |uri, vars, cx| Box::pin(handler(uri, vars, cx))),
        });
        self
    }

    /// Register a prompt. Arguments marked required are checked before the handler runs.
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(BTreeMap<String, String>, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        self.registry.prompts.push(PromptEntry {
            prompt,
            handler: Arc::new(move |args, cx| Box::pin(handler(args, cx))),
        });
        self
    }

    /// Complete one argument of a prompt (`CompletionReference::prompt(name)`) or one
    /// variable of a resource template (`CompletionReference::resource(uri_template)`):
    /// the handler gets the partial value and the arguments already resolved, and
    /// returns candidates (the first 100 are sent, with `hasMore` when there are more).
    /// Declares the `completions` capability; arguments with no route complete to
    /// nothing.
    pub fn complete_argument<F, Fut>(
        mut self,
        reference: mcpflow_protocol::CompletionReference,
        argument: &str,
        completer: F,
    ) -> Self
    where
        F: Fn(String, BTreeMap<String, String>, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        self.registry.completions.push(CompletionRoute {
            reference,
            argument: argument.to_owned(),
            completer: Arc::new(move |value, context, cx| Box::pin(completer(value, context, cx))),
        });
        self
    }

    /// Answer every `completion/complete` with one handler (declares the `completions`
    /// capability); it takes precedence over [`complete_argument`](Self::complete_argument) routes.
    pub fn completion<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CompleteRequestParams, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompleteResult, ErrorObject>> + Send + 'static,
    {
        self.completion = Some(Arc::new(move |params, cx| Box::pin(handler(params, cx))));
        self
    }

    /// Declare the `logging` capability (accept `logging/setLevel`). Default: on.
    pub fn logging(mut self, on: bool) -> Self {
        self.logging = on;
        self
    }

    /// Declare `resources.subscribe` (accept `resources/subscribe`). Default: on when
    /// resources are registered.
    pub fn resource_subscriptions(mut self, on: bool) -> Self {
        self.subscriptions = on;
        self
    }

    /// Items per page of `tools/list`, `resources/list`, `resources/templates/list` and
    /// `prompts/list`. Default: 100.
    pub fn page_size(mut self, n: usize) -> Self {
        self.page_size = n.max(1);
        self
    }

    /// Limits and timeouts for each connection.
    pub fn session_config(mut self, config: SessionConfig) -> Self {
        self.config = config;
        self
    }

    /// Bounds on the tasks the server holds (tools marked with
    /// [`Tool::with_task_support`](mcpflow_protocol::Tool::with_task_support) run as
    /// tasks when the client asks). Default: [`TaskLimits::default`].
    pub fn task_limits(mut self, limits: TaskLimits) -> Self {
        self.task_limits = limits;
        self
    }

    /// Run `hook` before answering `initialize` (it may log, and send and await requests).
    pub fn on_initialize<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(InitializeRequestParams, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ErrorObject>> + Send + 'static,
    {
        self.on_initialize = Some(Arc::new(move |params, cx| Box::pin(hook(params, cx))));
        self
    }

    /// Called on the notification lane for client notifications.
    pub fn on_notification<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(Notification, Peer) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_notification = Some(Arc::new(move |n, peer| Box::pin(hook(n, peer))));
        self
    }

    /// Serve 2026-07-28 requests (the per-request `_meta` envelope, `server/discover`,
    /// `subscriptions/listen`, `input_required` rounds) beside the handshake era on the
    /// same connection or endpoint. Default: on. Off, such requests are served as
    /// handshake-era ones and `server/discover` is `-32601`.
    pub fn per_request_era(mut self, on: bool) -> Self {
        self.per_request = on;
        self
    }

    /// The `ttlMs` and `cacheScope` put on 2026-07-28 results of `server/discover`, the
    /// lists and `resources/read` (a result that sets its own keeps them). Default:
    /// 60 s, private.
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.cache_hints = hints;
        self
    }

    /// The key `requestState` is sealed with. Default: random per process; set the same
    /// key on every instance that serves one endpoint.
    pub fn state_key(mut self, key: StateKey) -> Self {
        self.state_key = Some(key);
        self
    }

    /// The finished server.
    pub fn build(self) -> Server {
        let subscriptions = self.subscriptions
            && !(self.registry.resources.is_empty() && self.registry.templates.is_empty());
        let server = Server {
            inner: Arc::new(ServerInner {
                info_json: serde_json::to_value(&self.info).unwrap_or_default(),
                info: self.info,
                instructions: self.instructions,
                registry: RwLock::new(self.registry),
                completion: self.completion,
                logging: self.logging,
                subscriptions,
                page_size: self.page_size,
                config: self.config,
                on_initialize: self.on_initialize,
                on_notification: self.on_notification,
                tasks: Arc::new(tasks::TaskStore::new(self.task_limits)),
                connections: Mutex::default(),
                per_request: self.per_request,
                cache_hints: self.cache_hints,
                state_key: self.state_key.unwrap_or_else(StateKey::random),
                listeners: per_request::Listeners::default(),
                bus: self.bus,
                shared_tasks: self.shared_tasks,
                consumed_states: self.consumed_states,
                consumed: per_request::single_use::Consumed::default(),
            }),
        };
        if let Some(bus) = &server.inner.bus {
            bus::attach(bus, &server.inner);
        }
        if let Some(store) = &server.inner.shared_tasks {
            fleet::attach(store, &server.inner);
        }
        server
    }
}

impl Server {
    /// Start building a server named `name` at `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            registry: Registry::default(),
            completion: None,
            logging: true,
            subscriptions: true,
            page_size: 100,
            config: SessionConfig::default(),
            on_initialize: None,
            on_notification: None,
            per_request: true,
            cache_hints: CacheHints::default(),
            state_key: None,
            task_limits: TaskLimits::default(),
            bus: None,
            shared_tasks: None,
            consumed_states: None,
        }
    }

    /// Serve one connection. The engine starts at once; the client's `initialize` is
    /// answered like any other request.
    pub fn serve<T: Transport>(&self, transport: T) -> RunningServer {
        self.serve_as(transport, PrincipalSlot::default())
    }

    /// [`serve`](Self::serve), with handlers seeing the principal in `principal`.
    pub(crate) fn serve_as<T: Transport>(
        &self,
        transport: T,
        principal: PrincipalSlot,
    ) -> RunningServer {
        self.serve_connection(transport, Connection::new(self.clone(), principal), 1)
    }

    /// [`serve_as`](Self::serve_as), numbering this side's requests from `first_id`.
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn serve_as_from<T: Transport>(
        &self,
        transport: T,
        principal: PrincipalSlot,
        first_id: i64,
    ) -> RunningServer {
        self.serve_connection(
            transport,
            Connection::new(self.clone(), principal),
            first_id,
        )
    }

    /// What the server declares in `initialize`, derived from what is registered.
    pub fn capabilities(&self) -> ServerCapabilities {
        let registry = self.registry();
        let mut caps = ServerCapabilities::default();
        if !registry.tools.is_empty() {
            caps = caps.with_tools(true);
        }
        if !registry.resources.is_empty() || !registry.templates.is_empty() {
            caps = caps.with_resources(self.inner.subscriptions, true);
        }
        if !registry.prompts.is_empty() {
            caps = caps.with_prompts(true);
        }
        if self.inner.logging {
            caps = caps.with_logging();
        }
        if self.inner.completion.is_some() || !registry.completions.is_empty() {
            caps = caps.with_completions();
        }
        if registry.runs_tasks() {
            caps.tasks = Some(tasks::capability());
        }
        caps
    }

    /// Whether the server offers `offer` (tools, resources or prompts with something
    /// registered, ...), as [`Server::capabilities`] says.
    pub(crate) fn offers(&self, offer: methods::Offer) -> bool {
        use methods::Offer;
        match offer {
            Offer::Always => true,
            Offer::Logging => self.inner.logging,
            Offer::Tools => !self.registry().tools.is_empty(),
            Offer::Resources => {
                let registry = self.registry();
                !registry.resources.is_empty() || !registry.templates.is_empty()
            }
            Offer::Prompts => !self.registry().prompts.is_empty(),
            Offer::Completions => {
                self.inner.completion.is_some() || !self.registry().completions.is_empty()
            }
            Offer::Tasks => self.registry().runs_tasks(),
        }
    }

    /// Whether a 2026-07-28 request may name `method` (the handshake-era ones do not).
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn has_per_request_method(method: &str) -> bool {
        methods::find(method, true).is_some()
    }

    /// Whether 2026-07-28 requests are served ([`ServerBuilder::per_request_era`]).
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn serves_per_request(&self) -> bool {
        self.inner.per_request
    }

    /// The `(argument, header name)` pairs of a tool's `x-mcp-header` arguments, which a
    /// 2026-07-28 HTTP request mirrors in `Mcp-Param-{name}` headers.
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn tool_param_headers(&self, tool: &str) -> Vec<(String, String)> {
        let registry = self.registry();
        let Some(entry) = registry.tools.iter().find(|t| t.tool.name == tool) else {
            return Vec::new();
        };
        let Some(serde_json::Value::Object(properties)) = entry.tool.input_schema.get("properties")
        else {
            return Vec::new();
        };
        properties
            .iter()
            .filter_map(|(argument, schema)| {
                let header = schema.get("x-mcp-header")?.as_str()?;
                Some((argument.clone(), header.to_owned()))
            })
            .collect()
    }

    /// Who the server says it is.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.inner
            .registry
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
