//! mcpflow: a Model Context Protocol SDK whose connections cannot hang.
//!
//! # Layout (in the order data flows)
//! - [`transport`]: frames in and out (memory, stdio, child process).
//! - [`session`]: the engine (reader, writer, pending table, notification lane, request
//!   tasks, timeouts, cancellation, close).
//! - [`client`]: [`client::Client`], typed calls, callbacks, self-refreshing lists.
//! - [`server`]: [`server::Server`], its builder and handler context.
//! - [`config`]: limits and timeouts with documented defaults.
//! - [`error`]: error types per layer.

pub mod client;
pub mod config;
pub mod error;
pub mod server;
pub mod session;
pub mod transport;

pub use config::{SessionConfig, SessionConfigBuilder};
pub use error::{CloseReason, SessionError, TransportError};
pub use mcpflow_protocol as protocol;
pub use session::{
    BoxFuture, Peer, PendingRequest, ProgressUpdate, RequestContext, RequestEvent, RequestOptions,
    Service, Session,
};
