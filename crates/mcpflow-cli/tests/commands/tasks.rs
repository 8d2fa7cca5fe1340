//! `mcpflow call` on tools that run as tasks: a `taskSupport: required` tool runs as a
//! task and its status is shown; an optional one is called directly. Every child run is
//! bounded.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{BIN, Run, mcpflow};

/// `mcpflow call ARGS -- mcpflow serve everything`.
fn call_everything(args: &[&str]) -> Run {
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", BIN, "serve", "everything"]);
    mcpflow(&all)
}

#[test]
fn call_runs_a_required_task_tool_as_a_task_and_shows_its_status() {
    let run = call_everything(&["--json", "test_task_required"]);
    assert_eq!(run.code, 0, "{}", run.describe());
    let out = run.json();
    let task = &out["task"];
    let id = task["taskId"].as_str().unwrap_or_default();
    assert_eq!(id.len(), 32, "{}", run.describe());
    assert_eq!(task["status"], "completed", "{}", run.describe());
    assert_eq!(
        out["result"]["content"][0]["text"],
        format!("task {id} finished"),
        "{}",
        run.describe()
    );
    assert_eq!(
        out["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id,
        "{}",
        run.describe()
    );
    assert_eq!(
        out["notifications"]["notifications/progress"],
        3,
        "progress reaches the client after the call answered: {}",
        run.describe()
    );

    let shown = call_everything(&["test_task_required"]);
    assert_eq!(shown.code, 0, "{}", shown.describe());
    assert!(shown.stderr.contains(": working"), "{}", shown.describe());
    assert!(shown.stderr.contains(": completed"), "{}", shown.describe());

    let direct = call_everything(&["--json", "test_task_optional"]);
    assert_eq!(direct.code, 0, "{}", direct.describe());
    let out = direct.json();
    assert_eq!(
        out["result"]["content"][0]["text"],
        "ran directly",
        "{}",
        direct.describe()
    );
    assert!(out.get("task").is_none(), "{}", direct.describe());
}

#[test]
fn call_runs_a_required_task_tool_on_a_2026_connection() {
    let run = call_everything(&["--json", "--era", "per-request", "test_task_required"]);
    assert_eq!(run.code, 0, "{}", run.describe());
    let out = run.json();
    let task = &out["task"];
    let id = task["taskId"].as_str().unwrap_or_default();
    assert!(!id.is_empty(), "a task was started: {}", run.describe());
    assert_eq!(task["status"], "completed", "{}", run.describe());
    assert_eq!(
        out["result"]["content"][0]["text"],
        format!("task {id} finished"),
        "{}",
        run.describe()
    );
}
