//! `tools/list` and `tools/call`.

use mcpflow_protocol::tasks::TaskMetadata;
use mcpflow_protocol::tools::TaskSupport;
use mcpflow_protocol::{
    CallToolResult, ErrorCode, ErrorObject, JsonObject, ListToolsResult, ProtocolVersion,
};

use super::{cursor, page};
use crate::server::registry::{ToolCall, Violation, violations};
use crate::server::tasks::TaskWork;
use crate::server::{ServerContext, ToolError};
use crate::session::{JsonText, Member, Reply};

pub(crate) async fn list(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let server = cx.server();
    let (tools, next_cursor) = page(
        &server.registry().tools,
        cursor(&cx)?,
        server.inner.page_size,
        |e| e.tool.clone(),
    )?;
    let mut list = ListToolsResult::new(tools);
    list.next_cursor = next_cursor;
    cx.reply(list)
}

/// Find the tool, hand it the arguments (a typed tool decodes them into its own type;
/// any other is checked against its input schema first), and run it.
pub(crate) async fn call(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let head = cx.request().head();
    let name = head.name.required("name")?;
    if matches!(head.meta, Member::Invalid(_)) {
        return Err(ErrorObject::invalid_params("`_meta` must be an object"));
    }
    let arguments = head.arguments.optional("arguments")?;
    if arguments.is_some_and(|a| !a.is_object()) {
        return Err(ErrorObject::invalid_params("`arguments` must be an object"));
    }
    // Present when the client asks to run the call as a task.
    let task: Option<TaskMetadata> = head
        .task
        .optional("task")?
        .map(JsonText::decode)
        .transpose()
        .map_err(ErrorObject::invalid_params)?;
    let (tool, support) = {
        let registry = cx.server().registry();
        let tool = registry
            .tool_call(name)
            .ok_or_else(|| ErrorObject::invalid_params(format!("unknown tool: {name}")))?;
        (tool, registry.task_support(name))
    };
    let arguments = arguments.map_or("{}", JsonText::get);
    let support = support.filter(|_| cx.era().honours_task_param());
    match (&task, support) {
        (Some(_), Some(TaskSupport::Forbidden)) => {
            return Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("tool `{name}` cannot run as a task (its taskSupport is forbidden)"),
            ));
        }
        (None, Some(TaskSupport::Required)) => {
            return Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "tool `{name}` runs only as a task (taskSupport: required); call it with a `task` param"
                ),
            ));
        }
        (Some(task), Some(_)) => {
            let (name, arguments) = (name.clone(), arguments.to_owned());
            let work: TaskWork = Box::new(move |cx| {
                Box::pin(async move { outcome(tool, &name, &arguments, cx).await })
            });
            return crate::server::tasks::start(&cx, task.ttl, work);
        }
        _ => {}
    }
    let call = outcome(tool, name, arguments, cx.clone()).await?;
    if call.is_error() {
        cx.request().operation().tool_error();
    }
    cx.reply(call)
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
