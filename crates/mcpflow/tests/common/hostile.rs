//! The hostile-message generator shared by the hostile-message tests (in memory and
//! over streamable HTTP): a corpus of valid client messages, a seeded mutation that
//! replaces, deletes, renames or adds one part of one, and the rules that say which
//! answers a message is owed. For the client's side (`hostile_server.rs`), a corpus of
//! what a server sends too: tool results and lists, errors, notifications, requests.
//!
//! Each message is a valid client message with one part replaced at random: a member's
//! value by a value of another type (huge, negative or fractional numbers, long or
//! escaped strings, deep or empty containers), a member deleted or renamed, an unknown
//! member added.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use std::collections::{HashMap, HashSet};

use mcpflow::protocol::CompletionReference;
use mcpflow::server::Server;
use serde_json::{Value, json};

use super::{Rng, target_server};

/// The server the hostile messages go to: [`target_server`] with completion and logging,
/// so every method in the [`corpus`] reaches a handler.
pub fn server() -> Server {
    target_server("target")
        .complete_argument(
            CompletionReference::prompt("greet"),
            "name",
            |value, _resolved, _c| async move { vec![format!("{value}!")] },
        )
        .logging(true)
        .build()
}

/// The seed (`MCPFLOW_HOSTILE_SEED`) and the number of messages
/// (`MCPFLOW_HOSTILE_MESSAGES`, else `default_messages`) of a run.
pub fn run_settings(default_messages: u64) -> (u64, u64) {
    let setting = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    (
        setting("MCPFLOW_HOSTILE_SEED", 0x5EED),
        setting("MCPFLOW_HOSTILE_MESSAGES", default_messages),
    )
}

/// A run's answers by id (as JSON text): owed, allowed to be missing, received.
#[derive(Default)]
pub struct Tally {
    owed: HashMap<String, u64>,
    maybe: HashSet<String>,
    received: HashMap<String, u64>,
}

impl Tally {
    /// A message owed one answer with `id` (`at_most_once`: it may also get none).
    pub fn owe(&mut self, id: String, at_most_once: bool) {
        if at_most_once {
            self.maybe.insert(id.clone());
        }
        *self.owed.entry(id).or_default() += 1;
    }

    /// Answers owed to `id` may all be missing (a cancellation named it).
    pub fn excuse(&mut self, id: String) {
        self.maybe.insert(id);
    }

    /// An answer with `id` arrived.
    pub fn received(&mut self, id: String) {
        *self.received.entry(id).or_default() += 1;
    }

    /// A message the server sent: counted by its id when it is an answer (not a
    /// request or notification of its own) that names one.
    pub fn record_answer(&mut self, message: &Value) {
        if message.get("method").is_none() && !message["id"].is_null() {
            self.received(message["id"].to_string());
        }
    }

    /// Answers received in all.
    pub fn answers(&self) -> u64 {
        self.received.values().sum()
    }

    /// Ids still owed an answer, with how many were owed and how many came.
    pub fn missing(&self) -> impl Iterator<Item = (&String, u64, u64)> {
        self.owed.iter().filter_map(|(id, &n)| {
            let got = self.received.get(id).copied().unwrap_or(0);
            (!self.maybe.contains(id) && got < n).then_some((id, n, got))
        })
    }

    /// JSON-RPC's promise, over the whole run: each owed id answered exactly as often
    /// as it was owed (at most that often where excused), no answer to an id never owed.
    pub fn check(&self, seed: u64) {
        for (id, &n) in &self.owed {
            let got = self.received.get(id).copied().unwrap_or(0);
            let allowed = if self.maybe.contains(id) {
                0..=n
            } else {
                n..=n
            };
            assert!(
                allowed.contains(&got),
                "seed {seed}: id {id} was sent in {n} answerable messages and answered {got} times"
            );
        }
        for (id, &got) in &self.received {
            assert!(
                self.owed.contains_key(id),
                "seed {seed}: {got} answers for id {id}, which no answerable message carried"
            );
        }
    }
}

/// What a client sends, one of each kind the server handles.
pub fn corpus() -> Vec<Value> {
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

/// What a server answers `tools/call` with: results with text, image, audio,
/// resource_link and embedded resource blocks, `structuredContent`, `isError` and
/// `_meta`.
pub fn tool_results() -> Vec<Value> {
    vec![
        json!({"content":[{"type":"text","text":"22.5 \u{b0}C and sunny in Paris",
            "annotations":{"audience":["user","assistant"],"priority":0.7}}],
            "structuredContent":{"temperature":22.5,"conditions":"sunny"},
            "isError":false,"_meta":{"io.example/trace":"4bf92f35"}}),
        json!({"content":[{"type":"image","data":"iVBORw0KGgoAAAANSUhEUg==","mimeType":"image/png"},
            {"type":"audio","data":"UklGRiQAAABXQVZFZm10","mimeType":"audio/wav",
             "_meta":{"durationMs":1200}}]}),
        json!({"content":[{"type":"resource_link","uri":"file:///project/src/main.rs",
                "name":"main.rs","mimeType":"text/x-rust","description":"The entry point"},
            {"type":"resource","resource":{"uri":"file:///project/README.md",
                "mimeType":"text/markdown","text":"# Project\n"}},
            {"type":"resource","resource":{"uri":"file:///project/logo.png",
                "mimeType":"image/png","blob":"iVBORw0KGgo="}}],
            "structuredContent":{"temperature":-3,"files":2}}),
        json!({"content":[{"type":"text","text":"no city named Atlantis"}],"isError":true}),
        json!({"content":[],"structuredContent":{"temperature":0}}),
    ]
}

/// What a server answers `tools/list` with: tools with input and output schemas,
/// annotations and icons; the first has a further page, the second is the last.
pub fn tool_lists() -> Vec<Value> {
    let weather = json!({"name":"weather","title":"Weather","description":"The weather in a city",
        "inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},
        "outputSchema":{"type":"object","properties":{"temperature":{"type":"number"},
            "conditions":{"type":"string"}},"required":["temperature"]},
        "annotations":{"readOnlyHint":true,"openWorldHint":true},
        "icons":[{"src":"https://example.com/sun.png","mimeType":"image/png"}]});
    let echo = json!({"name":"echo","description":"Echoes its input",
        "inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},
        "_meta":{"io.example/owner":"tests"}});
    vec![
        json!({"tools":[weather, echo],"nextCursor":"page-2"}),
        json!({"tools":[{"name":"search","inputSchema":{"type":"object",
            "properties":{"query":{"type":"string","maxLength":200}},"required":["query"]},
            "outputSchema":{"type":"object","properties":{"hits":{"type":"array",
                "items":{"type":"string"}}}}}]}),
        json!({"tools":[weather]}),
    ]
}

/// JSON-RPC errors a server answers a request with.
pub fn server_errors() -> Vec<Value> {
    vec![
        json!({"code":-32602,"message":"Unknown tool: nowhere"}),
        json!({"code":-32603,"message":"internal error","data":{"detail":"disk full","retry":true}}),
        json!({"code":-32002,"message":"Resource not found","data":{"uri":"file:///gone"}}),
    ]
}

/// A server notification of each kind: progress for `token`, a log message, a tool
/// list change, a cancellation of `request`.
pub fn server_notifications(token: &Value, request: &Value) -> Vec<Value> {
    vec![
        json!({"jsonrpc":"2.0","method":"notifications/progress","params":{
            "progressToken":token,"progress":3,"total":10,"message":"indexing"}}),
        json!({"jsonrpc":"2.0","method":"notifications/message","params":{
            "level":"warning","logger":"db","data":{"query":"SELECT 1","ms":1200}}}),
        json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{
            "requestId":request,"reason":"the user pressed stop"}}),
    ]
}

/// A server request of each kind with `id`: ping, sampling, form elicitation, roots,
/// and a method no client knows.
pub fn server_requests(id: &Value) -> Vec<Value> {
    vec![
        json!({"jsonrpc":"2.0","id":id,"method":"ping"}),
        json!({"jsonrpc":"2.0","id":id,"method":"sampling/createMessage","params":{
            "messages":[{"role":"user","content":{"type":"text","text":"Summarise the logs"}}],
            "systemPrompt":"Be brief","maxTokens":200,"temperature":0.2,
            "modelPreferences":{"hints":[{"name":"claude"}],"speedPriority":0.8},
            "_meta":{"progressToken":"sampling-1"}}}),
        json!({"jsonrpc":"2.0","id":id,"method":"elicitation/create","params":{
            "mode":"form","message":"Which branch?","requestedSchema":{"type":"object",
            "properties":{"branch":{"type":"string","default":"main"}},"required":["branch"]}}}),
        json!({"jsonrpc":"2.0","id":id,"method":"roots/list","params":{}}),
        json!({"jsonrpc":"2.0","id":id,"method":"vendor/telemetry","params":{"x":1}}),
    ]
}

/// A value chosen to be wrong where another was expected.
pub fn hostile(rng: &mut Rng) -> Value {
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
pub fn mutate(rng: &mut Rng, value: &mut Value) {
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
pub fn is_well_formed(message: &Value) -> bool {
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
pub fn answered_id(message: &Value) -> Option<String> {
    let id = message.get("id")?;
    let readable = is_readable_id(id);
    let is_response = message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some());
    (readable && !is_response).then(|| id.to_string())
}

/// Whether an answer can carry `id` back: JSON-RPC ids are strings or integers.
pub fn is_readable_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// The messages of one frame or body: a batch's members, or the one message.
pub fn messages_of(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        one => vec![one],
    }
}

/// The request a `notifications/cancelled` names, as JSON text.
pub fn cancelled_id(message: &Value) -> Option<String> {
    (message["method"] == "notifications/cancelled" && message.get("id").is_none())
        .then(|| message["params"]["requestId"].to_string())
}
