//! The client side of the hostile-message tests: a raw peer acting as a server answers
//! a real mcpflow `Client`'s calls with mutated responses, and mixes in mutated
//! notifications and requests of its own, each written in a layout some peer writes
//! (`common::layout`). What a demanding user of the client needs must hold throughout:
//!
//! - every call (`call_tool`, with and without a progress callback, `list_tools`,
//!   `ping`, the self-refreshing `tools()`) ends within its bound, with `Ok` or a clear
//!   `Err`, never a hang or a panic;
//! - an `Ok` is exactly what the response that completed the call says (a response
//!   with the call's id), read as the call's type; a result that does not read as that
//!   type is `SessionError::Codec`; a JSON-RPC error is `SessionError::Rejected` with
//!   that error; a response that is still well-formed, however mutated its result, is
//!   never passed over;
//! - every message the raw server sends with a readable id that is not a response gets
//!   exactly one well-formed answer with that id (at most one once a cancellation named
//!   it), and the answers to unmutated requests are the right ones (a result for ping,
//!   sampling, elicitation and roots; `-32601` for an unknown method);
//! - a call's progress callback runs for every unmutated report sent before the
//!   call's answer, for no report sent after it, and never once the call has returned;
//! - the log and notification handlers see every unmutated notification meant for them
//!   once the calls sent before them have returned, and nothing that was never sent;
//! - after every round, `ping` still works, and at the end `close` is bounded.
//!
//! Each answer is followed by a proper JSON-RPC error for the same id (the fallback),
//! so a call whose answer was mutated into something that is no longer a response to
//! it still ends at once; a call that ends with the fallback although its answer was a
//! well-formed response lost that response. The raw server holds each round's calls
//! until all have arrived and answers them in a shuffled order, so progress also goes to
//! calls that are waiting. The ping after a round is answered only once every answer
//! owed so far has come.
//!
//! Seeded and replayable: a failure names the seed and the messages the raw server sent
//! since the last good round, and the runs on one thread send the same messages again
//! for the same seed. `MCPFLOW_HOSTILE_SEED=7 MCPFLOW_HOSTILE_MESSAGES=50000 cargo test
//! -p mcpflow --test engine hostile_server::` runs another seed, longer (the count is of
//! mutated messages, per test).
#![allow(clippy::unwrap_used)] // panics are how tests fail

mod checks;
mod raw_server;
mod round;

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use checks::{check_answer, check_answer_of, intact};
use common::hostile::{
    Tally, answered_id, cancelled_id, is_well_formed, mutate, run_settings, server_errors,
    server_notifications, server_requests, tool_lists, tool_results,
};
use common::layout::Layout;
use common::{Kind, RawPeer, Rng, bounded, pair};
use mcpflow::client::{Client, ClientHandle};
use mcpflow::protocol::{
    CallToolRequestParams, CallToolResult, CreateMessageResult, ElicitResult, EmptyResult,
    ListToolsResult, Root, Tool,
};
use mcpflow::{RequestOptions, SessionError};
use raw_server::RawServer;
use round::{Run, Stats};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Mutated messages per test by default (under a second each in a debug build).
const DEFAULT_MESSAGES: u64 = 2_000;
/// The code of the proper error that follows every answer.
const FALLBACK: i64 = -32050;
/// The root the client offers.
const ROOT_URI: &str = "file:///project";

/// In memory, on one thread: a seed replays the same messages (the digest printed at
/// the end is the same).
#[tokio::test]
async fn hostile_server_messages_over_memory() {
    run(Kind::MemoryLarge).await;
}

/// Over a socket pair with newline framing, as stdio uses; on one thread, so a seed
/// replays the same messages.
#[tokio::test]
async fn hostile_server_messages_over_stdio() {
    run(Kind::Stdio).await;
}

/// In memory, on two threads: the client's reader, its callers and its handlers race
/// for real (a replay sends much the same messages, not always the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_server_messages_on_two_threads() {
    run(Kind::MemoryLarge).await;
}

/// What a tagged call was answered with.
#[derive(Clone, Debug)]
struct Answer {
    /// The request's id and progress token.
    id: Value,
    token: Option<Value>,
    /// The answer as sent (the fallback followed it).
    sent: Value,
    mutated: bool,
}

/// What an unmutated server request must be answered with.
#[derive(Debug)]
enum Expect {
    Result(&'static str),
    Error(i64),
}

/// What the raw server did, shared with the test.
#[derive(Default)]
struct Wire {
    round: u64,
    /// The tags of this round's calls: the raw server holds them until all have come.
    round_tags: HashSet<String>,
    /// The run is ending: requests are answered with the fallback alone, so nothing
    /// sent after the last ping is owed an answer.
    quiet: bool,
    /// The test is closing the client: the raw server may find the connection gone.
    closing: bool,
    /// Messages sent since the last good round.
    log: Vec<String>,
    /// Mutated messages sent in all, and a digest of every message sent (the same for
    /// a replay).
    hostile: u64,
    digest: u64,
    /// Answers owed and received, by id, for the check at the end; the last message
    /// that carried each owed id.
    tally: Tally,
    carried_by: HashMap<String, String>,
    /// The same, kept so that each round's checks cost what the round sent: answers
    /// owed and come by id, the ids a cancellation excused, the ids still owed one.
    due: HashMap<String, (u64, u64)>,
    excused: HashSet<String>,
    open: HashSet<String>,
    /// Server requests sent (messages owed an answer) and answers received.
    owed: u64,
    answers: u64,
    /// What each tagged call was answered with.
    answered: HashMap<String, Answer>,
    /// Per progress token (JSON text): reports sent while its call was unanswered,
    /// unmutated and in all.
    progress: HashMap<String, (u64, u64)>,
    /// Answers owed to unmutated server requests, by id, and how many were checked.
    expect: HashMap<String, Expect>,
    expect_checked: u64,
    /// Notifications sent by method (messages with a string method and no id), and
    /// the unmutated ones that must reach the client's handlers.
    notes_sent: HashMap<String, u64>,
    notes_clean: HashMap<String, u64>,
    /// An unmutated `tools/list_changed` was sent this round.
    list_changed_clean: bool,
    /// `notes_clean` and `list_changed_clean` as they were when the ping after a round
    /// was answered: all of it must have reached the handlers once that ping returns.
    at_probe: Option<(HashMap<String, u64>, bool)>,
    problems: Vec<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// FNV-1a: a stable seed per call, so a call's answer does not depend on the order the
/// calls arrive in.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn pick(rng: &mut Rng, items: Vec<Value>) -> Value {
    let i = rng.below(items.len() as u64) as usize;
    items.into_iter().nth(i).unwrap()
}

/// Replace the long runs the mutations use, to keep a failure's report readable (the
/// seed replays the messages exactly).
fn shorten(text: &str) -> String {
    text.replace(&"x".repeat(10_000), "xxx...(10000 x)")
}

/// What the client's handlers saw.
#[derive(Default)]
struct Seen {
    logs: AtomicU64,
    notes: Mutex<HashMap<String, u64>>,
}

impl Seen {
    fn notes(&self, method: &str) -> u64 {
        lock(&self.notes).get(method).copied().unwrap_or(0)
    }
}

/// What one call's progress callback saw.
#[derive(Default)]
struct Progress {
    runs: AtomicU64,
    returned: AtomicBool,
    late: AtomicU64,
}

enum Call {
    Tool {
        tag: String,
        name: &'static str,
        progress: Option<Arc<Progress>>,
    },
    List {
        tag: String,
    },
    Ping {
        tag: String,
    },
    Tools,
}

impl Call {
    /// The tag the raw server sees in the call's request (`tools()` sends none).
    fn tag(&self) -> Option<&str> {
        match self {
            Call::Tool { tag, .. } | Call::List { tag } | Call::Ping { tag } => Some(tag),
            Call::Tools => None,
        }
    }
}

enum Outcome {
    Tool(Result<CallToolResult, SessionError>),
    List(Result<ListToolsResult, SessionError>),
    Ping(Result<(), SessionError>),
    Tools(Result<Arc<Vec<Tool>>, SessionError>),
}

async fn run(kind: Kind) {
    let over = match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::CurrentThread => format!("{kind:?} on one thread"),
        _ => format!("{kind:?} on two threads"),
    };
    let (seed, messages) = run_settings(DEFAULT_MESSAGES);
    let wire = Arc::new(Mutex::new(Wire::default()));
    let probe = Arc::new(AtomicBool::new(false));
    let (c, s) = pair(kind);
    let server = tokio::spawn(
        RawServer {
            peer: RawPeer::new(s),
            seed,
            wire: wire.clone(),
            probe: probe.clone(),
            held: Vec::new(),
            pending: Vec::new(),
            finished: Vec::new(),
            last_request: json!("srv-0"),
            requests: 0,
            untagged: 0,
        }
        .run(),
    );
    let seen = Arc::new(Seen::default());
    let (logs, notes) = (seen.clone(), seen.clone());
    let builder = Client::builder("hostile-test", "1")
        .on_sampling(|_params, _client| async {
            Ok(CreateMessageResult::assistant_text(
                "test-model",
                "a summary",
            ))
        })
        .on_elicitation(false, |_params, _client| async {
            let content = json!({"branch": "main"});
            Ok(ElicitResult::accept(content.as_object().cloned().unwrap()))
        })
        .on_roots(|_client| async { Ok(vec![Root::new(ROOT_URI, "project")]) })
        .on_log(move |_params, _client| {
            logs.logs.fetch_add(1, Ordering::SeqCst);
            async {}
        })
        .on_notification(move |notification, _client| {
            *lock(&notes.notes).entry(notification.method).or_default() += 1;
            async {}
        });
    let client = bounded(&format!("connect over {kind:?}"), builder.connect(c))
        .await
        .expect("connect");
    let mut run = Run {
        seed,
        messages,
        over: over.clone(),
        round: 0,
        wire: wire.clone(),
        probe,
    };
    let mut rng = Rng::new(seed);
    let mut stats = Stats::default();
    while lock(&wire).hostile < messages {
        run.round(&client, &mut rng, &seen, &mut stats).await;
    }
    // Quiet, then one more round trip: every answer owed so far has come once that
    // ping returns, and nothing sent after it is owed one.
    lock(&wire).quiet = true;
    run.probe.store(true, Ordering::SeqCst);
    let handle = client.handle();
    if let Err(e) = run
        .spawn_bounded("the last ping", async move { handle.ping().await })
        .await
    {
        run.fail(&format!("the last ping failed: {e}"));
    }
    lock(&wire).closing = true;
    run.spawn_bounded("close", client.close()).await;
    run.join("the raw server", server).await;
    let wire = lock(&wire);
    if !wire.problems.is_empty() {
        drop(wire);
        run.fail("after close");
    }
    wire.tally.check(seed);
    let notes: u64 = lock(&seen.notes).values().sum();
    eprintln!(
        "seed {seed} over {over}: {} rounds, {} mutated messages (digest {:016x})\n  \
         calls Ok {:?}\n  calls Err {:?}: {} by the fallback, {} JSON-RPC errors, {} codec errors\n  \
         {} calls answered unmutated, {} mutated but well-formed; {} progress callback runs\n  \
         {} messages owed an answer, {} answers from the client ({} to unmutated requests, checked)\n  \
         {} notifications handled, {} of them logs",
        stats.rounds,
        wire.hostile,
        wire.digest,
        stats.ok,
        stats.err,
        stats.fallback,
        stats.rejected,
        stats.codec,
        stats.unmutated,
        stats.intact,
        stats.progress_runs,
        wire.owed,
        wire.answers,
        wire.expect_checked,
        notes,
        seen.logs.load(Ordering::SeqCst),
    );
}
