//! The bad-input table: each malformed or hostile input, its documented outcome (a
//! specific JSON-RPC error, or a dropped message with a log line), and proof that the
//! connection keeps serving afterwards.
//!
//! The server under test runs over newline framing on a socket pair (as stdio) with a
//! 4 KiB frame limit, and has one tool, one prompt with a required argument, one
//! resource; it declares logging and no completions.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use common::{AnyTransport, Kind, RawPeer, bounded, pair, target_server};
use mcpflow::transport::StreamTransport;
use serde_json::{Value, json};

/// What a bad input must produce.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// A JSON-RPC error with this code, answering this id (`None`: `"id": null`).
    Error(i64, Option<i64>),
    /// A normal result for this id (the input is odd but valid, and served).
    Served(i64),
    /// No answer (responses and notifications are never answered); a log line at most.
    Dropped,
    /// A tool result with `isError: true` for this id (the handler did not run).
    ToolError(i64),
}
use Outcome::{Dropped, Error, Served, ToolError};

const PARSE: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const RESOURCE_NOT_FOUND: i64 = -32002;

fn cases() -> Vec<(&'static str, Vec<u8>, Outcome)> {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{}1{}}}}}}}"#,
        "[".repeat(1500),
        "]".repeat(1500)
    );
    let oversized_with_id = format!(
        r#"{{"jsonrpc":"2.0","id":24,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(8000)
    );
    let oversized_no_id = format!(
        r#"{{"params":{{"pad":"{}"}},"jsonrpc":"2.0","id":25,"method":"ping"}}"#,
        "x".repeat(8000)
    );
    let s = |t: &str| t.as_bytes().to_vec();
    vec![
        ("not JSON", s("{not json"), Error(PARSE, None)),
        ("truncated array", s("[1,2"), Error(PARSE, None)),
        (
            "a bare string",
            s(r#""just a string""#),
            Error(INVALID_REQUEST, None),
        ),
        ("a bare number", s("42"), Error(INVALID_REQUEST, None)),
        ("null", s("null"), Error(INVALID_REQUEST, None)),
        ("an empty object", s("{}"), Error(INVALID_REQUEST, None)),
        (
            "jsonrpc 1.0",
            s(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#),
            Error(INVALID_REQUEST, Some(7)),
        ),
        (
            "jsonrpc as a number",
            s(r#"{"jsonrpc":2.0,"id":8,"method":"ping"}"#),
            Error(INVALID_REQUEST, Some(8)),
        ),
        (
            "jsonrpc missing",
            s(r#"{"id":9,"method":"ping"}"#),
            Error(INVALID_REQUEST, Some(9)),
        ),
        (
            "neither method nor result",
            s(r#"{"jsonrpc":"2.0","id":10}"#),
            Error(INVALID_REQUEST, Some(10)),
        ),
        (
            "method is a number",
            s(r#"{"jsonrpc":"2.0","id":11,"method":5}"#),
            Error(INVALID_REQUEST, Some(11)),
        ),
        (
            "method is null",
            s(r#"{"jsonrpc":"2.0","id":12,"method":null}"#),
            Error(INVALID_REQUEST, Some(12)),
        ),
        (
            "params is a string",
            s(r#"{"jsonrpc":"2.0","id":13,"method":"ping","params":"x"}"#),
            Error(INVALID_REQUEST, Some(13)),
        ),
        (
            "params is a number",
            s(r#"{"jsonrpc":"2.0","id":14,"method":"ping","params":3}"#),
            Error(INVALID_REQUEST, Some(14)),
        ),
        (
            "bool id",
            s(r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#),
            Error(INVALID_REQUEST, None),
        ),
        (
            "float id",
            s(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            Error(INVALID_REQUEST, None),
        ),
        (
            "id beyond 64 bits",
            s(r#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}"#),
            Error(INVALID_REQUEST, None),
        ),
        (
            "object id",
            s(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            Error(INVALID_REQUEST, None),
        ),
        (
            "array id",
            s(r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#),
            Error(INVALID_REQUEST, None),
        ),
        (
            "null id on a request",
            s(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            Error(INVALID_REQUEST, None),
        ),
        (
            "1500-deep nesting in tool arguments",
            deep.into_bytes(),
            Error(INVALID_PARAMS, Some(21)),
        ),
        (
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"\xff\xfe\"}".to_vec(),
            Error(PARSE, None),
        ),
        (
            "method and result together",
            s(r#"{"jsonrpc":"2.0","id":23,"method":"ping","result":{}}"#),
            Error(INVALID_REQUEST, Some(23)),
        ),
        (
            "frame over the size limit, id readable",
            oversized_with_id.into_bytes(),
            Error(INVALID_REQUEST, Some(24)),
        ),
        (
            "frame over the size limit, id not at the start",
            oversized_no_id.into_bytes(),
            Dropped,
        ),
        (
            "a batch outside 2025-03-26",
            s(r#"[{"jsonrpc":"2.0","id":26,"method":"ping"}]"#),
            Error(INVALID_REQUEST, None),
        ),
        ("an empty batch", s("[]"), Error(INVALID_REQUEST, None)),
        (
            "ping before initialize",
            s(r#"{"jsonrpc":"2.0","id":28,"method":"ping"}"#),
            Served(28),
        ),
        (
            "tools/list before initialize (tolerated)",
            s(r#"{"jsonrpc":"2.0","id":29,"method":"tools/list"}"#),
            Served(29),
        ),
        (
            "unknown method",
            s(r#"{"jsonrpc":"2.0","id":30,"method":"tools/explode"}"#),
            Error(METHOD_NOT_FOUND, Some(30)),
        ),
        (
            "server/discover without the per-request _meta (2026-07-28 refuses it as invalid params)",
            s(r#"{"jsonrpc":"2.0","id":31,"method":"server/discover","params":{}}"#),
            Error(INVALID_PARAMS, Some(31)),
        ),
        (
            "invalid cursor",
            s(r#"{"jsonrpc":"2.0","id":32,"method":"tools/list","params":{"cursor":"??"}}"#),
            Error(INVALID_PARAMS, Some(32)),
        ),
        (
            "unknown tool",
            s(r#"{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"nope"}}"#),
            Error(INVALID_PARAMS, Some(33)),
        ),
        (
            "tools/call without params",
            s(r#"{"jsonrpc":"2.0","id":34,"method":"tools/call"}"#),
            Error(INVALID_PARAMS, Some(34)),
        ),
        (
            "tool name of the wrong type",
            s(r#"{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"name":5}}"#),
            Error(INVALID_PARAMS, Some(35)),
        ),
        (
            "arguments not an object",
            s(
                r#"{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#,
            ),
            Error(INVALID_PARAMS, Some(36)),
        ),
        (
            "unknown prompt",
            s(r#"{"jsonrpc":"2.0","id":37,"method":"prompts/get","params":{"name":"nope"}}"#),
            Error(INVALID_PARAMS, Some(37)),
        ),
        (
            "prompt missing a required argument",
            s(r#"{"jsonrpc":"2.0","id":38,"method":"prompts/get","params":{"name":"greet"}}"#),
            Error(INVALID_PARAMS, Some(38)),
        ),
        (
            "unknown resource",
            s(r#"{"jsonrpc":"2.0","id":39,"method":"resources/read","params":{"uri":"x://none"}}"#),
            Error(RESOURCE_NOT_FOUND, Some(39)),
        ),
        (
            "invalid log level",
            s(r#"{"jsonrpc":"2.0","id":40,"method":"logging/setLevel","params":{"level":"loud"}}"#),
            Error(INVALID_PARAMS, Some(40)),
        ),
        (
            "completion without the capability",
            s(
                r#"{"jsonrpc":"2.0","id":41,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}}}"#,
            ),
            Error(METHOD_NOT_FOUND, Some(41)),
        ),
        (
            "initialize without params",
            s(r#"{"jsonrpc":"2.0","id":42,"method":"initialize"}"#),
            Error(INVALID_PARAMS, Some(42)),
        ),
        (
            "initialize with a numeric version",
            s(
                r#"{"jsonrpc":"2.0","id":43,"method":"initialize","params":{"protocolVersion":20251125,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#,
            ),
            Error(INVALID_PARAMS, Some(43)),
        ),
        (
            "a response to an unknown id",
            s(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#),
            Dropped,
        ),
        (
            "an error response to an unknown id",
            s(r#"{"jsonrpc":"2.0","id":998,"error":{"code":-1,"message":"x"}}"#),
            Dropped,
        ),
        (
            "a response with result and error",
            s(r#"{"jsonrpc":"2.0","id":997,"result":{},"error":{"code":1,"message":"x"}}"#),
            Dropped,
        ),
        (
            "an error response with a malformed error",
            s(r#"{"jsonrpc":"2.0","id":996,"error":"bad"}"#),
            Dropped,
        ),
        (
            "an unknown notification",
            s(r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}"#),
            Dropped,
        ),
        (
            "cancelling an unknown request",
            s(
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}"#,
            ),
            Dropped,
        ),
        (
            "progress for an unknown token",
            s(
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"zz","progress":1}}"#,
            ),
            Dropped,
        ),
        ("a whitespace-only line", s("   \t "), Dropped),
        (
            "CRLF line ending",
            s("{\"jsonrpc\":\"2.0\",\"id\":50,\"method\":\"ping\"}\r"),
            Served(50),
        ),
        (
            "string id that looks like a number",
            s(r#"{"jsonrpc":"2.0","id":"51","method":"ping"}"#),
            Served(51),
        ),
        (
            "arguments that violate the input schema (a tool error, SEP-1303)",
            s(
                r#"{"jsonrpc":"2.0","id":52,"method":"tools/call","params":{"name":"strict","arguments":{"n":"x"}}}"#,
            ),
            ToolError(52),
        ),
    ]
}

async fn probe(peer: &mut RawPeer, n: i64) -> Value {
    peer.send(json!({"jsonrpc":"2.0","id":format!("probe-{n}"),"method":"ping"}))
        .await;
    bounded("probe ping", peer.recv())
        .await
        .expect("connection open")
}

#[tokio::test]
async fn every_bad_input_gets_its_documented_outcome_and_the_connection_keeps_serving() {
    let server = target_server("strict").build();
    let (a, b) = tokio::net::UnixStream::pair().unwrap();
    let (ar, aw) = a.into_split();
    let (br, bw) = b.into_split();
    let _running = server.serve(StreamTransport::new(br, bw).max_frame_bytes(4096));
    let mut peer = RawPeer::new(AnyTransport::Stream(StreamTransport::new(ar, aw)));
    let cases = cases();
    assert!(cases.len() >= 40, "the table has {} inputs", cases.len());
    for (i, (name, input, outcome)) in cases.iter().enumerate() {
        peer.send_bytes(input).await;
        match outcome {
            Error(code, id) => {
                let reply = bounded(name, peer.recv()).await.expect("a reply");
                assert_eq!(reply["error"]["code"], json!(code), "{name}: {reply}");
                assert_eq!(
                    reply["id"],
                    id.map_or(Value::Null, |n| json!(n)),
                    "{name}: {reply}"
                );
                assert!(
                    reply["error"]["message"]
                        .as_str()
                        .is_some_and(|m| !m.is_empty()),
                    "{name}: a clear message"
                );
            }
            Served(id) => {
                let reply = bounded(name, peer.recv()).await.expect("a reply");
                assert!(reply.get("result").is_some(), "{name}: {reply}");
                assert!(
                    reply["id"] == json!(id) || reply["id"] == json!(id.to_string()),
                    "{name}: {reply}"
                );
            }
            ToolError(id) => {
                let reply = bounded(name, peer.recv()).await.expect("a reply");
                assert_eq!(reply["id"], json!(id), "{name}: {reply}");
                assert_eq!(reply["result"]["isError"], json!(true), "{name}: {reply}");
            }
            Dropped => {}
        }
        let pong = probe(&mut peer, i as i64).await;
        assert_eq!(
            pong["id"],
            json!(format!("probe-{i}")),
            "after {name}: the next message answers the probe, got {pong}"
        );
    }
}

/// An id may be any integer (the MCP schema's `RequestId` is `string | integer`): one
/// above `i64::MAX` is served, by the reader (`ping`) or a request task
/// (`tools/list`), and answered with the same id, digit for digit.
#[tokio::test]
async fn an_integer_id_above_i64_is_answered_with_the_same_id() {
    let (c, s) = pair(Kind::Stdio);
    let _running = target_server("ids").build().serve(s);
    let mut peer = RawPeer::new(c);
    peer.initialize().await;
    bounded(
        "the ping sent",
        peer.send_text(r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#),
    )
    .await;
    let reply = bounded("the answer to the ping", peer.recv())
        .await
        .expect("connection open");
    assert_eq!(reply["id"], json!(u64::MAX), "{reply}");
    assert_eq!(reply["result"], json!({}), "{reply}");
    bounded(
        "tools/list sent",
        peer.send_text(r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/list"}"#),
    )
    .await;
    let reply = bounded("the answer to tools/list", peer.recv())
        .await
        .expect("connection open");
    assert_eq!(reply["id"], json!(9_223_372_036_854_775_808_u64), "{reply}");
    assert!(reply["result"].is_object(), "{reply}");
}
