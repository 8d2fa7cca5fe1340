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

mod context;
mod registry;
mod typed;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use mcpflow_protocol::jsonrpc::{Notification, Request};
use mcpflow_protocol::methods::method;
use mcpflow_protocol::prompts::{ListPromptsResult, Prompt};
use mcpflow_protocol::resources::{
    ListResourceTemplatesResult, ListResourcesResult, Resource, ResourceTemplate,
    ResourceUpdatedNotificationParams, SubscribeRequestParams,
};
use mcpflow_protocol::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, CompleteRequestParams,
    CompleteResult, EmptyResult, ErrorCode, ErrorObject, GetPromptRequestParams, GetPromptResult,
    Implementation, InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult,
    LoggingLevel, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResult, ServerCapabilities, SetLevelRequestParams, Tool,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

pub use context::ServerContext;
pub use registry::{
    ArgumentCompleter, CompletionHandler, PromptHandler, ResourceHandler, ToolError, ToolHandler,
};
use registry::{CompletionRoute, PromptEntry, Registry, ResourceEntry, TemplateEntry, ToolEntry};
pub use typed::{Structured, ToolOutput, schema_of};

use crate::config::SessionConfig;
use crate::error::SessionError;
use crate::session::{BoxFuture, Peer, RequestContext, Service, Session};
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
    instructions: Option<String>,
    registry: RwLock<Registry>,
    completion: Option<CompletionHandler>,
    logging: bool,
    subscriptions: bool,
    page_size: usize,
    config: SessionConfig,
    on_initialize: Option<InitializeHook>,
    on_notification: Option<NotificationHook>,
    peers: Mutex<Vec<Peer>>,
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

    /// The finished server.
    pub fn build(self) -> Server {
        let subscriptions = self.subscriptions
            && !(self.registry.resources.is_empty() && self.registry.templates.is_empty());
        Server {
            inner: Arc::new(ServerInner {
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
                peers: Mutex::new(Vec::new()),
            }),
        }
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
        }
    }

    /// Serve one connection. The engine starts at once; the client's `initialize` is
    /// answered like any other request.
    pub fn serve<T: Transport>(&self, transport: T) -> RunningServer {
        let connection = Arc::new(Connection::default());
        let service = Arc::new(ServerService {
            server: self.clone(),
            connection: connection.clone(),
        });
        let session = Session::start(transport, service, self.inner.config.clone());
        let mut peers = self
            .inner
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        peers.retain(|p| !p.is_closed());
        peers.push(session.peer().clone());
        RunningServer {
            session,
            connection,
        }
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
        caps
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

    fn update_registry(&self, change: impl FnOnce(&mut Registry)) {
        let mut registry = self
            .inner
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        change(&mut registry);
    }

    /// Add (or replace) a tool at run time and notify connected clients
    /// (`notifications/tools/list_changed`).
    pub async fn add_tool<F, Fut>(&self, tool: Tool, handler: F)
    where
        F: Fn(JsonObject, ServerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        let entry = ToolEntry::new(tool, Arc::new(move |args, cx| Box::pin(handler(args, cx))));
        self.update_registry(|r| r.upsert_tool(entry));
        self.broadcast(method::TOOL_LIST_CHANGED).await;
    }

    /// Remove a tool and notify connected clients. Returns whether it existed.
    pub async fn remove_tool(&self, name: &str) -> bool {
        let mut removed = false;
        self.update_registry(|r| {
            let before = r.tools.len();
            r.tools.retain(|t| t.tool.name != name);
            removed = r.tools.len() != before;
        });
        if removed {
            self.broadcast(method::TOOL_LIST_CHANGED).await;
        }
        removed
    }

    /// Notify every connected client that the tool list changed.
    pub async fn notify_tool_list_changed(&self) {
        self.broadcast(method::TOOL_LIST_CHANGED).await;
    }

    /// Notify every connected client that the prompt list changed.
    pub async fn notify_prompt_list_changed(&self) {
        self.broadcast(method::PROMPT_LIST_CHANGED).await;
    }

    /// Notify every connected client that the resource list changed.
    pub async fn notify_resource_list_changed(&self) {
        self.broadcast(method::RESOURCE_LIST_CHANGED).await;
    }

    async fn broadcast(&self, notification: &str) {
        let peers: Vec<Peer> = {
            let mut peers = self
                .inner
                .peers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            peers.retain(|p| !p.is_closed());
            peers.clone()
        };
        for peer in peers {
            let _ = peer.notify_raw::<()>(notification, None).await;
        }
    }
}

/// One served connection. Dropping it aborts the connection; prefer
/// [`RunningServer::close`] or [`RunningServer::wait`].
#[derive(Debug)]
pub struct RunningServer {
    session: Session,
    connection: Arc<Connection>,
}

impl RunningServer {
    /// The connection to the client.
    pub fn peer(&self) -> &Peer {
        self.session.peer()
    }

    /// Whether the client finished the handshake (`notifications/initialized`).
    pub fn is_initialized(&self) -> bool {
        self.connection.initialized.load(Ordering::Acquire)
    }

    /// Wait for the client to end the connection, then close in order (in-flight
    /// handlers get the close grace to finish).
    pub async fn wait(self) {
        self.session.run_to_end().await;
    }

    /// Close now, in order.
    pub async fn close(self) {
        self.session.close().await;
    }
}

/// Per-connection state learned from the client.
#[derive(Default, Debug)]
pub(crate) struct Connection {
    client_info: OnceLock<Implementation>,
    client_capabilities: OnceLock<ClientCapabilities>,
    protocol_version: OnceLock<ProtocolVersion>,
    log_level: AtomicU8,
    initialized: AtomicBool,
    subscriptions: Mutex<HashSet<String>>,
}

impl Connection {
    pub(crate) fn client_capabilities(&self) -> ClientCapabilities {
        self.client_capabilities.get().cloned().unwrap_or_default()
    }

    pub(crate) fn client_info(&self) -> Option<Implementation> {
        self.client_info.get().cloned()
    }

    pub(crate) fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.protocol_version.get().cloned()
    }

    pub(crate) fn log_level(&self) -> LoggingLevel {
        LEVELS[usize::from(self.log_level.load(Ordering::Relaxed)).min(LEVELS.len() - 1)]
    }

    pub(crate) async fn notify_resource_updated(
        &self,
        peer: &Peer,
        uri: &str,
    ) -> Result<(), SessionError> {
        let subscribed = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(uri);
        if !subscribed {
            return Ok(());
        }
        let params = ResourceUpdatedNotificationParams::new(uri);
        peer.notify_raw(method::RESOURCE_UPDATED, Some(&params))
            .await
    }
}

const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// The engine's [`Service`] for one server connection.
struct ServerService {
    server: Server,
    connection: Arc<Connection>,
}

fn params<T: DeserializeOwned + Default>(raw: Option<&RawValue>) -> Result<T, ErrorObject> {
    match raw {
        None => Ok(T::default()),
        Some(raw) => serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params),
    }
}

fn required_params<T: DeserializeOwned>(raw: Option<&RawValue>) -> Result<T, ErrorObject> {
    let raw = raw.ok_or_else(|| ErrorObject::invalid_params("missing params"))?;
    serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)
}

fn result<T: Serialize>(value: &T) -> Result<Box<RawValue>, ErrorObject> {
    serde_json::value::to_raw_value(value).map_err(ErrorObject::internal)
}

/// Arguments that violate a tool's `inputSchema`. From 2025-11-25 on (SEP-1303) this is
/// a tool execution error (`isError: true`, so the model can correct itself); before,
/// a `-32602` protocol error. Either way the message names each path and reason.
fn invalid_arguments(
    tool: &str,
    violations: &[(String, String)],
    version: Option<ProtocolVersion>,
) -> Result<Box<RawValue>, ErrorObject> {
    let detail = violations
        .iter()
        .map(|(path, reason)| format!("{path}: {reason}"))
        .collect::<Vec<_>>()
        .join("; ");
    let message = format!("invalid arguments for tool `{tool}`: {detail}");
    let tool_error = version.is_none_or(|v| v.as_str() >= ProtocolVersion::V2025_11_25.as_str());
    if tool_error {
        result(&CallToolResult::error(message))
    } else {
        let errors: Vec<_> = violations
            .iter()
            .map(|(path, reason)| serde_json::json!({ "path": path, "reason": reason }))
            .collect();
        Err(ErrorObject::invalid_params(message).with_data(serde_json::json!({ "errors": errors })))
    }
}

fn page<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor {c:?}")))?,
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

impl Service for ServerService {
    fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorObject>> {
        let server = self.server.clone();
        let connection = self.connection.clone();
        Box::pin(async move {
            let raw = request.params.as_deref();
            let cx = ServerContext::new(cx, connection.clone(), server.clone());
            let size = server.inner.page_size;
            let caps = server.capabilities();
            let undeclared = match request.method.as_str() {
                method::TOOLS_LIST | method::TOOLS_CALL => caps.tools.is_none(),
                method::RESOURCES_LIST
                | method::RESOURCES_TEMPLATES_LIST
                | method::RESOURCES_READ
                | method::RESOURCES_SUBSCRIBE
                | method::RESOURCES_UNSUBSCRIBE => caps.resources.is_none(),
                method::PROMPTS_LIST | method::PROMPTS_GET => caps.prompts.is_none(),
                _ => false,
            };
            if undeclared {
                return Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "method not found: {} (this server declares no such capability)",
                        request.method
                    ),
                ));
            }
            match request.method.as_str() {
                method::INITIALIZE => {
                    let params: InitializeRequestParams = required_params(raw)?;
                    let version = ProtocolVersion::negotiate(params.protocol_version.as_str());
                    cx.peer().set_accept_batches(version.supports_batches());
                    let _ = connection.protocol_version.set(version.clone());
                    let _ = connection.client_info.set(params.client_info.clone());
                    let _ = connection
                        .client_capabilities
                        .set(params.capabilities.clone());
                    if let Some(hook) = server.inner.on_initialize.clone() {
                        hook(params, cx.clone()).await?;
                    }
                    let mut init = InitializeResult::new(
                        version,
                        server.capabilities(),
                        server.inner.info.clone(),
                    );
                    init.instructions = server.inner.instructions.clone();
                    result(&init)
                }
                method::TOOLS_LIST => {
                    let p: PaginatedRequestParams = params(raw)?;
                    let tools: Vec<Tool> = server
                        .registry()
                        .tools
                        .iter()
                        .map(|t| t.tool.clone())
                        .collect();
                    let (tools, next) = page(&tools, p.cursor.as_deref(), size)?;
                    let mut list = ListToolsResult::new(tools);
                    list.next_cursor = next;
                    result(&list)
                }
                method::TOOLS_CALL => {
                    let p: CallToolRequestParams = required_params(raw)?;
                    let entry = server
                        .registry()
                        .tools
                        .iter()
                        .find(|t| t.tool.name == p.name)
                        .cloned()
                        .ok_or_else(|| {
                            ErrorObject::invalid_params(format!("unknown tool: {}", p.name))
                        })?;
                    let arguments = p.arguments.unwrap_or_default();
                    let violations = entry.violations(&arguments);
                    if !violations.is_empty() {
                        return invalid_arguments(
                            &p.name,
                            &violations,
                            connection.protocol_version(),
                        );
                    }
                    match (entry.handler)(arguments, cx).await {
                        Ok(call) => result(&call),
                        Err(ToolError::Failed(message)) => result(&CallToolResult::error(message)),
                        Err(ToolError::Protocol(error)) => Err(error),
                    }
                }
                method::RESOURCES_LIST => {
                    let p: PaginatedRequestParams = params(raw)?;
                    let items: Vec<Resource> = server
                        .registry()
                        .resources
                        .iter()
                        .map(|r| r.resource.clone())
                        .collect();
                    let (resources, next_cursor) = page(&items, p.cursor.as_deref(), size)?;
                    result(&ListResourcesResult {
                        resources,
                        next_cursor,
                        ..Default::default()
                    })
                }
                method::RESOURCES_TEMPLATES_LIST => {
                    let p: PaginatedRequestParams = params(raw)?;
                    let items: Vec<ResourceTemplate> = server
                        .registry()
                        .templates
                        .iter()
                        .map(|t| t.template.clone())
                        .collect();
                    let (resource_templates, next_cursor) =
                        page(&items, p.cursor.as_deref(), size)?;
                    result(&ListResourceTemplatesResult {
                        resource_templates,
                        next_cursor,
                        ..Default::default()
                    })
                }
                method::RESOURCES_READ => {
                    let p: ReadResourceRequestParams = required_params(raw)?;
                    let found = server.registry().find_resource(&p.uri);
                    let (handler, vars) = found.ok_or_else(|| {
                        ErrorObject::new(
                            ErrorCode::RESOURCE_NOT_FOUND,
                            format!("resource not found: {}", p.uri),
                        )
                        .with_data(serde_json::json!({ "uri": p.uri }))
                    })?;
                    result(&handler(p.uri, vars, cx).await?)
                }
                method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => {
                    if !server.inner.subscriptions {
                        return Err(ErrorObject::method_not_found(&request.method));
                    }
                    let p: SubscribeRequestParams = required_params(raw)?;
                    let mut subs = connection
                        .subscriptions
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    if request.method == method::RESOURCES_SUBSCRIBE {
                        subs.insert(p.uri);
                    } else {
                        subs.remove(&p.uri);
                    }
                    result(&EmptyResult::default())
                }
                method::PROMPTS_LIST => {
                    let p: PaginatedRequestParams = params(raw)?;
                    let items: Vec<Prompt> = server
                        .registry()
                        .prompts
                        .iter()
                        .map(|p| p.prompt.clone())
                        .collect();
                    let (prompts, next_cursor) = page(&items, p.cursor.as_deref(), size)?;
                    result(&ListPromptsResult {
                        prompts,
                        next_cursor,
                        ..Default::default()
                    })
                }
                method::PROMPTS_GET => {
                    let p: GetPromptRequestParams = required_params(raw)?;
                    let entry = server
                        .registry()
                        .prompts
                        .iter()
                        .find(|e| e.prompt.name == p.name)
                        .cloned()
                        .ok_or_else(|| {
                            ErrorObject::invalid_params(format!("unknown prompt: {}", p.name))
                        })?;
                    let args = p.arguments.unwrap_or_default();
                    for arg in entry.prompt.arguments.iter().flatten() {
                        if arg.required == Some(true) && !args.contains_key(&arg.name) {
                            return Err(ErrorObject::invalid_params(format!(
                                "prompt `{}` needs the argument `{}`",
                                p.name, arg.name
                            )));
                        }
                    }
                    result(&(entry.handler)(args, cx).await?)
                }
                method::COMPLETION_COMPLETE => {
                    if caps.completions.is_none() {
                        return Err(ErrorObject::method_not_found(&request.method));
                    }
                    let p: CompleteRequestParams = required_params(raw)?;
                    if let Some(handler) = server.inner.completion.clone() {
                        return result(&handler(p, cx).await?);
                    }
                    let route = server
                        .registry()
                        .completions
                        .iter()
                        .find(|r| r.matches(&p))
                        .cloned();
                    let mut values = match route {
                        Some(route) => {
                            let context = p.context.and_then(|c| c.arguments).unwrap_or_default();
                            (route.completer)(p.argument.value, context, cx).await
                        }
                        None => Vec::new(),
                    };
                    let total = values.len();
                    values.truncate(100);
                    let mut complete = CompleteResult::new(values);
                    if total > 100 {
                        complete.completion.total = u64::try_from(total).ok();
                        complete.completion.has_more = Some(true);
                    }
                    result(&complete)
                }
                method::LOGGING_SET_LEVEL => {
                    if !server.inner.logging {
                        return Err(ErrorObject::method_not_found(&request.method));
                    }
                    let p: SetLevelRequestParams = required_params(raw)?;
                    let index = LEVELS.iter().position(|l| *l == p.level).unwrap_or(0);
                    connection
                        .log_level
                        .store(u8::try_from(index).unwrap_or(0), Ordering::Relaxed);
                    result(&EmptyResult::default())
                }
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    }

    fn handle_notification(
        &self,
        notification: Notification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        if notification.method == method::INITIALIZED {
            self.connection.initialized.store(true, Ordering::Release);
        }
        let hook = self.server.inner.on_notification.clone();
        Box::pin(async move {
            if let Some(hook) = hook {
                hook(notification, peer).await;
            }
        })
    }
}

/// Typed result helper for handlers that build results from `serde_json::Value`.
#[doc(hidden)]
pub fn to_result<T: Serialize>(value: &T) -> Result<Box<RawValue>, ErrorObject> {
    result(value)
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn pages_and_rejects_bad_cursors() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, None, 2).expect("first page");
        assert_eq!((first, next.as_deref()), (vec![0, 1], Some("2")));
        let (last, next) = page(&items, Some("4"), 2).expect("last page");
        assert_eq!((last, next), (vec![4], None));
        assert!(page(&items, Some("x"), 2).is_err());
        assert!(page(&items, Some("9"), 2).is_err());
    }
}
