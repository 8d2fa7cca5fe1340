//! Exit codes and errors as a user of the command sees them: one line on stderr naming
//! the cause and the flag that changes it, or `{"error": {...}}` on stdout under `--json`.

use mcpflow::client::ConnectError;
use mcpflow::{CloseReason, SessionError, TransportError};
use serde_json::{Value, json};

/// Exit code: the tool returned `isError: true`.
pub const EXIT_TOOL_ERROR: u8 = 1;
/// Exit code: bad usage (clap's own usage errors also exit 2).
pub const EXIT_USAGE: u8 = 2;
/// Exit code: connection or protocol failure.
pub const EXIT_CONNECTION: u8 = 3;
/// Exit code: the server answered with a JSON-RPC error.
pub const EXIT_RPC_ERROR: u8 = 4;
/// Exit code: interrupted by Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Longest part of a server's text (an HTTP body, a stdout line) quoted in a message.
const QUOTE_MAX: usize = 200;

/// Why a command failed, and the exit code that says so.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The process exit code.
    pub exit: u8,
    /// The JSON-RPC error code, when the server answered with an error.
    pub rpc_code: Option<i64>,
    /// One line (a child's stderr tail may follow on the next lines).
    pub message: String,
    /// The `data` of the server's JSON-RPC error.
    pub data: Option<Value>,
}

impl Failure {
    fn new(exit: u8, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            rpc_code: None,
            message: message.into(),
            data: None,
        }
    }

    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(EXIT_USAGE, message)
    }

    /// A connection or protocol failure (exit 3).
    pub fn connection(message: impl Into<String>) -> Failure {
        Failure::new(EXIT_CONNECTION, message)
    }

    /// Ctrl-C (exit 130).
    pub fn interrupted() -> Failure {
        Failure::new(EXIT_INTERRUPTED, "interrupted")
    }

    /// A failed request, with the flag that changes the outcome where there is one.
    pub fn from_session(error: &SessionError) -> Failure {
        match error {
            SessionError::Rejected { method, error } => Failure {
                exit: EXIT_RPC_ERROR,
                rpc_code: Some(i64::from(error.code.0)),
                message: format!(
                    "the server answered `{method}` with error {}: {}",
                    error.code.0,
                    one_line(&error.message)
                ),
                data: error.data.clone(),
            },
            SessionError::Timeout { method, after } => Failure::connection(format!(
                "`{method}` got no answer or progress in {}; raise --timeout, or check that the server is working",
                secs(*after)
            )),
            SessionError::MaxTotalExceeded { method, after } => Failure::connection(format!(
                "`{method}` ran past the longest total time of {} although progress kept arriving",
                secs(*after)
            )),
            SessionError::Closed { method, reason } => Failure::connection(format!(
                "`{method}` could not complete: {}",
                close_reason(reason)
            )),
            SessionError::Transport { method, error } => {
                Failure::connection(format!("`{method}`: {}", transport(error)))
            }
            SessionError::Codec { method, detail } => Failure::connection(format!(
                "`{method}`: the server's answer is not valid MCP: {}",
                one_line(detail)
            )),
            other => Failure::connection(one_line(&other.to_string())),
        }
    }

    /// A failed handshake with `target`.
    pub fn from_connect(error: &ConnectError, target: &str) -> Failure {
        match error {
            ConnectError::Initialize(e) => {
                let mut failure = Failure::from_session(e);
                failure.message = match e {
                    SessionError::Closed { reason, .. } => {
                        format!("could not connect to {target}: {}", close_reason(reason))
                    }
                    SessionError::Transport { error, .. } => {
                        format!("could not connect to {target}: {}", transport(error))
                    }
                    _ => format!("could not connect to {target}: {}", failure.message),
                };
                failure
            }
            other => Failure::connection(format!(
                "could not connect to {target}: {}",
                one_line(&other.to_string())
            )),
        }
    }

    /// Add a likely cause to the message.
    pub fn with_cause(mut self, cause: Option<String>) -> Failure {
        if let Some(cause) = cause {
            self.message = format!("{}; {cause}", self.message);
        }
        self
    }

    /// Print the failure (stderr, or JSON on stdout) and return its exit code.
    pub fn report(&self, json_out: bool) -> u8 {
        if json_out {
            let mut error = json!({
                "code": self.rpc_code.unwrap_or(i64::from(self.exit)),
                "kind": self.kind(),
                "message": self.message,
                "exitCode": self.exit,
            });
            if let Some(data) = &self.data {
                error["data"] = data.clone();
            }
            println!("{}", json!({ "error": error }));
        } else {
            errln!("mcpflow: {}", self.message);
        }
        self.exit
    }

    fn kind(&self) -> &'static str {
        match self.exit {
            EXIT_USAGE => "usage",
            EXIT_RPC_ERROR => "rpc",
            EXIT_INTERRUPTED => "interrupted",
            _ => "connection",
        }
    }
}

fn secs(d: std::time::Duration) -> String {
    format!("{}s", (d.as_secs_f64() * 1000.0).round() / 1000.0)
}

fn close_reason(reason: &CloseReason) -> String {
    match reason {
        CloseReason::Transport(e) => transport(e),
        other => one_line(&other.to_string()),
    }
}

fn transport(error: &TransportError) -> String {
    match error {
        // The exit status on the first line; the child's own words below it.
        TransportError::ProcessExited { .. } => error.to_string(),
        TransportError::Http {
            status: Some(status),
            detail,
            ..
        } => format!("HTTP {status}: {}", one_line(&rpc_message(detail))),
        TransportError::Http { detail, .. } => with_tls_hint(one_line(detail), detail),
        other => one_line(&other.to_string()),
    }
}

/// `line`, with how to trust a private certificate authority when `detail` says the
/// server's certificate was issued by one the system does not know.
fn with_tls_hint(line: String, detail: &str) -> String {
    let lower = detail.to_ascii_lowercase();
    if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        format!(
            "{line}; to trust a private certificate authority, set SSL_CERT_FILE to its PEM file"
        )
    } else {
        line
    }
}

/// `detail` with a JSON-RPC error body replaced by the error's message.
fn rpc_message(detail: &str) -> String {
    let Some(at) = detail.find('{') else {
        return detail.to_owned();
    };
    match serde_json::from_str::<Value>(&detail[at..]) {
        Ok(body) => match body["error"]["message"].as_str() {
            Some(message) => format!("{}{message}", &detail[..at]),
            None => detail.to_owned(),
        },
        Err(_) => detail.to_owned(),
    }
}

/// `text` on one line: markup tags dropped, whitespace runs made one space, cut to
/// [`QUOTE_MAX`] characters.
pub fn one_line(text: &str) -> String {
    let mut plain = String::with_capacity(text.len().min(4 * QUOTE_MAX));
    let looks_like_markup = text.contains("</") || text.contains("<!");
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' if looks_like_markup => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                plain.push(' ');
            }
            _ if in_tag => {}
            c => plain.push(c),
        }
    }
    let words: Vec<&str> = plain.split_whitespace().collect();
    cut(&words.join(" "), QUOTE_MAX)
}

/// At most `max` characters of `text`, with `…` when cut: at the end of a word when
/// one ends in the last quarter of what is kept, so no word is left half-shown.
pub fn cut(text: &str, max: usize) -> String {
    let Some((at, _)) = text.char_indices().nth(max) else {
        return text.to_owned();
    };
    let kept = &text[..at];
    let mid_word = !text[at..].starts_with(char::is_whitespace);
    let word_end = kept
        .rfind(char::is_whitespace)
        .filter(|&space| mid_word && space >= kept.len() * 3 / 4);
    match word_end {
        Some(space) => format!("{}…", kept[..space].trim_end()),
        None => format!("{kept}…"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_html_page_becomes_one_short_line() {
        let page = "<!DOCTYPE HTML>\n<html>\n<head><title>Error response</title></head>\n<body>\n<h1>Error response</h1>\n<p>Error code: 501</p>\n</body>\n</html>\n";
        assert_eq!(
            one_line(page),
            "Error response Error response Error code: 501"
        );
        let long = "x".repeat(1000);
        assert_eq!(one_line(&long).chars().count(), QUOTE_MAX + 1);
    }

    #[test]
    fn a_json_rpc_error_body_is_cut_to_its_message() {
        let detail = r#"the server rejected `initialize`: {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Host `x` is not allowed"}}"#;
        assert_eq!(
            rpc_message(detail),
            "the server rejected `initialize`: Host `x` is not allowed"
        );
        assert_eq!(rpc_message("plain {not json"), "plain {not json");
    }

    #[test]
    fn a_cut_ends_at_a_word_when_it_can() {
        assert_eq!(cut("connection refused by peer", 13), "connection…");
        assert_eq!(cut("connection refused", 10), "connection…");
        assert_eq!(cut("abcdefghijklmnop", 5), "abcde…");
        assert_eq!(cut("short", 10), "short");
    }

    #[test]
    fn comparisons_are_not_taken_for_markup() {
        assert_eq!(one_line("a < b and c > d"), "a < b and c > d");
    }
}
