//! Checking a tool's `structuredContent` against the `outputSchema` its entry in the
//! tool list declares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcpflow_protocol::methods::method;
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
    /// Check `structuredContent` against the tool's `outputSchema`, when the tool list
    /// has been loaded and declares one. Tool errors are not checked.
    pub(super) fn check_output(
        &self,
        tool: &str,
        result: &CallToolResult,
    ) -> Result<(), SessionError> {
        if result.is_error() {
            return Ok(());
        }
        let Some(tools) = self.caches().tools.snapshot() else {
            return Ok(());
        };
        let Some(schema) = tools
            .iter()
            .find(|t| t.name == tool)
            .and_then(|t| t.output_schema.as_ref())
        else {
            return Ok(());
        };
        let invalid = |detail: String| SessionError::Codec {
            method: method::TOOLS_CALL.into(),
            detail: format!("tool `{tool}`: {detail}"),
        };
        let Some(structured) = &result.structured_content else {
            return Err(invalid(
                "the tool declares an outputSchema but returned no structuredContent".to_owned(),
            ));
        };
        let validator = self.shared.output_validators.get(tool, &tools, schema);
        let Some(validator) = validator else {
            tracing::warn!(%tool, "the tool's outputSchema does not compile; its output is not checked");
            return Ok(());
        };
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .take(5)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(invalid(format!(
                "structuredContent does not match its outputSchema: {}",
                errors.join("; ")
            )))
        }
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
