//! The server side of stdio: read the client's messages from stdin, write to stdout.
//!
//! Logs must go to stderr: stdout carries only protocol messages.
//!
//! ```no_run
//! # async fn run() {
//! let transport = mcpflow::transport::stdio::stdio();
//! # drop(transport); }
//! ```

use tokio::io::{Stdin, Stdout};

use super::StreamTransport;

/// A transport over this process's stdin and stdout.
pub fn stdio() -> StreamTransport<Stdin, Stdout> {
    StreamTransport::new(tokio::io::stdin(), tokio::io::stdout())
}
