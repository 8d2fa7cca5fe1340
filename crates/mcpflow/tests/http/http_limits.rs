//! The streamable HTTP server under hostile traffic, each attack at a small scale with
//! small limits: stalled and oversized uploads, slowloris, clients that never read, a
//! session table filled with abandoned sessions. Each checks that the attack is cut
//! off, that a probe client is served meanwhile, and that what the server holds stays
//! within its budget; then 1,000 honest sessions end without an error. Every wait is
//! bounded.
#![cfg(all(feature = "http-server", feature = "http-client"))]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::http::serve;
use common::{bounded, until};
use mcpflow::Client;
use mcpflow::http::client::HttpClientTransport;
use mcpflow::http::server::{HttpServer, RunningHttpServer};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::Server;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Notify;

/// `echo` answers at once; `flood` sends `count` progress events of 4 KiB (to a request
/// with a progress token) and tells `flooded` when it is done.
fn test_server(flooded: Arc<Notify>) -> Server {
    Server::builder("limits", "1.0.0")
        .tool(
            Tool::new("echo", "Answers at once", Tool::empty_input_schema()),
            |_args, _cx| async { Ok(CallToolResult::text("ok")) },
        )
        .tool(
            Tool::new(
                "flood",
                "Many large progress events",
                Tool::empty_input_schema(),
            ),
            move |args, cx| {
                let flooded = flooded.clone();
                async move {
                    let count = args.get("count").and_then(|c| c.as_u64()).unwrap_or(0);
                    let text = "x".repeat(4096);
                    for i in 0..count {
                        let _ = cx.progress(i as f64, None, Some(&text)).await;
                    }
                    flooded.notify_one();
                    Ok(CallToolResult::text("flooded"))
                }
            },
        )
        .build()
}

/// A full session from a real client: connect, call `echo`, end the session.
async fn probe(running: &RunningHttpServer, what: &str) {
    let session = async {
        let transport = HttpClientTransport::new(running.url()).expect("a valid URL");
        let client = Client::builder("probe", "1")
            .connect(transport)
            .await
            .map_err(|e| e.to_string())?;
        let result = client
            .call_tool("echo", json!({}))
            .await
            .map_err(|e| e.to_string())?;
        assert_eq!(result.content[0].as_text(), Some("ok"));
        client.close().await;
        Ok::<_, String>(())
    };
    bounded(what, session)
        .await
        .unwrap_or_else(|e| panic!("{what}: the probe failed: {e}"));
}

/// A raw connection that has sent `bytes`.
async fn connect_and_send(running: &RunningHttpServer, bytes: &[u8]) -> TcpStream {
    let mut stream = bounded("connect", TcpStream::connect(running.local_addr()))
        .await
        .expect("connect");
    bounded("send", stream.write_all(bytes))
        .await
        .expect("send");
    stream
}

/// Everything the server sends until it closes the connection (a reset counts as
/// closing).
async fn read_until_closed(stream: &mut TcpStream, what: &str) -> String {
    let mut got = Vec::new();
    let _ = bounded(what, stream.read_to_end(&mut got)).await;
    String::from_utf8_lossy(&got).into_owned()
}

fn status_of(response: &str) -> &str {
    response.split(' ').nth(1).unwrap_or("(no response)")
}

fn post_head(content_length: Option<usize>, extra: &str) -> String {
    let length = content_length.map_or(String::new(), |n| format!("Content-Length: {n}\r\n"));
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{length}{extra}\r\n"
    )
}

#[tokio::test]
async fn a_declared_oversized_body_is_refused_before_it_is_read() {
    let running = serve(HttpServer::new(test_server(Arc::default())).max_body_bytes(1 << 20)).await;
    let mut stream = connect_and_send(&running, post_head(Some(100_000_000), "").as_bytes()).await;
    let response = read_until_closed(&mut stream, "the 413").await;
    assert_eq!(status_of(&response), "413", "{response}");
    assert!(response.contains("max_body_bytes"), "{response}");
    assert_eq!(running.stats().buffered_body_bytes, 0);
}

#[tokio::test]
async fn a_malformed_chunked_body_is_400_and_an_endless_one_413() {
    let running = serve(HttpServer::new(test_server(Arc::default())).max_body_bytes(1024)).await;
    let chunked = "Transfer-Encoding: chunked\r\n";
    let mut bad = post_head(None, chunked);
    bad.push_str("ZZ\r\n{}\r\n0\r\n\r\n");
    let mut stream = connect_and_send(&running, bad.as_bytes()).await;
    let response = read_until_closed(&mut stream, "the answer to a bad chunk size").await;
    assert_eq!(status_of(&response), "400", "{response}");

    let mut large = post_head(None, chunked);
    large.push_str(&format!("800\r\n{}\r\n", "x".repeat(0x800)));
    let mut stream = connect_and_send(&running, large.as_bytes()).await;
    let response =
        read_until_closed(&mut stream, "the answer to a chunked body over the limit").await;
    assert_eq!(status_of(&response), "413", "{response}");
}

#[tokio::test]
async fn stalled_uploads_hit_the_deadline_and_the_shared_budget() {
    let running = serve(
        HttpServer::new(test_server(Arc::default()))
            .max_body_bytes(800 << 10)
            .max_buffered_body_bytes(1 << 20)
            .body_timeout(Duration::from_millis(500)),
    )
    .await;
    // Four uploads declare 700 KiB, send 300 KiB and stall: three fit the 1 MiB budget.
    let mut uploads = Vec::new();
    for _ in 0..4 {
        let mut request = post_head(Some(700 << 10), "").into_bytes();
        request.extend(std::iter::repeat_n(b' ', 300 << 10));
        uploads.push(connect_and_send(&running, &request).await);
    }
    probe(&running, "a probe while uploads stall").await;
    let mut statuses = Vec::new();
    for upload in &mut uploads {
        let response = read_until_closed(upload, "the answer to a stalled upload").await;
        statuses.push(status_of(&response).to_owned());
        assert!(running.stats().buffered_body_bytes <= 1 << 20);
    }
    statuses.sort();
    assert!(
        statuses.iter().all(|s| s == "408" || s == "503")
            && statuses.contains(&"408".to_owned())
            && statuses.contains(&"503".to_owned()),
        "stalled uploads end with 408 (deadline) or 503 (budget), both seen: {statuses:?}"
    );
    until("the budget is free again", || {
        running.stats().buffered_body_bytes == 0
    })
    .await;
}

#[tokio::test]
async fn slowloris_connections_are_closed_and_the_server_keeps_serving() {
    let running = serve(
        HttpServer::new(test_server(Arc::default()))
            .max_connections(4)
            .header_timeout(Duration::from_millis(300)),
    )
    .await;
    // Every connection slot taken by headers that never end.
    let mut slow = Vec::new();
    for _ in 0..4 {
        slow.push(connect_and_send(&running, b"POST /mcp HTTP/1.1\r\nHost: 127").await);
    }
    probe(&running, "a probe while every slot is held by slowloris").await;
    for stream in &mut slow {
        read_until_closed(stream, "a slowloris connection to be closed").await;
    }
    // An idle keep-alive connection is closed by the same timeout.
    let mut idle =
        connect_and_send(&running, b"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
    let response = read_until_closed(&mut idle, "an idle keep-alive connection to be closed").await;
    assert_eq!(status_of(&response), "400", "{response}");
    until("no connection is left open", || {
        running.stats().connections == 0
    })
    .await;
}

#[tokio::test]
async fn at_the_connection_cap_a_connection_without_a_request_makes_room() {
    // A header timeout far off: only shedding can make room in time.
    let running = serve(
        HttpServer::new(test_server(Arc::default()))
            .max_connections(4)
            .header_timeout(Duration::from_secs(60)),
    )
    .await;
    let mut slow = Vec::new();
    for _ in 0..4 {
        slow.push(connect_and_send(&running, b"POST /mcp HTTP/1.1\r\nHost: 127").await);
    }
    probe(&running, "a probe while every slot is held by slowloris").await;
    let mut closed = 0;
    for stream in &mut slow {
        let mut byte = [0u8; 1];
        // Open ones stay silent; a shed one reads its end at once.
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(200), stream.read(&mut byte)).await
        {
            closed += 1;
        }
    }
    assert!(
        closed >= 1,
        "the probe took the place of a silent connection"
    );
    assert!(running.stats().connections <= 4);
}

/// Open a session by hand and return its id.
async fn initialize(running: &RunningHttpServer) -> String {
    let response = bounded(
        "initialize",
        reqwest::Client::new()
            .post(running.url())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
                .to_string(),
            )
            .send(),
    )
    .await
    .expect("initialize");
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .expect("a session id")
        .to_owned();
    bounded("the initialize answer", response.text())
        .await
        .expect("the body");
    id
}

/// A raw POST of a `flood` call on `session` from a socket with a tiny receive buffer,
/// whose answer is never read.
async fn unread_flood(running: &RunningHttpServer, session: &str, count: u32) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("a socket");
    socket
        .set_recv_buffer_size(4096)
        .expect("a small receive buffer");
    let mut stream = bounded("connect", socket.connect(running.local_addr()))
        .await
        .expect("connect");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "flood", "arguments": {"count": count}, "_meta": {"progressToken": 1}}})
    .to_string();
    let head = post_head(
        Some(body.len()),
        &format!("Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n"),
    );
    bounded("send", stream.write_all(format!("{head}{body}").as_bytes()))
        .await
        .expect("send");
    stream
}

#[tokio::test]
async fn a_client_that_stops_reading_is_cut_after_the_write_timeout() {
    let flooded = Arc::new(Notify::new());
    let running = serve(
        HttpServer::new(test_server(flooded.clone())).write_timeout(Duration::from_millis(300)),
    )
    .await;
    let session = initialize(&running).await;
    // 16 MiB of events, far more than the socket buffers hold.
    let mut stream = unread_flood(&running, &session, 4096).await;
    bounded("the flood to be produced", flooded.notified()).await;
    until("the stalled connection to be closed", || {
        running.stats().connections == 0
    })
    .await;
    assert_eq!(
        running.stats().queued_event_bytes,
        0,
        "what was queued is dropped"
    );
    read_until_closed(&mut stream, "the cut stream to end").await;
    assert_eq!(
        running.session_count(),
        1,
        "the session stays, to be resumed"
    );
    probe(&running, "a probe after the cut").await;
}

#[tokio::test]
async fn streams_that_are_behind_are_cut_at_the_event_budget() {
    let flooded = Arc::new(Notify::new());
    let running = serve(
        HttpServer::new(test_server(flooded.clone()))
            .max_queued_event_bytes(1 << 20)
            .write_timeout(Duration::from_secs(60)),
    )
    .await;
    let session = initialize(&running).await;
    let mut stream = unread_flood(&running, &session, 4096).await;
    bounded("the flood to be produced", flooded.notified()).await;
    assert_eq!(
        running.stats().queued_event_bytes,
        0,
        "the stream went over the 1 MiB budget and its queue was dropped"
    );
    probe(&running, "a probe after the cut").await;
    let answer = read_until_closed(&mut stream, "the cut stream to end").await;
    assert!(
        !answer.contains("flooded"),
        "the cut stream ends before its response (which the event store keeps)"
    );
}

#[tokio::test]
async fn a_thousand_sessions_end_without_an_error() {
    let running = serve(HttpServer::new(test_server(Arc::default()))).await;
    let running = &running;
    let mut done = 0;
    for _ in 0..20 {
        let batch = (0..50).map(|_| probe(running, "one of 1,000 sessions"));
        done += futures_util::future::join_all(batch).await.len();
    }
    assert_eq!(done, 1000);
    assert_eq!(
        running.stats().sessions,
        0,
        "every session was ended with DELETE"
    );
    assert_eq!(running.stats().evicted_sessions, 0);
}
