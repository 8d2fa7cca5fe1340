//! The flags every verb that talks to a server shares: where the server is, how to
//! reach it, what the client declares, and how to print.

use std::path::PathBuf;

/// The exit codes, shown under `--help` and in the README.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0    ok
  1    the tool returned a result with isError: true
  2    usage: bad flags, a bad --url, bad JSON arguments
  3    connection or protocol failure (server unreachable, exited, timed out)
  4    the server answered with a JSON-RPC error (unknown tool, invalid params)
  130  interrupted (Ctrl-C)";

/// Where the server is and how to talk to it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServerArgs {
    /// The URL of a streamable HTTP (or legacy SSE) server, e.g.
    /// `http://127.0.0.1:3000/mcp` or `https://example.com/mcp`.
    #[arg(long, value_name = "URL", help_heading = "Server")]
    pub url: Option<String>,
    /// Send this HTTP header with every request to `--url` (repeatable), e.g.
    /// `--header 'Authorization: Bearer abc'`.
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME: VALUE",
        help_heading = "Server"
    )]
    pub headers: Vec<String>,
    /// Send `Authorization: Bearer <token>` with the token read from this environment
    /// variable (keeps the token out of the process list and shell history).
    #[arg(long, value_name = "VAR", help_heading = "Server")]
    pub bearer_env: Option<String>,
    /// An `mcpServers` file (Claude Desktop, Cursor, VS Code `mcp.json`); pick the
    /// server with `--server`. `call` without `--server` calls a tool by its name in
    /// the catalog of every server in the file (see `mcpflow host`).
    #[arg(long, value_name = "FILE", help_heading = "Server")]
    pub config: Option<PathBuf>,
    /// The server's name in the `--config` file.
    #[arg(
        long,
        value_name = "NAME",
        requires = "config",
        help_heading = "Server"
    )]
    pub server: Option<String>,
    /// Set an environment variable for the server command (repeatable).
    #[arg(
        short = 'e',
        long = "env",
        value_name = "KEY=VALUE",
        help_heading = "Server"
    )]
    pub env: Vec<String>,
    /// Start the server command with only the -e/--env variables, none of this shell's
    /// (the command is still found in this shell's PATH).
    #[arg(long, help_heading = "Server")]
    pub env_clear: bool,
    /// Start the server command in this directory.
    #[arg(long, value_name = "DIR", help_heading = "Server")]
    pub cwd: Option<PathBuf>,
    /// Seconds to wait for each answer; progress from the server restarts the wait.
    #[arg(long, default_value_t = 60.0, value_parser = parse_secs, value_name = "SECS")]
    pub timeout: f64,
    /// Print one JSON object on stdout (errors too: `{"error": {...}}`).
    #[arg(long)]
    pub json: bool,
    /// Offer this directory to the server as a root (repeatable; declares `roots`).
    #[arg(
        long = "root",
        value_name = "DIR",
        help_heading = "Client capabilities"
    )]
    pub roots: Vec<PathBuf>,
    /// Answer elicitation requests with this JSON object, or `decline` (declares
    /// `elicitation`).
    #[arg(
        long,
        value_name = "JSON|decline",
        help_heading = "Client capabilities"
    )]
    pub elicitation_response: Option<String>,
    /// Answer sampling requests with this text (declares `sampling`; otherwise they are
    /// refused).
    #[arg(long, value_name = "TEXT", help_heading = "Client capabilities")]
    pub sampling_response: Option<String>,
    #[command(flatten)]
    pub auth: crate::auth::AuthArgs,
    /// Protocol era: `handshake` (`initialize`, 2025-11-25 and older), `per-request`
    /// (2026-07-28 only) or `auto` (probe with `server/discover`, else `initialize`).
    #[arg(long, value_name = "ERA", default_value = "handshake", value_parser = ["handshake", "per-request", "auto"], help_heading = "Server")]
    pub era: String,
    /// The server command and its arguments, after `--` (in place of `--url` or
    /// `--config`).
    #[arg(last = true, value_name = "CMD", help_heading = None)]
    pub command: Vec<String>,
}

/// A positive number of seconds.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// Bytes, or a number with a binary `K`, `M` or `G` suffix (`16M`, `512K`).
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let (digits, unit) = match s.trim().to_ascii_uppercase() {
        t if t.ends_with('K') => (t.trim_end_matches('K').to_owned(), 1usize << 10),
        t if t.ends_with('M') => (t.trim_end_matches('M').to_owned(), 1 << 20),
        t if t.ends_with('G') => (t.trim_end_matches('G').to_owned(), 1 << 30),
        t => (t, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{s}` is not a size in bytes (like 1048576, 512K or 16M)"))
}
