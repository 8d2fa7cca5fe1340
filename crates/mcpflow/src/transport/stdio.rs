//! The server side of stdio: read the client's messages from stdin, write to stdout.
//!
//! Logs must go to stderr: stdout carries only protocol messages.
//!
//! When stdin and stdout are pipes or sockets of their own, as when a client starts the
//! server, they are read and written without blocking, through the runtime's I/O driver,
//! and put back in blocking mode when the transport is dropped. Otherwise (a terminal, a
//! file, a stream shared with stderr) they go through tokio's stdin and stdout, which
//! hand each read and write to a blocking thread.
//!
//! ```no_run
//! # async fn run() {
//! let transport = mcpflow::transport::stdio::stdio();
//! # drop(transport); }
//! ```

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::lines::LineReader;
use super::stream::LineWriter;
use super::{Frame, FrameMeta, FrameWriter, Transport, WriteNow};
use crate::config::DEFAULT_MAX_FRAME_BYTES;
use crate::error::TransportError;
use unix::NonBlocking;

/// Longest wait, before a response that follows its request's progress, for the client
/// to read it.
const SETTLE_MAX: Duration = Duration::from_millis(2);
/// How long the wait first yields to other tasks between looks (a client that reads
/// promptly has read by then), before it sleeps between them (a timer tick, 1 ms).
const SETTLE_SPIN: Duration = Duration::from_micros(200);
/// Between two looks at what the client has not read yet, once past [`SETTLE_SPIN`].
const SETTLE_POLL: Duration = Duration::from_micros(250);

/// A transport over this process's stdin and stdout.
///
/// Call it inside the Tokio runtime that will serve the connection (as
/// `#[tokio::main]` builds it, with I/O enabled); outside a runtime, stdin and stdout
/// go through the blocking fallback.
pub fn stdio() -> StdioTransport {
    StdioTransport {
        reader: StdinReader::new(),
        writer: StdoutWriter::new(),
        max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
    }
}

/// This process's stdin and stdout, one JSON message per line: see [`stdio`].
#[derive(Debug)]
pub struct StdioTransport {
    reader: StdinReader,
    writer: StdoutWriter,
    max_frame_bytes: usize,
}

impl StdioTransport {
    /// Set the largest accepted frame, in bytes (default 32 MiB,
    /// [`crate::config::DEFAULT_MAX_FRAME_BYTES`]); longer ones are skipped and answered
    /// with an error.
    #[must_use]
    pub fn max_frame_bytes(mut self, n: usize) -> Self {
        self.max_frame_bytes = n;
        self
    }
}

impl Transport for StdioTransport {
    type Reader = LineReader<StdinReader>;
    type Writer = StdoutLines;

    fn carrier(&self) -> crate::transport::Carrier {
        crate::transport::Carrier::Pipe
    }

    fn split(self) -> (Self::Reader, Self::Writer) {
        (
            LineReader::new(self.reader, self.max_frame_bytes),
            StdoutLines {
                lines: LineWriter::new(self.writer),
            },
        )
    }
}

/// Frames to stdout, one per line. A response that follows progress sent for its
/// request waits, about 2 ms at most, for the client to read it first
/// ([`FrameWriter::flush_apart`]): written back to back without blocking, they would
/// reach the client in one read, and the TypeScript SDK 1.x drops progress that
/// arrives in the same read as its response.
#[derive(Debug)]
pub struct StdoutLines {
    lines: LineWriter<StdoutWriter>,
}

impl FrameWriter for StdoutLines {
    async fn write_frame(&mut self, frame: Frame, meta: &FrameMeta) -> Result<(), TransportError> {
        self.lines.write_frame(frame, meta).await
    }

    fn try_write_now(&mut self, frame: &Frame, meta: &FrameMeta) -> WriteNow {
        self.lines.try_write_now(frame, meta)
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        self.lines.flush().await
    }

    async fn flush_apart(&mut self) -> Result<(), TransportError> {
        self.lines.flush().await?;
        self.lines.get_mut().settle().await;
        Ok(())
    }

    async fn close(&mut self) {
        self.lines.close().await;
    }
}

/// This process's stdin, for [`stdio`].
#[derive(Debug)]
pub struct StdinReader {
    stream: Input,
    /// Dropped after the stream.
    _mode: Option<NonBlocking>,
}

/// This process's stdout, for [`stdio`].
#[derive(Debug)]
pub struct StdoutWriter {
    stream: Output,
    /// Dropped after the stream.
    _mode: Option<NonBlocking>,
}

#[derive(Debug)]
enum Input {
    Pipe(tokio::net::unix::pipe::Receiver),
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdin),
}

#[derive(Debug)]
enum Output {
    Pipe(tokio::net::unix::pipe::Sender),
    Socket(tokio::net::UnixStream),
    Blocking(tokio::io::Stdout),
}

impl StdinReader {
    fn new() -> Self {
        match unix::stdin() {
            Some((stream, mode)) => StdinReader {
                stream,
                _mode: Some(mode),
            },
            None => StdinReader {
                stream: Input::Blocking(tokio::io::stdin()),
                _mode: None,
            },
        }
    }
}

impl StdoutWriter {
    fn new() -> Self {
        match unix::stdout() {
            Some((stream, mode)) => StdoutWriter {
                stream,
                _mode: Some(mode),
            },
            None => StdoutWriter {
                stream: Output::Blocking(tokio::io::stdout()),
                _mode: None,
            },
        }
    }
}

impl StdoutWriter {
    /// Wait, up to [`SETTLE_MAX`], until the client has read everything written so far.
    /// Returns at once where that cannot be seen (the blocking fallback, or a system
    /// without the probe).
    async fn settle(&mut self) {
        use std::os::fd::AsRawFd;
        let (fd, kind) = match &self.stream {
            Output::Pipe(pipe) => (pipe.as_raw_fd(), unix::Kind::Pipe),
            Output::Socket(socket) => (socket.as_raw_fd(), unix::Kind::Socket),
            Output::Blocking(_) => return,
        };
        let unread = || unix::unread(fd, kind).is_some_and(|n| n > 0);
        let spin_until = std::time::Instant::now() + SETTLE_SPIN;
        while unread() && std::time::Instant::now() < spin_until {
            tokio::task::yield_now().await;
        }
        let give_up = tokio::time::Instant::now() + SETTLE_MAX;
        while unread() && tokio::time::Instant::now() < give_up {
            tokio::time::sleep(SETTLE_POLL).await;
        }
    }
}

impl AsyncRead for StdinReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Input::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            Input::Socket(socket) => Pin::new(socket).poll_read(cx, buf),
            Input::Blocking(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for StdoutWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().stream {
            Output::Pipe(pipe) => Pin::new(pipe).poll_write(cx, buf),
            Output::Socket(socket) => Pin::new(socket).poll_write(cx, buf),
            Output::Blocking(stdout) => Pin::new(stdout).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Output::Pipe(pipe) => Pin::new(pipe).poll_flush(cx),
            Output::Socket(socket) => Pin::new(socket).poll_flush(cx),
            Output::Blocking(stdout) => Pin::new(stdout).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Output::Pipe(pipe) => Pin::new(pipe).poll_shutdown(cx),
            // Only the sending half: the client reads the end of the stream while this
            // process may still read stdin from the same connection.
            Output::Socket(socket) => Pin::new(socket).poll_shutdown(cx),
            Output::Blocking(stdout) => Pin::new(stdout).poll_shutdown(cx),
        }
    }
}

mod unix {
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};

    use super::{Input, Output};

    /// A stream that can be driven without blocking.
    #[derive(Clone, Copy, PartialEq, Debug)]
    pub(super) enum Kind {
        Pipe,
        Socket,
    }

    /// The kind of `fd` (`None` for a terminal, a file and the like) and the file it
    /// refers to (device and inode).
    fn identify(fd: BorrowedFd<'_>) -> Option<(Option<Kind>, (u64, u64))> {
        let metadata = File::from(fd.try_clone_to_owned().ok()?).metadata().ok()?;
        let kind = match metadata.file_type() {
            t if t.is_fifo() => Some(Kind::Pipe),
            t if t.is_socket() => Some(Kind::Socket),
            _ => None,
        };
        Some((kind, (metadata.dev(), metadata.ino())))
    }

    /// `fd`'s kind, when it is a pipe or a socket that no other standard stream shares:
    /// non-blocking mode belongs to the open file, so a stream shared with stderr (or
    /// stdin and stdout on one socket) stays as it is.
    fn own_stream(fd: BorrowedFd<'_>, others: [BorrowedFd<'_>; 2]) -> Option<Kind> {
        let (kind, file) = identify(fd)?;
        let shared = others
            .into_iter()
            .any(|other| identify(other).is_some_and(|(_, f)| f == file));
        if shared { None } else { kind }
    }

    /// Stdin without blocking, when it is a pipe or socket of its own and a runtime with
    /// I/O is running.
    pub(super) fn stdin() -> Option<(Input, NonBlocking)> {
        tokio::runtime::Handle::try_current().ok()?;
        let (stdin, stdout, stderr) = (io::stdin(), io::stdout(), io::stderr());
        let kind = own_stream(stdin.as_fd(), [stdout.as_fd(), stderr.as_fd()])?;
        input(stdin.as_fd(), kind).ok()
    }

    /// Stdout without blocking, when it is a pipe or socket of its own and a runtime with
    /// I/O is running.
    pub(super) fn stdout() -> Option<(Output, NonBlocking)> {
        tokio::runtime::Handle::try_current().ok()?;
        let (stdin, stdout, stderr) = (io::stdin(), io::stdout(), io::stderr());
        let kind = own_stream(stdout.as_fd(), [stdin.as_fd(), stderr.as_fd()])?;
        output(stdout.as_fd(), kind).ok()
    }

    /// Read `fd` (a pipe or a socket) without blocking.
    pub(super) fn input(fd: BorrowedFd<'_>, kind: Kind) -> io::Result<(Input, NonBlocking)> {
        let (mode, fd) = NonBlocking::set(fd)?;
        let stream = match kind {
            Kind::Socket => Input::Socket(socket(fd)?),
            Kind::Pipe => Input::Pipe(tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(
                fd,
            )?),
        };
        Ok((stream, mode))
    }

    /// Write `fd` (a pipe or a socket) without blocking.
    pub(super) fn output(fd: BorrowedFd<'_>, kind: Kind) -> io::Result<(Output, NonBlocking)> {
        let (mode, fd) = NonBlocking::set(fd)?;
        let stream = match kind {
            Kind::Socket => Output::Socket(socket(fd)?),
            Kind::Pipe => {
                grow_pipe(&fd);
                Output::Pipe(tokio::net::unix::pipe::Sender::from_owned_fd_unchecked(fd)?)
            }
        };
        Ok((stream, mode))
    }

    /// The pipe size stdout asks for: a large result then crosses in sixteen times
    /// fewer writes than through the usual 64 KiB, each one a wait for the client to
    /// read and a wake-up (1 MiB is the most an unprivileged process may ask for).
    #[cfg(target_os = "linux")]
    const STDOUT_PIPE_BYTES: libc::c_int = 1024 * 1024;

    /// Make the pipe hold [`STDOUT_PIPE_BYTES`], if it holds less and the system allows
    /// it; otherwise leave it as it is.
    #[cfg(target_os = "linux")]
    fn grow_pipe(fd: &OwnedFd) {
        #[allow(unsafe_code)]
        // SAFETY: fcntl(F_GETPIPE_SZ) on a descriptor this process owns touches no
        // memory of ours.
        let size = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) };
        if (0..STDOUT_PIPE_BYTES).contains(&size) {
            #[allow(unsafe_code)]
            // SAFETY: fcntl(F_SETPIPE_SZ) with an integer argument, as above; a refusal
            // (a per-user limit) leaves the pipe as it was.
            let _ = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, STDOUT_PIPE_BYTES) };
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn grow_pipe(_fd: &OwnedFd) {}

    /// How much written to `fd` (the sending end of a pipe or a stream socket) the peer
    /// has not read yet: bytes for a pipe, the kernel's buffers holding them for a
    /// socket; 0 once it has read everything, `None` where that cannot be seen.
    #[cfg(target_os = "linux")]
    pub(super) fn unread(fd: std::os::fd::RawFd, kind: Kind) -> Option<usize> {
        let request = match kind {
            // A pipe's unread bytes, from either end.
            Kind::Pipe => libc::FIONREAD,
            // A socket's buffers sent and not yet taken by the peer.
            Kind::Socket => libc::TIOCOUTQ,
        };
        let mut n: libc::c_int = 0;
        #[allow(unsafe_code)]
        // SAFETY: FIONREAD and TIOCOUTQ write one int through the pointer, which points
        // to `n`, alive and writable for the whole call.
        let result = unsafe { libc::ioctl(fd, request, &mut n) };
        (result == 0).then(|| usize::try_from(n).unwrap_or(0))
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn unread(_fd: std::os::fd::RawFd, _kind: Kind) -> Option<usize> {
        None
    }

    fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
        tokio::net::UnixStream::from_std(std::os::unix::net::UnixStream::from(fd))
    }

    /// Keeps an open file in non-blocking mode and puts it back in blocking mode when
    /// dropped (when it was blocking before), so that code which uses stdin or stdout
    /// afterwards (a `println!`) does not meet `EAGAIN`.
    #[derive(Debug)]
    pub(super) struct NonBlocking {
        fd: OwnedFd,
        was_blocking: bool,
    }

    impl NonBlocking {
        /// Switch `fd`'s open file to non-blocking mode. Returns the guard and a
        /// duplicate of `fd` to drive.
        fn set(fd: BorrowedFd<'_>) -> io::Result<(NonBlocking, OwnedFd)> {
            let own = fd.try_clone_to_owned()?;
            let flags = get_flags(&own)?;
            let was_blocking = flags & libc::O_NONBLOCK == 0;
            if was_blocking {
                set_flags(&own, flags | libc::O_NONBLOCK)?;
            }
            let driven = own.try_clone()?;
            Ok((
                NonBlocking {
                    fd: own,
                    was_blocking,
                },
                driven,
            ))
        }
    }

    impl Drop for NonBlocking {
        fn drop(&mut self) {
            if self.was_blocking
                && let Ok(flags) = get_flags(&self.fd)
            {
                let _ = set_flags(&self.fd, flags & !libc::O_NONBLOCK);
            }
        }
    }

    fn get_flags(fd: &OwnedFd) -> io::Result<libc::c_int> {
        #[allow(unsafe_code)]
        // SAFETY: fcntl(F_GETFL) on a descriptor this process owns reads its flags and
        // touches no memory of ours.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if flags == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(flags)
    }

    fn set_flags(fd: &OwnedFd, flags: libc::c_int) -> io::Result<()> {
        #[allow(unsafe_code)]
        // SAFETY: fcntl(F_SETFL) with an integer argument on a descriptor this process
        // owns; it touches no memory of ours.
        let result = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags) };
        if result == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use std::io::Write as _;
        use std::os::fd::AsFd;

        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        use super::super::{StdinReader, StdoutWriter};
        use super::*;

        fn nonblocking(fd: BorrowedFd<'_>) -> bool {
            let own = fd.try_clone_to_owned().expect("dup");
            get_flags(&own).expect("flags") & libc::O_NONBLOCK != 0
        }

        #[tokio::test]
        async fn a_pipe_is_driven_without_blocking_and_given_back_blocking() {
            let (reader, mut writer) = std::io::pipe().expect("pipe");
            assert_eq!(
                identify(reader.as_fd()).map(|(k, _)| k),
                Some(Some(Kind::Pipe))
            );
            let (stream, mode) = input(reader.as_fd(), Kind::Pipe).expect("input");
            let mut input = StdinReader {
                stream,
                _mode: Some(mode),
            };
            assert!(matches!(input.stream, Input::Pipe(..)));
            assert!(nonblocking(reader.as_fd()));
            writer.write_all(b"hello\n").expect("write");
            let mut line = [0; 6];
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                input.read_exact(&mut line),
            )
            .await
            .expect("read within 10 s")
            .expect("read");
            assert_eq!(&line, b"hello\n");
            drop(input);
            assert!(!nonblocking(reader.as_fd()), "blocking again after drop");
        }

        #[tokio::test]
        async fn a_socket_is_driven_without_blocking_and_given_back_blocking() {
            let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("pair");
            assert_eq!(
                identify(ours.as_fd()).map(|(k, _)| k),
                Some(Some(Kind::Socket))
            );
            let (stream, mode) = output(ours.as_fd(), Kind::Socket).expect("output");
            let mut output = StdoutWriter {
                stream,
                _mode: Some(mode),
            };
            assert!(matches!(output.stream, Output::Socket(..)));
            assert!(nonblocking(ours.as_fd()));
            output.write_all(b"{}\n").await.expect("write");
            output.flush().await.expect("flush");
            let mut got = [0; 3];
            std::io::Read::read_exact(&mut &theirs, &mut got).expect("read");
            assert_eq!(&got, b"{}\n");
            drop(output);
            assert!(!nonblocking(ours.as_fd()), "blocking again after drop");
        }

        #[cfg(target_os = "linux")]
        #[tokio::test]
        async fn stdout_pipe_is_grown_for_large_results() {
            let (_reader, writer) = std::io::pipe().expect("pipe");
            let (_stream, _mode) = output(writer.as_fd(), Kind::Pipe).expect("output");
            #[allow(unsafe_code)]
            // SAFETY: F_GETPIPE_SZ on an open descriptor touches no memory of ours.
            let size = unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_GETPIPE_SZ) };
            // Unless the system caps pipes lower.
            let cap = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
                .ok()
                .and_then(|s| s.trim().parse::<libc::c_int>().ok())
                .unwrap_or(STDOUT_PIPE_BYTES);
            if cap >= STDOUT_PIPE_BYTES {
                assert_eq!(size, STDOUT_PIPE_BYTES);
            }
        }

        /// The probe sees what the peer has not read, and a settle with a peer that does
        /// not read gives up after its bound.
        #[cfg(target_os = "linux")]
        #[tokio::test(start_paused = true)]
        async fn settle_sees_unread_bytes_and_gives_up_in_time() {
            use std::os::fd::AsRawFd;
            let (mut reader, writer) = std::io::pipe().expect("pipe");
            let (theirs, ours) = std::os::unix::net::UnixStream::pair().expect("pair");
            for (kind, fd) in [(Kind::Pipe, writer.as_fd()), (Kind::Socket, ours.as_fd())] {
                let (stream, mode) = output(fd, kind).expect("output");
                let mut out = StdoutWriter {
                    stream,
                    _mode: Some(mode),
                };
                out.write_all(b"{}\n").await.expect("write");
                out.flush().await.expect("flush");
                assert!(
                    unread(fd.as_raw_fd(), kind).is_some_and(|n| n >= 3),
                    "{kind:?}"
                );
                let started = tokio::time::Instant::now();
                tokio::time::timeout(std::time::Duration::from_secs(10), out.settle())
                    .await
                    .expect("settle is bounded");
                assert!(started.elapsed() >= super::super::SETTLE_MAX, "{kind:?}");
                let mut got = [0; 3];
                match kind {
                    Kind::Pipe => std::io::Read::read_exact(&mut reader, &mut got),
                    Kind::Socket => std::io::Read::read_exact(&mut &theirs, &mut got),
                }
                .expect("read");
                assert_eq!(unread(fd.as_raw_fd(), kind), Some(0), "{kind:?}");
                let started = tokio::time::Instant::now();
                out.settle().await;
                assert_eq!(started.elapsed(), std::time::Duration::ZERO, "{kind:?}");
            }
        }

        #[test]
        fn files_and_shared_streams_are_left_alone() {
            let file = tempfile_in_target();
            assert_eq!(identify(file.as_fd()).map(|(k, _)| k), Some(None));
            assert_eq!(own_stream(file.as_fd(), [file.as_fd(), file.as_fd()]), None);
            let (reader, writer) = std::io::pipe().expect("pipe");
            // The two ends of one pipe are one file: a stream that shares it is skipped.
            assert_eq!(
                own_stream(reader.as_fd(), [writer.as_fd(), file.as_fd()]),
                None
            );
            let (other, _keep) = std::io::pipe().expect("pipe");
            assert_eq!(
                own_stream(reader.as_fd(), [other.as_fd(), file.as_fd()]),
                Some(Kind::Pipe)
            );
        }

        fn tempfile_in_target() -> File {
            let path = std::env::temp_dir().join(format!("mcpflow-stdio-{}", std::process::id()));
            let file = File::create(&path).expect("create");
            let _ = std::fs::remove_file(&path);
            file
        }
    }
}
