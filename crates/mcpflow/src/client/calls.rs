//! Tool calls: plain, with options, typed, and started as a task.

use mcpflow_protocol::methods::{self, method};
use mcpflow_protocol::{CallToolRequestParams, CallToolResult, RequestMethod};
use serde::Serialize;

use super::{ClientHandle, to_raw};
use crate::error::SessionError;
use crate::session::RequestOptions;

/// A typed tool call did not produce the expected value.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ToolCallError {
    /// The request failed (peer error, timeout, closed connection, invalid output).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The tool ran and reported a failure (`isError: true`).
    #[error("tool `{tool}` failed: {message}")]
    Failed {
        /// The tool's name.
        tool: String,
        /// The text the tool returned.
        message: String,
    },
    /// The result could not be read as the requested type.
    #[error("tool `{tool}` returned {detail}")]
    UnexpectedOutput {
        /// The tool's name.
        tool: String,
        /// What did not fit.
        detail: String,
    },
}

impl ClientHandle {
    /// Call a tool, asking for progress (which also keeps the timeout from expiring
    /// while the tool reports progress).
    ///
    /// # Errors
    /// As [`Peer::request`](crate::Peer::request). A tool that fails returns `Ok` with `is_error` set.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<CallToolResult, SessionError> {
        let params = tool_params(name, arguments)?;
        self.call_tool_with(&params, RequestOptions::new().with_progress_token())
            .await
    }

    /// Call a tool with explicit options (progress callback, timeouts, `_meta`).
    ///
    /// # Errors
    /// As [`Peer::request`](crate::Peer::request).
    pub async fn call_tool_with(
        &self,
        params: &CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult, SessionError> {
        self.prefetch_tools_for_check();
        let result = self.era().call_tool(self, params, options).await?;
        self.check_output(&params.name, &result).await?;
        Ok(result)
    }

    /// Call a tool and read its result as `T`: from `structuredContent`, or else from
    /// the first text block parsed as JSON.
    ///
    /// # Errors
    /// [`ToolCallError::Failed`] when the tool reports `isError`,
    /// [`ToolCallError::UnexpectedOutput`] when the result is not a `T`, and
    /// [`ToolCallError::Session`] as [`call_tool`](Self::call_tool).
    pub async fn call_tool_typed<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<T, ToolCallError> {
        let arguments = serde_json::to_value(arguments).map_err(|e| SessionError::Codec {
            method: method::TOOLS_CALL.into(),
            detail: format!("arguments do not serialize: {e}"),
        })?;
        let result = self.call_tool(name, arguments).await?;
        let text = || {
            result
                .content
                .iter()
                .find_map(|c| c.as_text())
                .unwrap_or_default()
                .to_owned()
        };
        if result.is_error() {
            return Err(ToolCallError::Failed {
                tool: name.to_owned(),
                message: text(),
            });
        }
        let value = match &result.structured_content {
            Some(value) => value.clone(),
            None => serde_json::from_str(&text()).map_err(|e| ToolCallError::UnexpectedOutput {
                tool: name.to_owned(),
                detail: format!("no structuredContent, and its text is not JSON: {e}"),
            })?,
        };
        let wrapped = match &value {
            serde_json::Value::Object(map) if map.len() == 1 => map.get("result").cloned(),
            _ => None,
        };
        serde_json::from_value(value).or_else(|e| {
            // A non-object value travels as `{"result": value}`.
            wrapped
                .and_then(|inner| serde_json::from_value(inner).ok())
                .ok_or_else(|| ToolCallError::UnexpectedOutput {
                    tool: name.to_owned(),
                    detail: format!("a value that does not fit the requested type: {e}"),
                })
        })
    }

    /// Start a tool call and read its progress as a stream
    /// ([`PendingRequest::next_event`](crate::session::PendingRequest::next_event)).
    ///
    /// # Errors
    /// As [`Peer::send_request`](crate::Peer::send_request).
    pub async fn start_call_tool(
        &self,
        params: &CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<crate::session::PendingRequest, SessionError> {
        let raw = to_raw(method::TOOLS_CALL, params)?;
        let options = self
            .era()
            .mirror(self, methods::CallTool::mirrored(params), options)
            .subject(Some(&params.name));
        self.peer
            .send_request(method::TOOLS_CALL, Some(raw), options.with_progress_token())
            .await
    }
}

/// The params of a call of tool `name` with `arguments` (a JSON object, or null for none).
pub(super) fn tool_params(
    name: &str,
    arguments: serde_json::Value,
) -> Result<CallToolRequestParams, SessionError> {
    let mut params = CallToolRequestParams::new(name);
    params.arguments = match arguments {
        serde_json::Value::Object(map) => Some(map),
        serde_json::Value::Null => None,
        other => {
            return Err(SessionError::Codec {
                method: method::TOOLS_CALL.into(),
                detail: format!("tool arguments must be a JSON object, not {other}"),
            });
        }
    };
    Ok(params)
}
