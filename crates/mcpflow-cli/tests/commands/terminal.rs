//! `mcpflow call` on a terminal: run under a pseudo-terminal (`script` from
//! util-linux), the recording shows the progress bar, left at its final state, and
//! left where it was when Ctrl-C interrupts the call.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use common::{BIN, read_all};

#[test]
fn call_on_a_terminal_draws_a_progress_bar_to_its_final_state() {
    let inner = format!("{BIN} call test_tool_with_progress -- {BIN} serve everything");
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &inner, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs the command under a pseudo-terminal");
    let recording = read_all(child.stdout.take().unwrap());
    let _stderr = read_all(child.stderr.take().unwrap());
    let status = common::wait_bounded(&mut child, "`mcpflow call` under a pseudo-terminal");
    let recording = recording.join().unwrap();
    assert!(status.success(), "{status}: {recording:?}");
    // Each redraw rewrites the line; the last one is the bar's final state.
    let last = recording
        .rfind("/100")
        .map(|at| &recording[at.saturating_sub(60)..(at + 40).min(recording.len())])
        .unwrap_or_else(|| panic!("no bar in the recording: {recording:?}"));
    assert!(
        last.contains("[==============================] 100/100 Completed step 100 of 100"),
        "the bar ends full, with the last message: {last:?}"
    );
    assert!(
        recording.contains("-- ok; 1 content block(s)"),
        "{recording:?}"
    );
}

/// Field defect 8: Ctrl-C during a call leaves the bar where the last report put it; it
/// is not redrawn as complete before `mcpflow: interrupted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_leaves_the_bar_where_it_was() {
    use mcpflow::Server;
    use mcpflow::http::server::HttpServer;
    use mcpflow::protocol::{CallToolResult, Tool};
    use tokio::sync::Notify;

    let reported = Arc::new(Notify::new());
    let signal = reported.clone();
    let server = Server::builder("stuck", "1")
        .tool(
            Tool::new(
                "stuck",
                "Reports 3 of 20, then waits",
                Tool::empty_input_schema(),
            ),
            move |_args, cx| {
                let signal = signal.clone();
                async move {
                    let _ = cx.progress(3.0, Some(20.0), Some("step 3")).await;
                    signal.notify_one();
                    cx.cancellation().cancelled().await;
                    Ok(CallToolResult::text("cancelled"))
                }
            },
        )
        .build();
    let running = HttpServer::new(server).bind("127.0.0.1:0").await.unwrap();
    let pid_file = std::env::temp_dir().join(format!("mcpflow-bar-{}", std::process::id()));
    // `exec`: the pid written is mcpflow's, for the SIGINT.
    let inner = format!(
        "echo $$ > {}; exec {BIN} call stuck --url {}",
        pid_file.display(),
        running.url()
    );
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &inner, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs the command under a pseudo-terminal");
    let recording = Recording::start(child.stdout.take().unwrap());
    let _stderr = read_all(child.stderr.take().unwrap());
    tokio::time::timeout(common::LIMIT, reported.notified())
        .await
        .expect("the tool reports its progress");
    // The report has left the server; the interrupt waits until the bar shows it.
    tokio::task::block_in_place(|| recording.wait_for(" 3/20"));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let _ = std::fs::remove_file(&pid_file);
    let killed = Command::new("kill")
        .args(["-INT", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || {
        common::wait_bounded(
            &mut child,
            "`mcpflow call` under a pseudo-terminal after Ctrl-C",
        )
    })
    .await
    .unwrap();
    let recording = recording.finish();
    assert_eq!(status.code(), Some(130), "{recording:?}");
    let last = recording
        .rfind("/20")
        .map(|at| &recording[at.saturating_sub(10)..(at + 3).min(recording.len())])
        .unwrap_or_else(|| panic!("no bar in the recording: {recording:?}"));
    assert!(
        last.contains(" 3/20"),
        "the bar stays at 3 of 20: {last:?} in {recording:?}"
    );
    running.shutdown().await;
}

/// What a pseudo-terminal shows, read as it comes, so that a test can wait for a
/// particular drawing before it acts.
struct Recording {
    shown: Arc<(Mutex<Vec<u8>>, Condvar)>,
    reader: thread::JoinHandle<()>,
}

impl Recording {
    fn start(mut from: impl Read + Send + 'static) -> Recording {
        let shown = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let reader = thread::spawn({
            let shown = shown.clone();
            move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = from.read(&mut chunk) {
                    let (bytes, changed) = &*shown;
                    bytes.lock().unwrap().extend_from_slice(&chunk[..n]);
                    changed.notify_all();
                }
            }
        });
        Recording { shown, reader }
    }

    /// Wait, at most [`common::LIMIT`], until the terminal has shown `text`.
    fn wait_for(&self, text: &str) {
        let needle = text.as_bytes();
        let (bytes, changed) = &*self.shown;
        let (bytes, wait) = changed
            .wait_timeout_while(bytes.lock().unwrap(), common::LIMIT, |b| {
                !b.windows(needle.len()).any(|w| w == needle)
            })
            .unwrap();
        assert!(
            !wait.timed_out(),
            "the terminal did not show {text:?} within {:?}: {:?}",
            common::LIMIT,
            String::from_utf8_lossy(&bytes)
        );
    }

    /// Everything shown, once the terminal has closed.
    fn finish(self) -> String {
        self.reader.join().unwrap();
        let bytes = self.shown.0.lock().unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
