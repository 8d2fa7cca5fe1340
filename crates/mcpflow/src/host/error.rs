//! Why a call through the host did not give a result, in words a model can act on.
//!
//! Every variant names the tool and server and keeps the server's own words; none is
//! masked. [`HostError::to_model_text`] is what an agent loop should hand the model as
//! the tool result when a call fails.

use std::time::Duration;

use mcpflow_protocol::CallToolResult;

use crate::error::SessionError;

/// Which deadline a timed-out call ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutPhase {
    /// Waiting for a free slot under the server's in-flight limit.
    Queued,
    /// No answer and no progress for this long.
    Idle,
    /// The total cap, although progress kept arriving.
    Total,
}

/// A call through the [`ToolHost`](super::ToolHost) failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The tool ran and reported a failure (`isError: true`); `result` holds its content.
    #[error(
        "tool `{tool}` on server `{server}` reported an error: {}",
        content_text(result)
    )]
    ToolFailed {
        /// The catalog name.
        tool: String,
        /// The server.
        server: String,
        /// The tool's result, as the server sent it.
        result: Box<CallToolResult>,
    },
    /// The call ran past a deadline; `notifications/cancelled` was sent.
    #[error("tool `{tool}` on server `{server}` timed out after {after:?} ({}); it was cancelled",
        match phase {
            TimeoutPhase::Queued => "waiting for a free slot under the server's in-flight limit",
            TimeoutPhase::Idle => "no answer and no progress",
            TimeoutPhase::Total => "its maximum total time, although it reported progress",
        })]
    Timeout {
        /// The catalog name.
        tool: String,
        /// The server.
        server: String,
        /// Which deadline.
        phase: TimeoutPhase,
        /// The deadline's length.
        after: Duration,
    },
    /// The caller cancelled the call (or the host closed); `notifications/cancelled` was sent.
    #[error("tool `{tool}` was cancelled: {reason}")]
    Cancelled {
        /// The catalog name.
        tool: String,
        /// Why.
        reason: String,
    },
    /// The server is not connected now.
    #[error("server `{server}` is unavailable: {cause}{}", retry_text(*retry_in))]
    ServerUnavailable {
        /// The server.
        server: String,
        /// Why it is not connected.
        cause: String,
        /// When the next connection attempt starts, if one is planned.
        retry_in: Option<Duration>,
    },
    /// No tool of that name is offered.
    #[error("no tool named `{name}` is offered; the tools are: {}", available.join(", "))]
    ToolNotFound {
        /// The name asked for.
        name: String,
        /// The catalog names that exist.
        available: Vec<String>,
    },
    /// Two servers offer a tool under this name and the collision policy is `Error`.
    #[error("`{name}` is ambiguous: servers {} all offer it; configure a naming or collision policy", servers.join(", "))]
    Ambiguous {
        /// The name asked for.
        name: String,
        /// The servers that offer it.
        servers: Vec<String>,
    },
    /// The arguments do not match the tool's `inputSchema`; the call was not sent.
    #[error("the arguments for `{tool}` do not match its input schema: {detail}")]
    InvalidArguments {
        /// The catalog name.
        tool: String,
        /// Every violation found (up to five), with its JSON Pointer.
        detail: String,
    },
    /// The approval hook refused the call; it was not sent.
    #[error("the call to `{tool}` was not approved: {reason}")]
    Denied {
        /// The catalog name.
        tool: String,
        /// The hook's reason.
        reason: String,
    },
    /// The server answered with a JSON-RPC error, an answer of the wrong shape, or
    /// output that breaks the tool's `outputSchema`.
    #[error("tool `{tool}` on server `{server}`: {error}")]
    Protocol {
        /// The catalog name.
        tool: String,
        /// The server.
        server: String,
        /// The client's error.
        error: Box<SessionError>,
    },
    /// The host is closed: no call is accepted.
    #[error("the tool host is closed")]
    Closed,
}

fn content_text(result: &CallToolResult) -> String {
    let text: Vec<String> = result
        .content
        .iter()
        .map(|block| match block.as_text() {
            Some(text) => text.to_owned(),
            None => serde_json::to_string(block).unwrap_or_default(),
        })
        .collect();
    if text.is_empty() {
        "(no content)".to_owned()
    } else {
        text.join("\n")
    }
}

fn retry_text(retry_in: Option<Duration>) -> String {
    match retry_in {
        Some(d) => format!("; reconnecting in {:.1} s", d.as_secs_f64()),
        None => String::new(),
    }
}

impl HostError {
    /// The `error.type` of the call's span: a low-cardinality name of the variant.
    pub(crate) fn error_type(&self) -> &'static str {
        match self {
            HostError::ToolFailed { .. } => "tool_error",
            HostError::Timeout { .. } => "timeout",
            HostError::Cancelled { .. } => "cancelled",
            HostError::ServerUnavailable { .. } => "server_unavailable",
            HostError::ToolNotFound { .. } => "tool_not_found",
            HostError::Ambiguous { .. } => "ambiguous",
            HostError::InvalidArguments { .. } => "invalid_arguments",
            HostError::Denied { .. } => "denied",
            HostError::Protocol { .. } => "protocol",
            HostError::Closed => "closed",
        }
    }

    /// The text to give a model as the failed call's result: what happened, in the
    /// server's words, and what the model can do about it.
    pub fn to_model_text(&self) -> String {
        let advice = match self {
            HostError::ToolFailed { .. } => "",
            HostError::Timeout { .. } => {
                " Try again with a smaller request, or tell the user the tool is slow."
            }
            HostError::Cancelled { .. } => "",
            HostError::ServerUnavailable {
                retry_in: Some(_), ..
            } => " Try again after the reconnect, or use another tool.",
            HostError::ServerUnavailable { .. } => " Use another tool.",
            HostError::ToolNotFound { .. } => " Call one of the tools listed.",
            HostError::Ambiguous { .. } => " Tell the user the tool configuration has a clash.",
            HostError::InvalidArguments { .. } => " Fix the arguments and call again.",
            HostError::Denied { .. } => " Do not retry this call.",
            HostError::Protocol { .. } | HostError::Closed => "",
        };
        format!("Error: {self}.{advice}")
    }

    /// Whether the call provably never reached the server (so retrying it cannot run
    /// the tool twice).
    pub fn never_sent(&self) -> bool {
        matches!(
            self,
            HostError::ServerUnavailable { .. }
                | HostError::ToolNotFound { .. }
                | HostError::Ambiguous { .. }
                | HostError::InvalidArguments { .. }
                | HostError::Denied { .. }
                | HostError::Closed
        ) || matches!(
            self,
            HostError::Timeout {
                phase: TimeoutPhase::Queued,
                ..
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_text_keeps_the_servers_words_and_says_what_to_do() {
        let failed = HostError::ToolFailed {
            tool: "files__read".into(),
            server: "files".into(),
            result: Box::new(CallToolResult::error("no such file: a.txt")),
        };
        assert_eq!(
            failed.to_model_text(),
            "Error: tool `files__read` on server `files` reported an error: no such file: a.txt."
        );
        let down = HostError::ServerUnavailable {
            server: "files".into(),
            cause: "the child exited with status 1".into(),
            retry_in: Some(Duration::from_millis(1500)),
        };
        assert!(down.to_model_text().contains("reconnecting in 1.5 s"));
        assert!(down.never_sent());
        let missing = HostError::ToolNotFound {
            name: "x".into(),
            available: vec!["a__y".into(), "b__z".into()],
        };
        assert!(
            missing
                .to_model_text()
                .contains("the tools are: a__y, b__z")
        );
        let timeout = HostError::Timeout {
            tool: "t".into(),
            server: "s".into(),
            phase: TimeoutPhase::Idle,
            after: Duration::from_secs(300),
        };
        assert!(
            timeout
                .to_string()
                .contains("300s (no answer and no progress)")
        );
        assert!(!timeout.never_sent());
    }
}
