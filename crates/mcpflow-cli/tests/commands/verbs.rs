//! Each verb against `mcpflow serve everything`, over stdio and over HTTP, and the
//! ways of naming a server and giving arguments.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{BIN, HttpServe, RawHttp, mcpflow, mcpflow_with};

const EVERYTHING: [&str; 4] = ["--", BIN, "serve", "everything"];

fn stdio(verb: &[&str]) -> Vec<String> {
    verb.iter()
        .chain(EVERYTHING.iter())
        .map(|s| (*s).to_owned())
        .collect()
}

fn run(args: &[String]) -> common::Run {
    mcpflow(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The same verbs over stdio and over HTTP.
fn both(verb: &[&str], check: impl Fn(&common::Run)) {
    check(&run(&stdio(verb)));
    let server = HttpServe::start(&[]);
    let mut args: Vec<String> = verb.iter().map(|s| (*s).to_owned()).collect();
    args.extend(["--url".to_owned(), server.url.clone()]);
    check(&run(&args));
}

#[test]
fn list_each_kind() {
    both(&["list", "tools", "--json"], |r| {
        assert_eq!(r.code, 0, "{}", r.describe());
        assert!(
            r.json()["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "test_simple_text")
        );
    });
    both(&["list", "prompts"], |r| {
        assert_eq!(r.code, 0, "{}", r.describe());
        assert!(
            r.stdout.contains("test_prompt_with_arguments(arg1, arg2)"),
            "{}",
            r.describe()
        );
    });
    both(&["list", "resources", "--json"], |r| {
        assert_eq!(
            r.json()["resources"].as_array().unwrap().len(),
            3,
            "{}",
            r.describe()
        );
    });
    both(&["list", "templates"], |r| {
        assert!(
            r.stdout.contains("test://template/{id}/data"),
            "{}",
            r.describe()
        );
    });
}

#[test]
fn read_a_resource_as_text_json_and_into_a_file() {
    both(&["read", "test://static-text"], |r| {
        assert_eq!(r.code, 0, "{}", r.describe());
        assert!(
            r.stdout.contains("[resource test://static-text"),
            "{}",
            r.describe()
        );
    });
    let r = run(&stdio(&["read", "--json", "test://static-binary"]));
    let blob = r.json()["contents"][0]["blob"].as_str().unwrap().to_owned();
    let dir = std::env::temp_dir().join(format!("mcpflow-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("blob.bin");
    let r = run(&stdio(&[
        "read",
        "--out",
        file.to_str().unwrap(),
        "test://static-binary",
    ]));
    assert_eq!(r.code, 0, "{}", r.describe());
    let written = std::fs::read(&file).unwrap();
    assert!(
        !written.is_empty() && written.len() <= blob.len(),
        "{} bytes from {} base64",
        written.len(),
        blob.len()
    );
    let r = run(&stdio(&["read", "test://no-such-resource"]));
    assert_eq!(r.code, 4, "{}", r.describe());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn prompt_complete_and_ping() {
    both(
        &["prompt", "test_prompt_with_arguments", "arg1=a", "arg2=b"],
        |r| {
            assert_eq!(r.code, 0, "{}", r.describe());
            assert!(r.stdout.contains("arg1='a', arg2='b'"), "{}", r.describe());
        },
    );
    both(
        &[
            "complete",
            "prompt:test_prompt_with_arguments",
            "arg1=par",
            "--json",
        ],
        |r| {
            assert_eq!(
                r.json()["completion"]["values"],
                serde_json::json!(["paris", "park", "party"]),
                "{}",
                r.describe()
            );
        },
    );
    both(&["ping"], |r| {
        assert_eq!(r.code, 0, "{}", r.describe());
        assert!(r.stdout.starts_with("pong from"), "{}", r.describe());
    });
    let r = run(&stdio(&["complete", "nope", "a=b"]));
    assert_eq!(r.code, 2, "{}", r.describe());
}

#[test]
fn arguments_as_json_file_stdin_and_pairs() {
    let expect_echo = |r: &common::Run| {
        assert_eq!(r.code, 0, "{}", r.describe());
        assert!(r.stdout.contains("LLM response: typed"), "{}", r.describe());
    };
    let sampling = ["call", "--sampling-response", "typed", "test_sampling"];
    expect_echo(&run(&stdio(
        &[&sampling[..], &[r#"{"prompt":"p"}"#]].concat(),
    )));
    expect_echo(&run(&stdio(&[&sampling[..], &["prompt=p"]].concat())));
    let file = std::env::temp_dir().join(format!("mcpflow-args-{}.json", std::process::id()));
    std::fs::write(&file, r#"{"prompt":"p"}"#).unwrap();
    let at = format!("@{}", file.display());
    expect_echo(&run(&stdio(&[&sampling[..], &[at.as_str()]].concat())));
    let _ = std::fs::remove_file(&file);
    let args: Vec<&str> = [&sampling[..], &["-"], &EVERYTHING[..]].concat();
    expect_echo(&mcpflow_with(&args, Some(br#"{"prompt":"p"}"#), &[]));
}

#[test]
fn binary_content_is_saved_with_out() {
    let dir = std::env::temp_dir().join(format!("mcpflow-out-{}", std::process::id()));
    let r = run(&stdio(&[
        "call",
        "--out",
        dir.to_str().unwrap(),
        "test_image_content",
    ]));
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(r.stdout.contains("saved to"), "{}", r.describe());
    let saved: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(saved.len(), 1, "{}", r.describe());
    let bytes = std::fs::read(saved[0].path()).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG"),
        "a PNG was decoded: {}",
        r.describe()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn capabilities_from_flags() {
    let r = run(&stdio(&[
        "call",
        "--elicitation-response",
        r#"{"username":"ann","email":"a@x"}"#,
        "test_elicitation",
    ]));
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(r.stdout.contains("accept"), "{}", r.describe());
    let r = run(&stdio(&[
        "call",
        "--elicitation-response",
        "decline",
        "test_elicitation",
    ]));
    assert!(r.stdout.contains("decline"), "{}", r.describe());
    let r = run(&stdio(&[
        "inspect",
        "--json",
        "--sampling-response",
        "x",
        "--root",
        ".",
    ]));
    assert_eq!(r.code, 0, "{}", r.describe());
    let r = run(&stdio(&[
        "call",
        "--elicitation-response",
        "[1]",
        "test_elicitation",
    ]));
    assert_eq!(r.code, 2, "{}", r.describe());
}

#[test]
fn env_and_cwd_for_the_child() {
    let dir = std::env::temp_dir();
    let script = r#"printf 'E=%s D=%s\n' "$FOO" "$(pwd)" >&2; exit 9"#;
    let r = mcpflow(&[
        "ping",
        "-e",
        "FOO=bar",
        "--cwd",
        dir.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(r.code, 3, "{}", r.describe());
    let canonical = std::fs::canonicalize(&dir).unwrap();
    assert!(r.stderr.contains("E=bar"), "{}", r.describe());
    assert!(
        r.stderr.contains(&format!("D={}", canonical.display())),
        "{}",
        r.describe()
    );
}

#[test]
fn env_clear_leaves_the_child_only_its_env() {
    let script = r#"printf 'P=%s F=%s\n' "${MCPFLOW_PARENT:-unset}" "$FOO" >&2; exit 9"#;
    let run = |clear: bool| {
        let mut args = vec!["ping", "-e", "FOO=bar"];
        if clear {
            args.push("--env-clear");
        }
        args.extend(["--", "sh", "-c", script]);
        // A variable of the command's own environment, which the child inherits by default.
        let r = mcpflow_with(&args, None, &[("MCPFLOW_PARENT", "set")]);
        assert_eq!(r.code, 3, "{}", r.describe());
        r
    };
    let inherited = run(false);
    assert!(
        inherited.stderr.contains("P=set F=bar"),
        "{}",
        inherited.describe()
    );
    let cleared = run(true);
    assert!(
        cleared.stderr.contains("P=unset F=bar"),
        "{}",
        cleared.describe()
    );
}

#[test]
fn a_server_from_an_mcp_servers_file() {
    let server = HttpServe::start(&[]);
    let file = std::env::temp_dir().join(format!("mcpflow-config-{}.json", std::process::id()));
    let config = serde_json::json!({
        "mcpServers": {
            "local": { "command": BIN, "args": ["serve", "everything"] },
            "remote": { "type": "http", "url": server.url },
            "off": { "command": BIN, "disabled": true },
            "needs": { "command": BIN, "env": { "K": "${env:MCPFLOW_TEST_UNSET_VAR}" } }
        }
    });
    std::fs::write(&file, config.to_string()).unwrap();
    let path = file.to_str().unwrap();
    for name in ["local", "remote"] {
        let r = mcpflow(&["ping", "--config", path, "--server", name]);
        assert_eq!(r.code, 0, "{name}: {}", r.describe());
    }
    let r = mcpflow(&["ping", "--config", path, "--server", "nope"]);
    assert_eq!(r.code, 2, "{}", r.describe());
    assert!(
        r.stderr.contains("local, needs, off, remote"),
        "{}",
        r.describe()
    );
    let r = mcpflow(&["ping", "--config", path, "--server", "off"]);
    assert!(r.stderr.contains("disabled"), "{}", r.describe());
    let r = mcpflow(&["ping", "--config", path, "--server", "needs"]);
    assert!(
        r.stderr.contains("MCPFLOW_TEST_UNSET_VAR") && r.stderr.contains("env.K"),
        "{}",
        r.describe()
    );
    let _ = std::fs::remove_file(file);
}

#[test]
fn headers_and_a_bearer_token_from_the_environment() {
    let web = RawHttp::start(
        "HTTP/1.1 401 Unauthorized\r\nContent-Length: 6\r\nConnection: close\r\n\r\nno key",
    );
    let r = mcpflow_with(
        &[
            "ping",
            "--url",
            &web.url,
            "--header",
            "X-Api-Key: k1",
            "--bearer-env",
            "MCPFLOW_TEST_TOKEN",
        ],
        None,
        &[("MCPFLOW_TEST_TOKEN", "t0k")],
    );
    assert_eq!(r.code, 3, "{}", r.describe());
    assert!(r.stderr.contains("401"), "{}", r.describe());
    let head = web
        .heads
        .recv_timeout(common::LIMIT)
        .expect("the server got a request")
        .to_ascii_lowercase();
    assert!(head.contains("x-api-key: k1"), "{head}");
    assert!(head.contains("authorization: bearer t0k"), "{head}");
    let r = mcpflow(&[
        "ping",
        "--url",
        &web.url,
        "--bearer-env",
        "MCPFLOW_TEST_UNSET_VAR",
    ]);
    assert_eq!(r.code, 2, "{}", r.describe());
    let r = mcpflow(&["ping", "--url", &web.url, "--header", "no colon"]);
    assert_eq!(r.code, 2, "{}", r.describe());
}

#[test]
fn serve_http_access_rules_and_stateless_mode() {
    let server = HttpServe::start(&["--stateless"]);
    let r = mcpflow(&["call", "--url", &server.url, "test_simple_text"]);
    assert_eq!(r.code, 0, "stateless: {}", r.describe());

    let r = mcpflow(&["serve", "everything", "--allow-host", "example.com"]);
    assert_eq!(r.code, 2, "access rules need --http: {}", r.describe());

    // A Host outside the allowed list is refused, and the refusal names the flag.
    let server = HttpServe::start(&["--allow-host", "mcp.example"]);
    let r = mcpflow(&[
        "ping",
        "--url",
        &server.url.replace("127.0.0.1", "localhost"),
    ]);
    assert_eq!(r.code, 0, "loopback names stay allowed: {}", r.describe());
    let r = mcpflow(&[
        "ping",
        "--url",
        &server.url,
        "--header",
        "Host: other.example",
    ]);
    assert_eq!(r.code, 3, "{}", r.describe());
    assert!(r.stderr.contains("--allow-host"), "{}", r.describe());
}
