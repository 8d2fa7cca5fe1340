//! Spans and metrics of MCP operations, named as OpenTelemetry's
//! [semantic conventions for MCP](https://github.com/open-telemetry/semantic-conventions-genai/blob/main/docs/gen-ai/mcp.md)
//! name them, and the W3C trace context carried in each request's `params._meta`.
//!
//! Every request and notification either side sends opens a `client` span, from send
//! to answer; every one it receives opens a `server` span, from receipt to answer. The
//! spans are [`tracing`] spans at `INFO` under the target `mcpflow::telemetry`, with
//! the conventions' names (`tools/call get_weather`) in `otel.name` and their
//! attributes as fields: `mcp.method.name`, `jsonrpc.request.id`, `gen_ai.tool.name`,
//! `gen_ai.prompt.name`, `gen_ai.operation.name`, `mcp.resource.uri`,
//! `mcp.protocol.version`, `mcp.session.id`, `network.transport`,
//! `network.protocol.name`, `error.type` and `rpc.response.status_code`. A subscriber
//! that keeps only logs pays one disabled-callsite check per message.
//!
//! With the `otel` feature, [`tracing-opentelemetry`](https://docs.rs/tracing-opentelemetry)
//! turns them into OpenTelemetry spans, and mcpflow also:
//! - writes the client span's context into the request's `params._meta` as
//!   `traceparent` and `tracestate` (both eras, every transport), and reads them from
//!   each request it receives to parent the server span (malformed or absent context
//!   is ignored: the span's parent is then the ambient one);
//! - records `mcp.client.operation.duration`, `mcp.server.operation.duration`,
//!   `mcp.client.session.duration` and `mcp.server.session.duration` (seconds, with the
//!   conventions' bucket boundaries) through the global meter provider, which should
//!   be installed before the first connection starts.
//!
//! A request a server handler sends back to its client (sampling, elicitation, roots)
//! is a child of the handler's server span, so one trace holds both directions.
//!
//! Errors are recorded as the conventions say: a JSON-RPC error's code in `error.type`
//! and `rpc.response.status_code`, `tool_error` for a tool result with `isError`, and
//! `timeout`, `cancelled`, `closed`, `transport` or `unreadable` for a request that
//! ended without an answer. On a server span, codes that blame the request (-32700,
//! -32600, -32601, -32602, -32002) set `rpc.response.status_code` only.
//!
//! A client and a server in one process, their spans collected by the OpenTelemetry
//! SDK (`opentelemetry_sdk` and `tracing-opentelemetry` are the application's own
//! dependencies):
//!
//! ```
//! use mcpflow::protocol::{CallToolResult, Tool};
//! use mcpflow::transport::memory::MemoryTransport;
//! use mcpflow::{Client, Server};
//! use opentelemetry::trace::{SpanKind, TracerProvider as _};
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let exporter = opentelemetry_sdk::trace::InMemorySpanExporter::default();
//! let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
//!     .with_simple_exporter(exporter.clone())
//!     .build();
//! let subscriber = tracing_subscriber::registry()
//!     .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("app")));
//! let _traced = tracing::subscriber::set_default(subscriber);
//!
//! let server = Server::builder("weather", "1")
//!     .tool(Tool::new("forecast", "Tomorrow", Tool::empty_input_schema()), |_, _| async {
//!         Ok(CallToolResult::text("sunny"))
//!     })
//!     .build();
//! let (client_side, server_side) = MemoryTransport::pair(16);
//! let _running = server.serve(server_side);
//! let client = Client::builder("agent", "1").connect(client_side).await?;
//! client.call_tool("forecast", serde_json::json!({})).await?;
//! client.close().await;
//!
//! let spans = exporter.get_finished_spans()?;
//! let sent = spans.iter().find(|s| s.name == "tools/call forecast" && s.span_kind == SpanKind::Client);
//! let served = spans.iter().find(|s| s.name == "tools/call forecast" && s.span_kind == SpanKind::Server);
//! assert!(sent.is_some() && served.is_some());
//! // With `otel`, the trace context in `_meta` makes the client span the server span's parent.
//! #[cfg(feature = "otel")]
//! assert_eq!(served.unwrap().parent_span_id, sent.unwrap().span_context.span_id());
//! # Ok(()) }
//! ```

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use mcpflow_protocol::{ErrorCode, ErrorObject, RequestId};
use tracing::Span;
use tracing::field::Empty;

use crate::session::BoxFuture;

#[cfg(feature = "otel")]
mod context;
#[cfg(feature = "otel")]
mod metrics;

/// The target of every span this module opens.
pub const TARGET: &str = "mcpflow::telemetry";

/// Which side of an operation a span stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// This side sent the request or notification.
    Client,
    /// This side received it.
    Server,
}

impl Side {
    /// The span kind, as `tracing-opentelemetry` reads `otel.kind`.
    fn kind(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// Facts of a connection that every operation on it carries.
#[derive(Debug)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct ConnectionFacts {
    /// Which side of the connection this is, once the client or server layer says.
    pub(crate) side: OnceLock<Side>,
    /// `network.transport`.
    pub(crate) transport: Option<&'static str>,
    /// `network.protocol.name`.
    pub(crate) protocol: Option<&'static str>,
    /// `mcp.protocol.version`, once negotiated.
    pub(crate) version: OnceLock<Cow<'static, str>>,
    /// `mcp.session.id`, when the transport has sessions.
    pub(crate) session_id: OnceLock<String>,
    /// When the connection started, for the session duration.
    pub(crate) started: Instant,
}

impl ConnectionFacts {
    pub(crate) fn new(carrier: crate::transport::Carrier) -> ConnectionFacts {
        ConnectionFacts {
            side: OnceLock::new(),
            transport: carrier.network_transport(),
            protocol: carrier.network_protocol(),
            version: OnceLock::new(),
            session_id: OnceLock::new(),
            started: Instant::now(),
        }
    }
}

/// `version` as a static string when it is one this SDK speaks (no allocation per
/// operation), else a copy.
pub(crate) fn version_text(version: &str) -> Cow<'static, str> {
    mcpflow_protocol::HANDSHAKE_VERSIONS
        .iter()
        .chain(mcpflow_protocol::PER_REQUEST_VERSIONS)
        .find(|known| known.as_str() == version)
        .map_or_else(
            || Cow::Owned(version.to_owned()),
            |known| Cow::Borrowed(known.as_str()),
        )
}

/// Whether operations are recorded: always with the `otel` feature (for the metrics),
/// otherwise while a subscriber wants this module's spans. Checked before anything is
/// read for a span.
pub(crate) fn enabled() -> bool {
    cfg!(feature = "otel") || tracing::enabled!(target: TARGET, tracing::Level::INFO)
}

/// What an operation names: a tool, a prompt or a resource (by its method), or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject<'a> {
    Tool(&'a str),
    Prompt(&'a str),
    Resource(&'a str),
    None,
}

impl<'a> Subject<'a> {
    fn of(method: &str, name: Option<&'a str>) -> Subject<'a> {
        let Some(name) = name else {
            return Subject::None;
        };
        match method {
            "tools/call" => Subject::Tool(name),
            "prompts/get" => Subject::Prompt(name),
            "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "notifications/resources/updated" => Subject::Resource(name),
            _ => Subject::None,
        }
    }

    /// The span's name: the method and, for a tool or prompt, its name (a resource's
    /// URI is not low-cardinality enough to name a span).
    fn span_name(self, method: &str) -> Cow<'_, str> {
        match self {
            Subject::Tool(name) | Subject::Prompt(name) => Cow::Owned(format!("{method} {name}")),
            Subject::Resource(_) | Subject::None => Cow::Borrowed(method),
        }
    }
}

/// One operation's span and what its duration is recorded with. Without a subscriber
/// that wants the spans (and without the `otel` feature) it is empty and costs nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Operation(Option<Arc<Recorded>>);

/// What the metrics read is kept without `otel` too: one type either way.
#[derive(Debug)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
struct Recorded {
    span: Span,
    side: Side,
    method: Cow<'static, str>,
    tool: Option<Arc<str>>,
    prompt: Option<Arc<str>>,
    version: OnceLock<Cow<'static, str>>,
    transport: Option<&'static str>,
    protocol: Option<&'static str>,
    /// `error.type`, first cause wins.
    error: OnceLock<Cow<'static, str>>,
    /// `rpc.response.status_code`.
    status_code: OnceLock<i64>,
    started: Instant,
}

/// Whether an operation would be recorded at all.
fn wanted(span: &Span) -> bool {
    cfg!(feature = "otel") || !span.is_disabled()
}

impl Operation {
    /// The operation `method` on `side`, naming `name` (the tool or prompt name, or the
    /// resource URI, as the method says), on a connection with `facts`; empty while
    /// nothing records operations.
    pub(crate) fn start(
        side: Side,
        method: Cow<'static, str>,
        name: Option<&str>,
        facts: &ConnectionFacts,
    ) -> Operation {
        if !enabled() {
            return Operation::default();
        }
        let subject = Subject::of(&method, name);
        let span = tracing::info_span!(
            target: TARGET,
            "mcp.operation",
            otel.name = %subject.span_name(&method),
            otel.kind = side.kind(),
            mcp.method.name = %method,
            jsonrpc.request.id = Empty,
            gen_ai.tool.name = Empty,
            gen_ai.prompt.name = Empty,
            gen_ai.operation.name = Empty,
            mcp.resource.uri = Empty,
            mcp.protocol.version = Empty,
            mcp.session.id = Empty,
            network.transport = facts.transport,
            network.protocol.name = facts.protocol,
            error.type = Empty,
            rpc.response.status_code = Empty,
            otel.status_code = Empty,
            otel.status_description = Empty,
        );
        if !wanted(&span) {
            return Operation(None);
        }
        let (mut tool, mut prompt) = (None, None);
        match subject {
            Subject::Tool(name) => {
                span.record("gen_ai.tool.name", name);
                span.record("gen_ai.operation.name", "execute_tool");
                tool = Some(Arc::from(name));
            }
            Subject::Prompt(name) => {
                span.record("gen_ai.prompt.name", name);
                prompt = Some(Arc::from(name));
            }
            Subject::Resource(uri) => {
                span.record("mcp.resource.uri", uri);
            }
            Subject::None => {}
        }
        if let Some(id) = facts.session_id.get() {
            span.record("mcp.session.id", id.as_str());
        }
        let version = OnceLock::new();
        if let Some(v) = facts.version.get() {
            span.record("mcp.protocol.version", &**v);
            let _ = version.set(v.clone());
        }
        Operation(Some(Arc::new(Recorded {
            span,
            side,
            method,
            tool,
            prompt,
            version,
            transport: facts.transport,
            protocol: facts.protocol,
            error: OnceLock::new(),
            status_code: OnceLock::new(),
            started: Instant::now(),
        })))
    }

    /// Whether this operation is recorded.
    pub(crate) fn is_recorded(&self) -> bool {
        self.0.is_some()
    }

    /// The span (disabled when nothing records it).
    pub(crate) fn span(&self) -> Span {
        self.0.as_ref().map_or_else(Span::none, |r| r.span.clone())
    }

    /// Parent the span with the trace context a received request carries (W3C
    /// `traceparent` and `tracestate` text). Malformed context is ignored. Call it
    /// before the span is first entered.
    pub(crate) fn continue_trace(&self, traceparent: Option<&str>, tracestate: Option<&str>) {
        #[cfg(feature = "otel")]
        if let (Some(recorded), Some(traceparent)) = (&self.0, traceparent) {
            context::set_parent(&recorded.span, traceparent, tracestate);
        }
        #[cfg(not(feature = "otel"))]
        let _ = (traceparent, tracestate);
    }

    /// The span's trace context as `_meta` entries (`traceparent`, and `tracestate`
    /// when not empty), when it belongs to a sampled or recorded trace.
    pub(crate) fn trace_context(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        #[cfg(feature = "otel")]
        {
            context::entries(&self.0.as_ref()?.span)
        }
        #[cfg(not(feature = "otel"))]
        None
    }

    /// The span's `traceparent`, for later spans to link to (a task's polls).
    pub(crate) fn traceparent(&self) -> Option<String> {
        #[cfg(feature = "otel")]
        {
            context::traceparent(&self.0.as_ref()?.span)
        }
        #[cfg(not(feature = "otel"))]
        None
    }

    /// Link the span to the span whose `traceparent` this is (the request that created
    /// the task this one asks about).
    pub(crate) fn link_to(&self, traceparent: Option<&String>) {
        #[cfg(feature = "otel")]
        if let (Some(recorded), Some(traceparent)) = (&self.0, traceparent) {
            context::add_link(&recorded.span, traceparent);
        }
        #[cfg(not(feature = "otel"))]
        let _ = traceparent;
    }

    /// Record the request's id.
    pub(crate) fn set_id(&self, id: &RequestId) {
        if let Some(r) = &self.0 {
            r.span
                .record("jsonrpc.request.id", tracing::field::display(id));
        }
    }

    /// Record the negotiated protocol version, when the connection did not know it at
    /// the start.
    pub(crate) fn set_version(&self, version: &str) {
        if let Some(r) = &self.0
            && r.version.set(version_text(version)).is_ok()
        {
            r.span.record("mcp.protocol.version", version);
        }
    }

    /// The operation ended with a JSON-RPC error.
    pub(crate) fn rejected(&self, code: ErrorCode, message: &str) {
        let Some(r) = &self.0 else { return };
        let code = i64::from(code.0);
        if r.status_code.set(code).is_err() {
            return;
        }
        r.span
            .record("rpc.response.status_code", tracing::field::display(code));
        // A server answers a bad request correctly: only its own faults are errors.
        let blames_request = matches!(code, -32700 | -32600 | -32601 | -32602 | -32002);
        if r.side == Side::Client || !blames_request {
            self.failed_with(Cow::Owned(code.to_string()), message);
        }
    }

    /// A tool result with `isError`.
    pub(crate) fn tool_error(&self) {
        self.failed_with(Cow::Borrowed("tool_error"), "");
    }

    /// The operation ended without an answer: `kind` is `timeout`, `cancelled`,
    /// `closed`, `transport` or `unreadable`.
    pub(crate) fn failed(&self, kind: &'static str, message: &str) {
        self.failed_with(Cow::Borrowed(kind), message);
    }

    fn failed_with(&self, kind: Cow<'static, str>, message: &str) {
        let Some(r) = &self.0 else { return };
        if r.error.get().is_some() {
            return;
        }
        r.span.record("error.type", &*kind);
        r.span.record("otel.status_code", "error");
        if !message.is_empty() {
            r.span.record("otel.status_description", message);
        }
        let _ = r.error.set(kind);
    }
}

impl Drop for Recorded {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        metrics::operation(self);
    }
}

impl Operation {
    /// `handler`, recording its outcome on this operation when it is recorded.
    pub(crate) fn record_outcome<T: Send + 'static>(
        self,
        handler: BoxFuture<'static, Result<T, ErrorObject>>,
    ) -> BoxFuture<'static, Result<T, ErrorObject>> {
        if self.is_recorded() {
            Box::pin(record_outcome(self, handler))
        } else {
            handler
        }
    }
}

/// `handler`, recording its outcome on `operation`: a JSON-RPC error, a panic (-32603),
/// or `cancelled` when it is dropped before it ends.
async fn record_outcome<T>(
    operation: Operation,
    handler: impl Future<Output = Result<T, ErrorObject>>,
) -> Result<T, ErrorObject> {
    /// Records, when dropped before the handler ended, why.
    struct Watch {
        operation: Operation,
        ended: bool,
    }
    impl Drop for Watch {
        fn drop(&mut self) {
            if self.ended {
                return;
            }
            if std::thread::panicking() {
                self.operation
                    .rejected(ErrorCode::INTERNAL_ERROR, "the handler panicked");
            } else {
                self.operation
                    .failed("cancelled", "cancelled before its answer");
            }
        }
    }
    let mut watch = Watch {
        operation,
        ended: false,
    };
    let outcome = handler.await;
    watch.ended = true;
    if let Err(error) = &outcome {
        watch.operation.rejected(error.code, &error.message);
    }
    outcome
}

/// The current span's `traceparent`, when it belongs to a trace.
pub(crate) fn current_traceparent() -> Option<String> {
    #[cfg(feature = "otel")]
    {
        context::traceparent(&Span::current())
    }
    #[cfg(not(feature = "otel"))]
    None
}

/// The span of a tool host's call of the catalog's tool `name` on `server`: the
/// GenAI conventions' `execute_tool {name}`, parent of the call's client span.
pub(crate) fn host_call(name: &str, server: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "mcpflow.host.call",
        otel.name = %format_args!("execute_tool {name}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        mcpflow.host.server = %server,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Record on a host call's span how it failed.
pub(crate) fn host_call_failed(span: &Span, kind: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
}

/// Record a session's duration when its connection ends (with `otel`), for a
/// connection whose side is known.
pub(crate) fn session_ended(facts: &ConnectionFacts, error: Option<&'static str>) {
    #[cfg(feature = "otel")]
    if let Some(side) = facts.side.get() {
        metrics::session(*side, facts, error);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (facts, error);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_follow_the_method() {
        assert_eq!(
            Subject::of("tools/call", Some("echo")),
            Subject::Tool("echo")
        );
        assert_eq!(
            Subject::of("prompts/get", Some("greet")),
            Subject::Prompt("greet")
        );
        assert_eq!(
            Subject::of("resources/read", Some("file:///a")),
            Subject::Resource("file:///a")
        );
        assert_eq!(Subject::of("tasks/get", Some("t1")), Subject::None);
        assert_eq!(
            Subject::Tool("echo").span_name("tools/call"),
            "tools/call echo"
        );
        assert_eq!(
            Subject::Resource("file:///a").span_name("resources/read"),
            "resources/read"
        );
    }
}
