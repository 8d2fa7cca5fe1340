//! For programs that host MCP servers (agents, editors, the `mcpflow` command): where
//! the servers are, read from the `mcpServers` files that MCP clients share.
//!
//! [`ServersConfig`] reads the format of Claude Desktop, Cursor, Claude Code and
//! VS Code (`mcp.json`, whose top-level key is `servers`), and [`ServerConfig`] says how
//! to reach one server: a command to start ([`StdioServer`]) or a URL ([`RemoteServer`]).

mod catalog;
mod config;
mod names;
mod snapshot;

use std::sync::Arc;

pub use config::{
    ConfigError, RemoteServer, RemoteTransport, ServerConfig, ServersConfig, StdioServer,
};
pub use names::{CollisionPolicy, MAX_NAME_LEN, NamePolicy, ToolFilter, ToolPredicate, fit_name};
pub use snapshot::{
    CatalogChange, CatalogPrompt, CatalogSnapshot, CatalogTool, Collision, ItemKind, ItemRef,
    Served,
};

/// What a host announces ([`ToolHost::events`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HostEvent {
    /// A new catalog snapshot added, removed or changed entries.
    CatalogChanged(Arc<CatalogChange>),
    /// Two or more items got one catalog name (see [`CollisionPolicy`]).
    NameCollision(Collision),
}
