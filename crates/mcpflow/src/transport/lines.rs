//! Newline framing over a byte stream, in linear time.
//!
//! [`LineReader`] reads into one growing buffer and scans each byte once for `\n`, so a
//! 10 MiB message costs one pass however it is split across reads. A line longer than
//! the limit is skipped to its end (newline framing can always resynchronise) and
//! reported as [`InboundFrame::Oversized`].

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::InboundFrame;
use crate::config::LARGE_MESSAGE_BYTES;
use crate::error::TransportError;

const READ_CHUNK: usize = 64 * 1024;
const PREFIX_KEPT: usize = 256;
/// Largest read buffer kept between messages.
const RETAINED_CAPACITY: usize = 16 * 1024 * 1024;

/// Reads newline-delimited frames from an `AsyncRead`.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    /// Bytes read and not handed out yet; a line is split off its front.
    buf: BytesMut,
    /// Bytes of `buf` already scanned for a newline.
    scanned: usize,
    max_frame_bytes: usize,
    /// While skipping an oversized line: its length so far and its first bytes.
    skipping: Option<(usize, Vec<u8>)>,
    /// Length of the last large line: a peer that sent one large message often sends
    /// another of about its size, so a line that grows past `LARGE_MESSAGE_BYTES` gets
    /// room for that much at once instead of doubling its way there.
    last_large: usize,
    eof: bool,
}

impl<R: AsyncRead + Unpin + Send> LineReader<R> {
    /// Frames longer than `max_frame_bytes` are skipped and reported.
    pub fn new(inner: R, max_frame_bytes: usize) -> Self {
        LineReader {
            inner,
            buf: BytesMut::with_capacity(READ_CHUNK),
            scanned: 0,
            max_frame_bytes,
            skipping: None,
            last_large: 0,
            eof: false,
        }
    }

    /// The next non-empty line (without `\n` or a trailing `\r`), `Ok(None)` at end of
    /// stream. Cancel-safe: bytes read so far stay in the buffer.
    pub async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
        loop {
            if let Some(frame) = self.next_buffered() {
                return Ok(Some(frame));
            }
            if self.eof {
                return Ok(self.finish());
            }
            if self.buf.is_empty() && self.buf.capacity() > RETAINED_CAPACITY {
                // Do not keep the room of one huge message alive between messages.
                self.buf = BytesMut::with_capacity(READ_CHUNK);
            }
            // A large line like the last one gets its room at once; otherwise one read
            // chunk, the buffer doubling as it must.
            self.buf
                .reserve(self.large_line_room().unwrap_or(READ_CHUNK));
            let n = self
                .inner
                .read_buf(&mut self.buf)
                .await
                .map_err(|e| TransportError::io("reading from the peer", e))?;
            if n == 0 {
                self.eof = true;
            }
        }
    }

    /// For a line past `LARGE_MESSAGE_BYTES` that is still shorter than the last large
    /// line, the free space to have before the next read: the rest of that length.
    fn large_line_room(&self) -> Option<usize> {
        let pending = self.buf.len();
        (pending >= LARGE_MESSAGE_BYTES && self.last_large > pending && self.skipping.is_none())
            .then(|| self.last_large - pending + READ_CHUNK)
    }

    fn next_buffered(&mut self) -> Option<InboundFrame> {
        loop {
            let Some(pos) = memchr(&self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                if self.buf.len() > self.max_frame_bytes {
                    // Too long already: remember its head, drop the rest as it comes.
                    let entry = self.skipping.get_or_insert_with(|| {
                        (0, self.buf[..PREFIX_KEPT.min(self.buf.len())].to_vec())
                    });
                    entry.0 += self.buf.len();
                    self.buf.clear();
                    self.scanned = 0;
                }
                return None;
            };
            let end = self.scanned + pos;
            let mut line = self.buf.split_to(end + 1);
            self.scanned = 0;
            if let Some((len, prefix)) = self.skipping.take() {
                return Some(InboundFrame::Oversized {
                    len: len + end,
                    prefix,
                    limit: self.max_frame_bytes,
                });
            }
            line.truncate(end);
            if line.last() == Some(&b'\r') {
                line.truncate(end - 1);
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if line.len() > self.max_frame_bytes {
                return Some(InboundFrame::Oversized {
                    len: line.len(),
                    prefix: line[..PREFIX_KEPT.min(line.len())].to_vec(),
                    limit: self.max_frame_bytes,
                });
            }
            return Some(InboundFrame::Message(self.hand_out(line)));
        }
    }

    /// A line as a frame. A large one keeps the buffer it was read into; a small one is
    /// copied out, so that a frame held long (a slow request's params) keeps no read
    /// buffer alive.
    fn hand_out(&mut self, line: BytesMut) -> Bytes {
        if line.len() >= LARGE_MESSAGE_BYTES {
            self.last_large = line.len();
            line.freeze()
        } else {
            Bytes::copy_from_slice(&line)
        }
    }

    /// What was read after the last newline, as a last message: at end of file, or for
    /// a stream that is over although no end of file came (a child that exited while
    /// another process holds its stdout).
    pub(crate) fn finish(&mut self) -> Option<InboundFrame> {
        if let Some((len, prefix)) = self.skipping.take() {
            return Some(InboundFrame::Oversized {
                len,
                prefix,
                limit: self.max_frame_bytes,
            });
        }
        let rest = self.buf.split();
        self.scanned = 0;
        if rest.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            // A final message without a newline still counts.
            Some(InboundFrame::Message(self.hand_out(rest)))
        }
    }
}

fn memchr(haystack: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', haystack)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large line, well past `LARGE_MESSAGE_BYTES`.
    const HANDOFF: usize = 16 * LARGE_MESSAGE_BYTES;

    async fn frames(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(frame) = reader.read_frame().await.expect("in-memory read") {
            out.push(match frame {
                InboundFrame::Message(m) => String::from_utf8(m.to_vec()).expect("utf8"),
                InboundFrame::Oversized { len, .. } => format!("<oversized {len}>"),
                InboundFrame::RequestFailed { .. } | InboundFrame::Read(_) => "<other>".to_owned(),
            });
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        assert_eq!(frames(b"a\n\r\nb\r\n\nc", 10).await, ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn skips_oversized_lines_and_resynchronises() {
        let mut input = vec![b'x'; 200_000];
        input.extend_from_slice(b"\nok\n");
        assert_eq!(frames(&input, 1000).await, ["<oversized 200000>", "ok"]);
    }

    #[tokio::test]
    async fn hands_out_large_lines_and_keeps_what_follows() {
        let mut input = vec![b'z'; 3 * HANDOFF];
        input.extend_from_slice(b"\r\nnext\n");
        input.extend_from_slice(&vec![b'w'; HANDOFF]);
        input.extend_from_slice(b"\nlast");
        let lines = frames(&input, 8 * HANDOFF).await;
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].len(), 3 * HANDOFF);
        assert!(lines[0].bytes().all(|b| b == b'z'));
        assert_eq!(lines[1], "next");
        assert_eq!(lines[2].len(), HANDOFF);
        assert_eq!(lines[3], "last");
    }

    #[tokio::test]
    async fn makes_room_at_once_for_a_large_line_after_one_like_it() {
        let size = 3 * HANDOFF;
        let mut input = vec![b'a'; size];
        input.push(b'\n');
        let mut reader = LineReader::new(&input[..], 8 * HANDOFF);
        match reader.read_frame().await.expect("in-memory read") {
            Some(InboundFrame::Message(m)) => assert_eq!(m.len(), size),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(reader.large_line_room(), None, "nothing pending");
        // Part of a line like it has come: the rest of it is asked for at once.
        reader.buf.extend_from_slice(&vec![b'b'; HANDOFF]);
        assert_eq!(reader.large_line_room(), Some(size - HANDOFF + READ_CHUNK));
        // A small line gets no such room.
        reader.buf.clear();
        reader.buf.extend_from_slice(b"{}");
        assert_eq!(reader.large_line_room(), None);
    }

    #[tokio::test]
    async fn a_small_line_is_copied_out_and_a_large_one_keeps_its_buffer() {
        let mut input = b"{}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', HANDOFF));
        input.push(b'\n');
        let mut reader = LineReader::new(&input[..], 8 * HANDOFF);
        let read_buffer = reader.buf.as_ptr().addr()..reader.buf.as_ptr().addr() + READ_CHUNK;
        let Some(InboundFrame::Message(small)) = reader.read_frame().await.expect("read") else {
            panic!("a small line");
        };
        assert_eq!(&small[..], b"{}");
        assert!(
            !read_buffer.contains(&small.as_ptr().addr()),
            "a small line holds no part of the read buffer"
        );
        let Some(InboundFrame::Message(large)) = reader.read_frame().await.expect("read") else {
            panic!("a large line");
        };
        assert_eq!(large.len(), HANDOFF);
        let rest = reader.buf.as_ptr().addr();
        assert_eq!(
            large.as_ptr().addr() + HANDOFF + 1,
            rest,
            "the large line was split off the buffer it was read into, not copied"
        );
    }

    #[tokio::test]
    async fn reads_several_large_lines_that_arrive_in_one_read() {
        let mut input = Vec::new();
        for (i, byte) in (b'a'..=b'e').enumerate() {
            input.extend(std::iter::repeat_n(byte, HANDOFF + i * 1000));
            input.push(b'\n');
        }
        // The second copy is read with the first one's large-line hint: whole lines,
        // then several of them, arrive in one read.
        let input = [input.clone(), input].concat();
        let lines = frames(&input, 8 * HANDOFF).await;
        assert_eq!(lines.len(), 10);
        for (i, (line, byte)) in lines.iter().zip((b'a'..=b'e').cycle()).enumerate() {
            assert_eq!(line.len(), HANDOFF + (i % 5) * 1000, "line {i}");
            assert!(line.bytes().all(|b| b == byte), "line {i}");
        }
    }

    #[tokio::test]
    async fn reads_a_ten_mebibyte_line_split_in_small_reads() {
        let (mut tx, rx) = tokio::io::duplex(4096);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let line = vec![b'y'; 10 * 1024 * 1024];
            tx.write_all(&line).await.expect("write");
            tx.write_all(b"\n").await.expect("write");
        });
        let mut reader = LineReader::new(rx, 16 * 1024 * 1024);
        match reader.read_frame().await.expect("read") {
            Some(InboundFrame::Message(m)) => assert_eq!(m.len(), 10 * 1024 * 1024),
            other => panic!("unexpected {other:?}"),
        }
        writer.await.expect("writer");
    }
}
