//! `calls`: honest load without sessions. `connections` keep-alive connections post
//! `tools/call` of `test_simple_text` back to back until `calls` are answered: as
//! 2026-07-28 requests (the `_meta` envelope with the `MCP-Protocol-Version`, `Mcp-Method`
//! and `Mcp-Name` headers), or with `--era handshake` as 2025-11-25 requests to a server
//! that needs no session (`mcpflow serve --http --stateless`). Each connection's next
//! request goes out as soon as its answer is read.
//!
//! Reported: calls ok / errors, latency p50 / p99 / max, calls/s over the whole run and
//! per checkpoint (every `every` calls, with the server's RSS then), and, after `idle`
//! seconds with no traffic, the server's RSS and the CPU time it used while idle. A server
//! that keeps what each exchange made shows it as RSS that grows with every checkpoint,
//! a falling call rate, and CPU spent while idle.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::conn::{Conn, REQUEST_TIMEOUT};
use super::load::quantile;
use super::raw::{Rows, millis, tally};
use crate::common::proc_status_kib;

/// Which requests to send.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Era {
    /// 2026-07-28: no session, everything in each request.
    #[value(name = "2026-07-28")]
    PerRequest,
    /// 2025-11-25 requests without a session, for a stateless server.
    Handshake,
}

/// The load's shape.
#[derive(Debug)]
pub struct Opts {
    /// Keep-alive connections, each with one request in flight.
    pub connections: usize,
    /// Calls in all.
    pub calls: u64,
    /// Calls between checkpoints.
    pub every: u64,
    /// Which requests.
    pub era: Era,
    /// Seconds of no traffic after the calls.
    pub idle: u64,
}

impl Era {
    fn describe(self) -> &'static str {
        match self {
            Era::PerRequest => "2026-07-28",
            Era::Handshake => "2025-11-25",
        }
    }
}

const TOOL: &str = "test_simple_text";

/// The request with id `id`.
pub(super) fn body(era: Era, id: u64) -> Value {
    match era {
        Era::PerRequest => json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "mcpflow-bench", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {}
                },
                "name": TOOL, "arguments": {}
            }
        }),
        Era::Handshake => super::load::tool_call(id, TOOL),
    }
}

pub(super) fn headers(era: Era) -> &'static [(&'static str, &'static str)] {
    match era {
        Era::PerRequest => &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", TOOL),
        ],
        Era::Handshake => &[("MCP-Protocol-Version", "2025-11-25")],
    }
}

/// What one connection saw.
#[derive(Default)]
struct Worker {
    latencies: Vec<Duration>,
    errors: Vec<String>,
    connects: usize,
}

async fn one_connection(
    url: String,
    opts: Arc<Opts>,
    next: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
) -> Worker {
    let mut out = Worker::default();
    let mut conn = match Conn::new(&url) {
        Ok(conn) => conn.with_headers(headers(opts.era)),
        Err(e) => {
            out.errors.push(e);
            return out;
        }
    };
    loop {
        let id = next.fetch_add(1, Ordering::Relaxed);
        if id >= opts.calls {
            break;
        }
        let t0 = Instant::now();
        let answer = conn.send("POST", None, Some(&body(opts.era, id))).await;
        let outcome = answer.and_then(|reply| {
            let result = reply.message().and_then(|m| m.get("result").cloned());
            match result {
                Some(r) if reply.status == 200 && r.get("isError") != Some(&Value::Bool(true)) => {
                    Ok(())
                }
                _ => Err(reply.describe()),
            }
        });
        match outcome {
            Ok(()) => {
                out.latencies.push(t0.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => out.errors.push(e),
        }
    }
    out.connects = conn.connects;
    out
}

/// The server's CPU time so far (user + system), from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which may hold spaces, in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    #[allow(unsafe_code)]
    // SAFETY: sysconf only reads a system setting.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_second = u64::try_from(per_second).ok().filter(|&n| n > 0)?;
    Some(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

fn mb(kib: Option<u64>) -> String {
    kib.map_or("?".to_owned(), |k| {
        format!("{:.1} MB", k as f64 * 1024.0 / 1e6)
    })
}

/// Run the load and return its rows.
pub async fn run(url: &str, pid: u32, opts: Opts) -> Rows {
    let opts = Arc::new(Opts {
        connections: opts.connections.max(1),
        every: opts.every.max(1),
        ..opts
    });
    let mut rows = Rows::default();
    rows.push(
        "sizes",
        format!(
            "{} × tools/call {TOOL} ({}, no session) over {} keep-alive connections",
            opts.calls,
            opts.era.describe(),
            opts.connections
        ),
    );
    let rss = || proc_status_kib(Some(pid), "VmRSS");
    rows.push("server RSS before the first call", mb(rss()));
    let (next, done) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let t0 = Instant::now();
    let workers: Vec<_> = (0..opts.connections)
        .map(|_| {
            tokio::spawn(one_connection(
                url.to_owned(),
                opts.clone(),
                next.clone(),
                done.clone(),
            ))
        })
        .collect();
    // Checkpoints, until every call was sent and the workers ended.
    let (mut mark, mut mark_at, mut mark_count) = (opts.every, t0, 0);
    let finished = async {
        let mut results = Vec::new();
        for worker in workers {
            results.push(worker.await.unwrap_or_default());
        }
        results
    };
    tokio::pin!(finished);
    // Each connection makes its share of calls one after another.
    let limit = REQUEST_TIMEOUT
        * u32::try_from(opts.calls)
            .unwrap_or(u32::MAX)
            .saturating_add(1);
    let deadline = tokio::time::Instant::now() + limit;
    let results = loop {
        let results = tokio::select! {
            results = &mut finished => Some(results),
            () = tokio::time::sleep(Duration::from_millis(20)) => None,
            () = tokio::time::sleep_until(deadline) => {
                rows.push("error", "the calls did not end in time");
                return rows;
            }
        };
        let now_done = done.load(Ordering::Relaxed);
        while now_done >= mark {
            let now = Instant::now();
            let rate = (now_done - mark_count) as f64 / (now - mark_at).as_secs_f64().max(1e-3);
            rows.push(
                format!("after {mark} calls"),
                format!("RSS {}, {rate:.0} calls/s since the last row", mb(rss())),
            );
            (mark_at, mark_count) = (now, now_done);
            mark += opts.every;
        }
        if let Some(results) = results {
            break results;
        }
    };
    let wall = t0.elapsed();
    let mut latencies: Vec<Duration> = results
        .iter()
        .flat_map(|r| r.latencies.iter().copied())
        .collect();
    latencies.sort();
    rows.push(
        "calls ok / errors",
        format!(
            "{} / {}",
            latencies.len(),
            opts.calls.saturating_sub(latencies.len() as u64)
        ),
    );
    let errors: Vec<String> = results.iter().flat_map(|r| r.errors.clone()).collect();
    if !errors.is_empty() {
        rows.push("errors", tally(errors));
    }
    rows.push(
        "calls/s (ok calls / wall time)",
        format!(
            "{:.0} ({:.1} s wall)",
            latencies.len() as f64 / wall.as_secs_f64().max(1e-3),
            wall.as_secs_f64()
        ),
    );
    rows.push(
        "call latency p50 / p99 / max",
        format!(
            "{} / {} / {}",
            millis(quantile(&latencies, 0.5)),
            millis(quantile(&latencies, 0.99)),
            millis(latencies.last().copied().unwrap_or_default())
        ),
    );
    let connects: usize = results.iter().map(|r| r.connects).sum();
    rows.push("connections opened", connects.to_string());
    rows.push("server RSS after the last call", mb(rss()));
    drop(results);
    if opts.idle > 0 {
        let before = cpu_time(pid);
        tokio::time::sleep(Duration::from_secs(opts.idle)).await;
        let used = cpu_time(pid)
            .zip(before)
            .map(|(after, before)| after.saturating_sub(before));
        rows.push(format!("server RSS after {} s idle", opts.idle), mb(rss()));
        rows.push(
            format!("server CPU time used in those {} s", opts.idle),
            used.map_or("?".to_owned(), millis),
        );
    }
    rows
}
