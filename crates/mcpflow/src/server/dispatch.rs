//! Answering one connection's requests: the engine's [`Service`] for a server, which
//! maps each MCP method to the registry and the handlers.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use mcpflow_protocol::jsonrpc::{Notification, Request};
use mcpflow_protocol::methods::method;
use mcpflow_protocol::prompts::{ListPromptsResult, Prompt};
use mcpflow_protocol::resources::{
    ListResourceTemplatesResult, ListResourcesResult, Resource, ResourceTemplate,
    SubscribeRequestParams,
};
use mcpflow_protocol::{
    CallToolResult, CompleteRequestParams, CompleteResult, EmptyResult, ErrorCode, ErrorObject,
    GetPromptRequestParams, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, SetLevelRequestParams,
    Tool,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::{Connection, LEVELS, ServerContext, ToolError};
use crate::session::{BoxFuture, Peer, Reply, RequestContext, Service};

/// The engine's [`Service`] for one server connection.
pub(crate) struct ServerService {
    pub(crate) connection: Arc<Connection>,
}

fn params<T: DeserializeOwned + Default>(raw: Option<&RawValue>) -> Result<T, ErrorObject> {
    match raw {
        None => Ok(T::default()),
        Some(raw) => serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params),
    }
}

fn required_params<'a, T: serde::Deserialize<'a>>(
    raw: Option<&'a RawValue>,
) -> Result<T, ErrorObject> {
    let raw = raw.ok_or_else(|| ErrorObject::invalid_params("missing params"))?;
    serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)
}

fn result<T: Serialize>(value: &T) -> Result<Reply, ErrorObject> {
    Reply::json(value).map_err(ErrorObject::internal)
}

/// A result that may run to megabytes (a resource's contents), as raw JSON: a large one
/// then goes out after its response's head, and a transport that keeps whole messages
/// (streamable HTTP) takes its buffer instead of copying it.
fn raw_result<T: Serialize>(value: &T) -> Result<Reply, ErrorObject> {
    serde_json::value::to_raw_value(value)
        .map(Reply::from)
        .map_err(ErrorObject::internal)
}

/// A tool result at least this large (by its text and data) is serialized by
/// [`CallToolResult::into_json`].
const LARGE_RESULT_BYTES: usize = 1024 * 1024;

/// A tool's result as raw JSON. A large one is serialized consuming it: one text block
/// is escaped inside its own buffer, anything else is written into a buffer of about its
/// final size instead of one that doubles its way there (which would hold the old and
/// the new buffer at once: half as much memory again, at the peak, as the result).
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

/// Arguments that violate a tool's `inputSchema`. From 2025-11-25 on (SEP-1303) this is
/// a tool execution error (`isError: true`, so the model can correct itself); before,
/// a `-32602` protocol error. Either way the message names each path and reason.
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

fn page<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor {c:?}")))?,
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

/// What answering `tools/call` reads of its params
/// ([`CallToolRequestParams`](mcpflow_protocol::CallToolRequestParams) minus
/// `_meta`, which the engine has read, and members this server does not act on), so each
/// call decodes only its name and arguments.
#[derive(serde::Deserialize)]
struct ToolCallParams<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(default)]
    arguments: Option<mcpflow_protocol::JsonObject>,
    /// Checked for its shape only.
    #[serde(default, rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
    /// Checked for its shape only.
    #[serde(default, rename = "task")]
    _task: Option<mcpflow_protocol::tasks::TaskMetadata>,
}

/// Answer `tools/call`: find the tool, check the arguments against its input schema,
/// run its handler.
async fn call_tool(raw: Option<&RawValue>, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p = match None::<ToolCallParams<'_>> {
        Some(p) => p,
        None => required_params(raw)?,
    };
    if p.meta
        .is_some_and(|m| !m.get().starts_with('{') && m.get() != "null")
    {
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
        _ => mcpflow_protocol::JsonObject::new(),
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

impl Service for ServerService {
    fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
        if self.connection.server.lacks_capability_for(&request.method) {
            return Box::pin(std::future::ready(Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "method not found: {} (this server declares no such capability)",
                    request.method
                ),
            ))));
        }
        // The most frequent request gets its own, smaller future (so the match below
        // has no arm for it).
        let connection = self.connection.clone();
        if request.method == method::TOOLS_CALL {
            return Box::pin(async move {
                let cx = ServerContext::new(cx, connection);
                call_tool(request.params.as_deref(), cx).await
            });
        }
        Box::pin(async move {
            let raw = request.params.as_deref();
            let server = connection.server.clone();
            let cx = ServerContext::new(cx, connection.clone());
            let size = server.inner.page_size;
            match request.method.as_str() {
                method::INITIALIZE => {
                    let params: InitializeRequestParams = required_params(raw)?;
                    let version = ProtocolVersion::negotiate(params.protocol_version.as_str());
                    cx.peer().set_accept_batches(version.supports_batches());
                    let _ = connection.protocol_version.set(version.clone());
                    let _ = connection.client_info.set(params.client_info.clone());
                    let _ = connection
                        .client_capabilities
                        .set(params.capabilities.clone());
                    if let Some(hook) = server.inner.on_initialize.clone() {
                        hook(params, cx.clone()).await?;
                    }
                    let mut init = InitializeResult::new(
                        version,
                        server.capabilities(),
                        server.inner.info.clone(),
                    );
                    init.instructions = server.inner.instructions.clone();
                    result(&init)
                }
                method::TOOLS_LIST => {
                    let p: PaginatedRequestParams = params(raw)?;
                    let tools: Vec<Tool> = server
                        .registry()
                        .tools
                        .iter()
                        .map(|t| t.tool.clone())
                        .collect();
                    let (tools, next) = page(&tools, p.cursor.as_deref(), size)?;
                    let mut list = ListToolsResult::new(tools);
                    list.next_cursor = next;
                    result(&list)
                }
                method::RESOURCES_LIST => {
                    let p: PaginatedRequestParams = params(raw)?;
                    let items: Vec<Resource> = server
                        .registry()
                        .resources
                        .iter()
                        .map(|r| r.resource.clone())
                        .collect();
                    let (resources, next_cursor) = page(&items, p.cursor.as_deref(), size)?;
                    result(&ListResourcesResult {
                        resources,
                        next_cursor,
                        ..Default::default()
                    })
                }
                method::RESOURCES_TEMPLATES_LIST => {
                    let p: PaginatedRequestParams = params(raw)?;
                    let items: Vec<ResourceTemplate> = server
                        .registry()
                        .templates
                        .iter()
                        .map(|t| t.template.clone())
                        .collect();
                    let (resource_templates, next_cursor) =
                        page(&items, p.cursor.as_deref(), size)?;
                    result(&ListResourceTemplatesResult {
                        resource_templates,
                        next_cursor,
                        ..Default::default()
                    })
                }
                method::RESOURCES_READ => {
                    let p: ReadResourceRequestParams = required_params(raw)?;
                    let found = server.registry().find_resource(&p.uri);
                    let (handler, vars) = found.ok_or_else(|| {
                        ErrorObject::new(
                            ErrorCode::RESOURCE_NOT_FOUND,
                            format!("resource not found: {}", p.uri),
                        )
                        .with_data(serde_json::json!({ "uri": p.uri }))
                    })?;
                    raw_result(&handler(p.uri, vars, cx).await?)
                }
                method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => {
                    if !server.inner.subscriptions {
                        return Err(ErrorObject::method_not_found(&request.method));
                    }
                    let p: SubscribeRequestParams = required_params(raw)?;
                    let mut subs = connection
                        .subscriptions
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    if request.method == method::RESOURCES_SUBSCRIBE {
                        subs.insert(p.uri);
                    } else {
                        subs.remove(&p.uri);
                    }
                    result(&EmptyResult::default())
                }
                method::PROMPTS_LIST => {
                    let p: PaginatedRequestParams = params(raw)?;
                    let items: Vec<Prompt> = server
                        .registry()
                        .prompts
                        .iter()
                        .map(|p| p.prompt.clone())
                        .collect();
                    let (prompts, next_cursor) = page(&items, p.cursor.as_deref(), size)?;
                    result(&ListPromptsResult {
                        prompts,
                        next_cursor,
                        ..Default::default()
                    })
                }
                method::PROMPTS_GET => {
                    let p: GetPromptRequestParams = required_params(raw)?;
                    let entry = server
                        .registry()
                        .prompts
                        .iter()
                        .find(|e| e.prompt.name == p.name)
                        .cloned()
                        .ok_or_else(|| {
                            ErrorObject::invalid_params(format!("unknown prompt: {}", p.name))
                        })?;
                    let args = p.arguments.unwrap_or_default();
                    for arg in entry.prompt.arguments.iter().flatten() {
                        if arg.required == Some(true) && !args.contains_key(&arg.name) {
                            return Err(ErrorObject::invalid_params(format!(
                                "prompt `{}` needs the argument `{}`",
                                p.name, arg.name
                            )));
                        }
                    }
                    result(&(entry.handler)(args, cx).await?)
                }
                method::COMPLETION_COMPLETE => {
                    if server.capabilities().completions.is_none() {
                        return Err(ErrorObject::method_not_found(&request.method));
                    }
                    let p: CompleteRequestParams = required_params(raw)?;
                    if let Some(handler) = server.inner.completion.clone() {
                        return result(&handler(p, cx).await?);
                    }
                    let route = server
                        .registry()
                        .completions
                        .iter()
                        .find(|r| r.matches(&p))
                        .cloned();
                    let mut values = match route {
                        Some(route) => {
                            let context = p.context.and_then(|c| c.arguments).unwrap_or_default();
                            (route.completer)(p.argument.value, context, cx).await
                        }
                        None => Vec::new(),
                    };
                    let total = values.len();
                    values.truncate(100);
                    let mut complete = CompleteResult::new(values);
                    if total > 100 {
                        complete.completion.total = u64::try_from(total).ok();
                        complete.completion.has_more = Some(true);
                    }
                    result(&complete)
                }
                method::LOGGING_SET_LEVEL => {
                    if !server.inner.logging {
                        return Err(ErrorObject::method_not_found(&request.method));
                    }
                    let p: SetLevelRequestParams = required_params(raw)?;
                    let index = LEVELS.iter().position(|l| *l == p.level).unwrap_or(0);
                    connection
                        .log_level
                        .store(u8::try_from(index).unwrap_or(0), Ordering::Relaxed);
                    result(&EmptyResult::default())
                }
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    }

    fn handle_notification(
        &self,
        notification: Notification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        if notification.method == method::INITIALIZED {
            self.connection.initialized.store(true, Ordering::Release);
        }
        let hook = self.connection.server.inner.on_notification.clone();
        Box::pin(async move {
            if let Some(hook) = hook {
                hook(notification, peer).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn pages_and_rejects_bad_cursors() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, None, 2).expect("first page");
        assert_eq!((first, next.as_deref()), (vec![0, 1], Some("2")));
        let (last, next) = page(&items, Some("4"), 2).expect("last page");
        assert_eq!((last, next), (vec![4], None));
        assert!(page(&items, Some("x"), 2).is_err());
        assert!(page(&items, Some("9"), 2).is_err());
    }
}
