//! End-to-end tests of the `mcpflow` binary. Every child run is bounded.

#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;

use crate::common;

use common::{BIN, HttpServe, LIMIT, mcpflow, mcpflow_with, wait_bounded};

fn describe(run: &common::Run) -> String {
    run.describe()
}

#[test]
fn demo_exits_zero() {
    let run = mcpflow(&["demo"]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    assert!(run.stdout.contains("plugin_hello"), "{}", describe(&run));
    assert!(
        run.stdout.contains("observed the cancellation"),
        "{}",
        describe(&run)
    );
}

#[test]
fn call_with_progress_counts_progress_notifications() {
    let run = mcpflow(&[
        "call",
        "--json",
        "test_tool_with_progress",
        "{}",
        "--",
        BIN,
        "serve",
        "everything",
    ]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    let out: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let progress = out["notifications"]["notifications/progress"]
        .as_u64()
        .unwrap_or(0);
    assert!(progress >= 3, "{}", describe(&run));
    assert_ne!(
        out["result"]["isError"],
        serde_json::Value::Bool(true),
        "{}",
        describe(&run)
    );
    assert!(out["result"]["content"].is_array(), "{}", describe(&run));
}

#[test]
fn call_counts_log_notifications() {
    let run = mcpflow(&[
        "call",
        "--json",
        "test_tool_with_logging",
        "--",
        BIN,
        "serve",
        "everything",
    ]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    let out: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        out["notifications"]["notifications/message"],
        3,
        "{}",
        describe(&run)
    );
}

#[test]
fn call_answers_sampling_when_asked_to() {
    let run = mcpflow(&[
        "call",
        "--sampling-response",
        "forty-two",
        "test_sampling",
        r#"{"prompt": "six times seven?"}"#,
        "--",
        BIN,
        "serve",
        "everything",
    ]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    assert!(
        run.stdout.contains("LLM response: forty-two"),
        "{}",
        describe(&run)
    );
}

#[test]
fn tool_error_exits_one() {
    let run = mcpflow(&[
        "call",
        "test_error_handling",
        "--",
        BIN,
        "serve",
        "everything",
    ]);
    assert_eq!(run.code, 1, "{}", describe(&run));
    assert!(
        run.stdout.contains("intentionally returns an error"),
        "{}",
        describe(&run)
    );
}

#[test]
fn bad_args_json_exits_two() {
    let run = mcpflow(&[
        "call",
        "test_simple_text",
        "{not json",
        "--",
        BIN,
        "serve",
        "everything",
    ]);
    assert_eq!(run.code, 2, "{}", describe(&run));
    assert!(run.stderr.contains("ARGS_JSON"), "{}", describe(&run));
    let run = mcpflow(&[
        "call",
        "test_simple_text",
        "[1, 2]",
        "--",
        BIN,
        "serve",
        "everything",
    ]);
    assert_eq!(run.code, 2, "{}", describe(&run));
}

#[test]
fn missing_command_is_a_usage_error() {
    let run = mcpflow(&["call", "test_simple_text"]);
    assert_eq!(run.code, 2, "{}", describe(&run));
}

#[test]
fn command_that_does_not_exist_exits_three() {
    let run = mcpflow(&[
        "call",
        "test_simple_text",
        "--",
        "/nonexistent/mcpflow-no-such-server",
    ]);
    assert_eq!(run.code, 3, "{}", describe(&run));
    assert!(run.stderr.contains("could not start"), "{}", describe(&run));
}

#[test]
fn server_that_exits_early_exits_three() {
    let run = mcpflow(&[
        "call",
        "test_simple_text",
        "--",
        "sh",
        "-c",
        "echo oops >&2; exit 7",
    ]);
    assert_eq!(run.code, 3, "{}", describe(&run));
    assert!(run.stderr.contains("exit status: 7"), "{}", describe(&run));
}

/// A server that answers `initialize` and then stops reading, sent a call larger than
/// the pipe holds: when the call times out, the blocked write is given up and the
/// child is terminated, instead of the writer task being aborted after a long wait.
#[test]
fn a_server_that_stops_reading_is_given_up_when_the_call_times_out() {
    let initialized = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"stuck","version":"1"}}}"#;
    let script = format!("read -r line; printf '%s\\n' '{initialized}'; exec sleep 30");
    let args = format!(r#"{{"text":"{}"}}"#, "x".repeat(120_000));
    // The engine's warnings say what it did; the CLI shows them when RUST_LOG asks.
    let run = common::mcpflow_with(
        &[
            "call",
            "--timeout",
            "1",
            "echo",
            &args,
            "--",
            "sh",
            "-c",
            &script,
        ],
        None,
        &[("RUST_LOG", "warn")],
    );
    assert_eq!(run.code, 3, "{}", describe(&run));
    assert!(
        run.stderr.contains("abandoning the write"),
        "the writer gave up by itself: {}",
        describe(&run)
    );
    assert!(
        !run.stderr.contains("did not stop within"),
        "no task had to be aborted: {}",
        describe(&run)
    );
}

/// Defect 7: a JSON-RPC error answer (mcpflow's server answers an unknown tool with
/// -32602) exits 4, apart from "unreachable" (3); under `--json` it is a JSON error.
#[test]
fn unknown_tool_exits_four_and_is_json_under_json() {
    let run = mcpflow(&["call", "no_such_tool", "--", BIN, "serve", "everything"]);
    assert_eq!(run.code, 4, "{}", describe(&run));
    assert_eq!(
        run.stderr.lines().count(),
        1,
        "one line: {}",
        describe(&run)
    );
    assert!(run.stderr.contains("no_such_tool"), "{}", describe(&run));
    let run = mcpflow(&[
        "call",
        "--json",
        "no_such_tool",
        "--",
        BIN,
        "serve",
        "everything",
    ]);
    assert_eq!(run.code, 4, "{}", describe(&run));
    let out: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(out["error"]["code"], -32602, "{}", describe(&run));
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
}

#[test]
fn inspect_json_lists_everything() {
    let run = mcpflow(&["inspect", "--json", "--", BIN, "serve", "everything"]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    let out: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"test_simple_text"), "{}", describe(&run));
    assert!(
        tools.contains(&"json_schema_2020_12_tool"),
        "{}",
        describe(&run)
    );
    for tool in out["tools"].as_array().unwrap() {
        assert!(
            tool["description"].is_string(),
            "tool without description: {tool}"
        );
        assert!(
            tool["inputSchema"].is_object(),
            "tool without inputSchema: {tool}"
        );
    }
    let schema = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap();
    assert_eq!(
        schema["inputSchema"]["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["inputSchema"]["additionalProperties"], false);
    assert_eq!(
        out["prompts"].as_array().unwrap().len(),
        5,
        "{}",
        describe(&run)
    );
    assert_eq!(
        out["resources"].as_array().unwrap().len(),
        3,
        "{}",
        describe(&run)
    );
    assert_eq!(
        out["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
    assert!(out["serverInfo"]["name"].is_string());
    assert!(out["protocolVersion"].is_string());
}

#[test]
fn inspect_text_output() {
    let run = mcpflow(&["inspect", "--", BIN, "serve", "everything"]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    assert!(
        run.stdout.contains("test_simple_text"),
        "{}",
        describe(&run)
    );
    assert!(
        run.stdout.contains("test://template/{id}/data"),
        "{}",
        describe(&run)
    );
}

/// The conformance `json-schema-2020-12` scenario: the tool's inputSchema arrives over
/// stdio exactly as written, `$schema`, `$defs`, `$ref` and `additionalProperties: false`
/// included.
#[test]
fn json_schema_2020_12_tool_keeps_its_schema_verbatim() {
    let run = mcpflow(&["inspect", "--json", "--", BIN, "serve", "everything"]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    let out: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let tool = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .expect("the tool is listed");
    let expected = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    });
    assert_eq!(tool["inputSchema"], expected);
}

#[test]
fn serve_http_takes_its_limits_from_the_command_line() {
    let server = HttpServe::start(&["--max-body-bytes", "1K", "--max-sessions", "5"]);
    let small = mcpflow(&["call", "--url", &server.url, "test_simple_text"]);
    assert_eq!(small.code, 0, "{}", describe(&small));
    let large = format!(r#"{{"text":"{}"}}"#, "x".repeat(2048));
    let run = mcpflow(&["call", "--url", &server.url, "test_simple_text", &large]);
    assert_eq!(run.code, 3, "{}", describe(&run));
    assert!(
        run.stderr.contains("413") && run.stderr.contains("max_body_bytes"),
        "a body over --max-body-bytes is refused, and the message names the limit: {}",
        describe(&run)
    );

    let run = mcpflow(&["serve", "everything", "--max-sessions", "5"]);
    assert_eq!(run.code, 2, "limits need --http: {}", describe(&run));
    let run = mcpflow(&[
        "serve",
        "everything",
        "--http",
        "127.0.0.1:0",
        "--max-body-bytes",
        "lots",
    ]);
    assert_eq!(run.code, 2, "{}", describe(&run));
    assert!(
        run.stderr.contains("not a size in bytes"),
        "{}",
        describe(&run)
    );
}

#[test]
fn inspect_and_call_reach_an_http_server_by_url() {
    let server = HttpServe::start(&[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    assert!(server.url.ends_with("/mcp"), "{}", server.url);

    let run = mcpflow(&["inspect", "--json", "--url", &server.url]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    let out: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(out["protocolVersion"], "2025-11-25", "{}", describe(&run));
    assert!(
        run.stdout.contains("test_tool_with_progress"),
        "{}",
        describe(&run)
    );

    let run = mcpflow(&[
        "call",
        "--json",
        "--url",
        &server.url,
        "test_tool_with_progress",
        "{}",
    ]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    let out: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        out["notifications"]["notifications/progress"],
        3,
        "progress travels on the call's event stream: {}",
        describe(&run)
    );

    // Sampling during a call: the server's request rides the call's stream, the answer
    // goes back as a POST.
    let run = mcpflow(&[
        "call",
        "--json",
        "--sampling-response",
        "over http",
        "--url",
        &server.url,
        "test_sampling",
        r#"{"prompt":"hi"}"#,
    ]);
    assert_eq!(run.code, 0, "{}", describe(&run));
    assert!(run.stdout.contains("over http"), "{}", describe(&run));
}

#[test]
fn an_unreachable_url_exits_three_with_the_cause() {
    // Port 1 on loopback: nothing listens there.
    let run = mcpflow(&[
        "call",
        "--url",
        "http://127.0.0.1:1/mcp",
        "test_simple_text",
    ]);
    assert_eq!(run.code, 3, "{}", describe(&run));
    assert!(run.stderr.contains("127.0.0.1:1"), "{}", describe(&run));
    // A malformed URL is a usage error (defect 8).
    let run = mcpflow(&["call", "--url", "not a url", "test_simple_text"]);
    assert_eq!(run.code, 2, "{}", describe(&run));
    assert!(run.stderr.contains("not a url"), "{}", describe(&run));
    let run = mcpflow(&["call", "--url", "http://127.0.0.1:1/mcp", "x", "--", "cmd"]);
    assert_eq!(
        run.code,
        2,
        "--url and a command conflict: {}",
        describe(&run)
    );
}

/// `mcpflow serve` with its stdin and stdout given as `kind` (each its own pair, as
/// clients make them), driven line by line: every answer arrives, and the server ends
/// when its input does. Each read is bounded by a timeout.
fn serve_over(kind: &str) {
    use std::io::{BufRead, BufReader, Write};
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    let (mut to_server, server_in, server_out, from_server): (
        Box<dyn Write>,
        OwnedFd,
        OwnedFd,
        Box<dyn Read + Send>,
    ) = if kind == "sockets" {
        let (ours_in, theirs_in) = UnixStream::pair().unwrap();
        let (ours_out, theirs_out) = UnixStream::pair().unwrap();
        ours_out.set_read_timeout(Some(LIMIT)).unwrap();
        (
            Box::new(ours_in),
            theirs_in.into(),
            theirs_out.into(),
            Box::new(ours_out),
        )
    } else {
        let (their_in, our_in) = std::io::pipe().unwrap();
        let (our_out, their_out) = std::io::pipe().unwrap();
        (
            Box::new(our_in),
            their_in.into(),
            their_out.into(),
            Box::new(our_out),
        )
    };
    let mut child = Command::new(BIN)
        .args(["serve", "everything"])
        .stdin(Stdio::from(server_in))
        .stdout(Stdio::from(server_out))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Answers are read on a thread, so a silent server fails the test instead of
    // blocking it.
    let (lines_tx, lines) = std::sync::mpsc::channel();
    let reader = thread::spawn(move || {
        for line in BufReader::new(from_server).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let ask = |to_server: &mut Box<dyn Write>, request: &str, id: u64| -> String {
        writeln!(to_server, "{request}").unwrap();
        to_server.flush().unwrap();
        loop {
            let line = lines
                .recv_timeout(LIMIT)
                .unwrap_or_else(|_| panic!("no answer to {request} over {kind}"));
            if line.contains(&format!(r#""id":{id}"#)) {
                return line;
            }
        }
    };
    let init = ask(
        &mut to_server,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        1,
    );
    assert!(init.contains("protocolVersion"), "{init}");
    writeln!(
        to_server,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    for id in 2..50 {
        let tools = ask(
            &mut to_server,
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#),
            id,
        );
        assert!(tools.contains(r#""tools""#), "{tools}");
    }
    drop(to_server);
    let status = wait_bounded(
        &mut child,
        &format!("the server, once its input over {kind} ended,"),
    );
    assert!(status.success(), "{status} over {kind}");
    reader.join().unwrap();
}

#[test]
fn serve_answers_over_sockets_as_node_clients_give_them() {
    serve_over("sockets");
}

#[test]
fn serve_answers_over_pipes() {
    serve_over("pipes");
}

/// `--state-key-env` names a variable of base64 secrets; anything else is a usage error
/// naming the flag, and a good ring serves.
#[test]
fn serve_state_key_env_takes_base64_secrets() {
    let serve = [
        "serve",
        "everything",
        "--http",
        "127.0.0.1:0",
        "--state-key-env",
        "MCPFLOW_KEYS",
    ];
    let unset = mcpflow_with(&serve, None, &[]);
    assert_eq!(unset.code, 2, "{}", describe(&unset));
    assert!(
        unset
            .stderr
            .contains("--state-key-env MCPFLOW_KEYS: the variable is not set"),
        "{}",
        describe(&unset)
    );
    let bad = mcpflow_with(&serve, None, &[("MCPFLOW_KEYS", "not base64!")]);
    assert_eq!(bad.code, 2, "{}", describe(&bad));
    assert!(bad.stderr.contains("not base64"), "{}", describe(&bad));
    let stdio = mcpflow_with(
        &["serve", "everything", "--state-key-env", "MCPFLOW_KEYS"],
        None,
        &[],
    );
    assert_eq!(stdio.code, 2, "only with --http: {}", describe(&stdio));
    // 24 bytes each, base64: the first seals, both open.
    let ring = "c2VjcmV0LW9mLXRoZS1mbGVldC0wMDAx,b2xkLXNlY3JldC1vZi10aGUtZmxlZXQx";
    let served = HttpServe::start_with(
        &["--state-key-env", "MCPFLOW_KEYS"],
        &[("MCPFLOW_KEYS", ring)],
    );
    let run = mcpflow(&["call", "test_simple_text", "--url", &served.url]);
    assert_eq!(run.code, 0, "{}", describe(&run));
}
