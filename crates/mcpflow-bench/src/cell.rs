//! One measurement ("cell"): connect one system over one transport, run one workload,
//! report. The orchestrator runs every cell in a fresh process of this binary, so RSS
//! figures and allocator state never leak from one cell into the next.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcpflow::client::Client as McpflowClient;
use mcpflow::http::client::HttpClientTransport;
use mcpflow::server::RunningServer;
use mcpflow::transport::{ChildProcess, StreamTransport};
use rmcp::ServiceExt;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::common::{BIG_BYTES, DUPLEX_BYTES, ECHO_TEXT, ProgressLog, proc_status_kib};
use crate::layout::Layout;
use crate::{baseline, baseline_http, http, mcpflow_sys, rmcp_sys};

/// How long one workload may run inside a cell before it reports an error.
const CELL_BUDGET: Duration = Duration::from_secs(110);
/// How long closing a connection may take.
const CLOSE_BUDGET: Duration = Duration::from_secs(5);
/// Settling time before reading RSS at rest.
const REST_SETTLE: Duration = Duration::from_millis(200);

/// One JSON line of `--json`; inapplicable fields are null.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Measurement {
    /// `mcpflow`, `mcpflow-2026`, `baseline`, `baseline-pipes`, `rmcp` or `rmcp-pipes`.
    pub system: String,
    /// `memory`, `stdio` or `http`.
    pub transport: String,
    /// `w1`, `w2`, `w3`, `w4` or `rest`.
    pub workload: String,
    /// Who wrote the requests: `sdk` (the system's own client), or the no-SDK client in
    /// `mcpflow`'s or the TypeScript SDK's (`ts`) byte layout.
    #[serde(default = "sdk_layout")]
    pub layout: String,
    /// 1-based round.
    pub round: u32,
    /// Calls per second (W1, W2, W4).
    pub calls_per_s: Option<f64>,
    /// Median call latency (W1).
    pub p50_us: Option<f64>,
    /// 99th percentile call latency (W1).
    pub p99_us: Option<f64>,
    /// Peak RSS (W4): the server process over stdio and http, the whole process in memory.
    pub peak_rss_kib: Option<u64>,
    /// Progress notifications the client had handled when the call returned (W3).
    pub delivered_before_return: Option<u64>,
    /// Wall time of the workload (W3: the one call).
    pub time_ms: Option<f64>,
    /// W3: every notification handled before return, each in order.
    pub in_order: Option<bool>,
    /// RSS at rest after connect (rest): the server process over stdio and http, the whole
    /// process (client and server) in memory.
    pub rss_kib: Option<u64>,
    /// Of `rss_kib`, the anonymous memory (heap, stacks): `RssAnon`. The rest is pages
    /// of this executable, which links every system.
    pub rss_anon_kib: Option<u64>,
    /// Why the cell failed, if it did.
    pub error: Option<String>,
}

fn sdk_layout() -> String {
    Layout::Sdk.name().to_owned()
}

/// Counts of each workload.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// W1 sequential calls.
    pub w1_calls: u64,
    /// W2 calls.
    pub w2_calls: u64,
    /// W2 calls in flight.
    pub w2_in_flight: u64,
    /// W3 progress notifications.
    pub w3_notifications: u64,
    /// W4 calls.
    pub w4_calls: u64,
}

impl Sizes {
    /// Full or `--quick` (about 1/20) sizes.
    pub fn new(quick: bool) -> Sizes {
        let div = if quick { 20 } else { 1 };
        Sizes {
            w1_calls: 20_000 / div,
            w2_calls: 100_000 / div,
            w2_in_flight: 64,
            w3_notifications: 10_000 / div,
            w4_calls: (20 / div).max(1),
        }
    }
}

enum Conn {
    Baseline(baseline::Client),
    BaselineHttp(baseline_http::Client),
    Mcpflow(McpflowClient),
    Rmcp(rmcp_sys::RmcpConn),
}

/// A connected client and what keeps its server alive.
struct Connected {
    conn: Arc<Conn>,
    log: Arc<ProgressLog>,
    server_pid: Option<u32>,
    _server: Option<RunningServer>,
    child: Option<tokio::process::Child>,
}

impl Conn {
    async fn call(
        &self,
        name: &'static str,
        arguments: serde_json::Value,
    ) -> Result<String, String> {
        match self {
            Conn::Baseline(c) => c.call_tool(name, arguments, None).await,
            Conn::BaselineHttp(c) => c.call_tool(name, arguments, None).await,
            Conn::Mcpflow(c) => mcpflow_sys::call(c, name, arguments).await,
            Conn::Rmcp(c) => rmcp_sys::call(c, name, arguments).await,
        }
    }

    async fn echo(&self) -> Result<(), String> {
        let text = self.call("echo", json!({ "text": ECHO_TEXT })).await?;
        if text == ECHO_TEXT {
            Ok(())
        } else {
            Err(format!("echo returned {text:?}"))
        }
    }

    async fn progress(&self, count: u64, log: &Arc<ProgressLog>) -> Result<String, String> {
        match self {
            Conn::Baseline(c) => {
                c.call_tool("progress", json!({ "count": count }), Some(1))
                    .await
            }
            Conn::BaselineHttp(c) => {
                c.call_tool("progress", json!({ "count": count }), Some(1))
                    .await
            }
            Conn::Mcpflow(c) => mcpflow_sys::call_progress(c, count, log.clone()).await,
            Conn::Rmcp(c) => rmcp_sys::call(c, "progress", json!({ "count": count })).await,
        }
    }

    async fn close(self) {
        match self {
            Conn::Baseline(c) => c.close().await,
            Conn::BaselineHttp(c) => c.close().await,
            Conn::Mcpflow(c) => c.close().await,
            Conn::Rmcp(c) => {
                let _ = c.cancel().await;
            }
        }
    }
}

fn current_exe() -> Result<std::path::PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))
}

/// The server of `system` on one end of an in-memory pipe; the other end is returned.
/// A running mcpflow server is returned too, to be kept alive.
fn serve_in_memory(
    system: &str,
) -> Result<(tokio::io::DuplexStream, Option<RunningServer>), String> {
    let (a, b) = tokio::io::duplex(DUPLEX_BYTES);
    let mut running = None;
    match system {
        "baseline" => {
            let (sr, sw) = tokio::io::split(b);
            tokio::spawn(baseline::serve(sr, sw));
        }
        "mcpflow" | "mcpflow-2026" => {
            let (sr, sw) = tokio::io::split(b);
            running = Some(mcpflow_sys::server().serve(StreamTransport::new(sr, sw)));
        }
        "rmcp" => {
            tokio::spawn(async move {
                if let Ok(service) = rmcp_sys::RmcpServer::default().serve(b).await {
                    let _ = service.waiting().await;
                }
            });
        }
        _ => return Err(format!("no {system} server in memory")),
    }
    Ok((a, running))
}

/// `serve <system>` as a child process with piped stdio.
fn spawn_stdio_server(system: &str) -> Result<tokio::process::Child, String> {
    tokio::process::Command::new(current_exe()?)
        .args(["serve", system])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawning the {system} server: {e}"))
}

/// `system`'s server answering the no-SDK client, which writes its requests as `layout`
/// lays them out.
async fn connect_raw(system: &str, transport: &str, layout: Layout) -> Result<Connected, String> {
    let log = Arc::new(ProgressLog::default());
    let progress_log = log.clone();
    let mut server_pid = None;
    let mut server = None;
    let mut child_proc = None;
    let conn = match transport {
        "memory" => {
            let (end, running) = serve_in_memory(system)?;
            server = running;
            let (cr, cw) = tokio::io::split(end);
            Conn::Baseline(baseline::Client::connect(cr, cw, log, layout).await?)
        }
        "stdio" => {
            let mut child = spawn_stdio_server(system)?;
            server_pid = child.id();
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err("the child's pipes are missing".to_owned());
            };
            child_proc = Some(child);
            Conn::Baseline(baseline::Client::connect(stdout, stdin, log, layout).await?)
        }
        "http" => {
            let spawned = http::spawn_server(system).await?;
            server_pid = spawned.pid;
            child_proc = Some(spawned.child);
            Conn::BaselineHttp(baseline_http::Client::connect(spawned.url, log, layout).await?)
        }
        _ => return Err(format!("no transport {transport}")),
    };
    Ok(Connected {
        conn: Arc::new(conn),
        log: progress_log,
        server_pid,
        _server: server,
        child: child_proc,
    })
}

async fn connect(system: &str, transport: &str, layout: Layout) -> Result<Connected, String> {
    if layout != Layout::Sdk || system.starts_with("baseline") {
        return connect_raw(system, transport, layout).await;
    }
    let log = Arc::new(ProgressLog::default());
    let progress_log = log.clone();
    let mut server_pid = None;
    let mut server = None;
    let mut child_proc = None;
    let conn = match (system, transport) {
        ("mcpflow" | "mcpflow-2026", "memory") => {
            let (end, running) = serve_in_memory(system)?;
            server = running;
            let (cr, cw) = tokio::io::split(end);
            let client = mcpflow_sys::client(system)
                .connect(StreamTransport::new(cr, cw))
                .await
                .map_err(|e| e.to_string())?;
            Conn::Mcpflow(client)
        }
        ("mcpflow" | "mcpflow-2026", "stdio") => {
            let child = ChildProcess::builder(current_exe()?)
                .args(["serve", system])
                .spawn()
                .map_err(|e| e.to_string())?;
            server_pid = child.pid();
            let client = mcpflow_sys::client(system)
                .connect(child)
                .await
                .map_err(|e| e.to_string())?;
            Conn::Mcpflow(client)
        }
        ("rmcp", "memory") => {
            let (end, _) = serve_in_memory(system)?;
            let client = rmcp_sys::RmcpClient { log }
                .serve(end)
                .await
                .map_err(|e| e.to_string())?;
            Conn::Rmcp(client)
        }
        ("rmcp" | "rmcp-pipes", "stdio") => {
            let mut command = tokio::process::Command::new(current_exe()?);
            command.args(["serve", system]);
            let process = TokioChildProcess::new(command).map_err(|e| e.to_string())?;
            server_pid = process.id();
            let client = rmcp_sys::RmcpClient { log }
                .serve(process)
                .await
                .map_err(|e| e.to_string())?;
            Conn::Rmcp(client)
        }
        ("mcpflow" | "mcpflow-2026" | "rmcp", "http") => {
            let spawned = http::spawn_server(system).await?;
            server_pid = spawned.pid;
            child_proc = Some(spawned.child);
            let url = spawned.url;
            if system != "rmcp" {
                let transport = HttpClientTransport::new(url).map_err(|e| e.to_string())?;
                let client = mcpflow_sys::client(system)
                    .connect(transport)
                    .await
                    .map_err(|e| e.to_string())?;
                Conn::Mcpflow(client)
            } else {
                let client = rmcp_sys::RmcpClient { log }
                    .serve(StreamableHttpClientTransport::from_uri(url))
                    .await
                    .map_err(|e| e.to_string())?;
                Conn::Rmcp(client)
            }
        }
        _ => return Err(format!("no {system} over {transport}")),
    };
    Ok(Connected {
        conn: Arc::new(conn),
        log: progress_log,
        server_pid,
        _server: server,
        child: child_proc,
    })
}

fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted.get(rank).copied()
}

async fn run_workload(
    connected: &Connected,
    workload: &str,
    sizes: Sizes,
    m: &mut Measurement,
) -> Result<(), String> {
    let conn = &connected.conn;
    match workload {
        "w1" => {
            let mut lat = Vec::with_capacity(sizes.w1_calls as usize);
            let start = Instant::now();
            for _ in 0..sizes.w1_calls {
                let t = Instant::now();
                conn.echo().await?;
                lat.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let secs = start.elapsed().as_secs_f64();
            lat.sort_by(f64::total_cmp);
            m.calls_per_s = Some(sizes.w1_calls as f64 / secs);
            m.p50_us = percentile(&lat, 0.50);
            m.p99_us = percentile(&lat, 0.99);
            m.time_ms = Some(secs * 1e3);
        }
        "w2" => {
            let next = Arc::new(AtomicU64::new(0));
            let start = Instant::now();
            let workers: Vec<_> = (0..sizes.w2_in_flight)
                .map(|_| {
                    let conn = connected.conn.clone();
                    let next = next.clone();
                    tokio::spawn(async move {
                        while next.fetch_add(1, Ordering::Relaxed) < sizes.w2_calls {
                            conn.echo().await?;
                        }
                        Ok::<(), String>(())
                    })
                })
                .collect();
            let mut failure = None;
            for worker in workers {
                match worker.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => failure = Some(e),
                    Err(e) => failure = Some(format!("worker panicked: {e}")),
                }
            }
            if let Some(e) = failure {
                return Err(e);
            }
            let secs = start.elapsed().as_secs_f64();
            m.calls_per_s = Some(sizes.w2_calls as f64 / secs);
            m.time_ms = Some(secs * 1e3);
        }
        "w3" => {
            let n = sizes.w3_notifications;
            let start = Instant::now();
            let text = conn.progress(n, &connected.log).await?;
            let secs = start.elapsed().as_secs_f64();
            let (delivered, disorder) = connected.log.snapshot();
            if text != "done" {
                return Err(format!("progress returned {text:?}"));
            }
            m.time_ms = Some(secs * 1e3);
            m.delivered_before_return = Some(delivered);
            m.in_order = Some(delivered == n && disorder == 0);
        }
        "w4" => {
            let start = Instant::now();
            for _ in 0..sizes.w4_calls {
                let text = conn.call("big", json!({ "bytes": BIG_BYTES })).await?;
                if text.len() != BIG_BYTES {
                    return Err(format!("big returned {} bytes", text.len()));
                }
            }
            let secs = start.elapsed().as_secs_f64();
            m.calls_per_s = Some(sizes.w4_calls as f64 / secs);
            m.time_ms = Some(secs * 1e3);
            m.peak_rss_kib = proc_status_kib(connected.server_pid, "VmHWM");
        }
        "rest" => {
            tokio::time::sleep(REST_SETTLE).await;
            m.rss_kib = proc_status_kib(connected.server_pid, "VmRSS");
            m.rss_anon_kib = proc_status_kib(connected.server_pid, "RssAnon");
        }
        other => return Err(format!("unknown workload {other}")),
    }
    Ok(())
}

/// Run one cell in this process and return its measurement.
pub async fn run_cell(
    system: &str,
    transport: &str,
    workload: &str,
    layout: Layout,
    round: u32,
    sizes: Sizes,
) -> Measurement {
    let mut m = Measurement {
        system: system.to_owned(),
        transport: transport.to_owned(),
        workload: workload.to_owned(),
        layout: layout.name().to_owned(),
        round,
        ..Measurement::default()
    };
    let connected =
        match tokio::time::timeout(Duration::from_secs(30), connect(system, transport, layout))
            .await
        {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                m.error = Some(format!("connect: {e}"));
                return m;
            }
            Err(_) => {
                m.error = Some("connect: timed out after 30 s".to_owned());
                return m;
            }
        };
    let outcome = tokio::time::timeout(
        CELL_BUDGET,
        run_workload(&connected, workload, sizes, &mut m),
    )
    .await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => m.error = Some(e),
        Err(_) => m.error = Some(format!("timed out after {} s", CELL_BUDGET.as_secs())),
    }
    let Connected { conn, child, .. } = connected;
    if let Ok(conn) = Arc::try_unwrap(conn) {
        let _ = tokio::time::timeout(CLOSE_BUDGET, conn.close()).await;
    }
    if let Some(mut child) = child
        && tokio::time::timeout(CLOSE_BUDGET, child.wait())
            .await
            .is_err()
    {
        let _ = child.kill().await;
    }
    m
}
