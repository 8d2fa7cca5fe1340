//! The connection layer of [`HttpServer::bind`](super::HttpServer::bind): accepting
//! sockets under a connection cap, and serving each with hyper under a header-read
//! timeout (which also ends idle keep-alive connections) and a write timeout.
//!
//! At the cap, a new connection takes the place of the oldest connection that has not
//! sent a whole request in [`SHED_AFTER`] (slowloris holds its connections that way);
//! when there is none, it waits for a connection to close, and the other connections
//! wait in the kernel's backlog. An accept that fails for lack of file descriptors
//! backs off instead of spinning.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use super::table::lock;

/// The limits of the connection layer.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnectionLimits {
    pub(super) max_connections: usize,
    pub(super) header_timeout: Duration,
    pub(super) write_timeout: Duration,
}

/// How long accepting pauses after running out of file descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How long a connection may go without a whole request before a new connection may
/// take its place at the cap.
pub(super) const SHED_AFTER: Duration = Duration::from_secs(1);

/// Accept and serve connections until `stop`, then let open connections finish.
pub(super) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    open: Arc<AtomicUsize>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let silent = Arc::new(Mutex::new(Silent::default()));
    let mut connections = JoinSet::new();
    'accept: loop {
        while connections.try_join_next().is_some() {}
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
        let permit = loop {
            if let Ok(permit) = slots.clone().try_acquire_owned() {
                break permit;
            }
            let shed_next = lock(&silent).shed_oldest();
            let wake = shed_next.unwrap_or_else(|| Instant::now() + SHED_AFTER);
            tokio::select! {
                permit = slots.clone().acquire_owned() => match permit {
                    Ok(permit) => break permit,
                    Err(_) => break 'accept,
                },
                () = tokio::time::sleep_until(wake) => {}
                () = stop.cancelled() => break 'accept,
            }
        };
        // Each SSE event is written as soon as it is produced; with Nagle's algorithm
        // on, the next small write waits for the client's delayed ACK (about 40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let io = TokioIo::new(WriteTimeout::new(stream, limits.write_timeout));
        let (watch, shed) = Silent::watch(&silent);
        let service = FirstRequest {
            inner: TowerToHyperService::new(router.clone()),
            watch: watch.clone(),
        };
        let stop = stop.clone();
        let open = OpenConnection::new(&open);
        connections.spawn(async move {
            let _slot = permit;
            let _open = open;
            let _watch = watch;
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(io, service);
            let mut connection = std::pin::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                () = shed.cancelled() => {
                    tracing::debug!("closed a connection that sent no request, for a new one (max_connections)");
                    Ok(())
                }
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

/// The connections that have not yet sent a whole request, oldest first.
#[derive(Default)]
struct Silent {
    next: u64,
    connections: BTreeMap<u64, (Instant, CancellationToken)>,
}

impl Silent {
    /// Watch a new connection: the handle that stops watching (on its first request,
    /// or when it closes), and the token that sheds it.
    fn watch(silent: &Arc<Mutex<Silent>>) -> (Arc<Watch>, CancellationToken) {
        let shed = CancellationToken::new();
        let mut guard = lock(silent);
        let id = guard.next;
        guard.next += 1;
        guard.connections.insert(id, (Instant::now(), shed.clone()));
        let watch = Watch {
            silent: silent.clone(),
            id,
            seen: AtomicBool::new(false),
        };
        (Arc::new(watch), shed)
    }

    /// Shed the oldest silent connection if it is old enough; otherwise, when the
    /// oldest will be.
    fn shed_oldest(&mut self) -> Option<Instant> {
        let (&id, &(since, _)) = self.connections.iter().next()?;
        if since.elapsed() < SHED_AFTER {
            return Some(since + SHED_AFTER);
        }
        if let Some((_, shed)) = self.connections.remove(&id) {
            shed.cancel();
        }
        None
    }
}

/// One connection in [`Silent`], until its first request or its end.
struct Watch {
    silent: Arc<Mutex<Silent>>,
    id: u64,
    seen: AtomicBool,
}

impl Watch {
    fn stop(&self) {
        if !self.seen.swap(true, Ordering::Relaxed) {
            lock(&self.silent).connections.remove(&self.id);
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The connection's service, which stops watching it at its first request.
struct FirstRequest<S> {
    inner: S,
    watch: Arc<Watch>,
}

impl<S, R> hyper::service::Service<R> for FirstRequest<S>
where
    S: hyper::service::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, request: R) -> Self::Future {
        self.watch.stop();
        self.inner.call(request)
    }
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
