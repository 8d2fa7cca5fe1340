//! The `http` transport (streamable HTTP). The server is a child process of this binary
//! (`serve <system> --http`) listening on `127.0.0.1` at a port the system picks; it
//! prints its endpoint's URL as one line on stdout and serves until its stdin closes.
//! With `MCPFLOW_BENCH_SERVE_UNDER` set (e.g. `valgrind --tool=callgrind`), the server
//! runs under that command.

use std::io::Write as _;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use mcpflow::http::server::HttpServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::{baseline_http, mcpflow_sys, rmcp_sys};

/// Where every HTTP server listens (port 0: the system picks one).
const ADDR: &str = "127.0.0.1:0";
/// Longest wait for a server process to print its URL (long enough for valgrind).
const URL_WAIT: Duration = Duration::from_secs(60);
/// A command line to run the server under, split at whitespace.
const SERVE_UNDER: &str = "MCPFLOW_BENCH_SERVE_UNDER";

/// A server process and its endpoint.
pub struct HttpChild {
    /// The process; it ends when its stdin closes, and is killed when dropped.
    pub child: tokio::process::Child,
    /// Its pid, for RSS figures.
    pub pid: Option<u32>,
    /// Its endpoint, e.g. `http://127.0.0.1:40000/mcp`.
    pub url: String,
}

/// Start `serve <system> --http` and read the URL it prints.
pub async fn spawn_server(system: &str) -> Result<HttpChild, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let under = std::env::var(SERVE_UNDER).unwrap_or_default();
    let mut words = under.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut command = tokio::process::Command::new(program);
            command.args(words).arg(exe);
            command
        }
        None => tokio::process::Command::new(exe),
    };
    let mut child = command
        .args(["serve", system, "--http"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawning the {system} HTTP server: {e}"))?;
    let pid = child.id();
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| "the server's stdout is missing".to_owned())?;
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    match tokio::time::timeout(URL_WAIT, reader.read_line(&mut line)).await {
        Ok(Ok(0)) => return Err("the server exited before printing its URL".to_owned()),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(format!("reading the server's URL: {e}")),
        Err(_) => {
            return Err(format!(
                "the server printed no URL within {} s",
                URL_WAIT.as_secs()
            ));
        }
    }
    child.stdout = Some(reader.into_inner());
    let url = line.trim().to_owned();
    if !url.starts_with("http://") {
        return Err(format!("the server printed {url:?}, not a URL"));
    }
    Ok(HttpChild { child, pid, url })
}

/// Serve the benchmark tools over HTTP as `system` until stdin closes.
pub async fn serve(system: &str) -> i32 {
    let served = match system {
        "mcpflow" | "mcpflow-2026" => serve_mcpflow().await,
        // rmcp as its examples serve it (axum's defaults); the baseline, the floor, with
        // TCP_NODELAY as mcpflow's server sets it.
        "rmcp" => serve_router(rmcp_router(), false).await,
        "baseline" => serve_router(baseline_http::router(), true).await,
        other => Err(format!("no {other} server over http")),
    };
    match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mcpflow-bench serve {system} --http: {e}");
            1
        }
    }
}

/// rmcp's streamable HTTP service with its in-memory sessions, at `/mcp`.
fn rmcp_router() -> Router {
    let service = StreamableHttpService::new(
        || Ok(rmcp_sys::RmcpServer::default()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    Router::new().route_service("/mcp", service)
}

async fn serve_mcpflow() -> Result<(), String> {
    let running = HttpServer::new(mcpflow_sys::server())
        .bind(ADDR)
        .await
        .map_err(|e| format!("binding {ADDR}: {e}"))?;
    announce(&running.url())?;
    tokio::select! {
        () = running.wait() => {}
        () = stdin_closed() => {}
    }
    Ok(())
}

async fn serve_router(router: Router, nodelay: bool) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(ADDR)
        .await
        .map_err(|e| format!("binding {ADDR}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("reading the bound address: {e}"))?;
    announce(&format!("http://{addr}/mcp"))?;
    let listener = axum::serve::ListenerExt::tap_io(listener, move |stream| {
        if nodelay {
            let _ = stream.set_nodelay(true);
        }
    });
    tokio::select! {
        served = axum::serve(listener, router) => served.map_err(|e| e.to_string()),
        () = stdin_closed() => Ok(()),
    }
}

fn announce(url: &str) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{url}")
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("printing the URL: {e}"))
}

async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 256];
    while let Ok(n) = stdin.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}
