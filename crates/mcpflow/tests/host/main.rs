//! The tool host: calls and their deadlines (`host_calls`), the live catalog against
//! real servers (`host_catalog`), supervisors and close (`host_lifecycle`), and an
//! OAuth-protected server behind it (`host_oauth`). Every wait is bounded. The host over
//! stdio child processes is `host_child.rs`, a binary of its own: its child is that
//! binary, serving MCP on stdout.

#[path = "../common/mod.rs"]
mod common;

mod host_calls;
mod host_catalog;
mod host_lifecycle;
mod host_oauth;
