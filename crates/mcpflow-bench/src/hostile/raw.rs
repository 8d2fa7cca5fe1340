//! Raw-socket helpers the attacks share, and the summary table.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The rows of one summary table: (what, figure).
#[derive(Debug, Default)]
pub struct Rows(Vec<(String, String)>);

impl Rows {
    /// Add one row.
    pub fn push(&mut self, what: impl Into<String>, figure: impl Into<String>) {
        self.0.push((what.into(), figure.into()));
    }

    /// Add all of `other`'s rows.
    pub fn extend(&mut self, other: Rows) {
        self.0.extend(other.0);
    }

    /// The rows as a two-column markdown table.
    pub fn markdown(&self) -> String {
        let mut out = String::from("| what | figure |\n|---|---|\n");
        for (what, figure) in &self.0 {
            let figure = figure.replace('|', "\\|").replace('\n', " ");
            out.push_str(&format!("| {what} | {figure} |\n"));
        }
        out
    }
}

/// Raise this process's soft fd limit to its hard limit: the attacks hold thousands of
/// sockets.
pub fn raise_nofile() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    #[allow(unsafe_code)]
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Seconds since `start`, as "12.3 s".
pub fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Milliseconds, as "2.7 ms".
pub fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// "min / p50 / max" of `values` (seconds), or "-" when empty.
pub fn spread(values: &mut [f64]) -> String {
    if values.is_empty() {
        return "-".to_owned();
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    format!(
        "min {:.1} s / p50 {:.1} s / max {:.1} s",
        at(0.0),
        at(0.5),
        at(1.0)
    )
}

/// How a raw connection's wait for a response ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A status line arrived: the code, and when (since the attack started).
    Status(u16, Duration),
    /// The server closed the connection without a status line.
    Closed(Duration),
    /// The connection failed (reset, or another error).
    Failed(Duration, String),
    /// Nothing happened before the deadline: the server still holds the connection.
    Held,
}

impl Outcome {
    /// A short label for counting: "413", "closed", "reset: ...", "held".
    pub fn label(&self) -> String {
        match self {
            Outcome::Status(code, _) => format!("HTTP {code}"),
            Outcome::Closed(_) => "closed without answer".to_owned(),
            Outcome::Failed(_, e) => format!("error: {e}"),
            Outcome::Held => "held open".to_owned(),
        }
    }

    /// When it happened, if it did.
    pub fn at(&self) -> Option<Duration> {
        match self {
            Outcome::Status(_, at) | Outcome::Closed(at) | Outcome::Failed(at, _) => Some(*at),
            Outcome::Held => None,
        }
    }
}

/// Read from `reader` until a status line, EOF, an error or `deadline`.
pub async fn await_status<R: AsyncReadExt + Unpin>(
    reader: &mut R,
    start: Instant,
    deadline: Instant,
) -> Outcome {
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    loop {
        let read = tokio::time::timeout_at(deadline.into(), reader.read(&mut chunk)).await;
        match read {
            Err(_) => return Outcome::Held,
            Ok(Ok(0)) => return Outcome::Closed(start.elapsed()),
            Ok(Ok(n)) => {
                buf.extend_from_slice(&chunk[..n]);
                if let Some(code) = status_code(&buf) {
                    return Outcome::Status(code, start.elapsed());
                }
                if buf.len() > 8192 {
                    return Outcome::Failed(start.elapsed(), "no status line".to_owned());
                }
            }
            Ok(Err(e)) => return Outcome::Failed(start.elapsed(), short_error(&e)),
        }
    }
}

/// The code of an HTTP/1.x status line at the start of `buf`, once the line is complete.
pub fn status_code(buf: &[u8]) -> Option<u16> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&buf[..end]).ok()?;
    line.split(' ').nth(1)?.parse().ok()
}

/// An I/O error's kind, short.
pub fn short_error(e: &std::io::Error) -> String {
    format!("{:?}", e.kind())
}

/// The kernel's TCP state of `stream` (`TCP_INFO`'s `tcpi_state`) as a name.
pub fn tcp_state(stream: &TcpStream) -> &'static str {
    #[allow(unsafe_code)]
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes into it.
    let state = unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        if rc != 0 {
            return "unknown";
        }
        info.tcpi_state
    };
    match state {
        1 => "established",
        7 => "closed",
        8 => "close-wait",
        _ => "other",
    }
}

/// Count `labels` into "3 × HTTP 413, 1 × held open", most frequent first.
pub fn tally<I: IntoIterator<Item = String>>(labels: I) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for label in labels {
        match counts.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => counts.push((label, 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    if counts.is_empty() {
        return "-".to_owned();
    }
    counts
        .iter()
        .map(|(l, n)| format!("{n} × {l}"))
        .collect::<Vec<_>>()
        .join(", ")
}
