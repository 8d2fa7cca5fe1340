//! A scripted raw JSON-RPC peer (no SDK) that misbehaves on purpose, against the
//! mcpflow client and the mcpflow server.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{ALL, Kind, RawPeer, bounded, bounded_for, pair};
use mcpflow::client::{Client, Era};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::Server;
use mcpflow::{RequestOptions, SessionConfig, SessionError};
use serde_json::json;
use tokio::sync::Notify;

const INIT_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}"#;

/// The client faces a server that sends notifications and a request before its
/// initialize result, garbage lines, duplicate and unknown response ids, and string
/// ids that look like numbers.
#[tokio::test]
async fn client_survives_a_misbehaving_server() {
    let (c, s) = pair(Kind::Memory0);
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::new(s);
        let init = peer.recv().await.unwrap();
        // Before the initialize result: a log, a list_changed, garbage, and a ping.
        peer.send(json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"early"}})).await;
        peer.send(json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}))
            .await;
        peer.send_text("this is not json").await;
        peer.send(json!({"jsonrpc":"2.0","id":"srv-1","method":"ping"}))
            .await;
        let (a, b) = (peer.recv().await.unwrap(), peer.recv().await.unwrap());
        let (garbage_reply, pong) = if a["id"] == "srv-1" { (b, a) } else { (a, b) };
        assert_eq!(
            pong["result"],
            json!({}),
            "the client answers ping during the handshake: {pong}"
        );
        assert_eq!(
            garbage_reply["error"]["code"], -32700,
            "garbage is answered with a parse error: {garbage_reply}"
        );
        // The initialize result, with the id as a string that looks like the number.
        let id = init["id"].as_i64().unwrap().to_string();
        peer.send_text(&format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","result":{INIT_RESULT}}}"#
        ))
        .await;
        peer.recv_until(|m| m["method"] == "notifications/initialized")
            .await;
        // A call: answer twice (a duplicate), plus an unknown id.
        let call = peer.recv_tool_call().await;
        let answer = json!({"jsonrpc":"2.0","id":call["id"],"result":{"content":[{"type":"text","text":"first"}]}});
        peer.send(json!({"jsonrpc":"2.0","id":424242,"result":{}}))
            .await;
        peer.send(answer.clone()).await;
        peer.send(json!({"jsonrpc":"2.0","id":call["id"],"result":{"content":[{"type":"text","text":"second"}]}})).await;
        let ping = peer.recv_answering_lists(|m| m["method"] == "ping").await;
        peer.send(json!({"jsonrpc":"2.0","id":ping["id"],"result":{}}))
            .await;
        peer
    });
    let logged = Arc::new(Notify::new());
    let signal = logged.clone();
    // The script plays the handshake era from the first message.
    let client = Client::builder("t", "1")
        .era(Era::Handshake)
        .on_log(move |_m, _c| {
            let signal = signal.clone();
            async move { signal.notify_one() }
        });
    let wait = logged.notified();
    let client = bounded("connect through the noise", client.connect(c))
        .await
        .expect("connect");
    bounded("the early log was delivered", wait).await;
    let result = bounded("call", client.call_tool("x", json!({})))
        .await
        .expect("call");
    assert_eq!(
        result.content[0].as_text(),
        Some("first"),
        "the first answer wins; the duplicate is ignored"
    );
    bounded("still serving", client.ping()).await.expect("ping");
    let _peer = bounded("server script", server).await.unwrap();
    bounded("close", client.close()).await;
}

/// Responses in every layout a peer may use complete their request with exactly their
/// result (escapes included), read typed and raw: `result` last or first, with spaces
/// around the tokens, or after a long member. A truncated response is a response all the
/// same (its members read before the cut say so): its call fails at once naming the
/// cause, the peer gets no error back for it, a late proper answer is ignored, and the
/// next call is served.
#[tokio::test]
async fn responses_in_any_layout_complete_their_requests() {
    for kind in ALL {
        responses_in_any_layout_complete_their_requests_over(kind).await;
    }
}

async fn responses_in_any_layout_complete_their_requests_over(kind: Kind) {
    let (c, s) = pair(kind);
    let pad = "p".repeat(300);
    let layouts: Vec<String> = vec![
        r#"{"jsonrpc":"2.0","id":ID,"result":RESULT}"#.into(),
        r#"{"result":RESULT,"id":ID,"jsonrpc":"2.0"}"#.into(),
        format!(r#"{{"jsonrpc":"2.0","x":"{pad}","id":ID,"result":RESULT}}"#),
        r#" {"id" : ID , "jsonrpc" : "2.0" , "result" : RESULT } "#.into(),
    ];
    let count = layouts.len();
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::new(s);
        peer.accept_initialize().await;
        for layout in layouts {
            let call = peer.recv_tool_call().await;
            let text = call["params"]["arguments"]["text"].clone();
            let result = json!({"content":[{"type":"text","text":text}],"isError":false});
            let frame = layout
                .replace("ID", &call["id"].to_string())
                .replace("RESULT", &result.to_string());
            peer.send_text(&frame).await;
        }
        // Unreadable: a truncated response, then the same id answered properly (late).
        let call = peer.recv_tool_call().await;
        let id = call["id"].to_string();
        peer.send_text(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]"#
        ))
        .await;
        peer.send_text(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"late"}}]}}}}"#
        ))
        .await;
        // The next message is the next call: no parse error was sent for a response.
        let next = peer.recv().await.unwrap();
        assert_eq!(
            next["method"], "tools/call",
            "nothing answers a response: {next}"
        );
        peer.send(json!({"jsonrpc":"2.0","id":next["id"],"result":{"content":[{"type":"text","text":"after"}]}}))
            .await;
        peer
    });
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    for i in 0..count {
        let text = format!("call {i} \"quoted\" \u{e9} \\ end");
        if i % 2 == 0 {
            let result = bounded("typed call", client.call_tool("x", json!({ "text": text })))
                .await
                .expect("call");
            assert_eq!(
                result.content[0].as_text(),
                Some(text.as_str()),
                "layout {i} over {kind:?}"
            );
        } else {
            let params =
                serde_json::value::to_raw_value(&json!({"name":"x","arguments":{"text": text}}))
                    .unwrap();
            let raw = bounded(
                "raw call",
                client
                    .peer()
                    .request_raw("tools/call", Some(params), RequestOptions::new()),
            )
            .await
            .expect("raw call");
            let value: serde_json::Value = serde_json::from_str(raw.get()).unwrap();
            assert_eq!(
                value["content"][0]["text"], text,
                "layout {i} over {kind:?}"
            );
        }
    }
    let unreadable = bounded(
        "a call answered unreadably",
        client.call_tool("x", json!({})),
    )
    .await;
    match unreadable {
        Err(SessionError::Codec { detail, .. }) => {
            assert!(detail.contains("unreadable"), "{detail} over {kind:?}");
        }
        other => panic!("a truncated response over {kind:?}: {other:?}"),
    }
    let result = bounded(
        "call after an unreadable response",
        client.call_tool("x", json!({})),
    )
    .await
    .expect("call");
    assert_eq!(result.content[0].as_text(), Some("after"));
    let _peer = bounded("server script", server).await.unwrap();
    bounded("close", client.close()).await;
}

/// A response whose head is well formed but whose result is not (a member after it, a
/// brace short): the call fails at once with an error that says so, instead of waiting
/// for its timeout, and the connection keeps serving.
#[tokio::test]
async fn a_response_with_a_malformed_result_fails_its_call_at_once() {
    for kind in ALL {
        let (c, s) = pair(kind);
        let tails = [
            r#"{"content":[]},"error":{"code":1,"message":"m"}}"#,
            r#"{"content":[{"type":"text","text":"x"}]}"#,
        ];
        let server = tokio::spawn(async move {
            let mut peer = RawPeer::new(s);
            peer.accept_initialize().await;
            for tail in tails {
                let call = peer.recv_tool_call().await;
                let head = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"#, call["id"]);
                peer.send_text(&format!("{head}{tail}")).await;
            }
            let call = peer.recv_tool_call().await;
            peer.send(json!({"jsonrpc":"2.0","id":call["id"],"result":{"content":[{"type":"text","text":"fine"}]}}))
                .await;
            peer
        });
        let client = bounded("connect", Client::builder("t", "1").connect(c))
            .await
            .expect("connect");
        for tail in tails {
            fails_with(&client, "result", &format!("{tail} over {kind:?}")).await;
        }
        answers_fine(&client).await;
        let _peer = bounded("server script", server).await.unwrap();
        bounded("close", client.close()).await;
    }
}

/// The next call fails at once with a codec error whose detail names `expected`.
async fn fails_with(client: &Client, expected: &str, what: &str) {
    match bounded(what, client.call_tool("x", json!({}))).await {
        Err(SessionError::Codec { detail, .. }) => {
            assert!(detail.contains(expected), "{what}: {detail}");
        }
        other => panic!("{what}: {other:?}"),
    }
}

/// The next call is answered `fine`: the connection kept serving.
async fn answers_fine(client: &Client) {
    let result = bounded("the next call", client.call_tool("x", json!({})))
        .await
        .expect("the connection keeps serving");
    assert_eq!(result.content[0].as_text(), Some("fine"));
}

/// A response over the client's frame limit: the call fails at once naming the limit
/// (not at its timeout), nothing is sent back for the response, and the connection
/// keeps serving.
#[tokio::test]
async fn a_response_over_the_frame_limit_fails_its_call_at_once() {
    let (a, b) = tokio::net::UnixStream::pair().unwrap();
    let ((ar, aw), (br, bw)) = (a.into_split(), b.into_split());
    let client_side = mcpflow::transport::StreamTransport::new(ar, aw).max_frame_bytes(4096);
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::new(common::AnyTransport::Stream(
            mcpflow::transport::StreamTransport::new(br, bw),
        ));
        peer.accept_initialize().await;
        let call = peer.recv_tool_call().await;
        let big = "x".repeat(10_000);
        peer.send(json!({"jsonrpc":"2.0","id":call["id"],"result":{"content":[{"type":"text","text":big}]}}))
            .await;
        let next = peer
            .recv_answering_lists(|m| {
                assert!(m.get("error").is_none(), "nothing answers a response: {m}");
                m["method"] == "tools/call"
            })
            .await;
        peer.send(json!({"jsonrpc":"2.0","id":next["id"],"result":{"content":[{"type":"text","text":"fine"}]}}))
            .await;
        peer
    });
    let client = bounded("connect", Client::builder("t", "1").connect(client_side))
        .await
        .expect("connect");
    fails_with(&client, "max_frame_bytes", "an oversized response").await;
    answers_fine(&client).await;
    let _peer = bounded("server script", server).await.unwrap();
    bounded("close", client.close()).await;
}

/// A server that never answers: the call times out (paused clock) and the
/// connection stays usable.
#[tokio::test(start_paused = true)]
async fn client_times_out_against_a_server_that_never_answers() {
    let (c, s) = pair(Kind::Memory1);
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::new(s);
        peer.accept_initialize().await;
        loop {
            let Some(msg) = peer.recv().await else { return };
            if msg["method"] == "ping" {
                peer.send(json!({"jsonrpc":"2.0","id":msg["id"],"result":{}}))
                    .await;
            }
        }
    });
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let err = bounded_for(
        Duration::from_secs(120),
        "default timeout",
        client.call_tool("x", json!({})),
    )
    .await
    .expect_err("no answer");
    assert!(
        matches!(err, SessionError::Timeout { after, .. } if after == Duration::from_secs(60)),
        "{err}"
    );
    bounded("ping", client.ping()).await.expect("still serving");
    bounded("close", client.close()).await;
    server.abort();
}

/// A client that stops reading: the server's writes back up, its handlers wait
/// (back-pressure), and nothing deadlocks: closing still ends everything in bounded
/// time.
#[tokio::test]
async fn server_facing_a_client_that_stops_reading_stays_bounded() {
    let (c, s) = pair(Kind::Memory1);
    let server = Server::builder("talker", "1")
        .tool(
            Tool::new("talk", "talks a lot", Tool::empty_input_schema()),
            |_a, cx| async move {
                for i in 0..100_000 {
                    if cx
                        .log(mcpflow::protocol::LoggingLevel::Info, i)
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                Ok(CallToolResult::text("done"))
            },
        )
        .session_config(
            SessionConfig::builder()
                .close_grace(Duration::from_millis(100))
                .build(),
        )
        .build();
    let running = server.serve(s);
    let mut peer = RawPeer::new(c);
    peer.initialize().await;
    peer.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"talk"}}))
        .await;
    // Read a little, then stop reading entirely.
    for _ in 0..10 {
        peer.recv().await.unwrap();
    }
    // The server's pings from the reader still get queued without blocking the reader:
    // a request sent now is still read (the reader is not stuck behind the writer).
    peer.send(json!({"jsonrpc":"2.0","id":3,"method":"ping"}))
        .await;
    bounded(
        "the server closes in bounded time despite the stalled client",
        running.close(),
    )
    .await;
}

/// Answers that wait for room in the writer queue, with the client no longer reading:
/// the handlers are done and out of the table of running requests, so cancellation
/// does not reach them, and close still ends in bounded time.
#[tokio::test]
async fn close_is_bounded_while_answers_wait_for_a_stalled_client() {
    const CALLS: usize = 38;
    let (c, s) = pair(Kind::Memory1);
    let returned = Arc::new((std::sync::atomic::AtomicUsize::new(0), Notify::new()));
    let counter = returned.clone();
    let server = Server::builder("answers", "1")
        .tool(
            Tool::new("big", "answers with 4 KiB", Tool::empty_input_schema()),
            move |_a, _cx| {
                let counter = counter.clone();
                async move {
                    let n = counter.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    if n == CALLS {
                        counter.1.notify_one();
                    }
                    Ok(CallToolResult::text("x".repeat(4096)))
                }
            },
        )
        .session_config(
            SessionConfig::builder()
                .close_grace(Duration::from_millis(100))
                .writer_queue_capacity(std::num::NonZeroUsize::MIN)
                .build(),
        )
        .build();
    let running = server.serve(s);
    let mut peer = RawPeer::new(c);
    peer.initialize().await;
    bounded("the calls are sent", async {
        for id in 0..CALLS {
            peer.send(
                json!({"jsonrpc":"2.0","id":id + 2,"method":"tools/call","params":{"name":"big"}}),
            )
            .await;
        }
    })
    .await;
    // Every handler has returned: what is left of those calls waits on the writer.
    bounded("every handler returned", returned.1.notified()).await;
    assert!(
        running.peer().requests_in_flight() > 0,
        "answers are still queued"
    );
    bounded(
        "the server closes in bounded time with answers queued for a stalled client",
        running.close(),
    )
    .await;
}

/// The server refuses a second request that reuses an id still in flight, and keeps
/// serving the first.
#[tokio::test]
async fn server_refuses_a_duplicate_in_flight_id() {
    let release = Arc::new(Notify::new());
    let gate = release.clone();
    let server = Server::builder("dup", "1")
        .tool(
            Tool::new("hold", "waits", Tool::empty_input_schema()),
            move |_a, _c| {
                let gate = gate.clone();
                async move {
                    gate.notified().await;
                    Ok(CallToolResult::text("released"))
                }
            },
        )
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let mut peer = RawPeer::new(c);
    peer.send(json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hold"}}))
        .await;
    peer.send(json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hold"}}))
        .await;
    let refusal = bounded("duplicate refused", peer.recv()).await.unwrap();
    assert_eq!(
        (refusal["id"].clone(), refusal["error"]["code"].clone()),
        (json!(7), json!(-32600)),
        "{refusal}"
    );
    release.notify_one();
    let answer = bounded("the first completes", peer.recv()).await.unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "released");
}

/// A request cancelled by the client is never answered, and a cancellation racing
/// the answer is harmless.
#[tokio::test]
async fn a_cancelled_request_is_not_answered() {
    let started = Arc::new(Notify::new());
    let s1 = started.clone();
    let server = Server::builder("cancel", "1")
        .tool(
            Tool::new("wait", "waits for cancellation", Tool::empty_input_schema()),
            move |_a, cx| {
                let s1 = s1.clone();
                async move {
                    s1.notify_one();
                    cx.cancellation().cancelled().await;
                    Ok(CallToolResult::text("too late"))
                }
            },
        )
        .build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let mut peer = RawPeer::new(c);
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}))
        .await;
    bounded("started", started.notified()).await;
    peer.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}})).await;
    peer.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}))
        .await;
    peer.send(json!({"jsonrpc":"2.0","id":2,"method":"ping"}))
        .await;
    let next = bounded("next message", peer.recv()).await.unwrap();
    assert_eq!(next["id"], 2, "the cancelled request got no answer: {next}");
}

/// Options that cannot apply are refused with a clear error, not sent.
#[tokio::test]
async fn progress_options_need_object_params() {
    let server = Server::builder("s", "1").build();
    let (c, s) = pair(Kind::Memory1);
    let _running = server.serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .expect("connect");
    let params = serde_json::value::to_raw_value(&json!([1, 2])).unwrap();
    let err = bounded(
        "array params with a progress token",
        client.peer().request_raw(
            "x/y",
            Some(params),
            RequestOptions::new().with_progress_token(),
        ),
    )
    .await
    .expect_err("refused");
    assert!(matches!(err, SessionError::Codec { .. }), "{err}");
    bounded("close", client.close()).await;
}

/// The client answers what it did not declare with an error instead of guessing:
/// URL-mode elicitation when only form mode was declared (-32602), sampling with tools
/// without `sampling.tools` (-32602), roots without a handler (-32601).
#[tokio::test]
async fn client_refuses_what_it_did_not_declare() {
    let (c, s) = pair(Kind::Memory1);
    let server = tokio::spawn(async move {
        let mut peer = RawPeer::new(s);
        let init = peer.recv().await.unwrap();
        let caps = init["params"]["capabilities"].clone();
        assert!(
            caps["elicitation"].is_object() && caps["sampling"].is_object(),
            "{caps}"
        );
        assert!(
            caps["elicitation"].get("url").is_none() && caps["sampling"].get("tools").is_none(),
            "{caps}"
        );
        peer.send_text(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{INIT_RESULT}}}"#,
            init["id"]
        ))
        .await;
        peer.recv_until(|m| m["method"] == "notifications/initialized")
            .await;
        peer.send(json!({"jsonrpc":"2.0","id":"e","method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://example.com","elicitationId":"1"}})).await;
        peer.send(json!({"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}})).await;
        peer.send(json!({"jsonrpc":"2.0","id":"r","method":"roots/list"}))
            .await;
        let mut codes = std::collections::BTreeMap::new();
        for _ in 0..3 {
            let reply = peer.recv().await.unwrap();
            codes.insert(
                reply["id"].as_str().unwrap().to_owned(),
                reply["error"]["code"].as_i64().unwrap(),
            );
        }
        codes
    });
    let client = Client::builder("t", "1")
        .era(Era::Handshake)
        .on_elicitation(false, |_p, _c| async {
            Ok(mcpflow::protocol::ElicitResult::decline())
        })
        .on_sampling(|_p, _c| async {
            Ok(mcpflow::protocol::CreateMessageResult::assistant_text(
                "m", "x",
            ))
        });
    let client = bounded("connect", client.connect(c))
        .await
        .expect("connect");
    let codes = bounded("server script", server).await.unwrap();
    assert_eq!(codes["e"], -32602);
    assert_eq!(codes["s"], -32602);
    assert_eq!(codes["r"], -32601);
    bounded("close", client.close()).await;
}
