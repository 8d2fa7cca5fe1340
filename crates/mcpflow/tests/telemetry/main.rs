//! Telemetry (`--features otel`): client and server spans by the semantic conventions
//! for MCP, the trace context carried in `_meta` in both eras, server-to-client requests
//! as children of the handler's span, errors, and the duration metrics. Spans are
//! collected by the OpenTelemetry SDK's in-memory exporter; every wait is bounded.
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used)] // panics are how tests fail

#[path = "../common/mod.rs"]
mod common;

mod conventions;
mod spans;
