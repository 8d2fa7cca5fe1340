//! The tools and prompt the 2026-07-28 conformance scenarios call. Each is written once
//! against the ordinary handler API: on a 2026-07-28 request its `elicit`,
//! `create_message` and `list_roots` calls become `input_required` rounds, on a
//! handshake-era connection requests to the client.

use mcpflow::SessionError;
use mcpflow::protocol::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, ElicitAction, ElicitRequestParams,
    ErrorObject, GetPromptResult, LoggingLevel, Prompt, PromptMessage, SamplingMessage, Tool,
};
use mcpflow::server::{ServerBuilder, ServerContext, ToolError};
use serde_json::json;

use crate::everything::object;

/// An input call that failed: a refusal (-32021 for an undeclared capability) goes back
/// as the protocol error it is.
fn input_error(e: SessionError) -> ToolError {
    match e.rejection() {
        Some(error) => ToolError::Protocol(error.clone()),
        None => ToolError::failed(format!("asking the client failed: {e}")),
    }
}

fn name_request(message: &str) -> ElicitRequestParams {
    ElicitRequestParams::form(
        message,
        object(json!({
            "type": "object",
            "properties": { "name": { "type": "string" } },
            "required": ["name"]
        })),
    )
}

/// Ask for a name under `key`; the name, or what the user did instead.
async fn ask_name(cx: &ServerContext, key: &str, message: &str) -> Result<String, SessionError> {
    let answer = cx.input_key(key).elicit(name_request(message)).await?;
    Ok(match answer.action {
        ElicitAction::Accept => answer
            .content
            .and_then(|c| c.get("name").and_then(|n| n.as_str()).map(str::to_owned))
            .unwrap_or_default(),
        other => format!("({other:?})"),
    })
}

async fn ask_user_name(cx: &ServerContext) -> Result<String, SessionError> {
    ask_name(cx, "user_name", "What is your name?").await
}

/// Ask the client's model for the capital of France; what it said, as the tool's result.
async fn ask_capital(cx: &ServerContext) -> Result<CallToolResult, ToolError> {
    let text = sample(
        cx,
        "capital_question",
        "What is the capital of France?",
        100,
    )
    .await
    .map_err(input_error)?;
    Ok(CallToolResult::text(format!("The model said: {text}")))
}

async fn sample(
    cx: &ServerContext,
    key: &str,
    text: &str,
    max: u64,
) -> Result<String, SessionError> {
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(text)], max);
    let answer = cx.input_key(key).create_message(params).await?;
    Ok(serde_json::to_value(&answer.content)
        .ok()
        .and_then(|c| c.get("text").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_default())
}

fn no_args(name: &str, description: &str) -> Tool {
    Tool::new(name, description, Tool::empty_input_schema())
}

/// A tool's name, its description, and its reply to the name it was given.
type Greeter = (&'static str, &'static str, fn(&str) -> String);

/// The tools that ask the user's name in one round and greet: the scenarios differ in
/// what they check of the round (its state, a tampered state, streaming), not in the tool.
const GREETERS: [Greeter; 4] = [
    (
        "test_input_required_result_elicitation",
        "Asks the user's name (one input round)",
        hello,
    ),
    (
        "test_input_required_result_request_state",
        "Asks the user's name; answers state-ok once the round's state verified",
        |name| format!("state-ok: hello, {name}"),
    ),
    (
        "test_input_required_result_tampered_state",
        "Asks the user's name; the round's state is signed",
        hello,
    ),
    ("test_streaming_elicitation", "Asks the user's name", hello),
];

fn hello(name: &str) -> String {
    format!("Hello, {name}!")
}

/// Register the 2026-07-28 scenario fixtures.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let builder = GREETERS
        .into_iter()
        .fold(builder, |builder, (name, description, reply)| {
            builder.tool(no_args(name, description), move |_args, cx| async move {
                let name = ask_user_name(&cx).await.map_err(input_error)?;
                Ok(CallToolResult::text(reply(&name)))
            })
        });
    builder
        .tool(
            no_args(
                "test_input_required_result_sampling",
                "Asks the client's model a question",
            ),
            |_args, cx| async move { ask_capital(&cx).await },
        )
        .tool(
            no_args(
                "test_input_required_result_list_roots",
                "Asks for the client's roots",
            ),
            |_args, cx| async move {
                let roots = cx
                    .input_key("client_roots")
                    .list_roots()
                    .await
                    .map_err(input_error)?;
                let uris: Vec<String> = roots.roots.iter().map(|r| r.uri.clone()).collect();
                Ok(CallToolResult::text(format!("Roots: {}", uris.join(", "))))
            },
        )
        .tool(
            no_args(
                "test_input_required_result_multiple_inputs",
                "Asks for a name, a greeting and the roots at once",
            ),
            |_args, cx| async move {
                let roots_cx = cx.input_key("client_roots");
                let (name, greeting, roots) = tokio::join!(
                    ask_user_name(&cx),
                    sample(&cx, "greeting", "Generate a greeting", 50),
                    roots_cx.list_roots(),
                );
                let (name, greeting, roots) = (
                    name.map_err(input_error)?,
                    greeting.map_err(input_error)?,
                    roots.map_err(input_error)?,
                );
                Ok(CallToolResult::text(format!(
                    "{greeting} {name} ({} roots)",
                    roots.roots.len()
                )))
            },
        )
        .tool(
            no_args(
                "test_input_required_result_multi_round",
                "Asks two questions, one round each",
            ),
            |_args, cx| async move {
                let first = ask_name(&cx, "step1", "What is your name?")
                    .await
                    .map_err(input_error)?;
                let second = ask_name(
                    &cx,
                    "step2",
                    "What is your favourite colour? (answer in name)",
                )
                .await
                .map_err(input_error)?;
                Ok(CallToolResult::text(format!("Done: {first}, {second}")))
            },
        )
        .tool(
            no_args(
                "test_input_required_result_capabilities",
                "Asks for what the client declared it can give",
            ),
            |_args, cx| async move {
                let caps = cx.client_capabilities();
                if caps.supports_form_elicitation() {
                    let name = ask_user_name(&cx).await.map_err(input_error)?;
                    return Ok(CallToolResult::text(hello(&name)));
                }
                if caps.sampling.is_some() {
                    return ask_capital(&cx).await;
                }
                Ok(CallToolResult::text("The client declared nothing to ask."))
            },
        )
        .tool(
            no_args(
                "test_missing_capability",
                "Needs sampling, whatever the client declared",
            ),
            |_args, cx| async move {
                let text = sample(&cx, "question", "Say hello", 20)
                    .await
                    .map_err(input_error)?;
                Ok(CallToolResult::text(text))
            },
        )
        .tool(
            Tool::new(
                "test_custom_header",
                "Echoes its region, which HTTP clients mirror in the Mcp-Param-Region header",
                object(json!({
                    "type": "object",
                    "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
                    "required": ["region"]
                })),
            ),
            |args, _cx| async move {
                let region = args
                    .get("region")
                    .and_then(|r| r.as_str())
                    .unwrap_or_default()
                    .to_owned();
                Ok(CallToolResult::text(format!("region: {region}")))
            },
        )
        .tool(
            no_args("test_logging_tool", "Logs one message at info"),
            |_args, cx| async move {
                let _ = cx.log(LoggingLevel::Info, "test_logging_tool ran").await;
                Ok(CallToolResult::text("logged"))
            },
        )
        .tool(
            no_args("test_trigger_tool_change", "Announces a tool list change"),
            |_args, cx| async move {
                cx.server().notify_tool_list_changed().await;
                Ok(CallToolResult::text("tool list change announced"))
            },
        )
        .tool(
            no_args(
                "test_trigger_prompt_change",
                "Announces a prompt list change",
            ),
            |_args, cx| async move {
                cx.server().notify_prompt_list_changed().await;
                Ok(CallToolResult::text("prompt list change announced"))
            },
        )
        .prompt(
            Prompt::new(
                "test_input_required_result_prompt",
                "Asks the user's name before rendering",
            ),
            |_args, cx| async move {
                let name = ask_user_name(&cx).await.map_err(|e| match e.rejection() {
                    Some(error) => error.clone(),
                    None => ErrorObject::internal(e),
                })?;
                Ok(GetPromptResult::new(vec![PromptMessage::new(
                    mcpflow::protocol::Role::User,
                    ContentBlock::text(format!("Greet {name}.")),
                )]))
            },
        )
}
