//! Handshake-era sessions across three `serve --http --redis` processes on one real
//! `redis-server`, each request sent to the next process in turn, as a round-robin load
//! balancer would: sessions hop, streams resume on another process (also after the one
//! writing them was killed), answers to server-to-client requests find the process that
//! waits for them, and a Redis outage is answered 503.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common;

use common::{HttpServe, LIMIT};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::redis;

const VERSION: &str = "2025-11-25";

/// Three processes sharing `redis`.
fn three_nodes(redis: &redis::RedisServer) -> Vec<HttpServe> {
    three_nodes_with(redis, &[])
}

/// [`three_nodes`], with `extra` options.
fn three_nodes_with(redis: &redis::RedisServer, extra: &[&str]) -> Vec<HttpServe> {
    (0..3)
        .map(|_| {
            let mut args = vec!["--redis", redis.url.as_str()];
            args.extend_from_slice(extra);
            HttpServe::start(&args)
        })
        .collect()
}

/// Sends each request to the next of `urls`.
struct RoundRobin {
    urls: Vec<String>,
    next: AtomicUsize,
    http: reqwest::Client,
}

impl RoundRobin {
    fn new(nodes: &[HttpServe]) -> Arc<RoundRobin> {
        Arc::new(RoundRobin {
            urls: nodes.iter().map(|n| n.url.clone()).collect(),
            next: AtomicUsize::new(0),
            http: reqwest::Client::new(),
        })
    }

    fn next_url(&self) -> &str {
        &self.urls[self.next.fetch_add(1, Ordering::Relaxed) % self.urls.len()]
    }

    fn request(&self, url: &str, session: Option<&str>) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", VERSION);
        }
        request
    }

    async fn send(
        &self,
        url: &str,
        session: Option<&str>,
        body: &Value,
    ) -> Result<reqwest::Response, String> {
        let sent = self.request(url, session).body(body.to_string()).send();
        match tokio::time::timeout(LIMIT, sent).await {
            Err(_) => Err(format!("{url}: no answer to {body} within {LIMIT:?}")),
            Ok(Err(e)) => Err(format!("{url}: {e}")),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// `GET` on `url` resuming after `last`: the response, its body unread.
    async fn resume(&self, url: &str, session: &str, last: &str) -> reqwest::Response {
        let get = self
            .http
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", VERSION)
            .header("last-event-id", last)
            .send();
        tokio::time::timeout(LIMIT, get)
            .await
            .expect("the resume is answered in time")
            .expect("the resume")
    }

    /// `initialize` on the next instance: the session id.
    async fn initialize(&self, capabilities: Value) -> Result<String, String> {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": capabilities,
            "clientInfo": {"name": "fleet-test", "version": "1"}
        }});
        let url = self.next_url().to_owned();
        let response = self.send(&url, None, &body).await?;
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| format!("{url}: initialize without a session id"))?;
        answer(response).await?;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let url = self.next_url().to_owned();
        let status = self.send(&url, Some(&id), &initialized).await?.status();
        if status != 202 {
            return Err(format!("{url}: notifications/initialized got {status}"));
        }
        Ok(id)
    }

    /// One request on the next instance: its response.
    async fn call(
        &self,
        session: &str,
        id: u64,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let url = self.next_url().to_owned();
        let response = self.send(&url, Some(session), &body).await?;
        let status = response.status();
        if status != 200 {
            let text = response.text().await.unwrap_or_default();
            return Err(format!("{url}: {method} got {status}: {text}"));
        }
        answer(response).await
    }
}

/// An event stream, read event by event.
pub(crate) struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    pub(crate) fn new(response: reqwest::Response) -> Events {
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next event with data: its id and message; `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<(Option<String>, Value)>, String> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let id = block
                    .lines()
                    .find_map(|l| l.strip_prefix("id: "))
                    .map(str::to_owned);
                let data: String = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                if data.trim().is_empty() {
                    continue;
                }
                let message = serde_json::from_str(&data).map_err(|e| format!("{e}: {data}"))?;
                return Ok(Some((id, message)));
            }
            let chunk = tokio::time::timeout(LIMIT, self.response.chunk())
                .await
                .map_err(|_| format!("no event within {LIMIT:?}; so far: {}", self.buffer))?
                .map_err(|e| e.to_string())?;
            match chunk {
                Some(chunk) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                None => return Ok(None),
            }
        }
    }
}

/// The response a POST's answer carries: its JSON body, or the response on its stream.
async fn answer(response: reqwest::Response) -> Result<Value, String> {
    let is_json = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        let text = tokio::time::timeout(LIMIT, response.text())
            .await
            .map_err(|_| "no body in time".to_owned())?
            .map_err(|e| e.to_string())?;
        return serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"));
    }
    let mut events = Events::new(response);
    while let Some((_, message)) = events.next().await? {
        if message.get("id").is_some() && message.get("method").is_none() {
            return Ok(message);
        }
    }
    Err("the stream ended without a response".into())
}

/// Wait for every task (120 s at most) and fail on any error, naming `what` ran: each
/// task's value.
async fn all_of<T: 'static>(
    mut tasks: tokio::task::JoinSet<Result<T, String>>,
    what: &str,
) -> Vec<T> {
    let count = tasks.len();
    let mut errors = Vec::new();
    let mut values = Vec::new();
    let run = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(done) = tasks.join_next().await {
            match done.map_err(|e| e.to_string()).and_then(|r| r) {
                Ok(value) => values.push(value),
                Err(e) => errors.push(e),
            }
        }
    })
    .await;
    assert!(run.is_ok(), "{count} {what} did not finish within 120 s");
    assert!(
        errors.is_empty(),
        "{} of {count} {what} failed; first: {:?}",
        errors.len(),
        &errors[..errors.len().min(3)]
    );
    values
}

fn ok(response: &Value) -> Result<(), String> {
    match response.get("result") {
        Some(_) => Ok(()),
        None => Err(format!("not a result: {response}")),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_sessions_hop_across_three_instances_without_an_error() {
    let redis = redis::RedisServer::start().await;
    let nodes = three_nodes(&redis);
    let rr = RoundRobin::new(&nodes);
    let sessions = 1000;
    let permits = Arc::new(Semaphore::new(32));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..sessions {
        let (rr, permits) = (rr.clone(), permits.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            // initialize and initialized, then 8 requests: 10, each on the next instance.
            let id = rr.initialize(json!({})).await?;
            let simple = json!({"name": "test_simple_text", "arguments": {}});
            ok(&rr.call(&id, 1, "tools/list", json!({})).await?)?;
            ok(&rr.call(&id, 2, "tools/call", simple.clone()).await?)?;
            ok(&rr.call(&id, 3, "prompts/list", json!({})).await?)?;
            ok(&rr.call(&id, 4, "resources/list", json!({})).await?)?;
            ok(&rr.call(&id, 5, "ping", json!({})).await?)?;
            ok(&rr
                .call(&id, 6, "prompts/get", json!({"name": "test_simple_prompt"}))
                .await?)?;
            ok(&rr.call(&id, 7, "tools/call", simple).await?)?;
            ok(&rr
                .call(&id, 8, "logging/setLevel", json!({"level": "info"}))
                .await?)?;
            Ok::<(), String>(())
        });
    }
    all_of(tasks, "sessions of 10 requests").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_of_a_killed_instance_resumes_on_another_with_every_event_once_then_an_error() {
    let redis = redis::RedisServer::start().await;
    let mut nodes = three_nodes(&redis);
    let rr = RoundRobin::new(&nodes);
    let session = rr.initialize(json!({})).await.expect("a session");
    // The first instance runs the tool, and is killed.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "progress_stream", "arguments": {"count": 100, "interval_ms": 20},
        "_meta": {"progressToken": "kill"}
    }});
    let response = rr
        .send(&nodes[0].url, Some(&session), &call)
        .await
        .expect("the call");
    let mut events = Events::new(response);
    let mut seen: Vec<(String, Value)> = Vec::new();
    while seen.len() < 50 {
        let (id, message) = events
            .next()
            .await
            .expect("an event")
            .expect("the stream goes on to 50 events");
        seen.push((id.expect("every event has an id"), message));
    }
    nodes[0].kill();
    // Whatever the dead instance sent after the 50th is read from the store instead.
    drop(events);
    let last = seen.last().map(|(id, _)| id.clone()).expect("50 events");
    let resumed = rr.resume(&nodes[1].url, &session, &last).await;
    assert_eq!(resumed.status(), 200, "resuming on another instance");
    let mut events = Events::new(resumed);
    let mut error = None;
    while let Some((id, message)) = events.next().await.expect("the resumed stream") {
        if message.get("id").is_some() {
            error = Some(message);
            break;
        }
        seen.push((id.expect("every event has an id"), message));
    }
    let progress: Vec<u64> = seen
        .iter()
        .map(|(_, m)| {
            m["params"]["progress"]
                .as_f64()
                .expect("a progress notification") as u64
        })
        .collect();
    let expected: Vec<u64> = (1..=progress.len() as u64).collect();
    assert_eq!(progress, expected, "every progress event once, in order");
    let error = error.expect("the request is answered after its instance died");
    assert_eq!(error["id"], 7, "{error}");
    assert_eq!(error["error"]["code"], -32603, "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sessions_or_streams_last_event_id_replays_nothing() {
    let redis = redis::RedisServer::start().await;
    let nodes = three_nodes(&redis);
    let rr = RoundRobin::new(&nodes);
    let mine = rr.initialize(json!({})).await.expect("a session");
    let theirs = rr.initialize(json!({})).await.expect("another session");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 1}
    }});
    let url = rr.next_url().to_owned();
    let response = rr.send(&url, Some(&theirs), &call).await.expect("the call");
    let mut events = Events::new(response);
    let (id, _) = events
        .next()
        .await
        .expect("an event")
        .expect("a progress event");
    let id = id.expect("an event id");
    let (stream, _) = id.split_once('-').expect("stream-seq");
    for (session, last) in [
        (&mine, id.clone()),
        (&theirs, format!("{}-0", stream.parse::<u64>().unwrap() + 1)),
    ] {
        for node in &nodes {
            let response = rr.resume(&node.url, session, &last).await;
            let status = response.status();
            let body = tokio::time::timeout(LIMIT, response.text())
                .await
                .expect("a body in time")
                .unwrap_or_default();
            assert_eq!(status, 400, "Last-Event-ID {last} on {}: {body}", node.url);
            assert!(!body.contains("progress"), "{body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_elicitations_are_answered_through_another_instance() {
    let redis = redis::RedisServer::start().await;
    let nodes = three_nodes(&redis);
    let rr = RoundRobin::new(&nodes);
    let session = rr
        .initialize(json!({"elicitation": {"form": {}}}))
        .await
        .expect("a session");
    let runs = 1000;
    let permits = Arc::new(Semaphore::new(16));
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..runs {
        let (rr, permits, session) = (rr.clone(), permits.clone(), session.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            let started = Instant::now();
            let call = json!({"jsonrpc": "2.0", "id": 10_000 + n, "method": "tools/call", "params": {
                "name": "test_elicitation", "arguments": {"message": "who?"}
            }});
            let url = rr.next_url().to_owned();
            let mut events = Events::new(rr.send(&url, Some(&session), &call).await?);
            let (_, ask) = events.next().await?.ok_or("the stream ended before the question")?;
            if ask["method"] != "elicitation/create" {
                return Err(format!("expected elicitation/create, got {ask}"));
            }
            let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
                "action": "accept", "content": {"username": format!("u{n}"), "email": "e@x"}
            }});
            let other = rr.next_url().to_owned();
            let status = rr.send(&other, Some(&session), &reply).await?.status();
            if status != 202 {
                return Err(format!("{other}: the answer got {status}"));
            }
            let (_, result) = events.next().await?.ok_or("the stream ended before the result")?;
            let text = result["result"]["content"][0]["text"].as_str().unwrap_or_default();
            if !text.contains(&format!("u{n}")) {
                return Err(format!("the result does not carry the answer: {result}"));
            }
            Ok::<Duration, String>(started.elapsed())
        });
    }
    let mut took = all_of(tasks, "elicitations").await;
    took.sort();
    eprintln!(
        "elicitation through another instance: p50 {:?}, p99 {:?} (16 at a time, debug build)",
        took[took.len() / 2],
        took[took.len() * 99 / 100]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_down_is_503_with_retry_after_and_sessions_follow_its_persistence() {
    for persistent in [false, true] {
        let mut redis = if persistent {
            redis::RedisServer::start_persistent().await
        } else {
            redis::RedisServer::start().await
        };
        let nodes = three_nodes(&redis);
        let rr = RoundRobin::new(&nodes);
        let session = rr.initialize(json!({})).await.expect("a session");
        redis.kill().await;
        let url = rr.next_url().to_owned();
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let response = rr
            .send(&url, Some(&session), &list)
            .await
            .expect("answered");
        assert_eq!(
            response.status(),
            503,
            "a session request while Redis is down"
        );
        assert!(response.headers().contains_key("retry-after"));
        // A plain 2026-07-28 call needs no store.
        let plain = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "test_simple_text", "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
            }
        }});
        let response = rr
            .http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "test_simple_text")
            .body(plain.to_string())
            .send();
        let response = tokio::time::timeout(LIMIT, response)
            .await
            .expect("answered in time")
            .expect("the 2026 call");
        assert_eq!(
            response.status(),
            200,
            "a 2026-07-28 call while Redis is down"
        );
        let restarted = Instant::now();
        redis.restart().await;
        // Every instance reconnects by itself; the session survives only with persistence.
        let recovered = async {
            loop {
                let url = rr.next_url().to_owned();
                let response = rr.send(&url, Some(&session), &list).await?;
                match response.status().as_u16() {
                    503 => tokio::time::sleep(Duration::from_millis(50)).await,
                    200 if persistent => return Ok(200),
                    404 if !persistent => return Ok(404),
                    other => return Err(format!("{url}: got {other} after Redis came back")),
                }
            }
        };
        let status = tokio::time::timeout(LIMIT, recovered)
            .await
            .expect("the instances reconnect to Redis within the limit")
            .expect("a definite answer");
        eprintln!(
            "redis restart (persistence {persistent}): {status} after {:?}",
            restarted.elapsed()
        );
        if !persistent {
            rr.initialize(json!({}))
                .await
                .expect("a new session after Redis lost the old ones");
        }
    }
}

/// `used_memory` from `INFO memory`, in bytes.
async fn used_memory(redis: &redis::RedisServer) -> u64 {
    let info = redis.command(&["INFO", "memory"]).await;
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("INFO memory has used_memory")
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_holds_nothing_of_ended_or_idle_sessions_after_a_soak() {
    let redis = redis::RedisServer::start().await;
    // An idle timeout longer than the soak takes beside the other tests, so that the
    // idle sessions are all still held when it ends.
    let nodes = three_nodes_with(&redis, &["--session-idle-timeout", "6"]);
    let rr = RoundRobin::new(&nodes);
    let keys_before: u64 = redis.command(&["DBSIZE"]).await.parse().expect("a count");
    let memory_before = used_memory(&redis).await;
    // 600 sessions, each with a stream of stored events; half ended with DELETE, half
    // left to expire.
    let permits = Arc::new(Semaphore::new(32));
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..600u64 {
        let (rr, permits) = (rr.clone(), permits.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            let id = rr.initialize(json!({})).await?;
            let call = json!({"name": "progress_stream", "arguments": {"count": 5},
                "_meta": {"progressToken": n}});
            ok(&rr.call(&id, 1, "tools/call", call).await?)?;
            if n % 2 == 0 {
                let url = rr.next_url().to_owned();
                let delete = rr.http.delete(&url).header("mcp-session-id", &id).send();
                let status = tokio::time::timeout(LIMIT, delete)
                    .await
                    .map_err(|_| "DELETE in time".to_owned())?
                    .map_err(|e| e.to_string())?
                    .status();
                if status != 200 {
                    return Err(format!("DELETE got {status}"));
                }
            }
            Ok::<(), String>(())
        });
    }
    all_of(tasks, "sessions with a stored stream").await;
    let keys_during: u64 = redis.command(&["DBSIZE"]).await.parse().expect("a count");
    let memory_during = used_memory(&redis).await;
    assert!(
        keys_during > keys_before + 300,
        "the idle sessions are held: {keys_during} keys"
    );
    // Idle sessions, and their streams, expire with the idle timeout (6 s).
    let drained = async {
        loop {
            let keys: u64 = redis.command(&["DBSIZE"]).await.parse().expect("a count");
            if keys <= keys_before {
                return keys;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let keys_after = tokio::time::timeout(LIMIT, drained)
        .await
        .expect("every session's keys expire within the limit");
    let memory_after = used_memory(&redis).await;
    eprintln!(
        "redis after 600 sessions with streams: keys {keys_before} -> {keys_during} -> {keys_after}, \
         used_memory {memory_before} -> {memory_during} -> {memory_after} bytes"
    );
    assert!(
        memory_after < memory_before + 256 * 1024,
        "used_memory {memory_before} -> {memory_after} bytes"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_cap_counts_every_instances_sessions() {
    let redis = redis::RedisServer::start().await;
    // An idle timeout of 8 s: the reaper runs every 2 s, and a session unused for 4 s
    // is idle.
    let nodes = three_nodes_with(
        &redis,
        &["--max-sessions", "4", "--session-idle-timeout", "8"],
    );
    let rr = RoundRobin::new(&nodes);
    let mut sessions = Vec::new();
    for _ in 0..4 {
        let id = rr.initialize(json!({})).await.expect("a session");
        ok(&rr
            .call(&id, 1, "tools/list", json!({}))
            .await
            .expect("tools/list"))
        .expect("a list");
        sessions.push(id);
    }
    // Four sessions over three instances, all just used: the fifth is refused.
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "fleet-test", "version": "1"}
    }});
    let url = rr.next_url().to_owned();
    let refused = rr.send(&url, None, &body).await.expect("answered");
    assert_eq!(
        refused.status(),
        503,
        "a fifth session while four are in use"
    );
    assert!(refused.headers().contains_key("retry-after"));
    // Once they are idle, a new session takes the place of the least recently used.
    let admitted = async {
        loop {
            match rr.initialize(json!({})).await {
                Ok(id) => return id,
                Err(e) if e.contains("503") || e.contains("without a session id") => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
    };
    let newest = tokio::time::timeout(LIMIT, admitted)
        .await
        .expect("a session is evicted within the limit");
    ok(&rr
        .call(&newest, 1, "tools/list", json!({}))
        .await
        .expect("tools/list"))
    .expect("a list");
    let url = rr.next_url().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let oldest = rr
        .send(&url, Some(&sessions[0]), &list)
        .await
        .expect("answered");
    assert_eq!(
        oldest.status(),
        404,
        "the least recently used session was evicted"
    );
    for id in &sessions[1..] {
        ok(&rr
            .call(id, 3, "tools/list", json!({}))
            .await
            .expect("tools/list"))
        .expect("a list");
    }
}
