//! One MCP session over HTTP: its state, the streams its POSTs and GETs read, and the
//! transport the engine runs on (in `session_transport.rs`).
//!
//! Inbound, each POST routes its message from its own task
//! ([`FrameRouter`](crate::transport::FrameRouter)). Outbound, the engine's writer, or
//! the handler's task when the writer is idle, hands each frame with its
//! [`FrameMeta`](crate::transport::FrameMeta): a response goes to the stream of the POST
//! that carried its request; progress, logs and requests a handler sends go to the
//! stream of the request being handled; everything else goes to the standalone GET
//! stream. A stream ends once it delivered every response it owes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use mcpflow_protocol::{ErrorCode, ProtocolVersion, RequestId};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::events::{
    EventReceiver, EventSender, EventStore, QueueBudget, event_channel, event_id, parse_event_id,
};
use super::fleet::SessionStore;
use super::routes::Routes;
use super::session_transport::SessionTransport;
use crate::server::{Principal, PrincipalSlot};
use crate::transport::{FrameRouter, InboundFrame};

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
    Json(oneshot::Receiver<Vec<JsonAnswer>>),
    /// Decided by the first message ([`ReplyMode::FirstDecides`]); an error when the
    /// session ended first.
    FirstDecides(oneshot::Receiver<First>),
}

/// A response sent as (part of) a JSON body.
pub(crate) struct JsonAnswer {
    pub(crate) body: Bytes,
    /// Its code, when it is an error.
    pub(crate) error: Option<ErrorCode>,
}

/// The answer to a POST whose first message decided it.
pub(crate) enum First {
    /// The response came first: it is the body.
    Json(JsonAnswer),
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
    /// Serves requests: false while a fleet's copy of the session answers its
    /// `initialize` to itself.
    ready: watch::Sender<bool>,
    outbox: Option<Arc<Outbox>>,
    /// Set by the engine before it reads.
    router: Arc<OnceLock<FrameRouter>>,
}

/// The events a fleet session sends go through its store first, one batch at a time.
pub(crate) struct Outbox {
    shared: Arc<dyn SessionStore>,
    /// How long a stream's log outlives its last event: the session's idle timeout.
    ttl: Duration,
    order: tokio::sync::Mutex<()>,
}

/// Store what `routes` has waiting in its outbox, then send it, in order.
pub(super) async fn drain(routes: &Mutex<Routes>, outbox: Option<&Outbox>) {
    let Some(outbox) = outbox else {
        return;
    };
    let _order = outbox.order.lock().await;
    let outgoing = std::mem::take(&mut lock(routes).outbox);
    if outgoing.is_empty() {
        return;
    }
    let appends = outgoing.iter().map(|o| o.append.clone()).collect();
    if let Err(e) = outbox.shared.append(appends, outbox.ttl).await {
        // Sent anyway: the client gets them now, though it cannot resume past them.
        tracing::warn!(error = %e, "could not store events of a stream; they are sent unstored");
    }
    for (conn, event) in outgoing.into_iter().filter_map(|o| o.send) {
        conn.send(event);
    }
}

/// What every session of a server shares.
#[derive(Clone)]
pub(crate) struct SessionSettings {
    pub(crate) store: Option<Arc<dyn EventStore>>,
    pub(crate) retry: Option<Duration>,
    pub(crate) budget: Arc<QueueBudget>,
    /// The fleet's store, in place of `store`.
    pub(crate) shared: Option<Arc<dyn SessionStore>>,
    /// The session idle timeout.
    pub(crate) idle: Duration,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HttpSession {
    /// A session and the transport the engine runs it on.
    pub(crate) fn new(
        id: String,
        settings: SessionSettings,
    ) -> (Arc<HttpSession>, SessionTransport) {
        let (tx, rx) = mpsc::channel(INBOUND_QUEUE);
        // A fleet's stream numbers carry the instance's, so event ids are unique in it.
        let first_stream = settings
            .shared
            .as_ref()
            .map_or(0, |shared| super::fleet::node_base(shared.node()))
            + 1;
        let outbox = settings.shared.clone().map(|shared| {
            Arc::new(Outbox {
                shared,
                ttl: settings.idle,
                order: tokio::sync::Mutex::new(()),
            })
        });
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
            next_stream: first_stream,
            closed: false,
            shared: settings.shared,
            outbox: Vec::new(),
        }));
        let session = Arc::new(HttpSession {
            id,
            inbound: Mutex::new(Some(tx)),
            routes: routes.clone(),
            last_seen: Mutex::new(Instant::now()),
            used: AtomicBool::new(false),
            principal: PrincipalSlot::default(),
            owner: OnceLock::new(),
            ready: watch::channel(true).0,
            outbox: outbox.clone(),
            router: Arc::default(),
        });
        let router = session.router.clone();
        (
            session,
            SessionTransport {
                inbound: rx,
                routes,
                outbox,
                router,
            },
        )
    }

    /// Store and send what the last change of routes left waiting (in a fleet).
    pub(crate) async fn drain(&self) {
        drain(&self.routes, self.outbox.as_deref()).await;
    }

    /// Hold requests until [`set_ready`](Self::set_ready).
    pub(crate) fn set_starting(&self) {
        self.ready.send_replace(false);
    }

    pub(crate) fn set_ready(&self) {
        self.ready.send_replace(true);
    }

    /// Wait until the session serves requests, at most `limit`: false when it did not.
    pub(crate) async fn ready(&self, limit: Duration) -> bool {
        let mut ready = self.ready.subscribe();
        tokio::time::timeout(limit, ready.wait_for(|on| *on))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The owner key a fleet's record names, for a copy of the session.
    pub(crate) fn set_owner(&self, key: String) {
        let _ = self.owner.set(key);
    }

    /// The owner key of the principal that created the session, if bound.
    pub(crate) fn owner(&self) -> Option<String> {
        self.owner.get().cloned()
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

    /// Route `frame` from this task, or queue it on `sender` for the engine's reader if
    /// the engine is not reading. `Err` when the engine is gone.
    pub(crate) async fn deliver(
        &self,
        sender: &mpsc::Sender<InboundFrame>,
        frame: InboundFrame,
    ) -> Result<(), StreamError> {
        match FrameRouter::route_if_set(&self.router, frame).await {
            Ok(()) => Ok(()),
            Err(frame) => sender.send(frame).await.map_err(|_| StreamError::Gone),
        }
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
        let (n, state) = routes.new_stream();
        state.awaiting = requests.len();
        state.json = json;
        state.first = first;
        state._keep = keep;
        state.owes = requests.to_vec();
        for id in requests {
            routes.by_request.insert(id.clone(), n);
        }
        if let Some(conn) = conn {
            routes.connect(n, conn);
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
        drop(routes);
        self.standalone(tx)?;
        Ok(rx)
    }

    /// Carry the standalone stream on `tx`.
    pub(crate) fn standalone(&self, tx: EventSender) -> Result<(), StreamError> {
        let mut routes = lock(&self.routes);
        if routes.closed {
            return Err(StreamError::Gone);
        }
        if let Some(n) = routes.standalone
            && let Some(state) = routes.streams.get_mut(&n)
        {
            if state.conn.as_ref().is_some_and(|c| !c.is_closed()) {
                return Err(StreamError::Conflict);
            }
            state.conn = Some(tx);
            return Ok(());
        }
        let (n, state) = routes.new_stream();
        state.awaiting = usize::MAX;
        routes.standalone = Some(n);
        routes.connect(n, tx);
        Ok(())
    }
}
