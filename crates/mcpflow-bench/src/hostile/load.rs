//! `load`: honest load. N clients start at once, each on one keep-alive connection of its
//! own ([`Conn`]): initialize, notifications/initialized, `calls` × tools/call of
//! `test_simple_text`, DELETE. Every request is bounded by [`REQUEST_TIMEOUT`].
//!
//! Reported: calls ok / errors, call latency p50 / p99 / max, calls/s over the wall time
//! from the start to the last client's DELETE, and initialize latency p50 / p99. The
//! server's RSS and fds come from the sampler beside it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Barrier;

pub use super::conn::{Conn, REQUEST_TIMEOUT};
use super::mcp;
use super::raw::{Rows, millis, tally};

/// The `q` quantile (0..=1) of sorted `values`, nearest rank; zero when empty.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() as f64 * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Wait for every task until `deadline`: their results, and how many were lost or late.
pub async fn gather<T>(
    tasks: Vec<tokio::task::JoinHandle<T>>,
    deadline: Instant,
) -> (Vec<T>, usize) {
    let mut results = Vec::with_capacity(tasks.len());
    let mut lost = 0;
    for task in tasks {
        match tokio::time::timeout_at(deadline.into(), task).await {
            Ok(Ok(r)) => results.push(r),
            _ => lost += 1,
        }
    }
    (results, lost)
}

/// POST one JSON-RPC request in `session`; Ok when the answer is HTTP 200 with a `result`
/// that is not a tool error.
pub async fn request(conn: &mut Conn, session: &str, body: &Value) -> Result<(), String> {
    let reply = conn.send("POST", Some(session), Some(body)).await?;
    let result = reply.message().and_then(|m| m.get("result").cloned());
    match result {
        Some(r) if reply.status == 200 => {
            if r.get("isError").and_then(Value::as_bool) == Some(true) {
                Err("tool error".to_owned())
            } else {
                Ok(())
            }
        }
        _ => Err(reply.describe()),
    }
}

/// Initialize and send notifications/initialized: the session id and how long the
/// `initialize` POST took.
pub async fn open(conn: &mut Conn) -> Result<(String, Duration), String> {
    let body = mcp::initialize();
    let t0 = Instant::now();
    let reply = conn
        .send("POST", None, Some(&body))
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    let took = t0.elapsed();
    let has_result = reply.message().is_some_and(|m| m.get("result").is_some());
    let session = match (reply.status, has_result, reply.session.clone()) {
        (200, true, Some(session)) => session,
        _ => return Err(format!("initialize: {}", reply.describe())),
    };
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    match conn.send("POST", Some(&session), Some(&note)).await {
        Ok(reply) if reply.status / 100 == 2 => Ok((session, took)),
        Ok(reply) => Err(format!("initialized: {}", reply.describe())),
        Err(e) => Err(format!("initialized: {e}")),
    }
}

/// DELETE `session`.
pub async fn close(conn: &mut Conn, session: &str) -> Result<(), String> {
    match conn.send("DELETE", Some(session), None).await {
        Ok(reply) if reply.status / 100 == 2 => Ok(()),
        Ok(reply) => Err(format!("DELETE: {}", reply.describe())),
        Err(e) => Err(format!("DELETE: {e}")),
    }
}

/// A tools/call request of `name` with id `id` and no arguments.
pub fn tool_call(id: u64, name: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": name, "arguments": {} }
    })
}

/// What one client saw.
#[derive(Debug, Default)]
struct ClientResult {
    init: Option<Duration>,
    calls: Vec<Duration>,
    errors: Vec<String>,
    connects: usize,
    retries: usize,
}

/// One client's whole run, after `start` lets everyone go at once.
async fn one_client(url: String, calls: usize, start: Arc<Barrier>) -> ClientResult {
    let mut out = ClientResult::default();
    let conn = Conn::new(&url);
    start.wait().await;
    let mut conn = match conn {
        Ok(c) => c,
        Err(e) => {
            out.errors.push(e);
            return out;
        }
    };
    match open(&mut conn).await {
        Ok((session, took)) => {
            out.init = Some(took);
            for i in 0..calls {
                let t0 = Instant::now();
                let body = tool_call(i as u64 + 2, "test_simple_text");
                match request(&mut conn, &session, &body).await {
                    Ok(()) => out.calls.push(t0.elapsed()),
                    Err(e) => out.errors.push(format!("tools/call: {e}")),
                }
            }
            if let Err(e) = close(&mut conn, &session).await {
                out.errors.push(e);
            }
        }
        Err(e) => out.errors.push(e),
    }
    out.connects = conn.connects;
    out.retries = conn.retries;
    out
}

/// Run the load and return its rows.
pub async fn run(url: &str, clients: usize, calls: usize) -> Rows {
    let clients = clients.max(1);
    let mut rows = Rows::default();
    rows.push(
        "sizes",
        format!(
            "{clients} clients × (initialize + initialized + {calls} tools/call test_simple_text \
             + DELETE), one connection each"
        ),
    );
    let start = Arc::new(Barrier::new(clients + 1));
    let tasks: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(one_client(url.to_owned(), calls, start.clone())))
        .collect();
    // Every client task is running before the clock starts.
    if tokio::time::timeout(Duration::from_secs(300), start.wait())
        .await
        .is_err()
    {
        tasks.iter().for_each(|t| t.abort());
        rows.push("error", "the clients were not ready within 300 s");
        return rows;
    }
    let t0 = Instant::now();
    // Each client makes calls + 3 bounded requests one after another.
    let (results, lost) = gather(tasks, t0 + REQUEST_TIMEOUT * (calls as u32 + 4)).await;
    let wall = t0.elapsed();

    let mut lat: Vec<Duration> = results.iter().flat_map(|r| r.calls.clone()).collect();
    lat.sort();
    let mut init: Vec<Duration> = results.iter().filter_map(|r| r.init).collect();
    init.sort();
    let expected = clients * calls;
    rows.push(
        "calls ok / errors",
        format!("{} / {}", lat.len(), expected - lat.len()),
    );
    rows.push(
        "sessions opened / of",
        format!("{} / {clients}", init.len()),
    );
    let mut errors: Vec<String> = results.iter().flat_map(|r| r.errors.clone()).collect();
    errors.extend((0..lost).map(|_| "client task lost or over time".to_owned()));
    if !errors.is_empty() {
        rows.push("errors", tally(errors));
    }
    rows.push(
        "call latency p50 / p99 / max",
        format!(
            "{} / {} / {}",
            millis(quantile(&lat, 0.5)),
            millis(quantile(&lat, 0.99)),
            millis(lat.last().copied().unwrap_or_default())
        ),
    );
    rows.push(
        "calls/s (ok calls / wall time, start to last DELETE)",
        format!(
            "{:.0} ({:.3} s wall)",
            lat.len() as f64 / wall.as_secs_f64().max(1e-3),
            wall.as_secs_f64()
        ),
    );
    let connects: usize = results.iter().map(|r| r.connects).sum();
    let retries: usize = results.iter().map(|r| r.retries).sum();
    rows.push(
        "connections opened (resends on a closed one)",
        format!("{connects} ({retries})"),
    );
    rows.push(
        "initialize p50 / p99 / max",
        format!(
            "{} / {} / {}",
            millis(quantile(&init, 0.5)),
            millis(quantile(&init, 0.99)),
            millis(init.last().copied().unwrap_or_default())
        ),
    );
    rows
}
