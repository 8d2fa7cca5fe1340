//! Each engine guarantee of the architecture notes as a named, bounded test.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{ALL, Kind, MEMORY, RawPeer, bounded, bounded_for, pair, tool};
use mcpflow::client::{Client, Era};
use mcpflow::protocol::{CallToolRequestParams, CallToolResult, LoggingLevel};
use mcpflow::server::Server;
use mcpflow::transport::{
    FrameKind, FrameMeta, FrameReader, FrameWriter, InboundFrame, StreamTransport, Transport,
};
use mcpflow::{CloseReason, RequestOptions, SessionConfig, SessionError};
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

/// Guarantee 2: 10,000 progress notifications in one call, all delivered, in order,
/// before the result is returned.
async fn ten_thousand_progress_in_order_before_result(kind: Kind) {
    const N: u32 = 10_000;
    let server = Server::builder("flood", "1")
        .tool(tool("flood"), |_a, cx| async move {
            for i in 0..N {
                let _ = cx.progress(f64::from(i), Some(f64::from(N)), None).await;
            }
            Ok(CallToolResult::text("done"))
        })
        .build();
    let (client, _server) = common::connect(kind, &server, Client::builder("t", "1")).await;
    let seen = Arc::new(Mutex::new(Vec::with_capacity(N as usize)));
    let log = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| log.lock().unwrap().push(p.progress));
    let result = bounded(
        "10,000 progress then the result",
        client.call_tool_with(&CallToolRequestParams::new("flood"), options),
    )
    .await
    .expect("call");
    assert_eq!(result.content[0].as_text(), Some("done"));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.len(),
            N as usize,
            "every notification delivered before the call returned"
        );
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order");
    }
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn ten_thousand_progress_notifications_delivered_in_order_before_the_result() {
    for kind in common::WITH_HTTP {
        ten_thousand_progress_in_order_before_result(kind).await;
    }
}

/// Guarantee 2: notifications are handled one at a time, in receive order.
#[tokio::test]
async fn notifications_are_handled_one_at_a_time_in_receive_order() {
    for kind in ALL {
        let (c, s) = pair(kind);
        let server = tokio::spawn(async move {
            let mut peer = RawPeer::new(s);
            peer.accept_initialize().await;
            for i in 0..500 {
                peer.send(json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":i}})).await;
            }
            peer
        });
        let order = Arc::new(Mutex::new(Vec::new()));
        let busy = Arc::new(AtomicBool::new(false));
        let done = Arc::new(Notify::new());
        let (o, b, d) = (order.clone(), busy.clone(), done.clone());
        let client = Client::builder("t", "1").on_log(move |m, _c| {
            let (o, b, d) = (o.clone(), b.clone(), d.clone());
            async move {
                assert!(
                    !b.swap(true, Ordering::SeqCst),
                    "two notification handlers ran at once"
                );
                tokio::task::yield_now().await;
                let i = m.data.as_u64().expect("number");
                o.lock().unwrap().push(i);
                b.store(false, Ordering::SeqCst);
                if i == 499 {
                    d.notify_one();
                }
            }
        });
        let wait = done.notified();
        let client = bounded("connect", client.connect(c))
            .await
            .expect("connect");
        bounded("all 500 log notifications handled", wait).await;
        assert_eq!(*order.lock().unwrap(), (0..500).collect::<Vec<u64>>());
        let _peer = bounded("server", server).await;
        bounded("close", client.close()).await;
    }
}

/// Guarantees 2 and 3: a burst of 100 `tools/list_changed` costs at most two
/// `tools/list` requests (the running refresh and one more), and ends on the final list.
#[tokio::test]
async fn burst_of_100_list_changed_costs_at_most_two_tools_list_requests() {
    for kind in ALL {
        let (c, s) = pair(kind);
        let server = tokio::spawn(async move {
            let mut peer = RawPeer::new(s);
            peer.accept_initialize().await;
            let first = peer.recv_until(|m| m["method"] == "tools/list").await;
            peer.send(json!({"jsonrpc":"2.0","id":first["id"],"result":{"tools":[{"name":"v1","inputSchema":{"type":"object"}}]}})).await;
            for _ in 0..100 {
                peer.send(json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}))
                    .await;
            }
            let mut lists = 0;
            loop {
                let msg = peer.recv().await.expect("client message");
                if msg["method"] == "tools/list" {
                    lists += 1;
                    peer.send(json!({"jsonrpc":"2.0","id":msg["id"],"result":{"tools":[{"name":"final","inputSchema":{"type":"object"}}]}})).await;
                } else if msg["method"] == "ping" {
                    peer.send(json!({"jsonrpc":"2.0","id":msg["id"],"result":{}}))
                        .await;
                    return lists;
                }
            }
        });
        let client = bounded("connect", Client::builder("t", "1").connect(c))
            .await
            .expect("connect");
        // The burst may already have been read: the first list is then the final one.
        bounded("initial list", client.tools())
            .await
            .expect("tools");
        // Wait for the refresh to land on the final list, then let the server count.
        bounded("the refresh lands on the final list", async {
            while client.tools().await.expect("tools")[0].name != "final" {
                tokio::task::yield_now().await;
            }
        })
        .await;
        bounded("ping", client.ping()).await.expect("ping");
        let lists = bounded("server count", server).await.expect("server");
        assert!(
            (1..=2).contains(&lists),
            "{lists} tools/list requests for a burst of 100 ({kind:?})"
        );
        bounded("close", client.close()).await;
    }
}

/// Guarantee 3: 10,000 requests at once. At most `max_concurrent + queue` are held;
/// the rest get a busy error at once, and the admitted ones complete when released.
#[tokio::test]
async fn ten_thousand_peer_requests_at_once_bounded_with_busy_errors() {
    for kind in ALL {
        let (log, guard) = common::logs::capture();
        ten_thousand_peer_requests_at_once_bounded_with_busy_errors_over(kind).await;
        drop(guard);
        // The refusals are logged the first time, then as a count (per 10 s, and when
        // the connection ends), not once each: every one is counted, in a few lines.
        let lines: Vec<String> = log
            .text()
            .lines()
            .filter(|l| l.contains("WARN") && l.contains("refused"))
            .map(str::to_owned)
            .collect();
        let counted: u64 = lines
            .iter()
            .filter_map(|l| l.split("refused=").nth(1))
            .filter_map(|n| n.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        assert!(
            lines.len() <= 4,
            "{kind:?}: {} lines: {lines:#?}",
            lines.len()
        );
        assert_eq!(counted, 10_000 - 20, "{kind:?}: {lines:#?}");
    }
}

async fn ten_thousand_peer_requests_at_once_bounded_with_busy_errors_over(kind: Kind) {
    const N: usize = 10_000;
    let (release, released) = watch::channel(false);
    let config = SessionConfig::builder()
        .max_concurrent_requests(std::num::NonZeroUsize::new(4).unwrap())
        .request_queue_capacity(16)
        .build();
    let server = Server::builder("busy", "1")
        .session_config(config)
        .tool(tool("hold"), move |_a, _cx| {
            let mut released = released.clone();
            async move {
                let _ = released.wait_for(|r| *r).await;
                Ok(CallToolResult::text("ok"))
            }
        })
        .build();
    let (c, s) = pair(kind);
    let running = server.serve(s);
    let (mut reader, mut writer) = c.split();
    let meta = FrameMeta::new(FrameKind::Request);
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}});
    writer
        .write_frame(init.to_string().into_bytes().into(), &meta)
        .await
        .unwrap();
    let sender = tokio::spawn(async move {
        for id in 1..=N {
            let call =
                json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"hold"}});
            writer
                .write_frame(call.to_string().into_bytes().into(), &meta)
                .await
                .unwrap();
        }
        writer.flush().await.unwrap();
        writer
    });
    let (mut busy, mut ok) = (0, 0);
    let mut peak = 0;
    while busy + ok < N {
        let frame = bounded(
            &format!("flood replies over {kind:?} after {busy} busy and {ok} ok"),
            reader.read_frame(),
        )
        .await
        .unwrap()
        .expect("frame");
        let InboundFrame::Message(bytes) = frame else {
            panic!("oversized")
        };
        let msg: Value = serde_json::from_slice(&bytes).unwrap();
        if msg["id"] == 0 {
            continue;
        }
        peak = peak.max(running.peer().requests_in_flight());
        if msg["error"]["data"]["reason"] == "busy" {
            busy += 1;
            assert_eq!(msg["error"]["code"], -32603);
            if busy == N - 20 {
                let _ = release.send(true);
            }
        } else {
            assert_eq!(msg["result"]["content"][0]["text"], "ok");
            ok += 1;
        }
    }
    assert_eq!(
        (ok, busy),
        (20, N - 20),
        "4 running + 16 queued admitted, the rest refused at once"
    );
    assert!(peak <= 20, "at most 20 requests held at once, saw {peak}");
    let _writer = bounded("sender", sender).await.unwrap();
    bounded("close", running.close()).await;
}

/// Guarantee 6: a request that gets no answer times out (paused clock), the server
/// observes `notifications/cancelled`, and a late answer would be ignored.
#[tokio::test(start_paused = true)]
async fn request_times_out_and_the_server_observes_cancellation() {
    for kind in MEMORY {
        request_times_out_and_the_server_observes_cancellation_over(kind).await;
    }
}

async fn request_times_out_and_the_server_observes_cancellation_over(kind: Kind) {
    let cancelled = Arc::new(Notify::new());
    let observed = cancelled.clone();
    let server = Server::builder("slow", "1")
        .tool(tool("slow"), move |_a, cx| {
            let observed = observed.clone();
            async move {
                cx.cancellation().cancelled().await;
                observed.notify_one();
                Ok(CallToolResult::text("never sent"))
            }
        })
        .build();
    let (c, s) = pair(kind);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let wait = cancelled.notified();
    let options = RequestOptions::new().timeout(Duration::from_secs(5));
    let err = bounded(
        "timeout",
        client.call_tool_with(&CallToolRequestParams::new("slow"), options),
    )
    .await
    .expect_err("times out");
    assert!(matches!(err, SessionError::Timeout { .. }), "{err}");
    bounded("the server observed notifications/cancelled", wait).await;
    assert_eq!(client.peer().pending_requests(), 0);
    bounded("ping after timeout", client.ping())
        .await
        .expect("still serving");
    bounded("close", client.close()).await;
}

/// Guarantee 6: progress restarts the timeout clock; the maximum total still applies.
#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout_and_max_total_caps_it() {
    for kind in MEMORY {
        progress_resets_the_timeout_and_max_total_caps_it_over(kind).await;
    }
}

async fn progress_resets_the_timeout_and_max_total_caps_it_over(kind: Kind) {
    let server = Server::builder("ticker", "1")
        .tool(tool("tick"), |_a, cx| async move {
            for i in 0..6 {
                tokio::time::sleep(Duration::from_secs(4)).await;
                let _ = cx.progress(f64::from(i), None, None).await;
            }
            Ok(CallToolResult::text("finished"))
        })
        .build();
    let (c, s) = pair(kind);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let params = CallToolRequestParams::new("tick");
    let kept_alive = RequestOptions::new()
        .timeout(Duration::from_secs(5))
        .with_progress_token();
    let result = bounded_for(
        Duration::from_secs(60),
        "call kept alive by progress",
        client.call_tool_with(&params, kept_alive),
    )
    .await;
    assert_eq!(
        result.expect("progress kept it alive").content[0].as_text(),
        Some("finished")
    );
    let capped = RequestOptions::new()
        .timeout(Duration::from_secs(5))
        .max_total(Duration::from_secs(10))
        .with_progress_token();
    let err = bounded_for(
        Duration::from_secs(60),
        "call capped in total",
        client.call_tool_with(&params, capped),
    )
    .await
    .expect_err("capped");
    assert!(
        matches!(err, SessionError::MaxTotalExceeded { .. }),
        "{err}"
    );
    bounded("close", client.close()).await;
}

/// Guarantee 6: dropping a call's future cancels it on the server.
#[tokio::test]
async fn dropping_a_call_sends_cancelled() {
    for kind in ALL {
        let started = Arc::new(Notify::new());
        let cancelled = Arc::new(Notify::new());
        let (s1, c1) = (started.clone(), cancelled.clone());
        let server = Server::builder("slow", "1")
            .tool(tool("slow"), move |_a, cx| {
                let (s1, c1) = (s1.clone(), c1.clone());
                async move {
                    s1.notify_one();
                    cx.cancellation().cancelled().await;
                    c1.notify_one();
                    Ok(CallToolResult::text("never"))
                }
            })
            .build();
        let (c, s) = pair(kind);
        let _running = server.serve(s);
        let client = bounded("connect", Client::builder("t", "1").connect(c))
            .await
            .expect("connect");
        let wait_cancel = cancelled.notified();
        tokio::select! {
            _ = client.call_tool("slow", json!({})) => panic!("the call cannot finish"),
            () = started.notified() => {}
        }
        bounded(
            "the server observed the dropped call's cancellation",
            wait_cancel,
        )
        .await;
        bounded("close", client.close()).await;
    }
}

/// Guarantee 6: a late response to a timed-out request is ignored.
#[tokio::test(start_paused = true)]
async fn late_response_after_timeout_is_ignored() {
    for kind in MEMORY {
        late_response_after_timeout_is_ignored_over(kind).await;
    }
}

async fn late_response_after_timeout_is_ignored_over(kind: Kind) {
    let (c, s) = pair(kind);
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::new(s);
        peer.accept_initialize().await;
        let call = peer.recv_tool_call().await;
        let cancel = peer
            .recv_until(|m| m["method"] == "notifications/cancelled")
            .await;
        assert_eq!(cancel["params"]["requestId"], call["id"]);
        peer.send(json!({"jsonrpc":"2.0","id":call["id"],"result":{"content":[]}}))
            .await;
        let ping = peer.recv_until(|m| m["method"] == "ping").await;
        peer.send(json!({"jsonrpc":"2.0","id":ping["id"],"result":{}}))
            .await;
        peer
    });
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let options = RequestOptions::new().timeout(Duration::from_secs(1));
    let err = bounded(
        "timeout",
        client.call_tool_with(&CallToolRequestParams::new("x"), options),
    )
    .await;
    assert!(matches!(err, Err(SessionError::Timeout { .. })));
    bounded("ping after the late response", client.ping())
        .await
        .expect("ping");
    let _peer = bounded("server", server).await;
    bounded("close", client.close()).await;
}

/// Guarantee 6: when the peer goes away every pending request fails at once, naming why.
#[tokio::test]
async fn every_pending_request_fails_at_once_when_the_peer_closes() {
    for kind in ALL {
        let (c, s) = pair(kind);
        let server = tokio::spawn(async move {
            let mut peer = RawPeer::new(s);
            peer.accept_initialize().await;
            for _ in 0..3 {
                peer.recv_tool_call().await;
            }
            drop(peer);
        });
        let client = bounded("connect", Client::builder("t", "1").connect(c))
            .await
            .expect("connect");
        let calls = futures_join3(
            client.call_tool("a", json!({})),
            client.call_tool("b", json!({})),
            client.call_tool("c", json!({})),
        );
        let (a, b, c) = bounded("all three fail when the peer closes", calls).await;
        for r in [a, b, c] {
            let err = r.expect_err("peer closed");
            assert!(err.is_closed(), "{err}");
            assert!(matches!(
                err,
                SessionError::Closed {
                    reason: CloseReason::PeerClosed | CloseReason::Transport(_),
                    ..
                }
            ));
        }
        bounded("server", server).await.unwrap();
        bounded("close", client.close()).await;
    }
}

async fn futures_join3<A: std::future::Future, B: std::future::Future, C: std::future::Future>(
    a: A,
    b: B,
    c: C,
) -> (A::Output, B::Output, C::Output) {
    tokio::join!(a, b, c)
}

/// Guarantee 8: bad input gets a JSON-RPC error (or a log line for responses) and the
/// connection keeps serving.
#[tokio::test]
async fn malformed_input_is_answered_and_the_connection_keeps_serving() {
    let server = Server::builder("strict", "1")
        .tool(tool("t"), |_a, _c| async { Ok(CallToolResult::text("x")) })
        .build();
    let (a, b) = tokio::net::UnixStream::pair().unwrap();
    let (ar, aw) = a.into_split();
    let (br, bw) = b.into_split();
    let _running = server.serve(StreamTransport::new(br, bw).max_frame_bytes(4096));
    let mut peer = RawPeer::new(common::AnyTransport::Stream(StreamTransport::new(ar, aw)));
    let cases: &[(&str, Value, i64)] = &[
        ("{not json", Value::Null, -32700),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            json!(1),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            Value::Null,
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","id":2}"#, json!(2), -32600),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":"x"}"#,
            json!(3),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"server/discover"}"#,
            json!(4),
            -32602,
        ),
        (
            r#"[{"jsonrpc":"2.0","id":5,"method":"ping"}]"#,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope"}}"#,
            json!(6),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"t","task":5}}"#,
            json!(21),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"t","_meta":3}}"#,
            json!(22),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"bogus"}}"#,
            json!(7),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"x://none"}}"#,
            json!(8),
            -32601,
        ),
    ];
    for (input, id, code) in cases {
        peer.send_text(input).await;
        let reply = bounded(input, peer.recv()).await.expect("reply");
        assert_eq!(reply["id"], *id, "{input} -> {reply}");
        assert_eq!(reply["error"]["code"], *code, "{input} -> {reply}");
    }
    // A response to an unknown id and invalid UTF-8 produce no crash.
    peer.send_text(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#)
        .await;
    // An oversized frame is skipped and answered by its id.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(10_000)
    );
    peer.send_text(&big).await;
    let reply = bounded("oversized", peer.recv()).await.expect("reply");
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!(9), json!(-32600)),
        "{reply}"
    );
    peer.send_text(r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#)
        .await;
    let reply = bounded("still serving", peer.recv()).await.expect("reply");
    assert_eq!(reply, json!({"jsonrpc":"2.0","id":10,"result":{}}));
}

/// A request cancelled in the same burst that brought it, before its task started,
/// never reaches its handler and is not answered.
#[tokio::test]
async fn a_request_cancelled_before_it_starts_never_runs() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let server = Server::builder("cancel-early", "1")
        .tool(tool("t"), move |_a, _c| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok(CallToolResult::text("ran")) }
        })
        .build();
    let (a, b) = tokio::net::UnixStream::pair().unwrap();
    let (ar, aw) = a.into_split();
    let (br, bw) = b.into_split();
    let _running = server.serve(StreamTransport::new(br, bw));
    let mut peer = RawPeer::new(common::AnyTransport::Stream(StreamTransport::new(ar, aw)));
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#;
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    peer.send_text(&format!("{request}\n{cancel}\n{ping}"))
        .await;
    let reply = bounded("the ping after the cancelled request", peer.recv())
        .await
        .expect("reply");
    assert_eq!(
        reply,
        json!({"jsonrpc":"2.0","id":2,"result":{}}),
        "no answer to id 1"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler never ran");
}

/// Guarantee 4: the writer batches: a burst of frames shares few flushes.
#[tokio::test]
async fn writer_batches_frames_and_flushes_once_per_batch() {
    struct Counting<W> {
        inner: W,
        flushes: Arc<AtomicUsize>,
        lines: Arc<AtomicUsize>,
    }
    impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Counting<W> {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let poll = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
            if let std::task::Poll::Ready(Ok(n)) = &poll {
                let newlines = buf[..*n].iter().filter(|b| **b == b'\n').count();
                self.lines.fetch_add(newlines, Ordering::Relaxed);
            }
            poll
        }
        fn poll_flush(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            self.flushes.fetch_add(1, Ordering::Relaxed);
            std::pin::Pin::new(&mut self.inner).poll_flush(cx)
        }
        fn poll_shutdown(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }
    let server = Server::builder("burst", "1")
        .tool(tool("burst"), |_a, cx| async move {
            for i in 0..2000 {
                let _ = cx.log(LoggingLevel::Info, i).await;
            }
            Ok(CallToolResult::text("done"))
        })
        .build();
    let (a, b) = tokio::net::UnixStream::pair().unwrap();
    let (ar, aw) = a.into_split();
    let (br, bw) = b.into_split();
    let (flushes, lines) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let writer = Counting {
        inner: bw,
        flushes: flushes.clone(),
        lines: lines.clone(),
    };
    let _running = server.serve(StreamTransport::new(br, writer));
    let client = bounded(
        "connect",
        Client::builder("t", "1").connect(StreamTransport::new(ar, aw)),
    )
    .await
    .expect("connect");
    bounded("burst call", client.call_tool("burst", json!({})))
        .await
        .expect("call");
    let (f, l) = (
        flushes.load(Ordering::Relaxed),
        lines.load(Ordering::Relaxed),
    );
    assert!(l >= 2000, "{l} lines");
    assert!(
        f * 10 < l,
        "{f} flushes for {l} frames: the writer must batch"
    );
    bounded("close", client.close()).await;
}

/// A response that follows progress sent for its request is written apart from it
/// (`FrameWriter::flush_apart`), so clients that lose progress arriving in the same
/// read as its response (the TypeScript SDK 1.x) get all of it; a response to a
/// request that sent nothing, or only a log, is not. Those calls are sequential, so
/// answers the writer need not keep apart go out directly (`try_write_now`).
#[tokio::test]
async fn a_response_after_its_requests_notifications_is_written_apart() {
    let server = Server::builder("apart", "1")
        .tool(tool("chatty"), |_a, cx| async move {
            for i in 0..3 {
                cx.progress(f64::from(i), Some(3.0), None).await.unwrap();
            }
            // Let the writer write them (one thread): the answer then finds the writer
            // idle, and must still not go out directly.
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            Ok(CallToolResult::text("done"))
        })
        .tool(tool("quiet"), |_a, _cx| async {
            Ok(CallToolResult::text("done"))
        })
        .tool(tool("logging"), |_a, cx| async move {
            let _ = cx.log(LoggingLevel::Info, "a log line").await;
            Ok(CallToolResult::text("done"))
        })
        .build();
    let (transport, theirs, log) = common::recording_socket_pair();
    let _running = server.serve(transport);
    // Handshake only, so that `initialize` is request 1.
    let client = bounded(
        "connect",
        Client::builder("t", "1")
            .era(Era::Handshake)
            .connect(theirs),
    )
    .await
    .expect("connect");
    // Listed first (request 2), so the calls are requests 3, 4 and 5.
    bounded("tools", client.tools()).await.expect("tools");
    for name in ["chatty", "quiet", "logging"] {
        let options = RequestOptions::new().on_progress(|_| {});
        let mut params = CallToolRequestParams::new(name);
        params.arguments = Some(serde_json::Map::new());
        bounded(name, client.call_tool_with(&params, options))
            .await
            .expect("call");
    }
    let log: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .map(|written| match written {
            common::Written::Frame {
                direct,
                kind,
                message,
            } => {
                let path = if *direct { "direct " } else { "" };
                match kind {
                    FrameKind::Response(_) => format!("{path}response {}", message["id"]),
                    FrameKind::Notification => format!("{path}notification"),
                    FrameKind::Progress => format!("{path}progress"),
                    _ => format!("{path}other"),
                }
            }
            common::Written::Apart => "apart".to_owned(),
        })
        .collect();
    let answered = |id: &str| {
        log.iter()
            .position(|e| e.ends_with(&format!("response {id}")))
            .unwrap_or_else(|| panic!("request {id} answered: {log:?}"))
    };
    let (chatty, quiet, logging) = (answered("3"), answered("4"), answered("5"));
    // Through the writer, which keeps it apart: never directly.
    assert_eq!(log[chatty], "response 3", "{log:?}");
    assert_eq!(log[chatty - 1], "apart", "{log:?}");
    assert_eq!(log[chatty - 2], "progress", "{log:?}");
    assert_ne!(log[quiet - 1], "apart", "{log:?}");
    assert_eq!(
        log[quiet], "direct response 4",
        "a sequential answer: {log:?}"
    );
    // A log is not lost with its response: no wait for it.
    assert_eq!(log[logging - 1], "notification", "{log:?}");
    assert_eq!(log.iter().filter(|e| *e == "apart").count(), 1, "{log:?}");
    bounded("close", client.close()).await;
}

/// Guarantee 6 over a real child process: the server dies mid-call; the call fails
/// promptly with its exit status and the last lines of its stderr.
#[tokio::test]
async fn child_killed_mid_call_fails_the_call_with_exit_status_and_stderr_tail() {
    let script = r#"
read -r line
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}'
read -r line
read -r line
echo "fatal: the model ran out of cheese" >&2
kill -9 $$
"#;
    let child = mcpflow::transport::ChildProcess::builder("sh")
        .arg("-c")
        .arg(script)
        .spawn()
        .expect("spawn sh");
    // The script answers the first line as `initialize`: no `server/discover` probe.
    let client = bounded(
        "connect",
        Client::builder("t", "1").era(Era::Handshake).connect(child),
    )
    .await
    .expect("connect");
    let err = bounded(
        "the call fails when the child dies",
        client.call_tool("x", json!({})),
    )
    .await
    .expect_err("child died");
    let (status, stderr_tail) = common::process_exited(&err);
    assert!(status.contains("signal: 9"), "{status}");
    assert!(stderr_tail.contains("out of cheese"), "{stderr_tail}");
    assert!(
        err.to_string().contains("out of cheese"),
        "the message carries the stderr tail: {err}"
    );
    bounded("close", client.close()).await;
}

/// Guarantee 7: close is orderly and bounded even with a handler that ignores
/// cancellation.
#[tokio::test(start_paused = true)]
async fn close_is_bounded_when_a_handler_ignores_cancellation() {
    for kind in MEMORY {
        close_is_bounded_when_a_handler_ignores_cancellation_over(kind).await;
    }
}

/// Notifies when dropped: tells a test that a handler's future is gone.
struct Dropped(Arc<Notify>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// A server over `kind` whose only tool never returns and ignores cancellation, a client
/// calling it, and the call, once the tool has started. `dropped` is notified when the
/// tool's future is dropped.
async fn stubborn_call(kind: Kind, dropped: Arc<Notify>) -> StartedCall {
    let started = Arc::new(Notify::new());
    let s1 = started.clone();
    let server = Server::builder("stubborn", "1")
        .tool(tool("stubborn"), move |_a, _cx| {
            let (s1, guard) = (s1.clone(), Dropped(dropped.clone()));
            async move {
                let _guard = guard;
                s1.notify_one();
                std::future::pending::<()>().await;
                Ok(CallToolResult::text("never"))
            }
        })
        .build();
    start_call(kind, &server, "stubborn", &started).await
}

/// A running server, a client of it, and a call in flight.
type StartedCall = (
    mcpflow::server::RunningServer,
    Client,
    tokio::task::JoinHandle<Result<CallToolResult, SessionError>>,
);

/// Serve `server` over `kind`, connect a client and call `tool`, returning once the
/// tool has notified `started`.
async fn start_call(kind: Kind, server: &Server, tool: &str, started: &Notify) -> StartedCall {
    let (c, s) = pair(kind);
    let running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let handle = client.handle();
    let tool = tool.to_owned();
    let call = tokio::spawn(async move { handle.call_tool(&tool, json!({})).await });
    bounded("tool started", started.notified()).await;
    (running, client, call)
}

async fn close_is_bounded_when_a_handler_ignores_cancellation_over(kind: Kind) {
    let (running, client, call) = stubborn_call(kind, Arc::new(Notify::new())).await;
    bounded("server close is bounded", running.close()).await;
    let result = bounded("the client's call ends", call).await.unwrap();
    // The handler never answers, so the call ends because the server's side went away.
    assert!(
        matches!(
            &result,
            Err(SessionError::Closed {
                reason: CloseReason::PeerClosed,
                ..
            })
        ),
        "{kind:?}: {result:?}"
    );
    bounded("client close", client.close()).await;
}

/// Guarantee 6: a panic on the reader (here in a `Service::observe_notification`) ends
/// the connection: a pending request fails at once, naming the reader, instead of
/// waiting out its timeout.
#[tokio::test]
async fn a_panic_on_the_reader_fails_pending_requests_at_once() {
    use mcpflow::protocol::jsonrpc::Notification;
    use mcpflow::protocol::{ErrorCode, ErrorObject};
    use mcpflow::session::{BoxFuture, Peer, Reply, RequestContext, Service, Session};

    struct PanicsOnObserve;
    impl Service for PanicsOnObserve {
        fn handle_request(
            &self,
            _method: &str,
            _cx: RequestContext,
        ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
            Box::pin(async { Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "none")) })
        }
        fn handle_notification(&self, _n: Notification, _peer: Peer) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
        fn observe_notification(&self, n: &Notification, _peer: &Peer) {
            assert_ne!(n.method, "test/panic", "a bug in the observer");
        }
    }

    // A pipe with room: the notification is written whole before the reader takes it
    // (and then the session, as it should, drops its end).
    let (ours, theirs) = pair(Kind::MemoryLarge);
    let session = Session::start(ours, Arc::new(PanicsOnObserve), Default::default());
    let mut raw = RawPeer::new(theirs);
    let peer = session.peer().clone();
    let call =
        tokio::spawn(async move { peer.request_raw("slow", None, RequestOptions::new()).await });
    bounded(
        "the request arrives",
        raw.recv_until(|m| m["method"] == "slow"),
    )
    .await;
    raw.send(json!({"jsonrpc": "2.0", "method": "test/panic"}))
        .await;
    let err = bounded("the call fails at once", call)
        .await
        .unwrap()
        .expect_err("no answer came");
    assert!(
        matches!(
            &err,
            SessionError::Closed {
                reason: mcpflow::CloseReason::EngineStopped("reader"),
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("reader stopped unexpectedly"),
        "{err}"
    );
    bounded("close", session.close()).await;
}

/// Guarantee 7: close cancels the handlers still running and waits for them: a handler
/// that winds down within the close grace has finished when `close` returns.
#[tokio::test(start_paused = true)]
async fn close_waits_for_cancelled_handlers_to_wind_down() {
    for kind in MEMORY {
        let started = Arc::new(Notify::new());
        let wound_down = Arc::new(AtomicBool::new(false));
        let (s1, w1) = (started.clone(), wound_down.clone());
        let server = Server::builder("tidy", "1")
            .tool(tool("tidy"), move |_a, cx| {
                let (s1, w1) = (s1.clone(), w1.clone());
                async move {
                    s1.notify_one();
                    cx.cancellation().cancelled().await;
                    // Cleanup that takes a while, well inside the close grace (2 s).
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    w1.store(true, Ordering::SeqCst);
                    Ok(CallToolResult::text("cancelled"))
                }
            })
            .build();
        let (running, client, call) = start_call(kind, &server, "tidy", &started).await;
        bounded("server close", running.close()).await;
        assert!(
            wound_down.load(Ordering::SeqCst),
            "close returned before the cancelled handler finished ({kind:?})"
        );
        let result = bounded("the client's call ends", call).await.unwrap();
        assert!(result.is_err(), "{kind:?}");
        bounded("client close", client.close()).await;
    }
}

/// Guarantee 7: no task outlives its connection. Dropping a server's connection drops
/// the handlers still running, even one that ignores cancellation, at once (no grace).
#[tokio::test(start_paused = true)]
async fn dropping_a_connection_drops_handlers_that_ignore_cancellation() {
    for kind in MEMORY {
        let dropped = Arc::new(Notify::new());
        let (running, client, call) = stubborn_call(kind, dropped.clone()).await;
        drop(running);
        // Well inside the close grace (2 s): the drop does not wait for it.
        bounded_for(
            Duration::from_millis(100),
            "the handler's future is dropped with its connection",
            dropped.notified(),
        )
        .await;
        let result = bounded("the client's call ends", call).await.unwrap();
        assert!(result.is_err(), "{kind:?}");
        bounded("client close", client.close()).await;
    }
}

/// Guarantee 2: after a call returns, `notifications_handled` waits exactly until the
/// notifications sent before the result have run their handlers (no sleeps, no polls).
#[tokio::test]
async fn notifications_before_a_response_are_handled_after_the_barrier() {
    for kind in ALL {
        let server = Server::builder("chatty", "1")
            .tool(tool("chatty"), |_a, cx| async move {
                for i in 0..50 {
                    let _ = cx.log(LoggingLevel::Info, i).await;
                }
                Ok(CallToolResult::text("done"))
            })
            .build();
        let (c, s) = pair(kind);
        let _running = server.serve(s);
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        let client = Client::builder("t", "1").on_log(move |_m, client| {
            let seen = seen.clone();
            async move {
                // A slow handler, and a barrier from inside the lane must not wait for itself.
                tokio::task::yield_now().await;
                client.notifications_handled().await;
                seen.fetch_add(1, Ordering::SeqCst);
            }
        });
        let client = bounded("connect", client.connect(c))
            .await
            .expect("connect");
        bounded("call", client.call_tool("chatty", json!({})))
            .await
            .expect("call");
        bounded("barrier", client.notifications_handled()).await;
        assert_eq!(
            count.load(Ordering::SeqCst),
            50,
            "all 50 logs handled when the barrier returns ({kind:?})"
        );
        bounded("close", client.close()).await;
    }
}
