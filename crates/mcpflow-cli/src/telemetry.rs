//! Logs to stderr, and, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or its traces or metrics
//! variant) is set, the spans and metrics of `mcpflow::telemetry` exported over OTLP,
//! configured by the standard `OTEL_*` variables: `OTEL_EXPORTER_OTLP_PROTOCOL`
//! (`http/protobuf`, the default, or `grpc`), `OTEL_SERVICE_NAME` (default `mcpflow`),
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`,
//! `OTEL_METRIC_EXPORT_INTERVAL`, and `OTEL_SDK_DISABLED=true` to turn it off.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The exporters running, flushed by [`Telemetry::shutdown`] before the process exits.
#[derive(Default)]
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

impl Telemetry {
    /// Send what is still buffered (each exporter bounded by its own timeout).
    pub fn shutdown(self) {
        if let Some(tracer) = self.tracer {
            let _ = tracer.shutdown();
        }
        if let Some(meter) = self.meter {
            let _ = meter.shutdown();
        }
    }
}

/// Logs go to stderr when `RUST_LOG` asks for them. Without it only a server (`serve`,
/// and the demo's in-process one) logs its warnings: a verb that talks to a server
/// prints its own one-line error, and the library's log lines about the same failure
/// (or a TLS verifier's) would only repeat it. Called within the runtime: the gRPC
/// exporter runs on it.
pub fn init(serves: bool) -> Telemetry {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(if serves { "warn" } else { "off" })
    });
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    let (telemetry, spans) = match exporters() {
        Ok(Some(telemetry)) => {
            let spans = telemetry.tracer.as_ref().map(|provider| {
                tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("mcpflow"))
                    .with_location(false)
                    .with_threads(false)
                    .with_target(false)
                    .with_tracked_inactivity(false)
                    .with_filter(
                        tracing_subscriber::filter::Targets::new()
                            .with_target(mcpflow::telemetry::TARGET, tracing::Level::INFO),
                    )
            });
            (telemetry, spans)
        }
        Ok(None) => (Telemetry::default(), None),
        Err(why) => {
            eprintln!("mcpflow: telemetry is off: {why}");
            (Telemetry::default(), None)
        }
    };
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init();
    telemetry
}

/// Where the environment asks for it, the exporters; `None` when it does not.
fn exporters() -> Result<Option<Telemetry>, String> {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let traces = set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let metrics = set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
    if !traces && !metrics {
        return Ok(None);
    }
    let resource = if set("OTEL_SERVICE_NAME") {
        Resource::builder().build()
    } else {
        Resource::builder().with_service_name("mcpflow").build()
    };
    let mut telemetry = Telemetry::default();
    if traces {
        let exporter = match protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")? {
            Protocol::Grpc => SpanExporter::builder().with_tonic().build(),
            Protocol::HttpProtobuf => SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .build(),
        }
        .map_err(|e| format!("the OTLP span exporter: {e}"))?;
        telemetry.tracer = Some(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource.clone())
                .build(),
        );
    }
    if metrics {
        let exporter = match protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")? {
            Protocol::Grpc => MetricExporter::builder().with_tonic().build(),
            Protocol::HttpProtobuf => MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .build(),
        }
        .map_err(|e| format!("the OTLP metric exporter: {e}"))?;
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(resource)
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        telemetry.meter = Some(provider);
    }
    Ok(Some(telemetry))
}

enum Protocol {
    HttpProtobuf,
    Grpc,
}

/// The protocol the signal's variable, or else `OTEL_EXPORTER_OTLP_PROTOCOL`, names.
fn protocol(signal: &str) -> Result<Protocol, String> {
    let value = std::env::var(signal)
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .unwrap_or_default();
    match value.trim() {
        "" | "http/protobuf" => Ok(Protocol::HttpProtobuf),
        "grpc" => Ok(Protocol::Grpc),
        other => Err(format!(
            "OTLP protocol `{other}` is not supported; use http/protobuf or grpc"
        )),
    }
}
