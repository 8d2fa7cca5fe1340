//! The compile-time errors of mcpflow's attribute macros (`#[tool]`, `#[tools]`,
//! `#[prompt]`, `#[resource]`): each `tests/ui/*.rs` must fail to build with the message
//! and span in its `.stderr`. The package holds tests only.
