use std::sync::OnceLock;

use mcpflow::client::Era;
use mcpflow::protocol::{
    CallToolResult, ElicitRequestParams, ElicitResult, GetPromptResult, JsonObject, Prompt,
    PromptMessage, ReadResourceResult, Resource, ResourceContents, Tool,
};
use mcpflow::server::ToolError;
use mcpflow::transport::memory::MemoryTransport;
use mcpflow::{Client, RequestOptions, Server};
use opentelemetry::trace::{SpanId, SpanKind, Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

use crate::common::wait::bounded;

/// The metrics of every test in this binary, on the global meter provider, installed
/// before the first connection of any test (mcpflow makes its instruments then).
fn meters() -> &'static (SdkMeterProvider, InMemoryMetricExporter) {
    static METERS: OnceLock<(SdkMeterProvider, InMemoryMetricExporter)> = OnceLock::new();
    METERS.get_or_init(|| {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter.clone())
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        (provider, exporter)
    })
}

/// Spans of this thread's work (the tests run on one thread) until the guard drops.
pub struct Traced {
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Traced {
    pub fn start() -> Traced {
        meters();
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("test"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false);
        let subscriber = tracing_subscriber::registry().with(layer);
        Traced {
            exporter,
            _provider: provider,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    fn spans(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().unwrap()
    }

    /// The one span named `name` of `kind`.
    pub fn one(&self, name: &str, kind: SpanKind) -> SpanData {
        let spans = self.spans();
        let found: Vec<_> = spans
            .iter()
            .filter(|s| s.name == name && s.span_kind == kind)
            .cloned()
            .collect();
        assert_eq!(
            found.len(),
            1,
            "one {kind:?} span `{name}` among {:#?}",
            spans
                .iter()
                .map(|s| (&s.name, &s.span_kind))
                .collect::<Vec<_>>()
        );
        found.into_iter().next().unwrap()
    }
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

pub fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(Value::to_string)
}

pub fn server() -> mcpflow::server::ServerBuilder {
    Server::builder("traced", "1")
        .per_request_era(true)
        .tool(
            Tool::new("echo", "Echo", Tool::empty_input_schema()),
            |_args, _cx| async { Ok(CallToolResult::text("echoed")) },
        )
        .tool(
            Tool::new("fails", "A tool error", Tool::empty_input_schema()),
            |_args, _cx| async { Err(ToolError::Failed("it broke".into())) },
        )
        .resource(
            Resource::new("memo://note", "note"),
            |uri, _cx| async move {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    uri, "a note",
                )]))
            },
        )
        .prompt(Prompt::new("greet", "Greets"), |_args, _cx| async {
            Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                "hello",
            )]))
        })
        .tool(
            Tool::new("confirm", "Asks the user", Tool::empty_input_schema()),
            |_args, cx| async move {
                let asked = cx
                    .elicit(ElicitRequestParams::form("Proceed?", JsonObject::new()))
                    .await
                    .map_err(|e| ToolError::Failed(e.to_string()))?;
                Ok(CallToolResult::text(format!("{:?}", asked.action)))
            },
        )
}

pub async fn connect(era: Era) -> (Client, mcpflow::server::RunningServer) {
    let (c, s) = MemoryTransport::pair(16);
    let running = server().build().serve(s);
    let client = Client::builder("tracing-client", "1")
        .era(era)
        .on_elicitation(false, |_params, _c| async {
            Ok(ElicitResult::accept(JsonObject::new()))
        })
        .connect(c);
    (bounded("connect", client).await.unwrap(), running)
}

/// In both eras, a call continues the caller's trace: the caller's span parents the
/// client span, which parents the server span, all in one trace, each with the
/// conventions' name, kind and attributes.
#[tokio::test]
async fn a_call_continues_the_callers_trace_in_both_eras() {
    for (era, version) in [
        (Era::Handshake, "2025-11-25"),
        (Era::PerRequest, "2026-07-28"),
    ] {
        let traced = Traced::start();
        let (client, _running) = connect(era).await;
        let agent = tracing::info_span!("agent");
        let result = bounded(
            "call",
            client
                .call_tool("echo", json!({}))
                .instrument(agent.clone()),
        )
        .await
        .unwrap();
        assert_eq!(result.content[0].as_text(), Some("echoed"));
        drop(agent);
        bounded("close", client.close()).await;

        let agent = traced.one("agent", SpanKind::Internal);
        let sent = traced.one("tools/call echo", SpanKind::Client);
        let served = traced.one("tools/call echo", SpanKind::Server);
        let trace = agent.span_context.trace_id();
        assert_eq!(sent.span_context.trace_id(), trace, "{era:?}");
        assert_eq!(served.span_context.trace_id(), trace, "{era:?}");
        assert_eq!(sent.parent_span_id, agent.span_context.span_id(), "{era:?}");
        assert_eq!(
            served.parent_span_id,
            sent.span_context.span_id(),
            "{era:?}"
        );
        assert!(served.parent_span_is_remote, "parented from `_meta`");
        for span in [&sent, &served] {
            assert_eq!(text(span, "mcp.method.name").as_deref(), Some("tools/call"));
            assert_eq!(text(span, "gen_ai.tool.name").as_deref(), Some("echo"));
            assert_eq!(
                text(span, "gen_ai.operation.name").as_deref(),
                Some("execute_tool")
            );
            assert_eq!(
                text(span, "mcp.protocol.version").as_deref(),
                Some(version),
                "{era:?} {:?}",
                span.span_kind
            );
            assert!(text(span, "jsonrpc.request.id").is_some(), "{span:?}");
            assert!(text(span, "error.type").is_none(), "{span:?}");
            assert_eq!(span.status, Status::Unset);
        }
        assert_eq!(
            text(&sent, "jsonrpc.request.id"),
            text(&served, "jsonrpc.request.id")
        );
    }
}

/// A handler's elicitation is a child of the handler's server span, and the client
/// side's span for it a child of that: one trace holds both directions.
#[tokio::test]
async fn a_server_to_client_request_is_a_child_of_the_handlers_span() {
    let traced = Traced::start();
    let (client, _running) = connect(Era::Handshake).await;
    let result = bounded("call", client.call_tool("confirm", json!({})))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("Accept"));
    bounded("close", client.close()).await;
    let served = traced.one("tools/call confirm", SpanKind::Server);
    let asked = traced.one("elicitation/create", SpanKind::Client);
    let answered = traced.one("elicitation/create", SpanKind::Server);
    assert_eq!(asked.parent_span_id, served.span_context.span_id());
    assert_eq!(answered.parent_span_id, asked.span_context.span_id());
    assert_eq!(
        answered.span_context.trace_id(),
        served.span_context.trace_id()
    );
}

/// Errors as the conventions record them: a JSON-RPC error is an error on the client
/// span; on the server span an invalid-params answer sets only the status code; a
/// tool result with `isError` is a `tool_error` on both sides.
#[tokio::test]
async fn errors_are_recorded_as_the_conventions_say() {
    let traced = Traced::start();
    let (client, _running) = connect(Era::Handshake).await;
    bounded("unknown tool", client.call_tool("nope", json!({})))
        .await
        .expect_err("an unknown tool");
    let failed = bounded("tool error", client.call_tool("fails", json!({})))
        .await
        .unwrap();
    assert!(failed.is_error());
    bounded("close", client.close()).await;

    let sent = traced.one("tools/call nope", SpanKind::Client);
    assert_eq!(text(&sent, "error.type").as_deref(), Some("-32602"));
    assert_eq!(
        text(&sent, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    assert!(matches!(sent.status, Status::Error { .. }), "{sent:?}");
    let served = traced.one("tools/call nope", SpanKind::Server);
    assert_eq!(
        text(&served, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    assert!(text(&served, "error.type").is_none(), "{served:?}");
    assert_eq!(served.status, Status::Unset);
    for kind in [SpanKind::Client, SpanKind::Server] {
        let span = traced.one("tools/call fails", kind.clone());
        assert_eq!(
            text(&span, "error.type").as_deref(),
            Some("tool_error"),
            "{kind:?}"
        );
        assert!(matches!(span.status, Status::Error { .. }), "{kind:?}");
    }
}

/// Trace context that is malformed is ignored: the request is served, and its span
/// starts a trace of its own.
#[tokio::test]
async fn malformed_trace_context_is_ignored() {
    let traced = Traced::start();
    let (client, _running) = connect(Era::Handshake).await;
    let mut meta = serde_json::Map::new();
    meta.insert("traceparent".into(), json!("00-not-a-trace-01"));
    meta.insert("tracestate".into(), json!(17));
    let params =
        serde_json::value::to_raw_value(&json!({"name": "echo", "arguments": {}})).unwrap();
    bounded(
        "call with a bad traceparent",
        client
            .peer()
            .request_raw("tools/call", Some(params), RequestOptions::new().meta(meta)),
    )
    .await
    .unwrap();
    bounded("close", client.close()).await;
    let sent = traced.one("tools/call", SpanKind::Client);
    let served = traced.one("tools/call echo", SpanKind::Server);
    assert_eq!(served.parent_span_id, SpanId::INVALID);
    assert_ne!(served.span_context.trace_id(), sent.span_context.trace_id());
}

/// Notifications have spans of their own on both sides, with no request id.
#[tokio::test]
async fn notifications_have_spans_without_an_id() {
    let traced = Traced::start();
    let (client, _running) = connect(Era::Handshake).await;
    bounded("ping", client.ping()).await.unwrap();
    bounded("close", client.close()).await;
    for kind in [SpanKind::Client, SpanKind::Server] {
        let span = traced.one("notifications/initialized", kind.clone());
        assert!(text(&span, "jsonrpc.request.id").is_none(), "{kind:?}");
        assert_eq!(
            text(&span, "mcp.method.name").as_deref(),
            Some("notifications/initialized")
        );
    }
}

/// The operation histograms, with the conventions' unit, boundaries and attributes.
#[tokio::test]
async fn operation_durations_are_recorded() {
    let _traced = Traced::start();
    let (client, running) = connect(Era::Handshake).await;
    bounded("call", client.call_tool("echo", json!({})))
        .await
        .unwrap();
    bounded("close", client.close()).await;
    bounded("server closed", running.wait()).await;
    let (provider, exporter) = meters();
    provider.force_flush().unwrap();
    let metrics = exporter.get_finished_metrics().unwrap();
    for name in [
        "mcp.client.operation.duration",
        "mcp.server.operation.duration",
        "mcp.client.session.duration",
        "mcp.server.session.duration",
    ] {
        let metric = metrics
            .iter()
            .flat_map(|m| m.scope_metrics())
            .flat_map(|s| s.metrics())
            .find(|m| m.name() == name)
            .unwrap_or_else(|| panic!("{name} recorded"));
        assert_eq!(metric.unit(), "s", "{name}");
        let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else {
            panic!("{name} is a histogram of seconds");
        };
        // Other tests of this binary record too: find this one's point.
        let has = |p: &opentelemetry_sdk::metrics::data::HistogramDataPoint<f64>, kv: KeyValue| {
            p.attributes().any(|a| a == &kv)
        };
        let point = histogram
            .data_points()
            .find(|p| {
                has(p, KeyValue::new("mcp.protocol.version", "2025-11-25"))
                    && (!name.contains("operation")
                        || has(p, KeyValue::new("mcp.method.name", "tools/call"))
                            && has(p, KeyValue::new("gen_ai.tool.name", "echo")))
            })
            .unwrap_or_else(|| {
                panic!(
                    "{name} has a point for a 2025-11-25 tools/call: {:?}",
                    histogram
                        .data_points()
                        .map(|p| p.attributes().collect::<Vec<_>>())
                        .collect::<Vec<_>>()
                )
            });
        assert!(point.count() >= 1, "{name}");
        assert_eq!(
            point.bounds().collect::<Vec<_>>(),
            [
                0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0
            ],
            "{name}"
        );
    }
}

/// A task's later requests link to the span of the call that created it, in both eras.
#[tokio::test]
async fn a_tasks_polls_link_to_the_call_that_started_it() {
    use mcpflow::client::TaskStart;
    use mcpflow::protocol::tools::TaskSupport;
    for era in [Era::Handshake, Era::PerRequest] {
        let traced = Traced::start();
        let (c, s) = MemoryTransport::pair(16);
        let _running = Server::builder("tasks", "1")
            .per_request_era(true)
            .tool(
                Tool::new("report", "A slow report", Tool::empty_input_schema())
                    .with_task_support(TaskSupport::Optional),
                |_args, _cx| async {
                    // Pending at first, so that the 2026-07-28 call becomes a task.
                    tokio::task::yield_now().await;
                    Ok(CallToolResult::text("reported"))
                },
            )
            .build()
            .serve(s);
        let client = bounded(
            "connect",
            Client::builder("tracing-client", "1").era(era).connect(c),
        )
        .await
        .unwrap();
        let started = bounded("start", client.start_tool_task("report", json!({}), None))
            .await
            .unwrap();
        let TaskStart::Task(created) = started else {
            panic!("{era:?}: the call became a task");
        };
        bounded("get", client.get_task(&created.task.task_id))
            .await
            .unwrap();
        bounded("close", client.close()).await;
        let origin = traced.one("tools/call report", SpanKind::Server);
        let poll = traced.one("tasks/get", SpanKind::Server);
        assert!(
            poll.links
                .iter()
                .any(|l| l.span_context.span_id() == origin.span_context.span_id()),
            "{era:?}: tasks/get links to the call: {:?}",
            poll.links
        );
    }
}

/// Over streamable HTTP the spans carry the network and the session id, and the HTTP
/// server's statistics are instruments of their own.
#[tokio::test]
async fn http_spans_carry_the_session_and_the_server_is_measured() {
    use crate::common::{Kind, connect as connect_over};
    let traced = Traced::start();
    let server = server().build();
    let (client, guard) = connect_over(Kind::Http, &server, Client::builder("c", "1")).await;
    let crate::common::ServerGuard::Http(running) = &guard else {
        panic!("an HTTP server");
    };
    let port = i64::from(running.local_addr().port());
    bounded("call", client.call_tool("echo", json!({})))
        .await
        .unwrap();
    let (provider, exporter) = meters();
    provider.force_flush().unwrap();
    bounded("close", client.close()).await;
    for kind in [SpanKind::Client, SpanKind::Server] {
        let span = traced.one("tools/call echo", kind.clone());
        assert_eq!(
            text(&span, "network.transport").as_deref(),
            Some("tcp"),
            "{kind:?}"
        );
        assert_eq!(
            text(&span, "network.protocol.name").as_deref(),
            Some("http"),
            "{kind:?}"
        );
    }
    let served = traced.one("tools/call echo", SpanKind::Server);
    assert!(
        text(&served, "mcp.session.id").is_some_and(|id| id.len() >= 16),
        "{served:?}"
    );
    // Other tests flush too: the newest export is this one's or later.
    let metrics = exporter.get_finished_metrics().unwrap();
    let sessions = metrics
        .iter()
        .rev()
        .flat_map(|m| m.scope_metrics())
        .flat_map(|s| s.metrics())
        .filter(|m| m.name() == "mcpflow.http.server.sessions")
        .find_map(|m| match m.data() {
            AggregatedMetrics::U64(MetricData::Gauge(gauge)) => gauge
                .data_points()
                .find(|p| {
                    p.attributes()
                        .any(|kv| kv == &KeyValue::new("server.port", port))
                })
                .map(|p| p.value()),
            _ => None,
        });
    assert_eq!(
        sessions,
        Some(1),
        "the live session, measured on port {port}"
    );
}
