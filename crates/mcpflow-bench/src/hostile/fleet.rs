//! `mcpflow-bench fleet`: one `mcpflow serve --http` instance against several behind round
//! robin, sharing a `redis-server` this command starts. Each client holds one keep-alive
//! connection to every instance and sends each request to the next one, as a plain
//! load balancer would.
//!
//! - `--era handshake`: per client, initialize, notifications/initialized, `calls` ×
//!   tools/call of `test_simple_text`, DELETE: a session whose requests hop.
//! - `--era 2026-07-28`: per client, `calls` × tools/call of `test_simple_text`, each a
//!   2026-07-28 request standing alone.
//!
//! Reported: calls ok / errors, call latency p50 / p99, calls/s over the wall time, and the
//! Redis commands the run caused (from `INFO commandstats`, before and after), in all and
//! per call, by command. Every instance, Redis and the load share this machine's cores:
//! the core count is printed beside the figures, and on a small machine the figures show
//! what the store costs per call rather than what more instances add.
//!
//! ```sh
//! mcpflow-bench fleet --nodes 1 --era handshake --clients 100 --calls 50
//! mcpflow-bench fleet --nodes 3 --redis --era handshake --clients 1000 --calls 10
//! mcpflow-bench fleet --nodes 3 --redis --era 2026-07-28 --clients 100 --calls 50
//! ```

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::Barrier;

use super::calls::{Era, body, headers};
use super::conn::{Conn, REQUEST_TIMEOUT};
use super::load::{close, gather, open, quantile, request, tool_call};
use super::mcp::wait_ready;
use super::raw::{Rows, millis, tally};

/// The shape of a fleet run.
#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    /// Instances; each request goes to the next one.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Share the instances' state through a redis-server started for the run (on
    /// whenever there is more than one instance).
    #[arg(long)]
    redis: bool,
    /// Which requests: handshake-era sessions, or 2026-07-28 requests.
    #[arg(long, value_enum, default_value = "handshake")]
    era: Era,
    /// Concurrent clients.
    #[arg(long, default_value_t = 100)]
    clients: usize,
    /// Calls per client.
    #[arg(long, default_value_t = 50)]
    calls: usize,
    /// The `mcpflow` command the instances run.
    #[arg(long, default_value = "mcpflow")]
    bin: String,
}

/// The processes of a run, killed when dropped.
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.start_kill();
        }
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Start redis-server without persistence: its port.
async fn start_redis(processes: &mut Processes) -> Result<u16, String> {
    let port = free_port()?;
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("redis-server did not start ({e}): apt-get install redis-server"))?;
    processes.0.push(child);
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if start.elapsed() > Duration::from_secs(10) {
            return Err("redis-server did not accept connections within 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(port)
}

/// The calls each Redis command has had so far (`INFO commandstats`), over a raw
/// connection: this crate has no Redis client.
async fn command_stats(port: u16) -> Result<BTreeMap<String, u64>, String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("redis: {e}"))?;
    stream
        .write_all(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")
        .await
        .map_err(|e| format!("redis: {e}"))?;
    let mut reply = Vec::new();
    let read = async {
        let mut buf = [0u8; 8192];
        loop {
            let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("redis closed the connection".to_owned());
            }
            reply.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&reply);
            if let Some((head, rest)) = text.split_once("\r\n")
                && let Ok(len) = head.trim_start_matches('$').parse::<usize>()
                && rest.len() >= len
            {
                return Ok(());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .map_err(|_| "redis: INFO took over 5 s".to_owned())??;
    let text = String::from_utf8_lossy(&reply);
    Ok(text
        .lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.split(',').find_map(|s| s.strip_prefix("calls="))?;
            Some((name.to_owned(), calls.parse().ok()?))
        })
        .collect())
}

/// What one client saw.
#[derive(Default)]
struct ClientResult {
    calls: Vec<Duration>,
    errors: Vec<String>,
}

/// One client: a connection to every instance, each request on the next one.
async fn one_client(
    urls: Arc<Vec<String>>,
    first: usize,
    args: Arc<Shape>,
    start: Arc<Barrier>,
) -> ClientResult {
    let mut out = ClientResult::default();
    let conns: Result<Vec<Conn>, String> = urls
        .iter()
        .map(|url| Conn::new(url).map(|c| c.with_headers(headers(args.era))))
        .collect();
    start.wait().await;
    let mut conns = match conns {
        Ok(conns) => conns,
        Err(e) => {
            out.errors.push(e);
            return out;
        }
    };
    let n = conns.len();
    let mut turn = first;
    let mut next = move || {
        turn += 1;
        turn % n
    };
    match args.era {
        Era::Handshake => {
            let session = match open(&mut conns[next()]).await {
                Ok((session, _)) => session,
                Err(e) => {
                    out.errors.push(e);
                    return out;
                }
            };
            for i in 0..args.calls {
                let t0 = Instant::now();
                let body = tool_call(i as u64 + 2, "test_simple_text");
                match request(&mut conns[next()], &session, &body).await {
                    Ok(()) => out.calls.push(t0.elapsed()),
                    Err(e) => out.errors.push(format!("tools/call: {e}")),
                }
            }
            if let Err(e) = close(&mut conns[next()], &session).await {
                out.errors.push(e);
            }
        }
        Era::PerRequest => {
            for i in 0..args.calls {
                let t0 = Instant::now();
                let reply = conns[next()]
                    .send("POST", None, Some(&body(args.era, i as u64)))
                    .await;
                match reply {
                    Ok(r)
                        if r.status == 200
                            && r.message().is_some_and(|m| m.get("result").is_some()) =>
                    {
                        out.calls.push(t0.elapsed());
                    }
                    Ok(r) => out.errors.push(r.describe()),
                    Err(e) => out.errors.push(e),
                }
            }
        }
    }
    out
}

struct Shape {
    era: Era,
    calls: usize,
}

/// Run the fleet benchmark: its rows, or why it could not run.
pub async fn run(args: &FleetArgs) -> Result<Rows, String> {
    let nodes = args.nodes.max(1);
    let with_redis = args.redis || nodes > 1;
    let mut processes = Processes(Vec::new());
    let redis = if with_redis {
        Some(start_redis(&mut processes).await?)
    } else {
        None
    };
    let mut urls = Vec::new();
    for _ in 0..nodes {
        let port = free_port()?;
        let mut command = Command::new(&args.bin);
        command.args([
            "serve",
            "everything",
            "--http",
            &format!("127.0.0.1:{port}"),
        ]);
        if let Some(redis) = redis {
            command.args(["--redis", &format!("redis://127.0.0.1:{redis}")]);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{} did not start: {e}", args.bin))?;
        processes.0.push(child);
        let url = format!("http://127.0.0.1:{port}/mcp");
        wait_ready(&url, Duration::from_secs(30)).await?;
        urls.push(url);
    }
    let before = match redis {
        Some(port) => Some(command_stats(port).await?),
        None => None,
    };
    let clients = args.clients.max(1);
    let shape = Arc::new(Shape {
        era: args.era,
        calls: args.calls,
    });
    let urls = Arc::new(urls);
    let start = Arc::new(Barrier::new(clients + 1));
    let tasks: Vec<_> = (0..clients)
        .map(|i| tokio::spawn(one_client(urls.clone(), i, shape.clone(), start.clone())))
        .collect();
    start.wait().await;
    let t0 = Instant::now();
    let (results, lost) = gather(tasks, t0 + REQUEST_TIMEOUT * (args.calls as u32 + 4)).await;
    let wall = t0.elapsed();
    let mut lat: Vec<Duration> = results.iter().flat_map(|r| r.calls.clone()).collect();
    lat.sort();
    let mut rows = Rows::default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    rows.push(
        "run",
        format!(
            "{nodes} instance(s){}, {clients} clients × {} calls ({}), each request to the next instance; {cores} cores for everything",
            if with_redis { " + redis-server" } else { "" },
            args.calls,
            match args.era {
                Era::Handshake => "handshake-era sessions",
                Era::PerRequest => "2026-07-28 requests",
            }
        ),
    );
    let expected = clients * args.calls;
    rows.push(
        "calls ok / errors",
        format!("{} / {}", lat.len(), expected - lat.len()),
    );
    let mut errors: Vec<String> = results.iter().flat_map(|r| r.errors.clone()).collect();
    errors.extend((0..lost).map(|_| "client task lost or over time".to_owned()));
    if !errors.is_empty() {
        rows.push("errors", tally(errors));
    }
    rows.push(
        "call latency p50 / p99",
        format!(
            "{} / {}",
            millis(quantile(&lat, 0.5)),
            millis(quantile(&lat, 0.99))
        ),
    );
    rows.push(
        "calls/s",
        format!(
            "{:.0} ({:.2} s wall, {cores} cores)",
            lat.len() as f64 / wall.as_secs_f64().max(1e-3),
            wall.as_secs_f64()
        ),
    );
    if let (Some(port), Some(before)) = (redis, before) {
        let after = command_stats(port).await?;
        let calls = lat.len().max(1) as f64;
        let mut total = 0;
        let mut by_command = Vec::new();
        for (name, n) in &after {
            let n = n - before.get(name).copied().unwrap_or(0);
            // The statistics' own INFO is not the run's.
            if n == 0 || name == "info" {
                continue;
            }
            total += n;
            by_command.push(format!("{name} {:.2}", n as f64 / calls));
        }
        rows.push(
            "redis commands per call",
            format!(
                "{:.2} ({total} in all, leases and waits included); by command: {}",
                total as f64 / calls,
                by_command.join(", ")
            ),
        );
    }
    Ok(rows)
}
