//! The connection layer of [`HttpServer::bind`](super::HttpServer::bind): accepting
//! sockets under a connection cap, and serving each with hyper under a header-read
//! timeout (which also ends idle keep-alive connections) and a write timeout.
//!
//! At the cap the server stops accepting, so new connections wait in the kernel's
//! backlog until one closes; the header timeout makes sure one does. An accept that
//! fails for lack of file descriptors backs off instead of spinning.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

/// The limits of the connection layer.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnectionLimits {
    pub(super) max_connections: usize,
    pub(super) header_timeout: Duration,
    pub(super) write_timeout: Duration,
}

/// How long accepting pauses after running out of file descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Accept and serve connections until `stop`, then let open connections finish.
pub(super) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    open: Arc<AtomicUsize>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit,
            () = stop.cancelled() => break,
        };
        let Ok(permit) = permit else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if is_out_of_descriptors(&e) => {
                tracing::warn!(
                    error = %e,
                    "cannot accept a connection: out of file descriptors (lower max_connections, or raise the open-file limit)"
                );
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    () = stop.cancelled() => break,
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "accept failed");
                continue;
            }
        };
        // Each SSE event is written as soon as it is produced; with Nagle's algorithm
        // on, the next small write waits for the client's delayed ACK (about 40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let io = TokioIo::new(WriteTimeout::new(stream, limits.write_timeout));
        let service = TowerToHyperService::new(router.clone());
        let stop = stop.clone();
        let open = OpenConnection::new(&open);
        connections.spawn(async move {
            let _slot = permit;
            let _open = open;
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(io, service);
            let mut connection = std::pin::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = served {
                tracing::debug!(error = %e, "an HTTP connection ended with an error");
            }
        });
    }
    while connections.join_next().await.is_some() {}
}

/// Counts a connection as open while it lives.
struct OpenConnection(Arc<AtomicUsize>);

impl OpenConnection {
    fn new(open: &Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(open.clone())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn is_out_of_descriptors(e: &io::Error) -> bool {
    #[cfg(unix)]
    return matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    );
    #[cfg(not(unix))]
    false
}

/// A socket whose writes fail once it has taken no byte for `timeout`: a client that
/// stops reading a response cannot hold its connection, and what is queued for it,
/// for longer than that.
struct WriteTimeout {
    stream: TcpStream,
    timeout: Duration,
    /// Started when a write finds the socket full; reset when a write goes through.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl WriteTimeout {
    fn new(stream: TcpStream, timeout: Duration) -> Self {
        WriteTimeout {
            stream,
            timeout,
            stalled: None,
        }
    }

    /// The outcome of a write-side poll, with the stall clock kept.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if stalled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client took no data for {timeout:?} (write_timeout)"),
            )));
        }
        Poll::Pending
    }
}

impl AsyncRead for WriteTimeout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteTimeout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.watch(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_flush(cx);
        self.watch(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.watch(cx, polled)
    }
}

/// The process's limit on open files, after raising its soft limit to the hard limit:
/// each connection is a file descriptor, and the common soft limit of 1,024 is far
/// below what a server can serve. `mcpflow serve --http` calls it at start; a library
/// user may call it once before [`bind`](super::HttpServer::bind), which sizes its
/// default connection cap from the limit.
///
/// # Errors
/// When the limit cannot be read, or raised.
#[cfg(unix)]
pub fn raise_open_file_limit() -> io::Result<u64> {
    let limit = read_open_file_limit()?;
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit that the call only reads.
        #[allow(unsafe_code)]
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const raised) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(limit.rlim_max)
}

#[cfg(unix)]
fn read_open_file_limit() -> io::Result<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for the call to fill in.
    #[allow(unsafe_code)]
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(limit)
}

/// The soft limit on open files, if it can be read.
pub(super) fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    return read_open_file_limit().ok().map(|l| l.rlim_cur);
    #[cfg(not(unix))]
    None
}
