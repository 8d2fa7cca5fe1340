//! `never-read`: connections that ask for a large answer and never read it.
//!
//! Each connection opens a session, then POSTs (Accept: application/json,
//! text/event-stream, as the spec requires) a request whose answer is large, from a socket
//! with a small receive buffer, and reads nothing for `duration` seconds. The answer then
//! waits in the server: without a write timeout or a global budget, `connections × answer`
//! bytes stay pinned until the clients go away. At the end the harness drains every
//! connection to see what the server had kept for it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use super::mcp::{self, ACCEPT, PROTOCOL};
use super::raw::{Rows, secs, short_error, status_code, tally, tcp_state};
use super::server::Sampler;

/// The attack's sizes and kind of request.
pub struct Opts {
    /// Attacking connections.
    pub connections: usize,
    /// Seconds the answers stay unread.
    pub duration: u64,
    /// `template` or `echo`.
    pub big: String,
    /// Bytes of the template id or echo message.
    pub big_bytes: usize,
    /// SO_RCVBUF of the attacking sockets.
    pub rcvbuf: u32,
}

/// The request whose answer is large.
fn big_request(opts: &Opts) -> Value {
    let filler = "a".repeat(opts.big_bytes);
    if opts.big == "echo" {
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": { "name": "echo", "arguments": { "message": filler } } })
    } else {
        json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/read",
                "params": { "uri": format!("test://template/{filler}/data") } })
    }
}

/// Open a session and send the big request on a raw socket; the socket, unread.
async fn attack_one(
    client: &reqwest::Client,
    url: &str,
    addr: &str,
    path: &str,
    body: &str,
    rcvbuf: u32,
) -> Result<TcpStream, String> {
    let session = mcp::open_session(client, url).await?;
    let sockaddr = addr
        .parse()
        .map_err(|e| format!("bad address {addr}: {e}"))?;
    let socket = TcpSocket::new_v4().map_err(|e| short_error(&e))?;
    socket
        .set_recv_buffer_size(rcvbuf)
        .map_err(|e| short_error(&e))?;
    let mut stream = socket
        .connect(sockaddr)
        .await
        .map_err(|e| format!("connect: {}", short_error(&e)))?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT}\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| format!("write: {}", short_error(&e)))?;
    stream
        .write_all(body.as_bytes())
        .await
        .map_err(|e| format!("write: {}", short_error(&e)))?;
    Ok(stream)
}

/// Run the attack and return its rows.
pub async fn run(addr: &str, url: &str, path: &str, opts: &Opts, sampler: &Sampler) -> Rows {
    let mut rows = Rows::default();
    let body = big_request(opts).to_string();
    rows.push(
        "sizes",
        format!(
            "{} connections, {} of {} KiB each ({} B request), unread for {} s, SO_RCVBUF {}",
            opts.connections,
            opts.big,
            opts.big_bytes / 1024,
            body.len(),
            opts.duration,
            opts.rcvbuf
        ),
    );
    let client = match mcp::client(true) {
        Ok(c) => c,
        Err(e) => {
            rows.push("error", e);
            return rows;
        }
    };
    let start = Instant::now();
    let tasks: Vec<_> = (0..opts.connections)
        .map(|_| {
            let (client, url, addr, path, body) = (
                client.clone(),
                url.to_owned(),
                addr.to_owned(),
                path.to_owned(),
                body.clone(),
            );
            let rcvbuf = opts.rcvbuf;
            tokio::spawn(async move {
                let one = attack_one(&client, &url, &addr, &path, &body, rcvbuf);
                match tokio::time::timeout(Duration::from_secs(20), one).await {
                    Ok(r) => r,
                    Err(_) => Err("setup took over 20 s".to_owned()),
                }
            })
        })
        .collect();
    let mut streams = Vec::new();
    let mut errors = Vec::new();
    for task in tasks {
        match task.await {
            Ok(Ok(s)) => streams.push(s),
            Ok(Err(e)) => errors.push(e),
            Err(_) => errors.push("task failed".to_owned()),
        }
    }
    rows.push(
        "requests sent",
        format!(
            "{} of {} (in {})",
            streams.len(),
            opts.connections,
            secs(start.elapsed())
        ),
    );
    if !errors.is_empty() {
        rows.push("setup errors", tally(errors));
    }

    // Read nothing; watch whether the server gives up on any connection.
    let unread_from = Instant::now();
    let mut closed_at: Vec<Option<Duration>> = vec![None; streams.len()];
    while unread_from.elapsed() < Duration::from_secs(opts.duration) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        for (stream, closed) in streams.iter().zip(closed_at.iter_mut()) {
            if closed.is_none() && tcp_state(stream) != "established" {
                *closed = Some(unread_from.elapsed());
            }
        }
    }
    let mem = sampler.snapshot();
    rows.push(
        "server RSS after the answers sat unread",
        format!(
            "{:.1} MB (peak so far {:.1} MB)",
            mem.rss_now as f64 * 1024.0 / 1e6,
            mem.rss_peak as f64 * 1024.0 / 1e6
        ),
    );
    if let Some(kib) = kernel_tcp_kib() {
        rows.push(
            "kernel TCP buffer memory then (all sockets)",
            format!("{:.1} MB", kib as f64 * 1024.0 / 1e6),
        );
    }
    let closed: Vec<f64> = closed_at
        .iter()
        .flatten()
        .map(Duration::as_secs_f64)
        .collect();
    rows.push(
        "closed by the server while unread",
        match closed.iter().copied().reduce(f64::min) {
            Some(first) => format!(
                "{} of {} (first at {first:.1} s)",
                closed.len(),
                streams.len()
            ),
            None => format!("0 of {}", streams.len()),
        },
    );

    // Drain: what had the server kept for each connection?
    let drains: Vec<_> = streams
        .into_iter()
        .map(|s| tokio::spawn(drain(s)))
        .collect();
    let mut ends = Vec::new();
    let mut sizes = Vec::new();
    for d in drains {
        if let Ok((status, bytes, end)) = d.await {
            ends.push(format!("{status}, then {end}"));
            sizes.push(bytes);
        }
    }
    sizes.sort_unstable();
    if let (Some(min), Some(max)) = (sizes.first(), sizes.last()) {
        rows.push(
            "bytes received when drained (min / max)",
            format!(
                "{:.2} MiB / {:.2} MiB",
                *min as f64 / 1048576.0,
                *max as f64 / 1048576.0
            ),
        );
    }
    rows.push("drain outcomes", tally(ends));
    rows
}

/// Read everything `stream` has until EOF, an error, 1 s of silence or 15 s in all: the
/// status, the bytes read, how it ended.
async fn drain(mut stream: TcpStream) -> (String, usize, String) {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut head = Vec::new();
    let mut bytes = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    let end = loop {
        let idle = Instant::now() + Duration::from_secs(1);
        let read = tokio::time::timeout_at(idle.min(deadline).into(), stream.read(&mut buf));
        match read.await {
            Err(_) => break "open (no more data)".to_owned(),
            Ok(Ok(0)) => break "EOF".to_owned(),
            Ok(Ok(n)) => {
                if head.len() < 256 {
                    head.extend_from_slice(&buf[..n.min(256)]);
                }
                bytes += n;
            }
            Ok(Err(e)) => break short_error(&e),
        }
    };
    let status = status_code(&head).map_or("no status".to_owned(), |c| format!("HTTP {c}"));
    (status, bytes, end)
}

/// The memory of every TCP socket's buffers (`/proc/net/sockstat`, `TCP: ... mem N` in
/// pages), in KiB: unread answers may sit there rather than in the server's RSS.
fn kernel_tcp_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == "mem")?;
    let pages: u64 = words.next()?.parse().ok()?;
    Some(pages * 4)
}
