//! Requests that arrive together: the server starts a burst's requests together, and
//! each must still run as if it had a task of its own from the start. Requests that
//! wait (here for one another, across groups) are woken and answered; quick ones
//! in the same burst are answered too; on every transport and both runtimes, with the
//! requests in every layout a peer writes (`common::layout`).
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::Arc;

use common::layout::Layout;
use common::{ALL, Kind, RawPeer, bounded, pair};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::Server;
use serde_json::{Value, json};
use tokio::sync::Barrier;

/// Requests that wait for one another: more than two groups' worth.
const WAITING: usize = 40;
/// Quick requests sent among them.
const QUICK: usize = 24;

fn server() -> Server {
    let barrier = Arc::new(Barrier::new(WAITING));
    let schema = Tool::empty_input_schema;
    Server::builder("bursts", "1")
        .tool(Tool::new("wait", "Wait for all the others", schema()), {
            move |_args, _cx| {
                let barrier = barrier.clone();
                async move {
                    barrier.wait().await;
                    Ok(CallToolResult::text("waited"))
                }
            }
        })
        .tool(
            Tool::new("quick", "Answer at once", schema()),
            |_args, _cx| async { Ok(CallToolResult::text("quick")) },
        )
        .build()
}

async fn burst_over(kind: Kind) {
    let (c, s) = pair(kind);
    let running = server().serve(s);
    let mut peer = RawPeer::new(c);
    peer.initialize().await;
    bounded(
        "initialized sent",
        peer.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
    )
    .await;
    // Quick calls interleaved with waiting ones, one burst, the layouts in turn.
    let calls: Vec<Value> = (0..WAITING + QUICK)
        .map(|id| {
            let name = if id % 8 < 5 { "wait" } else { "quick" };
            json!({"jsonrpc":"2.0","id":id + 10,"method":"tools/call","params":{"name":name}})
        })
        .collect();
    assert_eq!(
        calls
            .iter()
            .filter(|c| c["params"]["name"] == "wait")
            .count(),
        WAITING
    );
    let layouts = Layout::covering(peer.newlines_allowed());
    let frames: Vec<String> = (calls.iter().zip(layouts.iter().cycle()))
        .map(|(call, layout)| layout.write(call))
        .collect();
    bounded("the burst sent", peer.send_burst(&frames)).await;
    let mut answered = std::collections::BTreeMap::new();
    while answered.len() < WAITING + QUICK {
        let what = format!(
            "answers over {kind:?}: {} of {} so far",
            answered.len(),
            WAITING + QUICK
        );
        let answer = bounded(&what, peer.recv()).await.expect("an answer");
        let text = answer["result"]["content"][0]["text"].clone();
        let sent = answer["id"]
            .as_u64()
            .and_then(|id| frames.get((id as usize).checked_sub(10)?));
        assert!(
            text.is_string(),
            "not a tool result: {answer}, for {sent:?}"
        );
        assert!(
            answered
                .insert(answer["id"].as_u64().unwrap(), text)
                .is_none(),
            "answered twice: {answer}"
        );
    }
    for (id, text) in answered {
        let expected = if (id - 10) % 8 < 5 { "waited" } else { "quick" };
        assert_eq!(text, expected, "request {id} over {kind:?}");
    }
    bounded("close", running.close()).await;
}

#[tokio::test]
async fn a_burst_of_waiting_and_quick_requests_is_answered_in_full() {
    for kind in ALL {
        burst_over(kind).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_waiting_and_quick_requests_is_answered_in_full_on_two_threads() {
    for kind in ALL {
        burst_over(kind).await;
    }
}
