//! Server-sent events: the wire format, the response body that streams them, and the
//! [`EventStore`] that makes a stream resumable.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

/// Where an event belongs: a session and one of its streams.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamKey {
    /// The session id (`Mcp-Session-Id`).
    pub session: String,
    /// The stream's number within the session.
    pub stream: u64,
}

/// Keeps the events sent on each stream, so a client that lost a stream can resume it
/// with `Last-Event-ID` and miss nothing.
///
/// Event ids are `"{stream}-{seq}"`; `seq` counts from 0 (the priming event) per
/// stream. The server calls these methods with the session's routing lock held, so
/// they must return quickly: keep events in memory, or write behind to a remote store.
///
/// ```
/// use bytes::Bytes;
/// use mcpflow::http::server::{EventStore, InMemoryEventStore, StreamKey};
///
/// let store = InMemoryEventStore::new(100);
/// let key = StreamKey { session: "s".into(), stream: 1 };
/// store.append(&key, 1, Bytes::from_static(b"{}"));
/// assert_eq!(store.after(&key, 0).map(|e| e.len()), Some(1));
/// ```
pub trait EventStore: Send + Sync + 'static {
    /// Record the message sent as event `seq` of a stream.
    fn append(&self, key: &StreamKey, seq: u64, message: Bytes);

    /// The events of a stream after `seq`, in order (none for a stream it never saw);
    /// `None` when some of them are no longer held (evicted), so resuming would lose
    /// messages.
    fn after(&self, key: &StreamKey, seq: u64) -> Option<Vec<(u64, Bytes)>>;

    /// Forget a session's events (it ended).
    fn remove_session(&self, session: &str);
}

/// The default [`EventStore`]: the last `capacity` events of each session, in memory,
/// and at most `max_bytes` of them (16 MiB by default), so a few large results do not
/// pin their memory for the whole session.
pub struct InMemoryEventStore {
    capacity: usize,
    max_bytes: usize,
    sessions: Mutex<HashMap<String, SessionEvents>>,
}

#[derive(Default)]
struct SessionEvents {
    /// (stream, seq, message), oldest first.
    events: VecDeque<(u64, u64, Bytes)>,
    /// Bytes of the messages held.
    bytes: usize,
    /// Per stream, the highest seq evicted; resuming at or before it would lose events.
    evicted: HashMap<u64, u64>,
}

impl InMemoryEventStore {
    /// A store keeping at most `capacity` events per session (the oldest go first).
    pub fn new(capacity: usize) -> Self {
        InMemoryEventStore {
            capacity: capacity.max(1),
            max_bytes: DEFAULT_MAX_BYTES,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Hold at most `n` bytes of events per session (the oldest go first; an event
    /// larger than `n` is not kept, so a resume that needs it fails instead of
    /// replaying it). Default 16 MiB.
    #[must_use]
    pub fn max_bytes(mut self, n: usize) -> Self {
        self.max_bytes = n;
        self
    }
}

/// The default byte bound of [`InMemoryEventStore`] per session.
const DEFAULT_MAX_BYTES: usize = 16 * 1024 * 1024;

impl Default for InMemoryEventStore {
    /// 1,024 events per session.
    fn default() -> Self {
        InMemoryEventStore::new(1024)
    }
}

impl fmt::Debug for InMemoryEventStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryEventStore")
            .field("capacity", &self.capacity)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl EventStore for InMemoryEventStore {
    fn append(&self, key: &StreamKey, seq: u64, message: Bytes) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let events = sessions.entry(key.session.clone()).or_default();
        if message.len() > self.max_bytes {
            // Too large to keep: resuming past it fails, and nothing else is dropped.
            let evicted = events.evicted.entry(key.stream).or_default();
            *evicted = (*evicted).max(seq);
            return;
        }
        events.bytes += message.len();
        events.events.push_back((key.stream, seq, message));
        while events.events.len() > self.capacity || events.bytes > self.max_bytes {
            let Some((stream, seq, message)) = events.events.pop_front() else {
                break;
            };
            events.bytes -= message.len();
            let evicted = events.evicted.entry(stream).or_default();
            *evicted = (*evicted).max(seq);
        }
    }

    fn after(&self, key: &StreamKey, seq: u64) -> Option<Vec<(u64, Bytes)>> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(events) = sessions.get(&key.session) else {
            return Some(Vec::new());
        };
        if events.evicted.get(&key.stream).is_some_and(|&e| e > seq) {
            return None;
        }
        Some(
            events
                .events
                .iter()
                .filter(|(stream, s, _)| *stream == key.stream && *s > seq)
                .map(|(_, s, m)| (*s, m.clone()))
                .collect(),
        )
    }

    fn remove_session(&self, session: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session);
    }
}

/// The id of event `seq` of stream `stream`.
pub(crate) fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// Parse an event id made by [`event_id`].
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// One event in SSE wire format. `data` is a JSON message (no raw newlines, but any
/// are split into data lines anyway), or empty for a priming event.
pub(crate) fn encode_event(id: Option<&str>, retry: Option<Duration>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 48);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    if let Some(retry) = retry {
        out.extend_from_slice(format!("retry: {}\n", retry.as_millis()).as_bytes());
    }
    if data.is_empty() {
        out.extend_from_slice(b"data: \n");
    } else {
        out.extend_from_slice(b"event: message\n");
        for line in data.split(|&b| b == b'\n') {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
            out.push(b'\n');
        }
    }
    out.push(b'\n');
    Bytes::from(out)
}

/// An SSE comment that keeps idle proxies and clients from dropping the stream.
const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// Bytes of events a client may fall behind before its connection is dropped (it can
/// resume the stream from the event store).
const MAX_BACKLOG: usize = 64 * 1024 * 1024;

/// The most of an event handed to hyper at a time.
const HANDOVER_BYTES: usize = 64 * 1024;

/// The bytes queued on every event stream of a server, and the most they may add up
/// to. Past it, a stream whose client is behind loses its connection on its next
/// event, as does one whose next event is larger than [`HANDOVER_BYTES`]; a client
/// that keeps up with small events is never cut for it.
#[derive(Debug)]
pub(crate) struct QueueBudget {
    queued: AtomicUsize,
    max: usize,
}

impl QueueBudget {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(QueueBudget {
            queued: AtomicUsize::new(0),
            max,
        })
    }

    /// Bytes queued right now.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }
}

/// The sending end of one event-stream response. Sending never waits, so one slow
/// client cannot hold up the session's writer; a client more than 64 MiB behind loses
/// the connection instead, as does one that is behind when the server's budget is
/// spent, and what was queued for it is dropped at once. The stream ends when the last
/// clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct EventSender {
    queue: Arc<EventQueue>,
    _open: Arc<Open>,
}

/// Ends the stream when dropped, with the last [`EventSender`].
#[derive(Debug)]
struct Open(Arc<EventQueue>);

/// The receiving end, turned into a response body by [`sse_body`].
#[derive(Debug)]
pub(crate) struct EventReceiver {
    queue: Arc<EventQueue>,
}

/// The events of one response not yet handed to hyper.
#[derive(Debug)]
struct EventQueue {
    state: Mutex<QueueState>,
    /// A new event, or the sender gone.
    ready: Notify,
    budget: Arc<QueueBudget>,
}

#[derive(Debug, Default)]
struct QueueState {
    events: VecDeque<Bytes>,
    bytes: usize,
    /// No more events will come: the sender was dropped, or cut the stream.
    ended: bool,
    /// The stream was cut short (its client fell too far behind).
    cut: bool,
    /// The response was dropped (the client disconnected).
    receiver_gone: bool,
}

impl EventQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drop what is queued, uncounting it.
    fn clear(&self, state: &mut QueueState) {
        state.events.clear();
        self.budget.queued.fetch_sub(state.bytes, Ordering::Relaxed);
        state.bytes = 0;
    }
}

impl EventReceiver {
    /// The next event; `Ok(None)` once the stream ended and everything was taken, an
    /// error when it was cut short.
    async fn next(&self) -> Result<Option<Bytes>, StreamCut> {
        loop {
            {
                let mut state = self.queue.lock();
                if let Some(front) = state.events.front_mut() {
                    // Handed over in slices (shared, not copied), so that what hyper
                    // holds unwritten stays small and the rest counts in the queue.
                    let event = if front.len() > HANDOVER_BYTES {
                        front.split_to(HANDOVER_BYTES)
                    } else {
                        state.events.pop_front().unwrap_or_default()
                    };
                    state.bytes -= event.len();
                    self.queue
                        .budget
                        .queued
                        .fetch_sub(event.len(), Ordering::Relaxed);
                    return Ok(Some(event));
                }
                if state.cut {
                    return Err(StreamCut);
                }
                if state.ended {
                    return Ok(None);
                }
            }
            // One consumer: a notification sent before this wait is kept as a permit.
            self.queue.ready.notified().await;
        }
    }
}

impl Drop for EventReceiver {
    /// The client is gone: what it did not read no longer counts against the budget.
    fn drop(&mut self) {
        let mut state = self.queue.lock();
        state.receiver_gone = true;
        self.queue.clear(&mut state);
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.lock().ended = true;
        self.0.ready.notify_one();
    }
}

pub(crate) fn event_channel(budget: &Arc<QueueBudget>) -> (EventSender, EventReceiver) {
    let queue = Arc::new(EventQueue {
        state: Mutex::new(QueueState::default()),
        ready: Notify::new(),
        budget: budget.clone(),
    });
    (
        EventSender {
            queue: queue.clone(),
            _open: Arc::new(Open(queue.clone())),
        },
        EventReceiver { queue },
    )
}

/// A message at least this large is sent as its event's lines around the message itself,
/// which is shared with the event store instead of copied into the event.
const SHARED_EVENT_BYTES: usize = 64 * 1024;

impl EventSender {
    /// Queue an encoded event; false when the client is gone or too far behind.
    pub(crate) fn send(&self, event: Bytes) -> bool {
        self.send_parts([event])
    }

    /// Queue `message` as an event with this id. A large message on one line is not
    /// copied: the event goes out as three body frames, its `data: ` line's prefix,
    /// the message and the line ends.
    pub(crate) fn send_message(&self, id: Option<&str>, message: &Bytes) -> bool {
        if message.len() < SHARED_EVENT_BYTES || memchr::memchr2(b'\n', b'\r', message).is_some() {
            return self.send(encode_event(id, None, message));
        }
        let mut head = Vec::with_capacity(64);
        if let Some(id) = id {
            head.extend_from_slice(b"id: ");
            head.extend_from_slice(id.as_bytes());
            head.push(b'\n');
        }
        head.extend_from_slice(b"event: message\ndata: ");
        self.send_parts([
            Bytes::from(head),
            message.clone(),
            Bytes::from_static(b"\n\n"),
        ])
    }

    /// Queue the pieces of one event, in order (the caller holds the session's routes,
    /// so no other event comes between them).
    fn send_parts<const N: usize>(&self, parts: [Bytes; N]) -> bool {
        let len: usize = parts.iter().map(Bytes::len).sum();
        let queue = &self.queue;
        let mut state = queue.lock();
        if state.receiver_gone || state.ended {
            return false;
        }
        let total = queue.budget.queued.load(Ordering::Relaxed) + len;
        let over = if state.bytes + len > MAX_BACKLOG {
            Some(("backlog", MAX_BACKLOG))
        } else if (state.bytes > 0 || len > HANDOVER_BYTES) && total > queue.budget.max {
            Some(("max_queued_event_bytes", queue.budget.max))
        } else {
            None
        };
        if let Some((limit, bytes)) = over {
            tracing::warn!(
                limit,
                bytes,
                "a client fell too far behind on an event stream; dropping its connection"
            );
            queue.clear(&mut state);
            state.ended = true;
            state.cut = true;
            drop(state);
            queue.ready.notify_one();
            return false;
        }
        state.bytes += len;
        queue.budget.queued.fetch_add(len, Ordering::Relaxed);
        state.events.extend(parts);
        drop(state);
        queue.ready.notify_one();
        true
    }

    /// Whether the response was dropped (the client disconnected), or the stream cut.
    pub(crate) fn is_closed(&self) -> bool {
        let state = self.queue.lock();
        state.receiver_gone || state.ended
    }
}

/// Why an event stream ended early.
#[derive(Debug, thiserror::Error)]
#[error("the event stream was cut: its client fell too far behind")]
pub(crate) struct StreamCut;

/// A response body streaming what arrives on `events` (already encoded), with a
/// keep-alive comment after every `keep_alive` of silence. Ends when the sender is
/// dropped. Each event is its own body frame, so hyper writes it as it is produced.
pub(crate) fn sse_body(events: EventReceiver, keep_alive: Duration) -> axum::body::Body {
    let stream = futures_util::stream::unfold(events, move |events| async move {
        let next = tokio::select! {
            event = events.next() => match event {
                Ok(event) => event?,
                // An error ends the response without its last chunk, so the client
                // sees the stream broken (and resumes it), not complete.
                Err(cut) => return Some((Err(cut), events)),
            },
            () = tokio::time::sleep(keep_alive) => Bytes::from_static(KEEP_ALIVE),
        };
        Some((Ok(next), events))
    });
    axum::body::Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_encode_as_sse() {
        let e = encode_event(Some("1-0"), Some(Duration::from_millis(500)), b"");
        assert_eq!(&e[..], b"id: 1-0\nretry: 500\ndata: \n\n");
        let e = encode_event(Some("1-2"), None, b"{\"a\":1}");
        assert_eq!(&e[..], b"id: 1-2\nevent: message\ndata: {\"a\":1}\n\n");
        assert_eq!(parse_event_id("3-17"), Some((3, 17)));
        assert_eq!(parse_event_id("x"), None);
    }

    /// Every message reaches the client as the same event bytes, copied or shared.
    #[tokio::test]
    async fn a_large_message_is_sent_as_the_event_it_would_be_encoded_as() {
        let large_line = Bytes::from(format!("{{\"a\":\"{}\"}}", "x".repeat(SHARED_EVENT_BYTES)));
        let large_lines = Bytes::from(format!(
            "{{\"a\":\n\"{}\"}}",
            "x".repeat(SHARED_EVENT_BYTES)
        ));
        let small = Bytes::from_static(b"{\"a\":1}");
        for (message, frames) in [(&large_line, 3), (&large_lines, 1), (&small, 1)] {
            for id in [Some("1-2"), None] {
                let budget = QueueBudget::new(usize::MAX);
                let (tx, rx) = event_channel(&budget);
                assert!(tx.send_message(id, message));
                drop(tx);
                let mut got = Vec::new();
                let mut n = 0;
                while let Ok(Some(part)) = rx.next().await {
                    assert!(part.len() <= HANDOVER_BYTES, "handed over in slices");
                    got.extend_from_slice(&part);
                    n += 1;
                }
                assert_eq!(got, encode_event(id, None, message), "{id:?}");
                // A shared message adds its own frames around the lines' prefix and end.
                let sliced = encode_event(id, None, message)
                    .len()
                    .div_ceil(HANDOVER_BYTES);
                assert_eq!(n, sliced + frames - 1, "{id:?}, {} bytes", message.len());
                assert_eq!(budget.queued(), 0);
            }
        }
    }

    /// Past the server's budget, a stream that is behind is cut and what it queued is
    /// dropped at once; a stream that keeps up still gets its events.
    #[tokio::test]
    async fn the_budget_cuts_streams_that_are_behind() {
        let budget = QueueBudget::new(100);
        let event = Bytes::from(vec![b'x'; 40]);
        let (behind, behind_rx) = event_channel(&budget);
        assert!(behind.send(event.clone()));
        assert!(behind.send(event.clone()));
        assert_eq!(budget.queued(), 80);
        let (keeping_up, keeping_up_rx) = event_channel(&budget);
        assert!(
            keeping_up.send(event.clone()),
            "an empty queue may pass the budget"
        );
        assert_eq!(budget.queued(), 120);
        assert!(
            !behind.send(event.clone()),
            "a queue that is behind is cut past it"
        );
        assert!(behind.is_closed());
        assert_eq!(budget.queued(), 40, "the cut stream's events are dropped");
        assert!(
            behind_rx.next().await.is_err(),
            "a cut stream ends in an error"
        );
        assert_eq!(keeping_up_rx.next().await.ok(), Some(Some(event)));
        assert_eq!(budget.queued(), 0);
        drop(keeping_up_rx);
        assert!(keeping_up.is_closed());
        assert!(!keeping_up.send(Bytes::from_static(b"x")));
        assert_eq!(
            budget.queued(),
            0,
            "a send to a dropped response counts nothing"
        );

        // Past the budget, an event too large to hand over at once cuts even an empty
        // stream: it could not be written at once either.
        let (keeping_up, _keeping_up_rx) = event_channel(&budget);
        assert!(keeping_up.send(Bytes::from(vec![b'x'; 90])));
        let (large, _large_rx) = event_channel(&budget);
        assert!(!large.send(Bytes::from(vec![b'x'; HANDOVER_BYTES + 1])));
        assert_eq!(budget.queued(), 90);
    }

    #[test]
    fn the_store_holds_at_most_max_bytes_per_session() {
        let store = InMemoryEventStore::new(100).max_bytes(10);
        let key = StreamKey {
            session: "s".into(),
            stream: 1,
        };
        store.append(&key, 1, Bytes::from_static(b"aaaa"));
        store.append(&key, 2, Bytes::from_static(b"bbbb"));
        store.append(&key, 3, Bytes::from_static(b"cccc"));
        assert_eq!(
            store.after(&key, 0),
            None,
            "event 1 went to stay under 10 bytes"
        );
        let held = store.after(&key, 1).expect("2 and 3 are held");
        assert_eq!(held.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [2, 3]);
        let other = StreamKey {
            session: "s".into(),
            stream: 2,
        };
        store.append(&other, 4, Bytes::from(vec![b'x'; 11]));
        let skipped = store.after(&other, 3);
        assert_eq!(skipped, None, "an event over the bound is not kept");
        let held = store.after(&key, 1).expect("and it evicts nothing else");
        assert_eq!(held.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn the_store_refuses_to_resume_past_evicted_events() {
        let store = InMemoryEventStore::new(2);
        let key = StreamKey {
            session: "s".into(),
            stream: 1,
        };
        for seq in 1..=3 {
            store.append(&key, seq, Bytes::from(seq.to_string()));
        }
        assert_eq!(store.after(&key, 0), None, "event 1 was evicted");
        let rest = store.after(&key, 1).expect("events after 1 are held");
        assert_eq!(rest.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [2, 3]);
        store.remove_session("s");
        assert_eq!(store.after(&key, 1), Some(Vec::new()));
    }
}
