//! `mcpflow`: demo the SDK, serve the conformance "everything" server, and inspect or
//! call any MCP server started as a child process.
//!
//! Logs go to stderr only (stdout carries the protocol under `serve`). Set `RUST_LOG`
//! (e.g. `RUST_LOG=debug`) for more.

mod demo;
mod everything;
mod features;
mod remote;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcpflow::http::server::HttpServer;

/// Exit code: the tool returned `isError: true`.
pub const EXIT_TOOL_ERROR: u8 = 1;
/// Exit code: bad usage (clap's own usage errors also exit 2).
pub const EXIT_USAGE: u8 = 2;
/// Exit code: connection or protocol failure.
pub const EXIT_CONNECTION: u8 = 3;

#[derive(Debug, Parser)]
#[command(
    name = "mcpflow",
    version,
    about = "Model Context Protocol tools built on the mcpflow SDK"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an in-process server and client and narrate progress, list_changed,
    /// sampling and cancellation.
    Demo,
    /// Serve a built-in server over stdio, or over streamable HTTP with `--http`.
    Serve {
        #[command(subcommand)]
        server: ServeWhat,
        /// Serve streamable HTTP on this address (e.g. `127.0.0.1:3000`; the endpoint is
        /// `/mcp`) instead of stdio.
        #[arg(long, global = true, value_name = "ADDR")]
        http: Option<String>,
        #[command(flatten)]
        limits: HttpLimits,
    },
    /// Start a server as a child process (or reach one with `--url`) and describe it.
    Inspect {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Seconds to wait for each request.
        #[arg(long, default_value_t = 60.0, value_parser = parse_secs)]
        timeout: f64,
        /// The URL of a streamable HTTP server (e.g. `http://127.0.0.1:3000/mcp`), in
        /// place of a command.
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// The server command and its arguments (after `--`).
        #[arg(last = true, required_unless_present = "url", value_name = "CMD")]
        command: Vec<String>,
    },
    /// Start a server as a child process (or reach one with `--url`) and call one tool.
    Call {
        /// Print `{"result": ..., "notifications": {...}}` instead of text.
        #[arg(long)]
        json: bool,
        /// Seconds to wait without an answer or progress.
        #[arg(long, default_value_t = 60.0, value_parser = parse_secs)]
        timeout: f64,
        /// Answer sampling requests with this text (otherwise they are refused).
        #[arg(long, value_name = "TEXT")]
        sampling_response: Option<String>,
        /// The tool to call.
        tool: String,
        /// The tool's arguments as a JSON object (default `{}`).
        args_json: Option<String>,
        /// The URL of a streamable HTTP server (e.g. `http://127.0.0.1:3000/mcp`), in
        /// place of a command.
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// The server command and its arguments (after `--`).
        #[arg(last = true, required_unless_present = "url", value_name = "CMD")]
        command: Vec<String>,
    },
}

/// The limits of `serve --http` (the defaults are `HttpServer`'s, see
/// `docs/deployment.md`).
#[derive(Debug, Default, clap::Args)]
struct HttpLimits {
    /// At most this many sessions; at the cap, idle sessions are evicted (default 10000).
    #[arg(long, global = true, value_name = "N")]
    max_sessions: Option<usize>,
    /// End a session idle for this many seconds (default 1800).
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_secs)]
    session_idle_timeout: Option<f64>,
    /// Refuse request bodies over this size: bytes, or with K, M or G (default 16M).
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_bytes)]
    max_body_bytes: Option<usize>,
    /// Serve at most this many connections at once (default: 7/8 of the open-file
    /// limit, at most 10000).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: Option<u32>,
    /// Close a connection whose request headers take longer than this (default 20).
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_secs)]
    header_timeout: Option<f64>,
    /// Refuse a request whose body takes longer than this to arrive (default 30).
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_secs)]
    body_timeout: Option<f64>,
    /// Close a connection whose client takes no data for this long (default 30).
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_secs)]
    write_timeout: Option<f64>,
}

impl HttpLimits {
    fn is_set(&self) -> bool {
        self.max_sessions.is_some()
            || self.session_idle_timeout.is_some()
            || self.max_body_bytes.is_some()
            || self.max_connections.is_some()
            || self.header_timeout.is_some()
            || self.body_timeout.is_some()
            || self.write_timeout.is_some()
    }

    fn apply(&self, mut server: HttpServer) -> HttpServer {
        let secs = Duration::from_secs_f64;
        if let Some(n) = self.max_sessions {
            server = server.max_sessions(n);
        }
        if let Some(t) = self.session_idle_timeout {
            server = server.session_idle_timeout(secs(t));
        }
        if let Some(n) = self.max_body_bytes {
            server = server.max_body_bytes(n);
        }
        if let Some(n) = self.max_connections {
            server = server.max_connections(n as usize);
        }
        if let Some(t) = self.header_timeout {
            server = server.header_timeout(secs(t));
        }
        if let Some(t) = self.body_timeout {
            server = server.body_timeout(secs(t));
        }
        if let Some(t) = self.write_timeout {
            server = server.write_timeout(secs(t));
        }
        server
    }
}

#[derive(Debug, Subcommand)]
enum ServeWhat {
    /// The conformance suite's "everything" server.
    Everything,
    /// The demo's server: progress with logs, a tool that adds a tool mid-call
    /// (`tools/list_changed`), sampling during a call, a slow tool to cancel.
    Demo,
}

fn target(url: Option<String>, command: Vec<String>) -> remote::Target {
    match url {
        Some(url) => remote::Target::Url(url),
        None => remote::Target::Command(command),
    }
}

/// Serve over streamable HTTP until the process is stopped, with the open-file limit
/// raised first (each connection is a file).
async fn serve_http(server: mcpflow::server::Server, addr: &str, limits: &HttpLimits) -> u8 {
    #[cfg(unix)]
    match mcpflow::http::server::raise_open_file_limit() {
        Ok(n) => tracing::debug!(open_files = n, "raised the open-file limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit"),
    }
    match limits.apply(HttpServer::new(server)).bind(addr).await {
        Ok(running) => {
            eprintln!("mcpflow: serving MCP at {}", running.url());
            running.wait().await;
            0
        }
        Err(e) => {
            eprintln!("mcpflow: could not listen on {addr}: {e}");
            EXIT_CONNECTION
        }
    }
}

/// Bytes, or a number with a binary `K`, `M` or `G` suffix (`16M`, `512K`).
fn parse_bytes(s: &str) -> Result<usize, String> {
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

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcpflow: could not start the async runtime: {e}");
            return ExitCode::from(EXIT_CONNECTION);
        }
    };
    let code: u8 = runtime.block_on(async {
        match cli.command {
            Command::Demo => match demo::run().await {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("mcpflow demo failed: {e}");
                    1
                }
            },
            Command::Serve {
                server,
                http,
                limits,
            } => {
                if http.is_none() && limits.is_set() {
                    eprintln!("mcpflow: the connection and session limits apply only with --http");
                    return EXIT_USAGE;
                }
                let server = match server {
                    ServeWhat::Everything => everything::everything_server(),
                    ServeWhat::Demo => demo::stdio_demo_server(),
                };
                match http {
                    None => {
                        server
                            .serve(mcpflow::transport::stdio::stdio())
                            .wait()
                            .await;
                        0
                    }
                    Some(addr) => serve_http(server, &addr, &limits).await,
                }
            }
            Command::Inspect {
                json,
                timeout,
                url,
                command,
            } => remote::inspect(&target(url, command), json, timeout).await,
            Command::Call {
                json,
                timeout,
                sampling_response,
                tool,
                args_json,
                url,
                command,
            } => {
                let options = remote::CallOptions {
                    json,
                    timeout,
                    sampling_response,
                };
                remote::call(&tool, args_json.as_deref(), &target(url, command), options).await
            }
        }
    });
    let _ = std::io::stdout().flush();
    // The runtime may be kept alive by a blocking stdin read; leave at once.
    std::process::exit(i32::from(code));
}
