//! Several server instances behind one endpoint, in the 2026-07-28 era: a multi-round
//! request whose rounds land on different instances (the `requestState` one instance
//! sealed opens on another that shares its key ring, and only there), and, over a real
//! `redis-server`, an announcement made on one instance reaching the listen streams held
//! by every instance once; a single-use state accepted once, on one instance and across
//! instances sharing Redis; and a request without input never asking the shared session
//! store anything.

use crate::common;

use common::bounded;
use mcpflow::http::server::{HttpServer, RunningHttpServer};
use mcpflow::protocol::{CallToolResult, ElicitAction, ElicitRequestParams};
use mcpflow::server::{Server, StateKey, ToolError};
use serde_json::{Value, json};

/// An instance named `name` with a tool that asks for a name, its state sealed by `key`.
fn instance(name: &str, key: StateKey) -> HttpServer {
    instance_with(name, key, false, None)
}

/// [`instance`], its state single-use when `single_use`, the consumed states kept in
/// `consumed` when given.
fn instance_with(
    name: &str,
    key: StateKey,
    single_use: bool,
    consumed: Option<std::sync::Arc<dyn mcpflow::server::fleet::ConsumedStates>>,
) -> HttpServer {
    let mut builder = Server::builder(name, "1.0.0").state_key(key);
    if let Some(consumed) = consumed {
        builder = builder.consumed_states(consumed);
    }
    let server = builder
        .tool(common::tool("ask"), move |_args, cx| async move {
            if single_use {
                cx.single_use_state();
            }
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            let form = ElicitRequestParams::form(
                "Your name?",
                schema.as_object().cloned().unwrap_or_default(),
            );
            let answer =
                cx.input_key("name")
                    .elicit(form)
                    .await
                    .map_err(|e| match e.rejection() {
                        Some(error) => ToolError::Protocol(error.clone()),
                        None => ToolError::failed(e.to_string()),
                    })?;
            let name = match answer.action {
                ElicitAction::Accept => answer
                    .content
                    .and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default(),
                _ => "(declined)".to_owned(),
            };
            Ok(CallToolResult::text(format!("hello {name}")))
        })
        .build();
    HttpServer::new(server)
}

/// A 2026-07-28 POST of `method` with `params` (the envelope added, declaring
/// `capabilities`), named `name` in `Mcp-Name` when given: the response, its body unread.
async fn post(
    server: &RunningHttpServer,
    id: u64,
    method: &str,
    name: Option<&str>,
    capabilities: Value,
    mut params: Value,
) -> reqwest::Response {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body.to_string());
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    bounded("a 2026-07-28 POST", request.send())
        .await
        .expect("POST")
}

/// One round of `tools/call ask` on `server`: the result, or the error.
async fn round(server: &RunningHttpServer, id: u64, mut params: Value) -> Value {
    params["name"] = json!("ask");
    let capabilities = json!({"elicitation": {}});
    let response = post(server, id, "tools/call", Some("ask"), capabilities, params).await;
    let text = bounded("a round's answer", response.text())
        .await
        .expect("body");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Round 1 on `first`: the state it sealed.
async fn first_round(first: &RunningHttpServer) -> Value {
    let answer = round(first, 1, json!({})).await;
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    answer["result"]["requestState"].clone()
}

/// Round 2 with `state` on `second`.
async fn second_round(second: &RunningHttpServer, state: &Value) -> Value {
    let accept = json!({"action": "accept", "content": {"name": "Ada"}});
    round(
        second,
        2,
        json!({"inputResponses": {"name": accept}, "requestState": state}),
    )
    .await
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

fn refusal(answer: &Value) -> (i64, &str) {
    (
        answer["error"]["code"].as_i64().unwrap_or_default(),
        answer["error"]["message"].as_str().unwrap_or_default(),
    )
}

#[tokio::test]
async fn a_round_continues_on_another_instance_with_the_same_key_ring_only() {
    let shared = StateKey::from_bytes(b"the secret every instance shares");
    let a = common::http::serve(instance("fleet", shared.clone())).await;
    let b = common::http::serve(instance("fleet", shared.clone())).await;
    let stranger = common::http::serve(instance("fleet", StateKey::random())).await;
    let renamed = common::http::serve(instance("another-server", shared.clone())).await;

    let state = first_round(&a).await;
    let answer = second_round(&b, &state).await;
    assert_eq!(text_of(&answer), "hello Ada", "round 2 on B: {answer}");

    let answer = second_round(&stranger, &state).await;
    let (code, message) = refusal(&answer);
    assert_eq!(code, -32602, "another key: {answer}");
    assert!(message.contains("integrity check failed"), "{message}");

    let answer = second_round(&renamed, &state).await;
    let (code, message) = refusal(&answer);
    assert_eq!(code, -32602, "another server with the same key: {answer}");
    assert!(message.contains("belongs to another request"), "{message}");

    for running in [a, b, stranger, renamed] {
        bounded("shutdown", running.shutdown()).await;
    }
}

/// A single-use state's retry is answered once; the same retry again is refused.
async fn accepted_once(
    first: &RunningHttpServer,
    second: &RunningHttpServer,
    replays: &[&RunningHttpServer],
) {
    let state = first_round(first).await;
    let answer = second_round(second, &state).await;
    assert_eq!(text_of(&answer), "hello Ada", "the first retry: {answer}");
    for replay in replays {
        let answer = second_round(replay, &state).await;
        let (code, message) = refusal(&answer);
        assert_eq!(code, -32602, "a replay: {answer}");
        assert!(message.contains("single-use"), "{message}");
    }
}

#[tokio::test]
async fn a_single_use_state_is_accepted_once() {
    let key = StateKey::random();
    let one = common::http::serve(instance_with("once", key, true, None)).await;
    accepted_once(&one, &one, &[&one]).await;
    // A state not made single-use may be retried.
    let key = StateKey::random();
    let many = common::http::serve(instance_with("many", key, false, None)).await;
    let state = first_round(&many).await;
    for _ in 0..2 {
        let answer = second_round(&many, &state).await;
        assert_eq!(text_of(&answer), "hello Ada", "{answer}");
    }
    for running in [one, many] {
        bounded("shutdown", running.shutdown()).await;
    }
}

/// Over a real `redis-server`: consumed on one instance, refused on every instance.
#[cfg(feature = "redis")]
#[tokio::test]
async fn a_single_use_state_is_accepted_once_across_instances() {
    use mcpflow::http::server::fleet::RedisSessionStore;

    let redis = common::redis::RedisServer::start().await;
    let key = StateKey::from_bytes(b"the secret every instance shares");
    let mut instances = Vec::new();
    for _ in 0..2 {
        let store = bounded(
            "connecting to redis",
            RedisSessionStore::connect(&redis.url),
        )
        .await
        .expect("the store connects");
        let http = instance_with("fleet", key.clone(), true, Some(std::sync::Arc::new(store)));
        instances.push(common::http::serve(http).await);
    }
    accepted_once(
        &instances[0],
        &instances[1],
        &[&instances[0], &instances[1]],
    )
    .await;
    for running in instances {
        bounded("shutdown", running.shutdown()).await;
    }
}

/// Rotation: every instance first accepts the new secret, then seals with it; a state
/// sealed at any step opens on every instance of the same or the next step.
#[tokio::test]
async fn a_key_rotation_fails_no_round_in_flight() {
    let (old, new) = (
        b"the secret before".as_slice(),
        b"the secret after".as_slice(),
    );
    let before = common::http::serve(instance("fleet", StateKey::from_bytes(old))).await;
    let accepting = StateKey::from_bytes(old).accepting(new);
    let step_one = common::http::serve(instance("fleet", accepting)).await;
    let sealing = StateKey::from_bytes(new).accepting(old);
    let step_two = common::http::serve(instance("fleet", sealing)).await;
    let after = common::http::serve(instance("fleet", StateKey::from_bytes(new))).await;

    let pairs = [
        (&before, &step_one, true),
        (&step_one, &before, true),
        (&step_one, &step_two, true),
        (&step_two, &step_one, true),
        (&step_two, &after, true),
        (&before, &after, false),
    ];
    for (i, (sealer, opener, opens)) in pairs.into_iter().enumerate() {
        let state = first_round(sealer).await;
        let answer = second_round(opener, &state).await;
        if opens {
            assert_eq!(text_of(&answer), "hello Ada", "pair {i}: {answer}");
        } else {
            assert_eq!(refusal(&answer).0, -32602, "pair {i}: {answer}");
        }
    }
    for running in [before, step_one, step_two, after] {
        bounded("shutdown", running.shutdown()).await;
    }
}

/// A `subscriptions/listen` stream, read an event at a time.
#[cfg(feature = "redis")]
struct Listen {
    response: reqwest::Response,
    body: String,
    seen: usize,
}

#[cfg(feature = "redis")]
impl Listen {
    async fn open(server: &RunningHttpServer) -> Listen {
        let params =
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}});
        let method = "subscriptions/listen";
        let response = post(server, 1, method, None, json!({}), params).await;
        assert_eq!(response.status(), 200);
        Listen {
            response,
            body: String::new(),
            seen: 0,
        }
    }

    /// The next message on the stream.
    async fn next(&mut self) -> Value {
        loop {
            let events = common::http::sse_events(&self.body);
            if let Some(event) = events.get(self.seen) {
                self.seen += 1;
                return serde_json::from_str(&event.data).expect("a JSON event");
            }
            let chunk = bounded("the next event on a listen stream", self.response.chunk())
                .await
                .expect("read")
                .expect("the stream stays open");
            self.body.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// Announcements cross instances over Redis: a list change made on one instance reaches
/// the listen stream of each of three instances once, after its acknowledgement, and a
/// second one from another instance comes next on every stream (no copy of the first
/// in between).
#[cfg(feature = "redis")]
#[tokio::test]
async fn an_announcement_reaches_every_instances_listen_streams_once() {
    use mcpflow::server::bus::RedisBus;
    use std::sync::Arc;

    let redis = common::redis::RedisServer::start().await;
    let mut servers = Vec::new();
    let mut running = Vec::new();
    for _ in 0..3 {
        let bus = Arc::new(
            bounded("connecting to redis", RedisBus::connect(&redis.url))
                .await
                .expect("the bus connects"),
        );
        let server = Server::builder("fleet", "1.0.0")
            .bus(bus.clone())
            .tool(common::tool("noop"), |_args, _cx| async {
                Ok(CallToolResult::text("ok"))
            })
            .prompt(
                mcpflow::protocol::prompts::Prompt::new("p", "a prompt"),
                |_args, _cx| async { Ok(mcpflow::protocol::GetPromptResult::new(Vec::new())) },
            )
            .build();
        bounded("the bus subscribes", bus.subscribed()).await;
        running.push(common::http::serve(HttpServer::new(server.clone())).await);
        servers.push(server);
    }
    let mut streams = Vec::new();
    for instance in &running {
        let mut stream = Listen::open(instance).await;
        let ack = stream.next().await;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        streams.push(stream);
    }
    servers[1].notify_tool_list_changed().await;
    servers[2].notify_prompt_list_changed().await;
    for (i, stream) in streams.iter_mut().enumerate() {
        let first = stream.next().await;
        assert_eq!(
            first["method"], "notifications/tools/list_changed",
            "instance {i}: {first}"
        );
        let second = stream.next().await;
        assert_eq!(
            second["method"], "notifications/prompts/list_changed",
            "instance {i}, the next message: {second}"
        );
    }
    for server in &servers {
        server.close_subscriptions();
    }
    for instance in running {
        bounded("shutdown", instance.shutdown()).await;
    }
}

/// A session store that answers nothing and counts what it is asked.
#[derive(Debug, Default)]
struct Counting(std::sync::atomic::AtomicUsize);

mod counting {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use mcpflow::http::server::StreamKey;
    use mcpflow::http::server::fleet::{
        Append, DeliverForwarded, Entries, Forwarded, Room, SessionRecord, SessionStore, StoreError,
    };
    use mcpflow::session::BoxFuture;

    impl super::Counting {
        fn refuse<T: Send + 'static>(&self) -> BoxFuture<'static, Result<T, StoreError>> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Box::pin(async {
                Err(StoreError::Unavailable {
                    detail: "counting only".into(),
                })
            })
        }

        pub(super) fn asked(&self) -> usize {
            self.0.load(Ordering::Relaxed)
        }
    }

    impl SessionStore for super::Counting {
        fn node(&self) -> u32 {
            self.0.fetch_add(1, Ordering::Relaxed);
            1
        }
        fn create(
            &self,
            _: &str,
            _: &SessionRecord,
            _: Duration,
        ) -> BoxFuture<'static, Result<(), StoreError>> {
            self.refuse()
        }
        fn load(
            &self,
            _: &str,
            _: Duration,
        ) -> BoxFuture<'static, Result<Option<SessionRecord>, StoreError>> {
            self.refuse()
        }
        fn touch(
            &self,
            _: &[&str],
            _: Duration,
        ) -> BoxFuture<'static, Result<Vec<bool>, StoreError>> {
            self.refuse()
        }
        fn remove(&self, _: &str) -> BoxFuture<'static, Result<(), StoreError>> {
            self.refuse()
        }
        fn append(
            &self,
            _: Vec<Append>,
            _: Duration,
        ) -> BoxFuture<'static, Result<(), StoreError>> {
            self.refuse()
        }
        fn make_room(
            &self,
            _: usize,
            _: Duration,
            _: Duration,
        ) -> BoxFuture<'static, Result<Room, StoreError>> {
            self.refuse()
        }
        fn prune(&self, _: Duration) -> BoxFuture<'static, Result<(), StoreError>> {
            self.refuse()
        }
        fn read(
            &self,
            _: &StreamKey,
            _: Option<u64>,
            _: Duration,
        ) -> BoxFuture<'static, Result<Option<Entries>, StoreError>> {
            self.refuse()
        }
        fn is_alive(&self, _: u32) -> BoxFuture<'static, Result<bool, StoreError>> {
            self.refuse()
        }
        fn forward(&self, _: u32, _: Forwarded) -> BoxFuture<'static, Result<(), StoreError>> {
            self.refuse()
        }
        fn deliver_to(&self, _: DeliverForwarded) {}
    }
}

#[tokio::test]
async fn a_plain_2026_call_asks_the_session_store_nothing() {
    let store = std::sync::Arc::new(Counting::default());
    let server = instance("plain", StateKey::random())
        .session_store(store.clone())
        .bind("127.0.0.1:0")
        .await
        .expect("bind");
    let response = post(&server, 1, "tools/list", None, json!({}), json!({})).await;
    let status = response.status();
    assert_eq!(status, 200, "{}", response.text().await.unwrap_or_default());
    let response = post(
        &server,
        2,
        "tools/call",
        Some("ask"),
        json!({"elicitation": {}}),
        json!({"name": "ask", "arguments": {}}),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        store.asked(),
        0,
        "a 2026-07-28 request without input used the session store"
    );
    // A handshake-era session needs the store: refused while it answers nothing.
    let initialize = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}
    }});
    let response = bounded(
        "initialize",
        reqwest::Client::new()
            .post(server.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string())
            .send(),
    )
    .await
    .expect("POST");
    assert_eq!(
        response.status(),
        503,
        "initialize while the store is unavailable"
    );
    assert!(response.headers().contains_key("retry-after"));
    assert!(store.asked() > 0);
    server.shutdown().await;
}
