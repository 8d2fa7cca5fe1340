//! Transports: the child process's shutdown order and exit reporting, the in-memory
//! rendezvous.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::time::Duration;

use common::bounded;
use mcpflow::client::{Client, ConnectError, Era};
use mcpflow::protocol::CallToolResult;
use mcpflow::transport::{
    ChildProcess, FrameKind, FrameMeta, FrameReader, FrameWriter, InboundFrame, MemoryTransport,
    Transport,
};
use mcpflow::{CloseReason, SessionError, TransportError};

const INIT_REPLY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"sh","version":"0"}}}"#;

fn alive(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A server that ignores stdin closing and `SIGTERM` is killed by the last step of the
/// shutdown sequence, and `close` stays bounded.
#[tokio::test]
async fn close_escalates_to_sigkill_for_a_server_that_ignores_stdin_and_sigterm() {
    let script = format!(
        "trap '' TERM; read -r line; printf '%s\\n' '{INIT_REPLY}'; while :; do sleep 1; done"
    );
    let (client, pid) = connect_script(script, Some(Duration::from_millis(200)), None).await;
    assert!(alive(pid));
    bounded("close escalates and ends", client.close()).await;
    assert!(!alive(pid), "the server process must be gone after close");
}

fn group_alive(pgid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", "--", &format!("-{pgid}")])
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// `tools/call` of a tool `x` without arguments, bounded, the wait named `what`.
async fn call_x(client: &Client, what: &str) -> Result<CallToolResult, SessionError> {
    bounded(what, client.call_tool("x", serde_json::json!({}))).await
}

/// Until the process group `pgid` has no process left (a helper holding stdout got
/// `SIGTERM`).
async fn helper_terminated(pgid: u32) {
    common::until("the helper holding stdout is terminated", || {
        !group_alive(pgid)
    })
    .await;
}

/// A client of the `sh` script `script`, which answers the first line as `initialize`
/// (so the client does not probe with `server/discover`); the child's close grace and
/// the session's, when given.
async fn connect_script(
    script: String,
    child_grace: Option<Duration>,
    session_grace: Option<Duration>,
) -> (Client, u32) {
    let mut child = ChildProcess::builder("sh").arg("-c").arg(script);
    if let Some(grace) = child_grace {
        child = child.close_grace(grace);
    }
    let child = child.spawn().expect("spawn sh");
    let pid = child.pid().expect("pid");
    let mut client = Client::builder("t", "1").era(Era::Handshake);
    if let Some(grace) = session_grace {
        let config = mcpflow::SessionConfig::builder().close_grace(grace).build();
        client = client.session_config(config);
    }
    let client = bounded("connect", client.connect(child))
        .await
        .expect("connect");
    (client, pid)
}

/// A child grace of 300 ms per step, a session grace of 20 ms.
async fn connect_with_short_grace(script: String) -> (Client, u32) {
    let child = Some(Duration::from_millis(300));
    connect_script(script, child, Some(Duration::from_millis(20))).await
}

/// The session waits for the child's whole shutdown sequence, however short its own
/// close grace: a server that ignores its stdin closing gets `SIGTERM` and the time to
/// act on it, not an early `SIGKILL`.
#[tokio::test]
async fn close_waits_for_the_child_shutdown_sequence_however_short_the_session_grace() {
    let marker = std::env::temp_dir().join(format!("mcpflow-sigterm-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let script = format!(
        "trap 'echo term > {}; exit 0' TERM; read -r line; printf '%s\\n' '{INIT_REPLY}'; while :; do sleep 0.05; done",
        marker.display()
    );
    let (client, pid) = connect_with_short_grace(script).await;
    bounded("close", client.close()).await;
    assert!(
        marker.exists(),
        "the server got SIGTERM and ran its handler before close returned"
    );
    assert!(!alive(pid));
    let _ = std::fs::remove_file(&marker);
}

/// A server that ignores stdin closing and `SIGTERM`, and the processes it started, are
/// killed with its process group: none of them outlives `close`.
#[tokio::test]
async fn close_kills_the_whole_group_of_a_stubborn_server() {
    let script = format!(
        "trap '' TERM; read -r line; printf '%s\\n' '{INIT_REPLY}'; sleep 60 & while :; do sleep 1; done"
    );
    let (client, pid) = connect_with_short_grace(script).await;
    assert!(group_alive(pid));
    bounded("close", client.close()).await;
    assert!(!alive(pid), "the server was reaped");
    // Its children, killed with the group, are reaped by init in a moment.
    common::until("no process of the server's group is left", || {
        !group_alive(pid)
    })
    .await;
}

/// A server that exits when its stdin closes is reaped at the first step.
#[tokio::test]
async fn close_ends_a_well_behaved_server_by_closing_stdin() {
    let script = format!("read -r line; printf '%s\\n' '{INIT_REPLY}'; cat > /dev/null");
    let (client, pid) = connect_script(script, None, None).await;
    bounded("close", client.close()).await;
    assert!(!alive(pid));
}

/// A server that exits before answering `initialize` fails the handshake with its exit
/// status and stderr.
#[tokio::test]
async fn a_server_exiting_during_the_handshake_names_its_status_and_stderr() {
    let child = ChildProcess::builder("sh")
        .arg("-c")
        .arg("read -r line; echo 'config file missing: /etc/x.toml' >&2; exit 3")
        .spawn()
        .expect("spawn sh");
    let err = bounded("connect fails", Client::builder("t", "1").connect(child))
        .await
        .expect_err("server exits");
    let ConnectError::Initialize(SessionError::Closed {
        reason:
            CloseReason::Transport(TransportError::ProcessExited {
                status,
                stderr_tail,
            }),
        ..
    }) = &err
    else {
        panic!("unexpected: {err}");
    };
    assert!(status.contains("exit status: 3"), "{status}");
    assert!(stderr_tail.contains("config file missing"), "{stderr_tail}");
}

/// A server that answers the call (the answer ending in `end`), then exits, leaving a
/// helper that holds its stdout; and its pid.
async fn answering_then_leaving_a_helper(end: &str) -> (Client, u32) {
    let reply = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"last"}]}}"#;
    let script = format!(
        "read -r line; printf '%s\\n' '{INIT_REPLY}'; read -r line; read -r line; \
         printf '%s{end}' '{reply}'; sleep 60 & exit 0"
    );
    connect_script(script, None, None).await
}

/// A server that exits while a process it started still holds its stdout: the pending
/// call fails with the exit status at once, not at its timeout (no end of file comes),
/// and the process left behind is terminated with the group.
#[tokio::test]
async fn a_server_exiting_with_its_stdout_held_by_a_child_fails_the_call_with_its_status() {
    let script = format!(
        "read -r line; printf '%s\\n' '{INIT_REPLY}'; read -r line; read -r line; \
         echo 'leaving a helper behind' >&2; sleep 60 & exit 4"
    );
    let (client, pid) = connect_script(script, None, None).await;
    let err = call_x(
        &client,
        "the call fails when the server exits, its stdout still held open",
    )
    .await
    .expect_err("the server exited");
    let (status, stderr_tail) = common::process_exited(&err);
    assert!(status.contains("exit status: 4"), "{status}");
    assert!(status.contains("still holds its stdout"), "{status}");
    assert!(
        stderr_tail.contains("leaving a helper behind"),
        "{stderr_tail}"
    );
    helper_terminated(pid).await;
    bounded("close", client.close()).await;
}

/// The same server, its last answer written without a newline: the answer still
/// counts, as it would at end of file.
#[tokio::test]
async fn a_last_answer_without_newline_counts_when_stdout_is_held() {
    let (client, pid) = answering_then_leaving_a_helper("").await;
    let result = call_x(&client, "the call answered just before the exit")
        .await
        .expect("the last line is the answer");
    assert_eq!(result.content.len(), 1, "{result:?}");
    helper_terminated(pid).await;
    bounded("close", client.close()).await;
}

/// A launcher that starts the server as a process of its own and exits: with
/// `end_at_exit(false)` the connection lasts as long as stdout, so a call the server
/// answers after a second still gets its result.
#[tokio::test]
async fn a_launcher_that_exits_keeps_the_connection_when_asked() {
    // A background job's stdin is /dev/null unless given one: fd 3 is the pipe.
    let reply = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"late"}]}}"#;
    let script = format!(
        "exec 3<&0; ( read -r line; printf '%s\\n' '{INIT_REPLY}'; read -r line; read -r line; \
         sleep 1; printf '%s\\n' '{reply}'; cat > /dev/null ) <&3 & exit 0"
    );
    let child = ChildProcess::builder("sh")
        .arg("-c")
        .arg(script)
        .end_at_exit(false)
        .spawn()
        .expect("spawn sh");
    let client = Client::builder("t", "1").era(Era::Handshake);
    let client = bounded("connect", client.connect(child))
        .await
        .expect("connect");
    let result = call_x(&client, "the call after the launcher exited")
        .await
        .expect("the server answers");
    assert_eq!(result.content.len(), 1, "{result:?}");
    bounded("close", client.close()).await;
}

/// A close right after the answer, while the reader still waits to see whether the
/// exited server's stdout ends: closing stops the reader first, and the process left
/// holding stdout is terminated all the same.
#[tokio::test]
async fn a_close_during_the_exit_drain_ends_the_process_holding_stdout() {
    let (client, pid) = answering_then_leaving_a_helper("\\n").await;
    call_x(&client, "the call answered just before the exit")
        .await
        .expect("the answer");
    bounded("close", client.close()).await;
    helper_terminated(pid).await;
}

/// A server that started a helper holding its stdout and exits when its stdin closes:
/// the helper does not outlive the connection.
#[tokio::test]
async fn close_ends_a_helper_that_holds_the_servers_stdout() {
    let script = format!(
        "sleep 60 & read -r line; printf '%s\\n' '{INIT_REPLY}'; while read -r line; do :; done"
    );
    let (client, pid) = connect_script(script, None, None).await;
    assert!(group_alive(pid));
    bounded("close", client.close()).await;
    helper_terminated(pid).await;
}

/// A server still writing when the connection closes: what it writes once the reader
/// is gone is discarded, so it finishes, sees its stdin close and exits on its own
/// (it leaves a marker then), not at a signal after the close grace.
#[tokio::test]
async fn close_lets_a_server_still_writing_see_its_stdin_close() {
    let marker = std::env::temp_dir().join(format!("mcpflow-writing-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood"}}"#;
    // 2 MB of notifications after `notifications/initialized`, far more than a pipe holds.
    let script = format!(
        "read -r line; printf '%s\\n' '{INIT_REPLY}'; read -r line; \
         i=0; while [ $i -lt 20000 ]; do printf '%s\\n' '{note}'; i=$((i+1)); done; \
         while read -r line; do :; done; echo clean > {}",
        marker.display()
    );
    let (client, pid) = connect_script(script, None, None).await;
    bounded("close", client.close()).await;
    assert!(!alive(pid), "the server exited");
    assert!(
        marker.exists(),
        "the server was signalled: its writes blocked with nobody reading"
    );
    let _ = std::fs::remove_file(&marker);
}

/// `env_clear`: the child sees only what `env` gave it, and is still found in `PATH`.
#[tokio::test]
async fn env_clear_leaves_the_child_only_what_env_gives_it() {
    assert!(std::env::var_os("PATH").is_some(), "the test needs PATH");
    let report = r#"printf '{"jsonrpc":"2.0","method":"env","params":{"path":"%s","given":"%s"}}\n' "${PATH:-unset}" "${MCPFLOW_GIVEN:-unset}""#;
    for clear in [false, true] {
        let mut builder = ChildProcess::builder("sh")
            .arg("-c")
            .arg(report)
            .env("MCPFLOW_GIVEN", "yes");
        if clear {
            builder = builder.env_clear();
        }
        let (mut reader, _writer) = builder.spawn().expect("sh is found in PATH").split();
        let frame = bounded("the child's line", reader.read_frame()).await;
        let Ok(Some(InboundFrame::Message(bytes))) = frame else {
            panic!("no line: {frame:?}");
        };
        let line: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(line["params"]["given"], "yes", "{line}");
        // A shell with no PATH in its environment sets a default of its own, if any.
        let path = line["params"]["path"].as_str().unwrap().to_owned();
        let inherited = std::env::var("PATH").unwrap_or_default();
        assert_eq!(path == inherited, !clear, "clear {clear}: PATH {path}");
    }
}

/// A server that stops reading its stdin but keeps running: the call fails naming the
/// pipe it closed. (The server pings once its stdin is closed, so the answer's write
/// fails whenever the call was sent.)
#[tokio::test]
async fn a_server_closing_its_stdin_is_named_for_it() {
    let ping = r#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#;
    let script = format!(
        "read -r line; printf '%s\\n' '{INIT_REPLY}'; read -r line; exec 0<&-; \
         printf '%s\\n' '{ping}'; sleep 30"
    );
    let (client, _pid) = connect_script(script, Some(Duration::from_millis(200)), None).await;
    let err = call_x(&client, "the call fails when the server closed its stdin")
        .await
        .expect_err("the server reads no more");
    let (status, _) = common::process_exited(&err);
    assert!(status.contains("closed its stdin"), "{status}");
    // The message never says "exited" of a process that is still running.
    let message = err.to_string();
    assert!(
        message.contains("ended the connection (still running") && !message.contains("exited"),
        "{message}"
    );
    bounded("close", client.close()).await;
}

/// A program that does not exist is a spawn error naming the command.
#[tokio::test]
async fn spawning_a_missing_program_names_it() {
    let err = ChildProcess::builder("/nonexistent/mcp-server")
        .spawn()
        .expect_err("missing");
    assert!(err.to_string().contains("/nonexistent/mcp-server"), "{err}");
}

/// Capacity 0 is a rendezvous: a send completes only once the other side took it.
#[tokio::test]
async fn memory_capacity_zero_is_a_rendezvous() {
    let (a, b) = MemoryTransport::pair(0);
    let (_ar, mut aw) = a.split();
    let (mut br, _bw) = b.split();
    let meta = FrameMeta::new(FrameKind::Notification);
    let mut send = Box::pin(aw.write_frame(mcpflow::transport::Frame::new(&b"{}"[..]), &meta));
    assert!(
        futures_poll_once(&mut send).await.is_none(),
        "the send waits for the receiver"
    );
    let frame = bounded("receive", br.read_frame()).await.unwrap();
    assert!(matches!(frame, Some(InboundFrame::Message(m)) if m == b"{}"[..]));
    bounded("the send completes", send).await.unwrap();
}

async fn futures_poll_once<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut *f).poll(cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

/// Results of several MiB (written after their response's head, and handed out by the
/// line reader as its own buffer) arrive byte for byte over every transport, escapes
/// and multi-byte characters included, or with nothing to escape (the client's two ways
/// of decoding a large text in the buffer it read it into; `mcpflow-protocol`'s
/// `in_place.rs` checks that the buffer is kept). The connection keeps serving afterwards.
#[tokio::test]
async fn large_results_arrive_intact_over_every_transport() {
    use mcpflow::protocol::{CallToolResult, Tool};
    use mcpflow::server::Server;

    let text: String = "line \"one\"\\\n€ tab\t"
        .chars()
        .cycle()
        .take(3 * 1024 * 1024)
        .collect();
    let sent = text.clone();
    // About 1 MiB that JSON carries as it is, multi-byte characters included.
    let plain_text = "plain text, é 日本 🎉 ".repeat(40 * 1024);
    let plain_sent = plain_text.clone();
    let server = Server::builder("large", "1")
        .tool(
            Tool::new("large", "a large text", Tool::empty_input_schema()),
            move |_args, _cx| {
                let text = sent.clone();
                async move { Ok(CallToolResult::text(text)) }
            },
        )
        .tool(
            Tool::new(
                "plain",
                "a large text with nothing to escape",
                Tool::empty_input_schema(),
            ),
            move |_args, _cx| {
                let text = plain_sent.clone();
                async move { Ok(CallToolResult::text(text)) }
            },
        )
        .tool(
            Tool::new("small", "a small text", Tool::empty_input_schema()),
            |_args, _cx| async { Ok(CallToolResult::text("small")) },
        )
        .build();
    for kind in common::WITH_HTTP {
        let (client, _server) = common::connect(kind, &server, Client::builder("t", "1")).await;
        for round in 0..2 {
            let what = format!("a large result over {kind:?}, round {round}");
            let result = bounded(&what, client.call_tool("large", serde_json::json!({})))
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(
                result.content[0].as_text() == Some(text.as_str()),
                "{what}: text differs"
            );
            let plain_what =
                format!("a large result with nothing escaped over {kind:?}, round {round}");
            let plain = bounded(
                &plain_what,
                client.call_tool("plain", serde_json::json!({})),
            )
            .await
            .unwrap_or_else(|e| panic!("{plain_what}: {e}"));
            assert!(
                plain.content[0].as_text() == Some(plain_text.as_str()),
                "{what}: text with nothing escaped differs"
            );
            let small = bounded(
                "a small result after it",
                client.call_tool("small", serde_json::json!({})),
            )
            .await
            .unwrap();
            assert_eq!(small.content[0].as_text(), Some("small"), "over {kind:?}");
        }
        bounded("close", client.close()).await;
    }
}
