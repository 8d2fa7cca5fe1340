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

use futures_util::FutureExt;
use futures_util::future::{Fuse, FusedFuture};
use sync_wrapper::SyncWrapper;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::inbound::Inbound;
use super::lane::NotificationLane;
use super::route::{FrameRouter, Routing};
use super::stop::Stop;
use super::writer::{self, DirectWrite};
use super::{BoxFuture, Peer, Service, Shared, deadline, reader};
use crate::config::SessionConfig;
use crate::error::CloseReason;
use crate::transport::{FrameReader, FrameWriter, Transport};

/// A running connection: owns its reader, writer, lane and request-timer tasks and its
/// request handlers. Dropping it aborts them all; [`Session::close`] ends it in order.
pub struct Session {
    peer: Peer,
    tasks: Tasks,
}

/// How the engine's four tasks run.
enum Tasks {
    /// Each spawned on its own ([`Session::start`]).
    Spawned(Engine<Option<JoinHandle<()>>>),
    /// As one future, run by whoever awaits the session's end ([`Session::joined`]);
    /// reached through `&mut` only, so the session stays `Sync`.
    Joined(SyncWrapper<Option<BoxFuture<'static, ()>>>),
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

/// The engine's four tasks (futures not yet running, or the handles of spawned ones)
/// and what their close needs.
struct Engine<T> {
    reader: T,
    writer: T,
    lane: T,
    /// Fails pending requests whose time is up; ends with the connection.
    sweeper: T,
    writer_stop: Arc<Stop>,
    /// How long the transport's own close may take ([`FrameWriter::close_time`]).
    ///
    /// [`FrameWriter::close_time`]: crate::transport::FrameWriter::close_time
    transport_close: Option<Duration>,
}

impl<T> Engine<T> {
    /// Each task through `f`: the writer first and the reader last, so that nothing is
    /// read before there is a writer for the replies.
    fn map<U>(self, mut f: impl FnMut(T) -> U) -> Engine<U> {
        let (writer, lane, sweeper) = (f(self.writer), f(self.lane), f(self.sweeper));
        Engine {
            reader: f(self.reader),
            writer,
            lane,
            sweeper,
            writer_stop: self.writer_stop,
            transport_close: self.transport_close,
        }
    }
}

fn engine<T: Transport>(
    transport: T,
    service: Arc<dyn Service>,
    config: SessionConfig,
) -> (Peer, Engine<BoxFuture<'static, ()>>) {
    let facts = crate::telemetry::ConnectionFacts::new(transport.carrier());
    let (mut reader, writer) = transport.split();
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
    let writer = Box::pin(writer::run_writer(
        writer::WriterSink(sink),
        control_rx,
        outbound_rx,
        writer_stop.clone(),
        shared.clone(),
    ));
    let lane = Box::pin(lane.run(service.clone(), peer.clone()));
    let sweeper = Box::pin({
        let shared = shared.clone();
        async move {
            let _on_panic = ShutdownOnPanic::new(&shared, "request timer");
            deadline::run_sweeper(shared.pending.clone(), shared.ended.clone()).await;
        }
    });
    // Set before the first read, so that no message routed elsewhere overtakes one
    // queued for the reader.
    let routing = Routing::new(
        reader.answers_batches_whole(),
        shared,
        service,
        peer.clone(),
    );
    reader.set_router(FrameRouter::new(&routing));
    let reader = Box::pin(reader::run_reader(reader, routing));
    let engine: Engine<BoxFuture<'static, ()>> = Engine {
        reader,
        writer,
        lane,
        sweeper,
        writer_stop,
        transport_close,
    };
    (peer, engine)
}

impl Session {
    /// Start the engine on `transport`: reader, writer and notification lane run from
    /// now on, before any handshake.
    pub fn start<T: Transport>(
        transport: T,
        service: Arc<dyn Service>,
        config: SessionConfig,
    ) -> Session {
        let (peer, engine) = engine(transport, service, config);
        let tasks = Tasks::Spawned(engine.map(|task| Some(tokio::spawn(task))));
        Session { peer, tasks }
    }

    /// The engine on `transport` as one task instead of four, for a connection that
    /// carries one exchange and is run to its end at once (an HTTP request served
    /// without a session): nothing runs until [`run_to_end`](Self::run_to_end) or
    /// [`close`](Self::close) is awaited, and [`closed`](Self::closed) completes only
    /// while one of them is. Request handlers still run in tasks of their own.
    pub(crate) fn joined<T: Transport>(
        transport: T,
        service: Arc<dyn Service>,
        config: SessionConfig,
    ) -> Session {
        let (peer, engine) = engine(transport, service, config);
        let run = Box::pin(run_joined(engine, peer.shared.clone()));
        Session {
            peer,
            tasks: Tasks::Joined(SyncWrapper::new(Some(run))),
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
        if let Some(run) = self.take_joined() {
            shared.reader_stop.stop();
            return run.await;
        }
        // A joined session's future is taken once, by the call that consumed it.
        let Tasks::Spawned(tasks) = &mut self.tasks else {
            return;
        };
        let grace = shared.config.close_grace;
        let peer_ended = shared.peer_ended();
        shared.reader_stop.stop();
        if let Some(reader) = tasks.reader.take() {
            join_bounded(reader, grace, "reader").await;
        }
        shared.shutdown(CloseReason::ClosedLocally);
        if let Some(sweeper) = tasks.sweeper.take() {
            join_bounded(sweeper, grace, "request timer").await;
        }
        shared.inbound.close(grace, !peer_ended).await;
        if let Some(lane) = tasks.lane.take() {
            join_bounded(lane, grace, "notification lane").await;
        }
        tasks.writer_stop.stop();
        if let Some(writer) = tasks.writer.take() {
            // A write and the drain get a grace each; the transport's own close (a
            // child's shutdown sequence) has its own bound.
            let close = tasks.transport_close.unwrap_or(grace * 2);
            join_bounded(writer, grace * 2 + close, "writer").await;
        }
    }

    /// Wait for the connection to end, then close it in order.
    pub async fn run_to_end(mut self) {
        if let Some(run) = self.take_joined() {
            return run.await;
        }
        self.closed().await;
        self.close().await;
    }

    /// The joined engine's future, once.
    fn take_joined(&mut self) -> Option<BoxFuture<'static, ()>> {
        match &mut self.tasks {
            Tasks::Joined(run) => run.get_mut().take(),
            Tasks::Spawned(_) => None,
        }
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

/// An engine task run inside the joined future: a panic ends it, as it would end a
/// spawned task, and the close goes on.
type Part = Fuse<CatchUnwind<BoxFuture<'static, ()>>>;

fn part(task: BoxFuture<'static, ()>) -> Part {
    CatchUnwind { inner: task }.fuse()
}

/// Run `main` to its end, polling the parts `beside` each time it is polled.
async fn alongside<F: Future>(main: F, beside: &mut [&mut Part]) -> F::Output {
    let mut main = std::pin::pin!(main);
    std::future::poll_fn(|cx| {
        for task in beside.iter_mut() {
            let _ = Pin::new(&mut **task).poll(cx);
        }
        main.as_mut().poll(cx)
    })
    .await
}

/// Run `task` (beside the others) for at most `limit`; past it, give it up.
async fn bounded(task: &mut Part, beside: &mut [&mut Part], limit: Duration, what: &str) {
    // Polled beside an earlier step, it may have ended already.
    if task.is_terminated() {
        return;
    }
    if tokio::time::timeout(limit, alongside(&mut *task, beside))
        .await
        .is_err()
    {
        tracing::warn!("{what} did not stop within {limit:?}; aborting it");
        *task = Fuse::terminated();
    }
}

/// The engine's four tasks in one future: they run until the reader ends, then close in
/// the order, and with the bounds, of [`Session::close`].
async fn run_joined(engine: Engine<BoxFuture<'static, ()>>, shared: Arc<Shared>) {
    let grace = shared.config.close_grace;
    let mut writer = part(engine.writer);
    let mut lane = part(engine.lane);
    let mut sweeper = part(engine.sweeper);
    let _ = alongside(
        part(engine.reader),
        &mut [&mut writer, &mut lane, &mut sweeper],
    )
    .await;
    let peer_ended = shared.peer_ended();
    shared.shutdown(CloseReason::ClosedLocally);
    bounded(
        &mut sweeper,
        &mut [&mut writer, &mut lane],
        grace,
        "request timer",
    )
    .await;
    alongside(
        shared.inbound.close(grace, !peer_ended),
        &mut [&mut writer, &mut lane],
    )
    .await;
    bounded(&mut lane, &mut [&mut writer], grace, "notification lane").await;
    engine.writer_stop.stop();
    let close = engine.transport_close.unwrap_or(grace * 2);
    bounded(&mut writer, &mut [], grace * 2 + close, "writer").await;
}

impl Drop for Session {
    fn drop(&mut self) {
        let shared = &self.peer.shared;
        shared.shutdown(CloseReason::ClosedLocally);
        shared.inbound.abort_all();
        if let Tasks::Spawned(tasks) = &mut self.tasks {
            let handles = [
                tasks.reader.take(),
                tasks.lane.take(),
                tasks.sweeper.take(),
                tasks.writer.take(),
            ];
            for handle in handles.into_iter().flatten() {
                handle.abort();
            }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use std::sync::atomic::Ordering;

    use mcpflow_protocol::ErrorObject;
    use mcpflow_protocol::jsonrpc::Notification;

    use super::*;
    use crate::session::{Reply, RequestContext};
    use crate::transport::memory::MemoryTransport;
    use crate::transport::{Frame, FrameKind, FrameMeta, FrameReader, FrameWriter, InboundFrame};

    /// `slow` answers after a second; `stuck` and every notification never end, and
    /// ignore their cancellation; a notification whose method is `panic` panics on the
    /// reader.
    struct Handlers {
        dropped: Arc<AtomicBool>,
    }

    /// Sets its flag when dropped: the future holding it was given up.
    struct DropFlag(Arc<AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    impl Service for Handlers {
        fn handle_request(
            &self,
            method: &str,
            _cx: RequestContext,
        ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
            let slow = method == "slow";
            Box::pin(async move {
                if slow {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    return Ok(Reply::json(&"done").unwrap());
                }
                std::future::pending().await
            })
        }

        fn handle_notification(&self, _n: Notification, _peer: Peer) -> BoxFuture<'static, ()> {
            let flag = DropFlag(self.dropped.clone());
            Box::pin(async move {
                let _flag = flag;
                std::future::pending().await
            })
        }

        fn observe_notification(&self, notification: &Notification, _peer: &Peer) {
            assert_ne!(
                notification.method, "panic",
                "observe_notification panicked"
            );
        }
    }

    fn joined(dropped: &Arc<AtomicBool>) -> (Session, MemoryTransport) {
        let (ours, theirs) = MemoryTransport::pair(16);
        let handlers = Arc::new(Handlers {
            dropped: dropped.clone(),
        });
        (
            Session::joined(ours, handlers, SessionConfig::default()),
            theirs,
        )
    }

    async fn send(writer: &mut impl FrameWriter, text: &str) {
        let meta = FrameMeta::new(FrameKind::Notification);
        writer
            .write_frame(Frame::new(text.as_bytes().to_vec()), &meta)
            .await
            .unwrap();
    }

    /// How long a run may take on the paused clock before the test fails.
    const LIMIT: Duration = Duration::from_secs(60);

    #[tokio::test(start_paused = true)]
    async fn a_joined_session_lets_its_handler_finish_when_the_peer_ends() {
        let dropped = Arc::new(AtomicBool::new(false));
        let (session, theirs) = joined(&dropped);
        let (mut reader, mut writer) = theirs.split();
        send(&mut writer, r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#).await;
        writer.close().await;
        tokio::time::timeout(LIMIT, session.run_to_end())
            .await
            .expect("the joined session ran to its end");
        let read = tokio::time::timeout(LIMIT, reader.read_frame()).await;
        let Some(InboundFrame::Message(answer)) = read.expect("the answer is read").unwrap() else {
            panic!("no answer was written");
        };
        let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["result"], "done", "{answer}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_joined_session_gives_up_on_what_does_not_stop_within_the_grace() {
        let dropped = Arc::new(AtomicBool::new(false));
        let (session, theirs) = joined(&dropped);
        let (_reader, mut writer) = theirs.split();
        send(&mut writer, r#"{"jsonrpc":"2.0","id":1,"method":"stuck"}"#).await;
        send(
            &mut writer,
            r#"{"jsonrpc":"2.0","method":"notifications/stuck"}"#,
        )
        .await;
        writer.close().await;
        let peer = session.peer().clone();
        tokio::time::timeout(LIMIT, session.run_to_end())
            .await
            .expect("each step of the close is bounded by the close grace");
        assert!(peer.is_closed());
        assert_eq!(
            peer.requests_in_flight(),
            0,
            "the stuck handler was aborted"
        );
        assert!(
            dropped.load(Ordering::SeqCst),
            "the notification handler that never ends was given up"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_panic_in_a_joined_engine_task_ends_the_connection_naming_it() {
        let dropped = Arc::new(AtomicBool::new(false));
        let (session, theirs) = joined(&dropped);
        let (_reader, mut writer) = theirs.split();
        send(&mut writer, r#"{"jsonrpc":"2.0","method":"panic"}"#).await;
        let peer = session.peer().clone();
        tokio::time::timeout(LIMIT, session.run_to_end())
            .await
            .expect("the joined session ran to its end");
        assert!(
            matches!(
                peer.close_reason(),
                Some(CloseReason::EngineStopped("reader"))
            ),
            "{:?}",
            peer.close_reason()
        );
    }
}
