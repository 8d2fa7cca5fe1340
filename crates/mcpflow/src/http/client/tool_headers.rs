//! 2026-07-28 `Mcp-Param-*` headers: the `x-mcp-header` arguments of each tool, learnt
//! from the `tools/list` answers passing through the transport, mirrored into the
//! headers of each `tools/call`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use mcpflow_protocol::RequestId;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::client::headers::{header_params, header_value};

/// What the transport knows of the tools' `x-mcp-header` arguments.
#[derive(Debug, Default)]
pub(super) struct ToolHeaders {
    /// `(argument, header name)` pairs by tool.
    known: Mutex<HashMap<String, Vec<(String, String)>>>,
    /// `tools/list` requests not yet answered.
    lists: Mutex<Vec<RequestId>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ToolHeaders {
    /// `ids` are `tools/list` requests: learn from their answers.
    pub(super) fn listing(&self, ids: &[RequestId]) {
        lock(&self.lists).extend(ids.iter().cloned());
    }

    /// Request `id` was answered (with `result`, unless it failed).
    pub(super) fn answered(&self, id: &RequestId, result: Option<&RawValue>) {
        let listed = {
            let mut lists = lock(&self.lists);
            let at = lists.iter().position(|i| i.correlates_with(id));
            at.map(|at| lists.swap_remove(at)).is_some()
        };
        if listed && let Some(result) = result {
            self.learn(result);
        }
    }

    /// Learn the `x-mcp-header` arguments of the tools in a `tools/list` answer.
    fn learn(&self, result: &RawValue) {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            tools: Vec<ListedTool>,
        }
        #[derive(Deserialize)]
        struct ListedTool {
            name: String,
            #[serde(rename = "inputSchema", default)]
            input_schema: serde_json::Map<String, serde_json::Value>,
        }
        let Ok(page) = serde_json::from_str::<Page>(result.get()) else {
            return;
        };
        let mut known = lock(&self.known);
        for tool in page.tools {
            match header_params(&tool.input_schema) {
                Ok(pairs) => {
                    known.insert(tool.name, pairs);
                }
                Err(_) => {
                    known.remove(&tool.name);
                }
            }
        }
    }

    /// The `Mcp-Param-*` headers of a `tools/call` of `tool` with `arguments`:
    /// arguments that are absent or null get none.
    pub(super) fn param_headers(
        &self,
        tool: &str,
        arguments: Option<&serde_json::value::RawValue>,
    ) -> Vec<(String, String)> {
        let Some(arguments) = arguments else {
            return Vec::new();
        };
        let known = lock(&self.known);
        let Some(pairs) = known.get(tool).filter(|pairs| !pairs.is_empty()) else {
            return Vec::new();
        };
        let Ok(arguments) =
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(arguments.get())
        else {
            return Vec::new();
        };
        pairs
            .iter()
            .filter_map(|(argument, header)| {
                let value = header_value(arguments.get(argument)?)?;
                Some((format!("Mcp-Param-{header}"), value))
            })
            .collect()
    }
}
