//! Newline-delimited JSON over any `AsyncRead` + `AsyncWrite` pair.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use mcpflow::transport::StreamTransport;
//! let (a, b) = tokio::io::duplex(64);
//! let (a_read, a_write) = tokio::io::split(a);
//! let transport = StreamTransport::new(a_read, a_write);
//! # drop((transport, b)); }
//! ```

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};

use super::lines::LineReader;
use super::{Frame, FrameMeta, FrameReader, FrameWriter, InboundFrame, Transport, WriteNow};
use crate::config::DEFAULT_MAX_FRAME_BYTES;
use crate::error::TransportError;

/// A transport over a byte stream: one JSON message per line.
#[derive(Debug)]
pub struct StreamTransport<R, W> {
    reader: R,
    writer: W,
    max_frame_bytes: usize,
}

impl<R, W> StreamTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Frames longer than the default limit (32 MiB, [`crate::config::DEFAULT_MAX_FRAME_BYTES`])
    /// are skipped and answered with an error.
    pub fn new(reader: R, writer: W) -> Self {
        StreamTransport {
            reader,
            writer,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
        }
    }

    /// Set the largest accepted frame, in bytes.
    #[must_use]
    pub fn max_frame_bytes(mut self, n: usize) -> Self {
        self.max_frame_bytes = n;
        self
    }
}

impl<R, W> Transport for StreamTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Reader = LineReader<R>;
    type Writer = LineWriter<W>;

    fn split(self) -> (Self::Reader, Self::Writer) {
        (
            LineReader::new(self.reader, self.max_frame_bytes),
            LineWriter::new(self.writer),
        )
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> FrameReader for LineReader<R> {
    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
        LineReader::read_frame(self).await
    }
}

/// Room for frames written between two flushes.
const BUFFER_BYTES: usize = 64 * 1024;

/// Writes one line per frame through a buffer; [`FrameWriter::flush`] pushes a batch.
#[derive(Debug)]
pub struct LineWriter<W: AsyncWrite> {
    inner: BufWriter<W>,
}

impl<W: AsyncWrite + Unpin + Send> LineWriter<W> {
    /// Wrap a byte sink.
    pub fn new(inner: W) -> Self {
        LineWriter {
            inner: BufWriter::with_capacity(BUFFER_BYTES, inner),
        }
    }

    /// The byte sink. Whatever is buffered and not flushed has not reached it yet.
    pub(crate) fn get_mut(&mut self) -> &mut W {
        self.inner.get_mut()
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> FrameWriter for LineWriter<W> {
    async fn write_frame(&mut self, frame: Frame, _meta: &FrameMeta) -> Result<(), TransportError> {
        for part in frame.parts().chain([&b"\n"[..]]) {
            self.inner
                .write_all(part)
                .await
                .map_err(|e| TransportError::io("writing to the peer", e))?;
        }
        Ok(())
    }

    fn try_write_now(&mut self, frame: &Frame, _meta: &FrameMeta) -> WriteNow {
        // Only a frame that fits beside what is buffered: the buffer takes it whole
        // without touching the sink.
        if self.inner.buffer().len() + frame.len() + 1 > BUFFER_BYTES {
            return WriteNow::Declined;
        }
        let mut cx = Context::from_waker(Waker::noop());
        let mut inner = Pin::new(&mut self.inner);
        for part in frame.parts().chain([&b"\n"[..]]) {
            if !matches!(inner.as_mut().poll_write(&mut cx, part), Poll::Ready(Ok(n)) if n == part.len())
            {
                // Unreachable with room checked above; the frame may be half buffered,
                // so it cannot be declined any more: the writer's flush reports the error.
                return WriteNow::Buffered;
            }
        }
        // One look, without waiting: a sink that takes the bytes at once sends them now;
        // otherwise (or on an error, which the next flush reports) the writer's flush
        // finishes the job. The buffer keeps what the sink did not take.
        match inner.poll_flush(&mut cx) {
            Poll::Ready(Ok(())) => WriteNow::Sent,
            _ => WriteNow::Buffered,
        }
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        self.inner
            .flush()
            .await
            .map_err(|e| TransportError::io("flushing to the peer", e))
    }

    async fn close(&mut self) {
        let _ = self.inner.flush().await;
        let _ = self.inner.shutdown().await;
    }
}
