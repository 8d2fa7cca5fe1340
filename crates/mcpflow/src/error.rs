//! Errors, one type per layer: [`TransportError`] (bytes could not move),
//! [`SessionError`] (a request did not complete) and the [`CloseReason`] every pending
//! request carries when a connection ends.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcpflow_protocol::ErrorObject;

/// The transport could not move bytes.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// An I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The underlying error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A child process could not be started.
    #[error(
        "could not start `{command}`: {source}; check that the command exists and is executable"
    )]
    Spawn {
        /// The command line.
        command: String,
        /// The underlying error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The child process exited (or closed its stdin or stdout) while the connection
    /// was open.
    // "Ended the connection" holds for a closed pipe too, where the process still runs.
    #[error("server process ended the connection ({status}){}", stderr_suffix(.stderr_tail))]
    ProcessExited {
        /// The exit status as text (`exit status: 3`, `signal: 9 (SIGKILL)`, or
        /// `still running, but it closed its stdin` when only a pipe was closed).
        status: String,
        /// The last lines the process wrote to stderr.
        stderr_tail: String,
    },
    /// A frame could not be resynchronised (e.g. an oversized frame on a transport that
    /// cannot skip to the next message boundary).
    #[error("framing error: {0}")]
    Framing(String),
    /// An HTTP exchange failed: an error status, a dropped or idle event stream, or
    /// exhausted reconnects. `status` is the HTTP status when one was received.
    #[error("HTTP {context}: {detail}{}", http_status_suffix(*.status))]
    Http {
        /// What was being done (`POST`, `GET stream`, `reconnect`).
        context: &'static str,
        /// The status code, when the server answered.
        status: Option<u16>,
        /// What happened, with the start of the response body where there was one.
        detail: String,
    },
}

fn http_status_suffix(status: Option<u16>) -> String {
    status.map(|s| format!(" (status {s})")).unwrap_or_default()
}

fn stderr_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        "; it wrote nothing to stderr".to_owned()
    } else {
        format!("; last stderr lines:\n{}", tail.trim_end())
    }
}

impl TransportError {
    /// Wrap an I/O error with what was being done.
    pub fn io(context: &'static str, source: std::io::Error) -> Self {
        TransportError::Io {
            context,
            source: Arc::new(source),
        }
    }
}

/// Why a connection ended. Every request pending at that moment fails with it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CloseReason {
    /// The peer closed its end (end of stream) without an error.
    PeerClosed,
    /// The transport failed.
    Transport(TransportError),
    /// This side called `close()` or dropped the connection.
    ClosedLocally,
    /// A task of the connection's engine (its reader or its request timer) ended
    /// unexpectedly, by a panic that was logged where it happened.
    EngineStopped(&'static str),
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::PeerClosed => f.write_str("the peer closed the connection"),
            CloseReason::Transport(e) => write!(f, "{e}"),
            CloseReason::ClosedLocally => f.write_str("the connection was closed by this side"),
            CloseReason::EngineStopped(task) => {
                write!(
                    f,
                    "the connection's {task} stopped unexpectedly (see the log)"
                )
            }
        }
    }
}

/// A request to the peer did not produce a result.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The peer answered with a JSON-RPC error.
    #[error("`{method}` failed: {error}")]
    Rejected {
        /// The method that was called.
        method: Box<str>,
        /// The peer's error.
        error: ErrorObject,
    },
    /// Neither a result nor progress arrived in time; `notifications/cancelled` was sent
    /// (except for `initialize`, which must never be cancelled).
    #[error(
        "`{method}` got no answer or progress in {after:?}; raise the request timeout \
         (RequestOptions::timeout or SessionConfig::request_timeout) or have the server report progress"
    )]
    Timeout {
        /// The method that was called.
        method: Box<str>,
        /// How long the request waited.
        after: Duration,
    },
    /// The request ran past its maximum total time although progress kept arriving.
    #[error(
        "`{method}` ran past its maximum total time of {after:?}; raise \
         RequestOptions::max_total or SessionConfig::max_request_timeout"
    )]
    MaxTotalExceeded {
        /// The method that was called.
        method: Box<str>,
        /// The cap that was hit.
        after: Duration,
    },
    /// The connection ended before the answer arrived.
    #[error("`{method}` could not complete: {reason}")]
    Closed {
        /// The method that was called.
        method: Box<str>,
        /// Why the connection ended.
        reason: CloseReason,
    },
    /// The transport could not deliver this one request or its answer (an HTTP error
    /// status, a response stream that ended early); the connection itself stays open.
    #[error("`{method}` failed in transport: {error}")]
    Transport {
        /// The method that was called.
        method: Box<str>,
        /// What went wrong.
        error: TransportError,
    },
    /// The params could not be serialized, or the result did not have the expected shape.
    #[error("`{method}`: {detail}")]
    Codec {
        /// The method that was called.
        method: Box<str>,
        /// What did not fit.
        detail: String,
    },
    /// A tool's result does not match the `outputSchema` the tool declares: its
    /// `structuredContent` breaks the schema at `path`, or is missing (`path` is empty).
    #[error(
        "tool `{tool}` returned output that does not match its outputSchema{}: {detail}",
        at_path(path)
    )]
    InvalidToolOutput {
        /// The tool's name.
        tool: String,
        /// JSON Pointer into `structuredContent` of the first violation (`""` for the
        /// whole value).
        path: String,
        /// What is wrong there (every violation found, up to five).
        detail: String,
    },
}

fn at_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at `{path}`")
    }
}

impl SessionError {
    /// The peer's JSON-RPC error, when the peer rejected the request.
    pub fn rejection(&self) -> Option<&ErrorObject> {
        match self {
            SessionError::Rejected { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The URL elicitations the peer requires first, when it answered `-32042`
    /// (2025-11-25): open each URL for the user, wait for
    /// `notifications/elicitation/complete`, then retry.
    pub fn url_elicitation_required(&self) -> Option<mcpflow_protocol::UrlElicitationRequired> {
        mcpflow_protocol::UrlElicitationRequired::from_error(self.rejection()?)
    }

    /// Whether the connection has ended (no further request can succeed).
    pub fn is_closed(&self) -> bool {
        matches!(self, SessionError::Closed { .. })
    }
}
