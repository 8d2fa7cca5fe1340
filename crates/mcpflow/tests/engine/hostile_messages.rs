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
//! member added, and the message is written in a layout some peer writes (member order,
//! whitespace, escapes: `common::layout`). A seeded generator (`common::hostile`) picks
//! them, so a failure names the seed and the messages sent since the connection last
//! answered, and replays exactly:
//! `MCPFLOW_HOSTILE_SEED=7 MCPFLOW_HOSTILE_MESSAGES=100000 cargo test -p mcpflow --test
//! engine hostile_messages::` runs another seed, longer.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::collections::HashMap;

use common::hostile::{
    Tally, answered_id, cancelled_id, corpus, is_well_formed, messages_of, mutate, run_settings,
    server,
};
use common::layout::Layout;
use common::{Kind, RawPeer, Rng, bounded, pair};
use serde_json::{Value, json};

#[tokio::test]
async fn hostile_messages_get_well_formed_answers_and_the_server_keeps_serving() {
    let (seed, messages) = run_settings(10_000);
    const PING_EVERY: u64 = 25;
    let corpus = corpus();
    let (c, s) = pair(Kind::MemoryLarge);
    let _running = server().serve(s);
    let mut peer = RawPeer::new(c);
    // 2025-03-26, so batches are read too.
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}});
    bounded("initialize sent", peer.send(init)).await;
    let init = bounded("initialize", peer.recv()).await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26", "{init}");
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    bounded("initialized sent", peer.send(initialized)).await;

    let mut rng = Rng::new(seed);
    let mut since_ping = Vec::new();
    // Messages answered (with an id or `null`), and the answers by id. A batch's
    // requests are owed at most one answer each: a repeated `initialize` may negotiate
    // a version without batches, and the whole batch is then refused with `null`.
    let mut answered = 0_u64;
    let mut tally = Tally::default();
    // The last message sent with each owed id, to name it when its answer is missing.
    let mut carried_by: HashMap<String, String> = HashMap::new();
    for n in 1..=messages {
        let mut message = rng.pick(&corpus).clone();
        for _ in 0..=rng.below(2) {
            mutate(&mut rng, &mut message);
        }
        let (parts, batch) = match &message {
            Value::Array(items) => (items.iter().collect(), true),
            one => (vec![one], false),
        };
        for part in parts {
            if let Some(id) = answered_id(part) {
                carried_by.insert(id.clone(), part.to_string());
                tally.owe(id, batch);
            }
            if let Some(id) = cancelled_id(part) {
                tally.excuse(id);
            }
        }
        let text = Layout::random(&mut rng, peer.newlines_allowed()).write(&message);
        bounded(&format!("message {n} sent"), peer.send_text(&text)).await;
        since_ping.push(text);
        if n % PING_EVERY != 0 {
            continue;
        }
        let probe = format!("probe-{n}");
        let ping = json!({"jsonrpc":"2.0","id":probe,"method":"ping"});
        bounded(&format!("the ping after message {n} sent"), peer.send(ping)).await;
        let read = async {
            loop {
                let Some(reply) = peer.recv().await else {
                    return Err("the connection ended".to_owned());
                };
                // A batch's answers come as one array.
                for reply in messages_of(reply) {
                    if !is_well_formed(&reply) {
                        return Err(format!("a malformed answer: {reply}"));
                    }
                    if reply["id"] == probe.as_str() {
                        return Ok(());
                    }
                    tally.record_answer(&reply);
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
            if tally.missing().next().is_none() {
                return;
            }
            let Some(reply) = peer.recv().await else {
                return;
            };
            for reply in messages_of(reply) {
                tally.record_answer(&reply);
                answered += 1;
            }
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(10), settle)
        .await
        .is_err()
    {
        let missing: Vec<String> = tally
            .missing()
            .take(10)
            .map(|(id, n, got)| {
                format!("{id}: owed {n}, got {got}, last sent in {}", carried_by[id])
            })
            .collect();
        panic!(
            "seed {seed}: answers never came, for example:\n{}",
            missing.join("\n")
        );
    }
    tally.check(seed);
    // Most hostile messages are still requests the server reads and answers.
    assert!(
        answered > messages / 4,
        "seed {seed}: only {answered} answers to {messages} messages"
    );
    eprintln!("seed {seed}: {answered} answers to {messages} hostile messages");
}
