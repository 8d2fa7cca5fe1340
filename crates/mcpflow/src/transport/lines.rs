//! Newline framing over a byte stream, in linear time.
//!
//! [`LineReader`] reads into one growing buffer and scans each byte once for `\n`, so a
//! 10 MiB message costs one pass however it is split across reads. A line longer than
//! the limit is skipped to its end (newline framing can always resynchronise) and
//! reported as [`InboundFrame::Oversized`].

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::InboundFrame;
use crate::error::TransportError;

const READ_CHUNK: usize = 64 * 1024;
const PREFIX_KEPT: usize = 256;
/// A line at least this long is handed out as the read buffer itself, not copied.
const HANDOFF_BYTES: usize = 1024 * 1024;
/// Largest read buffer kept between messages.
const RETAINED_CAPACITY: usize = 16 * 1024 * 1024;

/// Reads newline-delimited frames from an `AsyncRead`.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Bytes of `buf` already scanned for a newline.
    scanned: usize,
    /// Start of unconsumed bytes in `buf`.
    start: usize,
    max_frame_bytes: usize,
    /// While skipping an oversized line: its length so far and its first bytes.
    skipping: Option<(usize, Vec<u8>)>,
    /// Length of the last line handed out as the buffer: a peer that sent one large
    /// message often sends another of about its size, so a line that passes
    /// `HANDOFF_BYTES` gets room for that much at once instead of doubling its way
    /// there (a copy and fresh pages at every step). Each handed-out line replaces it.
    last_large: usize,
    eof: bool,
}

impl<R: AsyncRead + Unpin + Send> LineReader<R> {
    /// Frames longer than `max_frame_bytes` are skipped and reported.
    pub fn new(inner: R, max_frame_bytes: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::with_capacity(READ_CHUNK),
            scanned: 0,
            start: 0,
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
            self.compact();
            // A large line like the last one gets exactly its room; otherwise one read
            // chunk, the buffer doubling as it must.
            match self.large_line_room() {
                Some(room) => self.buf.reserve_exact(room),
                None => self.buf.reserve(READ_CHUNK),
            }
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

    /// For a line past `HANDOFF_BYTES` that is still shorter than the last large line,
    /// the free space to have before the next read: the rest of that length.
    fn large_line_room(&self) -> Option<usize> {
        let pending = self.buf.len() - self.start;
        (pending >= HANDOFF_BYTES && self.last_large > pending && self.skipping.is_none())
            .then(|| self.last_large - pending + READ_CHUNK)
    }

    fn next_buffered(&mut self) -> Option<InboundFrame> {
        loop {
            let unscanned = &self.buf[self.scanned..];
            match memchr(unscanned) {
                Some(pos) => {
                    let end = self.scanned + pos;
                    let line_start = self.start;
                    self.start = end + 1;
                    self.scanned = end + 1;
                    if let Some((len, prefix)) = self.skipping.take() {
                        return Some(InboundFrame::Oversized {
                            len: len + (end - line_start),
                            prefix,
                            limit: self.max_frame_bytes,
                        });
                    }
                    let mut line = &self.buf[line_start..end];
                    if line.last() == Some(&b'\r') {
                        line = &line[..line.len() - 1];
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
                    let len = line.len();
                    // Handing the buffer out moves what follows the line to a new one:
                    // cheap for a read's tail, but a copy of every later line if one
                    // read brought several large lines, so those are copied out instead.
                    if line_start == 0
                        && len >= HANDOFF_BYTES
                        && self.buf.len() - end <= HANDOFF_BYTES
                    {
                        return Some(InboundFrame::Message(Bytes::from(self.hand_off(len, end))));
                    }
                    return Some(InboundFrame::Message(Bytes::copy_from_slice(line)));
                }
                None => {
                    self.scanned = self.buf.len();
                    let pending = self.buf.len() - self.start;
                    if pending > self.max_frame_bytes {
                        // Too long already: remember its head, drop the rest as it comes.
                        let entry = self.skipping.get_or_insert_with(|| {
                            (
                                0,
                                self.buf[self.start..self.start + PREFIX_KEPT.min(pending)]
                                    .to_vec(),
                            )
                        });
                        entry.0 += pending;
                        self.start = self.buf.len();
                    }
                    return None;
                }
            }
        }
    }

    /// Give the buffer itself away as the frame `buf[..len]` (a large line at its
    /// start) instead of copying it out; what follows the newline at `newline` moves to
    /// a fresh buffer.
    fn hand_off(&mut self, len: usize, newline: usize) -> Vec<u8> {
        let rest = &self.buf[newline + 1..];
        let mut next = Vec::with_capacity(READ_CHUNK.max(rest.len()));
        next.extend_from_slice(rest);
        let mut frame = std::mem::replace(&mut self.buf, next);
        frame.truncate(len);
        self.last_large = len;
        self.start = 0;
        self.scanned = 0;
        frame
    }

    fn finish(&mut self) -> Option<InboundFrame> {
        if let Some((len, prefix)) = self.skipping.take() {
            return Some(InboundFrame::Oversized {
                len,
                prefix,
                limit: self.max_frame_bytes,
            });
        }
        let rest = &self.buf[self.start..];
        self.start = self.buf.len();
        if rest.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            // A final message without a newline still counts.
            Some(InboundFrame::Message(Bytes::copy_from_slice(rest)))
        }
    }

    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        if self.start == self.buf.len() {
            self.buf.clear();
            // Keep the buffer for the next large message (regrowing it costs a copy and
            // page faults), but do not keep more than RETAINED_CAPACITY alive.
            if self.buf.capacity() > RETAINED_CAPACITY {
                self.buf.shrink_to(READ_CHUNK);
            }
        } else {
            self.buf.drain(..self.start);
        }
        self.scanned -= self.start;
        self.start = 0;
    }
}

fn memchr(haystack: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', haystack)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(frame) = reader.read_frame().await.expect("in-memory read") {
            out.push(match frame {
                InboundFrame::Message(m) => String::from_utf8(m.to_vec()).expect("utf8"),
                InboundFrame::Oversized { len, .. } => format!("<oversized {len}>"),
                InboundFrame::RequestFailed { .. } => "<request failed>".to_owned(),
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
        let mut input = vec![b'z'; 3 * HANDOFF_BYTES];
        input.extend_from_slice(b"\r\nnext\n");
        input.extend_from_slice(&vec![b'w'; HANDOFF_BYTES]);
        input.extend_from_slice(b"\nlast");
        let lines = frames(&input, 8 * HANDOFF_BYTES).await;
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].len(), 3 * HANDOFF_BYTES);
        assert!(lines[0].bytes().all(|b| b == b'z'));
        assert_eq!(lines[1], "next");
        assert_eq!(lines[2].len(), HANDOFF_BYTES);
        assert_eq!(lines[3], "last");
    }

    #[tokio::test]
    async fn sizes_the_buffer_for_a_large_line_after_one_like_it() {
        let size = 3 * HANDOFF_BYTES;
        let mut input = Vec::new();
        for byte in [b'a', b'b'] {
            input.extend(std::iter::repeat_n(byte, size));
            input.push(b'\n');
        }
        let mut reader = LineReader::new(&input[..], 8 * HANDOFF_BYTES);
        let mut capacities = Vec::new();
        while let Some(frame) = reader.read_frame().await.expect("in-memory read") {
            let InboundFrame::Message(m) = frame else {
                panic!("unexpected {frame:?}");
            };
            assert_eq!(m.len(), size);
            capacities.push(Vec::from(m).capacity());
        }
        assert_eq!(capacities.len(), 2);
        // The first doubles its way up (to 4 MiB); the second gets its room at once.
        assert!(capacities[0] >= 4 * HANDOFF_BYTES, "{capacities:?}");
        assert!(capacities[1] <= size + 2 * READ_CHUNK, "{capacities:?}");
    }

    #[tokio::test]
    async fn reads_several_large_lines_that_arrive_in_one_read() {
        let mut input = Vec::new();
        for (i, byte) in (b'a'..=b'e').enumerate() {
            input.extend(std::iter::repeat_n(byte, HANDOFF_BYTES + i * 1000));
            input.push(b'\n');
        }
        // The second copy is read with the first one's large-line hint: whole lines,
        // then several of them, arrive in one read.
        let input = [input.clone(), input].concat();
        let lines = frames(&input, 8 * HANDOFF_BYTES).await;
        assert_eq!(lines.len(), 10);
        for (i, (line, byte)) in lines.iter().zip((b'a'..=b'e').cycle()).enumerate() {
            assert_eq!(line.len(), HANDOFF_BYTES + (i % 5) * 1000, "line {i}");
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
