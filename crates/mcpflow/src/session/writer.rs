//! The writer: the one task that owns the transport's sending half.
//!
//! Senders enqueue serialized frames; the writer writes every frame already queued,
//! then flushes once, so bursts share one flush. Replies the reader produces itself
//! (errors, pings, busy answers) and courtesy cancellations come on a separate control
//! queue that the writer prefers. One exception to batching: a response that follows
//! progress sent on behalf of its request is written apart from it
//! ([`FrameWriter::flush_apart`]), so peers that lose progress arriving in the same read
//! as the response are not made worse.
//!
//! Between batches the writer lends its transport to a sequential caller's request,
//! and to the answer to a sequential peer's request ([`DirectWrite`]): when nothing is
//! queued, the frame is written with [`FrameWriter::try_write_now`], which never waits,
//! instead of waking the writer to do it. An answer after progress for its request is
//! left to the writer, which writes it apart.
//! Frames never overtake each other: a frame is written directly only while both queues
//! are empty and the writer is idle. The writer takes a frame off a queue and the
//! transport out of the sink under the sink's lock, and a direct write checks the
//! queues under the same lock, so no frame is ever between the two unseen.

use std::collections::HashSet;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;

use foldhash::fast::RandomState;
use mcpflow_protocol::RequestId;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Shared;
use super::stop::Stop;
use crate::error::CloseReason;
use crate::transport::{Frame, FrameKind, FrameMeta, FrameWriter, WriteNow};

/// Frames written between two flushes, at most.
const MAX_BATCH: usize = 256;
/// Requests remembered as having progress written on their behalf, at most.
const MAX_NOTIFIED: usize = 1024;

/// Ids of the peer's requests with progress written on their behalf. Looked up once per
/// progress report and per response; the ids come from the peer, so the hasher is
/// seeded per set, as for the table of running requests.
type Notified = HashSet<RequestId, RandomState>;

/// A serialized message on its way out.
#[derive(Debug)]
pub(crate) struct Outbound {
    pub(crate) frame: Frame,
    pub(crate) meta: FrameMeta,
    /// Not a message, when set: what the writer is asked to do instead.
    pub(crate) signal: Option<Signal>,
}

/// An instruction to the writer that travels in order with the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// End the stream of the request in `meta.related`.
    EndStream,
    /// Flush: a direct write left bytes the transport could not push at once.
    Flush,
}

impl Outbound {
    pub(crate) fn new(bytes: Vec<u8>, meta: FrameMeta) -> Outbound {
        Outbound::frame(Frame::new(bytes), meta)
    }

    pub(crate) fn frame(frame: Frame, meta: FrameMeta) -> Outbound {
        Outbound {
            frame,
            meta,
            signal: None,
        }
    }

    /// A signal to the writer, queued behind the frames before it.
    pub(crate) fn signal(signal: Signal, related: Option<RequestId>) -> Outbound {
        Outbound {
            signal: Some(signal),
            ..Outbound::frame(
                Frame::new(bytes::Bytes::new()),
                FrameMeta::new(FrameKind::Notification).related_to(related),
            )
        }
    }
}

/// What the writer holds between batches: the transport's sending half, and the
/// requests with progress written on their behalf since their last flush apart.
pub(crate) struct Idle<W> {
    writer: W,
    notified: Notified,
}

/// The writer's state while it is idle. The writer takes it out for each batch and
/// puts it back after; a direct write uses it in place, under the lock, without
/// waiting on anything. `None` while the writer has it, and once it is closed.
pub(crate) type Sink<W> = Arc<Mutex<Option<Idle<W>>>>;

/// A sink holding `writer`.
pub(crate) fn sink<W>(writer: W) -> Sink<W> {
    Arc::new(Mutex::new(Some(Idle {
        writer,
        notified: Notified::default(),
    })))
}

fn lock<W>(sink: &Mutex<Option<Idle<W>>>) -> MutexGuard<'_, Option<Idle<W>>> {
    sink.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The writer task's hold on the sink. However the task ends (aborted too, even
/// before it first runs), the transport goes with it when this drops: the session's
/// handles that outlive the task must not keep the stream open.
pub(crate) struct WriterSink<W>(pub(crate) Sink<W>);

impl<W> Drop for WriterSink<W> {
    fn drop(&mut self) {
        drop(lock(&self.0).take());
    }
}

/// Whether a sender looks sequential, for a direct write: its frame is the only one of
/// its kind in flight, and so was the one before it. The first frame of a burst is
/// alone too, but follows one that was not, so a burst is left to the writer to batch.
#[derive(Debug, Default)]
pub(crate) struct Sequential(AtomicBool);

impl Sequential {
    /// Record whether this frame is `alone`; whether the sender looks sequential.
    pub(crate) fn next(&self, alone: bool) -> bool {
        self.0.swap(alone, Ordering::Relaxed) && alone
    }
}

/// What became of a direct write.
#[derive(Debug)]
pub(crate) enum Direct {
    /// Taken by the transport (and flushed, or the writer was asked to flush).
    Written,
    /// Not taken: queue it.
    Declined(Outbound),
}

/// Writes a frame from its sender's task when the writer is idle (see the module docs).
pub(crate) trait DirectWrite: Send + Sync {
    fn write_now(&self, frame: Outbound) -> Direct;
}

/// [`DirectWrite`] over the writer's own sink.
pub(crate) struct DirectWriter<W> {
    sink: Sink<W>,
    /// The writer's queues; the outbound one also takes the flush signal after a
    /// write the transport could not push at once.
    control: mpsc::Sender<Outbound>,
    outbound: mpsc::Sender<Outbound>,
}

impl<W> DirectWriter<W> {
    pub(crate) fn new(
        sink: &Sink<W>,
        control: mpsc::Sender<Outbound>,
        outbound: mpsc::Sender<Outbound>,
    ) -> DirectWriter<W> {
        DirectWriter {
            sink: sink.clone(),
            control,
            outbound,
        }
    }
}

/// Whether a frame is in `queue`, or a sender holds room for one. Room comes back when
/// the writer takes the frame, so this is a load, with no count kept per frame.
fn holds_frames(queue: &mpsc::Sender<Outbound>) -> bool {
    queue.capacity() != queue.max_capacity()
}

impl<W: FrameWriter> DirectWrite for DirectWriter<W> {
    fn write_now(&self, frame: Outbound) -> Direct {
        // A large response is left to the writer: the transport may wait for room.
        if frame.frame.is_parted() {
            return Direct::Declined(frame);
        }
        // The writer has the sink for a whole batch; a frame queued before this one
        // must go first.
        let mut sink = lock(&self.sink);
        let Some(Idle { writer, notified }) = sink.as_mut() else {
            return Direct::Declined(frame);
        };
        if holds_frames(&self.control) || holds_frames(&self.outbound) {
            return Direct::Declined(frame);
        }
        // An answer after progress for its request is written apart, by the writer.
        if let FrameKind::Response(Some(id)) = &frame.meta.kind
            && !notified.is_empty()
            && notified.contains(id)
        {
            return Direct::Declined(frame);
        }
        match writer.try_write_now(&frame.frame, &frame.meta) {
            WriteNow::Sent => Direct::Written,
            WriteNow::Buffered => {
                // When the queue is full the writer has a batch to write, and flushes
                // after it.
                let _ = self
                    .outbound
                    .try_send(Outbound::signal(Signal::Flush, None));
                Direct::Written
            }
            WriteNow::Declined => Direct::Declined(frame),
        }
    }
}

/// Write `frame`, or do what its signal asks.
async fn write_one<W: FrameWriter>(
    writer: &mut W,
    frame: Outbound,
) -> Result<(), crate::error::TransportError> {
    match frame.signal {
        Some(Signal::EndStream) => {
            if let Some(request) = &frame.meta.related {
                writer.flush().await?;
                writer.end_stream(request).await;
            }
            Ok(())
        }
        // The batch ends with a flush.
        Some(Signal::Flush) => Ok(()),
        None => writer.write_frame(frame.frame, &frame.meta).await,
    }
}

pub(crate) async fn run_writer<W: FrameWriter>(
    sink: WriterSink<W>,
    mut control: mpsc::Receiver<Outbound>,
    mut outbound: mpsc::Receiver<Outbound>,
    stop: Arc<Stop>,
    shared: Arc<Shared>,
) {
    let sink = &sink.0;
    loop {
        let Next::Frame(first, mut idle) =
            next_frame(sink, &mut control, &mut outbound, &stop).await
        else {
            break;
        };
        let batch = write_batch(
            &mut idle.writer,
            first,
            &mut control,
            &mut outbound,
            &mut idle.notified,
        );
        // A write that has not finished one close grace after it began, once the
        // connection is closing, waits on a peer that stopped reading: give it up.
        let give_up = async {
            let deadline = Instant::now() + shared.config.close_grace;
            stop.stopped().await;
            tokio::time::sleep_until(deadline).await;
        };
        let written = tokio::select! {
            written = batch => written,
            () = give_up => {
                tracing::warn!(
                    grace = ?shared.config.close_grace,
                    "the peer stopped reading while the connection closed; abandoning the write"
                );
                idle.writer.abandon().await;
                return;
            }
        };
        if let Err(e) = written {
            shared.shutdown(CloseReason::Transport(e));
            idle.writer.close().await;
            return;
        }
        *lock(sink) = Some(idle);
    }
    // Closing: write what is already queued, then end the stream.
    let Some(Idle { mut writer, .. }) = lock(sink).take() else {
        return;
    };
    let mut rest = Vec::new();
    while let Ok(frame) = control.try_recv() {
        rest.push(frame);
    }
    while let Ok(frame) = outbound.try_recv() {
        rest.push(frame);
    }
    let drain = async {
        for frame in rest {
            write_one(&mut writer, frame).await?;
        }
        writer.flush().await
    };
    match tokio::time::timeout(shared.config.close_grace, drain).await {
        Ok(_) => writer.close().await,
        Err(_) => {
            tracing::warn!(
                grace = ?shared.config.close_grace,
                "the peer did not take the last frames while the connection closed; abandoning them"
            );
            writer.abandon().await;
        }
    }
}

/// What the idle writer waits for.
enum Next<W> {
    /// A frame, with the writer's state taken out of the sink under the same lock.
    Frame(Outbound, Idle<W>),
    /// The stop signal, or both queues closed: drain and close.
    Stop,
}

/// Wait for the next frame: control first (the reader's replies must never wait behind
/// user traffic), then user traffic, then the stop signal, which the caller drains.
/// A frame leaves its queue and the transport leaves the sink under one lock, so a
/// direct write sees either the frame still queued or the transport gone.
async fn next_frame<W>(
    sink: &Sink<W>,
    control: &mut mpsc::Receiver<Outbound>,
    outbound: &mut mpsc::Receiver<Outbound>,
    stop: &Stop,
) -> Next<W> {
    poll_fn(|cx| {
        let mut sink = lock(sink);
        let mut closed = 0;
        for queue in [&mut *control, &mut *outbound] {
            match queue.poll_recv(cx) {
                Poll::Ready(Some(frame)) => {
                    return Poll::Ready(match sink.take() {
                        Some(idle) => Next::Frame(frame, idle),
                        // Not while this task runs: only it takes the state out.
                        None => Next::Stop,
                    });
                }
                Poll::Ready(None) => closed += 1,
                Poll::Pending => {}
            }
        }
        drop(sink);
        if closed == 2 || stop.poll_stopped(cx).is_ready() {
            return Poll::Ready(Next::Stop);
        }
        Poll::Pending
    })
    .await
}

async fn write_batch<W: FrameWriter>(
    writer: &mut W,
    first: Outbound,
    control: &mut mpsc::Receiver<Outbound>,
    outbound: &mut mpsc::Receiver<Outbound>,
    notified: &mut Notified,
) -> Result<(), crate::error::TransportError> {
    let mut next = Some(first);
    for _ in 0..MAX_BATCH {
        let Some(frame) = next
            .take()
            .or_else(|| control.try_recv().or_else(|_| outbound.try_recv()).ok())
        else {
            break;
        };
        match (&frame.meta.kind, &frame.meta.related) {
            (FrameKind::Progress, Some(request)) if !notified.contains(request) => {
                // Requests cancelled after their progress are never answered: keep the set
                // bounded (forgetting costs at most one missed flush apart).
                if notified.len() >= MAX_NOTIFIED {
                    notified.clear();
                }
                notified.insert(request.clone());
            }
            // (Most sessions send no progress: skip hashing the id then.)
            (FrameKind::Response(Some(id)), _) if !notified.is_empty() && notified.remove(id) => {
                writer.flush_apart().await?;
            }
            _ => {}
        }
        write_one(writer, frame).await?;
    }
    writer.flush().await
}
