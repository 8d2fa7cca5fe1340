//! What every system shares: the tools' behaviour, the progress log, RSS readers.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The text each `echo` call sends and expects back.
pub const ECHO_TEXT: &str = "hello from the benchmark";
/// Size of the text one W4 call returns.
pub const BIG_BYTES: usize = 10 * 1024 * 1024;
/// Bytes each direction of an in-memory `tokio::io::duplex` buffers.
pub const DUPLEX_BYTES: usize = 64 * 1024;

/// A `big` tool's text: one shared 10 MiB string, built once per process.
pub fn big_text(bytes: usize) -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    let text = TEXT.get_or_init(|| "x".repeat(BIG_BYTES));
    &text[..bytes.min(BIG_BYTES)]
}

/// Counts progress notifications as the client's handler sees them, and how many
/// arrived out of order (a value other than the previous one plus 1).
#[derive(Debug, Default)]
pub struct ProgressLog {
    count: AtomicU64,
    last: AtomicU64,
    disorder: AtomicU64,
}

impl ProgressLog {
    /// Record one progress value (the tools report 1, 2, 3, ...).
    pub fn record(&self, progress: f64) {
        let value = progress as u64;
        let previous = self.last.swap(value, Ordering::SeqCst);
        if value != previous + 1 {
            self.disorder.fetch_add(1, Ordering::SeqCst);
        }
        self.count.fetch_add(1, Ordering::SeqCst);
    }

    /// (notifications handled, how many of them out of order).
    pub fn snapshot(&self) -> (u64, u64) {
        (
            self.count.load(Ordering::SeqCst),
            self.disorder.load(Ordering::SeqCst),
        )
    }
}

/// A field (in KiB) of `/proc/<pid>/status`, e.g. `VmRSS` or `VmHWM`.
pub fn proc_status_kib(pid: Option<u32>, field: &str) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}
