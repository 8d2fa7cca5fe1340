//! One MCP session over HTTP: the transport the engine runs on, and the routing of
//! each outbound message to the HTTP response that should carry it.
//!
//! Inbound, POST bodies are queued to the engine's reader. Outbound, the engine's one
//! writer hands each frame with its [`FrameMeta`]: a response goes to the stream of
//! the POST that carried its request; progress, logs and requests a handler sends go
//! to the stream of the request being handled; everything else goes to the standalone
//! GET stream. A stream ends once it delivered every response it owes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use mcpflow_protocol::{ProtocolVersion, RequestId};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::events::{
    EventReceiver, EventSender, EventStore, QueueBudget, StreamKey, encode_event, event_channel,
    event_id, parse_event_id,
};
use crate::error::TransportError;
use crate::server::{Principal, PrincipalSlot};
use crate::transport::{
    Frame, FrameKind, FrameMeta, FrameReader, FrameWriter, InboundFrame, Transport,
};

/// Frames queued from POST handlers to the engine's reader, at most.
const INBOUND_QUEUE: usize = 64;

/// How the answer to one POST is to travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyMode {
    /// An event stream.
    Sse,
    /// One JSON body (or array); messages other than responses are not sent.
    Json,
    /// One JSON body when the response is the first message for the request, else
    /// an event stream starting with that message (one request only).
    FirstDecides,
}

/// How the answer to one POST travels.
pub(crate) enum Reply {
    /// An event stream (already primed when resumable).
    Sse(EventReceiver),
    /// One JSON body (or array) once every response arrived; an error when the
    /// session ended first.
    Json(oneshot::Receiver<Vec<Bytes>>),
    /// Decided by the first message ([`ReplyMode::FirstDecides`]); an error when the
    /// session ended first.
    FirstDecides(oneshot::Receiver<First>),
}

/// The answer to a POST whose first message decided it.
pub(crate) enum First {
    /// The response came first: it is the body.
    Json(Bytes),
    /// Something else came first: an event stream, carrying it and what follows.
    Stream(EventReceiver),
}

/// Why a stream could not be opened or resumed.
#[derive(Debug)]
pub(crate) enum StreamError {
    /// The session has ended.
    Gone,
    /// A request id is already in flight in this session.
    DuplicateId(RequestId),
    /// A standalone stream is already open.
    Conflict,
    /// `Last-Event-ID` names no event of this session.
    UnknownEvent,
    /// Events after `Last-Event-ID` were evicted from the store.
    Expired,
    /// Resuming needs an event store, and the server has none.
    NotResumable,
}

struct StreamState {
    /// Responses this stream still owes (`usize::MAX` for the standalone stream).
    awaiting: usize,
    /// The HTTP response currently carrying the stream, if connected.
    conn: Option<EventSender>,
    /// JSON mode: the responses so far, and where to send them all.
    json: Option<(Vec<Bytes>, oneshot::Sender<Vec<Bytes>>)>,
    /// Not decided yet: where to send what the first message decides.
    first: Option<oneshot::Sender<First>>,
    /// Events get ids and are stored, so the stream can be resumed.
    resumable: bool,
    next_seq: u64,
    /// Held while the stream is open, so a stateless session lives as long as its POST.
    _keep: Option<mpsc::Sender<InboundFrame>>,
}

pub(crate) struct Routes {
    session: String,
    store: Option<Arc<dyn EventStore>>,
    retry: Option<Duration>,
    budget: Arc<QueueBudget>,
    /// The id of the client's `initialize` request, to learn the negotiated version.
    init_id: Option<RequestId>,
    version: Option<ProtocolVersion>,
    streams: HashMap<u64, StreamState>,
    by_request: HashMap<RequestId, u64>,
    standalone: Option<u64>,
    next_stream: u64,
    closed: bool,
}

impl StreamState {
    /// Carry the stream on `conn`, primed (SEP-1699) when it can be resumed.
    fn connect(&mut self, n: u64, conn: EventSender, prime: bool, retry: Option<Duration>) {
        self.resumable = prime;
        if prime {
            conn.send(encode_event(Some(&event_id(n, 0)), retry, b""));
            self.next_seq = 1;
        }
        self.conn = Some(conn);
    }
}

impl Routes {
    fn key(&self, stream: u64) -> StreamKey {
        StreamKey {
            session: self.session.clone(),
            stream,
        }
    }

    /// Priming (SEP-1699) needs a client of 2025-11-25 or later: older ones may choke on
    /// an event with empty data.
    fn can_prime(&self) -> bool {
        self.store.is_some()
            && self
                .version
                .as_ref()
                .is_some_and(|v| v.as_str() >= ProtocolVersion::V2025_11_25.as_str())
    }

    fn new_stream(&mut self, conn: Option<EventSender>) -> (u64, &mut StreamState) {
        let n = self.next_stream;
        self.next_stream += 1;
        let mut state = StreamState {
            awaiting: 0,
            conn: None,
            json: None,
            first: None,
            resumable: false,
            next_seq: 0,
            _keep: None,
        };
        if let Some(conn) = conn {
            state.connect(n, conn, self.can_prime(), self.retry);
        }
        (n, self.streams.entry(n).or_insert(state))
    }

    /// An undecided stream's first message is not its answer: it becomes an event
    /// stream, handed to its POST.
    fn decide_stream(&mut self, stream: u64) {
        let (prime, retry) = (self.can_prime(), self.retry);
        let Some(state) = self.streams.get_mut(&stream) else {
            return;
        };
        let Some(first) = state.first.take() else {
            return;
        };
        let (tx, rx) = event_channel(&self.budget);
        state.connect(stream, tx, prime, retry);
        if first.send(First::Stream(rx)).is_err() {
            // The client is gone.
            state.conn = None;
        }
    }

    /// Put one outbound message on `stream`; `response` marks one of the responses
    /// the stream owes. The message is shared, not copied, by a JSON body and by the
    /// event store; an event stream gets it encoded as an event.
    fn deliver(&mut self, stream: u64, bytes: Bytes, response: bool) {
        if let Some(state) = self.streams.get_mut(&stream)
            && state.first.is_some()
        {
            if response && state.awaiting == 1 {
                // Nothing came before the answer: it goes as the body, not an event.
                if let Some(first) = state.first.take() {
                    let _ = first.send(First::Json(bytes));
                }
                self.answered(stream);
                return;
            }
            self.decide_stream(stream);
        }
        let key = self.key(stream);
        let store = self.store.clone();
        let Some(state) = self.streams.get_mut(&stream) else {
            return;
        };
        if let Some((bodies, _)) = &mut state.json {
            if response {
                bodies.push(bytes);
            }
        } else {
            let seq = state.next_seq;
            state.next_seq += 1;
            let id = state.resumable.then(|| event_id(stream, seq));
            if state.resumable
                && let Some(store) = &store
            {
                store.append(&key, seq, bytes.clone());
            }
            if let Some(conn) = &state.conn
                && !conn.send_message(id.as_deref(), &bytes)
            {
                tracing::debug!(stream, "the client disconnected from an event stream");
                state.conn = None;
            }
        }
        if response {
            self.answered(stream);
        }
    }

    /// One response of `stream` was delivered (or will never be).
    fn answered(&mut self, stream: u64) {
        let Some(state) = self.streams.get_mut(&stream) else {
            return;
        };
        state.awaiting = state.awaiting.saturating_sub(1);
        if state.awaiting == 0 && state.first.is_some() {
            // Cancelled before anything was sent: an event stream that ends at once.
            self.decide_stream(stream);
        }
        let Some(state) = self.streams.get_mut(&stream) else {
            return;
        };
        if state.awaiting == 0
            && let Some(state) = self.streams.remove(&stream)
            && let Some((bodies, done)) = state.json
        {
            let _ = done.send(bodies);
        }
    }

    /// Where a message unrelated to any request goes: the standalone stream if the
    /// client opened one (connected, or resumable), otherwise the newest connected
    /// request stream, so a `list_changed` sent before the client's GET arrived is not
    /// lost.
    fn unrelated_target(&self) -> Option<u64> {
        if let Some(n) = self.standalone
            && self
                .streams
                .get(&n)
                .is_some_and(|s| s.resumable || s.conn.as_ref().is_some_and(|c| !c.is_closed()))
        {
            return Some(n);
        }
        // An undecided stream becomes an event stream to carry it.
        self.streams
            .iter()
            .filter(|(_, s)| s.first.is_some() || s.conn.as_ref().is_some_and(|c| !c.is_closed()))
            .map(|(n, _)| *n)
            .max()
    }

    fn close_all(&mut self) {
        self.closed = true;
        self.streams.clear();
        self.by_request.clear();
    }
}

/// One session: what POST, GET and DELETE handlers reach.
pub(crate) struct HttpSession {
    pub(crate) id: String,
    inbound: Mutex<Option<mpsc::Sender<InboundFrame>>>,
    routes: Arc<Mutex<Routes>>,
    last_seen: Mutex<Instant>,
    /// The client sent a request other than `initialize`.
    used: AtomicBool,
    /// The principal its handlers see, with authorization on.
    pub(crate) principal: PrincipalSlot,
    /// [`Principal::owner_key`] of the one that created it; no other may use it.
    owner: OnceLock<String>,
}

/// What every session of a server shares.
#[derive(Clone)]
pub(crate) struct SessionSettings {
    pub(crate) store: Option<Arc<dyn EventStore>>,
    pub(crate) retry: Option<Duration>,
    pub(crate) budget: Arc<QueueBudget>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HttpSession {
    /// A session and the transport the engine runs it on.
    pub(crate) fn new(
        id: String,
        settings: SessionSettings,
    ) -> (Arc<HttpSession>, SessionTransport) {
        let (tx, rx) = mpsc::channel(INBOUND_QUEUE);
        let routes = Arc::new(Mutex::new(Routes {
            session: id.clone(),
            store: settings.store,
            retry: settings.retry,
            budget: settings.budget,
            init_id: None,
            version: None,
            streams: HashMap::new(),
            by_request: HashMap::new(),
            standalone: None,
            next_stream: 1,
            closed: false,
        }));
        let session = Arc::new(HttpSession {
            id,
            inbound: Mutex::new(Some(tx)),
            routes: routes.clone(),
            last_seen: Mutex::new(Instant::now()),
            used: AtomicBool::new(false),
            principal: PrincipalSlot::default(),
            owner: OnceLock::new(),
        });
        (
            session,
            SessionTransport {
                inbound: rx,
                routes,
            },
        )
    }

    /// Let `principal` act in this session: the first one binds it, later ones must
    /// have the same owner key (`false` otherwise). Handlers then see `principal`.
    pub(crate) fn bind(&self, principal: Arc<Principal>) -> bool {
        let key = principal.owner_key();
        if self.owner.get_or_init(|| key.clone()) != &key {
            return false;
        }
        self.principal.set(principal);
        true
    }

    pub(crate) fn touch(&self) {
        *lock(&self.last_seen) = Instant::now();
    }

    /// When the client last sent something.
    pub(crate) fn last_seen(&self) -> Instant {
        *lock(&self.last_seen)
    }

    /// The client sent a request other than `initialize`.
    pub(crate) fn mark_used(&self) {
        self.used.store(true, Ordering::Relaxed);
    }

    /// Whether the session ever served more than its `initialize`.
    pub(crate) fn is_used(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }

    /// Idle: no request for `idle`, no request in flight (streams that owe a response
    /// stay until they deliver it) and no standalone stream connected.
    pub(crate) fn is_idle(&self, idle: Duration) -> bool {
        lock(&self.last_seen).elapsed() >= idle
            && lock(&self.routes)
                .streams
                .values()
                .all(|s| s.awaiting == usize::MAX && s.conn.as_ref().is_none_or(|c| c.is_closed()))
    }

    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        lock(&self.routes).version.clone()
    }

    /// The sender to the engine's reader, until the session is terminated.
    pub(crate) fn sender(&self) -> Option<mpsc::Sender<InboundFrame>> {
        lock(&self.inbound).clone()
    }

    /// The sender to the engine's reader, taken out of the session, for an exchange
    /// without a session: its engine then ends as soon as the holders of this sender
    /// (the open stream, the request's cancel guard) are done with it.
    pub(crate) fn take_sender(&self) -> Option<mpsc::Sender<InboundFrame>> {
        lock(&self.inbound).take()
    }

    /// End the session: the engine's reader sees the end of input and closes in order,
    /// and every open stream ends.
    pub(crate) fn terminate(&self) {
        lock(&self.inbound).take();
        let mut routes = lock(&self.routes);
        if let Some(store) = &routes.store {
            store.remove_session(&self.id);
        }
        routes.close_all();
    }

    /// Open the stream that will carry the responses to `requests`, before they are
    /// queued to the engine. `keep` (stateless mode) lives as long as the stream.
    pub(crate) fn open(
        &self,
        requests: &[RequestId],
        mode: ReplyMode,
        initialize: Option<&RequestId>,
        keep: Option<mpsc::Sender<InboundFrame>>,
    ) -> Result<Reply, StreamError> {
        let mut routes = lock(&self.routes);
        if routes.closed {
            return Err(StreamError::Gone);
        }
        if let Some(id) = requests
            .iter()
            .find(|id| routes.by_request.contains_key(*id))
        {
            return Err(StreamError::DuplicateId(id.clone()));
        }
        if let Some(id) = initialize {
            routes.init_id = Some(id.clone());
        }
        let (reply, conn, json, first) = match mode {
            ReplyMode::Sse => {
                let (tx, rx) = event_channel(&routes.budget);
                (Reply::Sse(rx), Some(tx), None, None)
            }
            ReplyMode::Json => {
                let (tx, rx) = oneshot::channel();
                (Reply::Json(rx), None, Some((Vec::new(), tx)), None)
            }
            ReplyMode::FirstDecides => {
                let (tx, rx) = oneshot::channel();
                (Reply::FirstDecides(rx), None, None, Some(tx))
            }
        };
        let (n, state) = routes.new_stream(conn);
        state.awaiting = requests.len();
        state.json = json;
        state.first = first;
        state._keep = keep;
        for id in requests {
            routes.by_request.insert(id.clone(), n);
        }
        Ok(reply)
    }

    /// Make the undecided stream carrying `id` an event stream now (the answer is
    /// slow in coming: a stream is primed for resumption and kept alive).
    pub(crate) fn stream_now(&self, id: &RequestId) {
        let mut routes = lock(&self.routes);
        if let Some(stream) = routes.by_request.get(id).copied() {
            routes.decide_stream(stream);
        }
    }

    /// The client cancelled `id`: it will not be answered, so its stream owes one
    /// response less.
    pub(crate) fn cancelled(&self, id: &RequestId) {
        let mut routes = lock(&self.routes);
        if let Some(stream) = routes.by_request.remove(id) {
            routes.answered(stream);
        }
    }

    /// Open the standalone stream (GET), or resume any stream after `last_event_id`.
    pub(crate) fn get_stream(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<EventReceiver, StreamError> {
        let mut routes = lock(&self.routes);
        if routes.closed {
            return Err(StreamError::Gone);
        }
        let (tx, rx) = event_channel(&routes.budget);
        if let Some(last) = last_event_id {
            let Some(store) = routes.store.clone() else {
                return Err(StreamError::NotResumable);
            };
            let (stream, seq) = parse_event_id(last).ok_or(StreamError::UnknownEvent)?;
            if stream == 0 || stream >= routes.next_stream {
                return Err(StreamError::UnknownEvent);
            }
            let events = store
                .after(&routes.key(stream), seq)
                .ok_or(StreamError::Expired)?;
            for (seq, message) in events {
                tx.send_message(Some(&event_id(stream, seq)), &message);
            }
            // Attach to the stream if it still owes something; otherwise the replay was
            // all of it and the response ends here.
            if let Some(state) = routes.streams.get_mut(&stream) {
                state.conn = Some(tx);
            }
            return Ok(rx);
        }
        if let Some(n) = routes.standalone
            && let Some(state) = routes.streams.get_mut(&n)
        {
            if state.conn.as_ref().is_some_and(|c| !c.is_closed()) {
                return Err(StreamError::Conflict);
            }
            state.conn = Some(tx);
            return Ok(rx);
        }
        let (n, state) = routes.new_stream(Some(tx));
        state.awaiting = usize::MAX;
        routes.standalone = Some(n);
        Ok(rx)
    }
}

/// The transport the engine runs one HTTP session on.
pub(crate) struct SessionTransport {
    inbound: mpsc::Receiver<InboundFrame>,
    routes: Arc<Mutex<Routes>>,
}

impl Transport for SessionTransport {
    type Reader = SessionReader;
    type Writer = SessionWriter;

    fn split(self) -> (SessionReader, SessionWriter) {
        (
            SessionReader {
                inbound: self.inbound,
            },
            SessionWriter {
                routes: self.routes,
            },
        )
    }
}

/// Frames the POST handlers queued.
pub(crate) struct SessionReader {
    inbound: mpsc::Receiver<InboundFrame>,
}

impl FrameReader for SessionReader {
    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
        Ok(self.inbound.recv().await)
    }

    /// Each response goes to the stream of the POST that carried its request, which
    /// writes a batch's array itself.
    fn answers_batches_whole(&self) -> bool {
        false
    }
}

/// Routes each outbound frame to its stream.
pub(crate) struct SessionWriter {
    routes: Arc<Mutex<Routes>>,
}

impl SessionWriter {
    /// Route one whole frame to its stream.
    fn route(&self, frame: Bytes, meta: &FrameMeta) {
        let mut routes = lock(&self.routes);
        let (target, response) = match &meta.kind {
            FrameKind::Response(Some(id)) => {
                if routes.init_id.as_ref() == Some(id) {
                    routes.version = negotiated_version(&frame);
                }
                (routes.by_request.remove(id), true)
            }
            _ => {
                let related = meta
                    .related
                    .as_ref()
                    .and_then(|id| routes.by_request.get(id).copied());
                (related.or_else(|| routes.unrelated_target()), false)
            }
        };
        match target {
            Some(stream) => routes.deliver(stream, frame, response),
            None => tracing::debug!(
                session = %routes.session,
                kind = ?meta.kind,
                "no stream is open for this message; it was dropped"
            ),
        }
    }
}

impl FrameWriter for SessionWriter {
    /// A large response comes in parts: they are joined in the result's own buffer, and
    /// that one buffer is what a JSON body or the event store keeps.
    async fn write_frame(&mut self, frame: Frame, meta: &FrameMeta) -> Result<(), TransportError> {
        self.route(frame.into_bytes(), meta);
        Ok(())
    }

    async fn end_stream(&mut self, request: &RequestId) {
        let mut routes = lock(&self.routes);
        let Some(stream) = routes.by_request.get(request).copied() else {
            return;
        };
        // Undecided: an event stream, so that there is one to end and resume.
        if routes.can_prime() {
            routes.decide_stream(stream);
        }
        if let Some(state) = routes.streams.get_mut(&stream)
            && state.resumable
        {
            state.conn = None;
        }
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }

    async fn close(&mut self) {
        lock(&self.routes).close_all();
    }
}

/// `result.protocolVersion` of an `initialize` response.
fn negotiated_version(frame: &[u8]) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    struct Response {
        result: Result,
    }
    #[derive(serde::Deserialize)]
    struct Result {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let response: Response = serde_json::from_slice(frame).ok()?;
    Some(ProtocolVersion::from(response.result.protocol_version))
}
