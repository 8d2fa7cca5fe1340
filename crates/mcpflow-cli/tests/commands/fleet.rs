//! `serve --http --redis URL`: instances that name one Redis carry each other's list
//! changes to their listen streams; an unreachable Redis is refused at start.

use crate::common;

use common::{HttpServe, LIMIT, mcpflow, mcpflow_with};
use serde_json::{Value, json};

use crate::redis;

/// The events of a listen stream, read until `want` of them arrived.
async fn events(response: &mut reqwest::Response, body: &mut String, want: usize) -> Vec<Value> {
    loop {
        let events: Vec<Value> = body
            .split("\n\n")
            .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect();
        if events.len() >= want {
            return events;
        }
        let chunk = tokio::time::timeout(LIMIT, response.chunk())
            .await
            .expect("the listen stream sends its next event in time")
            .expect("read")
            .expect("the listen stream stays open");
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_redis_carries_a_list_change_to_another_instances_listen_stream() {
    let redis = redis::RedisServer::start().await;
    let a = HttpServe::start(&["--redis", &redis.url]);
    let b = HttpServe::start(&["--redis", &redis.url]);
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}
        }
    }});
    let request = reqwest::Client::new()
        .post(&a.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(listen.to_string())
        .send();
    let mut response = tokio::time::timeout(LIMIT, request)
        .await
        .expect("the listen POST is answered in time")
        .expect("the listen POST");
    let mut body = String::new();
    let ack = events(&mut response, &mut body, 1).await;
    assert_eq!(
        ack[0]["method"], "notifications/subscriptions/acknowledged",
        "{body}"
    );
    let url = b.url.clone();
    let run = tokio::task::spawn_blocking(move || {
        mcpflow(&["call", "test_trigger_tool_change", "--url", &url])
    })
    .await
    .expect("the call ran");
    assert_eq!(run.code, 0, "{}", run.describe());
    let events = events(&mut response, &mut body, 2).await;
    assert_eq!(
        events[1]["method"], "notifications/tools/list_changed",
        "{body}"
    );
}

#[test]
fn serve_redis_refuses_an_unreachable_redis() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    let serve = [
        "serve",
        "everything",
        "--http",
        "127.0.0.1:0",
        "--redis",
        &url,
    ];
    let run = mcpflow_with(&serve, None, &[]);
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(
        run.stderr.contains(&format!("--redis {url}")),
        "{}",
        run.describe()
    );
}
