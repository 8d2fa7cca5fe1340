//! The client: negotiation, typed calls, all-pages helpers, progress as a stream,
//! callbacks (elicitation, roots), and the rule that `initialize` is never cancelled
//! (`client`). Every wait is bounded.

#[path = "../common/mod.rs"]
mod common;

mod client;
