//! Streamable HTTP: the server at the wire (`http_server`), batches (`http_batches`), its session table
//! (`http_sessions`) and limits under hostile traffic (`http_limits`), hostile messages
//! over it (`hostile_http`), the client transport against misbehaving servers
//! (`http_client`) and redirects (`http_redirects`), and what only HTTP can do to a client (`http_engine`). Every wait is
//! bounded.

#[path = "../common/mod.rs"]
mod common;

mod hostile_http;
mod http_batches;
mod http_client;
mod http_engine;
mod http_limits;
mod http_redirects;
mod http_server;
mod http_sessions;
