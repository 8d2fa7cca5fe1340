//! For programs that host MCP servers (agents, editors, the `mcpflow` command): many
//! servers behind one live catalog ([`ToolHost`]), and where the servers are, read from
//! the `mcpServers` files that MCP clients share.
//!
//! Layout, in the order data flows: [`ServersConfig`] and the connectors reach each
//! server; one supervisor per server owns its connection and reconnects it
//! ([`Health`], [`ReconnectPolicy`]); the catalog follows every server's lists into
//! immutable [`CatalogSnapshot`]s named by the [`NamePolicy`] and [`CollisionPolicy`]
//! and filtered by each server's [`ToolFilter`]; calls go by catalog name
//! ([`ToolHost::call_with`]) and fail with a [`HostError`] a model can act on.
//!
//! [`ServersConfig`] reads the format of Claude Desktop, Cursor, Claude Code and
//! VS Code (`mcp.json`, whose top-level key is `servers`), and [`ServerConfig`] says how
//! to reach one server: a command to start ([`StdioServer`]) or a URL ([`RemoteServer`]).

mod call;
mod catalog;
mod config;
mod connect;
mod error;
mod names;
mod server_options;
mod snapshot;
mod supervisor;
mod tool_host;

use std::sync::Arc;

pub use call::{
    Approval, ApprovalHook, CallOptions, DEFAULT_MAX_TOTAL, DEFAULT_TOOL_TIMEOUT,
    ElicitationRequest, HostElicitationHandler, HostSamplingHandler, ToolCallInfo,
};
pub use config::{
    ConfigError, OAuthSettings, RemoteServer, RemoteTransport, ServerConfig, ServersConfig,
    StdioServer,
};
#[cfg(feature = "http-client")]
pub use connect::connector_with_oauth;
pub use connect::{connector, connector_for, memory_connector};
pub use error::{HostError, TimeoutPhase};
pub use names::{
    CollisionPolicy, MAX_NAME_LEN, NameFn, NamePolicy, ToolFilter, ToolPredicate, fit_name,
};
pub use server_options::ServerOptions;
pub use snapshot::{
    CatalogChange, CatalogPrompt, CatalogSnapshot, CatalogTool, Collision, ItemKind, ItemRef,
    Served,
};
pub use supervisor::{ConnectFailure, Connector, Health, ReconnectPolicy};
pub use tool_host::{ToolHost, ToolHostBuilder};

/// What a host announces ([`ToolHost::events`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HostEvent {
    /// A new catalog snapshot added, removed or changed entries.
    CatalogChanged(Arc<CatalogChange>),
    /// Two or more items got one catalog name (see [`CollisionPolicy`]).
    NameCollision(Collision),
    /// A server's health changed.
    Health {
        /// The server.
        server: Arc<str>,
        /// Its new health.
        health: Health,
    },
}
