//! The server: capabilities derived from what is registered, resources, subscriptions
//! and log levels (`server`), typed tools and typed elicitation (`typed`), the attribute
//! macros end to end (`macros`), the `JsonSchema` derive against schemars' own
//! (`schema_derive`), and each example in `examples/` driven by a client (`examples`).
//! Every wait is bounded.

#[path = "../common/mod.rs"]
mod common;

mod examples;
mod macros;
mod schema_derive;
mod server;
mod typed;
