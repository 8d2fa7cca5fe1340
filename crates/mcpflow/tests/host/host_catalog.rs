//! The tool host's live catalog against real servers: list_changed during a call, a
//! burst during a slow `tools/list`, a notification mid-fetch, connect racing a
//! notification, removed and changed tools, and name collisions across servers.

#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Kind, RawPeer, bounded, pair, tool};
use mcpflow::host::{
    CatalogSnapshot, CollisionPolicy, HostError, HostEvent, MAX_NAME_LEN, NamePolicy,
    ServerOptions, ToolHost, connector, memory_connector,
};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::Server;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

/// Wait until the catalog satisfies `pred`; the snapshot that did.
async fn catalog_where(
    host: &ToolHost,
    what: &str,
    pred: impl Fn(&CatalogSnapshot) -> bool,
) -> Arc<CatalogSnapshot> {
    let mut rx = host.watch_catalog();
    let seen = bounded(what, rx.wait_for(|s| pred(s))).await;
    seen.expect("the host is running").clone()
}

/// A connector to a scripted raw server: each connection hands the test its side.
fn raw_connector(peers: mpsc::UnboundedSender<RawPeer>) -> mcpflow::host::Connector {
    connector(move |builder| {
        let (client_side, server_side) = pair(Kind::Memory1);
        let _ = peers.send(RawPeer::new(server_side));
        async move {
            builder
                .connect(client_side)
                .await
                .map_err(mcpflow::host::ConnectFailure::new)
        }
    })
}

fn tools_result(id: &Value, names: &[&str]) -> Value {
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
        .collect();
    json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})
}

const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

#[tokio::test]
async fn list_changed_during_a_long_call_keeps_the_result_and_updates_the_catalog() {
    let gate = Arc::new(Notify::new());
    let entered = Arc::new(Notify::new());
    let server = Server::builder("s", "1")
        .tool(tool("slow"), {
            let (gate, entered) = (gate.clone(), entered.clone());
            move |_a, _c| {
                let (gate, entered) = (gate.clone(), entered.clone());
                async move {
                    entered.notify_one();
                    gate.notified().await;
                    Ok(CallToolResult::text("the whole result"))
                }
            }
        })
        .build();
    let host = ToolHost::builder()
        .server(ServerOptions::new("s", memory_connector(server.clone())))
        .start();
    catalog_where(&host, "the first catalog", |s| s.tool("s__slow").is_some()).await;
    let turn = host.snapshot();
    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call("s__slow", json!({})).await }
    });
    bounded("the tool started", entered.notified()).await;
    server
        .add_tool(tool("added"), |_a, _c| async {
            Ok(CallToolResult::text("new"))
        })
        .await;
    catalog_where(&host, "the added tool", |s| s.tool("s__added").is_some()).await;
    assert!(!call.is_finished(), "the call is still running");
    assert!(
        turn.tool("s__added").is_none(),
        "a held snapshot never changes"
    );
    gate.notify_one();
    let result = bounded("the long call", call)
        .await
        .unwrap()
        .expect("a result");
    assert_eq!(result.content[0].as_text(), Some("the whole result"));
    let added = bounded("calling the added tool", host.call("s__added", json!({}))).await;
    assert_eq!(added.expect("a result").content[0].as_text(), Some("new"));
    bounded("close", host.close()).await;
}

#[tokio::test]
async fn a_burst_during_a_slow_list_costs_one_more_fetch_and_ends_on_the_latest() {
    let (peers, mut next_peer) = mpsc::unbounded_channel();
    let host = ToolHost::builder()
        .server(ServerOptions::new("raw", raw_connector(peers)))
        .start();
    let mut peer = bounded("a connection", next_peer.recv()).await.unwrap();
    bounded("initialize", peer.accept_initialize()).await;
    let first = bounded(
        "the first tools/list",
        peer.recv_until(|m| m["method"] == "tools/list"),
    )
    .await;
    // 100 notifications while the first fetch is unanswered.
    let burst = vec![LIST_CHANGED.to_owned(); 100];
    bounded("the burst", peer.send_burst(&burst)).await;
    peer.send(tools_result(&first["id"], &["old"])).await;
    let second = bounded(
        "the follow-up fetch",
        peer.recv_until(|m| m["method"] == "tools/list"),
    )
    .await;
    peer.send(tools_result(&second["id"], &["old", "latest"]))
        .await;
    let seen = catalog_where(&host, "the latest list", |s| {
        s.tool("raw__latest").is_some()
    })
    .await;
    assert_eq!(seen.tool_names(), ["raw__latest", "raw__old"]);
    // A call after the catalog settled: any third fetch would have been sent before it.
    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call("raw__latest", json!({})).await }
    });
    let more_lists = AtomicUsize::new(0);
    let request = bounded(
        "the call",
        peer.recv_until(|m| {
            if m["method"] == "tools/list" {
                more_lists.fetch_add(1, Ordering::SeqCst);
            }
            m["method"] == "tools/call"
        }),
    )
    .await;
    assert_eq!(
        more_lists.into_inner(),
        0,
        "a burst of 100 costs at most two fetches"
    );
    peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}}))
        .await;
    bounded("the call's result", call)
        .await
        .unwrap()
        .expect("a result");
    bounded("close", host.close()).await;
}

#[tokio::test]
async fn a_notification_mid_fetch_is_never_lost_and_no_older_list_returns() {
    let (peers, mut next_peer) = mpsc::unbounded_channel();
    let host = ToolHost::builder()
        .server(ServerOptions::new("raw", raw_connector(peers)))
        .start();
    let mut events = host.events();
    let mut peer = bounded("a connection", next_peer.recv()).await.unwrap();
    bounded("initialize", peer.accept_initialize()).await;
    let first = bounded(
        "tools/list",
        peer.recv_until(|m| m["method"] == "tools/list"),
    )
    .await;
    peer.send_text(LIST_CHANGED).await;
    peer.send(tools_result(&first["id"], &["stale"])).await;
    let second = bounded(
        "the refetch",
        peer.recv_until(|m| m["method"] == "tools/list"),
    )
    .await;
    peer.send(tools_result(&second["id"], &["fresh"])).await;
    let seen = catalog_where(&host, "the fresh list", |s| s.tool("raw__fresh").is_some()).await;
    assert_eq!(seen.tool_names(), ["raw__fresh"], "the stale tool is gone");
    // Every change in generation order, and none after the fresh list.
    let mut generations = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let HostEvent::CatalogChanged(change) = event {
            generations.push(change.generation);
            if change.added.iter().any(|i| i.name == "raw__fresh") {
                assert!(change.removed.iter().any(|i| i.name == "raw__stale"));
            }
        }
    }
    assert!(
        generations.windows(2).all(|w| w[0] < w[1]),
        "{generations:?}"
    );
    assert_eq!(generations.last().copied(), Some(seen.generation()));
    bounded("close", host.close()).await;
}

#[tokio::test]
async fn connect_racing_a_notification_lists_each_tool_once() {
    let (peers, mut next_peer) = mpsc::unbounded_channel();
    let host = ToolHost::builder()
        .server(ServerOptions::new("raw", raw_connector(peers)))
        .start();
    let mut peer = bounded("a connection", next_peer.recv()).await.unwrap();
    bounded("initialize", peer.accept_initialize()).await;
    // Announced before the host's first fetch could have been answered.
    peer.send_text(LIST_CHANGED).await;
    let fetches = Arc::new(AtomicUsize::new(0));
    let answering = tokio::spawn({
        let fetches = fetches.clone();
        async move {
            while let Some(m) = peer.recv().await {
                if m["method"] == "tools/list" {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    peer.send(tools_result(&m["id"], &["a", "b"])).await;
                }
            }
        }
    });
    let seen = catalog_where(&host, "the tools", |s| s.tool("raw__b").is_some()).await;
    assert_eq!(seen.tool_names(), ["raw__a", "raw__b"]);
    assert_eq!(seen.model_tools().len(), 2, "no duplicates");
    bounded("close", host.close()).await;
    bounded("the raw server ends", answering).await.unwrap();
    assert!(fetches.load(Ordering::SeqCst) <= 2);
}

#[tokio::test]
async fn removed_and_changed_tools_are_reflected_and_a_removed_tool_is_not_found() {
    let integer =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let server = Server::builder("s", "1")
        .tool(tool("gone"), |_a, _c| async {
            Ok(CallToolResult::text("x"))
        })
        .tool(tool("keep"), |_a, _c| async {
            Ok(CallToolResult::text("kept"))
        })
        .build();
    let host = ToolHost::builder()
        .server(ServerOptions::new("s", memory_connector(server.clone())))
        .start();
    catalog_where(&host, "the first catalog", |s| s.tool("s__gone").is_some()).await;
    let mut events = host.events();
    assert!(server.remove_tool("gone").await);
    let stricter = Tool::new("keep", "now takes n", integer.as_object().cloned().unwrap());
    server
        .add_tool(stricter, |_a, _c| async {
            Ok(CallToolResult::text("kept"))
        })
        .await;
    let seen = catalog_where(&host, "the change", |s| {
        s.tool("s__gone").is_none()
            && s.tool("s__keep")
                .is_some_and(|t| t.remote().description.as_deref() == Some("now takes n"))
    })
    .await;
    assert_eq!(seen.tool_names(), ["s__keep"]);
    let mut removed = false;
    let mut changed = false;
    while let Ok(event) = events.try_recv() {
        if let HostEvent::CatalogChanged(c) = event {
            removed |= c.removed.iter().any(|i| i.name == "s__gone");
            changed |= c.changed.iter().any(|i| i.name == "s__keep");
        }
    }
    assert!(removed && changed, "removed {removed}, changed {changed}");
    match host.call("s__gone", json!({})).await {
        Err(HostError::ToolNotFound { name, available }) => {
            assert_eq!(name, "s__gone");
            assert_eq!(available, ["s__keep"]);
        }
        other => panic!("expected ToolNotFound, got {other:?}"),
    }
    // The new schema is the one arguments are checked against.
    let bad = host.call("s__keep", json!({"n": "one"})).await;
    assert!(
        matches!(bad, Err(HostError::InvalidArguments { .. })),
        "{bad:?}"
    );
    let good = bounded("a valid call", host.call("s__keep", json!({"n": 1}))).await;
    assert_eq!(good.expect("a result").content[0].as_text(), Some("kept"));
    bounded("close", host.close()).await;
}

fn named_server(server: &str, tool_name: &str) -> Server {
    let answer = server.to_owned();
    Server::builder(server, "1")
        .tool(tool(tool_name), move |_a, _c| {
            let answer = answer.clone();
            async move { Ok(CallToolResult::text(answer)) }
        })
        .build()
}

#[tokio::test]
async fn two_servers_sharing_a_tool_name_under_each_collision_policy() {
    for (policy, answer) in [
        (CollisionPolicy::Error, None),
        (CollisionPolicy::FirstWins, Some("a")),
        (CollisionPolicy::LastWins, Some("b")),
    ] {
        let host = ToolHost::builder()
            .names(NamePolicy::Unprefixed)
            .collisions(policy)
            .server(ServerOptions::new(
                "a",
                memory_connector(named_server("a", "search")),
            ))
            .server(ServerOptions::new(
                "b",
                memory_connector(named_server("b", "search")),
            ))
            .start();
        bounded("both servers", host.wait_ready()).await;
        let seen = catalog_where(&host, "the collision", |s| !s.collisions().is_empty()).await;
        let collision = seen.tool_collision("search").expect("reported");
        assert_eq!(collision.offered.as_deref(), answer, "{policy:?}");
        let result = bounded("the call", host.call("search", json!({}))).await;
        match answer {
            None => assert!(
                matches!(&result, Err(HostError::Ambiguous { servers, .. }) if servers == &["a", "b"]),
                "{policy:?}: {result:?}"
            ),
            Some(server) => assert_eq!(
                result.expect("a result").content[0].as_text(),
                Some(server),
                "{policy:?}"
            ),
        }
        bounded("close", host.close()).await;
    }
}

#[tokio::test]
async fn prefixed_names_fit_64_characters_and_still_dispatch() {
    let server = "a-server-with-a-rather-long-name".to_owned();
    let long_tool = "a_tool_whose_name_alone_is_nearly_the_whole_limit_of_characters";
    let host = ToolHost::builder()
        .server(ServerOptions::new(
            server.as_str(),
            memory_connector(named_server(&server, long_tool)),
        ))
        .start();
    let seen = catalog_where(&host, "the tool", |s| s.tools().count() == 1).await;
    let name = seen.tool_names().remove(0);
    assert_eq!(name.len(), MAX_NAME_LEN);
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    );
    assert_eq!(
        name,
        mcpflow::host::fit_name(&format!("{server}__{long_tool}"))
    );
    let result = bounded("the call", host.call(&name, json!({}))).await;
    assert_eq!(
        result.expect("a result").content[0].as_text(),
        Some(server.as_str())
    );
    bounded("close", host.close()).await;
}
