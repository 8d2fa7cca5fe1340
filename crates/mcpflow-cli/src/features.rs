//! Tools of the "everything" server for the 2025-11-25 features that official SDK
//! clients exercise in the interop matrix: sampling with tools, URL-mode elicitation
//! required (-32042) and its completion, and a structured result whose type is not an
//! object.

use mcpflow::protocol::elicitation::ElicitUrlParams;
use mcpflow::protocol::sampling::{ToolChoice, ToolChoiceMode};
use mcpflow::protocol::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, SamplingMessage, Tool,
};
use mcpflow::schemars::JsonSchema;
use mcpflow::server::{ServerBuilder, ServerContext, Structured, ToolError};
use serde::Deserialize;
use serde_json::json;

/// Arguments of `sample_with_tools`.
#[derive(Deserialize, JsonSchema)]
struct Prompt {
    /// What to ask the client's model.
    prompt: String,
}

/// Arguments of tools that take none.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// The id of the one URL elicitation `needs_authorization` asks for.
pub const AUTHORIZATION_ELICITATION: &str = "authorize-1";

/// Add the 2025-11-25 feature tools.
pub fn feature_tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .typed_tool(
            "sample_with_tools",
            "Asks the client's model, offering it the tool get_weather (needs sampling.tools); returns which tool the model chose",
            |args: Prompt, cx: ServerContext| async move { sample_with_tools(args.prompt, cx).await },
        )
        .typed_tool(
            "needs_authorization",
            "Fails with -32042 (URL elicitation required) for a client that declared URL-mode elicitation, and announces the elicitation complete",
            |_args: NoArgs, cx: ServerContext| async move { needs_authorization(cx).await },
        )
        .typed_tool(
            "list_numbers",
            "A structured result that is a list: sent as {\"result\": [1, 2, 3]}",
            |_args: NoArgs, _cx| async { Ok::<_, ToolError>(Structured(vec![1, 2, 3])) },
        )
}

async fn sample_with_tools(prompt: String, cx: ServerContext) -> Result<String, ToolError> {
    let weather = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"]
    });
    let weather = Tool::new(
        "get_weather",
        "The weather in a city",
        weather.as_object().cloned().unwrap_or_default(),
    );
    let mut params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
    params.tools = Some(vec![weather]);
    params.tool_choice = Some(ToolChoice {
        mode: Some(ToolChoiceMode::Auto),
        ..Default::default()
    });
    let answer = cx
        .create_message(params)
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;
    let chosen = answer
        .content
        .blocks()
        .iter()
        .find_map(|block| match block {
            ContentBlock::ToolUse(call) => Some(format!(
                "the model called {} with {}",
                call.name,
                serde_json::Value::Object(call.input.clone())
            )),
            _ => None,
        });
    Ok(chosen.unwrap_or_else(|| {
        let text = answer
            .content
            .blocks()
            .iter()
            .find_map(ContentBlock::as_text);
        format!("the model answered without a tool: {}", text.unwrap_or(""))
    }))
}

async fn needs_authorization(cx: ServerContext) -> Result<CallToolResult, ToolError> {
    if !cx.client_capabilities().supports_url_elicitation() {
        return Err(ToolError::failed(
            "this tool needs a client that declares URL-mode elicitation",
        ));
    }
    // Nothing waits on a user here, so the elicitation is complete at once.
    cx.notify_elicitation_complete(AUTHORIZATION_ELICITATION)
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;
    Err(ToolError::url_elicitation_required(vec![ElicitUrlParams {
        message: "Authorize access to the example service".into(),
        url: format!("https://example.com/authorize?id={AUTHORIZATION_ELICITATION}"),
        elicitation_id: Some(AUTHORIZATION_ELICITATION.into()),
        ..Default::default()
    }]))
}
