//! 2026-07-28 tasks across three `serve --http --redis` processes on one real
//! `redis-server`: a task created on one instance answers `tasks/get` on another at once,
//! `tasks/update` and `tasks/cancel` sent to a third reach the instance running it, a
//! task's notifications reach the listen streams of every instance once, and a task
//! whose instance was killed reads as failed.

use std::time::Duration;

use crate::common;
use crate::fleet_sessions::Events;
use crate::redis;

use common::{HttpServe, LIMIT};
use serde_json::{Value, json};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn three_nodes(redis: &redis::RedisServer) -> Vec<HttpServe> {
    (0..3)
        .map(|_| HttpServe::start(&["--redis", &redis.url]))
        .collect()
}

/// A 2026-07-28 request with the tasks extension declared, to `url`: its result, or
/// its error as the test's failure.
async fn post(url: &str, id: u64, method: &str, name: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {EXT: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "fleet-test", "version": "1"}
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let sent = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(body.to_string())
        .send();
    let response = tokio::time::timeout(LIMIT, sent)
        .await
        .unwrap_or_else(|_| panic!("{method} on {url} is answered in time"))
        .expect("the POST");
    let status = response.status();
    let text = tokio::time::timeout(LIMIT, response.text())
        .await
        .expect("a body in time")
        .expect("the body");
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(status, 200, "{method} on {url}: {answer}");
    answer
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{method} on {url}: {answer}"))
}

/// `tools/call` of `tool` on `url`: the id of the task it became.
async fn start_task(url: &str, tool: &str, arguments: Value) -> String {
    let created = post(
        url,
        1,
        "tools/call",
        tool,
        json!({"name": tool, "arguments": arguments}),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("a taskId").to_owned()
}

/// `tasks/update` on `url` answering the task's `confirm` question with yes.
async fn confirm(url: &str, task: &str) {
    let yes = json!({"action": "accept", "content": {"confirm": true}});
    let params = json!({"taskId": task, "inputResponses": {"confirm": yes}});
    post(url, 3, "tasks/update", task, params).await;
}

async fn get(url: &str, task: &str) -> Value {
    post(url, 2, "tasks/get", task, json!({"taskId": task})).await
}

/// Poll `tasks/get` on `url` until the task's status is `status` (within the limit).
async fn until(url: &str, task: &str, status: &str) -> Value {
    let wait = async {
        loop {
            let got = get(url, task).await;
            if got["status"] == status {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(LIMIT, wait)
        .await
        .unwrap_or_else(|_| panic!("task {task} did not turn {status} on {url} within {LIMIT:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_made_on_one_instance_is_read_updated_and_cancelled_on_the_others() {
    let redis = redis::RedisServer::start().await;
    let nodes = three_nodes(&redis);
    let (a, b, c) = (&nodes[0].url, &nodes[1].url, &nodes[2].url);

    // Read on B at once: the record is written before CreateTaskResult.
    let task = start_task(a, "confirm_delete", json!({"filename": "notes.txt"})).await;
    let first = get(b, &task).await;
    assert!(
        ["working", "input_required"].contains(&first["status"].as_str().unwrap_or_default()),
        "{first}"
    );
    // Its question on B, its answer on C, its result on B.
    let asked = until(b, &task, "input_required").await;
    assert!(asked["inputRequests"]["confirm"].is_object(), "{asked}");
    confirm(c, &task).await;
    let done = until(b, &task, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deleted notes.txt",
        "{done}"
    );

    // Cancelled on C while it works on A; seen on B.
    let slow = start_task(a, "slow_compute", json!({"seconds": 60})).await;
    assert_eq!(get(b, &slow).await["status"], "working");
    post(c, 4, "tasks/cancel", &slow, json!({"taskId": slow})).await;
    until(b, &slow, "cancelled").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_whose_instance_was_killed_reads_as_failed() {
    let redis = redis::RedisServer::start().await;
    let mut nodes = three_nodes(&redis);
    let task = start_task(&nodes[0].url, "slow_compute", json!({"seconds": 60})).await;
    assert_eq!(get(&nodes[1].url, &task).await["status"], "working");
    nodes[0].kill();
    // Its lease lapses within 5 s.
    let failed = until(&nodes[1].url, &task, "failed").await;
    assert!(
        failed["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("stopped")),
        "{failed}"
    );
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
}

/// `subscriptions/listen` on `url` for `task`'s notifications and tool-list changes: its
/// event stream, past the acknowledgement.
async fn listen(url: &str, task: &str) -> Events {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": [task], "toolsListChanged": true},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "fleet-test", "version": "1"}
        }
    }});
    let sent = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send();
    let response = tokio::time::timeout(LIMIT, sent)
        .await
        .expect("the listen POST is answered in time")
        .expect("the listen POST");
    let mut events = Events::new(response);
    let (_, ack) = events
        .next()
        .await
        .expect("the stream")
        .expect("an acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    events
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tasks_notifications_reach_listen_streams_on_every_instance_once() {
    let redis = redis::RedisServer::start().await;
    let nodes = three_nodes(&redis);
    let (a, b, c) = (&nodes[0].url, &nodes[1].url, &nodes[2].url);
    let task = start_task(a, "confirm_delete", json!({"filename": "f"})).await;
    until(b, &task, "input_required").await;
    let mut streams = [listen(b, &task).await, listen(c, &task).await];
    confirm(c, &task).await;
    until(b, &task, "completed").await;
    // A list change announced after the task ended comes next on every stream: no copy
    // of a task notification in between.
    post(
        b,
        4,
        "tools/call",
        "test_trigger_tool_change",
        json!({"name": "test_trigger_tool_change", "arguments": {}}),
    )
    .await;
    for (i, stream) in streams.iter_mut().enumerate() {
        let mut statuses = Vec::new();
        loop {
            let (_, event) = stream
                .next()
                .await
                .expect("the listen stream")
                .expect("the stream stays open");
            match event["method"].as_str() {
                Some("notifications/tasks") => {
                    assert_eq!(event["params"]["taskId"], task.as_str(), "{event}");
                    statuses.push(
                        event["params"]["status"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    );
                }
                Some("notifications/tools/list_changed") => break,
                _ => panic!("stream {i}: unexpected {event}"),
            }
        }
        assert_eq!(
            statuses,
            ["working", "completed"],
            "stream {i}: each change once"
        );
    }
}
