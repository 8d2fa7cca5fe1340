//! The tool host's supervisors and close: a server killed mid-session (backoff, fast
//! failing calls, resync after reconnect), an HTTP server that dies and returns, the
//! crash-loop limit, and `close()` with a refresh, a sampling request and a call
//! pending, leaving no task behind.

#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Kind, RawPeer, bounded, pair, tool};
use mcpflow::host::{
    ConnectFailure, Health, HostError, HostEvent, ReconnectPolicy, ServerOptions, ToolHost,
    connector, memory_connector,
};
use mcpflow::protocol::{CallToolResult, CreateMessageRequestParams, SamplingMessage};
use mcpflow::server::{RunningServer, Server};
use serde_json::json;
use tokio::sync::{Notify, broadcast, mpsc};

/// Wait for a server's health to satisfy `pred`, from the event stream.
async fn health_where(
    events: &mut broadcast::Receiver<HostEvent>,
    what: &str,
    pred: impl Fn(&Health) -> bool,
) -> Health {
    bounded(what, async {
        loop {
            if let HostEvent::Health { health, .. } = events.recv().await.expect("events")
                && pred(&health)
            {
                return health;
            }
        }
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_killed_server_fails_calls_fast_then_reconnects_and_resyncs() {
    let server = Server::builder("s", "1")
        .tool(tool("a"), |_a, _c| async { Ok(CallToolResult::text("a")) })
        .build();
    let running: Arc<Mutex<Option<RunningServer>>> = Arc::default();
    let connects = Arc::new(AtomicUsize::new(0));
    let connect = connector({
        let (server, running, connects) = (server.clone(), running.clone(), connects.clone());
        move |builder| {
            connects.fetch_add(1, Ordering::SeqCst);
            let (client_side, server_side) = pair(Kind::Memory1);
            *running.lock().unwrap() = Some(server.serve(server_side));
            async move {
                builder
                    .connect(client_side)
                    .await
                    .map_err(ConnectFailure::new)
            }
        }
    });
    let policy = ReconnectPolicy::default().initial_delay(Duration::from_secs(10));
    let host = ToolHost::builder()
        .reconnect(policy)
        .server(ServerOptions::new("s", connect))
        .start();
    let mut events = host.events();
    let mut catalog = host.watch_catalog();
    bounded(
        "the catalog",
        catalog.wait_for(|s| s.tool("s__a").is_some()),
    )
    .await
    .unwrap();
    assert_eq!(host.health("s"), Some(Health::Ready));

    // Kill the server's side of the connection.
    let killed = running.lock().unwrap().take().unwrap();
    bounded("the server closes", killed.close()).await;
    let down = health_where(&mut events, "reconnecting", |h| {
        matches!(h, Health::Reconnecting { .. })
    })
    .await;
    let Health::Reconnecting { attempt, .. } = down else {
        unreachable!()
    };
    assert_eq!(attempt, 1);
    // On the paused clock, a call that waited out the backoff would succeed: an error
    // here is the fast failure.
    match host.call("s__a", json!({})).await {
        Err(
            e @ HostError::ServerUnavailable {
                retry_in: Some(retry),
                ..
            },
        ) => {
            assert!(
                retry <= Duration::from_secs(10) && retry >= Duration::from_secs(5),
                "{retry:?}"
            );
            assert!(
                e.to_model_text().contains("reconnecting in"),
                "{}",
                e.to_model_text()
            );
        }
        other => panic!("expected ServerUnavailable with a retry time, got {other:?}"),
    }
    assert!(
        host.snapshot().tool("s__a").is_some(),
        "the last catalog is kept during the outage"
    );
    // The server changes while it is down; the reconnect must pick that up.
    server
        .add_tool(tool("b"), |_a, _c| async { Ok(CallToolResult::text("b")) })
        .await;
    health_where(&mut events, "ready again", |h| *h == Health::Ready).await;
    assert!(
        host.snapshot().tool("s__b").is_some(),
        "resynced after the reconnect"
    );
    assert_eq!(connects.load(Ordering::SeqCst), 2);
    let result = bounded("a call after the reconnect", host.call("s__b", json!({}))).await;
    assert_eq!(result.unwrap().content[0].as_text(), Some("b"));
    bounded("close", host.close()).await;
    assert_eq!(host.health("s"), Some(Health::Closed));
}

/// An HTTP server on `port` (0: any) with one tool, bound with `SO_REUSEADDR` so a
/// server can come back on the port of one that died.
async fn http_server_on(port: u16) -> mcpflow::http::server::RunningHttpServer {
    let server = Server::builder("web", "1")
        .tool(tool("a"), |_a, _c| async { Ok(CallToolResult::text("a")) })
        .build();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_reuseaddr(true).unwrap();
    socket
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .unwrap();
    mcpflow::http::server::HttpServer::new(server)
        .serve_listener(socket.listen(64).unwrap())
        .unwrap()
}

/// Field defect 2: an HTTP server's death is seen within seconds (its connection does
/// not end by itself: the probe finds out) and its calls fail fast, and its return is
/// seen too: the host reconnects and the server is ready again.
#[tokio::test]
async fn an_http_server_that_dies_is_seen_and_reconnected_when_it_returns() {
    let running = http_server_on(0).await;
    let port = running.local_addr().port();
    let mut remote = mcpflow::host::RemoteServer::default();
    remote.url = running.url();
    let connect = mcpflow::host::connector_for(&mcpflow::host::ServerConfig::Remote(remote));
    let policy = ReconnectPolicy::default()
        .initial_delay(Duration::from_millis(50))
        .max_delay(Duration::from_millis(200))
        .max_failures(1000)
        .probe_every(Duration::from_millis(200));
    let host = ToolHost::builder()
        .reconnect(policy)
        .server(ServerOptions::new("web", connect))
        .start();
    let mut events = host.events();
    let mut catalog = host.watch_catalog();
    bounded(
        "the catalog",
        catalog.wait_for(|s| s.tool("web__a").is_some()),
    )
    .await
    .unwrap();
    assert_eq!(host.health("web"), Some(Health::Ready));

    bounded("the server stops", running.shutdown()).await;
    health_where(&mut events, "the host sees the server gone", |h| {
        matches!(h, Health::Reconnecting { .. })
    })
    .await;
    let unavailable = host.call("web__a", json!({})).await;
    assert!(
        matches!(unavailable, Err(HostError::ServerUnavailable { .. })),
        "{unavailable:?}"
    );

    let back = http_server_on(port).await;
    health_where(&mut events, "the host sees the server back", |h| {
        *h == Health::Ready
    })
    .await;
    let result = bounded("a call after the return", host.call("web__a", json!({}))).await;
    assert_eq!(result.unwrap().content[0].as_text(), Some("a"));
    bounded("close", host.close()).await;
    bounded("shutdown", back.shutdown()).await;
}

#[tokio::test(start_paused = true)]
async fn a_server_that_keeps_failing_is_given_up_after_the_crash_loop_limit() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let connect = connector({
        let attempts = attempts.clone();
        move |_builder| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async {
                Err(ConnectFailure::new(
                    "spawn `nope`: No such file or directory",
                ))
            }
        }
    });
    let policy = ReconnectPolicy::default()
        .initial_delay(Duration::from_secs(1))
        .max_failures(3);
    let host = ToolHost::builder()
        .reconnect(policy)
        .server(ServerOptions::new("broken", connect))
        .start();
    let mut events = host.events();
    let failed = health_where(&mut events, "failed", |h| {
        matches!(h, Health::Failed { .. })
    })
    .await;
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        4,
        "the first attempt and three retries"
    );
    let Health::Failed { cause } = failed else {
        unreachable!()
    };
    assert!(cause.contains("No such file"), "{cause}");
    match host.call("broken__x", json!({})).await {
        Err(HostError::ToolNotFound { available, .. }) => assert!(available.is_empty()),
        other => panic!("expected ToolNotFound, got {other:?}"),
    }
    let ready = bounded("wait_ready", host.wait_ready()).await;
    assert!(matches!(ready[0].1, Health::Failed { .. }));
    bounded("close", host.close()).await;
}

#[tokio::test]
async fn close_with_a_refresh_a_sampling_request_and_a_call_pending_leaves_no_task() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks_before = metrics.num_alive_tasks();
    let server = Server::builder("s", "1")
        .tool(tool("ask"), |_a, cx| async move {
            let params =
                CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10);
            let _ = cx.create_message(params).await;
            Ok(CallToolResult::text("after sampling"))
        })
        .build();
    let sampling_entered = Arc::new(Notify::new());
    let sampling_dropped = Arc::new(AtomicBool::new(false));
    let (peers, mut next_peer) = mpsc::unbounded_channel();
    let host = ToolHost::builder()
        .on_sampling({
            let (entered, dropped) = (sampling_entered.clone(), sampling_dropped.clone());
            move |server, _params, _cx| {
                assert_eq!(server, "s");
                let guard = SetOnDrop(dropped.clone());
                entered.notify_one();
                async move {
                    let _guard = guard;
                    std::future::pending().await
                }
            }
        })
        .server(ServerOptions::new("s", memory_connector(server)))
        .server(ServerOptions::new(
            "raw",
            connector(move |builder| {
                let (client_side, server_side) = pair(Kind::Memory1);
                let _ = peers.send(RawPeer::new(server_side));
                async move {
                    builder
                        .connect(client_side)
                        .await
                        .map_err(ConnectFailure::new)
                }
            }),
        ))
        .start();
    let mut raw = bounded("the raw server", next_peer.recv()).await.unwrap();
    bounded("initialize", raw.accept_initialize()).await;
    let list = bounded(
        "tools/list",
        raw.recv_until(|m| m["method"] == "tools/list"),
    )
    .await;
    raw.send(json!({"jsonrpc": "2.0", "id": list["id"], "result": {"tools": []}}))
        .await;
    bounded("both ready", host.wait_ready()).await;
    let mut catalog = host.watch_catalog();
    bounded(
        "the catalog",
        catalog.wait_for(|s| s.tool("s__ask").is_some()),
    )
    .await
    .unwrap();

    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call("s__ask", json!({})).await }
    });
    bounded("sampling starts", sampling_entered.notified()).await;
    let refresh = tokio::spawn({
        let host = host.clone();
        async move { host.refresh().await }
    });
    // The refresh's tools/list is never answered.
    let pending = bounded(
        "the refresh's tools/list",
        raw.recv_until(|m| m["method"] == "tools/list"),
    )
    .await;

    bounded("close", host.close()).await;
    let call = bounded("the call ends", call).await.unwrap();
    assert!(matches!(call, Err(HostError::Cancelled { .. })), "{call:?}");
    bounded("the refresh ends", refresh).await.unwrap();
    assert!(
        sampling_dropped.load(Ordering::SeqCst),
        "the sampling handler was cancelled"
    );
    assert!(host.health_all().iter().all(|(_, h)| *h == Health::Closed));
    // The raw server is told the refresh was cancelled, then sees the connection end.
    let mut rest = Vec::new();
    while let Some(m) = bounded("the raw server sees the end", raw.recv()).await {
        rest.push(m);
    }
    assert!(
        rest.iter().any(|m| m["method"] == "notifications/cancelled"
            && m["params"]["requestId"] == pending["id"]),
        "{rest:?}"
    );
    drop(host);
    bounded("every task ends", async {
        while metrics.num_alive_tasks() > tasks_before {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
