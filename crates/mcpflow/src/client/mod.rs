//! The client: handshake, typed calls for everything a server offers, callbacks for
//! what a server may ask (sampling, elicitation, roots), and lists of tools, prompts
//! and resources that refresh themselves on `list_changed`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use mcpflow::client::Client;
//! use mcpflow::protocol::{CallToolResult, Tool};
//! use mcpflow::server::Server;
//! use mcpflow::transport::MemoryTransport;
//!
//! let server = Server::builder("demo", "1.0.0")
//!     .tool(Tool::new("hello", "Say hello", Tool::empty_input_schema()), |_args, _cx| async {
//!         Ok(CallToolResult::text("hello"))
//!     })
//!     .build();
//! let (client_side, server_side) = MemoryTransport::pair(0);
//! let _running = server.serve(server_side);
//! let client = Client::builder("my-agent", "0.1.0").connect(client_side).await?;
//! let tools = client.tools().await?;
//! assert_eq!(tools[0].name, "hello");
//! let result = client.call_tool("hello", serde_json::json!({})).await?;
//! assert_eq!(result.content[0].as_text(), Some("hello"));
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! Callbacks run concurrently with everything else (server requests in their own
//! tasks, notifications on the notification lane), so they may call the server back.
//!
//! **Two eras.** By default `connect` runs the `initialize` handshake. With
//! [`Era::Auto`] ([`ClientBuilder::era`]) it first probes with `server/discover`: a
//! 2026-07-28 server is then spoken to per request (every request carries the
//! per-request `_meta`; an `input_required` answer is fulfilled with the same sampling,
//! elicitation and roots callbacks and retried; list changes arrive on a
//! `subscriptions/listen` stream and lists are cached for their `ttlMs`), any other
//! server gets the handshake. [`Era::PerRequest`] speaks only 2026-07-28. The era is
//! chosen once, at `connect`; the calls below ask it how to go on the wire
//! (`adapter.rs`), and an [`EraMemory`] keeps what was found for the next connection.

mod adapter;
mod builder;
pub(crate) mod cache;
mod calls;
mod context;
mod era;
pub(crate) mod headers;
mod listen;
mod lists;
mod mrtr;
mod output;
mod pages;
mod per_request;
mod service;
mod tasks;
mod tasks_per_request;

pub use builder::{
    ClientBuilder, ConnectError, ElicitationCompleteHandler, ElicitationHandler, LogHandler,
    NotificationHandler, RootsHandler, SamplingHandler,
};
pub use calls::ToolCallError;
pub use context::ClientContext;
#[cfg(feature = "http-client")]
pub(crate) use era::is_per_request_error as era_error;
pub use era::{Era, EraMemory};
pub use tasks::{TaskStart, TaskWaitError};

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use adapter::EraAdapter;
use builder::Handlers;
use headers::ToolHeaders;
pub(crate) use lists::Caches;
use output::OutputValidators;
use pages::all_pages;

use mcpflow_protocol::methods::{self, method};
use mcpflow_protocol::prompts::Prompt;
use mcpflow_protocol::resources::{Resource, ResourceTemplate};
use mcpflow_protocol::{
    CompleteRequestParams, CompleteResult, EmptyParams, GetPromptRequestParams, GetPromptResult,
    Implementation, InitializeResult, LoggingLevel, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResult, RequestMethod, Tool,
};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::error::SessionError;
use crate::session::{Peer, RequestOptions, Session};

/// Most pages an all-pages helper follows before giving up (a server that never stops
/// returning cursors).
const MAX_PAGES: usize = 1000;

/// What the client's handles and its service share.
struct ClientShared {
    handlers: Handlers,
    server: OnceLock<InitializeResult>,
    /// The era the connection speaks, set by `connect` once found (the handshake era
    /// until then).
    era: OnceLock<EraAdapter>,
    /// Most `input_required` rounds one request may take.
    max_input_rounds: usize,
    caches: OnceLock<Caches>,
    /// The tools' `x-mcp-header` arguments, from every tool list read (2026-07-28).
    tool_headers: Arc<ToolHeaders>,
    output_validators: OutputValidators,
}

impl ClientShared {
    /// The era the connection speaks: the handshake era until `connect` found another.
    fn era(&self) -> &EraAdapter {
        self.era.get().unwrap_or(&adapter::HANDSHAKE)
    }
}

/// A cheap, cloneable handle to a connected server: every typed call lives here.
/// Notification callbacks receive one, and request callbacks one in their
/// [`ClientContext`], so they can call the server back.
#[derive(Clone)]
pub struct ClientHandle {
    peer: Peer,
    shared: Arc<ClientShared>,
}

impl fmt::Debug for ClientHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandle")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl ClientHandle {
    /// The engine-level peer, for raw requests and notifications.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Wait until the handlers of every notification received so far have run (see
    /// [`Peer::notifications_handled`]): after a call returns, the logs and
    /// `list_changed` the server sent before its result have been handled.
    pub async fn notifications_handled(&self) {
        self.peer.notifications_handled().await;
    }

    /// The server's `initialize` result (`None` until the handshake completes). With a
    /// 2026-07-28 server, built from its `server/discover` result.
    pub fn server(&self) -> Option<&InitializeResult> {
        self.shared.server.get()
    }

    /// The server's `server/discover` result, when it speaks 2026-07-28 (stateless
    /// requests carrying the per-request `_meta`).
    pub fn discovered(&self) -> Option<&mcpflow_protocol::discover::DiscoverResult> {
        self.era().discovered()
    }

    /// Whether this connection speaks 2026-07-28.
    pub fn is_per_request(&self) -> bool {
        self.discovered().is_some()
    }

    /// How this connection speaks to its server.
    fn era(&self) -> &EraAdapter {
        self.shared.era()
    }

    /// Send any typed request. Over HTTP in the 2026-07-28 era, its headers mirror what
    /// [`RequestMethod::mirrored`] names of its params.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn request<M: RequestMethod>(
        &self,
        params: &M::Params,
        options: RequestOptions,
    ) -> Result<M::Result, SessionError> {
        let options = self.era().mirror(self, M::mirrored(params), options);
        let answer = self.peer.request_operated(M::METHOD, params, options).await;
        match answer {
            Ok((result, operation)) => {
                note_tool_error(&result, &operation);
                Ok(result)
            }
            Err(error) => {
                self.show_url_elicitations(&error).await;
                Err(error)
            }
        }
    }

    /// Hand the URL elicitations of a `-32042` error to the elicitation callback, when
    /// the client declared URL mode: the user sees what to complete before the caller
    /// sees the error.
    async fn show_url_elicitations(&self, error: &SessionError) {
        let Some(handler) = self.shared.handlers.elicitation.as_ref() else {
            return;
        };
        if !self.shared.handlers.url_elicitation {
            return;
        }
        let Some(required) = error.url_elicitation_required() else {
            return;
        };
        for elicitation in required.elicitations {
            let context = ClientContext::without_request(self.clone());
            let params = mcpflow_protocol::ElicitRequestParams::Url(elicitation);
            if let Err(e) = handler(params, context).await {
                tracing::debug!(error = %e, "the elicitation callback failed on a URL elicitation of a -32042 error");
            }
        }
    }

    /// `ping`. 2026-07-28 has no `ping`: there, `server/discover` checks the server
    /// answers.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn ping(&self) -> Result<(), SessionError> {
        self.era().ping(self).await
    }

    /// One page of `tools/list`.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn list_tools(
        &self,
        cursor: Option<String>,
    ) -> Result<mcpflow_protocol::ListToolsResult, SessionError> {
        let params = cursor
            .map(PaginatedRequestParams::with_cursor)
            .unwrap_or_default();
        let mut page = self
            .request::<methods::ListTools>(&params, RequestOptions::new())
            .await?;
        self.shared.tool_headers.keep_valid(&mut page.tools);
        Ok(page)
    }

    /// Every page of `tools/list`.
    ///
    /// # Errors
    /// As [`Peer::request`], or [`SessionError::Codec`] for a cursor loop.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, SessionError> {
        let mut tools = all_pages(&self.peer, method::TOOLS_LIST, "tools").await?;
        self.shared.tool_headers.keep_valid(&mut tools);
        Ok(tools)
    }

    /// The tool list, kept fresh: fetched on first use, refetched after each
    /// `notifications/tools/list_changed` (single flight; replaced atomically).
    ///
    /// # Errors
    /// The error of the last fetch, if it failed.
    pub async fn tools(&self) -> Result<Arc<Vec<Tool>>, SessionError> {
        self.caches().tools.get().await
    }

    /// The prompt list, kept fresh like [`tools`](Self::tools).
    ///
    /// # Errors
    /// The error of the last fetch, if it failed.
    pub async fn prompts(&self) -> Result<Arc<Vec<Prompt>>, SessionError> {
        self.caches().prompts.get().await
    }

    /// The resource list, kept fresh like [`tools`](Self::tools).
    ///
    /// # Errors
    /// The error of the last fetch, if it failed.
    pub async fn resources(&self) -> Result<Arc<Vec<Resource>>, SessionError> {
        self.caches().resources.get().await
    }

    /// The resource template list, kept fresh like [`tools`](Self::tools) (refetched
    /// after `notifications/resources/list_changed`).
    ///
    /// # Errors
    /// The error of the last fetch, if it failed.
    pub async fn resource_templates(&self) -> Result<Arc<Vec<ResourceTemplate>>, SessionError> {
        self.caches().templates.get().await
    }

    /// The tool list as last fetched, without fetching.
    pub fn tools_snapshot(&self) -> Option<Arc<Vec<Tool>>> {
        self.caches().tools.snapshot()
    }

    /// How many `tools/list` refreshes the cache has run.
    pub fn tool_list_fetches(&self) -> u64 {
        self.caches().tools.fetches()
    }

    pub(crate) fn caches(&self) -> &Caches {
        self.shared
            .caches
            .get_or_init(|| Caches::new(&self.peer, &self.shared.tool_headers))
    }

    /// Every page of `resources/list`.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, SessionError> {
        all_pages(&self.peer, method::RESOURCES_LIST, "resources").await
    }

    /// Every page of `resources/templates/list`.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, SessionError> {
        all_pages(
            &self.peer,
            method::RESOURCES_TEMPLATES_LIST,
            "resourceTemplates",
        )
        .await
    }

    /// `resources/read`.
    ///
    /// # Errors
    /// As [`Peer::request`] (an unknown resource is `-32002` or `-32602`).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, SessionError> {
        self.era()
            .resumable::<methods::ReadResource>(self, &ReadResourceRequestParams::new(uri))
            .await
    }

    /// `resources/subscribe`. With a 2026-07-28 server, the URI joins the
    /// `subscriptions/listen` stream's `resourceSubscriptions`, and this returns once
    /// the server acknowledged it.
    ///
    /// # Errors
    /// As [`Peer::request`]; with a 2026-07-28 server, [`SessionError::Codec`] when it
    /// offers no subscriptions or does not acknowledge within the request timeout.
    pub async fn subscribe(&self, uri: &str) -> Result<(), SessionError> {
        self.era().subscribe(self, uri).await
    }

    /// `resources/unsubscribe` (with a 2026-07-28 server, the URI leaves the listen
    /// stream's filter).
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), SessionError> {
        self.era().unsubscribe(self, uri).await
    }

    /// Every page of `prompts/list`.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, SessionError> {
        all_pages(&self.peer, method::PROMPTS_LIST, "prompts").await
    }

    /// `prompts/get`.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn get_prompt(
        &self,
        params: &GetPromptRequestParams,
    ) -> Result<GetPromptResult, SessionError> {
        self.era()
            .resumable::<methods::GetPrompt>(self, params)
            .await
    }

    /// `completion/complete`.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn complete(
        &self,
        params: &CompleteRequestParams,
    ) -> Result<CompleteResult, SessionError> {
        self.request::<methods::Complete>(params, RequestOptions::new())
            .await
    }

    /// `logging/setLevel`. With a 2026-07-28 server, which has no such method, every
    /// later request carries `level` as its `logLevel` instead.
    ///
    /// # Errors
    /// As [`Peer::request`].
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), SessionError> {
        self.era().set_logging_level(self, level).await
    }

    /// Tell the server the roots changed (`notifications/roots/list_changed`).
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn notify_roots_list_changed(&self) -> Result<(), SessionError> {
        self.peer
            .notify_raw(method::ROOTS_LIST_CHANGED, Some(&EmptyParams::default()))
            .await
    }
}

fn to_raw<T: Serialize>(method: &str, value: &T) -> Result<Box<RawValue>, SessionError> {
    serde_json::value::to_raw_value(value).map_err(|e| SessionError::Codec {
        method: method.into(),
        detail: format!("params do not serialize: {e}"),
    })
}

/// A connected client. Derefs to [`ClientHandle`] for every call. Dropping it aborts
/// the connection; [`Client::close`] ends it in order.
pub struct Client {
    handle: ClientHandle,
    session: Session,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

impl Deref for Client {
    type Target = ClientHandle;
    fn deref(&self) -> &ClientHandle {
        &self.handle
    }
}

impl Client {
    /// Start building a client named `name` at `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(Implementation::new(name, version))
    }

    /// A handle that outlives borrows of the client (for tasks and callbacks).
    pub fn handle(&self) -> ClientHandle {
        self.handle.clone()
    }

    /// The server's `initialize` result.
    pub fn server_info(&self) -> &InitializeResult {
        // Set before `connect` returns a `Client`.
        self.handle
            .shared
            .server
            .get()
            .unwrap_or_else(|| unreachable_server_info())
    }

    /// End the connection in order (for a child process: close stdin, wait, `SIGTERM`,
    /// `SIGKILL`).
    pub async fn close(self) {
        if let Some(caches) = self.handle.shared.caches.get() {
            caches.abort();
        }
        self.handle.era().close().await;
        self.session.close().await;
    }

    /// Wait until the connection ends.
    pub async fn closed(&self) {
        self.session.closed().await;
    }
}

#[cold]
fn unreachable_server_info() -> &'static InitializeResult {
    static EMPTY: OnceLock<InitializeResult> = OnceLock::new();
    EMPTY.get_or_init(|| {
        InitializeResult::new(
            ProtocolVersion::LATEST_HANDSHAKE,
            Default::default(),
            Implementation::new("unknown", "0"),
        )
    })
}

/// Record a tool result's `isError` on its request's span.
fn note_tool_error(result: &dyn std::any::Any, operation: &crate::telemetry::Operation) {
    if let Some(call) = result.downcast_ref::<mcpflow_protocol::CallToolResult>()
        && call.is_error()
    {
        operation.tool_error();
    }
}
