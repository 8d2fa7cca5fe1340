//! `soak`: steady mixed traffic for a while. Each client sends `rate` requests a second,
//! paced by a timer, in sessions of 50 requests (initialize + notifications/initialized
//! first, DELETE after; those are not paced and not counted as requests). The requests
//! cycle through [`KINDS`]: tools/call of `test_simple_text`, `test_tool_with_progress`
//! (with a progress token) and `test_tool_with_logging`, resources/read of a static
//! resource and of a template resource, and tools/list. The progress and logging tools
//! sleep 2 × 50 ms by design, so about a third of the requests take 100 ms or more.
//!
//! Reported: requests, sessions, errors, latency p50 / p90 / p99 / max overall and p50 / p99
//! per kind, and the server's RSS and fds at 10 s, 1 min and 3 min (when the run is that
//! long); start, peak and end come from the sampler's own rows.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::load::{self, Conn, quantile, tool_call};
use super::raw::{Rows, millis, secs, tally};
use super::server::Sampler;

/// Requests in one session.
const SESSION_REQUESTS: usize = 50;
/// The request kinds, in the order each client cycles through them.
const KINDS: [&str; 6] = [
    "simple text",
    "progress",
    "logging",
    "static resource",
    "template resource",
    "tools/list",
];

/// The request of kind `kind`, id `id`; `n` varies the template resource's id.
fn body(kind: usize, id: u64, n: u64) -> Value {
    match kind {
        0 => tool_call(id, "test_simple_text"),
        1 => json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {
                "name": "test_tool_with_progress", "arguments": {},
                "_meta": { "progressToken": format!("p{id}") }
            }
        }),
        2 => tool_call(id, "test_tool_with_logging"),
        3 => json!({
            "jsonrpc": "2.0", "id": id, "method": "resources/read",
            "params": { "uri": "test://static-text" }
        }),
        4 => json!({
            "jsonrpc": "2.0", "id": id, "method": "resources/read",
            "params": { "uri": format!("test://template/{n}/data") }
        }),
        _ => json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }),
    }
}

/// What one client saw.
#[derive(Debug, Default)]
struct ClientResult {
    /// Successful requests: kind, latency.
    ok: Vec<(usize, Duration)>,
    /// Requests sent (ok or not).
    sent: usize,
    /// Sessions opened.
    sessions: usize,
    errors: Vec<String>,
    connects: usize,
    retries: usize,
}

/// One client: sessions of paced requests until `end`, and what it saw.
async fn client_run(
    url: String,
    index: usize,
    period: Duration,
    first: Instant,
    end: Instant,
) -> ClientResult {
    let mut out = ClientResult::default();
    let mut conn = match Conn::new(&url) {
        Ok(c) => c,
        Err(e) => {
            out.errors.push(e);
            return out;
        }
    };
    let mut tick = tokio::time::interval_at(first.into(), period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    while Instant::now() < end {
        let session = match load::open(&mut conn).await {
            Ok((session, _)) => session,
            Err(e) => {
                out.errors.push(e);
                // Do not spin on a server that turns everyone away.
                let _ = tokio::time::timeout_at(end.into(), tick.tick()).await;
                continue;
            }
        };
        out.sessions += 1;
        for i in 0..SESSION_REQUESTS {
            if tokio::time::timeout_at(end.into(), tick.tick())
                .await
                .is_err()
            {
                break;
            }
            n += 1;
            let kind = (i + index) % KINDS.len();
            let request = body(kind, i as u64 + 2, n * 100 + index as u64);
            let t0 = Instant::now();
            out.sent += 1;
            match load::request(&mut conn, &session, &request).await {
                Ok(()) => out.ok.push((kind, t0.elapsed())),
                Err(e) => out.errors.push(format!("{}: {e}", KINDS[kind])),
            }
        }
        if let Err(e) = load::close(&mut conn, &session).await {
            out.errors.push(e);
        }
    }
    out.connects = conn.connects;
    out.retries = conn.retries;
    out
}

/// Run the soak and return its rows.
pub async fn run(url: &str, clients: usize, rate: f64, duration: u64, sampler: &Sampler) -> Rows {
    let clients = clients.max(1);
    let mut rows = Rows::default();
    let rate = if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        1.0
    };
    rows.push(
        "sizes",
        format!(
            "{clients} clients × {rate} req/s for {duration} s, sessions of {SESSION_REQUESTS} \
             requests (cycling {}) each ended with DELETE",
            KINDS.join(", ")
        ),
    );
    let period = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let end = start + Duration::from_secs(duration);
    let tasks: Vec<_> = (0..clients)
        .map(|k| {
            // Spread the clients' ticks over one period.
            let first = start + period.mul_f64(k as f64 / clients as f64);
            tokio::spawn(client_run(url.to_owned(), k, period, first, end))
        })
        .collect();

    // The server's figures at fixed times into the run.
    let mut marks = Vec::new();
    for (label, at) in [("10 s", 10), ("1 min", 60), ("3 min", 180)] {
        if at < duration {
            tokio::time::sleep_until((start + Duration::from_secs(at)).into()).await;
            let m = sampler.snapshot();
            marks.push(format!(
                "{label}: {:.1} MB, {} fds",
                m.rss_now as f64 * 1024.0 / 1e6,
                m.fds_now
            ));
        }
    }

    // After the end, a session in flight has at most its DELETE and one request to finish.
    let limit = end + load::REQUEST_TIMEOUT * 3;
    let mut results = Vec::with_capacity(clients);
    let mut lost = 0;
    for task in tasks {
        match tokio::time::timeout_at(limit.into(), task).await {
            Ok(Ok(r)) => results.push(r),
            _ => lost += 1,
        }
    }
    let took = start.elapsed();

    let sent: usize = results.iter().map(|r| r.sent).sum();
    let sessions: usize = results.iter().map(|r| r.sessions).sum();
    let mut errors: Vec<String> = results.iter().flat_map(|r| r.errors.clone()).collect();
    errors.extend((0..lost).map(|_| "client task lost or over time".to_owned()));
    let all: Vec<(usize, Duration)> = results.iter().flat_map(|r| r.ok.clone()).collect();
    let mut lat: Vec<Duration> = all.iter().map(|a| a.1).collect();
    lat.sort();

    rows.push(
        "requests sent / ok",
        format!(
            "{sent} / {} in {} ({:.1} req/s)",
            lat.len(),
            secs(took),
            sent as f64 / took.as_secs_f64().max(1e-3)
        ),
    );
    rows.push("sessions opened", sessions.to_string());
    let connects: usize = results.iter().map(|r| r.connects).sum();
    let retries: usize = results.iter().map(|r| r.retries).sum();
    rows.push(
        "connections opened (resends on a closed one)",
        format!("{connects} ({retries})"),
    );
    rows.push("errors (any request)", errors.len().to_string());
    if !errors.is_empty() {
        rows.push("error kinds", tally(errors));
    }
    rows.push(
        "latency p50 / p90 / p99 / max",
        format!(
            "{} / {} / {} / {}",
            millis(quantile(&lat, 0.5)),
            millis(quantile(&lat, 0.9)),
            millis(quantile(&lat, 0.99)),
            millis(lat.last().copied().unwrap_or_default())
        ),
    );
    let per_kind: Vec<String> = KINDS
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let mut l: Vec<Duration> = all.iter().filter(|a| a.0 == k).map(|a| a.1).collect();
            l.sort();
            format!(
                "{name} {} × p50 {} p99 {}",
                l.len(),
                millis(quantile(&l, 0.5)),
                millis(quantile(&l, 0.99))
            )
        })
        .collect();
    rows.push("per kind", per_kind.join("; "));
    rows.push(
        "server RSS, fds during the run",
        if marks.is_empty() {
            "-".to_owned()
        } else {
            marks.join("; ")
        },
    );
    rows
}
