//! `mcpflow host` and `mcpflow call --config FILE NAME`: every server of an `mcpServers`
//! file behind one tool host (mcpflow's own servers as child processes, and a server
//! that cannot start), its merged catalog and health, calls by catalog name, and
//! `--watch` printing a health transition until a real SIGINT.

#![allow(clippy::unwrap_used)]

use crate::common;

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

/// Field defects 13 and 14: `call --config FILE server__tool` starts only that server
/// (another entry with an unset variable, or one that would be slow to start, does not
/// matter), and is the same call as with `--server`: the footer, the logs and
/// notifications under `--json`, and the client flags.
#[test]
fn call_by_catalog_name_starts_only_its_server_and_is_a_full_call() {
    let marker = std::env::temp_dir().join(format!("mcpflow-started-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let (_dir, path) = config_file(json!({
        "everything": serve("everything"),
        "unset": {"command": "${env:MCPFLOW_TEST_NEVER_SET}"},
        "other": {"command": "sh", "args": ["-c", format!("touch {}; exec sleep 30", marker.display())]},
    }));
    let run = mcpflow(&[
        "call",
        "--config",
        &path,
        "--sampling-response",
        "a sampled answer",
        "everything__test_sampling",
        "prompt=hi",
    ]);
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(
        run.stdout.contains("a sampled answer"),
        "{}",
        run.describe()
    );
    assert!(
        run.stdout.contains("-- ok;"),
        "the footer: {}",
        run.describe()
    );
    assert!(!marker.exists(), "the other server was started");

    let run = mcpflow(&[
        "call",
        "--config",
        &path,
        "--json",
        "everything__test_tool_with_logging",
    ]);
    assert_eq!(run.code, 0, "{}", run.describe());
    let out = run.json();
    assert!(
        out["logs"].as_array().is_some_and(|l| !l.is_empty()),
        "{}",
        run.describe()
    );
    assert!(out["notifications"].is_object(), "{}", run.describe());

    // The host runs the others; the entry that cannot be used fails on its own.
    let run = mcpflow(&["host", "--config", &path, "--json", "--timeout", "2"]);
    assert_eq!(run.code, 3, "{}", run.describe());
    let out = run.json();
    assert_eq!(out["servers"]["everything"]["state"], "ready", "{out}");
    assert_eq!(out["servers"]["unset"]["state"], "failed", "{out}");
    assert!(
        out["servers"]["unset"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("MCPFLOW_TEST_NEVER_SET")),
        "{out}"
    );

    let run = mcpflow(&["call", "--config", &path, "unset__anything"]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(
        run.stderr.contains("MCPFLOW_TEST_NEVER_SET"),
        "the unset variable is named: {}",
        run.describe()
    );
    let _ = std::fs::remove_file(&marker);
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
        2,
        "a remote name is not a catalog name, and no server answered: {}",
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

/// Field defects 2 and 15: `host --watch --json` sees an HTTP server die within seconds
/// and sees it return, each health line with a `state`; the time each took is printed.
#[test]
fn watch_sees_an_http_server_die_and_return() {
    let server = common::HttpServe::start(&[]);
    let url = server.url.clone();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let (_dir, path) = config_file(json!({ "web": {"type": "http", "url": url} }));
    let mut child = Command::new(BIN)
        .args(["host", "--config", &path, "--watch", "--json"])
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
    let mut printed = Vec::new();
    let next_state = |printed: &mut Vec<String>| -> Option<String> {
        loop {
            let line = seen.recv_timeout(LIMIT).ok()?;
            printed.push(line.clone());
            let value: serde_json::Value = serde_json::from_str(&line).ok()?;
            if let Some(state) = value["servers"]["web"]["state"].as_str() {
                return Some(state.to_owned());
            }
            if value.get("health").is_some() {
                assert!(value["health"]["state"].is_string(), "{line}");
                return value["health"]["state"].as_str().map(str::to_owned);
            }
        }
    };
    assert_eq!(
        next_state(&mut printed).as_deref(),
        Some("ready"),
        "{printed:?}"
    );
    drop(server);
    let killed = std::time::Instant::now();
    let down = loop {
        match next_state(&mut printed) {
            Some(state) if state == "ready" => continue,
            other => break other,
        }
    };
    let seen_down = killed.elapsed();
    assert_eq!(down.as_deref(), Some("reconnecting"), "{printed:?}");
    let back = common::HttpServe::start_at(&addr, &[], &[]);
    let restarted = std::time::Instant::now();
    let up = loop {
        match next_state(&mut printed) {
            Some(state) if state == "reconnecting" => continue,
            other => break other,
        }
    };
    let seen_up = restarted.elapsed();
    assert_eq!(up.as_deref(), Some("ready"), "{printed:?}");
    eprintln!(
        "host --watch: a killed HTTP server seen in {seen_down:?}, its return in {seen_up:?}"
    );
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = wait_bounded(&mut child, "mcpflow host --watch after SIGINT");
    assert_eq!(
        exit.code(),
        Some(130),
        "{printed:?}; {}",
        stderr.join().unwrap()
    );
    drop(back);
}
