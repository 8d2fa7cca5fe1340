//! The writer: the one task that owns the transport's sending half.
//!
//! Senders enqueue serialized frames; the writer writes every frame already queued,
//! then flushes once, so bursts share one flush. Replies the reader produces itself
//! (errors, pings, busy answers) and courtesy cancellations come on a separate control
//! queue that the writer prefers. One exception to batching: a response that follows
//! progress sent on behalf of its request is written apart from it
//! ([`FrameWriter::flush_apart`]), so peers that lose progress arriving in the same read
//! as the response are not made worse.

use std::collections::HashSet;
use std::sync::Arc;

use foldhash::fast::RandomState;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::Shared;
use super::stop::Stop;
use crate::error::CloseReason;
use crate::transport::{FrameKind, FrameMeta, FrameWriter};
use mcpflow_protocol::RequestId;

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
    pub(crate) bytes: Vec<u8>,
    /// A large result that follows `bytes` (a response's head) and is closed by `}`:
    /// written in place, never copied into `bytes`.
    pub(crate) result: Option<Box<RawValue>>,
    pub(crate) meta: FrameMeta,
    /// Not a message: end the stream of the request in `meta.related`.
    pub(crate) end_stream: bool,
}

impl Outbound {
    pub(crate) fn new(bytes: Vec<u8>, meta: FrameMeta) -> Outbound {
        Outbound {
            bytes,
            result: None,
            meta,
            end_stream: false,
        }
    }
}

async fn write_one<W: FrameWriter>(
    writer: &mut W,
    mut frame: Outbound,
) -> Result<(), crate::error::TransportError> {
    if frame.end_stream {
        if let Some(request) = &frame.meta.related {
            writer.flush().await?;
            writer.end_stream(request).await;
        }
        return Ok(());
    }
    match frame.result.take() {
        Some(result) => {
            writer
                .write_response_parts(&frame.bytes, result, &frame.meta)
                .await
        }
        None => writer.write_frame(&frame.bytes, &frame.meta).await,
    }
}

pub(crate) async fn run_writer<W: FrameWriter>(
    mut writer: W,
    mut control: mpsc::Receiver<Outbound>,
    mut outbound: mpsc::Receiver<Outbound>,
    stop: Arc<Stop>,
    shared: Arc<Shared>,
) {
    // Requests with progress written on their behalf since their last flush apart.
    let mut notified = Notified::default();
    loop {
        // Control first (the reader's replies must never wait behind user traffic),
        // then user traffic, then the stop signal, which drains below.
        let first = tokio::select! {
            biased;
            Some(frame) = control.recv() => frame,
            Some(frame) = outbound.recv() => frame,
            () = stop.stopped() => break,
            else => break,
        };
        let batch = write_batch(
            &mut writer,
            first,
            &mut control,
            &mut outbound,
            &mut notified,
        );
        if let Err(e) = batch.await {
            shared.shutdown(CloseReason::Transport(e));
            writer.close().await;
            return;
        }
    }
    // Closing: write what is already queued, then end the stream.
    let mut rest = Vec::new();
    while let Ok(frame) = control.try_recv() {
        rest.push(frame);
    }
    while let Ok(frame) = outbound.try_recv() {
        rest.push(frame);
    }
    for frame in rest {
        if write_one(&mut writer, frame).await.is_err() {
            break;
        }
    }
    let _ = writer.flush().await;
    writer.close().await;
}

/// Whether a notification frame is `notifications/progress`, as
/// `Message::write_notification` writes it (every progress report this engine sends).
/// Progress is what a client can lose to a response in the same read; logs and other
/// notifications do not need the response kept apart.
fn is_progress(frame: &[u8]) -> bool {
    frame.starts_with(br#"{"jsonrpc":"2.0","method":"notifications/progress""#)
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
            (FrameKind::Notification, Some(request))
                if !frame.end_stream
                    && is_progress(&frame.bytes)
                    && !notified.contains(request) =>
            {
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
