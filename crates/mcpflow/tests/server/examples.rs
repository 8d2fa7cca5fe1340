//! Each example in `examples/`, driven by a client over memory with bounded waits.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

#[path = "../../examples/agent_loop.rs"]
mod agent_loop;
#[path = "../../examples/confirm.rs"]
mod confirm;
#[path = "../../examples/counter.rs"]
mod counter;
#[path = "../../examples/file_browser.rs"]
mod file_browser;

use common::{Kind, bounded, pair};
use mcpflow::client::Client;
use mcpflow::protocol::{
    CompleteRequestParams, CompletionReference, ElicitResult, ResourceContents,
};
use serde_json::json;

#[tokio::test]
async fn counter_example_keeps_state_across_calls() {
    let (c, s) = pair(Kind::Memory0);
    let _running = counter::server().serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .unwrap();
    let one: counter::Count = bounded("increment", client.call_tool_typed("increment", json!({})))
        .await
        .unwrap();
    let three: counter::Count = bounded(
        "increment by 2",
        client.call_tool_typed("increment", json!({"by": 2})),
    )
    .await
    .unwrap();
    assert_eq!((one.value, three.value), (1, 3));
    bounded("reset", client.call_tool("reset", json!({})))
        .await
        .unwrap();
    let zero: counter::Count = bounded("get", client.call_tool_typed("get", json!({})))
        .await
        .unwrap();
    assert_eq!(zero.value, 0);
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn file_browser_example_reads_completes_and_refuses_traversal() {
    let dir = std::env::temp_dir().join(format!("mcpflow-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("alpha.txt"), "A").unwrap();
    std::fs::write(dir.join("beta.txt"), "B").unwrap();
    let (c, s) = pair(Kind::Memory1);
    let _running = file_browser::server(dir.clone()).serve(s);
    let client = bounded("connect", Client::builder("t", "1").connect(c))
        .await
        .unwrap();
    let read = bounded("read", client.read_resource("file:///beta.txt"))
        .await
        .unwrap();
    assert!(matches!(&read.contents[0], ResourceContents::Text(t) if t.text == "B"));
    let done = bounded(
        "complete",
        client.complete(&CompleteRequestParams::new(
            CompletionReference::resource("file:///{name}"),
            "name",
            "al",
        )),
    )
    .await
    .unwrap();
    assert_eq!(done.completion.values, ["alpha.txt"]);
    let listed = bounded("list_files", client.call_tool("list_files", json!({})))
        .await
        .unwrap();
    assert_eq!(listed.content[0].as_text(), Some("alpha.txt\nbeta.txt"));
    let err = bounded("traversal", client.read_resource("file:///.."))
        .await
        .expect_err("refused");
    assert!(err.rejection().is_some());
    bounded("close", client.close()).await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn confirm_example_acts_only_on_a_yes() {
    for (confirm, expected) in [
        (true, "deleted files (not really)"),
        (false, "kept everything: the user did not confirm"),
    ] {
        let (c, s) = pair(Kind::Memory1);
        let _running = confirm::server().serve(s);
        let client = Client::builder("t", "1").on_elicitation(false, move |_p, _c| async move {
            Ok(ElicitResult::accept(
                json!({"confirm": confirm}).as_object().unwrap().clone(),
            ))
        });
        let client = bounded("connect", client.connect(c)).await.unwrap();
        let result = bounded(
            "call",
            client.call_tool("delete_everything", json!({"what": "files"})),
        )
        .await
        .unwrap();
        assert_eq!(result.content[0].as_text(), Some(expected));
        bounded("close", client.close()).await;
    }
}

#[tokio::test]
async fn agent_loop_example_keeps_the_catalog_current_across_a_new_tool_and_a_restart() {
    let log = bounded("the agent loop", agent_loop::run()).await;
    assert_eq!(
        log,
        [
            r#"turn 0: the model sees ["clock__now", "research__research"]"#,
            "turn 0: research__research -> found 3 sources on MCP",
            r#"turn 1: the model sees ["clock__now", "research__research", "research__summarize"]"#,
            "turn 1: research__summarize -> summary: MCP connects models to tools",
            r#"turn 2: the model sees ["clock__now", "research__research", "research__summarize"]"#,
            "turn 2: the clock server restarted",
            "turn 2: clock__now -> 12:00",
        ]
    );
}
