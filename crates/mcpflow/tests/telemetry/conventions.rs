//! Each span's attributes against the semantic conventions for MCP: what a method's
//! span must carry (required and conditionally required), and nothing outside what the
//! conventions define for it (recommended and opt-in included), on both sides.

use mcpflow::client::Era;
use mcpflow::host::{ServerOptions, ToolHost, memory_connector};
use mcpflow::protocol::GetPromptRequestParams;
use opentelemetry::trace::SpanKind;
use serde_json::json;
use tracing::Instrument;

use crate::common::wait::bounded;
use crate::spans::{Traced, connect, server, text};

/// Attributes every MCP span may carry (recommended, and conditionally required ones
/// that depend on the outcome), besides the required ones of its method.
const ALLOWED: &[&str] = &[
    "mcp.method.name",
    "jsonrpc.request.id",
    "mcp.protocol.version",
    "mcp.session.id",
    "network.transport",
    "network.protocol.name",
    "network.protocol.version",
    "error.type",
    "rpc.response.status_code",
    "gen_ai.tool.name",
    "gen_ai.prompt.name",
    "gen_ai.operation.name",
    "mcp.resource.uri",
];

fn check(traced: &Traced, name: &str, required: &[(&str, Option<&str>)]) {
    for kind in [SpanKind::Client, SpanKind::Server] {
        let span = traced.one(name, kind.clone());
        for (key, value) in required {
            let found = text(&span, key);
            assert!(
                found.is_some(),
                "{name} {kind:?}: `{key}` is required: {span:#?}"
            );
            if let Some(value) = value {
                assert_eq!(found.as_deref(), Some(*value), "{name} {kind:?}: `{key}`");
            }
        }
        for attribute in &span.attributes {
            assert!(
                ALLOWED.contains(&attribute.key.as_str()),
                "{name} {kind:?}: `{}` is not an attribute of the conventions",
                attribute.key
            );
        }
    }
}

#[tokio::test]
async fn every_span_carries_what_the_conventions_require() {
    let traced = Traced::start();
    let (client, _running) = connect(Era::Handshake).await;
    bounded("call", client.call_tool("echo", json!({})))
        .await
        .unwrap();
    bounded("read", client.read_resource("memo://note"))
        .await
        .unwrap();
    bounded(
        "prompt",
        client.get_prompt(&GetPromptRequestParams::new("greet")),
    )
    .await
    .unwrap();
    bounded("unknown tool", client.call_tool("nope", json!({})))
        .await
        .expect_err("an unknown tool");
    bounded("close", client.close()).await;

    let request = |extra: &[(&'static str, Option<&'static str>)]| {
        let mut all = vec![
            ("mcp.method.name", None),
            ("jsonrpc.request.id", None),
            ("mcp.protocol.version", Some("2025-11-25")),
        ];
        all.extend_from_slice(extra);
        all
    };
    check(
        &traced,
        "initialize",
        &[
            ("mcp.method.name", Some("initialize")),
            ("jsonrpc.request.id", None),
        ],
    );
    check(
        &traced,
        "tools/call echo",
        &request(&[
            ("gen_ai.tool.name", Some("echo")),
            ("gen_ai.operation.name", Some("execute_tool")),
        ]),
    );
    check(
        &traced,
        "resources/read",
        &request(&[("mcp.resource.uri", Some("memo://note"))]),
    );
    check(
        &traced,
        "prompts/get greet",
        &request(&[("gen_ai.prompt.name", Some("greet"))]),
    );
    check(
        &traced,
        "notifications/initialized",
        &[("mcp.method.name", Some("notifications/initialized"))],
    );
    // The error: required on the client; the server answered a bad request correctly.
    let failed = traced.one("tools/call nope", SpanKind::Client);
    assert_eq!(text(&failed, "error.type").as_deref(), Some("-32602"));
    check(
        &traced,
        "tools/call nope",
        &request(&[("rpc.response.status_code", Some("-32602"))]),
    );
    // No span names a prompt or resource it is not about.
    let read = traced.one("resources/read", SpanKind::Server);
    assert!(text(&read, "gen_ai.tool.name").is_none());
    let prompt = traced.one("prompts/get greet", SpanKind::Client);
    assert!(text(&prompt, "mcp.resource.uri").is_none());
}

/// The tool host's call span (`execute_tool`) sits between the agent's span and the
/// client span of the server request, whose server span follows.
#[tokio::test]
async fn the_tool_hosts_call_span_parents_the_servers_span() {
    let traced = Traced::start();
    let host = ToolHost::builder()
        .server(ServerOptions::new(
            "notes",
            memory_connector(server().build()),
        ))
        .start();
    let mut catalog = host.watch_catalog();
    bounded(
        "the catalog",
        catalog.wait_for(|s| s.tool("notes__echo").is_some()),
    )
    .await
    .unwrap();
    let agent = tracing::info_span!("agent");
    let result = bounded(
        "host call",
        host.call("notes__echo", json!({}))
            .instrument(agent.clone()),
    )
    .await
    .unwrap();
    assert_eq!(result.content[0].as_text(), Some("echoed"));
    drop(agent);
    bounded("close", host.close()).await;
    let agent = traced.one("agent", SpanKind::Internal);
    let call = traced.one("execute_tool notes__echo", SpanKind::Internal);
    let sent = traced.one("tools/call echo", SpanKind::Client);
    let served = traced.one("tools/call echo", SpanKind::Server);
    assert_eq!(call.parent_span_id, agent.span_context.span_id());
    assert_eq!(sent.parent_span_id, call.span_context.span_id());
    assert_eq!(served.parent_span_id, sent.span_context.span_id());
    assert_eq!(
        served.span_context.trace_id(),
        agent.span_context.trace_id()
    );
    assert_eq!(
        text(&call, "gen_ai.tool.name").as_deref(),
        Some("notes__echo")
    );
}
