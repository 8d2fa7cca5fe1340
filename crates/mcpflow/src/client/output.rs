//! Checking a tool's `structuredContent` against the `outputSchema` its entry in the
//! tool list declares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcpflow_protocol::{CallToolResult, JsonObject, Tool};

use super::ClientHandle;
use crate::error::SessionError;

/// Compiled `outputSchema`s by tool name.
#[derive(Default)]
pub(super) struct OutputValidators(Mutex<HashMap<String, OutputValidator>>);

/// A tool's compiled `outputSchema` (`None`: it does not compile), with the schema and
/// the tool list it was last found in.
struct OutputValidator {
    list: Arc<Vec<Tool>>,
    schema: JsonObject,
    validator: Option<Arc<jsonschema::Validator>>,
}

impl ClientHandle {
    /// Check `structuredContent` against the tool's `outputSchema`, as the tool list
    /// declares it. When nothing had fetched the list, [`prefetch_tools_for_check`]
    /// started fetching it with the call, and the check waits for that fetch (bounded
    /// by its own request timeout, which began with the call). A tool missing from the
    /// list, or no list (the server declares no tools, or failed to give them), leaves
    /// the output unchecked. Tool errors are not checked.
    ///
    /// [`prefetch_tools_for_check`]: Self::prefetch_tools_for_check
    pub(super) async fn check_output(
        &self,
        tool: &str,
        result: &CallToolResult,
    ) -> Result<(), SessionError> {
        if result.is_error() || !self.declares_tools() {
            return Ok(());
        }
        let tools = &self.caches().tools;
        let tools = match tools.snapshot() {
            Some(tools) => tools,
            None if tools.failed() => return Ok(()),
            None => match tools.get().await {
                Ok(tools) => tools,
                Err(e) => {
                    tracing::debug!(%tool, error = %e, "no tool list to check the output against");
                    return Ok(());
                }
            },
        };
        let Some(schema) = tools
            .iter()
            .find(|t| t.name == tool)
            .and_then(|t| t.output_schema.as_ref())
        else {
            return Ok(());
        };
        let Some(structured) = &result.structured_content else {
            return Err(SessionError::InvalidToolOutput {
                tool: tool.to_owned(),
                path: String::new(),
                detail: "the tool declares an outputSchema but returned no structuredContent"
                    .to_owned(),
            });
        };
        let validator = self.shared.output_validators.get(tool, &tools, schema);
        let Some(validator) = validator else {
            tracing::warn!(%tool, "the tool's outputSchema does not compile; its output is not checked");
            return Ok(());
        };
        let errors: Vec<(String, String)> = validator
            .iter_errors(structured)
            .take(5)
            .map(|e| (e.instance_path().to_string(), e.to_string()))
            .collect();
        let Some((path, _)) = errors.first() else {
            return Ok(());
        };
        Err(SessionError::InvalidToolOutput {
            tool: tool.to_owned(),
            path: path.clone(),
            detail: errors
                .iter()
                .map(|(path, e)| format!("{}: {e}", if path.is_empty() { "/" } else { path }))
                .collect::<Vec<_>>()
                .join("; "),
        })
    }
}

impl ClientHandle {
    /// Before a call: start fetching the tool list (single flight; kept fresh by
    /// `list_changed` from then on) when nothing fetched it yet, so the output check
    /// finds it without a round trip after the result. Not retried after a failure.
    pub(super) fn prefetch_tools_for_check(&self) {
        if self.declares_tools() {
            self.caches().tools.prefetch();
        }
    }

    fn declares_tools(&self) -> bool {
        self.server()
            .is_some_and(|init| init.capabilities.tools.is_some())
    }
}

impl OutputValidators {
    /// The compiled `outputSchema` of `tool` as `tools` (the current list) declares it.
    /// Compiled once per schema: a call with the same list costs a pointer comparison,
    /// and a refreshed list a comparison of the schema with the one compiled.
    fn get(
        &self,
        tool: &str,
        tools: &Arc<Vec<Tool>>,
        schema: &JsonObject,
    ) -> Option<Arc<jsonschema::Validator>> {
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = cache.get_mut(tool) {
            if Arc::ptr_eq(&known.list, tools) {
                return known.validator.clone();
            }
            if known.schema == *schema {
                known.list = tools.clone();
                return known.validator.clone();
            }
        }
        let validator = jsonschema::validator_for(&serde_json::Value::Object(schema.clone()))
            .ok()
            .map(Arc::new);
        cache.insert(
            tool.to_owned(),
            OutputValidator {
                list: tools.clone(),
                schema: schema.clone(),
                validator: validator.clone(),
            },
        );
        validator
    }
}
