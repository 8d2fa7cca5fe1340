//! Hostile messages over streamable HTTP: thousands of structurally mutated client
//! messages (the generator of `common::hostile`), each written in a layout some peer
//! writes (`common::layout`), one message or batch per POST to mcpflow's real HTTP
//! server, each POST's whole answer read before the next.
//!
//! What each POST should get is decided from the message alone, by JSON-RPC 2.0 and
//! the MCP streamable HTTP transport, and checked POST by POST:
//!
//! - a valid request (or a batch of valid messages with requests): 200, and in that
//!   response exactly one answer for each of its ids and no answer to any other id;
//! - only notifications (valid ones): 202 with no body;
//! - a response, valid or not: 202, or 400 whose error names no id (responses are
//!   never answered);
//! - an invalid message that is not a response: 400, a JSON-RPC error with its id
//!   (`null` when the id cannot be read);
//! - `initialize` inside a session: 400 (the session already exists; the body may name
//!   the id or not);
//! - a batch with an invalid member, a response or an `initialize`: JSON-RPC answers
//!   each request, and MCP lets a server refuse input it cannot accept whole, so 200
//!   with at most one answer per id, or 400 naming one of its ids or none (or 202 if
//!   it holds no request).
//!
//! Every message in every body or event is well-formed JSON-RPC; no status is 5xx or
//! outside the few this transport uses; the connection never drops; a `ping` every 25
//! POSTs is answered; and at the end the tallies agree with the stdio test's promise:
//! each owed id answered exactly once (at most once where allowed above), nothing
//! answered that was never sent.
//!
//! A failure names the seed and the message, and replays exactly:
//! `MCPFLOW_HOSTILE_SEED=7 MCPFLOW_HOSTILE_MESSAGES=10000 cargo test -p mcpflow --test
//! http hostile_http::` runs another seed, longer.
#![cfg(all(feature = "http-server", feature = "http-client"))]
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::collections::BTreeMap;

use common::hostile::{
    Tally, answered_id, corpus, is_readable_id, is_well_formed, messages_of, mutate, run_settings,
    server,
};
use common::http::{SseEvent, serve, sse_events};
use common::layout::Layout;
use common::{Rng, bounded};
use mcpflow::http::server::HttpServer;
use serde_json::{Value, json};

/// The version the session negotiates: the one with batches.
const VERSION: &str = "2025-03-26";
const PING_EVERY: u64 = 25;
/// The statuses a POST to this transport may get at all; which one is right for a
/// given POST is narrower (see [`Expect`]).
const STATUSES: [u16; 8] = [200, 202, 400, 404, 405, 406, 413, 415];

/// What one message is, by JSON-RPC 2.0's rules (not by the library's decoder).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Request,
    Notification,
    /// No `method` and a `result` or `error`: a response, well-formed or not.
    Response,
    Invalid,
}

fn shape(message: &Value) -> Shape {
    let Some(m) = message.as_object() else {
        return Shape::Invalid;
    };
    if m.get("method").is_none() && (m.contains_key("result") || m.contains_key("error")) {
        return Shape::Response;
    }
    let params_ok = m
        .get("params")
        .is_none_or(|p| p.is_object() || p.is_array());
    match (m.get("jsonrpc"), m.get("method"), m.get("id")) {
        (Some(v), Some(method), id) if v == "2.0" && method.is_string() && params_ok => match id {
            None => Shape::Notification,
            Some(id) if is_readable_id(id) => Shape::Request,
            Some(_) => Shape::Invalid,
        },
        _ => Shape::Invalid,
    }
}

/// What a POST should get, decided from its body before it is sent.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// 200, and each of the POST's ids answered exactly once in this response.
    Answers,
    /// 202 and no body.
    Accepted,
    /// Responses: 202, or 400 whose error names no id.
    NoAnswer,
    /// 400 with a JSON-RPC error naming the message's id (`null` if it has none).
    Refused,
    /// `initialize` inside a session: 400, naming its id or none.
    Reinitialize,
    /// A batch with an invalid member, a response or an `initialize`: 400, naming one
    /// of its ids or none (refused whole); or 200 with at most one answer per id; or
    /// 202 when it holds no request.
    AtMostOnce,
}

fn expect(message: &Value) -> Expect {
    let is_initialize = |m: &Value| shape(m) == Shape::Request && m["method"] == "initialize";
    match message {
        Value::Array(items) => {
            // A batch of valid requests and notifications is handled whole; anything
            // else in it may get the whole batch refused.
            let shapes: Vec<Shape> = items.iter().map(shape).collect();
            if items.iter().any(is_initialize)
                || shapes
                    .iter()
                    .any(|s| !matches!(s, Shape::Request | Shape::Notification))
            {
                Expect::AtMostOnce
            } else if shapes.contains(&Shape::Request) {
                Expect::Answers
            } else {
                Expect::Accepted
            }
        }
        one if is_initialize(one) => Expect::Reinitialize,
        one => match shape(one) {
            Shape::Request => Expect::Answers,
            Shape::Notification => Expect::Accepted,
            Shape::Response => Expect::NoAnswer,
            Shape::Invalid => Expect::Refused,
        },
    }
}

/// One POST's whole answer.
struct Answer {
    status: u16,
    /// Every JSON-RPC message in the body or its events (a batch's array flattened).
    messages: Vec<Value>,
    session: Option<String>,
}

/// The JSON-RPC messages in an event stream, one (or a batch) per event.
fn parse_event_stream(body: &str) -> Result<Vec<Value>, String> {
    let mut messages = Vec::new();
    for event in sse_events(body) {
        // Priming events (empty data) are only for 2025-11-25 clients.
        let SseEvent { data, .. } = &event;
        if data.is_empty() {
            return Err(format!("an event carries no message: {event:?}"));
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|e| format!("an event's data is not JSON ({e}): {data}"))?;
        messages.extend(messages_of(value));
    }
    Ok(messages)
}

/// An HTTP client of one MCP session, as a real client would run it.
struct Client {
    http: reqwest::Client,
    url: String,
    session: String,
    seed: u64,
    /// Sessions started after the first, and the message sent just before each.
    restarts: Vec<String>,
}

impl Client {
    /// POST `body` and read all of the answer; a dropped connection, a 5xx or an
    /// unreadable body fails the test here, naming the seed and the body.
    async fn post(&self, what: &str, body: &str, session: bool) -> Answer {
        let seed = self.seed;
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_owned());
        if session {
            request = request
                .header("mcp-session-id", &self.session)
                .header("mcp-protocol-version", VERSION);
        }
        let what = format!("seed {seed}: the answer to {what}: {body}");
        let response = match bounded(&what, request.send()).await {
            Ok(response) => response,
            Err(e) => panic!("seed {seed}: the POST failed ({e:?}); it carried:\n{body}"),
        };
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap_or("(not ASCII)").to_owned());
        let new_session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = match bounded(&what, response.bytes()).await {
            Ok(bytes) => bytes,
            Err(e) => panic!(
                "seed {seed}: the answer (status {status}) was cut off ({e:?}); the POST carried:\n{body}"
            ),
        };
        let fail = |why: String| -> ! {
            panic!("seed {seed}: {why}\nstatus {status}; the POST carried:\n{body}")
        };
        if status >= 500 {
            fail(format!(
                "a server error: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        if !STATUSES.contains(&status) {
            fail(format!(
                "an unexpected status: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            fail("the body is not UTF-8".to_owned())
        };
        let messages = match content_type.as_deref() {
            _ if text.is_empty() => Vec::new(),
            Some(t) if t.starts_with("text/event-stream") => {
                parse_event_stream(text).unwrap_or_else(|why| fail(why))
            }
            Some(t) if t.starts_with("application/json") => match serde_json::from_str(text) {
                Ok(value) => messages_of(value),
                Err(e) => fail(format!("the JSON body does not parse ({e}): {text}")),
            },
            other => fail(format!("a body of type {other:?}: {text}")),
        };
        if let Some(bad) = messages.iter().find(|m| !is_well_formed(m)) {
            fail(format!("a malformed JSON-RPC message: {bad}"));
        }
        Answer {
            status,
            messages,
            session: new_session,
        }
    }

    /// Start a session at 2025-03-26, as the HTTP tests do: `initialize` without a
    /// session id, then `notifications/initialized` with the one it returned.
    async fn initialize(&mut self) {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":VERSION,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}});
        let answer = self.post("initialize", &init.to_string(), false).await;
        assert_eq!(answer.status, 200, "seed {}: initialize", self.seed);
        let result = answer
            .messages
            .iter()
            .find(|m| m["id"] == 0)
            .unwrap_or_else(|| panic!("seed {}: no answer to initialize", self.seed));
        assert_eq!(result["result"]["protocolVersion"], VERSION, "{result}");
        self.session = answer.session.expect("initialize assigns a session");
        let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let ack = self
            .post("initialized", &initialized.to_string(), true)
            .await;
        assert_eq!(ack.status, 202, "seed {}: initialized", self.seed);
    }

    /// POST in the session. A 404 means the session has ended (the server says to
    /// start over with `initialize`): like a real client, start a new session and send
    /// the same body again, once. Nothing in this test ends a session on purpose, so
    /// each restart is counted and reported.
    async fn send(&mut self, what: &str, body: &str, previous: &str) -> Answer {
        let answer = self.post(what, body, true).await;
        if answer.status != 404 {
            return answer;
        }
        self.restarts.push(previous.to_owned());
        self.initialize().await;
        let again = self.post(what, body, true).await;
        assert_ne!(
            again.status, 404,
            "seed {}: a new session ended at once; the POST carried:\n{body}",
            self.seed
        );
        again
    }
}

/// Check one POST's answer against what its message should get. `ids` are the ids
/// it owes answers to (with repeats); returns the answers to count, by id.
fn check(expect: Expect, ids: &[String], answer: &Answer) -> Result<Vec<String>, String> {
    let responses: Vec<&Value> = answer
        .messages
        .iter()
        .filter(|m| m.get("method").is_none())
        .collect();
    let named: Vec<String> = responses
        .iter()
        .filter(|m| !m["id"].is_null())
        .map(|m| m["id"].to_string())
        .collect();
    if let Some(stray) = named.iter().find(|id| !ids.contains(id)) {
        return Err(if expect == Expect::NoAnswer {
            format!(
                "the refusal of a response names its id {stray}: a response is never answered \
                 (MCP: the error for input refused this way has no id)"
            )
        } else {
            format!("an answer to id {stray}, which no request in this POST carried")
        });
    }
    let count = |id: &String| named.iter().filter(|n| *n == id).count();
    let sent = |id: &String| ids.iter().filter(|n| *n == id).count();
    let one_error = || match responses.as_slice() {
        [error] if error.get("error").is_some() && answer.messages.len() == 1 => Ok(()),
        _ => Err("a 400 must carry one JSON-RPC error and nothing else".to_owned()),
    };
    match (expect, answer.status) {
        (Expect::Answers, 200) => {
            if responses.len() != named.len() {
                return Err("an answer with a null id to messages whose ids all read".to_owned());
            }
            if let Some(id) = ids.iter().find(|id| count(id) != sent(id)) {
                return Err(format!("id {id} answered {} times", count(id)));
            }
        }
        (Expect::AtMostOnce, 200) => {
            if let Some(id) = ids.iter().find(|id| count(id) > sent(id)) {
                return Err(format!("id {id} answered {} times", count(id)));
            }
        }
        (Expect::AtMostOnce, 202) if ids.is_empty() && answer.messages.is_empty() => {}
        (Expect::Accepted | Expect::NoAnswer, 202) => {
            if !answer.messages.is_empty() {
                return Err("a 202 with a body".to_owned());
            }
        }
        // A response owes nothing, so a refusal naming an id failed above.
        (Expect::NoAnswer, 400) => one_error()?,
        (Expect::Refused, 400) => {
            one_error()?;
            if responses[0]["error"]["code"] != -32600 {
                return Err("an invalid message refused without -32600".to_owned());
            }
            if named != ids {
                return Err(format!("the refusal names {named:?}, not {ids:?}"));
            }
        }
        (Expect::Reinitialize | Expect::AtMostOnce, 400) => one_error()?,
        (expect, status) => {
            return Err(format!("status {status}, where {expect:?} was expected"));
        }
    }
    Ok(named)
}

#[tokio::test]
async fn hostile_posts_get_the_answers_http_promises_and_the_server_keeps_serving() {
    let (seed, messages) = run_settings(2_000);
    let running = serve(HttpServer::new(server())).await;
    let mut client = Client {
        http: reqwest::Client::new(),
        url: running.url(),
        session: String::new(),
        seed,
        restarts: Vec::new(),
    };
    client.initialize().await;

    let corpus = corpus();
    let mut rng = Rng::new(seed);
    let mut since_ping = Vec::new();
    let mut previous = String::new();
    let mut statuses: BTreeMap<u16, u64> = BTreeMap::new();
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    let mut notifications = 0_u64;
    // The end-of-run tallies, as in the stdio test: answers owed, by id; ids whose
    // messages may go unanswered; answers received, by id. A cancellation loosens
    // nothing here: each POST's answer is read whole before the next is sent, so no
    // request is in flight when a `notifications/cancelled` arrives.
    let mut tally = Tally::default();
    for n in 1..=messages {
        let mut message = rng.pick(&corpus).clone();
        for _ in 0..=rng.below(2) {
            mutate(&mut rng, &mut message);
        }
        let parts: Vec<&Value> = match &message {
            Value::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        let ids: Vec<String> = parts.iter().filter_map(|p| answered_id(p)).collect();
        // `initialize` inside a session is refused by the transport before the session
        // reads it (the session keeps 2025-03-26; a client starts a new session
        // without Mcp-Session-Id instead), so it may go unanswered by id.
        let expect = expect(&message);
        for id in &ids {
            tally.owe(
                id.clone(),
                matches!(expect, Expect::Reinitialize | Expect::AtMostOnce),
            );
        }
        let text = Layout::random(&mut rng, true).write(&message);
        let restarts = client.restarts.len();
        let answer = client.send(&format!("POST {n}"), &text, &previous).await;
        if client.restarts.len() > restarts {
            *statuses.entry(404).or_default() += 1;
        }
        *statuses.entry(answer.status).or_default() += 1;
        let batch = if message.is_array() { " batch" } else { "" };
        *expected.entry(format!("{expect:?}{batch}")).or_default() += 1;
        notifications += answer
            .messages
            .iter()
            .filter(|m| m.get("method").is_some())
            .count() as u64;
        match check(expect, &ids, &answer) {
            Ok(named) => {
                for id in named {
                    tally.received(id);
                }
            }
            Err(why) => panic!(
                "seed {seed}: POST {n} got status {}: {why}\nit carried:\n{text}\nthe answer:\n{}",
                answer.status,
                answer
                    .messages
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        }
        since_ping.push(text.clone());
        previous = text;
        if n % PING_EVERY != 0 {
            continue;
        }
        let probe = format!("probe-{n}");
        let ping = json!({"jsonrpc":"2.0","id":probe,"method":"ping"}).to_string();
        let pong = client
            .send(&format!("the ping after POST {n}"), &ping, &previous)
            .await;
        let answers: Vec<&Value> = pong
            .messages
            .iter()
            .filter(|m| m.get("method").is_none())
            .collect();
        let answered = pong.status == 200
            && matches!(answers.as_slice(), [a] if a["id"] == probe.as_str() && a["result"] == json!({}));
        assert!(
            answered,
            "seed {seed}: the ping after POST {n} got status {} and {answers:?}, after these messages:\n{}",
            pong.status,
            since_ping.join("\n")
        );
        since_ping.clear();
    }

    tally.check(seed);
    let answers = tally.answers();
    // Most hostile messages are still requests the server reads and answers.
    assert!(
        answers > messages / 4,
        "seed {seed}: only {answers} answers to {messages} messages"
    );
    assert_eq!(
        running.session_count(),
        1,
        "seed {seed}: the live session only"
    );
    eprintln!(
        "seed {seed}: {answers} answers by id to {messages} hostile POSTs, {notifications} \
         notifications; statuses {statuses:?}; expected {expected:?}; {} new sessions{}",
        client.restarts.len(),
        client
            .restarts
            .iter()
            .map(|m| format!("\n  after: {m}"))
            .collect::<String>()
    );
    bounded("shutdown", running.shutdown()).await;
}
