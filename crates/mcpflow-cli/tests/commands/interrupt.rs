//! Ctrl-C: a real SIGINT to `mcpflow call` while a tool runs on an HTTP server in this
//! test. The server observes the cancellation and the `DELETE` that ends the session,
//! and the command exits 130.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use common::{BIN, LIMIT, read_all};
use mcpflow::Server;
use mcpflow::http::server::HttpServer;
use mcpflow::protocol::{CallToolResult, Tool};
use tokio::sync::Notify;
use tokio::time::timeout;

fn sigint(pid: u32) {
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -INT {pid}");
}

/// A server whose `slow` tool tells when it starts and when it is cancelled.
fn slow_server(started: Arc<Notify>, cancelled: Arc<Notify>) -> Server {
    Server::builder("slow", "1")
        .tool(
            Tool::new("slow", "Waits until cancelled", Tool::empty_input_schema()),
            move |_args, cx| {
                let (started, cancelled) = (started.clone(), cancelled.clone());
                async move {
                    started.notify_one();
                    tokio::select! {
                        () = cx.cancellation().cancelled() => cancelled.notify_one(),
                        () = tokio::time::sleep(LIMIT * 2) => {}
                    }
                    Ok(CallToolResult::text("finished"))
                }
            },
        )
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_call_ends_the_session_and_exits_130() {
    let (started, cancelled) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let running = HttpServer::new(slow_server(started.clone(), cancelled.clone()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let mut child = Command::new(BIN)
        .args(["call", "slow", "--url", &running.url()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = read_all(child.stderr.take().unwrap());
    let _stdout = read_all(child.stdout.take().unwrap());
    timeout(LIMIT, started.notified())
        .await
        .expect("the slow tool starts");
    assert_eq!(
        running.session_count(),
        1,
        "one session while the tool runs"
    );

    let pressed = Instant::now();
    sigint(child.id());
    timeout(LIMIT, cancelled.notified())
        .await
        .expect("the server observes notifications/cancelled after Ctrl-C");
    let status = tokio::task::spawn_blocking(move || {
        common::wait_bounded(&mut child, "`mcpflow call` after Ctrl-C")
    })
    .await
    .unwrap();
    let exited = pressed.elapsed();
    let stderr = stderr.join().unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(
        running.session_count(),
        0,
        "the session was ended by DELETE before the command exited: {stderr}"
    );
    eprintln!("Ctrl-C to exit: {exited:?}");
    running.shutdown().await;
}

/// Over stdio: the first Ctrl-C closes the child's input and the command exits 130;
/// a second one right after also ends it with 130, at once.
#[test]
fn ctrl_c_over_stdio_exits_130_once_or_twice() {
    use std::io::BufRead;
    for presses in [1, 2] {
        let mut child = Command::new(BIN)
            .args(["call", "slow_task", "--", BIN, "serve", "demo"])
            .env("RUST_LOG", "mcpflow::child=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _stdout = read_all(child.stdout.take().unwrap());
        let stderr = child.stderr.take().unwrap();
        let (lines_tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        // The child's debug log says when the server process is up (and Ctrl-C is
        // taken over before that).
        loop {
            let line = lines
                .recv_timeout(LIMIT)
                .expect("`mcpflow call` starts the server process");
            if line.contains("started server process") {
                break;
            }
        }
        for _ in 0..presses {
            sigint(child.id());
        }
        let status = common::wait_bounded(&mut child, "`mcpflow call` over stdio after Ctrl-C");
        assert_eq!(status.code(), Some(130), "{presses} Ctrl-C");
    }
}
