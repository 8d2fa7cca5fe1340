//! The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`) at the wire: raw
//! stateless requests over newline-delimited framing and over HTTP without a session.

use crate::common;

use std::sync::Arc;

use common::{AnyTransport, Kind, RawPeer, bounded, pair};
use mcpflow::client::{Client, Era};
use mcpflow::http::server::HttpServer;
use mcpflow::protocol::tools::TaskSupport;
use mcpflow::protocol::{CallToolResult, ElicitRequestParams, ErrorObject, Tool};
use mcpflow::server::{Server, ServerContext, ToolError};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

const EXT: &str = "io.modelcontextprotocol/tasks";

fn task_tool(name: &str, support: TaskSupport) -> Tool {
    Tool::new(name, name, Tool::empty_input_schema()).with_task_support(support)
}

async fn ask_name(cx: &ServerContext, key: &str) -> Result<String, ToolError> {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let form = ElicitRequestParams::form("Name?", schema.as_object().cloned().unwrap_or_default());
    let answer = cx
        .input_key(key)
        .elicit(form)
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(answer
        .content
        .and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default())
}

/// Waits for a permit from `gate`, or for cancellation.
async fn pass(gate: &Semaphore, cx: &ServerContext) -> Result<(), ToolError> {
    tokio::select! {
        permit = gate.acquire() => {
            permit.map_err(|e| ToolError::failed(e.to_string()))?.forget();
            Ok(())
        }
        () = cx.cancellation().cancelled() => Err(ToolError::failed("cancelled")),
    }
}

/// A server whose gated tools wait for a permit from the returned semaphore.
fn server() -> (Server, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let g = gate.clone();
    let g2 = gate.clone();
    let g3 = gate.clone();
    let server = Server::builder("tasks", "1.0.0")
        .tool(
            task_tool("gated", TaskSupport::Optional),
            move |_args, cx| {
                let gate = g.clone();
                async move {
                    pass(&gate, &cx).await?;
                    Ok(CallToolResult::text("done"))
                }
            },
        )
        .tool(
            task_tool("tool_error", TaskSupport::Optional),
            move |_args, cx| {
                let gate = g2.clone();
                async move {
                    pass(&gate, &cx).await?;
                    Err(ToolError::failed("broke"))
                }
            },
        )
        .tool(
            task_tool("protocol_error", TaskSupport::Optional),
            move |_args, cx| {
                let gate = g3.clone();
                async move {
                    pass(&gate, &cx).await?;
                    Err(ToolError::Protocol(ErrorObject::internal("boom")))
                }
            },
        )
        .tool(
            task_tool("instant", TaskSupport::Optional),
            |_args, _cx| async { Ok(CallToolResult::text("at once")) },
        )
        .tool(
            task_tool("required", TaskSupport::Required),
            |_args, _cx| async { Ok(CallToolResult::text("required ran")) },
        )
        .tool(
            task_tool("confirm", TaskSupport::Optional),
            |_args, cx| async move {
                cx.continue_as_task().await;
                let (a, b) = tokio::join!(ask_name(&cx, "first"), ask_name(&cx, "second"));
                Ok(CallToolResult::text(format!("{} and {}", a?, b?)))
            },
        )
        .tool(
            task_tool("compose", TaskSupport::Required),
            |_args, cx| async move {
                let name = ask_name(&cx, "user_name").await?;
                cx.continue_as_task().await;
                Ok(CallToolResult::text(format!("Hello, {name}!")))
            },
        )
        .build();
    (server, gate)
}

fn envelope(extension: bool) -> Value {
    let mut caps = json!({"elicitation": {}});
    if extension {
        caps["extensions"] = json!({ EXT: {} });
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    })
}

fn request(id: u64, method: &str, mut params: Value, extension: bool) -> Value {
    params["_meta"] = envelope(extension);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn connect(server: &Server) -> (RawPeer, mcpflow::server::RunningServer) {
    let (client, served) = pair(Kind::Stdio);
    let AnyTransport::Stream(served) = served else {
        unreachable!("stdio pairs are streams")
    };
    (RawPeer::new(client), server.serve(served))
}

/// The raw test client: one stream, ids counted.
struct Raw {
    peer: RawPeer,
    next: u64,
}

impl Raw {
    async fn call(&mut self, method: &str, params: Value, extension: bool) -> Value {
        self.next += 1;
        let id = self.next;
        self.peer.send(request(id, method, params, extension)).await;
        bounded(
            "the answer to a tasks request",
            self.peer
                .recv_until(|m| m.get("id") == Some(&json!(id)) && m.get("method").is_none()),
        )
        .await
    }

    async fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params, true).await;
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    async fn error_code(&mut self, method: &str, params: Value, extension: bool) -> Value {
        self.call(method, params, extension).await["error"]["code"].clone()
    }

    /// The task once its status is `status`: listen for its `notifications/tasks`, and
    /// read it with `tasks/get` in case it got there first.
    async fn until(&mut self, task_id: &str, status: &str) -> Value {
        self.next += 1;
        let listen = self.next;
        let params = json!({"notifications": {"taskIds": [task_id]}});
        self.peer
            .send(request(listen, "subscriptions/listen", params, true))
            .await;
        let ack = bounded(
            "the listen acknowledgement",
            self.peer
                .recv_until(|m| m["method"] == "notifications/subscriptions/acknowledged"),
        )
        .await;
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task_id]));
        let now = self.result("tasks/get", json!({"taskId": task_id})).await;
        if now["status"] == status {
            return now;
        }
        let note = bounded(
            "the task's status notification",
            self.peer.recv_until(|m| {
                m["method"] == "notifications/tasks"
                    && m["params"]["taskId"] == task_id
                    && m["params"]["status"] == status
            }),
        )
        .await;
        assert_eq!(
            note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            listen
        );
        note["params"].clone()
    }
}

fn raw(server: &Server) -> (Raw, mcpflow::server::RunningServer) {
    let (peer, running) = connect(server);
    (Raw { peer, next: 0 }, running)
}

#[tokio::test]
async fn negotiation_is_per_request_and_discover_advertises_the_extension() {
    let (server, _gate) = server();
    let (mut c, _running) = raw(&server);
    let discover = c.result("server/discover", json!({})).await;
    let caps = &discover["capabilities"];
    assert_eq!(caps["extensions"][EXT], json!({}), "{caps}");
    assert!(caps.get("tasks").is_none(), "no 2025-11-25 slot: {caps}");
    for (method, params) in [
        ("tasks/get", json!({"taskId": "x"})),
        ("tasks/update", json!({"taskId": "x", "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": "x"})),
    ] {
        assert_eq!(
            c.error_code(method, params, false).await,
            -32021,
            "{method}"
        );
    }
    let refused = c
        .call("tools/call", json!({"name": "required"}), false)
        .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][EXT],
        json!({})
    );
    // An optional tool without the extension runs directly, a `task` param ignored.
    let direct = c
        .call(
            "tools/call",
            json!({"name": "instant", "task": {"ttl": 1000}}),
            false,
        )
        .await;
    assert_eq!(
        direct["result"]["content"][0]["text"], "at once",
        "{direct}"
    );
    assert_eq!(direct["result"]["resultType"], "complete");
    // A listen for task ids needs the extension too.
    let listen = json!({"notifications": {"taskIds": ["x"]}});
    assert_eq!(
        c.error_code("subscriptions/listen", listen, false).await,
        -32021
    );
    for removed in ["tasks/result", "tasks/list"] {
        let params = json!({"taskId": "x"});
        assert_eq!(
            c.error_code(removed, params, true).await,
            -32601,
            "{removed}"
        );
    }
}

#[tokio::test]
async fn a_task_is_created_stored_first_and_ends_completed_or_failed() {
    let (server, gate) = server();
    let (mut c, _running) = raw(&server);
    let created = c.result("tools/call", json!({"name": "gated"})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(id.len(), 32, "128 random bits");
    assert!(
        created["ttlMs"].as_u64().is_some_and(|t| t > 0),
        "{created}"
    );
    assert!(created["pollIntervalMs"].as_u64().is_some(), "{created}");
    for gone in ["ttl", "pollInterval", "task", "requestState", "result"] {
        assert!(created.get(gone).is_none(), "{gone} in {created}");
    }
    let working = c.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(working["status"], "working");
    assert_eq!(working["resultType"], "complete");
    assert!(working.get("result").is_none());
    gate.add_permits(1);
    let done = c.until(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    assert!(
        done["result"]["_meta"]["io.modelcontextprotocol/related-task"].is_null(),
        "{done}"
    );
    // A tool error completes its task; a JSON-RPC error fails it.
    let broke = c.result("tools/call", json!({"name": "tool_error"})).await;
    let broke_id = broke["taskId"].as_str().expect("taskId").to_owned();
    gate.add_permits(1);
    let broke = c.until(&broke_id, "completed").await;
    assert_eq!(broke["result"]["isError"], true, "{broke}");
    let failed = c
        .result("tools/call", json!({"name": "protocol_error"}))
        .await;
    let failed_id = failed["taskId"].as_str().expect("taskId").to_owned();
    gate.add_permits(1);
    let failed = c.until(&failed_id, "failed").await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(failed.get("result").is_none(), "{failed}");
    // A tool that finishes at once answers directly.
    let instant = c.result("tools/call", json!({"name": "instant"})).await;
    assert_eq!(instant["resultType"], "complete", "{instant}");
    assert_eq!(server.task_count(), 3);
    let unknown = json!({"taskId": "no-such-task"});
    assert_eq!(c.error_code("tasks/get", unknown, true).await, -32602);
}

#[tokio::test]
async fn cancel_acks_empty_and_is_idempotent() {
    let (server, _gate) = server();
    let (mut c, _running) = raw(&server);
    let created = c.result("tools/call", json!({"name": "gated"})).await;
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    for _ in 0..2 {
        let ack = c.result("tasks/cancel", json!({"taskId": id})).await;
        assert_eq!(ack["resultType"], "complete", "{ack}");
        for field in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(field).is_none(), "{field} in {ack}");
        }
        let task = c.result("tasks/get", json!({"taskId": id})).await;
        assert_eq!(task["status"], "cancelled", "{task}");
    }
    let unknown = json!({"taskId": "no-such-task"});
    assert_eq!(c.error_code("tasks/cancel", unknown, true).await, -32602);
}

#[tokio::test]
async fn input_parks_the_task_and_tasks_update_resumes_it_key_by_key() {
    let (server, _gate) = server();
    let (mut c, _running) = raw(&server);
    let created = c.result("tools/call", json!({"name": "confirm"})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let parked = c.until(&id, "input_required").await;
    let asked = |task: &Value| -> Vec<String> {
        task["inputRequests"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    // The second question registers right after the first: poll until it has.
    let parked = bounded("the task asks its second question", async {
        let mut parked = parked;
        while asked(&parked).len() < 2 {
            tokio::task::yield_now().await;
            parked = c.result("tasks/get", json!({"taskId": id})).await;
        }
        parked
    })
    .await;
    assert_eq!(asked(&parked), ["first", "second"], "{parked}");
    assert_eq!(
        parked["inputRequests"]["first"]["method"],
        "elicitation/create"
    );
    let accept = |name: &str| json!({"action": "accept", "content": {"name": name}});
    let ack = c
        .result(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"first": accept("Ann"), "nope": {"x": 1}}}),
        )
        .await;
    assert_eq!(
        ack,
        json!({"resultType": "complete", "_meta": ack["_meta"]})
    );
    let half = c.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(half["status"], "input_required");
    assert_eq!(asked(&half), ["second"], "{half}");
    c.result(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"second": accept("Bo")}}),
    )
    .await;
    let done = c.until(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Ann and Bo", "{done}");
}

#[tokio::test]
async fn input_before_the_task_is_a_round_of_the_call() {
    let (server, _gate) = server();
    let (mut c, _running) = raw(&server);
    let first = c.result("tools/call", json!({"name": "compose"})).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first.get("taskId").is_none());
    let retry = json!({
        "name": "compose",
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
        "requestState": first["requestState"],
    });
    let created = c.result("tools/call", retry).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none());
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let done = c.until(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice!");
}

// ---- HTTP without a session --------------------------------------------------------------

async fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = bounded("a 2026-07-28 POST", request.body(body.to_string()).send())
        .await
        .expect("POST");
    let status = response.status().as_u16();
    let text = bounded("its body", response.text()).await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test]
async fn over_http_a_task_outlives_its_post_and_mcp_name_carries_the_task_id() {
    let (server, gate) = server();
    let running = common::http::serve(HttpServer::new(server)).await;
    let url = running.url();
    let call = request(1, "tools/call", json!({"name": "confirm"}), true);
    let (status, body) = post(
        &url,
        &call,
        &[("mcp-method", "tools/call"), ("mcp-name", "confirm")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "task", "{body}");
    let id = body["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let get = request(2, "tasks/get", json!({"taskId": id}), true);
    for headers in [
        vec![("mcp-method", "tasks/get")],
        vec![("mcp-method", "tasks/get"), ("mcp-name", "another-task")],
    ] {
        let (status, body) = post(&url, &get, &headers).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &json!(-32020)),
            "{body}"
        );
    }
    let named = [("mcp-method", "tasks/get"), ("mcp-name", id.as_str())];
    // The handler parks right after the task is created; each POST is a new
    // connection, so a task that ended with its request would be gone here.
    let parked = bounded("the task asks for input", async {
        loop {
            let (status, body) = post(&url, &get, &named).await;
            assert_eq!(status, 200, "{body}");
            if body["result"]["inputRequests"]["second"].is_object() {
                return body["result"].clone();
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(parked["status"], "input_required", "{parked}");
    let accept = json!({"action": "accept", "content": {"name": "X"}});
    let update = request(
        3,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"first": accept, "second": accept}}),
        true,
    );
    let (status, body) = post(
        &url,
        &update,
        &[("mcp-method", "tasks/update"), ("mcp-name", id.as_str())],
    )
    .await;
    assert_eq!(
        (status, &body["result"]["resultType"]),
        (200, &json!("complete")),
        "{body}"
    );
    let done = bounded("the task completes", async {
        loop {
            let (_, body) = post(&url, &get, &named).await;
            if body["result"]["status"] == "completed" {
                return body["result"].clone();
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(done["result"]["content"][0]["text"], "X and X", "{done}");
    let cancel = request(4, "tasks/cancel", json!({"taskId": id}), true);
    let (status, _) = post(&url, &cancel, &[("mcp-method", "tasks/cancel")]).await;
    assert_eq!(status, 400, "tasks/cancel needs Mcp-Name too");
    drop(gate);
    bounded("shutdown", running.shutdown()).await;
}

// ---- the mcpflow client on a 2026-07-28 connection ---------------------------------------

/// What keeps the server of a client test running.
enum Running {
    Memory(#[allow(dead_code)] mcpflow::server::RunningServer),
    Http(mcpflow::http::server::RunningHttpServer),
}

impl Running {
    async fn stop(self) {
        if let Running::Http(running) = self {
            bounded("shutdown", running.shutdown()).await;
        }
    }
}

/// A 2026-07-28 client (answering elicitations with the name "X") of `server`, over
/// memory or over HTTP.
async fn per_request_client(server: Server, http: bool) -> (Client, Running) {
    let builder = Client::builder("t", "1")
        .era(Era::PerRequest)
        .on_elicitation(false, |_params, _cx| async {
            let mut content = mcpflow::protocol::JsonObject::new();
            content.insert("name".to_owned(), json!("X"));
            Ok(mcpflow::protocol::ElicitResult::accept(content))
        });
    let (client, running) = if http {
        let running = common::http::serve(HttpServer::new(server)).await;
        let transport =
            mcpflow::http::client::HttpClientTransport::new(running.url()).expect("transport");
        let client = bounded(
            "a per-request client connects over HTTP",
            builder.connect(transport),
        )
        .await;
        (client, Running::Http(running))
    } else {
        let (client_side, server_side) = mcpflow::transport::MemoryTransport::pair(0);
        let running = server.serve(server_side);
        let client = bounded(
            "a per-request client connects in memory",
            builder.connect(client_side),
        )
        .await;
        (client, Running::Memory(running))
    };
    let client = client.expect("connects");
    assert!(client.is_per_request());
    (client, running)
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(result).expect("serializes")["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The task's status once it has ended.
async fn ended(client: &Client, id: &str) -> mcpflow::protocol::tasks::TaskStatus {
    bounded("the task ends", async {
        loop {
            let task = client.get_task(id).await.expect("tasks/get");
            if task.status.is_terminal() {
                return task.status;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
}

const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

#[tokio::test]
async fn the_client_starts_and_awaits_tasks_and_takes_an_immediate_result() {
    for http in [false, true] {
        let (server, gate) = server();
        let (client, running) = per_request_client(server, http).await;
        let created = bounded(
            "call_tool_as_task",
            client.call_tool_as_task("gated", json!({}), None),
        )
        .await
        .expect("a task");
        let id = created.task.task_id;
        let task = bounded("get_task", client.get_task(&id))
            .await
            .expect("get");
        assert_eq!(
            task.status,
            mcpflow::protocol::tasks::TaskStatus::Working,
            "http={http}"
        );
        gate.add_permits(1);
        let result = bounded("await_task", client.await_task(&id, WAIT))
            .await
            .expect("the result");
        assert_eq!(text(&result), "done", "http={http}");
        let details = bounded("task_details", client.task_details(&id))
            .await
            .expect("details");
        assert!(details.result.is_some(), "http={http}: {details:?}");

        let started = bounded(
            "start_tool_task",
            client.start_tool_task("instant", json!({}), None),
        )
        .await
        .expect("an answer");
        let mcpflow::client::TaskStart::Done(result) = started else {
            panic!("http={http}: the instant tool answered with a task");
        };
        assert_eq!(text(&result), "at once");
        let refused = bounded(
            "call_tool_as_task, answered at once",
            client.call_tool_as_task("instant", json!({}), None),
        )
        .await
        .expect_err("no task to return");
        assert!(refused.to_string().contains("start_tool_task"), "{refused}");

        // A failed task is the tool call's JSON-RPC error.
        let created = bounded(
            "a failing task",
            client.call_tool_as_task("protocol_error", json!({}), None),
        )
        .await
        .expect("a task");
        gate.add_permits(1);
        let failed = bounded(
            "await the failing task",
            client.await_task(&created.task.task_id, WAIT),
        )
        .await
        .expect_err("failed");
        let mcpflow::client::TaskWaitError::Session(error) = failed else {
            panic!("http={http}: {failed:?}");
        };
        assert_eq!(error.rejection().map(|e| e.code.0), Some(-32603), "{error}");

        for refused in [
            bounded("task_result", client.task_result(&id))
                .await
                .map(drop)
                .expect_err("removed"),
            bounded("list_tasks", client.list_tasks(None))
                .await
                .map(drop)
                .expect_err("removed"),
        ] {
            assert!(refused.to_string().contains("does not exist"), "{refused}");
        }
        bounded("close", client.close()).await;
        running.stop().await;
    }
}

#[tokio::test]
async fn the_client_answers_a_tasks_input_requests_with_its_callbacks() {
    for http in [false, true] {
        let (server, _gate) = server();
        let (client, running) = per_request_client(server, http).await;
        // Two input requests inside the task, answered through tasks/update.
        let created = bounded(
            "confirm as a task",
            client.call_tool_as_task("confirm", json!({}), None),
        )
        .await
        .expect("a task");
        let result = bounded(
            "await confirm",
            client.await_task(&created.task.task_id, WAIT),
        )
        .await
        .expect("the result");
        assert_eq!(text(&result), "X and X", "http={http}");
        // Input before the task is a round of the call itself.
        let created = bounded(
            "compose as a task",
            client.call_tool_as_task("compose", json!({}), None),
        )
        .await
        .expect("a task");
        let result = bounded(
            "await compose",
            client.await_task(&created.task.task_id, WAIT),
        )
        .await
        .expect("the result");
        assert_eq!(text(&result), "Hello, X!", "http={http}");
        bounded("close", client.close()).await;
        running.stop().await;
    }
}

#[tokio::test]
async fn the_client_cancels_a_task_and_cancels_it_past_the_deadline() {
    use mcpflow::protocol::tasks::TaskStatus;
    for http in [false, true] {
        let (server, _gate) = server();
        let (client, running) = per_request_client(server, http).await;
        let created = bounded(
            "a task to cancel",
            client.call_tool_as_task("gated", json!({}), None),
        )
        .await
        .expect("a task");
        let id = created.task.task_id;
        bounded("cancel_task", client.cancel_task(&id))
            .await
            .expect("cancelled");
        assert_eq!(
            ended(&client, &id).await,
            TaskStatus::Cancelled,
            "http={http}"
        );
        let late = bounded("await a cancelled task", client.await_task(&id, WAIT))
            .await
            .expect_err("cancelled");
        assert!(late.to_string().contains("cancelled"), "{late}");

        let created = bounded(
            "a task that outlives its deadline",
            client.call_tool_as_task("gated", json!({}), None),
        )
        .await
        .expect("a task");
        let id = created.task.task_id;
        let deadline = std::time::Duration::from_millis(200);
        let late = bounded("await past the deadline", client.await_task(&id, deadline))
            .await
            .expect_err("the deadline passes");
        assert!(
            matches!(late, mcpflow::client::TaskWaitError::DeadlinePassed { ref task_id, .. } if *task_id == id),
            "{late:?}"
        );
        assert_eq!(
            ended(&client, &id).await,
            TaskStatus::Cancelled,
            "http={http}"
        );
        bounded("close", client.close()).await;
        running.stop().await;
    }
}
