//! A bound HTTP server: its address, its statistics, and how it stops.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A server listening on a socket, from [`HttpServer::bind`]. Dropping it stops the
/// server as [`shutdown`](Self::shutdown) does, without waiting.
pub struct RunningHttpServer {
    pub(super) local_addr: SocketAddr,
    pub(super) endpoint: String,
    pub(super) stop: CancellationToken,
    pub(super) task: Option<JoinHandle<()>>,
    pub(super) state: Arc<AppState>,
}

impl Drop for RunningHttpServer {
    fn drop(&mut self) {
        if !self.stop.is_cancelled() {
            self.state.end_all_sessions();
            self.stop.cancel();
        }
    }
}

impl fmt::Debug for RunningHttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningHttpServer")
            .field("local_addr", &self.local_addr)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl RunningHttpServer {
    /// The address it listens on (with the port chosen when binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint's URL, e.g. `http://127.0.0.1:3000/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr, self.endpoint)
    }

    /// Serve until the process ends (the server does not stop on its own).
    pub async fn wait(mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// The number of live sessions.
    pub fn session_count(&self) -> usize {
        lock(&self.state.sessions).len()
    }

    /// What the server holds now, and how many sessions it ended on its own.
    pub fn stats(&self) -> HttpServerStats {
        stats_of(&self.state)
    }

    /// Stop accepting connections and end every session (open event streams end, and
    /// in-flight handlers get the close grace); connections still open after 5 seconds
    /// are cut.
    pub async fn shutdown(mut self) {
        self.state.end_all_sessions();
        self.stop.cancel();
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(5), &mut task)
                .await
                .is_err()
        {
            task.abort();
            // Awaited so the listening socket is closed when this returns.
            let _ = task.await;
        }
    }
}

/// A snapshot of a running server, from [`RunningHttpServer::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpServerStats {
    /// Live sessions.
    pub sessions: usize,
    /// Open connections.
    pub connections: usize,
    /// Idle sessions ended to make room for new ones (`max_sessions`), since the start.
    pub evicted_sessions: u64,
    /// Sessions ended by their idle timeout, since the start.
    pub expired_sessions: u64,
    /// Bytes of request bodies being read now.
    pub buffered_body_bytes: usize,
    /// Bytes of events queued for clients now.
    pub queued_event_bytes: usize,
    /// 2026-07-28 requests without a session still being served (each runs on an
    /// engine of its own that ends with its answer, or with its stream for
    /// `subscriptions/listen`).
    pub sessionless_exchanges: usize,
}

fn stats_of(state: &AppState) -> HttpServerStats {
    HttpServerStats {
        sessions: lock(&state.sessions).len(),
        connections: state.connections.load(Ordering::Relaxed),
        evicted_sessions: state.evicted.load(Ordering::Relaxed),
        expired_sessions: state.expired.load(Ordering::Relaxed),
        buffered_body_bytes: state.body_budget.in_use(),
        queued_event_bytes: state.queue_budget.queued(),
        sessionless_exchanges: state.exchanges.get(),
    }
}

/// The server's [`HttpServerStats`] as OpenTelemetry instruments on the global meter
/// provider, each with the server's `server.address` and `server.port`, read at each
/// collection while the server runs.
#[cfg(feature = "otel")]
pub(super) fn observe(address: SocketAddr, state: std::sync::Weak<AppState>) {
    use opentelemetry::KeyValue;
    use opentelemetry::metrics::AsyncInstrument;

    type Read = fn(&HttpServerStats) -> u64;
    fn count(n: usize) -> u64 {
        u64::try_from(n).unwrap_or(u64::MAX)
    }
    let meter = opentelemetry::global::meter("mcpflow");
    let attributes = [
        KeyValue::new("server.address", address.ip().to_string()),
        KeyValue::new("server.port", i64::from(address.port())),
    ];
    // A gauge reads what the server holds now, a counter what it did since the start.
    let instruments: [(bool, &'static str, &'static str, &'static str, Read); 7] = [
        (
            false,
            "mcpflow.http.server.sessions",
            "{session}",
            "Live sessions.",
            |s| count(s.sessions),
        ),
        (
            false,
            "mcpflow.http.server.connections",
            "{connection}",
            "Open connections.",
            |s| count(s.connections),
        ),
        (
            false,
            "mcpflow.http.server.buffered_body_bytes",
            "By",
            "Bytes of request bodies being read.",
            |s| count(s.buffered_body_bytes),
        ),
        (
            false,
            "mcpflow.http.server.queued_event_bytes",
            "By",
            "Bytes of events queued for clients.",
            |s| count(s.queued_event_bytes),
        ),
        (
            false,
            "mcpflow.http.server.sessionless_exchanges",
            "{request}",
            "2026-07-28 requests without a session being served.",
            |s| count(s.sessionless_exchanges),
        ),
        (
            true,
            "mcpflow.http.server.evicted_sessions",
            "{session}",
            "Idle sessions ended to make room for new ones.",
            |s| s.evicted_sessions,
        ),
        (
            true,
            "mcpflow.http.server.expired_sessions",
            "{session}",
            "Sessions ended by their idle timeout.",
            |s| s.expired_sessions,
        ),
    ];
    for (cumulative, name, unit, description, read) in instruments {
        let attributes = attributes.clone();
        let state = state.clone();
        let callback = move |observer: &dyn AsyncInstrument<u64>| {
            if let Some(state) = state.upgrade() {
                observer.observe(read(&stats_of(&state)), &attributes);
            }
        };
        if cumulative {
            meter
                .u64_observable_counter(name)
                .with_unit(unit)
                .with_description(description)
                .with_callback(callback)
                .build();
        } else {
            meter
                .u64_observable_gauge(name)
                .with_unit(unit)
                .with_description(description)
                .with_callback(callback)
                .build();
        }
    }
}
