//! A server that writes something other than JSON-RPC to stdout (a log line, a banner,
//! binary data) is the most common stdio mistake. The library skips such lines; this
//! transport wrapper notices them so the command can name the line as the cause.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpflow::TransportError;
use mcpflow::transport::{FrameReader, InboundFrame, Transport};
use tokio::sync::Notify;

use crate::failure::cut;

/// How long a handshake may still succeed after a non-JSON line (a banner before the
/// first message is tolerated).
pub const NOISE_GRACE: Duration = Duration::from_secs(1);

/// What the server wrote to stdout that was not JSON-RPC.
#[derive(Debug, Default)]
pub struct Noise {
    first: Mutex<Option<String>>,
    json_seen: AtomicBool,
    noticed: Notify,
}

impl Noise {
    /// The start of the first non-JSON line, if any.
    pub fn first_line(&self) -> Option<String> {
        self.first
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The line named as a likely cause, for an error message.
    pub fn cause(&self) -> Option<String> {
        self.first_line().map(|line| {
            format!("the server wrote `{line}` to stdout, which is not a JSON-RPC message (a stdio server must log to stderr)")
        })
    }

    /// Resolves when the server wrote a non-JSON line and then no JSON-RPC message
    /// within [`NOISE_GRACE`]; never resolves otherwise.
    pub async fn fatal(&self) {
        loop {
            let noticed = self.noticed.notified();
            if self.first_line().is_some() {
                break;
            }
            noticed.await;
        }
        tokio::time::sleep(NOISE_GRACE).await;
        if self.json_seen.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    }

    fn observe(&self, frame: &[u8]) {
        let start = frame.iter().find(|b| !b.is_ascii_whitespace());
        if matches!(start, Some(b'{' | b'[')) {
            self.json_seen.store(true, Ordering::Release);
            return;
        }
        let mut first = self.first.lock().unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            let text = String::from_utf8_lossy(&frame[..frame.len().min(400)]);
            let text: String = text
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            *first = Some(cut(text.trim(), 60));
            drop(first);
            self.noticed.notify_waiters();
        }
    }
}

/// A transport whose incoming frames are checked for non-JSON lines.
#[derive(Debug)]
pub struct Watched<T> {
    inner: T,
    noise: Arc<Noise>,
}

impl<T> Watched<T> {
    /// Watch `inner`, reporting to `noise`.
    pub fn new(inner: T, noise: Arc<Noise>) -> Self {
        Watched { inner, noise }
    }
}

impl<T: Transport> Transport for Watched<T> {
    type Reader = WatchedReader<T::Reader>;
    type Writer = T::Writer;

    fn split(self) -> (Self::Reader, Self::Writer) {
        let (reader, writer) = self.inner.split();
        (
            WatchedReader {
                inner: reader,
                noise: self.noise,
            },
            writer,
        )
    }
}

/// The reading half of [`Watched`].
#[derive(Debug)]
pub struct WatchedReader<R> {
    inner: R,
    noise: Arc<Noise>,
}

impl<R: FrameReader> FrameReader for WatchedReader<R> {
    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
        let frame = self.inner.read_frame().await;
        if let Ok(Some(InboundFrame::Message(bytes))) = &frame {
            self.noise.observe(bytes);
        }
        frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_not_noise_and_the_first_other_line_is_kept() {
        let noise = Noise::default();
        noise.observe(br#"  {"jsonrpc":"2.0"}"#);
        assert_eq!(noise.first_line(), None);
        noise.observe(b"hello I am not MCP");
        noise.observe(b"second");
        assert_eq!(noise.first_line().as_deref(), Some("hello I am not MCP"));
    }

    #[test]
    fn binary_noise_is_quoted_printably_and_short() {
        let noise = Noise::default();
        noise.observe(&[0xff, 0x00, b'a', 0x07].repeat(100));
        let line = noise.first_line().unwrap_or_default();
        assert!(line.chars().count() <= 61, "{line}");
        assert!(!line.chars().any(char::is_control), "{line}");
    }
}
