//! Tasks (2025-11-25, experimental): a tool called as a task answers at once with the
//! task, runs in the background, and is polled, awaited, listed and cancelled; the
//! refusals the spec asks for; bounds, expiry, cancellation, progress and elicitation
//! during a task; and tasks seen only by the connection that made them.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Kind, bounded, connect, tool};
use mcpflow::SessionError;
use mcpflow::client::{Client, TaskWaitError};
use mcpflow::protocol::tasks::TaskStatus;
use mcpflow::protocol::tools::TaskSupport;
use mcpflow::protocol::{CallToolResult, ElicitRequestParams, ElicitResult, ErrorObject};
use mcpflow::server::{Server, TaskLimits, ToolError};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

/// The JSON-RPC error code of a refused request.
fn code(error: &SessionError) -> i32 {
    match error {
        SessionError::Rejected { error, .. } => error.code.0,
        other => panic!("expected a JSON-RPC error, got {other}"),
    }
}

/// A server with `gated` (optional task; waits for a permit of `gate`), `required`
/// (required task), `plain` (no task support) and `failing` (optional; an `isError`
/// result).
fn server(gate: Arc<Semaphore>, limits: TaskLimits) -> Server {
    Server::builder("tasks", "1")
        .task_limits(limits)
        .tool(
            tool("gated").with_task_support(TaskSupport::Optional),
            move |args, _cx| {
                let gate = gate.clone();
                async move {
                    // One permit lets one call through.
                    gate.acquire()
                        .await
                        .map_err(|e| ToolError::failed(e.to_string()))?
                        .forget();
                    let text = args.get("text").and_then(Value::as_str).unwrap_or("done");
                    Ok(CallToolResult::text(text))
                }
            },
        )
        .tool(
            tool("required").with_task_support(TaskSupport::Required),
            |_args, _cx| async { Ok(CallToolResult::text("required ran")) },
        )
        .tool(tool("plain"), |_args, _cx| async {
            Ok(CallToolResult::text("plain ran"))
        })
        .tool(
            tool("failing").with_task_support(TaskSupport::Optional),
            |_args, _cx| async { Err(ToolError::failed("it broke")) },
        )
        .build()
}

fn related_task(result: &CallToolResult) -> Option<&str> {
    result
        .meta
        .as_ref()?
        .get("io.modelcontextprotocol/related-task")?
        .get("taskId")?
        .as_str()
}

#[tokio::test]
async fn a_task_runs_in_the_background_and_is_polled_listed_and_awaited() {
    for kind in common::WITH_HTTP {
        let gate = Arc::new(Semaphore::new(0));
        let server = server(gate.clone(), TaskLimits::default());
        let (client, _guard) = connect(kind, &server, Client::builder("c", "1")).await;
        let caps = client.server_info().capabilities.tasks.clone();
        let caps = caps.unwrap_or_else(|| panic!("{kind:?}: tasks capability declared"));
        assert!(caps.list.is_some() && caps.cancel.is_some(), "{kind:?}");
        assert!(caps.accepts("tools", "call"), "{kind:?}");
        let tools = bounded("tools/list", client.tools()).await.expect("tools");
        let support = |name: &str| {
            tools
                .iter()
                .find(|t| t.name == name)
                .map(mcpflow::protocol::Tool::task_support)
        };
        assert_eq!(support("gated"), Some(TaskSupport::Optional));
        assert_eq!(support("required"), Some(TaskSupport::Required));
        assert_eq!(support("plain"), Some(TaskSupport::Forbidden));

        let what = format!("{kind:?}: start a task");
        let created = bounded(
            &what,
            client.call_tool_as_task(
                "gated",
                json!({"text": "hi"}),
                Some(Duration::from_secs(30)),
            ),
        )
        .await
        .expect("task created");
        let task = created.task;
        assert_eq!(task.status, TaskStatus::Working, "{kind:?}");
        assert_eq!(task.task_id.len(), 32, "{kind:?}: 128 random bits in hex");
        assert_eq!(task.ttl, Some(30_000), "{kind:?}");
        assert_eq!(task.poll_interval, Some(500), "{kind:?}");
        assert!(
            task.created_at.ends_with('Z') && task.created_at.contains('T'),
            "{kind:?}"
        );
        assert_eq!(task.created_at, task.last_updated_at, "{kind:?}");

        let polled = bounded(&what, client.get_task(&task.task_id))
            .await
            .expect("get");
        assert_eq!(polled.status, TaskStatus::Working, "{kind:?}");
        let listed = bounded(&what, client.list_tasks(None)).await.expect("list");
        assert_eq!(listed.tasks.len(), 1, "{kind:?}");
        assert_eq!(listed.tasks[0].task_id, task.task_id, "{kind:?}");
        assert_eq!(server.task_count(), 1, "{kind:?}");

        // tasks/result blocks until the tool ends.
        let handle = client.handle();
        let waiting = handle.task_result(&task.task_id);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut waiting)
                .await
                .is_err(),
            "{kind:?}: tasks/result answered before the task ended"
        );
        gate.add_permits(1);
        let result = bounded(&what, waiting).await.expect("result");
        assert_eq!(result.content[0].as_text(), Some("hi"), "{kind:?}");
        assert_eq!(
            related_task(&result),
            Some(task.task_id.as_str()),
            "{kind:?}"
        );

        let done = bounded(&what, client.get_task(&task.task_id))
            .await
            .expect("get");
        assert_eq!(done.status, TaskStatus::Completed, "{kind:?}");
        let again = bounded(
            &what,
            client.await_task(&task.task_id, Duration::from_secs(5)),
        )
        .await
        .expect("the result again");
        assert_eq!(again, result, "{kind:?}: the same result every time");
        assert!(
            server.task_result_bytes() > 0,
            "{kind:?}: the result is kept"
        );

        // A finished task cannot be cancelled.
        let refused = bounded(&what, client.cancel_task(&task.task_id))
            .await
            .unwrap_err();
        assert_eq!(code(&refused), -32602, "{kind:?}");
        bounded("close", client.close()).await;
    }
}

#[tokio::test]
async fn task_support_is_enforced_and_unknown_tasks_refused() {
    let server = server(Arc::new(Semaphore::new(0)), TaskLimits::default());
    let (client, _guard) = connect(Kind::Memory1, &server, Client::builder("c", "1")).await;
    let what = "refusals";
    let forbidden = bounded(what, client.call_tool_as_task("plain", json!({}), None))
        .await
        .unwrap_err();
    assert_eq!(code(&forbidden), -32601, "{forbidden}");
    let required = bounded(what, client.call_tool("required", json!({})))
        .await
        .unwrap_err();
    assert_eq!(code(&required), -32601, "{required}");
    let plain = bounded(what, client.call_tool("plain", json!({})))
        .await
        .expect("plain");
    assert_eq!(plain.content[0].as_text(), Some("plain ran"));
    let created = bounded(what, client.call_tool_as_task("required", json!({}), None))
        .await
        .expect("required as a task");
    let result = bounded(
        what,
        client.await_task(&created.task.task_id, Duration::from_secs(5)),
    )
    .await
    .expect("required's result");
    assert_eq!(result.content[0].as_text(), Some("required ran"));

    for unknown in [
        client.get_task("nope").await.unwrap_err(),
        client.task_result("nope").await.unwrap_err(),
        client.cancel_task("nope").await.unwrap_err(),
        client.list_tasks(Some("not a cursor")).await.unwrap_err(),
    ] {
        assert_eq!(code(&unknown), -32602, "{unknown}");
    }

    // An isError result fails the task (2025-11-25) and is returned as it was.
    let failing = bounded(what, client.call_tool_as_task("failing", json!({}), None))
        .await
        .expect("failing as a task");
    let result = bounded(
        what,
        client.await_task(&failing.task.task_id, Duration::from_secs(5)),
    )
    .await
    .expect("failing's result");
    assert!(result.is_error());
    let task = bounded(what, client.get_task(&failing.task.task_id))
        .await
        .expect("get");
    assert_eq!(task.status, TaskStatus::Failed);
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn a_server_without_task_tools_ignores_the_task_param_and_has_no_task_methods() {
    let server = Server::builder("plain", "1")
        .tool(tool("plain"), |_args, _cx| async {
            Ok(CallToolResult::text("ran"))
        })
        .build();
    let (client, _guard) = connect(Kind::Memory1, &server, Client::builder("c", "1")).await;
    assert!(client.server_info().capabilities.tasks.is_none());
    let mut params = mcpflow::protocol::CallToolRequestParams::new("plain");
    params.task = Some(mcpflow::protocol::tasks::TaskMetadata::default());
    let ran = bounded(
        "task param ignored",
        client.call_tool_with(&params, Default::default()),
    )
    .await
    .expect("processed normally");
    assert_eq!(ran.content[0].as_text(), Some("ran"));
    let missing = bounded("tasks/get", client.get_task("x"))
        .await
        .unwrap_err();
    assert_eq!(code(&missing), -32601);
    bounded("close", client.close()).await;
}

#[tokio::test(start_paused = true)]
async fn tasks_are_bounded_and_expire_with_their_results() {
    let limits = TaskLimits::default()
        .with_max_tasks(3)
        .with_max_result_bytes(400)
        .with_max_ttl(Duration::from_secs(10));
    let gate = Arc::new(Semaphore::new(0));
    let server = server(gate.clone(), limits);
    let (client, _guard) = connect(Kind::Memory1, &server, Client::builder("c", "1")).await;
    let what = "bounds";
    let long = Some(Duration::from_secs(3600));
    let mut ids = Vec::new();
    for _ in 0..3 {
        let created = bounded(what, client.call_tool_as_task("gated", json!({}), long))
            .await
            .expect("within the cap");
        assert_eq!(created.task.ttl, Some(10_000), "the ttl is capped");
        ids.push(created.task.task_id);
    }
    let full = bounded(what, client.call_tool_as_task("gated", json!({}), long))
        .await
        .unwrap_err();
    assert_eq!(code(&full), -32603, "{full}");
    let SessionError::Rejected { error, .. } = &full else {
        unreachable!()
    };
    assert_eq!(error.data, Some(json!({"reason": "tasks_full"})));
    assert!(
        error.message.contains("maximum of 3 tasks"),
        "{}",
        error.message
    );

    // A small result is kept and counted; one past the byte budget fails its task.
    gate.add_permits(1);
    let small = bounded(what, client.task_result(&ids[0]))
        .await
        .expect("small");
    assert_eq!(small.content[0].as_text(), Some("done"));
    let kept = server.task_result_bytes();
    assert!(kept > 0 && kept <= 400, "{kept}");
    // At the cap, a new task takes the place of the oldest finished one, whose result
    // is forgotten with it.
    let replacing = bounded(what, client.call_tool_as_task("gated", json!({}), long))
        .await
        .expect("the finished task makes room");
    let forgotten = bounded(what, client.get_task(&ids[0])).await.unwrap_err();
    assert_eq!(code(&forgotten), -32602, "{forgotten}");
    assert_eq!(server.task_result_bytes(), 0);
    ids[0] = replacing.task.task_id;
    // With every task held running, the cap refuses.
    let full = bounded(what, client.call_tool_as_task("gated", json!({}), long))
        .await
        .unwrap_err();
    assert_eq!(code(&full), -32603, "{full}");

    // The three unfinished handlers each hold the gate.
    assert_eq!(Arc::strong_count(&gate), 5);
    // Expiry: ten seconds on, every task is gone, handlers dropped, results freed.
    tokio::time::sleep(Duration::from_millis(10_001)).await;
    for id in &ids {
        let gone = bounded(what, client.get_task(id)).await.unwrap_err();
        assert_eq!(code(&gone), -32602, "task {id} expired");
    }
    assert_eq!(server.task_count(), 0);
    assert_eq!(server.task_result_bytes(), 0);
    assert_eq!(
        gate.available_permits(),
        0,
        "the expired handlers never ran on"
    );

    let big = "x".repeat(500);
    let created = bounded(
        what,
        client.call_tool_as_task("gated", json!({"text": big}), None),
    )
    .await
    .expect("room again after expiry");
    gate.add_permits(1);
    let refused = bounded(what, client.task_result(&created.task.task_id))
        .await
        .unwrap_err();
    assert_eq!(code(&refused), -32603, "{refused}");
    let task = bounded(what, client.get_task(&created.task.task_id))
        .await
        .expect("get");
    assert_eq!(task.status, TaskStatus::Failed);
    assert!(
        task.status_message
            .is_some_and(|m| m.contains("does not fit"))
    );
    assert_eq!(server.task_result_bytes(), 0);
    bounded("close", client.close()).await;
}

/// A tool that waits for its cancellation and reports it on `seen`.
fn cancellable(seen: mpsc::UnboundedSender<String>) -> Server {
    Server::builder("cancel", "1")
        .tool(
            tool("forever").with_task_support(TaskSupport::Required),
            move |_args, cx| {
                let seen = seen.clone();
                async move {
                    cx.cancellation().cancelled().await;
                    let _ = seen.send(cx.task_id().unwrap_or_default().to_owned());
                    Ok(CallToolResult::text("stopped"))
                }
            },
        )
        .build()
}

#[tokio::test]
async fn cancelling_a_task_trips_its_handler_and_it_stays_cancelled() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let server = cancellable(tx);
    let (client, _guard) = connect(Kind::Memory0, &server, Client::builder("c", "1")).await;
    let what = "cancel";
    let created = bounded(what, client.call_tool_as_task("forever", json!({}), None))
        .await
        .expect("created");
    let id = created.task.task_id;
    let cancelled = bounded(what, client.cancel_task(&id))
        .await
        .expect("cancel");
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(bounded(what, seen.recv()).await, Some(id.clone()));
    let after = bounded(what, client.get_task(&id)).await.expect("get");
    assert_eq!(
        after.status,
        TaskStatus::Cancelled,
        "the handler's late result changes nothing"
    );
    let twice = bounded(what, client.cancel_task(&id)).await.unwrap_err();
    assert_eq!(code(&twice), -32602);
    assert!(bounded(what, client.task_result(&id)).await.is_err());
    bounded("close", client.close()).await;
}

#[tokio::test(start_paused = true)]
async fn awaiting_past_the_deadline_cancels_the_task() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let server = cancellable(tx);
    let (client, _guard) = connect(Kind::Memory1, &server, Client::builder("c", "1")).await;
    let what = "deadline";
    let created = bounded(what, client.call_tool_as_task("forever", json!({}), None))
        .await
        .expect("created");
    let id = created.task.task_id;
    let late = bounded(what, client.await_task(&id, Duration::from_secs(2))).await;
    assert!(
        matches!(&late, Err(TaskWaitError::DeadlinePassed { task_id, .. }) if *task_id == id),
        "{late:?}"
    );
    assert_eq!(bounded(what, seen.recv()).await, Some(id.clone()));
    let task = bounded(what, client.get_task(&id)).await.expect("get");
    assert_eq!(task.status, TaskStatus::Cancelled);
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn progress_keeps_flowing_after_the_call_answered() {
    let gate = Arc::new(Semaphore::new(0));
    let handler_gate = gate.clone();
    let server = Server::builder("progress", "1")
        .tool(
            tool("steps").with_task_support(TaskSupport::Required),
            move |_args, cx| {
                let gate = handler_gate.clone();
                async move {
                    let _permit = gate
                        .acquire()
                        .await
                        .map_err(|e| ToolError::failed(e.to_string()))?;
                    for step in 1..=3 {
                        cx.progress(f64::from(step), Some(3.0), None)
                            .await
                            .map_err(|e| ToolError::failed(e.to_string()))?;
                    }
                    Ok(CallToolResult::text("stepped"))
                }
            },
        )
        .build();
    let (tx, mut progress) = mpsc::unbounded_channel();
    let builder = Client::builder("c", "1").on_notification(move |n, _c| {
        let tx = tx.clone();
        async move {
            if n.method == "notifications/progress" {
                let params: Value =
                    serde_json::from_str(n.params.expect("params").get()).expect("JSON params");
                let _ = tx.send(params);
            }
        }
    });
    let (client, _guard) = connect(Kind::Stdio, &server, builder).await;
    let what = "progress during a task";
    let created = bounded(what, client.call_tool_as_task("steps", json!({}), None))
        .await
        .expect("created");
    gate.add_permits(1);
    let mut token = None;
    for step in 1..=3 {
        let update = bounded(what, progress.recv()).await.expect("progress");
        assert_eq!(update["progress"].as_f64(), Some(f64::from(step)));
        let this = update["progressToken"].clone();
        assert!(this.is_string(), "{update}");
        assert!(
            token.get_or_insert(this.clone()) == &this,
            "one token for the task"
        );
    }
    let result = bounded(
        what,
        client.await_task(&created.task.task_id, Duration::from_secs(5)),
    )
    .await
    .expect("result");
    assert_eq!(result.content[0].as_text(), Some("stepped"));
    bounded("close", client.close()).await;
}

#[tokio::test]
async fn a_task_elicits_through_tasks_result() {
    for kind in [Kind::Memory1, Kind::Stdio, Kind::Http] {
        let server = Server::builder("asks", "1")
            .tool(
                tool("greet").with_task_support(TaskSupport::Required),
                |_args, cx| async move {
                    let schema =
                        json!({"type": "object", "properties": {"name": {"type": "string"}}});
                    let Value::Object(schema) = schema else {
                        unreachable!()
                    };
                    let answer = cx
                        .elicit(ElicitRequestParams::form("Your name?", schema))
                        .await
                        .map_err(|e| ToolError::failed(e.to_string()))?;
                    let name = answer
                        .content
                        .and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_default();
                    Ok(CallToolResult::text(format!("hello {name}")))
                },
            )
            .build();
        let asked = Arc::new(Mutex::new(Vec::<Value>::new()));
        let record = asked.clone();
        let builder = Client::builder("c", "1").on_elicitation(false, move |params, _c| {
            let record = record.clone();
            async move {
                let ElicitRequestParams::Form(form) = params else {
                    return Err(ErrorObject::invalid_params("form expected"));
                };
                let related = form
                    .meta
                    .and_then(|m| m.get("io.modelcontextprotocol/related-task").cloned());
                record
                    .lock()
                    .expect("lock")
                    .push(related.unwrap_or(Value::Null));
                let Value::Object(content) = json!({"name": "Ada"}) else {
                    unreachable!()
                };
                Ok(ElicitResult::accept(content))
            }
        });
        let (client, _guard) = connect(kind, &server, builder).await;
        let what = format!("{kind:?}: elicitation in a task");
        let created = bounded(&what, client.call_tool_as_task("greet", json!({}), None))
            .await
            .expect("created");
        let id = created.task.task_id;
        // The handler waits for the client's tasks/result before it asks.
        let needs_input = bounded(&what, async {
            loop {
                let task = client.get_task(&id).await.expect("get");
                if task.status == TaskStatus::InputRequired {
                    return task;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert_eq!(needs_input.status, TaskStatus::InputRequired);
        assert!(
            asked.lock().expect("lock").is_empty(),
            "{kind:?}: asked before tasks/result"
        );
        let result = bounded(&what, client.await_task(&id, Duration::from_secs(5)))
            .await
            .expect("result");
        assert_eq!(result.content[0].as_text(), Some("hello Ada"), "{kind:?}");
        assert_eq!(
            *asked.lock().expect("lock"),
            vec![json!({"taskId": id})],
            "{kind:?}: the elicitation names its task"
        );
        bounded("close", client.close()).await;
    }
}

#[tokio::test]
async fn a_connection_sees_only_its_own_tasks() {
    let gate = Arc::new(Semaphore::new(0));
    let server = server(gate.clone(), TaskLimits::default());
    let (alice, _a) = connect(Kind::Memory1, &server, Client::builder("alice", "1")).await;
    let (bob, _b) = connect(Kind::Memory1, &server, Client::builder("bob", "1")).await;
    let what = "isolation";
    let created = bounded(what, alice.call_tool_as_task("gated", json!({}), None))
        .await
        .expect("created");
    let id = created.task.task_id;
    for refused in [
        bob.get_task(&id).await.unwrap_err(),
        bob.task_result(&id).await.unwrap_err(),
        bob.cancel_task(&id).await.unwrap_err(),
    ] {
        assert_eq!(code(&refused), -32602, "{refused}");
    }
    assert!(
        bounded(what, bob.list_tasks(None))
            .await
            .expect("list")
            .tasks
            .is_empty()
    );
    assert_eq!(
        bounded(what, alice.list_tasks(None))
            .await
            .expect("list")
            .tasks
            .len(),
        1
    );

    // Closing a connection drops its tasks.
    bounded("close alice", alice.close()).await;
    bounded(what, async {
        while server.task_count() > 0 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    bounded("close bob", bob.close()).await;
}

#[tokio::test]
async fn tasks_list_pages() {
    let gate = Arc::new(Semaphore::new(0));
    let server = Server::builder("pages", "1")
        .page_size(2)
        .tool(
            tool("gated").with_task_support(TaskSupport::Optional),
            move |_a, _cx| {
                let gate = gate.clone();
                async move {
                    let _permit = gate
                        .acquire()
                        .await
                        .map_err(|e| ToolError::failed(e.to_string()))?;
                    Ok(CallToolResult::text("done"))
                }
            },
        )
        .build();
    let (client, _guard) = connect(Kind::Memory1, &server, Client::builder("c", "1")).await;
    let what = "pages";
    let mut made = Vec::new();
    for _ in 0..5 {
        let created = bounded(what, client.call_tool_as_task("gated", json!({}), None))
            .await
            .expect("created");
        made.push(created.task.task_id);
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = bounded(what, client.list_tasks(cursor.as_deref()))
            .await
            .expect("page");
        assert!(page.tasks.len() <= 2);
        seen.extend(page.tasks.into_iter().map(|t| t.task_id));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, made, "every task once, oldest first");
    bounded("close", client.close()).await;
}

/// Counts the bytes each thread holds, so a current-thread test can see what its own
/// server and client keep (other tests run on other threads).
/// Unsafe only because a global allocator must be.
#[allow(unsafe_code)]
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    pub struct Counting;

    thread_local! {
        static HELD: Cell<isize> = const { Cell::new(0) };
    }

    fn add(bytes: usize, sign: isize) {
        let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
        let _ = HELD.try_with(|h| h.set(h.get() + sign * bytes));
    }

    /// Bytes allocated and not yet freed by this thread.
    pub fn held() -> isize {
        HELD.with(Cell::get)
    }

    // SAFETY: every call is forwarded to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            add(layout.size(), 1);
            // SAFETY: the caller's contract is the system allocator's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            add(layout.size(), -1);
            // SAFETY: as above.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            add(layout.size(), -1);
            add(new_size, 1);
            // SAFETY: as above.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

/// The task figures: tasks held at the cap, bytes per running and per finished task
/// (server and client together, on this test's thread), and everything freed on expiry.
#[tokio::test(start_paused = true)]
async fn task_memory_at_the_cap_and_after_expiry() {
    const CAP: usize = 1000;
    let limits = TaskLimits::default()
        .with_max_tasks(CAP)
        .with_default_ttl(Duration::from_secs(60));
    let gate = Arc::new(Semaphore::new(0));
    let server = server(gate.clone(), limits);
    let (client, _guard) = connect(Kind::Memory1, &server, Client::builder("c", "1")).await;
    let what = "memory";
    // Warm up: the first call settles the client's tool cache and the engine's buffers.
    bounded(what, client.call_tool("plain", json!({})))
        .await
        .expect("warm-up");
    let baseline = counting::held();
    let mut ids = Vec::with_capacity(CAP);
    for _ in 0..CAP {
        let created = bounded(what, client.call_tool_as_task("gated", json!({}), None))
            .await
            .expect("within the cap");
        ids.push(created.task.task_id);
    }
    let running = counting::held();
    let full = bounded(what, client.call_tool_as_task("gated", json!({}), None))
        .await
        .unwrap_err();
    assert_eq!(code(&full), -32603, "task {} refused", CAP + 1);
    assert_eq!(server.task_count(), CAP);

    gate.add_permits(CAP);
    for id in &ids {
        bounded(what, client.task_result(id)).await.expect("result");
    }
    let finished = counting::held();
    let kept = server.task_result_bytes();

    tokio::time::sleep(Duration::from_secs(61)).await;
    bounded(what, client.ping()).await.expect("ping");
    assert_eq!(server.task_count(), 0, "every task expired");
    assert_eq!(server.task_result_bytes(), 0, "every result freed");
    let expired = counting::held();

    let ids_bytes = isize::try_from(ids.capacity() * std::mem::size_of::<String>() + CAP * 32)
        .unwrap_or_default();
    let per = |held: isize| (held - baseline - ids_bytes) / isize::try_from(CAP).unwrap_or(1);
    println!(
        "tasks held at the cap: {CAP}; per running task: {} B; per finished task: {} B \
         (results kept: {kept} B in all); after expiry: {} B above the baseline",
        per(running),
        per(finished),
        expired - baseline - ids_bytes,
    );
    assert!(
        per(running) < 16 * 1024,
        "a running task costs {} B",
        per(running)
    );
    assert!(
        per(finished) < per(running),
        "a finished task drops its handler"
    );
    assert!(
        expired - baseline - ids_bytes < 64 * 1024,
        "expiry frees what the tasks held: {} B left",
        expired - baseline - ids_bytes
    );
    bounded("close", client.close()).await;
}
