//! Defects found by running `mcpflow` against real servers, real clients and a real
//! authorization server, each reproduced as it was reported. Every run is bounded by
//! `common::LIMIT`.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{BIN, mcpflow};

/// Whether any process of process group `pgid` is left.
fn group_alive(pgid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", "--", &format!("-{pgid}")])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Wait, bounded, until no process of group `pgid` is left (the processes a group kill
/// ended are reaped by init a moment later).
fn wait_group_gone(pgid: u32, what: &str) {
    let started = Instant::now();
    while group_alive(pgid) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what}: the server's process group {pgid} outlived mcpflow"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A server that serves, then keeps running after its stdin closes and ignores
/// `SIGTERM`, as servers with timers or background threads do; it writes its process
/// group id to `pid_file`.
fn stubborn_server(pid_file: &std::path::Path) -> Vec<String> {
    let script = format!(
        "trap '' TERM; echo $$ > {}; {BIN} serve everything; while :; do sleep 1; done",
        pid_file.display()
    );
    vec!["sh".to_owned(), "-c".to_owned(), script]
}

/// Field defects 1 and 7: no server process outlives `call`, `ping`, `inspect` or
/// `list`, whatever it does once its stdin closes, and a successful run writes nothing
/// to stderr (no log line about the shutdown).
#[test]
fn a_stubborn_server_never_outlives_the_command_and_stderr_stays_clean() {
    let dir = std::env::temp_dir().join(format!("mcpflow-stubborn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let verbs: [&[&str]; 4] = [
        &["call", "test_simple_text"],
        &["ping"],
        &["inspect"],
        &["list", "tools"],
    ];
    for (i, verb) in verbs.iter().enumerate() {
        let pid_file = dir.join(format!("group-{i}"));
        let server = stubborn_server(&pid_file);
        let mut args = verb.to_vec();
        args.push("--");
        args.extend(server.iter().map(String::as_str));
        let run = mcpflow(&args);
        assert_eq!(run.code, 0, "{}", run.describe());
        assert_eq!(
            run.stderr,
            "",
            "stderr of a successful run: {}",
            run.describe()
        );
        let pgid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        wait_group_gone(pgid, &format!("mcpflow {}", verb.join(" ")));
        eprintln!(
            "mcpflow {} against a stubborn server: {:?}",
            verb.join(" "),
            run.elapsed
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Field defect 19: a mistyped verb gets a suggestion and the help that exists.
#[test]
fn a_mistyped_verb_gets_a_suggestion() {
    let run = mcpflow(&["inpsect", "--url", "http://127.0.0.1:1/mcp"]);
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(
        run.stderr.contains("did you mean `inspect`")
            && run.stderr.contains("`mcpflow --help`")
            && !run.stderr.contains("inpsect --help"),
        "{}",
        run.describe()
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.describe());
}

/// Field defect 21: `read` of a blob without `--out` names the flag as `read` takes it
/// (a file), not as `call` does (a directory).
#[test]
fn read_of_a_blob_names_out_file() {
    let run = mcpflow(&[
        "read",
        "test://static-binary",
        "--",
        BIN,
        "serve",
        "everything",
    ]);
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(
        run.stdout.contains("--out FILE") && !run.stdout.contains("--out DIR"),
        "{}",
        run.describe()
    );
}

/// A server that takes the connection and never sends response headers: the command
/// fails at `--timeout` with exit 3, in every era, although OAuth is on for any URL
/// and a first request may wait longer for a user who is signing in (only once the
/// sign-in URL is shown).
#[test]
fn a_url_that_never_answers_fails_at_the_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    // Holds every connection open, unanswered, for the rest of the test binary.
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    for era in ["handshake", "per-request", "auto"] {
        let run = mcpflow(&["ping", "--timeout", "2", "--era", era, "--url", &url]);
        assert_eq!(run.code, 3, "--era {era}: {}", run.describe());
        assert!(
            run.stderr.contains("in 2s"),
            "--era {era}: the message names the timeout given: {}",
            run.describe()
        );
    }
}
