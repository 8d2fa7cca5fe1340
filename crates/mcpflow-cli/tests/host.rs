//! `mcpflow host` and `mcpflow call --config FILE NAME`: every server of an `mcpServers`
//! file behind one tool host (mcpflow's own servers as child processes, and a server
//! that cannot start), its merged catalog and health, calls by catalog name, and
//! `--watch` printing a health transition until a real SIGINT.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;

use common::{BIN, LIMIT, mcpflow, read_all, wait_bounded};
use serde_json::json;

/// An `mcpServers` file with the named entries, removed when dropped.
struct ConfigFile(std::path::PathBuf);

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn config_file(servers: serde_json::Value) -> (ConfigFile, String) {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("mcpflow-host-{}-{n}.json", std::process::id()));
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    let text = path.to_str().unwrap().to_owned();
    (ConfigFile(path), text)
}

fn serve(what: &str) -> serde_json::Value {
    json!({"command": BIN, "args": ["serve", what]})
}

#[test]
fn host_prints_the_merged_catalog_and_names_a_server_that_is_not_ready() {
    let (_dir, path) = config_file(json!({
        "everything": serve("everything"),
        "demo": serve("demo"),
        "off": {"command": "/nonexistent/off", "disabled": true},
    }));
    let run = mcpflow(&["host", "--config", &path]);
    assert_eq!(run.code, 0, "{}", run.describe());
    for line in [
        "everything: ready",
        "demo: ready",
        "demo__count_to_three [demo]",
    ] {
        assert!(run.stdout.contains(line), "{line}: {}", run.describe());
    }
    assert!(
        run.stdout
            .contains("everything__test_simple_text [everything]"),
        "{}",
        run.describe()
    );
    assert!(
        !run.stdout.contains("  off:"),
        "a disabled entry is skipped: {}",
        run.describe()
    );

    let (_dir, path) = config_file(json!({
        "demo": serve("demo"),
        "broken": {"command": "/nonexistent/server"},
    }));
    let run = mcpflow(&["host", "--config", &path, "--json", "--timeout", "5"]);
    assert_eq!(run.code, 3, "{}", run.describe());
    let out = run.json();
    assert_eq!(
        out["servers"]["demo"]["state"],
        "ready",
        "{}",
        run.describe()
    );
    assert_ne!(out["servers"]["broken"]["state"], "ready");
    let detail = out["servers"]["broken"]["detail"].as_str().unwrap();
    assert!(detail.contains("/nonexistent/server"), "{detail}");
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"demo__slow_task"), "{tools:?}");
}

#[test]
fn call_goes_through_the_host_by_catalog_name() {
    let (_dir, path) = config_file(json!({
        "everything": serve("everything"),
        "demo": serve("demo"),
    }));
    let run = mcpflow(&["call", "--config", &path, "demo__count_to_three"]);
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(run.stdout.contains("counted to 3"), "{}", run.describe());
    assert!(run.stderr.contains("progress 3/3"), "{}", run.describe());

    let run = mcpflow(&[
        "call",
        "--config",
        &path,
        "--json",
        "everything__list_numbers",
    ]);
    assert_eq!(run.code, 0, "{}", run.describe());
    assert_eq!(
        run.json()["result"]["structuredContent"],
        json!({"result": [1, 2, 3]})
    );

    let run = mcpflow(&["call", "--config", &path, "test_simple_text"]);
    assert_eq!(
        run.code,
        4,
        "a remote name is not a catalog name: {}",
        run.describe()
    );
    assert!(
        run.stderr
            .contains("did you mean `everything__test_simple_text`?"),
        "the error names the catalog name: {}",
        run.describe()
    );

    let run = mcpflow(&["list", "tools", "--config", &path]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(run.stderr.contains("--server"), "{}", run.describe());
}

/// A server that answers the handshake and the lists, then exits: the host reconnects
/// it, and `--watch` prints each health transition as it happens.
const INIT_LIST_EXIT: &str = r#"while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"initialize"'*) printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"brief\",\"version\":\"1\"}}}" ;;
    *'"tools/list"'*) printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"tools\":[{\"name\":\"t\",\"inputSchema\":{\"type\":\"object\"}}]}}"; exit 0 ;;
  esac
done"#;

#[test]
fn watch_prints_health_transitions_until_interrupted() {
    let (_dir, path) = config_file(json!({
        "brief": {"command": "sh", "args": ["-c", INIT_LIST_EXIT]},
    }));
    let mut child = Command::new(BIN)
        .args(["host", "--config", &path, "--watch"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = read_all(child.stderr.take().unwrap());
    let (lines, seen) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    // The server may exit before the first catalog is printed: its readiness shows in
    // the first print or as a transition, and a reconnection follows it.
    let mut printed = Vec::new();
    let mut ready = false;
    let reconnecting = loop {
        match seen.recv_timeout(LIMIT) {
            Ok(line) => {
                ready |= line == "  brief: ready" || line == "health brief: ready";
                let found = ready && line.starts_with("health brief: reconnecting");
                printed.push(line);
                if found {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = wait_bounded(&mut child, "mcpflow host --watch after SIGINT");
    assert!(
        reconnecting,
        "no reconnecting transition within {LIMIT:?}; printed {printed:?}; stderr {}",
        stderr.join().unwrap()
    );
    assert_eq!(exit.code(), Some(130), "{printed:?}");
}
