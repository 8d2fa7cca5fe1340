//! `mcpflow`: demo the SDK, serve the conformance "everything" server, and inspect or
//! call any MCP server started as a child process.
//!
//! Logs go to stderr only (stdout carries the protocol under `serve`). Set `RUST_LOG`
//! (e.g. `RUST_LOG=debug`) for more.

mod demo;
mod everything;
mod remote;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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

/// Serve over streamable HTTP until the process is stopped.
async fn serve_http(server: mcpflow::server::Server, addr: &str) -> u8 {
    match mcpflow::http::server::HttpServer::new(server)
        .bind(addr)
        .await
    {
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
            Command::Serve { server, http } => {
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
                    Some(addr) => serve_http(server, &addr).await,
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
