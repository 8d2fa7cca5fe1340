//! The 2026-07-28 era beside the handshake era, at the wire: raw stateless requests over
//! newline-delimited framing and over HTTP without a session.

use crate::common;

use common::{AnyTransport, Kind, RawPeer, bounded, pair, until};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcpflow::http::server::HttpServer;
use mcpflow::protocol::{
    CallToolResult, ElicitAction, ElicitRequestParams, LoggingLevel, ReadResourceResult, Resource,
    ResourceContents, Tool,
};
use mcpflow::server::{Server, ServerContext, ToolError};
use serde_json::{Value, json};
use tokio::sync::Notify;

fn name_form(message: &str) -> ElicitRequestParams {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    ElicitRequestParams::form(message, schema.as_object().cloned().unwrap_or_default())
}

async fn ask(cx: &ServerContext, key: Option<&str>, message: &str) -> Result<String, ToolError> {
    let cx = match key {
        Some(key) => cx.input_key(key),
        None => cx.clone(),
    };
    let answer = cx
        .elicit(name_form(message))
        .await
        .map_err(|e| match e.rejection() {
            Some(error) => ToolError::Protocol(error.clone()),
            None => ToolError::failed(e.to_string()),
        })?;
    if answer.action != ElicitAction::Accept {
        return Ok("(declined)".to_owned());
    }
    Ok(answer
        .content
        .and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default())
}

fn server() -> Server {
    Server::builder("era", "1.0.0")
        .tool(common::tool("ask"), |_args, cx| async move {
            let name = ask(&cx, Some("name"), "Your name?").await?;
            Ok(CallToolResult::text(format!("hello {name}")))
        })
        .tool(common::tool("two"), |_args, cx| async move {
            let (a, b) = tokio::join!(ask(&cx, None, "First?"), ask(&cx, None, "Second?"));
            Ok(CallToolResult::text(format!("{} and {}", a?, b?)))
        })
        .tool(common::tool("steps"), |_args, cx| async move {
            let a = ask(&cx, None, "First?").await?;
            let b = ask(&cx, None, "Second?").await?;
            Ok(CallToolResult::text(format!("{a} then {b}")))
        })
        .tool(common::tool("log"), |_args, cx| async move {
            let _ = cx.log(LoggingLevel::Info, "working").await;
            Ok(CallToolResult::text("logged"))
        })
        .tool(
            Tool::new("plain", "no input", Tool::empty_input_schema()),
            |_args, cx| async move {
                let version = cx.protocol_version().map(|v| v.as_str().to_owned());
                let client = cx.client_info().map(|i| i.name);
                Ok(CallToolResult::text(format!("{version:?} {client:?}")))
            },
        )
        .resource(Resource::new("test://r", "r"), |uri, _cx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri, "r",
            )]))
        })
        .build()
}

fn envelope(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    })
}

fn request(id: u64, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = envelope(json!({"elicitation": {}}));
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A raw peer on a stdio-framed connection to `server`.
fn connect(server: &Server) -> (RawPeer, mcpflow::server::RunningServer) {
    let (client, served) = pair(Kind::Stdio);
    let AnyTransport::Stream(served) = served else {
        unreachable!("stdio pairs are streams")
    };
    (RawPeer::new(client), server.serve(served))
}

async fn answer(peer: &mut RawPeer, id: u64) -> Value {
    bounded(
        "the answer to a 2026-07-28 request",
        peer.recv_until(|m| m.get("id") == Some(&json!(id)) && m.get("method").is_none()),
    )
    .await
}

async fn call(peer: &mut RawPeer, id: u64, method: &str, params: Value) -> Value {
    peer.send(request(id, method, params)).await;
    answer(peer, id).await
}

#[tokio::test]
async fn discover_answers_versions_capabilities_and_cache_hints() {
    let (mut peer, _running) = connect(&server());
    let r = call(&mut peer, 1, "server/discover", json!({})).await;
    let result = &r["result"];
    let versions = result["supportedVersions"].as_array().expect("versions");
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")));
    assert_eq!(result["resultType"], "complete");
    assert!(result["capabilities"]["tools"].is_object());
    assert!(result["ttlMs"].is_u64() && result["cacheScope"] == "private");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "era"
    );
}

#[tokio::test]
async fn the_envelope_is_read_per_request_and_refused_when_wrong() {
    let (mut peer, _running) = connect(&server());
    let r = call(&mut peer, 1, "tools/call", json!({"name": "plain"})).await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Some(\"2026-07-28\") Some(\"raw\")"
    );
    let missing = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let r = call(&mut peer, 2, "tools/list", json!({"_meta": missing})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let mut future = envelope(json!({}));
    future["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = call(&mut peer, 3, "tools/list", json!({"_meta": future})).await;
    assert_eq!(r["error"]["code"], -32022, "{r}");
    assert_eq!(r["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(r["error"]["data"]["supported"], json!(["2026-07-28"]));
    for removed in ["logging/setLevel", "resources/subscribe", "initialize"] {
        let r = call(
            &mut peer,
            4,
            removed,
            json!({"level": "info", "uri": "test://r"}),
        )
        .await;
        assert_eq!(r["error"]["code"], -32601, "{removed}: {r}");
    }
    let no_elicitation = json!({"_meta": envelope(json!({})), "name": "ask"});
    let r = call(&mut peer, 5, "tools/call", no_elicitation).await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

#[tokio::test]
async fn results_carry_result_type_and_cache_hints() {
    let (mut peer, _running) = connect(&server());
    let r = call(&mut peer, 1, "tools/list", json!({})).await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert!(r["result"]["ttlMs"].is_u64() && r["result"]["cacheScope"].is_string());
    let r = call(&mut peer, 2, "resources/read", json!({"uri": "test://r"})).await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert!(r["result"]["ttlMs"].is_u64());
    let r = call(&mut peer, 3, "tools/call", json!({"name": "plain"})).await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert!(
        r["result"].get("ttlMs").is_none(),
        "calls are not cacheable"
    );
    let r = call(
        &mut peer,
        4,
        "resources/read",
        json!({"uri": "test://none"}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[tokio::test]
async fn log_messages_need_a_log_level() {
    let (mut peer, _running) = connect(&server());
    peer.send(request(1, "tools/call", json!({"name": "log"})))
        .await;
    let first = bounded("the log call", peer.recv())
        .await
        .expect("an answer");
    assert_eq!(
        first["id"], 1,
        "no notifications/message without logLevel: {first}"
    );
    let mut meta = envelope(json!({}));
    meta["io.modelcontextprotocol/logLevel"] = json!("info");
    peer.send(request(
        2,
        "tools/call",
        json!({"name": "log", "_meta": meta}),
    ))
    .await;
    let first = bounded("the logged call", peer.recv())
        .await
        .expect("a message");
    assert_eq!(first["method"], "notifications/message", "{first}");
    assert_eq!(
        answer(&mut peer, 2).await["result"]["content"][0]["text"],
        "logged"
    );
}

fn accept(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

#[tokio::test]
async fn one_elicitation_is_one_round() {
    let (mut peer, _running) = connect(&server());
    let r = call(&mut peer, 1, "tools/call", json!({"name": "ask"})).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    assert_eq!(
        result["inputRequests"]["name"]["method"],
        "elicitation/create"
    );
    assert!(result.get("ttlMs").is_none());
    let state = result["requestState"].clone();
    let retry =
        json!({"name": "ask", "inputResponses": {"name": accept("Ada")}, "requestState": state});
    let r = call(&mut peer, 2, "tools/call", retry).await;
    assert_eq!(r["result"]["content"][0]["text"], "hello Ada", "{r}");
    assert_eq!(r["result"]["resultType"], "complete");
}

#[tokio::test]
async fn joined_elicitations_are_asked_in_one_round() {
    let (mut peer, _running) = connect(&server());
    let r = call(&mut peer, 1, "tools/call", json!({"name": "two"})).await;
    let requests = r["result"]["inputRequests"].as_object().expect("requests");
    let keys: Vec<&String> = requests.keys().collect();
    assert_eq!(keys, ["input-0", "input-1"], "{r}");
    let retry = json!({
        "name": "two",
        "inputResponses": {"input-0": accept("a"), "input-1": accept("b")},
        "requestState": r["result"]["requestState"]
    });
    let r = call(&mut peer, 2, "tools/call", retry).await;
    assert_eq!(r["result"]["content"][0]["text"], "a and b", "{r}");
}

#[tokio::test]
async fn sequential_elicitations_take_two_rounds_and_the_state_carries_the_first() {
    let (mut peer, _running) = connect(&server());
    let r1 = call(&mut peer, 1, "tools/call", json!({"name": "steps"})).await;
    assert!(r1["result"]["inputRequests"]["input-0"].is_object(), "{r1}");
    let retry = json!({"name": "steps", "inputResponses": {"input-0": accept("a")}, "requestState": r1["result"]["requestState"]});
    let r2 = call(&mut peer, 2, "tools/call", retry).await;
    let requests = r2["result"]["inputRequests"]
        .as_object()
        .expect("round two");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["input-1"], "{r2}");
    assert_ne!(r2["result"]["requestState"], r1["result"]["requestState"]);
    // Only the second answer: the first comes back from the state.
    let retry = json!({"name": "steps", "inputResponses": {"input-1": accept("b")}, "requestState": r2["result"]["requestState"]});
    let r3 = call(&mut peer, 3, "tools/call", retry).await;
    assert_eq!(r3["result"]["content"][0]["text"], "a then b", "{r3}");
}

#[tokio::test]
async fn tampered_or_foreign_state_is_refused_and_missing_answers_asked_again() {
    let (mut peer, _running) = connect(&server());
    let r1 = call(&mut peer, 1, "tools/call", json!({"name": "steps"})).await;
    let retry = json!({"name": "steps", "inputResponses": {"input-0": accept("a")}, "requestState": r1["result"]["requestState"]});
    let r2 = call(&mut peer, 2, "tools/call", retry).await;
    let state = r2["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    let mut tampered = state.clone();
    tampered.replace_range(2..3, if &state[2..3] == "A" { "B" } else { "A" });
    let r = call(
        &mut peer,
        3,
        "tools/call",
        json!({"name": "steps", "requestState": tampered}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602, "tampered: {r}");
    let r = call(
        &mut peer,
        4,
        "tools/call",
        json!({"name": "two", "requestState": state}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602, "another tool's state: {r}");
    let wrong_key = json!({"name": "ask", "inputResponses": {"other": accept("x")}});
    let r = call(&mut peer, 5, "tools/call", wrong_key).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert!(r["result"]["inputRequests"]["name"].is_object());
    let not_an_answer = json!({"name": "ask", "inputResponses": {"name": 12345}});
    let r = call(&mut peer, 6, "tools/call", not_an_answer).await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
}

#[tokio::test]
async fn listen_acknowledges_then_streams_tagged_changes_until_closed() {
    let server = server();
    let (mut peer, _running) = connect(&server);
    let params = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}});
    peer.send(request(7, "subscriptions/listen", params)).await;
    let ack = bounded("the acknowledgement", peer.recv())
        .await
        .expect("ack");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    // The server has no prompts: only the tools part is honoured.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    server.notify_tool_list_changed().await;
    server.notify_resource_list_changed().await;
    let change = bounded("the tool list change", peer.recv())
        .await
        .expect("change");
    assert_eq!(
        change["method"], "notifications/tools/list_changed",
        "{change}"
    );
    assert_eq!(
        change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    server.close_subscriptions();
    let end = answer(&mut peer, 7).await;
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
}

/// A client that ends its input while a listen stream is open (stdin closed) gets a
/// server that closes at once: the stream does not hold the close for its grace (60 s
/// here, past the test's bound).
#[tokio::test]
async fn end_of_input_ends_an_open_listen_stream_at_once() {
    let config = mcpflow::SessionConfig::builder()
        .close_grace(std::time::Duration::from_secs(60))
        .build();
    let served = Server::builder("listen", "1")
        .session_config(config)
        .tool(common::tool("plain"), |_args, _cx| async move {
            Ok(CallToolResult::text("plain"))
        })
        .build();
    let (mut peer, running) = connect(&served);
    let params = json!({"notifications": {"toolsListChanged": true}});
    peer.send(request(1, "subscriptions/listen", params)).await;
    bounded(
        "the listen acknowledgement",
        peer.recv_until(|m| m["method"] == "notifications/subscriptions/acknowledged"),
    )
    .await;
    peer.close().await;
    bounded(
        "the server to close after the end of its input",
        running.wait(),
    )
    .await;
}

#[tokio::test]
async fn a_handshake_client_on_the_same_stream_still_gets_requests() {
    let (mut peer, _running) = connect(&server());
    peer.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "legacy", "version": "1"}}}),
    )
    .await;
    assert_eq!(
        answer(&mut peer, 1).await["result"]["protocolVersion"],
        "2025-11-25"
    );
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let r = call(&mut peer, 2, "tools/call", json!({"name": "ask"})).await;
    assert_eq!(
        r["result"]["resultType"], "input_required",
        "per_request: {r}"
    );
    peer.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask"}}),
    )
    .await;
    let asked = bounded("the elicitation request", peer.recv())
        .await
        .expect("request");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    peer.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": accept("Lin")}))
        .await;
    let r = answer(&mut peer, 3).await;
    assert_eq!(r["result"]["content"][0]["text"], "hello Lin", "{r}");
    assert!(
        r["result"].get("resultType").is_none(),
        "handshake results stay as they were"
    );
}

#[tokio::test]
async fn the_switch_turns_the_per_request_era_off() {
    let off = Server::builder("off", "1").per_request_era(false).build();
    let (mut peer, _running) = connect(&off);
    let r = call(&mut peer, 1, "server/discover", json!({})).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
}

// ---- HTTP without a session --------------------------------------------------------------

/// Send a 2026-07-28 POST; the response, its body unread.
async fn send(url: &str, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    bounded("a 2026-07-28 POST", request.send())
        .await
        .expect("POST")
}

async fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> (reqwest::StatusCode, Value) {
    let response = send(url, body, headers).await;
    let status = response.status();
    let text = bounded("its body", response.text()).await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

const V: (&str, &str) = ("mcp-protocol-version", "2026-07-28");

#[tokio::test]
async fn http_serves_per_request_posts_without_a_session_and_checks_headers() {
    let running = common::http::serve(HttpServer::new(server())).await;
    let url = running.url();
    let discover = request(1, "server/discover", json!({}));
    let (status, body) = post(&url, &discover, &[V, ("mcp-method", "server/discover")]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete");
    let (status, body) = post(&url, &discover, &[V, ("mcp-method", "tools/list")]).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (400, &json!(-32020)),
        "{body}"
    );
    assert_eq!(body["id"], 1, "the error names the request");
    let call = request(2, "tools/call", json!({"name": "plain"}));
    let (status, body) = post(&url, &call, &[V, ("mcp-method", "tools/call")]).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (400, &json!(-32020)),
        "no Mcp-Name: {body}"
    );
    let named = [
        V,
        ("mcp-method", "tools/call"),
        ("mcp-name", "=?base64?cGxhaW4=?="),
    ];
    let (status, body) = post(&url, &call, &named).await;
    assert_eq!(status, 200, "a base64 Mcp-Name is decoded: {body}");
    let unknown = request(3, "unknown/method", json!({}));
    let (status, body) = post(&url, &unknown, &[V, ("mcp-method", "unknown/method")]).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (404, &json!(-32601)),
        "{body}"
    );
    assert_eq!(body["id"], 3);
    let bare = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}});
    let (status, body) = post(&url, &bare, &[V, ("mcp-method", "tools/list")]).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (400, &json!(-32602)),
        "{body}"
    );
    let no_caps = json!({"_meta": envelope(json!({})), "name": "ask"});
    let asks = request(5, "tools/call", no_caps);
    let (status, body) = post(
        &url,
        &asks,
        &[V, ("mcp-method", "tools/call"), ("mcp-name", "ask")],
    )
    .await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (400, &json!(-32021)),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`elicitation.form` (form elicitation)"),
        "the refusal names the capability: {message}"
    );
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn http_a_sessionless_post_that_is_not_one_request_gets_what_2026_allows() {
    let running = common::http::serve(HttpServer::new(server())).await;
    let url = running.url();
    // No client notification is defined for HTTP in 2026-07-28: accepted, and nothing
    // to deliver it to.
    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "_meta": envelope(json!({}))}});
    let response = send(
        &url,
        &cancelled,
        &[V, ("mcp-method", "notifications/cancelled")],
    )
    .await;
    assert_eq!(response.status(), 202);
    let body = bounded("the 202's body", response.text())
        .await
        .expect("body");
    assert!(body.is_empty(), "a 202 has no body: {body}");

    let batch = json!([request(1, "tools/list", json!({}))]);
    let (status, body) = post(&url, &batch, &[V, ("mcp-method", "tools/list")]).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (400, &json!(-32600)),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("batches"), "says why: {message}");

    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
    let (status, body) = post(&url, &answer, &[V]).await;
    assert_eq!(
        (status.as_u16(), &body["error"]["code"]),
        (400, &json!(-32600)),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        !message.contains("initialize"),
        "a 2026-07-28 client is not told to initialize: {message}"
    );

    // Without the 2026-07-28 header the same notification is a handshake-era one that
    // names no session.
    let (status, body) = post(&url, &cancelled, &[]).await;
    assert_eq!(status, 400, "{body}");

    // 2026-07-28 has no GET stream and no DELETE: 405, POST allowed.
    let client = reqwest::Client::new();
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = bounded(
            "a 2026-07-28 GET or DELETE",
            client
                .request(method.clone(), &url)
                .header("accept", "text/event-stream")
                .header(V.0, V.1)
                .send(),
        )
        .await
        .expect("sent");
        assert_eq!(response.status(), 405, "{method}");
        assert_eq!(response.headers()["allow"], "POST", "{method}");
        let body = bounded("its body", response.text()).await.expect("body");
        assert!(body.contains("POST only"), "{method}: {body}");
    }
    bounded("shutdown", running.shutdown()).await;
}

#[tokio::test]
async fn http_listen_is_an_event_stream_fed_from_outside() {
    let served = server();
    let running = common::http::serve(HttpServer::new(served.clone())).await;
    let params = json!({"notifications": {"toolsListChanged": true}});
    let listen = request(9, "subscriptions/listen", params);
    let mut response = send(
        &running.url(),
        &listen,
        &[V, ("mcp-method", "subscriptions/listen")],
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut body = String::new();
    let mut announced = false;
    let events = loop {
        let chunk = bounded("the listen stream", response.chunk())
            .await
            .expect("read");
        let Some(chunk) = chunk else {
            break common::http::sse_events(&body);
        };
        body.push_str(&String::from_utf8_lossy(&chunk));
        let events = common::http::sse_events(&body);
        if events.len() == 1 && !announced {
            announced = true;
            served.notify_tool_list_changed().await;
        }
        if events.len() == 2 {
            served.close_subscriptions();
        }
        if events.len() >= 3 {
            break events;
        }
    };
    let messages: Vec<Value> = events
        .iter()
        .map(|e| serde_json::from_str(&e.data).expect("JSON event"))
        .collect();
    assert_eq!(
        messages[0]["method"], "notifications/subscriptions/acknowledged",
        "{body}"
    );
    assert_eq!(
        messages[1]["method"], "notifications/tools/list_changed",
        "{body}"
    );
    assert_eq!(
        messages[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    assert_eq!(
        messages[2]["id"], 9,
        "the final result ends the stream: {body}"
    );
    bounded("shutdown", running.shutdown()).await;
}

/// Whatever a sessionless exchange creates ends with it: after answers of every kind
/// (JSON, an event stream, a refusal, an `input_required` round) and a listen stream the
/// client dropped, no exchange is left running.
#[tokio::test]
async fn http_sessionless_exchanges_end_with_their_answer() {
    let running = common::http::serve(HttpServer::new(server())).await;
    let url = running.url();
    let named =
        |method: &'static str, name: &'static str| [V, ("mcp-method", method), ("mcp-name", name)];
    for round in 0..20 {
        let id = round * 10;
        let discover = request(id, "server/discover", json!({}));
        let (status, body) = post(&url, &discover, &[V, ("mcp-method", "server/discover")]).await;
        assert_eq!(status, 200, "{body}");
        let list = request(id + 1, "tools/list", json!({}));
        let (status, body) = post(&url, &list, &[V, ("mcp-method", "tools/list")]).await;
        assert_eq!(status, 200, "{body}");
        let plain = request(id + 2, "tools/call", json!({"name": "plain"}));
        let (status, body) = post(&url, &plain, &named("tools/call", "plain")).await;
        assert_eq!(body["result"]["resultType"], "complete", "{status} {body}");
        let read = request(id + 3, "resources/read", json!({"uri": "test://r"}));
        let (status, body) = post(&url, &read, &named("resources/read", "test://r")).await;
        assert_eq!(status, 200, "{body}");
        let asks = request(id + 4, "tools/call", json!({"name": "ask"}));
        let (_, body) = post(&url, &asks, &named("tools/call", "ask")).await;
        assert_eq!(body["result"]["resultType"], "input_required", "{body}");
        let refused = json!({"_meta": envelope(json!({})), "name": "ask"});
        let refused = request(id + 5, "tools/call", refused);
        let (status, _) = post(&url, &refused, &named("tools/call", "ask")).await;
        assert_eq!(status, 400);
        let mut meta = envelope(json!({}));
        meta["io.modelcontextprotocol/logLevel"] = json!("info");
        let logs = request(id + 6, "tools/call", json!({"name": "log", "_meta": meta}));
        let streamed = send(&url, &logs, &named("tools/call", "log")).await;
        let text = bounded("the event stream to end", streamed.text())
            .await
            .expect("body");
        assert!(text.contains("\"logged\""), "{text}");
    }
    let params = json!({"notifications": {"toolsListChanged": true}});
    let listen = request(9999, "subscriptions/listen", params);
    let mut response = send(&url, &listen, &[V, ("mcp-method", "subscriptions/listen")]).await;
    bounded("the acknowledgement", response.chunk())
        .await
        .expect("read");
    assert_eq!(
        running.stats().sessionless_exchanges,
        1,
        "the listen stream is open"
    );
    drop(response);
    until("every sessionless exchange to end", || {
        running.stats().sessionless_exchanges == 0
    })
    .await;
    bounded("shutdown", running.shutdown()).await;
}

/// A client that gives up on a sessionless call before its answer ends the exchange:
/// the handler sees its cancellation and nothing of the exchange is left.
#[tokio::test]
async fn http_a_sessionless_call_abandoned_by_its_client_ends() {
    let started = Arc::new(Notify::new());
    let cancelled = Arc::new(AtomicBool::new(false));
    let (s, c) = (started.clone(), cancelled.clone());
    let hangs = Server::builder("hangs", "1")
        .tool(common::tool("hang"), move |_args, cx| {
            let (started, cancelled) = (s.clone(), c.clone());
            async move {
                started.notify_one();
                cx.cancellation().cancelled().await;
                cancelled.store(true, Ordering::SeqCst);
                Ok(CallToolResult::text("cancelled"))
            }
        })
        .build();
    let running = common::http::serve(HttpServer::new(hangs)).await;
    let url = running.url();
    for id in 0..5 {
        cancelled.store(false, Ordering::SeqCst);
        let call = request(id, "tools/call", json!({"name": "hang"}));
        let headers = [V, ("mcp-method", "tools/call"), ("mcp-name", "hang")];
        let url = url.clone();
        let client = tokio::spawn(async move { post(&url, &call, &headers).await });
        bounded("the handler to start", started.notified()).await;
        client.abort();
        until("the handler to see its cancellation", || {
            cancelled.load(Ordering::SeqCst)
        })
        .await;
        until("the abandoned exchange to end", || {
            running.stats().sessionless_exchanges == 0
        })
        .await;
    }
    bounded("shutdown", running.shutdown()).await;
}

/// Requests without a session share the server's slots (guarantee 3 across their
/// engine connections): past the running ones and the queue a request gets 503 with
/// its id at once, a listen stream takes no slot, and a freed slot serves the next
/// request. The same holds for POSTs in stateless mode.
#[tokio::test]
async fn http_requests_without_a_session_share_a_bounded_number_of_slots() {
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (s, r) = (started.clone(), release.clone());
    let holds = Server::builder("slots", "1")
        .tool(common::tool("hold"), move |_args, _cx| {
            let (started, release) = (s.clone(), r.clone());
            async move {
                started.notify_one();
                release.notified().await;
                Ok(CallToolResult::text("released"))
            }
        })
        .tool(common::tool("plain"), |_args, _cx| async {
            Ok(CallToolResult::text("plain"))
        })
        .build();
    let limited = |server: HttpServer| {
        server
            .max_sessionless_requests(1)
            .sessionless_queue_capacity(0)
    };
    let running = common::http::serve(limited(HttpServer::new(holds.clone()))).await;
    let url = running.url();
    let named = |name: &'static str| [V, ("mcp-method", "tools/call"), ("mcp-name", name)];
    let params = json!({"notifications": {"toolsListChanged": true}});
    let listen = request(1, "subscriptions/listen", params);
    let mut listening = send(&url, &listen, &[V, ("mcp-method", "subscriptions/listen")]).await;
    bounded("the acknowledgement", listening.chunk())
        .await
        .expect("read");
    let hold = request(2, "tools/call", json!({"name": "hold"}));
    let held = tokio::spawn({
        let url = url.clone();
        async move { post(&url, &hold, &named("hold")).await }
    });
    bounded("the held call to start", started.notified()).await;
    let plain = request(3, "tools/call", json!({"name": "plain"}));
    let (status, body) = post(&url, &plain, &named("plain")).await;
    assert_eq!(status, 503, "the one slot is taken: {body}");
    assert_eq!(body["id"], 3, "the refusal names the request: {body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("max_sessionless_requests"), "{message}");
    release.notify_one();
    let (status, body) = bounded("the held call", held)
        .await
        .expect("the client task");
    assert_eq!(status, 200, "{body}");
    until("the held call's exchange to end", || {
        running.stats().sessionless_exchanges == 1
    })
    .await;
    let (status, body) = post(&url, &plain, &named("plain")).await;
    assert_eq!(status, 200, "the freed slot serves the next call: {body}");
    drop(listening);
    bounded("shutdown", running.shutdown()).await;

    let running = common::http::serve(limited(HttpServer::new(holds).stateless(true))).await;
    let url = running.url();
    let call = |id: u64, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}})
    };
    let held = tokio::spawn({
        let (url, hold) = (url.clone(), call(1, "hold"));
        async move { send(&url, &hold, &[]).await.text().await }
    });
    bounded("the held stateless call to start", started.notified()).await;
    let (status, body) = post(&url, &call(2, "plain"), &[]).await;
    assert_eq!(status, 503, "stateless mode shares the slots: {body}");
    release.notify_one();
    let text = bounded("the held stateless call", held)
        .await
        .expect("the client task")
        .expect("its body");
    assert!(text.contains("released"), "{text}");
    bounded("a freed slot to serve the next stateless call", async {
        while post(&url, &call(3, "plain"), &[]).await.0 != 200 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    bounded("shutdown", running.shutdown()).await;
}
