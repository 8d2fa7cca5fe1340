//! What a server offers: tools, resources, resource templates and prompts, with their
//! handlers. Shared by every connection of a [`Server`](super::Server) and changeable
//! at run time (each change notifies connected clients).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mcpflow_protocol::elicitation::ElicitUrlParams;
use mcpflow_protocol::prompts::Prompt;
use mcpflow_protocol::resources::{Resource, ResourceTemplate};
use mcpflow_protocol::{
    CallToolResult, CompleteRequestParams, CompleteResult, ErrorObject, GetPromptResult,
    JsonObject, ReadResourceResult, Tool, UrlElicitationRequired,
};

use super::context::ServerContext;
use crate::session::BoxFuture;

/// Why a tool call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and failed: the client gets a result with `isError: true` and this
    /// message (the model sees it), not a protocol error.
    #[error("{0}")]
    Failed(String),
    /// The request itself was wrong (e.g. invalid arguments): a JSON-RPC error.
    #[error("{0}")]
    Protocol(ErrorObject),
}

impl ToolError {
    /// A tool failure the model should see.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }

    /// `-32602` invalid params.
    pub fn invalid_params(reason: impl std::fmt::Display) -> Self {
        ToolError::Protocol(ErrorObject::invalid_params(reason))
    }

    /// `-32042`: the call can succeed only after the user completes these URL
    /// elicitations (2025-11-25). Send it only to a client that declared URL-mode
    /// elicitation ([`ClientCapabilities::supports_url_elicitation`](mcpflow_protocol::ClientCapabilities::supports_url_elicitation));
    /// announce each completion with [`ServerContext::notify_elicitation_complete`].
    pub fn url_elicitation_required(elicitations: Vec<ElicitUrlParams>) -> Self {
        ToolError::Protocol(
            UrlElicitationRequired::new(elicitations)
                .to_error("this request needs the user to complete an action in the browser first"),
        )
    }
}

/// Runs a tool: arguments in, result out.
pub type ToolHandler = Arc<
    dyn Fn(JsonObject, ServerContext) -> BoxFuture<'static, Result<CallToolResult, ToolError>>
        + Send
        + Sync,
>;
/// Reads a resource: its URI and, for a template, the template's variables.
pub type ResourceHandler = Arc<
    dyn Fn(
            String,
            HashMap<String, String>,
            ServerContext,
        ) -> BoxFuture<'static, Result<ReadResourceResult, ErrorObject>>
        + Send
        + Sync,
>;
/// Renders a prompt from its arguments.
pub type PromptHandler = Arc<
    dyn Fn(
            BTreeMap<String, String>,
            ServerContext,
        ) -> BoxFuture<'static, Result<GetPromptResult, ErrorObject>>
        + Send
        + Sync,
>;
/// Answers `completion/complete`.
pub type CompletionHandler = Arc<
    dyn Fn(
            CompleteRequestParams,
            ServerContext,
        ) -> BoxFuture<'static, Result<CompleteResult, ErrorObject>>
        + Send
        + Sync,
>;

/// Runs a typed tool: its arguments' JSON text in (one JSON value), decoded straight
/// into the handler's own type; a decoding failure comes back before anything runs.
pub(crate) type TypedToolHandler = Arc<
    dyn Fn(
            &str,
            ServerContext,
        ) -> Result<BoxFuture<'static, Result<CallToolResult, ToolError>>, Violation>
        + Send
        + Sync,
>;

/// Why arguments were refused: where (a JSON Pointer into the arguments, `/` for the
/// whole) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) path: String,
    pub(crate) reason: String,
}

/// How one call of a tool reaches its handler, cheap to clone out of the registry.
#[derive(Clone)]
pub(crate) enum ToolCall {
    /// Arguments as a map, checked first against the tool's hand-written `inputSchema`.
    Checked {
        handler: ToolHandler,
        /// The `inputSchema`, compiled once; `None` when it asks only for an object
        /// (arguments always are one) or does not compile (the arguments then go to
        /// the handler unchecked, and a warning was logged).
        validator: Option<Arc<jsonschema::Validator>>,
    },
    /// Arguments decoded by serde into the handler's type. Its `inputSchema` was
    /// generated from that type, so serde's own checks stand in for a validator.
    Typed(TypedToolHandler),
}

/// Check arguments against a hand-written input schema: at most ten violations.
pub(crate) fn violations(
    validator: &jsonschema::Validator,
    arguments: &serde_json::Value,
) -> Vec<Violation> {
    validator
        .iter_errors(arguments)
        .take(10)
        .map(|e| {
            let path = e.instance_path().to_string();
            Violation {
                path: if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                },
                reason: e.to_string(),
            }
        })
        .collect()
}

#[derive(Clone)]
pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) call: ToolCall,
}

impl ToolEntry {
    /// A tool with a hand-written `inputSchema`, checked before `handler` runs.
    pub(crate) fn new(tool: Tool, handler: ToolHandler) -> Self {
        // Arguments always arrive as an object, so a schema that asks for nothing more
        // needs no validator (compiling one costs time and memory per tool).
        let trivial = tool.input_schema.len() == 1
            && tool.input_schema.get("type").and_then(|t| t.as_str()) == Some("object");
        let validator = if trivial {
            None
        } else {
            let schema = serde_json::Value::Object(tool.input_schema.clone());
            match jsonschema::validator_for(&schema) {
                Ok(v) => Some(Arc::new(v)),
                Err(e) => {
                    tracing::warn!(tool = %tool.name, error = %e, "the tool's inputSchema does not compile; its arguments will not be validated");
                    None
                }
            }
        };
        ToolEntry {
            tool,
            call: ToolCall::Checked { handler, validator },
        }
    }

    /// A tool whose `inputSchema` was generated from the type `handler` decodes.
    pub(crate) fn typed(tool: Tool, handler: TypedToolHandler) -> Self {
        ToolEntry {
            tool,
            call: ToolCall::Typed(handler),
        }
    }
}

#[derive(Clone)]
pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) handler: ResourceHandler,
}

#[derive(Clone)]
pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) handler: ResourceHandler,
}

#[derive(Clone)]
pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) handler: PromptHandler,
}

/// Suggests values for one argument: the partial value and the arguments already
/// resolved (`context.arguments`) in, candidates out (at most 100 are sent).
pub type ArgumentCompleter = Arc<
    dyn Fn(String, BTreeMap<String, String>, ServerContext) -> BoxFuture<'static, Vec<String>>
        + Send
        + Sync,
>;

/// A completion route: which prompt or template, which argument.
#[derive(Clone)]
pub(crate) struct CompletionRoute {
    pub(crate) reference: mcpflow_protocol::CompletionReference,
    pub(crate) argument: String,
    pub(crate) completer: ArgumentCompleter,
}

impl CompletionRoute {
    pub(crate) fn matches(&self, params: &CompleteRequestParams) -> bool {
        use mcpflow_protocol::CompletionReference as Ref;
        self.argument == params.argument.name
            && match (&self.reference, &params.reference) {
                (Ref::Prompt(a), Ref::Prompt(b)) => a.name == b.name,
                (Ref::Resource(a), Ref::Resource(b)) => a.uri == b.uri,
                _ => false,
            }
    }
}

/// Registered items, in registration order (list order is deterministic).
#[derive(Clone, Default)]
pub(crate) struct Registry {
    pub(crate) completions: Vec<CompletionRoute>,
    pub(crate) tools: Vec<ToolEntry>,
    pub(crate) resources: Vec<ResourceEntry>,
    pub(crate) templates: Vec<TemplateEntry>,
    pub(crate) prompts: Vec<PromptEntry>,
}

impl Registry {
    /// How to call the tool named `name`.
    pub(crate) fn tool_call(&self, name: &str) -> Option<ToolCall> {
        self.tools
            .iter()
            .find(|t| t.tool.name == name)
            .map(|t| t.call.clone())
    }

    /// Whether the tool named `name` may or must run as a task; `None` when the server
    /// declares no `tasks` capability (then a `task` param is ignored, as the spec says).
    pub(crate) fn task_support(&self, name: &str) -> Option<mcpflow_protocol::tools::TaskSupport> {
        if !self.runs_tasks() {
            return None;
        }
        self.tools
            .iter()
            .find(|t| t.tool.name == name)
            .map(|t| t.tool.task_support())
    }

    /// Whether any tool may run as a task (the server then declares `tasks`).
    pub(crate) fn runs_tasks(&self) -> bool {
        self.tools
            .iter()
            .any(|t| t.tool.task_support() != mcpflow_protocol::tools::TaskSupport::Forbidden)
    }

    pub(crate) fn upsert_tool(&mut self, entry: ToolEntry) {
        match self
            .tools
            .iter_mut()
            .find(|t| t.tool.name == entry.tool.name)
        {
            Some(existing) => *existing = entry,
            None => self.tools.push(entry),
        }
    }

    pub(crate) fn find_resource(
        &self,
        uri: &str,
    ) -> Option<(ResourceHandler, HashMap<String, String>)> {
        if let Some(r) = self.resources.iter().find(|r| r.resource.uri == uri) {
            return Some((r.handler.clone(), HashMap::new()));
        }
        self.templates.iter().find_map(|t| {
            match_template(&t.template.uri_template, uri).map(|vars| (t.handler.clone(), vars))
        })
    }
}

/// Match a URI against an RFC 6570 level-1 template (`test://items/{id}/data`). A
/// variable matches a non-empty run of characters up to the next literal part; the
/// last variable may not contain `/` unless it ends the template.
pub(crate) fn match_template(template: &str, uri: &str) -> Option<HashMap<String, String>> {
    let mut vars = HashMap::new();
    let mut rest_t = template;
    let mut rest_u = uri;
    loop {
        match rest_t.find('{') {
            None => return (rest_t == rest_u).then_some(vars),
            Some(open) => {
                let literal = &rest_t[..open];
                rest_u = rest_u.strip_prefix(literal)?;
                let close = rest_t[open..].find('}')? + open;
                let name = &rest_t[open + 1..close];
                rest_t = &rest_t[close + 1..];
                let next_literal_end = rest_t.find('{').unwrap_or(rest_t.len());
                let next_literal = &rest_t[..next_literal_end];
                let value_end = if next_literal.is_empty() {
                    if rest_t.is_empty() {
                        rest_u.len()
                    } else {
                        rest_u.find('/').unwrap_or(rest_u.len())
                    }
                } else {
                    rest_u.find(next_literal)?
                };
                let value = &rest_u[..value_end];
                if value.is_empty() || (!rest_t.is_empty() && value.contains('/')) {
                    return None;
                }
                vars.insert(
                    name.trim_start_matches(['+', '#']).to_owned(),
                    value.to_owned(),
                );
                rest_u = &rest_u[value_end..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::match_template;

    #[test]
    fn templates_match_their_variables() {
        let vars =
            match_template("test://template/{id}/data", "test://template/123/data").expect("match");
        assert_eq!(vars["id"], "123");
        assert!(match_template("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(match_template("test://template/{id}/data", "test://template//data").is_none());
        let vars = match_template("file:///{path}", "file:///a/b.txt").expect("match");
        assert_eq!(vars["path"], "a/b.txt");
        assert!(match_template("x://{a}", "y://b").is_none());
    }
}
