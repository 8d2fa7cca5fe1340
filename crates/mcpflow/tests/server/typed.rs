//! Typed tools from plain Rust functions, typed elicitation, and the client's checks of
//! structured output.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use common::{Kind, bounded, pair};
use mcpflow::client::{Client, ToolCallError};
use mcpflow::protocol::{CallToolResult, ElicitAction, ElicitResult, JsonObject, Tool};
use mcpflow::schemars::JsonSchema;
use mcpflow::server::{Server, Structured};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Arguments of `divide`.
#[derive(Deserialize, JsonSchema)]
struct DivideArgs {
    /// The dividend.
    a: f64,
    /// The divisor; must not be zero.
    b: f64,
}

#[derive(Serialize, Deserialize, JsonSchema, PartialEq, Debug)]
struct Quotient {
    quotient: f64,
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Whether to go ahead.
    proceed: bool,
}

fn server() -> Server {
    Server::builder("typed", "1")
        .typed_tool(
            "divide",
            "Divide a by b",
            |args: DivideArgs, _cx| async move {
                if args.b == 0.0 {
                    return Err("division by zero");
                }
                Ok(Structured(Quotient {
                    quotient: args.a / args.b,
                }))
            },
        )
        .typed_tool(
            "confirm",
            "Ask the user first",
            |_args: JsonObject, cx| async move {
                match cx.elicit_as::<Confirm>("Proceed?").await {
                    Ok(Some(c)) if c.proceed => Ok("done".to_owned()),
                    Ok(_) => Ok("skipped".to_owned()),
                    Err(e) => Err(e.to_string()),
                }
            },
        )
        .tool(
            Tool::new(
                "liar",
                "declares an output schema it does not keep",
                Tool::empty_input_schema(),
            )
            .with_output_schema(
                json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            |_a, _c| async { Ok(CallToolResult::structured(json!({"n": "not a number"}))) },
        )
        .build()
}

#[tokio::test]
async fn typed_tools_declare_schemas_validate_and_return_structured_content() {
    let (c, s) = pair(Kind::Memory1);
    let _running = server().serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let tools = bounded("tools", client.tools()).await.expect("tools");
    let divide = tools.iter().find(|t| t.name == "divide").unwrap();
    assert_eq!(
        divide.input_schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(divide.input_schema["type"], "object");
    assert_eq!(
        divide.input_schema["properties"]["b"]["description"],
        "The divisor; must not be zero."
    );
    assert_eq!(divide.input_schema["required"], json!(["a", "b"]));
    assert!(divide.output_schema.as_ref().unwrap()["properties"]["quotient"].is_object());

    let q: Quotient = bounded(
        "typed call",
        client.call_tool_typed("divide", json!({"a": 7, "b": 2})),
    )
    .await
    .expect("typed");
    assert_eq!(q, Quotient { quotient: 3.5 });
    let raw = bounded(
        "raw call",
        client.call_tool("divide", json!({"a": 1, "b": 4})),
    )
    .await
    .expect("call");
    assert_eq!(raw.structured_content, Some(json!({"quotient": 0.25})));
    assert_eq!(
        raw.content[0].as_text(),
        Some(r#"{"quotient":0.25}"#),
        "JSON text for older clients"
    );

    let failed = bounded(
        "error",
        client.call_tool_typed::<Quotient>("divide", json!({"a": 1, "b": 0})),
    )
    .await;
    assert!(
        matches!(&failed, Err(ToolCallError::Failed { message, .. }) if message == "division by zero"),
        "{failed:?}"
    );

    // Arguments are decoded by serde, which stops at the first thing that does not fit.
    let invalid = bounded("invalid", client.call_tool("divide", json!({"a": "x"})))
        .await
        .expect("a tool error");
    assert!(invalid.is_error());
    assert_eq!(
        invalid.content[0].as_text(),
        Some(r#"invalid arguments for tool `divide`: /a: invalid type: string "x", expected f64"#)
    );
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn the_client_checks_structured_content_against_the_output_schema() {
    let (c, s) = pair(Kind::Memory0);
    let server = server();
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    // Checked on the first call too: the client fetches the tool list with it.
    let err = bounded("checked", client.call_tool("liar", json!({})))
        .await
        .expect_err("checked on the first call");
    assert!(
        err.to_string().contains("outputSchema") && err.to_string().contains("/n"),
        "{err}"
    );
    let again = bounded("checked again", client.call_tool("liar", json!({})))
        .await
        .expect_err("the same schema, compiled once, still checks");
    assert!(again.to_string().contains("/n"), "{again}");

    // The server changes the tool's schema to one its output keeps: the client compiles
    // the new schema instead of reusing the old one.
    let string_n = json!({"type":"object","properties":{"n":{"type":"string"}},"required":["n"]});
    server
        .add_tool(
            Tool::new("liar", "now keeps its schema", Tool::empty_input_schema())
                .with_output_schema(string_n.as_object().unwrap().clone()),
            |_a, _c| async { Ok(CallToolResult::structured(json!({"n": "not a number"}))) },
        )
        .await;
    // The ping's answer comes after the list_changed sent before it.
    bounded("ping", client.ping()).await.expect("ping");
    bounded("list_changed handled", client.notifications_handled()).await;
    let tools = bounded("tools again", client.tools()).await.expect("tools");
    let liar = tools.iter().find(|t| t.name == "liar").expect("liar");
    assert_eq!(liar.output_schema.as_ref(), string_n.as_object());
    bounded(
        "checked against the new schema",
        client.call_tool("liar", json!({})),
    )
    .await
    .expect("its output fits the new schema");
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn typed_elicitation_reads_the_users_answer() {
    for (action, expected) in [("accept", "done"), ("decline", "skipped")] {
        let (c, s) = pair(Kind::Memory1);
        let _running = server().serve(s);
        let client =
            Client::builder("t", "1").on_elicitation(false, move |params, _c| async move {
                let mcpflow::protocol::ElicitRequestParams::Form(form) = params else {
                    panic!("form mode")
                };
                assert_eq!(
                    form.requested_schema["properties"]["proceed"]["type"],
                    "boolean"
                );
                assert!(form.requested_schema.get("$schema").is_none());
                Ok(match action {
                    "accept" => {
                        ElicitResult::accept(json!({"proceed": true}).as_object().unwrap().clone())
                    }
                    _ => ElicitResult {
                        action: ElicitAction::Decline,
                        ..ElicitResult::decline()
                    },
                })
            });
        let client = bounded("connect", client.connect(c))
            .await
            .expect("connect");
        let result = bounded("confirm", client.call_tool("confirm", json!({})))
            .await
            .expect("call");
        assert_eq!(result.content[0].as_text(), Some(expected));
        bounded("close", client.close()).await;
    }
}

/// `with` chains registration functions; `typed_tool_with` keeps a tool's title and
/// annotations while generating its schemas; numbers are text results.
#[tokio::test]
async fn registration_functions_and_tool_metadata() {
    #[derive(Deserialize, JsonSchema)]
    struct Twice {
        n: i64,
    }
    fn twice(builder: mcpflow::server::ServerBuilder) -> mcpflow::server::ServerBuilder {
        let tool = Tool::new("twice", "Double n", JsonObject::new())
            .with_title("Twice")
            .with_annotations(mcpflow::protocol::tools::ToolAnnotations {
                read_only_hint: Some(true),
                ..Default::default()
            });
        builder.typed_tool_with(tool, |args: Twice, _cx| async move {
            Ok::<_, String>(args.n * 2)
        })
    }
    let server = Server::builder("meta", "1").with(twice).build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let tools = bounded("tools", client.tools()).await.expect("tools");
    assert_eq!(tools[0].title.as_deref(), Some("Twice"));
    assert_eq!(
        tools[0].annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    assert_eq!(tools[0].input_schema["properties"]["n"]["type"], "integer");
    let result = bounded("call", client.call_tool("twice", json!({"n": 21})))
        .await
        .expect("call");
    assert_eq!(result.content[0].as_text(), Some("42"));
    bounded("close", client.close()).await;
}

#[derive(Deserialize, JsonSchema)]
struct Order {
    customer: Customer,
}

#[derive(Deserialize, JsonSchema)]
struct Customer {
    lines: Vec<Line>,
}

#[derive(Deserialize, JsonSchema)]
struct Line {
    quantity: i64,
}

fn client_at(version: &'static str) -> mcpflow::client::ClientBuilder {
    Client::builder("t", "1")
        .protocol_version(mcpflow::protocol::ProtocolVersion::from_static(version))
}

/// A field deep inside a typed tool's arguments that does not fit is refused with its
/// JSON Pointer and serde's reason: an `isError` result from 2025-11-25 on, a -32602
/// with the same path in `data.errors` before; the handler never runs.
#[tokio::test]
async fn a_typed_tool_names_the_path_of_a_nested_field_that_does_not_fit() {
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = ran.clone();
    let server = Server::builder("orders", "1")
        .typed_tool("order", "Place an order", move |order: Order, _cx| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let total: i64 = order.customer.lines.iter().map(|l| l.quantity).sum();
            async move { Ok::<_, String>(total) }
        })
        .build();
    let bad = json!({"customer": {"lines": [{"quantity": 1}, {"quantity": "x"}]}});
    let reason = r#"invalid type: string "x", expected i64"#;
    for version in ["2025-11-25", "2025-06-18"] {
        let (c, s) = pair(Kind::Memory1);
        let _running = server.serve(s);
        let client = bounded("connect", client_at(version).connect(c))
            .await
            .expect("connect");
        let good = bounded(
            "a fitting order",
            client.call_tool(
                "order",
                json!({"customer": {"lines": [{"quantity": 2}, {"quantity": 3}]}}),
            ),
        )
        .await
        .expect("call");
        assert_eq!(good.content[0].as_text(), Some("5"));
        let refused = bounded("a nested bad field", client.call_tool("order", bad.clone())).await;
        if version == "2025-11-25" {
            let result = refused.expect("a tool error, not a protocol error");
            assert!(result.is_error());
            assert_eq!(
                result.content[0].as_text(),
                Some(
                    format!(
                        "invalid arguments for tool `order`: /customer/lines/1/quantity: {reason}"
                    )
                    .as_str()
                )
            );
        } else {
            let err = refused.expect_err("a protocol error");
            let rejection = err.rejection().expect("rejected");
            assert_eq!(rejection.code.0, -32602);
            assert_eq!(
                rejection.data.as_ref().unwrap()["errors"],
                json!([{"path": "/customer/lines/1/quantity", "reason": reason}]),
                "{rejection:?}"
            );
        }
        bounded("close", client.close()).await;
    }
    assert_eq!(
        ran.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the handler never saw arguments that do not fit"
    );
}

/// A typed tool's schema comes from its type, so only serde checks its arguments: a
/// bound the schema states but serde does not (`minimum`) reaches the handler. A tool
/// registered with the same schema written out is checked against it, and hears of
/// every violation, not only the first.
#[tokio::test]
async fn only_tools_with_a_hand_written_schema_are_checked_against_it() {
    #[derive(Deserialize, JsonSchema)]
    struct Repeat {
        #[schemars(range(min = 1))]
        count: i64,
        #[allow(dead_code)] // only decoded
        text: String,
    }
    let server = Server::builder("checks", "1")
        .typed_tool("typed", "serde decodes", |args: Repeat, _cx| async move {
            Ok::<_, String>(args.count)
        })
        .tool(
            Tool::new(
                "checked",
                "jsonschema checks",
                mcpflow::server::schema_of::<Repeat>(),
            ),
            |args, _cx| async move { Ok(CallToolResult::text(args["count"].to_string())) },
        )
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let tools = bounded("tools", client.tools()).await.expect("tools");
    for tool in tools.iter() {
        assert_eq!(
            tool.input_schema["properties"]["count"]["minimum"], 1,
            "{}",
            tool.name
        );
    }

    let zero = json!({"count": 0, "text": "t"});
    let typed = bounded(
        "typed, below the minimum",
        client.call_tool("typed", zero.clone()),
    )
    .await
    .expect("call");
    assert_eq!(
        typed.content[0].as_text(),
        Some("0"),
        "serde has no minimum"
    );
    let checked = bounded(
        "checked, below the minimum",
        client.call_tool("checked", zero),
    )
    .await
    .expect("a tool error");
    assert!(checked.is_error());
    let text = checked.content[0].as_text().unwrap();
    assert!(
        text.contains("/count") && text.contains("minimum"),
        "{text}"
    );

    let wrong = json!({"count": "x"});
    let checked = bounded(
        "checked, two violations",
        client.call_tool("checked", wrong.clone()),
    )
    .await
    .expect("a tool error");
    let text = checked.content[0].as_text().unwrap();
    assert!(
        text.contains("/count") && text.contains(r#""text""#),
        "both violations: {text}"
    );
    let typed = bounded("typed, the first misfit", client.call_tool("typed", wrong))
        .await
        .expect("a tool error");
    assert_eq!(
        typed.content[0].as_text(),
        Some(
            r#"invalid arguments for tool `typed`: /count: invalid type: string "x", expected i64"#
        )
    );
    bounded("close", client.close()).await;
}
