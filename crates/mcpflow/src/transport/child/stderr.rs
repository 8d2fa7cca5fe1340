//! The child's stderr: always drained (a full stderr pipe would block the child), into
//! `tracing` (target `mcpflow::child`) and a bounded tail of its last lines.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use crate::transport::InboundFrame;
use crate::transport::lines::LineReader;

const STDERR_LINE_MAX: usize = 2048;

/// The last lines a child wrote to stderr.
#[derive(Debug)]
pub(super) struct StderrTail {
    max_lines: usize,
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    pub(super) fn new(max_lines: usize) -> Self {
        StderrTail {
            max_lines,
            lines: Mutex::new(VecDeque::new()),
        }
    }

    pub(super) fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == self.max_lines {
            lines.pop_front();
        }
        if self.max_lines > 0 {
            lines.push_back(line);
        }
    }

    pub(super) fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

/// Read the child's stderr to its end, into `tracing` and `tail`; `done` says when.
pub(super) async fn drain_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<StderrTail>,
    done: watch::Sender<bool>,
    pid: Option<u32>,
) {
    let mut lines = LineReader::new(stderr, STDERR_LINE_MAX);
    while let Ok(Some(frame)) = lines.read_frame().await {
        let line = match frame {
            InboundFrame::Message(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            InboundFrame::Oversized { len, prefix, .. } => {
                format!("{}… ({len} bytes)", String::from_utf8_lossy(&prefix))
            }
            InboundFrame::RequestFailed { .. } | InboundFrame::Read(_) => continue,
        };
        tracing::debug!(target: "mcpflow::child", pid, "stderr: {line}");
        tail.push(line);
    }
    let _ = done.send(true);
}
