//! Streamable HTTP (protocol 2025-03-26 and later), with the legacy HTTP+SSE transport
//! of 2024-11-05 as a client fallback.
//!
//! - [`server`] (feature `http-server`): one MCP endpoint for POST, GET and DELETE on
//!   axum, with sessions, per-request event streams, resumability and DNS-rebinding
//!   protection.
//! - [`client`] (feature `http-client`): a [`Transport`](crate::transport::Transport)
//!   over reqwest that fails every pending request at once, with its cause, whatever
//!   goes wrong on the wire.

#[cfg(feature = "http-client")]
pub mod client;
#[cfg(feature = "http-server")]
pub mod server;

/// The header carrying the session id the server assigned at `initialize`.
pub const SESSION_ID_HEADER: &str = "mcp-session-id";
/// The header carrying the negotiated protocol version on every request after `initialize`.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The header a client sends to resume an event stream after the last event it saw.
pub const LAST_EVENT_ID_HEADER: &str = "last-event-id";
