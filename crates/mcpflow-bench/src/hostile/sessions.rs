//! `abandoned-sessions`: sessions opened (initialize + notifications/initialized) as fast
//! as a few connections allow, and never deleted.
//!
//! A server with a session cap and a long idle timeout fills up and turns every new client
//! away until sessions expire; one without a cap keeps the memory of every session. The
//! figures after the flood are what a fresh client gets.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::mcp::{self, Reply};
use super::raw::{Rows, millis, secs, tally};

/// The longest one session's opening may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(10);

/// Run the attack and return its rows.
pub async fn run(url: &str, sessions: usize, concurrency: usize) -> Rows {
    let mut rows = Rows::default();
    rows.push(
        "sizes",
        format!("{sessions} sessions opened and never deleted, {concurrency} at a time"),
    );
    let client = match mcp::client(true) {
        Ok(c) => c,
        Err(e) => {
            rows.push("error", e);
            return rows;
        }
    };
    let start = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (client, url, next) = (client.clone(), url.to_owned(), next.clone());
            tokio::spawn(async move {
                let mut results: Vec<(Duration, Option<String>)> = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < sessions {
                    let open = mcp::open_session(&client, &url);
                    let error = match tokio::time::timeout(OPEN_TIMEOUT, open).await {
                        Ok(Ok(_)) => None,
                        Ok(Err(e)) => Some(e),
                        Err(_) => Some(format!("no answer in {} s", OPEN_TIMEOUT.as_secs())),
                    };
                    results.push((start.elapsed(), error));
                }
                results
            })
        })
        .collect();
    let mut results = Vec::new();
    for worker in workers {
        if let Ok(r) = worker.await {
            results.extend(r);
        }
    }
    let took = start.elapsed();
    drop(client);
    let ok = results.iter().filter(|r| r.1.is_none()).count();
    rows.push(
        "sessions opened ok / failed",
        format!("{ok} / {}", results.len() - ok),
    );
    rows.push(
        "flood took",
        format!(
            "{} ({:.0} sessions/s)",
            secs(took),
            results.len() as f64 / took.as_secs_f64().max(1e-3)
        ),
    );
    if let Some(first) = results.iter().filter(|r| r.1.is_some()).map(|r| r.0).min() {
        rows.push("first failure at", secs(first));
        rows.push(
            "flood failures",
            tally(results.iter().filter_map(|r| r.1.clone())),
        );
    }

    // A fresh client, on a fresh connection.
    let fresh = match mcp::client(false) {
        Ok(c) => c,
        Err(e) => {
            rows.push("error", e);
            return rows;
        }
    };
    let t0 = Instant::now();
    let request = mcp::initialize();
    let init = mcp::send(&fresh, reqwest::Method::POST, url, None, Some(&request));
    let answer = match tokio::time::timeout(Duration::from_secs(5), init).await {
        Ok(Ok(reply)) => describe_init(&reply),
        Ok(Err(e)) => e,
        Err(_) => "no answer in 5 s".to_owned(),
    };
    rows.push(
        "fresh client's initialize after the flood",
        format!("{answer} (in {})", millis(t0.elapsed())),
    );
    let full = tokio::time::timeout(Duration::from_secs(5), mcp::full_session(&fresh, url));
    rows.push(
        "fresh full session after the flood",
        match full.await {
            Ok(Ok(())) => "ok".to_owned(),
            Ok(Err(e)) => e,
            Err(_) => "no answer in 5 s".to_owned(),
        },
    );
    rows
}

/// "HTTP 200, session abc…" or the error described.
fn describe_init(reply: &Reply) -> String {
    match (&reply.session, reply.status) {
        (Some(_), 200) => "HTTP 200 with a session id".to_owned(),
        _ => reply.describe(),
    }
}
