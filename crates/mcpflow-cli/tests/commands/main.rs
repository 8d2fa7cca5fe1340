//! The `mcpflow` binary end to end: each verb over stdio and HTTP (`cli`, `verbs`), tools
//! run as tasks (`tasks`), `host` and `call --config` (`host`), https (`tls`), OAuth
//! (`auth`), Ctrl-C (`interrupt`), the progress bar on a terminal (`terminal`) and
//! instances sharing a Redis (`fleet`, `fleet_sessions`, `fleet_tasks`), and one trace
//! across the official Python SDK and mcpflow (`otel_peers`, run by the interop matrix). Every child run is bounded.

#[path = "../common/mod.rs"]
mod common;
#[path = "../../../mcpflow/tests/common/redis.rs"]
mod redis;

mod auth;
mod cli;
mod fleet;
mod fleet_sessions;
mod fleet_tasks;
mod host;
mod interrupt;
mod otel_peers;
mod tasks;
mod terminal;
mod tls;
mod verbs;
