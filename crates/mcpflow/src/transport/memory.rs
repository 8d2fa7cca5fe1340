//! An in-process transport pair carrying real serialized JSON frames.
//!
//! Each direction is a queue of at most `capacity` frames. Capacity 0 is a rendezvous:
//! a send completes only once the other side has taken the frame, the strictest
//! schedule for finding deadlocks.
//!
//! ```
//! use mcpflow::transport::MemoryTransport;
//! let (client_side, server_side) = MemoryTransport::pair(0);
//! # drop((client_side, server_side));
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use tokio::sync::Notify;

use super::{Frame, FrameMeta, FrameReader, FrameWriter, InboundFrame, Transport, WriteNow};
use crate::error::TransportError;

/// One end of an in-memory connection.
#[derive(Debug)]
pub struct MemoryTransport {
    incoming: Arc<Channel>,
    outgoing: Arc<Channel>,
}

impl MemoryTransport {
    /// Two connected ends; each direction buffers at most `capacity` frames.
    pub fn pair(capacity: usize) -> (MemoryTransport, MemoryTransport) {
        let a_to_b = Channel::new(capacity);
        let b_to_a = Channel::new(capacity);
        (
            MemoryTransport {
                incoming: b_to_a.clone(),
                outgoing: a_to_b.clone(),
            },
            MemoryTransport {
                incoming: a_to_b,
                outgoing: b_to_a,
            },
        )
    }
}

impl Transport for MemoryTransport {
    type Reader = MemoryReader;
    type Writer = MemoryWriter;

    fn carrier(&self) -> crate::transport::Carrier {
        crate::transport::Carrier::InProcess
    }

    fn split(self) -> (MemoryReader, MemoryWriter) {
        (
            MemoryReader {
                channel: self.incoming,
            },
            MemoryWriter {
                channel: self.outgoing,
            },
        )
    }
}

#[derive(Debug)]
struct Channel {
    capacity: usize,
    state: Mutex<State>,
    readable: Notify,
    writable: Notify,
}

#[derive(Debug, Default)]
struct State {
    frames: VecDeque<Bytes>,
    pushed: u64,
    taken: u64,
    writer_closed: bool,
    reader_closed: bool,
}

impl Channel {
    fn new(capacity: usize) -> Arc<Channel> {
        Arc::new(Channel {
            capacity,
            state: Mutex::new(State::default()),
            readable: Notify::new(),
            writable: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn send(&self, frame: Bytes) -> Result<(), TransportError> {
        let broken = || {
            TransportError::io(
                "writing to the peer",
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the other end was dropped"),
            )
        };
        let mut frame = Some(frame);
        let mut ticket = 0;
        loop {
            let notified = self.writable.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                if state.reader_closed {
                    return Err(broken());
                }
                if let Some(f) = frame.take() {
                    if state.frames.len() < self.capacity.max(1) {
                        ticket = self.push(&mut state, f);
                    } else {
                        frame = Some(f);
                    }
                }
                if frame.is_none() && (self.capacity > 0 || state.taken >= ticket) {
                    return Ok(());
                }
            }
            notified.await;
        }
    }

    /// Queue `frame` if there is room now. A rendezvous (capacity 0) always waits for
    /// the reader, so it never takes a frame here; nor does a closed channel, whose
    /// error the writer reports.
    fn try_send(&self, frame: &Frame) -> WriteNow {
        let mut state = self.lock();
        if state.reader_closed || state.frames.len() >= self.capacity {
            return WriteNow::Declined;
        }
        self.push(&mut state, frame.clone().into_bytes());
        WriteNow::Sent
    }

    /// Queue `frame` (there is room) and wake the reader; the frame's ticket.
    fn push(&self, state: &mut State, frame: Bytes) -> u64 {
        state.frames.push_back(frame);
        state.pushed += 1;
        self.readable.notify_one();
        state.pushed
    }

    async fn recv(&self) -> Option<Bytes> {
        loop {
            let notified = self.readable.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                if let Some(frame) = state.frames.pop_front() {
                    state.taken += 1;
                    self.writable.notify_waiters();
                    return Some(frame);
                }
                if state.writer_closed {
                    return None;
                }
            }
            notified.await;
        }
    }
}

/// The receiving half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryReader {
    channel: Arc<Channel>,
}

impl FrameReader for MemoryReader {
    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
        Ok(self.channel.recv().await.map(InboundFrame::Message))
    }
}

impl Drop for MemoryReader {
    fn drop(&mut self) {
        self.channel.lock().reader_closed = true;
        self.channel.writable.notify_waiters();
    }
}

/// The sending half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryWriter {
    channel: Arc<Channel>,
}

impl FrameWriter for MemoryWriter {
    async fn write_frame(&mut self, frame: Frame, _meta: &FrameMeta) -> Result<(), TransportError> {
        self.channel.send(frame.into_bytes()).await
    }

    fn try_write_now(&mut self, frame: &Frame, _meta: &FrameMeta) -> WriteNow {
        self.channel.try_send(frame)
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }

    async fn close(&mut self) {
        self.channel.lock().writer_closed = true;
        self.channel.readable.notify_one();
    }
}

impl Drop for MemoryWriter {
    fn drop(&mut self) {
        self.channel.lock().writer_closed = true;
        self.channel.readable.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::FrameKind;

    #[tokio::test]
    async fn a_frame_is_taken_now_only_where_it_needs_no_wait() {
        let meta = FrameMeta::new(FrameKind::Request);
        let (rendezvous, _other) = MemoryTransport::pair(0);
        let (_, mut writer) = rendezvous.split();
        let text = |text: &'static str| Frame::new(text.as_bytes());
        assert_eq!(writer.try_write_now(&text("{}"), &meta), WriteNow::Declined);

        let (ours, theirs) = MemoryTransport::pair(1);
        let (_, mut writer) = ours.split();
        let (mut reader, _) = theirs.split();
        assert_eq!(writer.try_write_now(&text("[1]"), &meta), WriteNow::Sent);
        assert_eq!(
            writer.try_write_now(&text("[2]"), &meta),
            WriteNow::Declined,
            "full"
        );
        let frame = reader.read_frame().await.expect("read");
        assert!(matches!(frame, Some(InboundFrame::Message(f)) if f == b"[1]"[..]));
        drop(reader);
        assert_eq!(
            writer.try_write_now(&text("[3]"), &meta),
            WriteNow::Declined,
            "the reader is gone: the writer reports it"
        );
    }
}
