//! mcpflow: a Model Context Protocol SDK whose connections cannot hang.
//!
#![doc = include_str!("../docs/getting-started.md")]
//!
//! With the `macros` feature (on by default) the same tool is
//! `#[mcpflow::tool] async fn add(args: Add) -> ...` (see
//! [Attribute macros](#attribute-macros)); `docs/comparison.md` shows it next to rmcp,
//! FastMCP and the TypeScript SDK.
//!
//! # A client, with progress
//!
//! Here over an in-process transport; a server process is
//! [`transport::ChildProcess::builder`]`("cmd").spawn()?`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use mcpflow::protocol::{CallToolResult, Tool};
//! use mcpflow::transport::MemoryTransport;
//! use mcpflow::{Client, RequestOptions, Server};
//!
//! let server = Server::builder("counter", "1.0.0")
//!     .tool(Tool::new("count", "Count to three", Tool::empty_input_schema()), |_args, cx| async move {
//!         for i in 1..=3 {
//!             let _ = cx.progress(f64::from(i), Some(3.0), None).await;
//!         }
//!         Ok(CallToolResult::text("3"))
//!     })
//!     .build();
//! let (client_side, server_side) = MemoryTransport::pair(0);
//! let _running = server.serve(server_side);
//!
//! let client = Client::builder("agent", "1.0.0").connect(client_side).await?;
//! let options = RequestOptions::new().on_progress(|p| println!("progress {}", p.progress));
//! let params = mcpflow::protocol::CallToolRequestParams::new("count");
//! let result = client.call_tool_with(&params, options).await?; // progress printed first
//! assert_eq!(result.content[0].as_text(), Some("3"));
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! # Over HTTP
//!
//! ```no_run
//! # async fn run(server: mcpflow::server::Server) -> Result<(), Box<dyn std::error::Error>> {
//! use mcpflow::client::Client;
//! use mcpflow::http::client::HttpClientTransport;
//! use mcpflow::http::server::HttpServer;
//!
//! let running = HttpServer::new(server).bind("127.0.0.1:3000").await?; // endpoint /mcp
//! let transport = HttpClientTransport::new(running.url())?;
//! let client = Client::builder("agent", "1.0.0").connect(transport).await?;
//! # Ok(()) }
//! ```
//!
//! # What cannot hang
//! The engine ([`session`]) reads with one task that never waits on user code:
//! responses and progress go to the waiting caller (progress always first, in order),
//! notifications to an ordered lane of their own, peer requests to tasks under a limit.
//! So a notification handler or a sampling callback may call the peer back; every
//! request has a timeout (60 s by default, reset by progress, capped in total) and is
//! cancelled on the wire when it times out or its future is dropped; and when a
//! connection ends, every pending request fails at once with the cause (for a child
//! process, its exit status and the tail of its stderr).
//!
//! # Layout (in the order data flows)
//! - [`transport`]: frames in and out (memory, any byte stream, stdio, child process).
//! - `http`: streamable HTTP, a server on axum and a client on reqwest (with the
//!   legacy HTTP+SSE fallback), each running sessions on the same engine.
//! - [`session`]: the engine: reader, writer, pending table, notification lane,
//!   request tasks, timeouts, cancellation, close.
//! - [`client`]: [`client::Client`]: handshake, typed calls, callbacks, self-refreshing lists.
//! - [`server`]: [`server::Server`], its builder and the handler context.
//! - [`config`]: limits and timeouts with documented defaults.
//! - [`host`]: [`ToolHost`](host::ToolHost), many servers behind one live catalog for
//!   an agent, and the `mcpServers` file that MCP clients share.
//! - [`error`]: error types per layer.
//! - [`protocol`]: the wire types (the `mcpflow-protocol` crate).
//!
//! # Features
//!
//! | feature | default | what it adds |
//! | --- | --- | --- |
//! | `http-server` | on | `http::server`: the streamable HTTP server (axum) |
//! | `http-client` | on | `http::client`: the streamable HTTP client (reqwest), with the HTTP+SSE fallback; `auth`: OAuth client building blocks |
//! | `rustls` | off | `https://` URLs for the HTTP client |
//! | `oauth-jwt` | off | the OAuth client's `private_key_jwt` authentication and DPoP-bound tokens (ES256, aws-lc-rs) |
//! | `jwt` | off | `http::server::auth::JwtVerifier`: JWT access tokens checked against a JWKS (jsonwebtoken) |
//! | `redis` | off | `server::bus::RedisBus`: list changes and resource updates carried to every instance of a fleet over Redis pub/sub |
//! | `otel` | off | [`telemetry`]: OpenTelemetry spans by the semantic conventions for MCP, W3C trace context in each request's `_meta`, and the duration metrics |
//! | `macros` | on | `#[tool]`, `#[tools]`, `#[prompt]`, `#[resource]` (the `mcpflow-macros` crate) |
//!
#![cfg_attr(feature = "macros", doc = include_str!("../docs/macros.md"))]

#[cfg(feature = "http-client")]
pub mod auth;
pub mod client;
pub mod config;
pub mod error;
pub mod host;
#[cfg(any(feature = "http-server", feature = "http-client"))]
pub mod http;
pub mod server;
pub mod session;
pub mod telemetry;
pub mod transport;

pub use client::Client;
pub use config::{SessionConfig, SessionConfigBuilder};
pub use error::{CloseReason, SessionError, TransportError};
#[cfg(feature = "macros")]
#[doc = include_str!("../docs/macros/prompt.md")]
pub use mcpflow_macros::prompt;
#[cfg(feature = "macros")]
#[doc = include_str!("../docs/macros/resource.md")]
pub use mcpflow_macros::resource;
#[cfg(feature = "macros")]
#[doc = include_str!("../docs/macros/tool.md")]
pub use mcpflow_macros::tool;
#[cfg(feature = "macros")]
#[doc = include_str!("../docs/macros/tools.md")]
pub use mcpflow_macros::tools;
pub use mcpflow_protocol as protocol;

/// [schemars](https://docs.rs/schemars), which describes tool arguments and results as JSON
/// Schema, with mcpflow's `JsonSchema` derive in place of schemars' own: the derive takes
/// the same attributes and gives the same schemas, and it works in a crate that depends
/// on mcpflow but not on schemars.
///
/// ```
/// use mcpflow::JsonSchema; // the trait and the derive; also `mcpflow::schemars::JsonSchema`
///
/// /// Two numbers to add.
/// #[derive(serde::Deserialize, JsonSchema)]
/// struct Add {
///     /// The first number.
///     a: i64,
///     b: i64,
/// }
///
/// let schema = mcpflow::schemars::schema_for!(Add);
/// assert_eq!(schema.get("title").and_then(|t| t.as_str()), Some("Add"));
/// assert_eq!(schema.get("description").and_then(|t| t.as_str()), Some("Two numbers to add."));
/// ```
pub mod schemars {
    pub use ::schemars::*;
    pub use mcpflow_macros::JsonSchema;
}
pub use crate::schemars::JsonSchema;

/// What generated code names; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use ::schemars;
}
pub use server::Server;
pub use session::{Peer, ProgressUpdate, RequestOptions};
pub use transport::stdio::stdio;
