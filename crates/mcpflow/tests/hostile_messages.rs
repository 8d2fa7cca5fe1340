//! Well-formed JSON with hostile content, thousands of messages of it: a server answers
//! every message that has a readable id and is not a response with exactly one
//! well-formed JSON-RPC message carrying that id (a request the peer cancels may go
//! unanswered, and so may a batch's, refused whole once a repeated `initialize` has
//! negotiated a version without batches), sends nothing for ids it was never sent,
//! never panics, and keeps serving.
//!
//! Each message is a valid client message with one part replaced at random: a member's
//! value by a value of another type (huge, negative or fractional numbers, long or
//! escaped strings, deep or empty containers), a member deleted or renamed, an unknown
//! member added. A seeded generator picks them, so a failure names the seed and the
//! messages sent since the connection last answered, and replays exactly:
//! `MCPFLOW_HOSTILE_SEED=7 MCPFLOW_HOSTILE_MESSAGES=100000 cargo test -p mcpflow --test
//! hostile_messages` runs another seed, longer.
#![allow(clippy::unwrap_used)] // panics are how tests fail

mod common;

use common::{Kind, RawPeer, Rng, bounded, pair, target_server};
use mcpflow::protocol::CompletionReference;
use mcpflow::server::Server;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// What a client sends, one of each kind the server handles.
fn corpus() -> Vec<Value> {
    vec![
        json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"0"}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "_meta":{"progressToken":3},"name":"echo","arguments":{"text":"hi"}}}),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{
            "name":"strict","arguments":{"n":1}}}),
        json!({"jsonrpc":"2.0","id":5,"method":"resources/list"}),
        json!({"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"x://one"}}),
        json!({"jsonrpc":"2.0","id":7,"method":"resources/templates/list","params":{}}),
        json!({"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{
            "name":"greet","arguments":{"name":"a"}}}),
        json!({"jsonrpc":"2.0","id":9,"method":"completion/complete","params":{
            "ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}}}),
        json!({"jsonrpc":"2.0","id":10,"method":"logging/setLevel","params":{"level":"debug"}}),
        json!({"jsonrpc":"2.0","id":11,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"x","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{
            "requestId":3,"reason":"r"}}),
        json!({"jsonrpc":"2.0","method":"notifications/progress","params":{
            "progressToken":1,"progress":1,"total":2}}),
        json!({"jsonrpc":"2.0","method":"notifications/roots/list_changed"}),
        json!({"jsonrpc":"2.0","id":12,"result":{"roots":[]}}),
        json!({"jsonrpc":"2.0","id":13,"error":{"code":-1,"message":"m"}}),
        json!([{"jsonrpc":"2.0","id":14,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]),
    ]
}

/// A value chosen to be wrong where another was expected.
fn hostile(rng: &mut Rng) -> Value {
    match rng.below(16) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(-1),
        3 => json!(u64::MAX),
        4 => json!(i64::MIN),
        5 => json!(1.5e300),
        6 => json!(0.5),
        7 => json!(""),
        8 => json!("x".repeat(10_000)),
        9 => json!("\u{0}\"\\\n\u{2028}\u{1F600}"),
        10 => json!([]),
        11 => json!({}),
        12 => json!({"_meta": {"progressToken": {}}}),
        13 => json!([[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]),
        14 => json!("tools/call"),
        _ => json!({"name": "echo", "arguments": []}),
    }
}

/// Replace, delete, rename or add one part of `value`, somewhere within it.
fn mutate(rng: &mut Rng, value: &mut Value) {
    // Walk down a few levels (by a JSON pointer) to pick the part.
    let mut pointer = String::new();
    let mut at = &*value;
    for _ in 0..rng.below(4) {
        let step = match at {
            Value::Object(map) if !map.is_empty() => map
                .iter()
                .nth(rng.below(map.len() as u64) as usize)
                .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v)),
            Value::Array(items) if !items.is_empty() => {
                let i = rng.below(items.len() as u64) as usize;
                Some((i.to_string(), &items[i]))
            }
            _ => None,
        };
        match step {
            Some((key, next)) if next.is_object() || next.is_array() => {
                pointer.push('/');
                pointer.push_str(&key);
                at = next;
            }
            _ => break,
        }
    }
    let Some(at) = value.pointer_mut(&pointer) else {
        return;
    };
    match at {
        Value::Object(map) if !map.is_empty() => {
            let key = map
                .keys()
                .nth(rng.below(map.len() as u64) as usize)
                .cloned()
                .unwrap();
            match rng.below(4) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    let value = map.remove(&key).unwrap();
                    map.insert(key.to_uppercase(), value);
                }
                2 => {
                    map.insert("unknown".to_owned(), hostile(rng));
                }
                _ => {
                    map.insert(key, hostile(rng));
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = rng.below(items.len() as u64) as usize;
            items[i] = hostile(rng);
        }
        other => *other = hostile(rng),
    }
}

/// A JSON-RPC message a server may send: a response (one of result or error, and an id
/// member) or a request or notification (a method).
fn is_well_formed(message: &Value) -> bool {
    if message["jsonrpc"] != "2.0" {
        return false;
    }
    if message.get("method").is_some() {
        return message["method"].is_string();
    }
    message.get("id").is_some()
        && (message.get("result").is_some() != message.get("error").is_some())
        && message
            .get("error")
            .is_none_or(|e| e["code"].is_i64() && e["message"].is_string())
}

/// The id an answer to `message` must carry, as JSON text; `None` when it gets no
/// answer with an id: a notification, a response, or an id that cannot be read (a
/// JSON-RPC id is a string or an integer).
fn answered_id(message: &Value) -> Option<String> {
    let id = message.get("id")?;
    let readable = id.is_string() || id.is_i64() || id.is_u64();
    let is_response = message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some());
    (readable && !is_response).then(|| id.to_string())
}

/// The request a `notifications/cancelled` names, as JSON text.
fn cancelled_id(message: &Value) -> Option<String> {
    (message["method"] == "notifications/cancelled" && message.get("id").is_none())
        .then(|| message["params"]["requestId"].to_string())
}

fn server() -> Server {
    target_server("target")
        .complete_argument(
            CompletionReference::prompt("greet"),
            "name",
            |value, _resolved, _c| async move { vec![format!("{value}!")] },
        )
        .logging(true)
        .build()
}

#[tokio::test]
async fn hostile_messages_get_well_formed_answers_and_the_server_keeps_serving() {
    let setting = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let seed = setting("MCPFLOW_HOSTILE_SEED", 0x5EED);
    let messages = setting("MCPFLOW_HOSTILE_MESSAGES", 10_000);
    const PING_EVERY: u64 = 25;
    let corpus = corpus();
    let (c, s) = pair(Kind::MemoryLarge);
    let _running = server().serve(s);
    let mut peer = RawPeer::new(c);
    // 2025-03-26, so batches are read too.
    peer.send(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}),
    )
    .await;
    let init = bounded("initialize", peer.recv()).await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26", "{init}");
    peer.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;

    let mut rng = Rng::new(seed);
    let mut since_ping = Vec::new();
    let mut answered = 0_u64;
    // Answers owed, by id; ids whose messages may go unanswered (named by a
    // cancellation, or sent in a batch); answers received, by id.
    let mut owed: HashMap<String, u64> = HashMap::new();
    let mut maybe: HashSet<String> = HashSet::new();
    let mut received: HashMap<String, u64> = HashMap::new();
    // The last message sent with each owed id, to name it when its answer is missing.
    let mut carried_by: HashMap<String, String> = HashMap::new();
    for n in 1..=messages {
        let mut message = corpus[rng.below(corpus.len() as u64) as usize].clone();
        for _ in 0..=rng.below(2) {
            mutate(&mut rng, &mut message);
        }
        let (parts, batch) = match &message {
            Value::Array(items) => (items.iter().collect(), true),
            one => (vec![one], false),
        };
        for part in parts {
            if let Some(id) = answered_id(part) {
                *owed.entry(id.clone()).or_default() += 1;
                carried_by.insert(id.clone(), part.to_string());
                if batch {
                    maybe.insert(id);
                }
            }
            maybe.extend(cancelled_id(part));
        }
        let text = message.to_string();
        peer.send_text(&text).await;
        since_ping.push(text);
        if n % PING_EVERY != 0 {
            continue;
        }
        let probe = format!("probe-{n}");
        peer.send(json!({"jsonrpc":"2.0","id":probe,"method":"ping"}))
            .await;
        let read = async {
            loop {
                let Some(reply) = peer.recv().await else {
                    return Err("the connection ended".to_owned());
                };
                // A batch's answers come as one array.
                let replies = match reply {
                    Value::Array(items) => items,
                    one => vec![one],
                };
                for reply in replies {
                    if !is_well_formed(&reply) {
                        return Err(format!("a malformed answer: {reply}"));
                    }
                    if reply["id"] == probe.as_str() {
                        return Ok(());
                    }
                    if reply.get("method").is_none() && !reply["id"].is_null() {
                        *received.entry(reply["id"].to_string()).or_default() += 1;
                    }
                    answered += 1;
                }
            }
        };
        if let Err(why) = bounded(&format!("the ping after message {n}"), read).await {
            panic!(
                "seed {seed}: {why}, after these messages:\n{}",
                since_ping.join("\n")
            );
        }
        since_ping.clear();
    }
    // Answers still in flight (a request task may finish after a later ping).
    let settle = async {
        loop {
            let missing = owed
                .iter()
                .any(|(id, &n)| !maybe.contains(id) && received.get(id).copied().unwrap_or(0) < n);
            if !missing {
                return;
            }
            let Some(reply) = peer.recv().await else {
                return;
            };
            let replies = match reply {
                Value::Array(items) => items,
                one => vec![one],
            };
            for reply in replies {
                if reply.get("method").is_none() && !reply["id"].is_null() {
                    *received.entry(reply["id"].to_string()).or_default() += 1;
                }
                answered += 1;
            }
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(10), settle)
        .await
        .is_err()
    {
        let missing: Vec<String> = owed
            .iter()
            .filter(|(id, n)| !maybe.contains(*id) && received.get(*id).copied().unwrap_or(0) < **n)
            .take(10)
            .map(|(id, n)| {
                format!(
                    "{id}: owed {n}, got {}, last sent in {}",
                    received.get(id).copied().unwrap_or(0),
                    carried_by[id]
                )
            })
            .collect();
        panic!(
            "seed {seed}: answers never came, for example:\n{}",
            missing.join("\n")
        );
    }
    for (id, &n) in &owed {
        let got = received.get(id).copied().unwrap_or(0);
        let allowed = if maybe.contains(id) { 0..=n } else { n..=n };
        assert!(
            allowed.contains(&got),
            "seed {seed}: id {id} was sent in {n} answerable messages and answered {got} times"
        );
    }
    for (id, &got) in &received {
        assert!(
            owed.contains_key(id),
            "seed {seed}: {got} answers for id {id}, which no answerable message carried"
        );
    }
    // Most hostile messages are still requests the server reads and answers.
    assert!(
        answered > messages / 4,
        "seed {seed}: only {answered} answers to {messages} messages"
    );
    eprintln!("seed {seed}: {answered} answers to {messages} hostile messages");
}
