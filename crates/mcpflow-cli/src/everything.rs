//! The "everything" server: the tools, resources and prompts the official MCP
//! conformance suite expects, with the payloads its scenarios check.

use std::time::Duration;

use mcpflow::protocol::completion::CompletionReference;
use mcpflow::protocol::tools::TaskSupport;
use mcpflow::protocol::{
    CallToolResult, CompleteResult, ContentBlock, CreateMessageRequestParams, ElicitAction,
    ElicitRequestParams, GetPromptResult, JsonObject, LoggingLevel, Prompt, PromptArgument,
    PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
    SamplingMessage, Tool,
};
use mcpflow::schemars::JsonSchema;
use mcpflow::server::{Server, ServerBuilder, ServerContext, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};

/// A 1x1 red PNG, base64.
pub const TEST_IMAGE_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A minimal WAV file (one 16-bit mono sample at 8 kHz), base64.
pub const TEST_AUDIO_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Turn a `json!` object into a [`JsonObject`] (anything else gives an empty object).
pub fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

// Tools without arguments (an empty object schema).
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

// Arguments of `test_sampling`.
#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

// Arguments of `progress_stream`.
#[derive(Deserialize, JsonSchema)]
struct ProgressStreamArgs {
    /// How many progress notifications to send (at most 10,000).
    count: u32,
    /// Milliseconds between them (at most 10,000).
    #[serde(default)]
    interval_ms: u64,
}

// Arguments of `test_elicitation`.
#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: Option<String>,
}

fn failed(what: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::failed(format!("{what} failed: {e}"))
}

/// Elicit `schema` with `message` and describe the answer as text after `prefix`.
async fn elicit_text(
    cx: &ServerContext,
    prefix: &str,
    message: &str,
    schema: Value,
) -> Result<CallToolResult, ToolError> {
    let result = cx
        .elicit(ElicitRequestParams::form(message, object(schema)))
        .await
        .map_err(|e| failed("elicitation", e))?;
    let action = match result.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
        _ => "unknown",
    };
    let content = Value::Object(result.content.unwrap_or_default());
    Ok(CallToolResult::text(format!(
        "{prefix}: action={action}, content={content}"
    )))
}

fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": { "type": "boolean", "description": "Verification status", "default": true }
        },
        "required": []
    })
}

fn sep1330_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" }
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }
                    ]
                }
            }
        },
        "required": []
    })
}

fn json_schema_2020_12() -> JsonObject {
    // Every 2020-12 keyword family the 2026-07-28 scenario looks for: references with an
    // anchor, composition and conditionals.
    object(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" }
                }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    }))
}

/// Values offered for `arg1` of `test_prompt_with_arguments`.
const ARG1_VALUES: [&str; 4] = ["paris", "park", "party", "london"];

/// The conformance "everything" server (serve it over any transport).
/// `configure` is applied to its builder last (the `requestState` key of
/// `serve --state-key-env`).
pub fn everything_server(configure: impl FnOnce(ServerBuilder) -> ServerBuilder) -> Server {
    let builder = Server::builder("mcpflow-everything", env!("CARGO_PKG_VERSION"))
        .instructions("The MCP conformance test server of mcpflow.")
        .with(crate::features::feature_tools)
        .with(crate::everything_2026::register)
        .with(crate::everything_tasks::register)
        // ---- tools ----
        .typed_tool("test_simple_text", "Tests simple text content response", |_args: NoArgs, _cx| async { Ok::<_, ToolError>(CallToolResult::text("This is a simple text response for testing.")) },
        )
        .typed_tool("test_image_content", "Tests image content response", |_args: NoArgs, _cx| async {
                Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::image(TEST_IMAGE_BASE64, "image/png")]))
            },
        )
        .typed_tool("test_audio_content", "Tests audio content response", |_args: NoArgs, _cx| async {
                Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::audio(TEST_AUDIO_BASE64, "audio/wav")]))
            },
        )
        .typed_tool("test_embedded_resource", "Tests embedded resource content response", |_args: NoArgs, _cx| async {
                Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::embedded_text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                )]))
            },
        )
        .typed_tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", |_args: NoArgs, _cx| async {
                Ok::<_, ToolError>(CallToolResult::success(vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(TEST_IMAGE_BASE64, "image/png"),
                    ContentBlock::embedded_text(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({ "test": "data", "value": 123 }).to_string(),
                    ),
                ]))
            },
        )
        .typed_tool("test_tool_with_logging", "Tests tool that emits log messages during execution", |_args: NoArgs, cx| async move {
                let steps = ["Tool execution started", "Tool processing data", "Tool execution completed"];
                for (i, step) in steps.iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    cx.log(LoggingLevel::Info, *step).await.map_err(|e| failed("logging", e))?;
                }
                Ok::<_, ToolError>(CallToolResult::text("Tool with logging executed successfully"))
            },
        )
        .typed_tool("test_error_handling", "Tests error response handling", |_args: NoArgs, _cx| async { Ok::<_, ToolError>(CallToolResult::error("This tool intentionally returns an error for testing")) },
        )
        .typed_tool_with(
            Tool::new("test_task_required", "Runs only as a task (taskSupport: required): reports three steps of progress, then answers", JsonObject::new())
                .with_task_support(TaskSupport::Required),
            |_args: NoArgs, cx| async move {
                for step in [1.0, 2.0, 3.0] {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    cx.progress(step, Some(3.0), Some("working"))
                        .await
                        .map_err(|e| failed("progress", e))?;
                }
                let id = cx.task_id().unwrap_or("none");
                Ok::<_, ToolError>(CallToolResult::text(format!("task {id} finished")))
            },
        )
        .typed_tool_with(
            Tool::new("test_task_elicitation", "Runs only as a task, and asks the user's name (the task turns input_required; the question travels with tasks/result)", JsonObject::new())
                .with_task_support(TaskSupport::Required),
            |_args: NoArgs, cx| async move {
                let schema = object(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}));
                let answer = cx
                    .elicit(ElicitRequestParams::form("What is your name?", schema))
                    .await
                    .map_err(|e| failed("elicitation", e))?;
                let name = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("nobody");
                Ok::<_, ToolError>(CallToolResult::text(format!("hello {name}")))
            },
        )
        .typed_tool_with(
            Tool::new("test_task_optional", "Runs as a task or directly (taskSupport: optional), and says which", JsonObject::new())
                .with_task_support(TaskSupport::Optional),
            |_args: NoArgs, cx| async move {
                let how = if cx.task_id().is_some() { "ran as a task" } else { "ran directly" };
                Ok::<_, ToolError>(CallToolResult::text(how))
            },
        )
        .typed_tool("progress_stream", "Reports `count` progress notifications, `interval_ms` apart, then answers with the count", |args: ProgressStreamArgs, cx| async move {
                let count = args.count.min(10_000);
                for i in 1..=count {
                    if i > 1 {
                        tokio::time::sleep(Duration::from_millis(args.interval_ms.min(10_000))).await;
                    }
                    cx.progress(f64::from(i), Some(f64::from(count)), None)
                        .await
                        .map_err(|e| failed("progress", e))?;
                }
                Ok::<_, ToolError>(CallToolResult::text(count.to_string()))
            },
        )
        .typed_tool("test_tool_with_progress", "Tests tool that reports progress notifications", |_args: NoArgs, cx| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let message = format!("Completed step {step} of 100");
                    cx.progress(step, Some(100.0), Some(&message))
                        .await
                        .map_err(|e| failed("progress", e))?;
                }
                let token = cx
                    .request()
                    .progress_token()
                    .and_then(|t| serde_json::from_str::<mcpflow::protocol::ProgressToken>(t.get()).ok())
                    .map_or_else(
                        || "0".to_owned(),
                        |t| match t {
                            mcpflow::protocol::ProgressToken::String(s) => s,
                            mcpflow::protocol::ProgressToken::Integer(n) => n.to_string(),
                        },
                    );
                Ok::<_, ToolError>(CallToolResult::text(token))
            },
        )
        .typed_tool(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            |args: SamplingArgs, cx| async move {
                let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(args.prompt)], 100);
                let result = cx.create_message(params).await.map_err(|e| failed("sampling", e))?;
                let text = result
                    .content
                    .blocks()
                    .iter()
                    .find_map(ContentBlock::as_text)
                    .unwrap_or("No response")
                    .to_owned();
                Ok::<_, ToolError>(CallToolResult::text(format!("LLM response: {text}")))
            },
        )
        .typed_tool(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            |args: ElicitationArgs, cx| async move {
                let message = args.message.as_deref().unwrap_or("Please provide your details");
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string", "description": "User's username" },
                        "email": { "type": "string", "description": "User's email address" }
                    },
                    "required": ["username", "email"]
                });
                elicit_text(&cx, "User response", message, schema).await
            },
        )
        .typed_tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", |_args: NoArgs, cx| async move {
                elicit_text(&cx, "Elicitation completed", "Please review and update the form fields with defaults", sep1034_schema()).await
            },
        )
        .typed_tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", |_args: NoArgs, cx| async move {
                elicit_text(&cx, "Elicitation completed", "Please select options from the enum fields", sep1330_schema()).await
            },
        )
        .tool(
            Tool::new(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
                json_schema_2020_12(),
            ),
            |args, _cx| async move {
                Ok(CallToolResult::text(format!(
                    "JSON Schema 2020-12 tool called with: {}",
                    Value::Object(args)
                )))
            },
        )
        .typed_tool("test_reconnection", "Tests stream disconnection and client reconnection (SEP-1699)", |_args: NoArgs, cx| async move {
                // Over HTTP the client must reconnect with Last-Event-ID to get the result.
                cx.close_event_stream().await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, ToolError>(CallToolResult::text(
                    "Reconnection test completed successfully. If you received this, the client properly \
                     reconnected after stream closure.",
                ))
            },
        )
        .typed_tool("test_client_elicitation_defaults", "Elicits a form whose fields have defaults, for clients that fill defaults (SEP-1034)", |_args: NoArgs, cx| async move {
                elicit_text(&cx, "Elicitation completed", "Please review the form fields; omitted fields take their defaults", sep1034_schema())
                    .await
            },
        );

    // ---- resources ----
    let builder = builder
        .resource(
            Resource::new("test://static-text", "static-text")
                .with_description("A static text resource for testing")
                .with_mime_type("text/plain"),
            |uri, _cx| async move {
                Ok(ReadResourceResult::new(vec![
                    ResourceContents::text(uri, "This is the content of the static text resource.")
                        .with_mime_type("text/plain"),
                ]))
            },
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .with_description("A static binary resource (image) for testing")
                .with_mime_type("image/png"),
            |uri, _cx| async move {
                Ok(ReadResourceResult::new(vec![
                    ResourceContents::blob(uri, TEST_IMAGE_BASE64).with_mime_type("image/png"),
                ]))
            },
        )
        .resource(
            Resource::new("test://watched-resource", "watched-resource")
                .with_description("A resource clients may subscribe to")
                .with_mime_type("text/plain"),
            |uri, _cx| async move {
                Ok(ReadResourceResult::new(vec![
                    ResourceContents::text(uri, "Watched resource content")
                        .with_mime_type("text/plain"),
                ]))
            },
        )
        .resource_template(
            {
                let mut t = ResourceTemplate::new("test://template/{id}/data", "template");
                t.description = Some("A resource template with parameter substitution".to_owned());
                t.mime_type = Some("application/json".to_owned());
                t
            },
            |uri, vars, _cx| async move {
                let id = vars.get("id").cloned().unwrap_or_default();
                let body =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                Ok(ReadResourceResult::new(vec![
                    ResourceContents::text(uri, body.to_string())
                        .with_mime_type("application/json"),
                ]))
            },
        );

    // ---- prompts and completion ----
    builder
        .prompt(
            Prompt::new("test_simple_prompt", "A simple prompt without arguments"),
            |_args, _cx| async {
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    "This is a simple prompt for testing.",
                )]))
            },
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_arguments",
                "A prompt with required arguments",
            )
            .with_argument(PromptArgument::new("arg1", "First test argument", true))
            .with_argument(PromptArgument::new("arg2", "Second test argument", true)),
            |args, _cx| async move {
                let arg1 = args.get("arg1").cloned().unwrap_or_default();
                let arg2 = args.get("arg2").cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
                )]))
            },
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_embedded_resource",
                "A prompt that includes an embedded resource",
            )
            .with_argument(PromptArgument::new(
                "resourceUri",
                "URI of the resource to embed",
                true,
            )),
            |args, _cx| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::embedded_text(
                            uri,
                            "text/plain",
                            "Embedded resource content for testing.",
                        ),
                    ),
                    PromptMessage::user_text("Please process the embedded resource above."),
                ]))
            },
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_image",
                "A prompt that includes image content",
            ),
            |_args, _cx| async {
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::image(TEST_IMAGE_BASE64, "image/png"),
                    ),
                    PromptMessage::user_text("Please analyze the image above."),
                ]))
            },
        )
        .completion(|params, _cx| async move {
            let values = match &params.reference {
                CompletionReference::Prompt(p)
                    if p.name == "test_prompt_with_arguments" && params.argument.name == "arg1" =>
                {
                    ARG1_VALUES
                        .iter()
                        .filter(|v| v.starts_with(params.argument.value.as_str()))
                        .map(|v| (*v).to_owned())
                        .collect()
                }
                _ => Vec::new(),
            };
            Ok(CompleteResult::new(values))
        })
        .with(configure)
        .build()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use mcpflow::client::Client;
    use mcpflow::protocol::{
        CompleteRequestParams, CompletionReference, ElicitResult, GetPromptRequestParams,
        ResourceContents,
    };
    use mcpflow::transport::MemoryTransport;
    use serde_json::json;

    use super::everything_server;

    #[tokio::test]
    async fn serves_the_conformance_payloads() {
        // Every wait is bounded: a hang fails here, naming the scenario.
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            let (client_side, server_side) = MemoryTransport::pair(0);
            let _running = everything_server(|builder| builder).serve(server_side);
            let client = Client::builder("test", "0")
                .on_elicitation(false, |_params, _client| async {
                    Ok(ElicitResult::accept(super::object(
                        json!({ "username": "ada", "email": "ada@example.com" }),
                    )))
                })
                .connect(client_side)
                .await
                .unwrap();

            let result = client
                .call_tool("test_elicitation", json!({ "message": "who?" }))
                .await
                .unwrap();
            let text = result.content[0].as_text().unwrap();
            assert!(
                text.contains("action=accept") && text.contains("ada@example.com"),
                "{text}"
            );

            let read = client
                .read_resource("test://template/123/data")
                .await
                .unwrap();
            let ResourceContents::Text(t) = &read.contents[0] else {
                panic!("expected text")
            };
            assert_eq!(t.mime_type.as_deref(), Some("application/json"));
            let body: serde_json::Value = serde_json::from_str(&t.text).unwrap();
            assert_eq!(body["id"], "123");

            let prompt = client
                .get_prompt(
                    &GetPromptRequestParams::new("test_prompt_with_arguments")
                        .with_argument("arg1", "a")
                        .with_argument("arg2", "b"),
                )
                .await
                .unwrap();
            assert_eq!(
                prompt.messages[0].content.as_text(),
                Some("Prompt with arguments: arg1='a', arg2='b'")
            );

            let params = CompleteRequestParams::new(
                CompletionReference::prompt("test_prompt_with_arguments"),
                "arg1",
                "par",
            );
            let completion = client.complete(&params).await.unwrap();
            assert_eq!(completion.completion.values, vec!["paris", "park", "party"]);

            let error = client
                .call_tool("test_error_handling", json!({}))
                .await
                .unwrap();
            assert!(error.is_error());
            client.close().await;
        })
        .await
        .expect("the everything server answered every request within 10 s");
    }
}
