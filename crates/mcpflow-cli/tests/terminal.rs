//! `mcpflow call` on a terminal: run under a pseudo-terminal (`script` from
//! util-linux), the recording shows the progress bar, left at its final state.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::{Command, Stdio};

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
