//! Wire types of the Model Context Protocol.
//!
//! Pure data: no I/O and no async runtime. The SDK crate `mcpflow` moves these types
//! over transports; this crate only describes them.
//!
//! # Layout
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope ([`Message`]), request ids and error codes.

pub mod jsonrpc;

pub use jsonrpc::{ErrorCode, ErrorObject, Message, RequestId};
