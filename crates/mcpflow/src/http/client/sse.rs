//! An incremental parser for `text/event-stream` bodies (the WHATWG server-sent events
//! format): bytes in, events out, with a size limit per event.
//!
//! Unlike a browser `EventSource`, events without data are reported too, so a
//! priming event (`id: 7` and `retry: 500`, empty data) still moves the resume cursor.

use std::time::Duration;

/// Bytes of an oversized event's data kept, to recover a request id from.
const OVERSIZED_PREFIX: usize = 256;

/// One dispatched event.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// The `event:` field; empty means `message`.
    pub(super) event: String,
    /// The joined `data:` lines (without the final newline).
    pub(super) data: Vec<u8>,
    /// The `id:` field, when the event set one (`Some("")` resets the last event id).
    pub(super) id: Option<String>,
    /// The `retry:` field.
    pub(super) retry: Option<Duration>,
    /// Set when the data exceeded the limit: its length (at least); `data` then holds
    /// only its first bytes.
    pub(super) oversized: Option<usize>,
}

impl SseEvent {
    /// Whether this event carries a message (type `message` or none, and some data).
    pub(super) fn is_message(&self) -> bool {
        (self.event.is_empty() || self.event == "message")
            && (!self.data.is_empty() || self.oversized.is_some())
    }
}

/// The shortest wait before a reconnect that a server's `retry:` can ask for: a server
/// that sends `retry: 0` and closes each stream after an event would otherwise be
/// reconnected to in a busy loop.
pub(super) const MIN_SERVER_RETRY: Duration = Duration::from_millis(100);

/// The longest wait before a reconnect that a server's `retry:` can ask for (unless the
/// client's own delay is longer): a stream's answers and the standalone stream's
/// messages must not wait hours on a server's word.
pub(super) const MAX_SERVER_RETRY: Duration = Duration::from_secs(30);

/// Where a stream can be resumed from: the last event id and the server's retry delay.
#[derive(Debug, Default, Clone)]
pub(super) struct Cursor {
    pub(super) last_event_id: Option<String>,
    pub(super) retry: Option<Duration>,
}

impl Cursor {
    /// The wait before reconnecting: the server's `retry:` (at least
    /// [`MIN_SERVER_RETRY`], at most [`MAX_SERVER_RETRY`] or `default` if that is
    /// longer), else `default`.
    pub(super) fn delay(&self, default: Duration) -> Duration {
        self.retry.map_or(default, |retry| {
            retry.clamp(MIN_SERVER_RETRY, MAX_SERVER_RETRY.max(default))
        })
    }

    /// Take the id and retry fields of an event.
    pub(super) fn observe(&mut self, event: &SseEvent) {
        if let Some(id) = &event.id {
            self.last_event_id = (!id.is_empty()).then(|| id.clone());
        }
        if let Some(retry) = event.retry {
            self.retry = Some(retry);
        }
    }
}

/// The parser's state between chunks.
#[derive(Debug)]
pub(super) struct SseParser {
    max_event_bytes: usize,
    line: Vec<u8>,
    /// Bytes of the current line past the limit, counted but not kept.
    line_dropped: usize,
    /// The previous chunk ended in `\r`: a `\n` at the start of the next one belongs to it.
    after_cr: bool,
    started: bool,
    current: SseEvent,
    has_fields: bool,
}

impl SseParser {
    /// A parser that cuts events whose data exceeds `max_event_bytes`.
    pub(super) fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            line_dropped: 0,
            after_cr: false,
            started: false,
            current: SseEvent::default(),
            has_fields: false,
        }
    }

    /// Feed one chunk; complete events are appended to `out`.
    pub(super) fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) {
        if !self.started && !chunk.is_empty() {
            self.started = true;
            if let Some(rest) = chunk.strip_prefix("\u{feff}".as_bytes()) {
                chunk = rest;
            }
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(at) = memchr::memchr2(b'\n', b'\r', chunk) {
            self.append_to_line(&chunk[..at]);
            let line = std::mem::take(&mut self.line);
            let dropped = std::mem::take(&mut self.line_dropped);
            self.take_line(&line, dropped, out);
            self.line = line;
            self.line.clear();
            if chunk[at] == b'\r' {
                match chunk.get(at + 1) {
                    Some(b'\n') => chunk = &chunk[at + 2..],
                    Some(_) => chunk = &chunk[at + 1..],
                    None => {
                        self.after_cr = true;
                        chunk = &[];
                    }
                }
            } else {
                chunk = &chunk[at + 1..];
            }
        }
        self.append_to_line(chunk);
    }

    fn append_to_line(&mut self, bytes: &[u8]) {
        // Past the limit, only the start of a line is kept (the field name and the
        // prefix of an oversized event); the rest is counted, not stored.
        let cap = self.max_event_bytes + OVERSIZED_PREFIX;
        let keep = cap.saturating_sub(self.line.len()).min(bytes.len());
        self.line.extend_from_slice(&bytes[..keep]);
        self.line_dropped = self.line_dropped.saturating_add(bytes.len() - keep);
    }

    fn take_line(&mut self, line: &[u8], dropped: usize, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        self.has_fields = true;
        match field {
            b"data" => self.append_data(value, dropped),
            b"event" => self.current.event = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.current.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Some(ms) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    self.current.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }

    fn append_data(&mut self, value: &[u8], dropped: usize) {
        let data = &mut self.current.data;
        let len = value.len().saturating_add(dropped);
        if let Some(total) = self.current.oversized.as_mut() {
            *total = total.saturating_add(len + 1);
            let room = OVERSIZED_PREFIX.saturating_sub(data.len()).min(value.len());
            data.extend_from_slice(&value[..room]);
        } else if data.len().saturating_add(len) > self.max_event_bytes {
            self.current.oversized = Some(data.len().saturating_add(len));
            data.extend_from_slice(value);
            data.truncate(OVERSIZED_PREFIX);
        } else {
            data.extend_from_slice(value);
            data.push(b'\n');
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if !self.has_fields {
            return;
        }
        self.has_fields = false;
        let mut event = std::mem::take(&mut self.current);
        if event.oversized.is_none() && event.data.last() == Some(&b'\n') {
            event.data.pop();
        }
        out.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new(1024);
        let mut out = Vec::new();
        for chunk in chunks {
            parser.push(chunk, &mut out);
        }
        out
    }

    #[test]
    fn parses_fields_across_chunk_boundaries() {
        let events = parse(&[
            b"id: 1\nretry: 5",
            b"00\ndata: {\"a\"",
            b":1}\n\nda",
            b"ta: x\n\n",
        ]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].id.as_deref(), Some("1"));
        assert_eq!(events[0].retry, Some(Duration::from_millis(500)));
        assert_eq!(events[0].data, br#"{"a":1}"#);
        assert!(events[0].is_message());
        assert_eq!(events[1].data, b"x");
        assert_eq!(events[1].id, None);
    }

    #[test]
    fn priming_events_without_data_still_carry_id_and_retry() {
        let events = parse(&[b"id: event-1\nretry: 500\ndata: \n\n", b"id: e2\n\n"]);
        assert_eq!(events.len(), 2);
        assert!(!events[0].is_message());
        let mut cursor = Cursor::default();
        cursor.observe(&events[0]);
        assert_eq!(cursor.last_event_id.as_deref(), Some("event-1"));
        assert_eq!(cursor.retry, Some(Duration::from_millis(500)));
        cursor.observe(&events[1]);
        assert_eq!(cursor.last_event_id.as_deref(), Some("e2"));
    }

    #[test]
    fn handles_crlf_cr_comments_multiline_data_and_bom() {
        let events = parse(&[
            "\u{feff}: comment\r\nevent: endpoint\r\ndata: /m?s=1\r".as_bytes(),
            b"\n\r",
            b"data: a\rdata: b\r\r",
        ]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event, "endpoint");
        assert_eq!(events[0].data, b"/m?s=1");
        assert!(!events[0].is_message());
        assert_eq!(events[1].data, b"a\nb");
    }

    #[test]
    fn cuts_oversized_events_and_keeps_a_prefix() {
        let mut parser = SseParser::new(16);
        let mut out = Vec::new();
        let big = format!("data: {{\"id\":3,{}}}\n\ndata: ok\n\n", "x".repeat(600));
        for chunk in big.as_bytes().chunks(7) {
            parser.push(chunk, &mut out);
        }
        assert_eq!(out.len(), 2);
        assert!(out[0].oversized.is_some_and(|n| n > 600));
        assert!(out[0].data.starts_with(br#"{"id":3,"#));
        assert!(out[0].data.len() <= OVERSIZED_PREFIX);
        assert!(out[0].is_message());
        assert_eq!(out[1].data, b"ok");
        assert_eq!(out[1].oversized, None);
    }

    #[test]
    fn a_server_retry_waits_between_the_floor_and_the_ceiling() {
        let default = Duration::from_secs(1);
        let mut cursor = Cursor::default();
        assert_eq!(cursor.delay(default), default);
        for (ms, waited) in [
            (0, MIN_SERVER_RETRY),
            (5, MIN_SERVER_RETRY),
            (500, Duration::from_millis(500)),
            (30_000, MAX_SERVER_RETRY),
            (86_400_000, MAX_SERVER_RETRY),
            (u64::MAX, MAX_SERVER_RETRY),
        ] {
            cursor.retry = Some(Duration::from_millis(ms));
            assert_eq!(cursor.delay(default), waited, "retry: {ms}");
        }
        // A client that asked for a longer delay itself keeps it as the ceiling.
        let long = Duration::from_secs(120);
        cursor.retry = Some(Duration::from_secs(3600));
        assert_eq!(cursor.delay(long), long);
        cursor.retry = Some(Duration::from_secs(60));
        assert_eq!(cursor.delay(long), Duration::from_secs(60));
    }

    #[test]
    fn ignores_invalid_retry_and_incomplete_events() {
        let events = parse(&[b"retry: 5x\ndata: a\n\ndata: never dispatched"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].retry, None);
    }
}
