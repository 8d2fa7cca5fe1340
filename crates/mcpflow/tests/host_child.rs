//! The tool host over stdio child processes, from an `mcpServers` file: a child that
//! crashes mid-call is restarted and resynced, and `close()` leaves no child behind.
//!
//! The child is this test binary itself, started with `MCPFLOW_HOST_CHILD_SERVE` set:
//! it then serves a small MCP server on stdio instead of running the scenarios. Hence
//! `harness = false` (libtest would print to stdout, the protocol channel).

#![allow(clippy::unwrap_used)] // panics are how tests fail

mod common;

use std::time::{Duration, Instant};

use common::bounded;
use mcpflow::host::{
    Health, HostError, HostEvent, ReconnectPolicy, ServersConfig, ToolHost, ToolHostBuilder,
};
use mcpflow::protocol::CallToolResult;
use mcpflow::server::Server;
use serde_json::json;

const SERVE: &str = "MCPFLOW_HOST_CHILD_SERVE";

fn main() {
    if std::env::var_os(SERVE).is_some() {
        serve();
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(a_crashed_child_is_restarted_and_close_reaps_every_child());
    runtime.block_on(twenty_children_connect_concurrently());
    println!("host_child: 2 scenarios passed");
}

/// The child: a server whose `crash` tool exits the process mid-call.
fn serve() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = Server::builder("child", "1")
            .tool(common::tool("pid"), |_a, _c| async {
                Ok(CallToolResult::text(std::process::id().to_string()))
            })
            .tool(common::tool("crash"), |_a, _c| async {
                eprintln!("fatal: simulated crash");
                std::process::exit(3)
            })
            .build();
        server.serve(mcpflow::stdio()).wait().await;
    });
}

/// A host of `n` children named `child0`, `child1`, ... from an `mcpServers` file.
fn children(n: usize) -> ToolHostBuilder {
    let exe = std::env::current_exe().unwrap();
    let servers: serde_json::Map<String, serde_json::Value> = (0..n)
        .map(|i| {
            let entry = json!({"command": exe, "args": [], "env": {SERVE: "1"}});
            (format!("child{i}"), entry)
        })
        .collect();
    let config = ServersConfig::from_json(&json!({"mcpServers": servers}).to_string()).unwrap();
    ToolHost::builder()
        .servers_config(&config, |_| None)
        .unwrap()
        .reconnect(ReconnectPolicy::default().initial_delay(Duration::from_millis(50)))
}

/// Every child process of this process, live or not yet reaped.
fn child_pids() -> Vec<String> {
    let mut pids = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            pids.extend(text.split_whitespace().map(str::to_owned));
        }
    }
    pids
}

async fn pid_of(host: &ToolHost) -> String {
    let result = bounded("child0__pid", host.call("child0__pid", json!({}))).await;
    result.unwrap().content[0].as_text().unwrap().to_owned()
}

async fn a_crashed_child_is_restarted_and_close_reaps_every_child() {
    let host = children(1).start();
    let ready = bounded("the child is ready", host.wait_ready()).await;
    assert_eq!(ready[0].1, Health::Ready, "{ready:?}");
    let first = pid_of(&host).await;
    assert!(child_pids().contains(&first));
    let mut events = host.events();

    let crashed = bounded("the crash", host.call("child0__crash", json!({}))).await;
    match &crashed {
        Err(HostError::ServerUnavailable { cause, .. }) => {
            assert!(
                cause.contains("simulated crash"),
                "the stderr tail: {cause}"
            );
        }
        other => panic!("expected ServerUnavailable, got {other:?}"),
    }
    bounded("ready again", async {
        loop {
            if let HostEvent::Health {
                health: Health::Ready,
                ..
            } = events.recv().await.unwrap()
            {
                return;
            }
        }
    })
    .await;
    let second = pid_of(&host).await;
    assert_ne!(first, second, "a new child");
    assert!(
        !child_pids().contains(&first),
        "the crashed child was reaped"
    );

    bounded("close", host.close()).await;
    assert_eq!(
        child_pids(),
        Vec::<String>::new(),
        "no child outlives close"
    );
}

/// Not a timed assertion: prints the time to a ready catalog of 20 children beside one.
async fn twenty_children_connect_concurrently() {
    let mut times = Vec::new();
    for n in [1, 20] {
        let started = Instant::now();
        let host = children(n).start();
        let ready = bounded("every child is ready", host.wait_ready()).await;
        assert!(ready.iter().all(|(_, h)| *h == Health::Ready), "{ready:?}");
        let snapshot = host.snapshot();
        assert_eq!(snapshot.tools().count(), 2 * n);
        times.push(started.elapsed());
        bounded("close", host.close()).await;
    }
    println!(
        "host_child: one child ready in {:?}; twenty ready in {:?}",
        times[0], times[1]
    );
}
