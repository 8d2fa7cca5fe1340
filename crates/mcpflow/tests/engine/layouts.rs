//! One message in every layout a real peer writes gets the same answer, and the same
//! result on the client's side. The layouts (`common::layout`): this SDK's member order,
//! the Python SDK's, the TypeScript SDK's, sorted and shuffled; no whitespace,
//! `json.dumps` separators, spaces, tabs, one member per line where the framing lets a
//! message hold a newline; `\/`, `\u` escapes of non-ASCII characters, of the first
//! letter of every name (`"\u006dethod"`) and value (`"\u0074ools/call"`), of
//! everything. With them `params` come in each peer's order: `_meta` first, last or
//! absent, the progress token first or after another `_meta` member.
//!
//! A raw client checks the server, a raw server checks the client, over memory and over
//! a socket with newline framing (as stdio). What the same message gets in the layout
//! serde_json writes is the reference; each scenario also states what that must be.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::future::Future;
use std::sync::{Arc, Mutex};

use common::layout::{Layout, Order, whole_numbers};
use common::{Kind, RawPeer, bounded, pair, tool};
use mcpflow::client::Client;
use mcpflow::protocol::{CallToolRequestParams, CallToolResult, ErrorObject, ListToolsResult};
use mcpflow::server::Server;
use mcpflow::{ProgressUpdate, RequestOptions, SessionError};
use serde_json::{Value, json};

/// Memory (a message may hold a newline) and newline framing over a socket.
const KINDS: [Kind; 2] = [Kind::MemoryLarge, Kind::Stdio];

/// The reference: what serde_json writes for a `Value`.
const SERDE: Layout = Layout::compact(Order::Sorted);

/// Text with what JSON escapes and what a layout may escape.
const TEXT: &str = "a/b \"quoted\" caf\u{e9} \u{1F600}\ttab";

/// What an answer must be, whatever its layout.
#[derive(Clone, Copy, Debug)]
enum Owed {
    /// A result, after this many progress reports.
    Result(usize),
    Error(i64),
}

/// A request (without `jsonrpc` and `id`, which each send adds) and what it must get.
struct Scenario {
    what: &'static str,
    owed: Owed,
    request: Value,
}

fn scenario(what: &'static str, owed: Owed, request: Value) -> Scenario {
    Scenario {
        what,
        owed,
        request,
    }
}

/// `echo` answers with the arguments and `_meta` its handler saw; `count` reports
/// progress twice, then answers.
fn server() -> Server {
    Server::builder("layouts", "1")
        .tool(tool("echo"), |arguments, cx| async move {
            let seen = json!({"arguments": arguments, "meta": cx.meta()});
            Ok(CallToolResult::text(seen.to_string()))
        })
        .tool(tool("count"), |_arguments, cx| async move {
            for i in 1..=2 {
                let _ = cx.progress(f64::from(i), Some(2.0), Some(TEXT)).await;
            }
            Ok(CallToolResult::text("counted"))
        })
        .build()
}

fn scenarios() -> Vec<Scenario> {
    let arguments = json!({"text": TEXT, "n": 1, "list": [1.5, {"k": null}, []]});
    let call = |params: Value| json!({"method": "tools/call", "params": params});
    vec![
        scenario(
            "tools/call without _meta",
            Owed::Result(0),
            call(json!({"name": "echo", "arguments": arguments})),
        ),
        scenario(
            "tools/call whose handler reads _meta",
            Owed::Result(0),
            call(json!({"name": "echo", "arguments": arguments,
                "_meta": {"progressToken": 5, "io.example/trace": TEXT}})),
        ),
        scenario(
            "tools/call with an integer progress token",
            Owed::Result(2),
            call(json!({"name": "count", "_meta": {"progressToken": 7}})),
        ),
        scenario(
            "tools/call with a string progress token",
            Owed::Result(2),
            call(json!({"name": "count", "arguments": {}, "_meta": {"progressToken": "p/\u{e9}"}})),
        ),
        scenario(
            "tools/call with the token after another _meta member",
            Owed::Result(2),
            call(
                json!({"name": "count", "arguments": {}, "_meta": {"a/b": 1, "progressToken": 8}}),
            ),
        ),
        scenario(
            "tools/call without a progress token",
            Owed::Result(0),
            call(json!({"name": "count", "arguments": {}, "_meta": {}})),
        ),
        scenario(
            "a request with a member this SDK does not know",
            Owed::Result(0),
            json!({"method": "tools/call", "params": {"name": "echo"}, "x-trace": TEXT}),
        ),
        scenario(
            "tools/list",
            Owed::Result(0),
            json!({"method": "tools/list"}),
        ),
        scenario(
            "tools/list with params",
            Owed::Result(0),
            json!({"method": "tools/list", "params": {"_meta": {"io.example/k": [1]}}}),
        ),
        scenario("ping", Owed::Result(0), json!({"method": "ping"})),
        scenario(
            "ping with empty params",
            Owed::Result(0),
            json!({"method": "ping", "params": {}}),
        ),
        scenario(
            "an unknown method",
            Owed::Error(-32601),
            json!({"method": "vendor/unknown", "params": {"x": TEXT}}),
        ),
        scenario(
            "tools/call without a name",
            Owed::Error(-32602),
            call(json!({"arguments": {}})),
        ),
        scenario(
            "a request of another JSON-RPC version",
            Owed::Error(-32600),
            json!({"jsonrpc": "1.0", "method": "ping"}),
        ),
    ]
}

/// An id for the `n`th request: integers and strings (with a character some layouts
/// escape) in turn.
fn id(n: usize) -> Value {
    if n.is_multiple_of(2) {
        json!(n)
    } else {
        json!(format!("id/{n}"))
    }
}

/// An answer as compared across layouts: without its id, and without the position
/// a parse error message may name (a layout moves the columns).
fn comparable(answer: &Value) -> Value {
    let mut answer = answer.clone();
    if let Some(map) = answer.as_object_mut() {
        map.remove("id");
    }
    if let Some(message) = answer["error"]["message"].as_str() {
        let cut = message.find(" at line ").unwrap_or(message.len());
        answer["error"]["message"] = json!(message[..cut]);
    }
    answer
}

/// What a raw client saw after sending one request.
struct Exchange {
    /// The frame as sent.
    frame: String,
    answer: Value,
    /// The params of the progress notifications before the answer.
    progress: Vec<Value>,
}

async fn exchange(peer: &mut RawPeer, layout: Layout, request: &Value) -> Exchange {
    let frame = layout.write(request);
    let what = format!("the answer to {frame} ({layout})");
    bounded(&what, peer.send_text(&frame)).await;
    let mut progress = Vec::new();
    loop {
        let message = bounded(&what, peer.recv())
            .await
            .unwrap_or_else(|| panic!("the connection ended before {what}"));
        if message["method"] == "notifications/progress" {
            progress.push(message["params"].clone());
        } else if message.get("method").is_none() {
            assert_eq!(message["id"], request["id"], "{what}: {message}");
            return Exchange {
                frame,
                answer: message,
                progress,
            };
        }
    }
}

async fn server_answers_every_layout_alike_over(kind: Kind) {
    let (c, s) = pair(kind);
    let running = server().serve(s);
    let mut peer = RawPeer::new(c);
    let init = peer.initialize().await;
    assert!(init["result"].is_object(), "{init}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    bounded("initialized sent", peer.send(initialized)).await;
    let layouts = Layout::covering(peer.newlines_allowed());
    let mut n = 0;
    for scenario in scenarios() {
        let mut sends = Vec::new();
        for layout in std::iter::once(SERDE).chain(layouts.iter().copied()) {
            n += 1;
            let mut request = json!({"jsonrpc": "2.0", "id": id(n)});
            request
                .as_object_mut()
                .unwrap()
                .extend(scenario.request.as_object().unwrap().clone());
            let exchange = exchange(&mut peer, layout, &request).await;
            sends.push((layout, request, exchange));
        }
        let (_, _, reference) = &sends[0];
        let what = scenario.what;
        let (answer, progress) = (&reference.answer, reference.progress.len());
        match scenario.owed {
            Owed::Result(reports) => {
                assert!(answer["result"].is_object(), "{what}: {answer}");
                assert_eq!(progress, reports, "{what}: {:?}", reference.progress);
            }
            Owed::Error(code) => assert_eq!(answer["error"]["code"], code, "{what}: {answer}"),
        }
        let strip = |params: &Value| {
            let mut params = params.clone();
            params.as_object_mut().map(|p| p.remove("progressToken"));
            params
        };
        for (layout, request, got) in &sends[1..] {
            let frame = &got.frame;
            assert_eq!(
                comparable(&got.answer),
                comparable(&reference.answer),
                "{what} ({kind:?}, {layout}):\n  sent {frame}\n  got {}\n  where the plain layout got {}",
                got.answer,
                reference.answer
            );
            let token = &request["params"]["_meta"]["progressToken"];
            assert_eq!(
                got.progress.len(),
                reference.progress.len(),
                "{what} ({kind:?}, {layout}): progress before the answer to {frame}: {:?}",
                got.progress
            );
            for (report, expected) in got.progress.iter().zip(&reference.progress) {
                assert_eq!(
                    &report["progressToken"], token,
                    "{what} ({layout}): {frame}"
                );
                assert_eq!(strip(report), strip(expected), "{what} ({layout}): {frame}");
            }
        }
    }
    bounded("close", running.close()).await;
}

#[tokio::test]
async fn a_server_answers_every_layout_of_a_request_alike_and_reports_progress_to_its_token() {
    for kind in KINDS {
        server_answers_every_layout_alike_over(kind).await;
    }
}

/// What the raw server answers `tools/call` with.
fn tool_result() -> Value {
    json!({"content": [{"type": "text", "text": TEXT, "annotations": {"priority": 0.5}}],
        "structuredContent": {"path": "a/b", "n": 2}, "isError": false,
        "_meta": {"io.example/trace": "t/1"}})
}

fn progress_reports(token: &Value) -> Vec<Value> {
    (1..=2)
        .map(|i| {
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": i, "total": 2, "message": TEXT}})
        })
        .collect()
}

/// `v` as JSON, to compare what the client read with what was sent.
fn value(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap()
}

/// Run `call` on the client while the raw server reads the request for `method` and
/// answers it with the members of `answer` (a `result` or an `error`, perhaps more) in
/// `layout`, after progress reports to its token if `progress`. The call's outcome, and
/// what names it in a failure: the call and the frames that answered it.
async fn answered<T: Send + 'static>(
    raw: &mut RawPeer,
    layout: Layout,
    (method, answer): (&str, Value),
    progress: bool,
    call: impl Future<Output = T> + Send + 'static,
) -> (T, String) {
    let call = tokio::spawn(call);
    let mut what = format!("{method} answered in {layout}:");
    let request = bounded(&what, raw.recv_answering_lists(|m| m["method"] == method)).await;
    let mut messages = Vec::new();
    if progress {
        let token = &request["params"]["_meta"]["progressToken"];
        assert!(!token.is_null(), "{what} no progress token in {request}");
        messages.extend(progress_reports(token));
    }
    let mut response = json!({"jsonrpc": "2.0", "id": request["id"]});
    let members = response.as_object_mut().unwrap();
    members.extend(answer.as_object().unwrap().clone());
    messages.push(response);
    for message in messages {
        let frame = layout.write(&message);
        bounded(&what, raw.send_text(&frame)).await;
        what.push_str(&format!("\n  {frame}"));
    }
    let outcome = bounded(&what, raw.answering_lists(call))
        .await
        .expect("the call's task");
    (outcome, what)
}

async fn client_reads_every_layout_alike_over(kind: Kind) {
    let (c, s) = pair(kind);
    let mut raw = RawPeer::new(s);
    let connecting = tokio::spawn(Client::builder("layouts", "1").connect(c));
    bounded("the handshake", raw.accept_initialize()).await;
    let client = bounded("connect", connecting)
        .await
        .unwrap()
        .expect("connect");
    let error = json!({"code": -32602, "message": TEXT, "data": {"path": "a/b"}});
    let expected_error: ErrorObject = serde_json::from_value(error.clone()).unwrap();
    let list = json!({"tools": [{"name": "a/b", "description": TEXT,
        "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}}}],
        "nextCursor": "c/2"});
    let expected_progress: Vec<ProgressUpdate> = progress_reports(&json!(0))
        .iter()
        .map(|r| serde_json::from_value(r["params"].clone()).unwrap())
        .collect();

    for (n, layout) in Layout::covering(raw.newlines_allowed())
        .into_iter()
        .enumerate()
    {
        // A call with progress, answered with a result.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let options = RequestOptions::new().on_progress({
            let seen = seen.clone();
            move |update| seen.lock().unwrap().push(update)
        });
        let handle = client.handle();
        let call = async move {
            let params = CallToolRequestParams::new("count");
            handle.call_tool_with(&params, options).await
        };
        let answer = ("tools/call", json!({"result": tool_result()}));
        let (result, what) = answered(&mut raw, layout, answer, true, call).await;
        let result = result.unwrap_or_else(|e| panic!("{what}\nfailed: {e}"));
        let expected: CallToolResult = serde_json::from_value(tool_result()).unwrap();
        assert_eq!(value(&result), value(&expected), "{kind:?}: {what}");
        assert_eq!(*seen.lock().unwrap(), expected_progress, "{kind:?}: {what}");

        // A result beside a member this SDK does not know (JSON-RPC readers ignore it).
        let handle = client.handle();
        let call = async move { handle.call_tool("echo", json!({})).await };
        let answer = json!({"result": tool_result(), "x-trace": TEXT});
        let (result, what) = answered(&mut raw, layout, ("tools/call", answer), false, call).await;
        let result = result.unwrap_or_else(|e| panic!("{what}\nfailed: {e}"));
        assert_eq!(value(&result), value(&expected), "{kind:?}: {what}");

        // A call answered with an error.
        let handle = client.handle();
        let call = async move { handle.call_tool("echo", json!({})).await };
        let answer = ("tools/call", json!({"error": error}));
        match answered(&mut raw, layout, answer, false, call).await {
            (Err(SessionError::Rejected { error, .. }), what) => {
                assert_eq!(error, expected_error, "{kind:?}: {what}");
            }
            (other, what) => panic!("{kind:?}: {what}\ngave {other:?}"),
        }

        // A page of tools, and a ping.
        let handle = client.handle();
        let call = async move { handle.list_tools(None).await };
        let answer = ("tools/list", json!({"result": list}));
        let (page, what) = answered(&mut raw, layout, answer, false, call).await;
        let page = page.unwrap_or_else(|e| panic!("{what}\nfailed: {e}"));
        let expected: ListToolsResult = serde_json::from_value(list.clone()).unwrap();
        assert_eq!(value(&page), value(&expected), "{kind:?}: {what}");
        let handle = client.handle();
        let call = async move { handle.ping().await };
        let answer = ("ping", json!({"result": {}}));
        let (pong, what) = answered(&mut raw, layout, answer, false, call).await;
        pong.unwrap_or_else(|e| panic!("{what}\nfailed: {e}"));

        // The server's own request: answered with its id.
        let id = json!(format!("srv/{n}"));
        let frame = layout.write(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let what = format!("the answer to {frame} ({kind:?}, {layout})");
        bounded(&what, raw.send_text(&frame)).await;
        let answer = bounded(&what, raw.recv()).await.expect("an answer");
        let expected = json!({"jsonrpc": "2.0", "id": id, "result": {}});
        assert_eq!(answer, expected, "{what}");
    }
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn a_client_reads_results_errors_and_progress_in_every_layout_alike() {
    for kind in KINDS {
        client_reads_every_layout_alike_over(kind).await;
    }
}

/// The layouts themselves: each reads back as the value written (a whole number the
/// same as `1` or `1.0`); sorted and compact is serde_json's writing byte for byte; a
/// framing without newlines gets none.
#[test]
fn every_layout_reads_back_as_the_value_written() {
    let mut values: Vec<Value> = scenarios().into_iter().map(|s| s.request).collect();
    values.push(tool_result());
    values.extend(progress_reports(&json!("t/1")));
    values.push(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"x": [[], {}, ""]}]));
    for value in &values {
        assert_eq!(SERDE.write(value), value.to_string());
        for newlines in [true, false] {
            for layout in Layout::covering(newlines) {
                let text = layout.write(value);
                assert!(newlines || !text.contains('\n'), "{layout}: {text}");
                let back: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{layout} is not JSON ({e}): {text}"));
                assert_eq!(
                    whole_numbers(back),
                    whole_numbers(value.clone()),
                    "{layout}: {text}"
                );
            }
        }
    }
}

/// Each peer's order, pinned with the frames it writes: this SDK's writer, the Python
/// SDK's pydantic models (`_meta` added after the dump, progress a float) and the
/// TypeScript SDK's object spreads.
#[test]
fn each_order_is_the_one_its_peer_writes() {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}, "_meta": {"progressToken": 1}}});
    let progress = &progress_reports(&json!(1))[0];
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
    let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "m"}});
    let cases = [
        (
            Order::Mcpflow,
            [
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"echo","arguments":{}}}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"total":2,"message":"TEXT"}}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#,
            ],
        ),
        (
            Order::Python,
            [
                r#"{"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":1}},"jsonrpc":"2.0","id":1}"#,
                r#"{"method":"notifications/progress","params":{"progressToken":1,"progress":1.0,"total":2.0,"message":"TEXT"},"jsonrpc":"2.0"}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#,
            ],
        ),
        (
            Order::TypeScript,
            [
                r#"{"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":1}},"jsonrpc":"2.0","id":1}"#,
                r#"{"method":"notifications/progress","params":{"progress":1,"total":2,"progressToken":1,"message":"TEXT"},"jsonrpc":"2.0"}"#,
                r#"{"result":{},"jsonrpc":"2.0","id":1}"#,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#,
            ],
        ),
    ];
    let text = serde_json::to_string(TEXT).unwrap();
    for (order, frames) in cases {
        let written = [&call, progress, &answer, &error].map(|m| Layout::compact(order).write(m));
        let expected = frames.map(|f| f.replace(r#""TEXT""#, &text));
        assert_eq!(written, expected, "{order:?}");
    }
}
