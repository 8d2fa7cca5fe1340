//! `tools/list` and `tools/call`.

use std::borrow::Cow;

use mcpflow_protocol::tasks::TaskMetadata;
use mcpflow_protocol::{
    CallToolResult, ErrorObject, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Params, optional, page, required, result};

use crate::server::{ServerContext, ToolError};
use crate::session::Reply;

pub(crate) async fn list(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: PaginatedRequestParams = optional(&params)?;
    let server = cx.server();
    let (tools, next_cursor) = page(
        &server.registry().tools,
        p.cursor.as_deref(),
        server.inner.page_size,
        |e| e.tool.clone(),
    )?;
    let mut list = ListToolsResult::new(tools);
    list.next_cursor = next_cursor;
    result(&list)
}

/// What answering `tools/call` reads of its params
/// ([`CallToolRequestParams`](mcpflow_protocol::CallToolRequestParams) without the
/// members this server does not act on).
#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<JsonObject>,
    /// Checked for its shape only: the engine reads it for the handler.
    #[serde(default, rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
    /// Checked for its shape only.
    #[serde(default, rename = "task")]
    _task: Option<TaskMetadata>,
}

/// Whether `raw` is an object: serde_json hands a raw value over without the
/// whitespace around it, so its first byte tells its kind.
fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

/// Find the tool, check the arguments against its input schema, run its handler.
pub(crate) async fn call(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: CallParams<'_> = required(&params)?;
    if p.meta.is_some_and(|m| !is_object(m)) {
        return Err(ErrorObject::invalid_params("`_meta` must be an object"));
    }
    let entry = cx
        .server()
        .registry()
        .tool_call(&p.name)
        .ok_or_else(|| ErrorObject::invalid_params(format!("unknown tool: {}", p.name)))?;
    // Validate the arguments as they are, then hand the same map over.
    let arguments = serde_json::Value::Object(p.arguments.unwrap_or_default());
    let violations = entry.violations(&arguments);
    let arguments = match arguments {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    if !violations.is_empty() {
        return invalid_arguments(&p.name, &violations, cx.protocol_version());
    }
    match (entry.handler)(arguments, cx).await {
        Ok(call) => tool_result(call),
        Err(ToolError::Failed(message)) => result(&CallToolResult::error(message)),
        Err(ToolError::Protocol(error)) => Err(error),
    }
}

/// Arguments that do not fit a tool. From 2025-11-25 on (SEP-1303) this is a tool
/// execution error (`isError: true`, so the model can correct itself); before, a
/// `-32602` protocol error. Either way the message names each path and reason.
fn invalid_arguments(
    tool: &str,
    violations: &[(String, String)],
    version: Option<ProtocolVersion>,
) -> Result<Reply, ErrorObject> {
    let detail = violations
        .iter()
        .map(|(path, reason)| format!("{path}: {reason}"))
        .collect::<Vec<_>>()
        .join("; ");
    let message = format!("invalid arguments for tool `{tool}`: {detail}");
    let tool_error = version.is_none_or(|v| v.as_str() >= ProtocolVersion::V2025_11_25.as_str());
    if tool_error {
        result(&CallToolResult::error(message))
    } else {
        let errors: Vec<_> = violations
            .iter()
            .map(|(path, reason)| serde_json::json!({ "path": path, "reason": reason }))
            .collect();
        Err(ErrorObject::invalid_params(message).with_data(serde_json::json!({ "errors": errors })))
    }
}

/// A tool result at least this large (by its text and data) is serialized by
/// [`CallToolResult::into_json`].
const LARGE_RESULT_BYTES: usize = 1024 * 1024;

/// A tool's result as raw JSON. A large one is serialized consuming it: one text block
/// is escaped inside its own buffer, anything else is written into a buffer of about its
/// final size instead of one that doubles its way there (which would hold the old and
/// the new buffer at once at the peak).
fn tool_result(call: CallToolResult) -> Result<Reply, ErrorObject> {
    let len = call.payload_len();
    if len < LARGE_RESULT_BYTES {
        // The same bytes as `result(&call)`, written by the result's own writer.
        return Reply::written(len + 64, |out| call.write_json(out)).map_err(ErrorObject::internal);
    }
    let out = call.into_json().map_err(ErrorObject::internal)?;
    let text = String::from_utf8(out).map_err(ErrorObject::internal)?;
    RawValue::from_string(text)
        .map(Reply::from)
        .map_err(ErrorObject::internal)
}

#[cfg(test)]
mod tests {
    use super::{CallParams, is_object};

    #[test]
    fn call_params_are_decoded_in_any_layout_and_refuse_what_does_not_fit() {
        for params in [
            r#"{"_meta":{"progressToken":7},"name":"echo","arguments":{"text":"}\"{"}}"#,
            r#"{ "arguments" :  {"text":"}\"{"} , "name":"ec\u0068o"}"#,
            r#"{"name":"echo","arguments":{"text":"}\"{"},"task":{"ttl":1}}"#,
        ] {
            let p: CallParams<'_> = serde_json::from_str(params).expect(params);
            assert_eq!(p.name, "echo");
            assert_eq!(
                p.arguments.and_then(|a| a.get("text").cloned()),
                Some(serde_json::json!("}\"{")),
                "{params}"
            );
            assert!(p.meta.is_none_or(is_object), "{params}");
        }
        let meta: CallParams<'_> =
            serde_json::from_str(r#"{"name":"e","_meta":7}"#).expect("any `_meta` decodes");
        assert!(
            meta.meta.is_some_and(|m| !is_object(m)),
            "and is refused after"
        );
        for wrong in [
            r#"{"name":5}"#,
            r#"{"arguments":{}}"#,
            r#"{"name":"e","arguments":[1]}"#,
            r#"{"name":"e","task":{"ttl":"soon"}}"#,
        ] {
            assert!(
                serde_json::from_str::<CallParams<'_>>(wrong).is_err(),
                "{wrong}"
            );
        }
    }
}
