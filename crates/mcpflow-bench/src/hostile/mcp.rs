//! MCP over plain HTTP (reqwest): sessions, the readiness wait, and the probe.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::raw::{Rows, millis, tally};

/// The protocol version asked for in `initialize`.
pub const PROTOCOL: &str = "2025-06-18";
/// The Accept header every POST sends.
pub const ACCEPT: &str = "application/json, text/event-stream";
/// The longest one probe session may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// An HTTP client; `pooled: false` opens a fresh connection for every request.
pub fn client(pooled: bool) -> Result<reqwest::Client, String> {
    let builder = reqwest::Client::builder().no_proxy();
    let builder = if pooled {
        builder
    } else {
        builder.pool_max_idle_per_host(0)
    };
    builder
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// One HTTP answer: status, session id header, body text.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// `Mcp-Session-Id`, if sent.
    pub session: Option<String>,
    /// The body.
    pub body: String,
}

impl Reply {
    /// The JSON-RPC message in the body (plain JSON, or the last SSE `data:` line that
    /// parses).
    pub fn message(&self) -> Option<Value> {
        if let Ok(v) = serde_json::from_str::<Value>(&self.body) {
            return Some(v);
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .next_back()
    }

    /// `"HTTP 503: <error message>"` or `"HTTP 200"`.
    pub fn describe(&self) -> String {
        let error = self.message().and_then(|m| {
            m.get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        match error {
            Some(e) => format!("HTTP {}: {e}", self.status),
            None => format!("HTTP {}", self.status),
        }
    }
}

/// Send `method` with `body` (or none) to `url` in `session`, and read the whole answer.
pub async fn send(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    session: Option<&str>,
    body: Option<&Value>,
) -> Result<Reply, String> {
    let mut request = client
        .request(method, url)
        .header("Accept", ACCEPT)
        .header("Content-Type", "application/json");
    if let Some(session) = session {
        request = request
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", PROTOCOL);
    }
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let response = request.send().await.map_err(|e| error_label(&e))?;
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.text().await.map_err(|e| error_label(&e))?;
    Ok(Reply {
        status,
        session,
        body,
    })
}

/// What failed, and the innermost cause (e.g. "request failed: connection reset by peer").
fn error_label(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connect failed"
    } else if e.is_body() || e.is_decode() {
        "body read failed"
    } else {
        "request failed"
    };
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    let cause = cause.to_string();
    let cause = cause.split(" (os error").next().unwrap_or_default();
    format!("{what}: {cause}")
}

/// The `initialize` request.
pub fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": { "name": "mcpflow-hostile", "version": "0" }
        }
    })
}

/// Initialize and send notifications/initialized: the session id, or the failed reply
/// described.
pub async fn open_session(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let reply = send(
        client,
        reqwest::Method::POST,
        url,
        None,
        Some(&initialize()),
    )
    .await?;
    let has_result = reply.message().is_some_and(|m| m.get("result").is_some());
    let session = match (reply.status, has_result, reply.session.clone()) {
        (200, true, Some(session)) => session,
        _ => return Err(reply.describe()),
    };
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let reply = send(
        client,
        reqwest::Method::POST,
        url,
        Some(&session),
        Some(&note),
    )
    .await?;
    if reply.status / 100 != 2 {
        return Err(format!("initialized: {}", reply.describe()));
    }
    Ok(session)
}

/// A full session: open, ping, DELETE.
pub async fn full_session(client: &reqwest::Client, url: &str) -> Result<(), String> {
    let session = open_session(client, url).await?;
    let ping = json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" });
    let reply = send(
        client,
        reqwest::Method::POST,
        url,
        Some(&session),
        Some(&ping),
    )
    .await?;
    if reply.status != 200 || reply.message().is_none_or(|m| m.get("result").is_none()) {
        return Err(format!("ping: {}", reply.describe()));
    }
    let reply = send(client, reqwest::Method::DELETE, url, Some(&session), None).await?;
    if reply.status / 100 != 2 {
        return Err(format!("DELETE: {}", reply.describe()));
    }
    Ok(())
}

/// Whether `url` answers `initialize` with a result (with a session or, on a server
/// without sessions, without one).
async fn answers_initialize(client: &reqwest::Client, url: &str) -> Result<(), String> {
    let reply = send(
        client,
        reqwest::Method::POST,
        url,
        None,
        Some(&initialize()),
    )
    .await?;
    let has_result = reply.message().is_some_and(|m| m.get("result").is_some());
    if reply.status == 200 && has_result {
        Ok(())
    } else {
        Err(reply.describe())
    }
}

/// Wait until `url` answers `initialize`, for `limit` at most.
pub async fn wait_ready(url: &str, limit: Duration) -> Result<(), String> {
    let client = client(false)?;
    let start = Instant::now();
    let mut last = String::from("nothing tried");
    while start.elapsed() < limit {
        match tokio::time::timeout(PROBE_TIMEOUT, answers_initialize(&client, url)).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => last = e,
            Err(_) => last = "timeout".to_owned(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!(
        "{url} did not answer within {} s (last: {last})",
        limit.as_secs()
    ))
}

/// One probe: when it started (seconds since the attack started, negative before it), how
/// long it took, its error.
type Sample = (f64, Duration, Option<String>);

/// A full session every 0.5 s on fresh connections, each bounded by 5 s.
pub struct Probe {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<Sample>>,
}

impl Probe {
    /// Start probing `url`; times are reported from `epoch`, the attack's start.
    pub fn spawn(url: String, epoch: Instant) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let task = tokio::spawn(async move {
            let mut samples = Vec::new();
            let Ok(client) = client(false) else {
                return samples;
            };
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !stop2.load(Ordering::Relaxed) {
                tick.tick().await;
                let t0 = Instant::now();
                let error =
                    match tokio::time::timeout(PROBE_TIMEOUT, full_session(&client, &url)).await {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(e),
                        Err(_) => Some(format!("no answer in {} s", PROBE_TIMEOUT.as_secs())),
                    };
                let at = if t0 >= epoch {
                    (t0 - epoch).as_secs_f64()
                } else {
                    -(epoch - t0).as_secs_f64()
                };
                samples.push((at, t0.elapsed(), error));
            }
            samples
        });
        Probe { stop, task }
    }

    /// Stop probing (after the probe in flight) and sum up.
    pub async fn finish(self) -> ProbeReport {
        self.stop.store(true, Ordering::Relaxed);
        let limit = PROBE_TIMEOUT + Duration::from_secs(2);
        match tokio::time::timeout(limit, self.task).await {
            Ok(Ok(samples)) => ProbeReport { samples },
            _ => ProbeReport::default(),
        }
    }
}

/// What the probe saw.
#[derive(Debug, Default)]
pub struct ProbeReport {
    samples: Vec<Sample>,
}

impl ProbeReport {
    /// The table rows.
    pub fn rows(&self) -> Rows {
        let mut rows = Rows::default();
        let mut ok: Vec<Duration> = self
            .samples
            .iter()
            .filter(|s| s.2.is_none())
            .map(|s| s.1)
            .collect();
        ok.sort();
        let failed = self.samples.len() - ok.len();
        rows.push("probes ok / failed", format!("{} / {failed}", ok.len()));
        if let (Some(max), false) = (ok.last(), ok.is_empty()) {
            rows.push(
                "probe latency p50 / max (ok ones)",
                format!("{} / {}", millis(ok[ok.len() / 2]), millis(*max)),
            );
        }
        // The longest run of consecutive failures, from the first one's start to the
        // last one's end.
        let (mut longest, mut run_start): (Option<(f64, f64, usize)>, Option<usize>) = (None, None);
        for (i, s) in self.samples.iter().enumerate() {
            if s.2.is_some() {
                let first = *run_start.get_or_insert(i);
                let span = s.0 + s.1.as_secs_f64() - self.samples[first].0;
                if longest.is_none_or(|(_, l, _)| span > l) {
                    longest = Some((self.samples[first].0, span, i + 1 - first));
                }
            } else {
                run_start = None;
            }
        }
        rows.push(
            "probe longest outage",
            match longest {
                Some((from, span, n)) => format!(
                    "{span:.1} s ({n} probes in a row, from {from:.1} s after the attack began)"
                ),
                None => "none".to_owned(),
            },
        );
        if failed > 0 {
            let errors = self.samples.iter().filter_map(|s| s.2.clone());
            rows.push("probe errors", tally(errors));
        }
        rows
    }
}
