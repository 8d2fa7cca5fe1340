//! The client side of stdio: start a server as a child process and talk over its
//! stdin and stdout.
//!
//! - stderr is always drained (a full stderr pipe would block the child), into
//!   `tracing` (target `mcpflow::child`) and a bounded tail of its last lines;
//! - when the child exits or closes stdin or stdout, the error every pending request
//!   receives names the exit status and carries that stderr tail. A child that exits
//!   while a process it started still holds its stdout ends the connection too, once
//!   what it wrote has been read; what is left of its process group gets `SIGTERM`;
//! - closing follows the spec's order: close the child's stdin, wait, `SIGTERM` to its
//!   process group, wait, `SIGKILL`. Each wait is bounded by the close grace, and
//!   discards what the child still writes to stdout. A process the child left behind
//!   that still holds its stdout gets `SIGTERM` too.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcpflow::TransportError> {
//! use mcpflow::transport::ChildProcess;
//! let server = ChildProcess::builder("python3").arg("server.py").spawn()?;
//! # drop(server); Ok(()) }
//! ```

mod stderr;

use std::ffi::OsString;
use std::os::fd::{AsFd as _, AsRawFd as _, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::unix::pipe;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use self::stderr::{StderrTail, drain_stderr};
use super::lines::LineReader;
use super::stream::LineWriter;
use super::{Frame, FrameMeta, FrameReader, FrameWriter, InboundFrame, Transport, WriteNow};
use crate::config::DEFAULT_MAX_FRAME_BYTES;
use crate::error::TransportError;

/// How long an error waits, once a pipe of the child's closed, for its exit status (and
/// then for the end of its stderr).
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(500);
/// After the child exits, how long stdout may stay silent before the connection ends.
const EXIT_DRAIN: Duration = Duration::from_millis(200);

/// Configures and starts a [`ChildProcess`].
#[derive(Debug, Clone)]
#[must_use]
pub struct ChildProcessBuilder {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    stderr_tail_lines: usize,
    close_grace: Duration,
    max_frame_bytes: usize,
    end_at_exit: bool,
}

impl ChildProcessBuilder {
    /// Add one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Add arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Set an environment variable for the child. The child inherits this process's
    /// environment, with these on top, unless [`env_clear`](Self::env_clear) is set.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Start the child with only the variables set with [`env`](Self::env), none of
    /// this process's: a third-party server then sees no token or key it was not given.
    /// (The official SDKs pass only `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM` and
    /// `USER` unless told otherwise.) The program is still looked up in this process's
    /// `PATH` unless `env` sets one.
    ///
    /// ```no_run
    /// # fn run() -> Result<(), mcpflow::TransportError> {
    /// use mcpflow::transport::ChildProcess;
    /// let mut server = ChildProcess::builder("my-server").env_clear();
    /// for key in ["HOME", "PATH"] {
    ///     if let Some(value) = std::env::var_os(key) {
    ///         server = server.env(key, value);
    ///     }
    /// }
    /// let server = server.spawn()?;
    /// # drop(server); Ok(()) }
    /// ```
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    /// Run the child in this directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// How many of the child's last stderr lines errors carry. Default: 20.
    pub fn stderr_tail_lines(mut self, n: usize) -> Self {
        self.stderr_tail_lines = n;
        self
    }

    /// How long each step of the shutdown sequence waits for the child to exit
    /// (after closing stdin, then after `SIGTERM`). Default: 2 s.
    pub fn close_grace(mut self, grace: Duration) -> Self {
        self.close_grace = grace;
        self
    }

    /// Whether the connection ends when the process exits although a process it started
    /// still holds its stdout (default: it does, once what the process wrote has been
    /// read, and that process group gets `SIGTERM`, as it does when the connection
    /// closes while such a process holds stdout). Turn it off for a launcher that
    /// starts the server as a process of its own and exits (`setsid`, a daemonizing
    /// wrapper): the connection then lasts until stdout ends. (`setsid -w` waits for the
    /// server instead, and needs neither.)
    ///
    /// ```no_run
    /// # fn run() -> Result<(), mcpflow::TransportError> {
    /// use mcpflow::transport::ChildProcess;
    /// let server = ChildProcess::builder("setsid").arg("my-server").end_at_exit(false).spawn()?;
    /// # drop(server); Ok(()) }
    /// ```
    pub fn end_at_exit(mut self, end: bool) -> Self {
        self.end_at_exit = end;
        self
    }

    /// Largest accepted frame from the child, in bytes. Default: 32 MiB.
    pub fn max_frame_bytes(mut self, n: usize) -> Self {
        self.max_frame_bytes = n;
        self
    }

    /// Start the child in its own process group.
    ///
    /// # Errors
    /// [`TransportError::Spawn`] when the program cannot be started.
    pub fn spawn(self) -> Result<ChildProcess, TransportError> {
        let command_line = std::iter::once(&self.program)
            .chain(&self.args)
            .map(|s| s.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let mut command = Command::new(&self.program);
        if self.env_clear {
            command.env_clear();
        }
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        let spawn_error = |e| TransportError::Spawn {
            command: command_line.clone(),
            source: Arc::new(e),
        };
        let mut child = command.spawn().map_err(spawn_error)?;
        let missing = || {
            spawn_error(std::io::Error::other(
                "the child's stdio pipes were not created",
            ))
        };
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take().ok_or_else(missing)?;
        let pid = child.id();
        // Without it, nothing could tell after the reader is gone whether stdout is held.
        let stdout_probe = self
            .end_at_exit
            .then(|| stdout.as_fd().try_clone_to_owned().ok())
            .flatten();

        let tail = Arc::new(StderrTail::new(self.stderr_tail_lines));
        let (stderr_done_tx, stderr_done) = watch::channel(false);
        let drain = tokio::spawn(drain_stderr(stderr, tail.clone(), stderr_done_tx, pid));
        let (exit_tx, exit) = watch::channel(None);
        let reaper = tokio::spawn(async move {
            let status = match child.wait().await {
                Ok(status) => status.to_string(),
                Err(e) => format!("unknown status: {e}"),
            };
            let _ = exit_tx.send(Some(status));
        });
        let shared = Arc::new(ChildShared {
            pid,
            exit,
            tail,
            stderr_done,
            stdout_probe,
            tasks: [drain, reaper],
        });
        tracing::debug!(target: "mcpflow::child", pid, command = %command_line, "started server process");
        Ok(ChildProcess {
            stdin,
            stdout,
            shared,
            close_grace: self.close_grace,
            max_frame_bytes: self.max_frame_bytes,
            end_at_exit: self.end_at_exit,
        })
    }
}

/// A server running as a child process, spoken to over its stdin and stdout.
#[derive(Debug)]
pub struct ChildProcess {
    stdin: ChildStdin,
    stdout: ChildStdout,
    shared: Arc<ChildShared>,
    close_grace: Duration,
    max_frame_bytes: usize,
    end_at_exit: bool,
}

impl ChildProcess {
    /// Start configuring a child running `program`.
    pub fn builder(program: impl Into<OsString>) -> ChildProcessBuilder {
        ChildProcessBuilder {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            stderr_tail_lines: 20,
            close_grace: Duration::from_secs(2),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            end_at_exit: true,
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.shared.pid
    }
}

impl Transport for ChildProcess {
    type Reader = ChildReader;
    type Writer = ChildWriter;

    fn carrier(&self) -> crate::transport::Carrier {
        crate::transport::Carrier::Pipe
    }

    fn split(self) -> (ChildReader, ChildWriter) {
        (
            ChildReader {
                lines: LineReader::new(self.stdout, self.max_frame_bytes),
                exit: self.end_at_exit.then(|| self.shared.exit.clone()),
                shared: self.shared.clone(),
            },
            ChildWriter {
                stdin: Some(LineWriter::new(self.stdin)),
                shared: self.shared,
                close_grace: self.close_grace,
            },
        )
    }
}

#[derive(Debug)]
struct ChildShared {
    pid: Option<u32>,
    exit: watch::Receiver<Option<String>>,
    tail: Arc<StderrTail>,
    stderr_done: watch::Receiver<bool>,
    /// A copy of stdout's read end (when the connection ends at the exit), to tell
    /// whether a process still holds the write end.
    stdout_probe: Option<OwnedFd>,
    tasks: [JoinHandle<()>; 2],
}

impl ChildShared {
    async fn wait_exit(&self, limit: Duration) -> Option<String> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => status.clone(),
            _ => None,
        }
    }

    fn signal(&self, signal: libc::c_int) {
        if let Some(pid) = self.pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
            // A negative pid names the process group the child was started in.
            #[allow(unsafe_code)]
            // SAFETY: kill(2) takes plain integers and has no memory-safety preconditions.
            unsafe {
                libc::kill(-pid, signal);
            }
        }
    }

    /// Whether a process still holds the child's stdout open: its read end has not hung up.
    fn stdout_held(&self) -> bool {
        let Some(probe) = &self.stdout_probe else {
            return false;
        };
        let mut poll = libc::pollfd {
            fd: probe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        #[allow(unsafe_code)]
        // SAFETY: one valid `pollfd` whose descriptor stays open for the call; no wait.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        ready >= 0 && poll.revents & libc::POLLHUP == 0
    }

    /// Once the child has exited: `SIGTERM` to its group when a process it left behind
    /// still holds its stdout, which would otherwise outlive the connection.
    fn end_holders(&self) {
        if self.stdout_held() {
            tracing::debug!(target: "mcpflow::child", pid = self.pid, "a process the server left behind holds its stdout; sending SIGTERM to its group");
            self.signal(libc::SIGTERM);
        }
    }

    /// The error for a child whose `pipe` (`stdin` or `stdout`) closed: it exited, or
    /// it closed that pipe.
    async fn exit_error(&self, pipe: &str) -> TransportError {
        let status = self
            .wait_exit(EXIT_STATUS_WAIT)
            .await
            .unwrap_or_else(|| format!("still running, but it closed its {pipe}"));
        self.exited_with(status).await
    }

    /// The error for a child that exited with `status`, once its stderr has ended (or
    /// a moment has passed).
    async fn exited_with(&self, status: String) -> TransportError {
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(EXIT_STATUS_WAIT, done.wait_for(|d| *d)).await;
        TransportError::ProcessExited {
            status,
            stderr_tail: self.tail.text(),
        }
    }
}

impl Drop for ChildShared {
    fn drop(&mut self) {
        if self.exit.borrow().is_none() {
            self.signal(libc::SIGKILL);
        } else {
            self.end_holders();
        }
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Reads the child's stdout.
///
/// The connection ends when stdout ends or, should a process the server started still
/// hold stdout open, once the server has exited and what it wrote has been read: no
/// end of file comes then, and the call would otherwise wait for its timeout. Those
/// processes are sent `SIGTERM` with the server's process group (unless
/// [`end_at_exit`](ChildProcessBuilder::end_at_exit) is off).
#[derive(Debug)]
pub struct ChildReader {
    lines: LineReader<ChildStdout>,
    /// The exit status, when the connection ends at the exit; once it is there, reads
    /// drain what the child wrote.
    exit: Option<watch::Receiver<Option<String>>>,
    shared: Arc<ChildShared>,
}

impl ChildReader {
    async fn frame_or_exit(
        &self,
        read: Result<Option<InboundFrame>, TransportError>,
    ) -> Result<Option<InboundFrame>, TransportError> {
        match read {
            Ok(Some(frame)) => Ok(Some(frame)),
            // End of stdout is never orderly for a client: the server went away.
            Ok(None) | Err(_) => Err(self.shared.exit_error("stdout").await),
        }
    }

    /// The child has exited and nothing more came within [`EXIT_DRAIN`]: stdout is held
    /// by processes it left behind.
    async fn held_open(&self) -> TransportError {
        let status = (self.exit.as_ref().and_then(|exit| exit.borrow().clone()))
            .unwrap_or_else(|| "unknown status".to_owned());
        tracing::debug!(target: "mcpflow::child", pid = self.shared.pid, "server exited with its stdout still open; sending SIGTERM to its group");
        self.shared.signal(libc::SIGTERM);
        let status = format!("{status}; a process it started still holds its stdout");
        self.shared.exited_with(status).await
    }
}

impl FrameReader for ChildReader {
    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
        let Some(exit) = &mut self.exit else {
            let read = self.lines.read_frame().await;
            return self.frame_or_exit(read).await;
        };
        if exit.borrow().is_none() {
            tokio::select! {
                biased;
                read = self.lines.read_frame() => return self.frame_or_exit(read).await,
                // Reading is cancel-safe: what was read stays buffered for the drain.
                () = exited(exit) => {}
            }
        }
        // Everything the child wrote before exiting is in the pipe already.
        match tokio::time::timeout(EXIT_DRAIN, self.lines.read_frame()).await {
            Ok(read) => self.frame_or_exit(read).await,
            // Its last message may lack the newline that end of file would have stood for.
            Err(_) => match self.lines.finish() {
                Some(frame) => Ok(Some(frame)),
                None => Err(self.held_open().await),
            },
        }
    }
}

/// Until the child has exited; never, should its reaper be gone without a status (its
/// runtime shut down).
async fn exited(exit: &mut watch::Receiver<Option<String>>) {
    if exit.wait_for(Option::is_some).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Writes to the child's stdin, and runs the shutdown sequence on close.
#[derive(Debug)]
pub struct ChildWriter {
    stdin: Option<LineWriter<ChildStdin>>,
    shared: Arc<ChildShared>,
    close_grace: Duration,
}

impl ChildWriter {
    fn stdin(&mut self) -> Result<&mut LineWriter<ChildStdin>, TransportError> {
        self.stdin.as_mut().ok_or_else(|| {
            TransportError::io(
                "writing to the server process",
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin already closed"),
            )
        })
    }

    /// Whether the child exits within the close grace. Once the reader is gone (the
    /// reader and this writer hold the only references to what they share), what the
    /// child writes to stdout meanwhile is discarded: a server blocked writing into a
    /// pipe that nobody reads would never see its stdin close.
    async fn exits_within_grace(&self) -> bool {
        let wait = self.shared.wait_exit(self.close_grace);
        let unread = (self.shared.stdout_probe.as_ref())
            .filter(|_| Arc::strong_count(&self.shared) == 1)
            .and_then(|probe| probe.try_clone().ok());
        let Some(mut stdout) = unread.and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok()) else {
            return wait.await.is_some();
        };
        let mut sink = tokio::io::sink();
        tokio::pin!(wait);
        let exited = tokio::select! {
            out = &mut wait => out,
            // Stdout ended (or failed): nothing is left to discard.
            _ = tokio::io::copy(&mut stdout, &mut sink) => wait.await,
        };
        exited.is_some()
    }

    /// The last step of closing: `SIGKILL`, and reap.
    async fn kill(&self) {
        tracing::warn!(target: "mcpflow::child", pid = self.shared.pid, "server ignored SIGTERM; sending SIGKILL");
        self.shared.signal(libc::SIGKILL);
        let _ = self.shared.wait_exit(self.close_grace).await;
    }
}

impl FrameWriter for ChildWriter {
    async fn write_frame(&mut self, frame: Frame, meta: &FrameMeta) -> Result<(), TransportError> {
        match self.stdin()?.write_frame(frame, meta).await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.shared.exit_error("stdin").await),
        }
    }

    fn try_write_now(&mut self, frame: &Frame, meta: &FrameMeta) -> WriteNow {
        match &mut self.stdin {
            Some(stdin) => stdin.try_write_now(frame, meta),
            None => WriteNow::Declined,
        }
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        match self.stdin()?.flush().await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.shared.exit_error("stdin").await),
        }
    }

    async fn close(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            stdin.close().await;
        }
        if self.exits_within_grace().await {
            // The reader stopped first, and may have cut short the drain that ends them.
            self.shared.end_holders();
            return;
        }
        tracing::debug!(target: "mcpflow::child", pid = self.shared.pid, "server did not exit after stdin closed; sending SIGTERM");
        self.shared.signal(libc::SIGTERM);
        if self.exits_within_grace().await {
            return;
        }
        self.kill().await;
    }

    /// Stdin closed and a wait, `SIGTERM` and a wait, `SIGKILL` and a wait for the exit.
    fn close_time(&self) -> Option<Duration> {
        Some(self.close_grace * 3)
    }

    async fn abandon(&mut self) {
        // Dropped, not closed: closing flushes into a pipe that no longer drains.
        drop(self.stdin.take());
        tracing::debug!(target: "mcpflow::child", pid = self.shared.pid, "server stopped reading its input; sending SIGTERM");
        self.shared.signal(libc::SIGTERM);
        if self.shared.wait_exit(self.close_grace).await.is_some() {
            return;
        }
        self.kill().await;
    }
}
