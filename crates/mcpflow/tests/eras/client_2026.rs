//! The client against scripted 2026-07-28 peers: era detection on each kind of answer
//! to the `server/discover` probe, the per-request `_meta` envelope, `input_required`
//! rounds fulfilled with the existing callbacks, and (over HTTP) the 400 bodies that do
//! or do not mean "per-request era", the `Mcp-*` headers and the retry after `-32020`.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::time::Duration;

use common::{AnyTransport, RawPeer, bounded, bounded_for, pair};
use mcpflow::SessionError;
use mcpflow::client::{Client, ClientBuilder, ConnectError, Era};
use mcpflow::protocol::{CreateMessageResult, ElicitResult, JsonObject, Root};
use serde_json::{Value, json};

const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

fn discover_result(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": true}},
        "ttlMs": 0, "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "per-request", "version": "9"}}
    }})
}

fn error(id: &Value, code: i64, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "refused", "data": data}})
}

fn memory() -> (AnyTransport, RawPeer) {
    let (client, server) = pair(common::Kind::Memory1);
    (client, RawPeer::new(server))
}

/// The envelope every per-request request must carry.
fn assert_envelope(request: &Value) {
    let meta = &request["params"]["_meta"];
    assert_eq!(meta[VERSION_KEY], "2026-07-28", "version on {request}");
    assert!(
        meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
        "capabilities on {request}"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"], "t",
        "client info on {request}"
    );
}

/// Connect `builder` while the peer plays the server's side of the probe. It leaves the
/// listen stream unacknowledged, so `connect` waits out its limit for the acknowledgement:
/// the tests that connect this way and do not acknowledge run on the paused clock.
async fn connect_per_request(builder: ClientBuilder) -> (Client, RawPeer) {
    let (transport, mut peer) = memory();
    let server = async {
        let probe = peer.recv().await.unwrap();
        assert_eq!(probe["method"], "server/discover");
        assert_envelope(&probe);
        peer.send(discover_result(&probe["id"])).await;
    };
    let (client, ()) = bounded("per-request connect", async {
        tokio::join!(builder.connect(transport), server)
    })
    .await;
    (client.unwrap(), peer)
}

/// A client that detects the era (the library's default is the handshake).
fn builder() -> ClientBuilder {
    Client::builder("t", "1").era(Era::Auto)
}

#[tokio::test(start_paused = true)]
async fn a_discover_result_means_per_request_and_every_request_carries_the_envelope() {
    let (client, mut peer) = connect_per_request(builder()).await;
    assert!(client.is_per_request());
    assert_eq!(client.server_info().server_info.name, "per-request");
    assert_eq!(client.server_info().protocol_version.as_str(), "2026-07-28");
    let call = tokio::spawn({
        let client = client.handle();
        async move { client.call_tool("echo", json!({"x": 1})).await }
    });
    let mut seen = Vec::new();
    let request = bounded("the call arrives", async {
        loop {
            let msg = peer.recv().await.unwrap();
            seen.push(msg.clone());
            if msg["method"] == "tools/list" {
                peer.send(json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}))
                    .await;
            } else if msg["method"] == "tools/call" {
                return msg;
            }
        }
    })
    .await;
    // No resultType: complete.
    peer.send(json!({"jsonrpc": "2.0", "id": request["id"],
                     "result": {"content": [{"type": "text", "text": "ok"}]}}))
        .await;
    // The tool list fetched for the output check may come after the call.
    let result = bounded("the call returns", peer.answering_lists(call))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("ok"));
    for msg in &seen {
        assert_envelope(msg);
        assert!(msg["method"] != "initialize", "no handshake: {msg}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_unsupported_version_error_means_per_request_with_a_version_from_supported() {
    let (transport, mut peer) = memory();
    let server = async {
        let probe = peer.recv().await.unwrap();
        peer.send(error(
            &probe["id"],
            -32022,
            json!({"supported": ["2026-07-28"], "requested": "x"}),
        ))
        .await;
        let retry = peer.recv().await.unwrap();
        assert_eq!(retry["method"], "server/discover");
        assert_ne!(retry["id"], probe["id"]);
        assert_envelope(&retry);
        peer.send(discover_result(&retry["id"])).await;
    };
    let (client, ()) = bounded("connect after -32022", async {
        tokio::join!(builder().connect(transport), server)
    })
    .await;
    assert!(client.unwrap().is_per_request());
}

/// Answer the probe with `answer` (or nothing), then expect the handshake.
async fn falls_back_to_initialize(answer: Option<Value>, era: Era) -> Result<Client, ConnectError> {
    let (transport, mut peer) = memory();
    let server = async {
        let probe = peer.recv().await.unwrap();
        assert_eq!(probe["method"], "server/discover");
        if let Some(answer) = answer {
            let mut answer = answer;
            answer["id"] = probe["id"].clone();
            peer.send(answer).await;
        }
        if era == Era::PerRequest {
            return;
        }
        peer.accept_initialize().await;
    };
    let (client, ()) = tokio::join!(
        builder()
            .era(era)
            .discover_timeout(Duration::from_millis(200))
            .connect(transport),
        server
    );
    client
}

/// A pinned client whose probe gets no answer fails with the timeout itself (a hint to
/// raise it), not as a handshake-only server.
#[tokio::test(start_paused = true)]
async fn a_client_pinned_to_per_request_reports_a_silent_probe_as_a_timeout() {
    // The probe waits the request timeout (60 s of paused time).
    let outcome = bounded_for(
        Duration::from_secs(120),
        "pinned per-request, silent probe",
        falls_back_to_initialize(None, Era::PerRequest),
    )
    .await;
    assert!(
        matches!(
            &outcome,
            Err(ConnectError::Initialize(SessionError::Timeout { method, .. }))
                if &**method == "server/discover"
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn method_not_found_means_the_handshake() {
    let answer = error(&Value::Null, -32601, Value::Null);
    let client = bounded(
        "fallback after -32601",
        falls_back_to_initialize(Some(answer), Era::Auto),
    )
    .await
    .unwrap();
    assert!(!client.is_per_request());
    assert_eq!(client.server_info().protocol_version.as_str(), "2025-11-25");
}

#[tokio::test(start_paused = true)]
async fn no_answer_to_the_probe_means_the_handshake() {
    let client = bounded(
        "fallback after a silent probe",
        falls_back_to_initialize(None, Era::Auto),
    )
    .await
    .unwrap();
    assert!(!client.is_per_request());
}

#[tokio::test]
async fn a_client_pinned_to_per_request_refuses_a_handshake_server() {
    let answer = error(&Value::Null, -32601, Value::Null);
    let outcome = bounded(
        "pinned per-request",
        falls_back_to_initialize(Some(answer), Era::PerRequest),
    )
    .await;
    assert!(
        matches!(outcome, Err(ConnectError::HandshakeOnly(_))),
        "{outcome:?}"
    );
}

/// A server slow to start (a Python one on a loaded machine) answers the probe after
/// the 5 s that Auto waits before falling back: pinned to per-request, with nothing to
/// fall back to, the client waits its request timeout instead and connects.
#[tokio::test(start_paused = true)]
async fn a_client_pinned_to_per_request_waits_its_request_timeout_for_the_probe() {
    let (transport, mut peer) = memory();
    let server = async {
        let probe = peer.recv().await.unwrap();
        tokio::time::sleep(Duration::from_secs(8)).await;
        peer.send(discover_result(&probe["id"])).await;
    };
    let config = mcpflow::SessionConfig::builder()
        .request_timeout(Duration::from_secs(30))
        .build();
    let connect = Client::builder("t", "1")
        .era(Era::PerRequest)
        .session_config(config)
        .connect(transport);
    let (client, ()) = bounded_for(Duration::from_secs(60), "slow probe answer", async {
        tokio::join!(connect, server)
    })
    .await;
    let client = client.unwrap();
    assert!(client.is_per_request());
}

#[tokio::test]
async fn a_client_pinned_to_the_handshake_sends_no_probe() {
    let (transport, mut peer) = memory();
    let server = async {
        let first = peer.recv().await.unwrap();
        assert_eq!(first["method"], "initialize");
        peer.send(json!({"jsonrpc": "2.0", "id": first["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "old", "version": "1"}}}))
            .await;
    };
    let (client, ()) = bounded("handshake only", async {
        tokio::join!(builder().era(Era::Handshake).connect(transport), server)
    })
    .await;
    assert!(!client.unwrap().is_per_request());
}

/// A builder with all three callbacks.
fn with_callbacks() -> ClientBuilder {
    builder()
        .on_elicitation(false, |_params, _cx| async {
            let mut content = JsonObject::new();
            content.insert("ok".to_owned(), json!(true));
            Ok(ElicitResult::accept(content))
        })
        .on_sampling(|_params, _cx| async {
            Ok(CreateMessageResult::assistant_text("m", "sampled"))
        })
        .roots(vec![Root::new("file:///r", "r")])
}

fn input_required(id: &Value, requests: Value, state: Option<&str>) -> Value {
    let mut result = json!({"resultType": "input_required", "inputRequests": requests});
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn all_three() -> Value {
    json!({
        "e": {"method": "elicitation/create", "params": {"message": "sure?",
              "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}},
        "s": {"method": "sampling/createMessage", "params": {"messages": [
              {"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}},
        "r": {"method": "roots/list"}
    })
}

#[tokio::test(start_paused = true)]
async fn input_required_is_fulfilled_with_each_callback_over_several_rounds() {
    let (client, mut peer) = connect_per_request(with_callbacks()).await;
    let call = tokio::spawn({
        let client = client.handle();
        async move { client.call_tool("ask", json!({"q": 1})).await }
    });
    let first = bounded("first round", peer.recv_tool_call()).await;
    peer.send(input_required(&first["id"], all_three(), Some("state-1")))
        .await;
    let second = bounded("second round", peer.recv_tool_call()).await;
    assert_envelope(&second);
    assert_ne!(second["id"], first["id"], "a retry has a new id");
    let params = &second["params"];
    assert_eq!(params["name"], "ask");
    assert_eq!(params["arguments"], json!({"q": 1}));
    assert_eq!(params["requestState"], "state-1");
    assert_eq!(params["inputResponses"]["e"]["action"], "accept");
    assert_eq!(params["inputResponses"]["e"]["content"]["ok"], true);
    assert_eq!(params["inputResponses"]["s"]["content"]["text"], "sampled");
    assert_eq!(
        params["inputResponses"]["r"]["roots"][0]["uri"],
        "file:///r"
    );
    // A second round with only an elicitation and no state.
    let one = json!({"e": all_three()["e"].clone()});
    peer.send(input_required(&second["id"], one, None)).await;
    let third = bounded("third round", peer.recv_tool_call()).await;
    assert!(
        third["params"].get("requestState").is_none(),
        "no state to echo: {third}"
    );
    assert_eq!(
        third["params"]["inputResponses"].as_object().unwrap().len(),
        1,
        "only this round's answers"
    );
    peer.send(json!({"jsonrpc": "2.0", "id": third["id"],
                     "result": {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}}))
        .await;
    let result = bounded("the call completes", call).await.unwrap().unwrap();
    assert_eq!(result.content[0].as_text(), Some("done"));
}

#[tokio::test(start_paused = true)]
async fn input_rounds_are_bounded() {
    let (client, mut peer) = connect_per_request(with_callbacks().max_input_rounds(2)).await;
    let call = tokio::spawn({
        let client = client.handle();
        async move { client.call_tool("ask", json!({})).await }
    });
    for round in 0..3 {
        let request = bounded("a round", peer.recv_tool_call()).await;
        let _ = round;
        peer.send(input_required(&request["id"], all_three(), Some("again")))
            .await;
    }
    let outcome = bounded("the call gives up", call).await.unwrap();
    match outcome {
        Err(SessionError::Codec { detail, .. }) => {
            assert!(detail.contains("max_input_rounds"), "{detail}");
        }
        other => panic!("expected the round limit, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_input_request_without_its_callback_fails_clearly() {
    let (client, mut peer) = connect_per_request(builder()).await;
    let call = tokio::spawn({
        let client = client.handle();
        async move { client.call_tool("ask", json!({})).await }
    });
    let request = bounded("the call", peer.recv_tool_call()).await;
    peer.send(input_required(&request["id"], all_three(), None))
        .await;
    let error = bounded("the call fails", call).await.unwrap().unwrap_err();
    assert!(error.to_string().contains("no "), "{error}");
}

/// 2026-07-28 has no server-to-client requests: a server that sends one anyway gets
/// -32601 naming `input_required`, and the client's callbacks are not run for it.
#[tokio::test(start_paused = true)]
async fn a_server_request_in_the_per_request_era_is_refused_not_answered() {
    let (client, mut peer) = connect_per_request(with_callbacks()).await;
    for (id, request) in all_three().as_object().unwrap() {
        let mut request = request.clone();
        request["jsonrpc"] = json!("2.0");
        request["id"] = json!(id);
        peer.send(request).await;
    }
    let mut answered = Vec::new();
    while answered.len() < 3 {
        let answer = bounded(
            "the answers to three server requests",
            peer.recv_until(|m| m.get("method").is_none()),
        )
        .await;
        answered.push(answer["id"].as_str().unwrap().to_owned());
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("input_required"), "{message}");
        assert!(answer.get("result").is_none(), "{answer}");
    }
    answered.sort();
    assert_eq!(answered, ["e", "r", "s"]);
    drop(client);
}

/// An `input_required` answer with nothing to fulfil and no state would make the retry
/// the same request: the call fails at once instead of spending its rounds.
#[tokio::test(start_paused = true)]
async fn an_empty_input_required_fails_at_once() {
    let (client, mut peer) = connect_per_request(with_callbacks()).await;
    let call = tokio::spawn({
        let client = client.handle();
        async move { client.call_tool("ask", json!({})).await }
    });
    let request = bounded("the call", peer.recv_tool_call()).await;
    peer.send(json!({"jsonrpc": "2.0", "id": request["id"],
                     "result": {"resultType": "input_required"}}))
        .await;
    let outcome = bounded("the call fails", peer.answering_lists(call))
        .await
        .unwrap();
    match outcome {
        Err(SessionError::Codec { detail, .. }) => {
            assert!(
                detail.contains("neither inputRequests nor requestState"),
                "{detail}"
            );
        }
        other => panic!("expected a refusal of the empty round, got {other:?}"),
    }
    // No second round was sent.
    assert!(
        tokio::time::timeout(Duration::from_secs(1), peer.recv_tool_call())
            .await
            .is_err(),
        "the request was sent again"
    );
}

/// A `resultType` the request cannot take (an unknown one, or `task` from a call that
/// did not ask for a task) fails the call, naming it, instead of reading as complete.
#[tokio::test(start_paused = true)]
async fn an_unknown_result_type_fails_the_call() {
    let (client, mut peer) = connect_per_request(with_callbacks()).await;
    for kind in ["banana", "task"] {
        let call = tokio::spawn({
            let client = client.handle();
            async move { client.call_tool("ask", json!({})).await }
        });
        let request = bounded("the call", peer.recv_tool_call()).await;
        peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                "resultType": kind, "taskId": "t-1",
                "content": [{"type": "text", "text": "looks complete"}]}}))
            .await;
        let outcome = bounded("the call fails", peer.answering_lists(call))
            .await
            .unwrap();
        match outcome {
            Err(SessionError::Codec { detail, .. }) => {
                assert!(detail.contains(&format!("`{kind}`")), "{detail}");
            }
            other => panic!("expected resultType {kind} refused, got {other:?}"),
        }
    }
}

/// Answer `tools/list` requests until `fut` ends; each answer lists `name` with `ttl_ms`.
async fn serving_lists<T>(
    peer: &mut RawPeer,
    name: &str,
    ttl_ms: u64,
    fut: impl std::future::Future<Output = T>,
) -> (T, usize) {
    let mut fut = std::pin::pin!(fut);
    let mut lists = 0;
    loop {
        tokio::select! {
            out = &mut fut => return (out, lists),
            msg = peer.recv() => {
                let msg = msg.unwrap();
                if msg["method"] == "tools/list" {
                    lists += 1;
                    peer.send(json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                        "resultType": "complete", "ttlMs": ttl_ms, "cacheScope": "public",
                        "tools": [{"name": name, "inputSchema": {"type": "object"}}]}}))
                        .await;
                }
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn lists_are_cached_for_their_ttl() {
    let (client, mut peer) = connect_per_request(builder()).await;
    let (tools, lists) = bounded(
        "first read",
        serving_lists(&mut peer, "a", 60_000, client.tools()),
    )
    .await;
    assert_eq!(tools.unwrap()[0].name, "a");
    assert_eq!(lists, 1);
    let (tools, lists) = bounded(
        "fresh read",
        serving_lists(&mut peer, "b", 60_000, client.tools()),
    )
    .await;
    assert_eq!(
        (tools.unwrap()[0].name.as_str(), lists),
        ("a", 0),
        "fresh for 60 s"
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    let (tools, lists) = bounded(
        "stale read",
        serving_lists(&mut peer, "b", 0, client.tools()),
    )
    .await;
    assert_eq!(
        (tools.unwrap()[0].name.as_str(), lists),
        ("b", 1),
        "refetched once stale"
    );
    let (tools, lists) = bounded("ttl 0", serving_lists(&mut peer, "c", 0, client.tools())).await;
    assert_eq!(
        (tools.unwrap()[0].name.as_str(), lists),
        ("c", 1),
        "ttl 0 is stale at once"
    );
}

#[tokio::test(start_paused = true)]
async fn list_changes_arrive_on_a_listen_stream() {
    let (changed, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let watching = builder().on_notification(move |n, _client| {
        let changed = changed.clone();
        async move {
            if n.method == "notifications/tools/list_changed" {
                let _ = changed.send(());
            }
        }
    });
    let (client, mut peer) = connect_per_request(watching).await;
    let listen = bounded(
        "the listen request",
        peer.recv_until(|m| m["method"] == "subscriptions/listen"),
    )
    .await;
    assert_envelope(&listen);
    assert_eq!(
        listen["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    let (tools, _) = bounded(
        "first read",
        serving_lists(&mut peer, "a", 3_600_000, client.tools()),
    )
    .await;
    assert_eq!(tools.unwrap()[0].name, "a");
    let sub = json!({"io.modelcontextprotocol/subscriptionId": listen["id"]});
    peer.send(
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"notifications": {"toolsListChanged": true}, "_meta": sub}}),
    )
    .await;
    peer.send(
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                     "params": {"_meta": sub}}),
    )
    .await;
    // The list is marked stale when the notification is read, before its handler runs.
    bounded("the change is handled", changes.recv())
        .await
        .unwrap();
    let (tools, lists) = bounded(
        "read after the change",
        serving_lists(&mut peer, "b", 3_600_000, client.tools()),
    )
    .await;
    assert_eq!((tools.unwrap()[0].name.as_str(), lists), ("b", 1));
    // Closing ends the listen request: on a stream transport, with a cancellation.
    let closing = tokio::spawn(async move { client.close().await });
    let cancel = bounded(
        "the listen is cancelled",
        peer.recv_until(|m| m["method"] == "notifications/cancelled"),
    )
    .await;
    assert_eq!(cancel["params"]["requestId"], listen["id"]);
    bounded("close", closing).await.unwrap();
}

mod http {
    //! Over streamable HTTP, against a scripted axum server.

    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::http::{HeaderMap, Method, Response, StatusCode};
    use mcpflow::client::Client;
    use mcpflow::http::client::HttpClientTransport;
    use serde_json::{Value, json};

    use super::{bounded, builder};

    type Reply = Response<axum::body::Body>;

    #[derive(Clone, Debug)]
    struct Req {
        headers: HeaderMap,
        body: Value,
    }

    impl Req {
        fn rpc(&self) -> &str {
            self.body["method"].as_str().unwrap_or("")
        }
        fn header(&self, name: &str) -> Option<&str> {
            self.headers.get(name).and_then(|v| v.to_str().ok())
        }
    }

    struct Scripted {
        url: String,
        seen: Arc<Mutex<Vec<Req>>>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Scripted {
        fn posts(&self, method: &str) -> Vec<Req> {
            self.seen
                .lock()
                .unwrap()
                .iter()
                .filter(|r| r.rpc() == method)
                .cloned()
                .collect()
        }
    }

    impl Drop for Scripted {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    async fn serve<F>(handler: F) -> Scripted
    where
        F: Fn(&Req, usize) -> Reply + Send + Sync + 'static,
    {
        let seen = Arc::new(Mutex::new(Vec::<Req>::new()));
        let record = seen.clone();
        let handler = Arc::new(handler);
        let app = Router::new().fallback(move |verb: Method, headers: HeaderMap, body: String| {
            let record = record.clone();
            let handler = handler.clone();
            async move {
                if verb != Method::POST {
                    return reply(405, "");
                }
                let req = Req {
                    headers,
                    body: serde_json::from_str(&body).unwrap_or(Value::Null),
                };
                let nth = {
                    let mut seen = record.lock().unwrap();
                    seen.push(req.clone());
                    seen.iter().filter(|r| r.rpc() == req.rpc()).count()
                };
                handler(&req, nth)
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Scripted { url, seen, task }
    }

    fn reply(status: u16, body: &str) -> Reply {
        Response::builder()
            .status(StatusCode::from_u16(status).unwrap())
            .header("content-type", "application/json")
            .body(body.to_owned().into())
            .unwrap()
    }

    fn ok(req: &Req, result: Value) -> Reply {
        reply(
            200,
            &json!({"jsonrpc": "2.0", "id": req.body["id"], "result": result}).to_string(),
        )
    }

    fn refuse(req: &Req, code: i64, data: Value) -> Reply {
        let body = json!({"jsonrpc": "2.0", "id": req.body["id"],
                          "error": {"code": code, "message": "refused", "data": data}});
        reply(400, &body.to_string())
    }

    fn tools() -> Value {
        json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": [
            {"name": "weather", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "city": {"type": "string", "x-mcp-header": "City"},
                "days": {"type": "integer", "x-mcp-header": "Days"},
                "note": {"type": "string"}}}},
            {"name": "broken", "inputSchema": {"type": "object", "properties": {
                "v": {"type": "object", "x-mcp-header": "V"}}}}
        ]})
    }

    /// A per-request server: the first `server/discover` is refused with -32022, the first
    /// `tools/call` (when `mismatch`) with -32020.
    fn per_request(req: &Req, nth: usize, mismatch: bool) -> Reply {
        match req.rpc() {
            "server/discover" if nth == 1 => refuse(
                req,
                -32022,
                json!({"supported": ["2026-07-28"], "requested": "x"}),
            ),
            "server/discover" => ok(
                req,
                json!({"resultType": "complete",
                "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "public"}),
            ),
            "tools/list" => ok(req, tools()),
            "tools/call" if mismatch && nth == 1 => refuse(req, -32020, Value::Null),
            "tools/call" => ok(req, json!({"content": [{"type": "text", "text": "sunny"}]})),
            _ => reply(
                404,
                &json!({"jsonrpc": "2.0", "id": req.body["id"],
                                     "error": {"code": -32601, "message": "no"}})
                .to_string(),
            ),
        }
    }

    async fn connect(url: &str) -> Client {
        connect_with(builder(), url).await
    }

    async fn connect_with(builder: mcpflow::client::ClientBuilder, url: &str) -> Client {
        let transport = HttpClientTransport::new(url).unwrap();
        bounded("connect over HTTP", builder.connect(transport))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_400_with_a_per_request_error_means_per_request_and_requests_carry_the_headers() {
        let server = serve(|req, nth| per_request(req, nth, false)).await;
        let client = connect(&server.url).await;
        assert!(client.is_per_request());
        let tools = bounded("tools", client.tools()).await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["weather"],
            "the tool with an invalid x-mcp-header is dropped"
        );
        let arguments = json!({"region": "us-west1", "city": "Zürich", "days": 3, "note": "n"});
        bounded("call", client.call_tool("weather", arguments))
            .await
            .unwrap();
        assert!(server.posts("initialize").is_empty(), "no handshake");
        let call = server.posts("tools/call").pop().unwrap();
        assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(call.header("mcp-method"), Some("tools/call"));
        assert_eq!(call.header("mcp-name"), Some("weather"));
        assert_eq!(call.header("mcp-param-region"), Some("us-west1"));
        assert_eq!(
            call.header("mcp-param-city"),
            Some("=?base64?WsO8cmljaA==?=")
        );
        assert_eq!(call.header("mcp-param-days"), Some("3"));
        assert_eq!(call.header("mcp-param-note"), None);
        assert_eq!(call.header("mcp-session-id"), None);
        for list in server.posts("tools/list") {
            assert_eq!(list.header("mcp-method"), Some("tools/list"));
            assert_eq!(
                list.body["params"]["_meta"][super::VERSION_KEY],
                "2026-07-28"
            );
        }
    }

    #[tokio::test]
    async fn a_header_mismatch_refetches_the_tools_and_retries_once() {
        let server = serve(|req, nth| per_request(req, nth, true)).await;
        let client = connect(&server.url).await;
        let result = bounded("call", client.call_tool("weather", json!({"region": "eu"})))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("sunny"));
        assert_eq!(server.posts("tools/call").len(), 2);
        assert!(
            server.posts("tools/list").len() >= 2,
            "the list was fetched again"
        );
    }

    #[tokio::test]
    async fn a_400_with_an_empty_body_means_the_handshake() {
        let server = serve(|req, _| match req.rpc() {
            "server/discover" => reply(400, ""),
            "initialize" => ok(
                req,
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                          "serverInfo": {"name": "old", "version": "1"}}),
            ),
            _ => reply(202, ""),
        })
        .await;
        let memory = mcpflow::client::EraMemory::new();
        let client = connect_with(builder().era_memory(memory.clone()), &server.url).await;
        assert!(!client.is_per_request());
        assert_eq!(server.posts("initialize").len(), 1);
        assert_eq!(client.server_info().server_info.name, "old");
        assert!(memory.knows_handshake_only());
        // The era is remembered for the server: the next connection sends no probe.
        let again = connect_with(builder().era_memory(memory), &server.url).await;
        assert!(!again.is_per_request());
        assert_eq!(server.posts("server/discover").len(), 1);
        assert_eq!(server.posts("initialize").len(), 2);
    }
}
