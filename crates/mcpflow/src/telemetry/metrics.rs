//! The conventions' four duration histograms, on the global meter provider.

use std::borrow::Cow;
use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;

use super::{ConnectionFacts, Recorded, Side};

/// The conventions' advice for every MCP duration histogram, in seconds.
const BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

struct Instruments {
    client_operation: Histogram<f64>,
    server_operation: Histogram<f64>,
    client_session: Histogram<f64>,
    server_session: Histogram<f64>,
}

/// Made on first use, from the meter provider installed then.
fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = opentelemetry::global::meter("mcpflow");
        let histogram = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(BOUNDARIES.to_vec())
                .build()
        };
        Instruments {
            client_operation: histogram(
                "mcp.client.operation.duration",
                "The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.",
            ),
            server_operation: histogram(
                "mcp.server.operation.duration",
                "MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.",
            ),
            client_session: histogram(
                "mcp.client.session.duration",
                "The duration of the MCP session as observed on the MCP client.",
            ),
            server_session: histogram(
                "mcp.server.session.duration",
                "The duration of the MCP session as observed on the MCP server.",
            ),
        }
    })
}

/// Record one operation's duration with its attributes.
pub(super) fn operation(op: &Recorded) {
    // One buffer per thread: an operation costs no allocation of its own here.
    thread_local! {
        static ATTRIBUTES: std::cell::RefCell<Vec<KeyValue>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    ATTRIBUTES.with(|buffer| {
        let Ok(mut attributes) = buffer.try_borrow_mut() else {
            return;
        };
        attributes.clear();
        attributes.push(KeyValue::new("mcp.method.name", op.method.clone()));
        if let Some(tool) = &op.tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.clone()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(prompt) = &op.prompt {
            attributes.push(KeyValue::new("gen_ai.prompt.name", prompt.clone()));
        }
        if let Some(error) = op.error.get() {
            attributes.push(KeyValue::new("error.type", error.clone()));
        }
        if let Some(code) = op.status_code.get() {
            attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
        }
        connection(&mut attributes, op.version.get(), op.transport, op.protocol);
        let histogram = match op.side {
            Side::Client => &instruments().client_operation,
            Side::Server => &instruments().server_operation,
        };
        histogram.record(op.started.elapsed().as_secs_f64(), &attributes);
        attributes.clear();
    });
}

/// Record a session's duration.
pub(super) fn session(side: Side, facts: &ConnectionFacts, error: Option<&'static str>) {
    let started = facts.started;
    let mut attributes = Vec::with_capacity(4);
    connection(
        &mut attributes,
        facts.version.get(),
        facts.transport,
        facts.protocol,
    );
    if let Some(error) = error {
        attributes.push(KeyValue::new("error.type", error));
    }
    let histogram = match side {
        Side::Client => &instruments().client_session,
        Side::Server => &instruments().server_session,
    };
    histogram.record(started.elapsed().as_secs_f64(), &attributes);
}

fn connection(
    attributes: &mut Vec<KeyValue>,
    version: Option<&Cow<'static, str>>,
    transport: Option<&'static str>,
    protocol: Option<&'static str>,
) {
    if let Some(version) = version {
        attributes.push(KeyValue::new("mcp.protocol.version", version.clone()));
    }
    if let Some(transport) = transport {
        attributes.push(KeyValue::new("network.transport", transport));
    }
    if let Some(protocol) = protocol {
        attributes.push(KeyValue::new("network.protocol.name", protocol));
    }
}
