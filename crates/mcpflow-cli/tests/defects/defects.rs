//! The defects of the `mcpflow` command found by trying it on real servers, each
//! reproduced as it was reported. Every run is bounded by `common::LIMIT`.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{BIN, RawHttp, mcpflow, scripted_server, with_server};

const INIT_THEN_HANG: &str = r#"read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hung","version":"1"}}}'; exec sleep 30"#;

/// Defect 1: An `https://` URL is accepted: a refused connection, not a missing feature.
#[test]
fn https_urls_are_reachable_from_the_shipped_binary() {
    let run = mcpflow(&["inspect", "--url", "https://127.0.0.1:1/mcp"]);
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(
        !run.stderr.contains("rustls") && !run.stderr.contains("feature"),
        "{}",
        run.describe()
    );
    assert!(run.stderr.contains("127.0.0.1:1"), "{}", run.describe());
}

/// Defect 2: `inspect` shows what it could fetch when one list fails: an optional list
/// (templates) is a warning with exit 0; a failing tools list is reported with the
/// server's error code, and the other lists are still shown.
#[test]
fn inspect_shows_what_it_could_fetch() {
    let tools = r#""result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}"#;
    let resources = r#""result":{"resources":[{"uri":"mem://a","name":"a"}]}"#;
    let server = scripted_server(
        r#"{"tools":{},"resources":{}}"#,
        &[("tools/list", tools), ("resources/list", resources)],
    );
    let run = mcpflow(&with_server(&["inspect"], &server));
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(run.stdout.contains("echo()"), "{}", run.describe());
    assert!(run.stdout.contains("mem://a"), "{}", run.describe());
    assert!(
        run.stderr.contains("warning") && run.stderr.contains("resourceTemplates"),
        "{}",
        run.describe()
    );

    let server = scripted_server(
        r#"{"tools":{},"resources":{}}"#,
        &[("resources/list", resources)],
    );
    let run = mcpflow(&with_server(&["inspect"], &server));
    assert_eq!(
        run.code,
        4,
        "a JSON-RPC error to tools/list: {}",
        run.describe()
    );
    assert!(
        run.stdout.contains("server: scripted"),
        "{}",
        run.describe()
    );
    assert!(run.stdout.contains("mem://a"), "{}", run.describe());
    let run = mcpflow(&with_server(&["inspect", "--json"], &server));
    assert_eq!(
        run.json()["errors"]["tools"]["method"],
        "tools/list",
        "{}",
        run.describe()
    );
}

/// Defects 3 and 9: A timeout names `--timeout`, not library APIs, and the exit follows the
/// deadline instead of waiting out the child's 2 s shutdown grace. The latency is
/// printed (run with --nocapture), not asserted.
#[test]
fn a_timeout_names_the_flag_and_exits_soon_after_its_deadline() {
    let run = mcpflow(&[
        "call",
        "--timeout",
        "1",
        "slow",
        "--",
        "sh",
        "-c",
        INIT_THEN_HANG,
    ]);
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(run.stderr.contains("--timeout"), "{}", run.describe());
    assert!(
        !run.stderr.contains("RequestOptions") && !run.stderr.contains("SessionConfig"),
        "{}",
        run.describe()
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.describe());
    eprintln!(
        "call --timeout 1 against a hung server exited after {:?}",
        run.elapsed
    );
}

/// Defect 4: A server that writes non-JSON to stdout is named at once, with the line.
#[test]
fn non_json_stdout_is_named_as_the_cause() {
    let run = mcpflow(&[
        "inspect",
        "--",
        "sh",
        "-c",
        "echo 'hello I am not MCP'; exec sleep 30",
    ]);
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(
        run.stderr.contains("hello I am not MCP"),
        "{}",
        run.describe()
    );
    assert!(run.stderr.contains("stdout"), "{}", run.describe());
    eprintln!(
        "a server writing non-JSON was named after {:?}",
        run.elapsed
    );

    let run = mcpflow(&["inspect", "--", "sh", "-c", "yes garbage"]);
    assert_eq!(run.code, 3, "{}", run.describe());
    assert!(run.stderr.contains("`garbage`"), "{}", run.describe());

    // A banner before valid JSON is still tolerated.
    let banner = r#"echo 'Starting server...'; read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"b","version":"1"}}}'; read -r line"#;
    let run = mcpflow(&["inspect", "--", "sh", "-c", banner]);
    assert_eq!(run.code, 0, "{}", run.describe());
}

/// Defect 5: HTTP failures are printed once, on one line, with no log prefix and no HTML.
#[test]
fn http_failures_are_one_line_each() {
    let run = mcpflow(&["inspect", "--url", "http://127.0.0.1:1/mcp"]);
    assert_eq!(run.code, 3, "{}", run.describe());
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.describe());
    assert!(!run.stderr.contains("WARN"), "{}", run.describe());

    let page = "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nContent-Length: 120\r\n\r\n<!DOCTYPE html>\n<html>\n<head><title>404</title></head>\n<body>\n<h1>Not Found</h1>\n<p>nothing here</p>\n</body>\n</html>\n\n\n\n";
    let web = RawHttp::start(page);
    let run = mcpflow(&["inspect", "--url", &web.url]);
    assert_eq!(run.code, 3, "{}", run.describe());
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.describe());
    assert!(run.stderr.contains("404"), "{}", run.describe());
    assert!(!run.stderr.contains("<html"), "{}", run.describe());
}

/// Defect 7: is in `cli.rs` (`unknown_tool_exits_four_and_is_json_under_json`); here the
/// other side: a JSON error under `--json` for a connection failure too.
#[test]
fn connection_failures_are_json_under_json() {
    let run = mcpflow(&["call", "--json", "x", "--url", "http://127.0.0.1:1/mcp"]);
    assert_eq!(run.code, 3, "{}", run.describe());
    let out = run.json();
    assert_eq!(out["error"]["code"], 3, "{}", run.describe());
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1:1")
    );
}

/// Defect 8: A malformed `--url` is a usage error (2) with a hint, said once.
#[test]
fn a_malformed_url_is_a_usage_error_with_a_hint() {
    let run = mcpflow(&["inspect", "--url", "notaurl"]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert_eq!(
        run.stderr.matches("notaurl").count(),
        2,
        "the URL and the hint: {}",
        run.describe()
    );
    let run = mcpflow(&["inspect", "--url", "127.0.0.1:3201/mcp"]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(
        run.stderr.contains("http://127.0.0.1:3201/mcp"),
        "{}",
        run.describe()
    );
}

/// Defect 10: `inspect` text: required parameters first, optional ones marked, first line of
/// descriptions (all with `--verbose`), templates with their mimeType.
#[test]
fn inspect_text_marks_optional_parameters_and_keeps_descriptions_short() {
    let tools = r#""result":{"tools":[{"name":"read_file","description":"Read a file.\nSecond line with details.","inputSchema":{"type":"object","properties":{"head":{"type":"number"},"path":{"type":"string"},"tail":{"type":"number"}},"required":["path"]}}]}"#;
    let templates = r#""result":{"resourceTemplates":[{"uriTemplate":"file:///{path}","name":"file","mimeType":"text/plain"}]}"#;
    let server = scripted_server(
        r#"{"tools":{},"resources":{}}"#,
        &[
            ("tools/list", tools),
            ("resources/list", r#""result":{"resources":[]}"#),
            ("resources/templates/list", templates),
        ],
    );
    let run = mcpflow(&with_server(&["inspect"], &server));
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(
        run.stdout
            .contains("read_file(path, head?, tail?) - Read a file.\n"),
        "{}",
        run.describe()
    );
    assert!(!run.stdout.contains("Second line"), "{}", run.describe());
    assert!(
        run.stdout.contains("file:///{path} [file] text/plain"),
        "{}",
        run.describe()
    );
    let run = mcpflow(&with_server(&["inspect", "--verbose"], &server));
    assert!(
        run.stdout.contains("Second line with details."),
        "{}",
        run.describe()
    );
}

/// Defect 11: A result without `content` is read as empty; a tool without `inputSchema` is
/// listed; a malformed tool is skipped with a warning, not fatal to the listing.
#[test]
fn lenient_reading_of_results_and_tool_lists() {
    let tools = r#""result":{"tools":[{"name":"bare"},{"name":5},{"name":"ok","inputSchema":{"type":"object"}}]}"#;
    let server = scripted_server(
        r#"{"tools":{}}"#,
        &[
            ("tools/list", tools),
            ("tools/call", r#""result":{"structuredContent":{"n":1}}"#),
        ],
    );
    let run = mcpflow(&with_server(&["call", "bare"], &server));
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(
        run.stdout.contains("0 content block(s)"),
        "{}",
        run.describe()
    );

    let run = mcpflow(&with_server(&["list", "tools"], &server));
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(
        run.stdout.contains("bare()") && run.stdout.contains("ok()"),
        "{}",
        run.describe()
    );
    assert!(
        run.stderr.contains("warning") && run.stderr.contains("skipped tools entry 2"),
        "{}",
        run.describe()
    );
}

/// Defect 12: Without a server, the message names every way to give one; the usage line
/// agrees; an unknown flag gets no tip to put it after `--`.
#[test]
fn usage_text_names_every_way_to_give_a_server() {
    let run = mcpflow(&["inspect"]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(
        run.stderr.contains("--url") && run.stderr.contains("--config"),
        "{}",
        run.describe()
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.describe());

    let help = mcpflow(&["inspect", "--help"]);
    assert_eq!(help.code, 0, "{}", help.describe());
    assert!(
        help.stdout.contains("-- CMD... | --url URL"),
        "{}",
        help.describe()
    );
    assert!(
        help.stdout.contains("130"),
        "exit codes are listed: {}",
        help.describe()
    );

    let run = mcpflow(&["inspect", "--verbos", "--", BIN, "serve", "everything"]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(!run.stderr.contains("-- --verbos"), "{}", run.describe());
    assert!(
        run.stderr.contains("--verbose"),
        "a suggestion: {}",
        run.describe()
    );
}

/// A list, resource or prompt answer whose array is of the wrong type, or missing, is
/// no valid answer: exit 3 naming the member, not an empty list and exit 0.
#[test]
fn answers_without_their_array_are_refused_not_read_as_empty() {
    for (verb, method, reply, field) in [
        (
            &["list", "tools"][..],
            "tools/list",
            r#""result":{"tools":"hello"}"#,
            "tools",
        ),
        (
            &["list", "tools"][..],
            "tools/list",
            r#""result":{}"#,
            "tools",
        ),
        (
            &["read", "mem://a"][..],
            "resources/read",
            r#""result":{"contents":"x"}"#,
            "contents",
        ),
        (
            &["prompt", "p"][..],
            "prompts/get",
            r#""result":{"messages":"x"}"#,
            "messages",
        ),
    ] {
        let server = scripted_server(
            r#"{"tools":{},"resources":{},"prompts":{}}"#,
            &[(method, reply)],
        );
        let run = mcpflow(&with_server(verb, &server));
        assert_eq!(run.code, 3, "{method} answered {reply}: {}", run.describe());
        assert!(
            run.stderr.contains(&format!("`{field}` must be an array")),
            "{method} answered {reply}: {}",
            run.describe()
        );
    }
}

/// A server's text is shown, not obeyed: escape sequences in a tool result, a tool's
/// description and an error message reach the terminal as visible `\u{..}` escapes;
/// `--json` keeps them as JSON escapes of the same characters.
#[test]
fn control_characters_from_the_server_are_shown_escaped() {
    let server = scripted_server(
        r#"{"tools":{}}"#,
        &[
            (
                "tools/list",
                r#""result":{"tools":[{"name":"t","description":"hides\u001b[8m","inputSchema":{"type":"object"}}]}"#,
            ),
            (
                "tools/call",
                r#""result":{"content":[{"type":"text","text":"ok\u001b]0;pwned\u0007\u001b[2J\r"}]}"#,
            ),
            (
                "prompts/get",
                r#""error":{"code":-32000,"message":"bad\u001b[31m red"}"#,
            ),
        ],
    );
    let run = mcpflow(&with_server(&["call", "t"], &server));
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(
        !run.stdout.contains('\x1b') && !run.stdout.contains('\r'),
        "{}",
        run.describe()
    );
    assert!(
        run.stdout.contains(r"ok\u{1b}]0;pwned\u{7}\u{1b}[2J\u{d}"),
        "{}",
        run.describe()
    );

    let run = mcpflow(&with_server(&["list", "tools"], &server));
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(
        !run.stdout.contains('\x1b') && run.stdout.contains(r"hides\u{1b}[8m"),
        "{}",
        run.describe()
    );

    let run = mcpflow(&with_server(&["prompt", "p"], &server));
    assert_ne!(run.code, 0, "{}", run.describe());
    assert!(
        !run.stderr.contains('\x1b') && run.stderr.contains(r"bad\u{1b}[31m red"),
        "{}",
        run.describe()
    );

    let run = mcpflow(&with_server(&["call", "--json", "t"], &server));
    assert_eq!(run.code, 0, "{}", run.describe());
    let value: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        value["result"]["content"][0]["text"],
        "ok\u{1b}]0;pwned\u{7}\u{1b}[2J\r"
    );
}
