//! Where each outbound message of one HTTP session goes: the streams open on it (one per
//! POST that is still owed responses, and the standalone GET stream), the request each
//! stream answers, and the JSON answers not yet sent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcpflow_protocol::{ErrorCode, ProtocolVersion, RequestId};
use tokio::sync::{mpsc, oneshot};

use super::events::{
    EventSender, EventStore, QueueBudget, StreamKey, encode_event, event_channel, event_id,
};
use super::fleet::{Append, SessionStore, StoredEvent};
use super::session::{First, JsonAnswer};
use crate::transport::InboundFrame;

/// What an outbound message is to the stream that carries it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Sent {
    /// One of the responses the stream owes, with its code when it is an error.
    Response(Option<ErrorCode>),
    /// Anything else: progress, a log, a request, a notification.
    Other,
}

/// One stream of the session: a POST's answer, or the standalone GET stream.
pub(super) struct StreamState {
    /// Responses this stream still owes (`usize::MAX` for the standalone stream).
    pub(super) awaiting: usize,
    /// The HTTP response currently carrying the stream, if connected.
    pub(super) conn: Option<EventSender>,
    /// JSON mode: the responses so far, and where to send them all.
    pub(super) json: Option<(Vec<JsonAnswer>, oneshot::Sender<Vec<JsonAnswer>>)>,
    /// Not decided yet: where to send what the first message decides.
    pub(super) first: Option<oneshot::Sender<First>>,
    /// Events get ids and are stored, so the stream can be resumed.
    pub(super) resumable: bool,
    /// The requests it answers (none for the standalone stream).
    pub(super) owes: Vec<RequestId>,
    pub(super) next_seq: u64,
    /// Held while the stream is open, so a stateless session lives as long as its POST.
    pub(super) _keep: Option<mpsc::Sender<InboundFrame>>,
}

/// The streams of one session, and which request each answers.
pub(super) struct Routes {
    pub(super) session: String,
    pub(super) store: Option<Arc<dyn EventStore>>,
    pub(super) retry: Option<Duration>,
    pub(super) budget: Arc<QueueBudget>,
    /// The id of the client's `initialize` request, to learn the negotiated version.
    pub(super) init_id: Option<RequestId>,
    pub(super) version: Option<ProtocolVersion>,
    pub(super) streams: HashMap<u64, StreamState>,
    pub(super) by_request: HashMap<RequestId, u64>,
    pub(super) standalone: Option<u64>,
    pub(super) next_stream: u64,
    pub(super) closed: bool,
    /// The store of a fleet: resumable events go there, through [`Routes::outbox`], before
    /// they are sent.
    pub(super) shared: Option<Arc<dyn SessionStore>>,
    /// Events to store and then send, in order (with `shared` only).
    pub(super) outbox: Vec<Outgoing>,
}

/// An event waiting for the fleet's store to acknowledge it before it is sent.
pub(super) struct Outgoing {
    pub(super) append: Append,
    /// Where it goes once stored, and as what.
    pub(super) send: Option<(EventSender, Bytes)>,
}

impl Routes {
    pub(super) fn key(&self, stream: u64) -> StreamKey {
        StreamKey {
            session: self.session.clone(),
            stream,
        }
    }

    /// Carry stream `n` on `conn`, primed (SEP-1699) when it can be resumed: in a fleet,
    /// once the store has the stream's opening.
    pub(super) fn connect(&mut self, n: u64, conn: EventSender) {
        let (prime, retry) = (self.can_prime(), self.retry);
        let session = self.session.clone();
        let shared = self.shared.is_some();
        let Some(state) = self.streams.get_mut(&n) else {
            return;
        };
        state.resumable = prime;
        if prime {
            let priming = encode_event(Some(&event_id(n, 0)), retry, b"");
            state.next_seq = 1;
            if shared {
                self.outbox.push(Outgoing {
                    append: Append {
                        key: StreamKey { session, stream: n },
                        seq: 0,
                        event: StoredEvent::Opened {
                            owes: state.owes.clone(),
                        },
                    },
                    send: Some((conn.clone(), priming)),
                });
            } else {
                conn.send(priming);
            }
        }
        state.conn = Some(conn);
    }

    /// Priming (SEP-1699) needs a client of 2025-11-25 or later: older ones may choke on
    /// an event with empty data.
    pub(super) fn can_prime(&self) -> bool {
        (self.store.is_some() || self.shared.is_some())
            && self
                .version
                .as_ref()
                .is_some_and(|v| v.as_str() >= ProtocolVersion::V2025_11_25.as_str())
    }

    /// A new stream, not connected yet.
    pub(super) fn new_stream(&mut self) -> (u64, &mut StreamState) {
        let n = self.next_stream;
        self.next_stream += 1;
        let state = StreamState {
            awaiting: 0,
            conn: None,
            json: None,
            first: None,
            resumable: false,
            owes: Vec::new(),
            next_seq: 0,
            _keep: None,
        };
        (n, self.streams.entry(n).or_insert(state))
    }

    /// An undecided stream's first message is not its answer: it becomes an event
    /// stream, handed to its POST.
    pub(super) fn decide_stream(&mut self, stream: u64) {
        let Some(first) = self
            .streams
            .get_mut(&stream)
            .and_then(|state| state.first.take())
        else {
            return;
        };
        let (tx, rx) = event_channel(&self.budget);
        self.connect(stream, tx);
        if first.send(First::Stream(rx)).is_err()
            && let Some(state) = self.streams.get_mut(&stream)
        {
            // The client is gone.
            state.conn = None;
        }
    }

    /// Put one outbound message on `stream`. The message is shared, not copied, by a
    /// JSON body and by the event store; an event stream gets it encoded as an event.
    /// `answers` is the request a response answers.
    pub(super) fn deliver(
        &mut self,
        stream: u64,
        bytes: Bytes,
        sent: Sent,
        answers: Option<&RequestId>,
    ) {
        if let Some(state) = self.streams.get_mut(&stream)
            && state.first.is_some()
        {
            if let Sent::Response(error) = sent
                && state.awaiting == 1
            {
                // Nothing came before the answer: it goes as the body, not an event.
                if let Some(first) = state.first.take() {
                    let _ = first.send(First::Json(JsonAnswer { body: bytes, error }));
                }
                self.answered(stream);
                return;
            }
            self.decide_stream(stream);
        }
        let key = self.key(stream);
        let store = self.store.clone();
        let shared = self.shared.is_some();
        let Some(state) = self.streams.get_mut(&stream) else {
            return;
        };
        if let Some((bodies, _)) = &mut state.json {
            if let Sent::Response(error) = sent {
                bodies.push(JsonAnswer { body: bytes, error });
            }
        } else {
            let seq = state.next_seq;
            state.next_seq += 1;
            let id = state.resumable.then(|| event_id(stream, seq));
            if state.resumable && shared {
                let send = state
                    .conn
                    .clone()
                    .map(|conn| (conn, encode_event(id.as_deref(), None, &bytes)));
                let answers = match (sent, answers) {
                    (Sent::Response(_), Some(id)) => Some(id.clone()),
                    _ => None,
                };
                self.outbox.push(Outgoing {
                    append: Append {
                        key,
                        seq,
                        event: StoredEvent::Message {
                            message: bytes,
                            answers,
                        },
                    },
                    send,
                });
            } else {
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
        }
        if matches!(sent, Sent::Response(_)) {
            self.answered(stream);
        }
    }

    /// One response of `stream` was delivered (or will never be).
    pub(super) fn answered(&mut self, stream: u64) {
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
    pub(super) fn unrelated_target(&self) -> Option<u64> {
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

    pub(super) fn close_all(&mut self) {
        self.closed = true;
        self.streams.clear();
        self.by_request.clear();
    }
}
