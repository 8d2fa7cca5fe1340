//! `tools/list` and `tools/call`.

use std::borrow::Cow;

use mcpflow_protocol::tasks::TaskMetadata;
use mcpflow_protocol::tools::TaskSupport;
use mcpflow_protocol::{
    CallToolResult, ErrorCode, ErrorObject, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Params, optional, page, required, result};
use crate::config::LARGE_MESSAGE_BYTES;
use crate::server::registry::{ToolCall, Violation, violations};
use crate::server::tasks::TaskWork;
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
/// ([`CallToolRequestParams`](mcpflow_protocol::CallToolRequestParams) with the
/// arguments left as JSON for the tool's own decoder, and without the members this
/// server does not act on).
#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    /// Checked for its shape only: the engine reads it for the handler.
    #[serde(default, rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
    /// Present when the client asks to run the call as a task.
    #[serde(default)]
    task: Option<TaskMetadata>,
}

/// Whether `raw` is an object: serde_json hands a raw value over without the
/// whitespace around it, so its first byte tells its kind.
fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

/// Find the tool, hand it the arguments (a typed tool decodes them into its own type;
/// any other is checked against its input schema first), and run it.
pub(crate) async fn call(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: CallParams<'_> = required(&params)?;
    if p.meta.is_some_and(|m| !is_object(m)) {
        return Err(ErrorObject::invalid_params("`_meta` must be an object"));
    }
    if p.arguments.is_some_and(|a| !is_object(a)) {
        return Err(ErrorObject::invalid_params("`arguments` must be an object"));
    }
    let (tool, support) = {
        let registry = cx.server().registry();
        let tool = registry
            .tool_call(&p.name)
            .ok_or_else(|| ErrorObject::invalid_params(format!("unknown tool: {}", p.name)))?;
        (tool, registry.task_support(&p.name))
    };
    let arguments = p.arguments.map_or("{}", RawValue::get);
    // 2026-07-28 has no `task` param (a 2025-11-25 one is ignored): the server decides
    // which calls become tasks (`server::tasks::per_request`).
    let support = support.filter(|_| !cx.is_per_request());
    match (&p.task, support) {
        (Some(_), Some(TaskSupport::Forbidden)) => {
            return Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "tool `{}` cannot run as a task (its taskSupport is forbidden)",
                    p.name
                ),
            ));
        }
        (None, Some(TaskSupport::Required)) => {
            return Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "tool `{}` runs only as a task (taskSupport: required); call it with a `task` param",
                    p.name
                ),
            ));
        }
        (Some(task), Some(_)) => {
            let (name, arguments) = (p.name.into_owned(), arguments.to_owned());
            let work: TaskWork = Box::new(move |cx| {
                Box::pin(async move { outcome(tool, &name, &arguments, cx).await })
            });
            return crate::server::tasks::start(&cx, task.ttl, work);
        }
        _ => {}
    }
    outcome(tool, &p.name, arguments, cx)
        .await
        .and_then(tool_result)
}

/// Run the tool and map its failures: a tool error is a result with `isError`, a
/// protocol error the JSON-RPC error.
async fn outcome(
    tool: ToolCall,
    name: &str,
    arguments: &str,
    cx: ServerContext,
) -> Result<CallToolResult, ErrorObject> {
    let version = cx.protocol_version();
    let outcome = match tool {
        ToolCall::Typed(handler) => match handler(arguments, cx) {
            Ok(run) => run.await,
            Err(violation) => return invalid_arguments(name, &[violation], version),
        },
        ToolCall::Checked { handler, validator } => {
            let mut arguments: JsonObject =
                serde_json::from_str(arguments).map_err(ErrorObject::invalid_params)?;
            if let Some(validator) = validator {
                // The validator reads a `Value`; the map goes on to the handler after.
                let value = serde_json::Value::Object(arguments);
                let violations = violations(&validator, &value);
                if !violations.is_empty() {
                    return invalid_arguments(name, &violations, version);
                }
                let serde_json::Value::Object(map) = value else {
                    return Err(ErrorObject::invalid_params("`arguments` must be an object"));
                };
                arguments = map;
            }
            handler(arguments, cx).await
        }
    };
    match outcome {
        Ok(call) => Ok(call),
        Err(ToolError::Failed(message)) => Ok(CallToolResult::error(message)),
        Err(ToolError::Protocol(error)) => Err(error),
    }
}

/// Arguments that do not fit a tool. From 2025-11-25 on (SEP-1303) this is a tool
/// execution error (`isError: true`, so the model can correct itself); before, a
/// `-32602` protocol error. Either way the message names each path and reason.
fn invalid_arguments(
    tool: &str,
    violations: &[Violation],
    version: Option<ProtocolVersion>,
) -> Result<CallToolResult, ErrorObject> {
    let detail = violations
        .iter()
        .map(|v| format!("{}: {}", v.path, v.reason))
        .collect::<Vec<_>>()
        .join("; ");
    let message = format!("invalid arguments for tool `{tool}`: {detail}");
    let tool_error = version.is_none_or(|v| v.as_str() >= ProtocolVersion::V2025_11_25.as_str());
    if tool_error {
        Ok(CallToolResult::error(message))
    } else {
        let errors: Vec<_> = violations
            .iter()
            .map(|v| serde_json::json!({ "path": v.path, "reason": v.reason }))
            .collect();
        Err(ErrorObject::invalid_params(message).with_data(serde_json::json!({ "errors": errors })))
    }
}

/// A tool's result as raw JSON. A large one is serialized consuming it: one text block
/// is escaped inside its own buffer, anything else is written into a buffer of about its
/// final size instead of one that doubles its way there (which would hold the old and
/// the new buffer at once at the peak).
fn tool_result(call: CallToolResult) -> Result<Reply, ErrorObject> {
    let len = call.payload_len();
    if len < LARGE_MESSAGE_BYTES {
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
    fn call_params_keep_the_arguments_as_they_came_and_tell_their_kind() {
        for (params, arguments, object) in [
            (
                r#"{"name":"e","arguments":{"a":[1]}}"#,
                Some(r#"{"a":[1]}"#),
                true,
            ),
            (
                r#"{ "arguments" :  {"a":1} , "name":"e"}"#,
                Some(r#"{"a":1}"#),
                true,
            ),
            (r#"{"name":"e","arguments":[1]}"#, Some("[1]"), false),
            (r#"{"name":"e","arguments":"{}"}"#, Some(r#""{}""#), false),
            (r#"{"name":"e","arguments":null}"#, None, true),
            (r#"{"name":"e"}"#, None, true),
        ] {
            let p: CallParams<'_> = serde_json::from_str(params).expect(params);
            assert_eq!(p.name, "e");
            assert_eq!(p.arguments.map(|a| a.get()), arguments, "{params}");
            assert_eq!(p.arguments.is_none_or(is_object), object, "{params}");
        }
        let escaped: CallParams<'_> =
            serde_json::from_str(r#"{"name":"ec\u0068o","_meta":{"progressToken":1}}"#)
                .expect("escaped name");
        assert_eq!(escaped.name, "echo");
        assert!(escaped.meta.is_some_and(is_object));
        for wrong in [
            r#"{"name":5}"#,
            r#"{"arguments":{}}"#,
            r#"{"name":"e","task":{"ttl":"soon"}}"#,
        ] {
            assert!(
                serde_json::from_str::<CallParams<'_>>(wrong).is_err(),
                "{wrong}"
            );
        }
    }
}
