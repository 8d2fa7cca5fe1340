//! [`Session`]: starting a connection's tasks, closing them in order, and what ends the
//! connection when one of them panics.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::inbound::Inbound;
use super::lane::NotificationLane;
use super::stop::Stop;
use super::writer::{self, DirectWrite};
use super::{Peer, Service, Shared, deadline, reader};
use crate::config::SessionConfig;
use crate::error::CloseReason;
use crate::transport::{FrameWriter, Transport};

/// A running connection: owns its reader, writer, lane and request-timer tasks and its
/// request handlers. Dropping it aborts them all; [`Session::close`] ends it in order.
pub struct Session {
    peer: Peer,
    reader: Option<JoinHandle<()>>,
    writer: Option<JoinHandle<()>>,
    lane: Option<JoinHandle<()>>,
    /// Fails pending requests whose time is up; ends with the connection.
    sweeper: Option<JoinHandle<()>>,
    writer_stop: Arc<Stop>,
    /// How long the transport's own close may take ([`FrameWriter::close_time`]).
    ///
    /// [`FrameWriter::close_time`]: crate::transport::FrameWriter::close_time
    transport_close: Option<Duration>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Start the engine on `transport`: reader, writer and notification lane run from
    /// now on, before any handshake.
    pub fn start<T: Transport>(
        transport: T,
        service: Arc<dyn Service>,
        config: SessionConfig,
    ) -> Session {
        let facts = crate::telemetry::ConnectionFacts::new(transport.carrier());
        let (reader, writer) = transport.split();
        let transport_close = writer.close_time();
        let (outbound_tx, outbound_rx) = mpsc::channel(config.writer_queue_capacity.get());
        // The control queue holds the reader's own replies; sized so a peer must flood
        // us while not reading before one is dropped.
        let (control_tx, control_rx) = mpsc::channel(config.writer_queue_capacity.get().max(1024));
        let sink = writer::sink(writer);
        let direct: Arc<dyn DirectWrite> = Arc::new(writer::DirectWriter::new(
            &sink,
            control_tx.clone(),
            outbound_tx.clone(),
        ));
        let inbound = Inbound::new(
            config.max_concurrent_requests.get(),
            config.request_queue_capacity,
            config.close_grace,
            outbound_tx.clone(),
            direct.clone(),
        );
        let lane = NotificationLane::new(config.notification_lane_capacity.get());
        let first_id = config.first_request_id;
        let shared = Arc::new(Shared {
            config,
            next_id: AtomicI64::new(first_id),
            pending: Arc::default(),
            direct,
            outbound: outbound_tx,
            control: control_tx,
            ended: CancellationToken::new(),
            reason: OnceLock::new(),
            accept_batches: AtomicBool::new(false),
            envelope: std::sync::RwLock::new(None),
            inbound,
            lane: lane.clone(),
            reader_stop: Stop::default(),
            facts,
        });
        let peer = Peer {
            shared: shared.clone(),
            related: None,
        };
        let writer_stop = Arc::new(Stop::default());
        let writer = tokio::spawn(writer::run_writer(
            writer::WriterSink(sink),
            control_rx,
            outbound_rx,
            writer_stop.clone(),
            shared.clone(),
        ));
        let lane = tokio::spawn(lane.run(service.clone(), peer.clone()));
        let sweeper = tokio::spawn({
            let shared = shared.clone();
            async move {
                let _on_panic = ShutdownOnPanic::new(&shared, "request timer");
                deadline::run_sweeper(shared.pending.clone(), shared.ended.clone()).await;
            }
        });
        let reader = tokio::spawn(reader::run_reader(reader, shared, service, peer.clone()));
        Session {
            peer,
            reader: Some(reader),
            writer: Some(writer),
            lane: Some(lane),
            sweeper: Some(sweeper),
            writer_stop,
            transport_close,
        }
    }

    /// The handle for sending to the peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Wait until the connection ends (the peer closed it, the transport failed, or
    /// `close` was called).
    pub async fn closed(&self) {
        self.peer.closed().await;
    }

    /// End the connection in order, each step bounded by the close grace: stop reading,
    /// fail pending requests, let in-flight handlers finish (when the peer ended the
    /// stream) or cancel them (when this side closes), drain the notification lane,
    /// flush the writer and close the transport (for a child process: close stdin,
    /// wait, `SIGTERM`, `SIGKILL`).
    pub async fn close(mut self) {
        let shared = self.peer.shared.clone();
        let grace = shared.config.close_grace;
        let peer_ended = shared
            .reason
            .get()
            .is_some_and(|r| !matches!(r, CloseReason::ClosedLocally));
        shared.reader_stop.stop();
        if let Some(reader) = self.reader.take() {
            join_bounded(reader, grace, "reader").await;
        }
        shared.shutdown(CloseReason::ClosedLocally);
        if let Some(sweeper) = self.sweeper.take() {
            join_bounded(sweeper, grace, "request timer").await;
        }
        shared.inbound.close(grace, !peer_ended).await;
        if let Some(lane) = self.lane.take() {
            join_bounded(lane, grace, "notification lane").await;
        }
        self.writer_stop.stop();
        if let Some(writer) = self.writer.take() {
            // A write and the drain get a grace each; the transport's own close (a
            // child's shutdown sequence) has its own bound.
            let close = self.transport_close.unwrap_or(grace * 2);
            join_bounded(writer, grace * 2 + close, "writer").await;
        }
    }

    /// Wait for the connection to end, then close it in order.
    pub async fn run_to_end(self) {
        self.closed().await;
        self.close().await;
    }
}

async fn join_bounded(mut handle: JoinHandle<()>, grace: Duration, what: &str) {
    if tokio::time::timeout(grace, &mut handle).await.is_err() {
        tracing::warn!("{what} did not stop within {grace:?}; aborting it");
        handle.abort();
        // What the task holds is dropped once it is cancelled (a child process is
        // killed then): wait for that, so it happens before `close` returns.
        let _ = tokio::time::timeout(grace, handle).await;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let shared = &self.peer.shared;
        shared.shutdown(CloseReason::ClosedLocally);
        shared.inbound.abort_all();
        let handles = [
            self.reader.take(),
            self.lane.take(),
            self.sweeper.take(),
            self.writer.take(),
        ];
        for handle in handles.into_iter().flatten() {
            handle.abort();
        }
    }
}

/// Ends the connection when an engine task panics, so that no pending request waits for
/// an answer or a timeout that task would have delivered: they fail at once, naming it.
pub(crate) struct ShutdownOnPanic<'a> {
    shared: &'a Shared,
    task: &'static str,
}

impl<'a> ShutdownOnPanic<'a> {
    pub(crate) fn new(shared: &'a Shared, task: &'static str) -> Self {
        ShutdownOnPanic { shared, task }
    }
}

impl Drop for ShutdownOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!(
                task = self.task,
                "an engine task panicked; closing the connection"
            );
            self.shared.shutdown(CloseReason::EngineStopped(self.task));
        }
    }
}

/// Run a future, turning a panic into `Err(())`.
pub(crate) async fn catch_unwind<F: Future + Unpin>(future: F) -> Result<F::Output, ()> {
    CatchUnwind { inner: future }.await
}

struct CatchUnwind<F> {
    inner: F,
}

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.inner;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(poll) => poll.map(Ok),
            Err(_) => Poll::Ready(Err(())),
        }
    }
}
