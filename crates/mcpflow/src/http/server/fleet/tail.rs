//! Resuming a fleet session's stream on any instance: replay it from the store, then
//! follow the store until the stream delivered every response it owes. When the
//! instance writing it is gone, each response still owed becomes an error, so that the
//! client never waits on a dead instance; a standalone stream carries on here.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcpflow_protocol::{ErrorCode, ErrorObject, Message, RequestId};

use super::{Append, SessionStore, StoreError, StoredEvent, node_of};
use crate::http::server::events::{
    EventReceiver, EventSender, QueueBudget, StreamKey, encode_event, event_channel, event_id,
};
use crate::http::server::session::{HttpSession, StreamError};

/// How long one read of the store waits for the next event.
const FOLLOW_WAIT: Duration = Duration::from_secs(1);
/// Store failures in a row after which a follower gives up (the client resumes again).
const MAX_FAILURES: u32 = 5;

/// Why a stream could not be resumed from the store.
pub(in crate::http::server) enum ResumeError {
    Stream(StreamError),
    Store(StoreError),
}

/// Resume stream `stream` of `session` after event `seq`.
pub(in crate::http::server) async fn resume(
    shared: Arc<dyn SessionStore>,
    session: Arc<HttpSession>,
    stream: u64,
    seq: u64,
    budget: &Arc<QueueBudget>,
    idle: Duration,
) -> Result<EventReceiver, ResumeError> {
    let key = StreamKey {
        session: session.id.clone(),
        stream,
    };
    let entries = shared
        .read(&key, None, Duration::ZERO)
        .await
        .map_err(ResumeError::Store)?
        .ok_or(ResumeError::Stream(StreamError::UnknownEvent))?;
    let Some((0, StoredEvent::Opened { owes })) = entries.first() else {
        return Err(ResumeError::Stream(StreamError::Expired));
    };
    if entries.last().is_some_and(|(last, _)| *last < seq) {
        return Err(ResumeError::Stream(StreamError::UnknownEvent));
    }
    let (tx, rx) = event_channel(budget);
    let mut follower = Follower {
        owed: (!owes.is_empty()).then(|| owes.iter().cloned().collect()),
        next: 0,
        key,
        shared,
        session,
        tx,
        idle,
    };
    for (n, event) in entries {
        follower.take(n, event, seq);
    }
    tokio::spawn(follower.follow());
    Ok(rx)
}

struct Follower {
    /// Responses still owed; `None` for the standalone stream.
    owed: Option<HashSet<RequestId>>,
    /// The last event read.
    next: u64,
    key: StreamKey,
    shared: Arc<dyn SessionStore>,
    session: Arc<HttpSession>,
    tx: EventSender,
    idle: Duration,
}

impl Follower {
    /// Take event `n`, sending it when the client has not seen it (after `seen`).
    fn take(&mut self, n: u64, event: StoredEvent, seen: u64) {
        self.next = n;
        let StoredEvent::Message { message, answers } = event else {
            return;
        };
        if let (Some(owed), Some(id)) = (&mut self.owed, &answers) {
            owed.remove(id);
        }
        if n > seen {
            let id = event_id(self.key.stream, n);
            self.tx.send(encode_event(Some(&id), None, &message));
        }
    }

    fn done(&self) -> bool {
        self.owed.as_ref().is_some_and(HashSet::is_empty) || self.tx.is_closed()
    }

    async fn follow(mut self) {
        let mut failures = 0;
        while !self.done() {
            match self
                .shared
                .read(&self.key, Some(self.next), FOLLOW_WAIT)
                .await
            {
                Ok(Some(entries)) if !entries.is_empty() => {
                    failures = 0;
                    let seen = self.next;
                    for (n, event) in entries {
                        self.take(n, event, seen);
                    }
                }
                Ok(Some(_)) => {
                    failures = 0;
                    match self.writer_gone().await {
                        Ok(false) => {}
                        Ok(true) => return self.carry_on().await,
                        Err(()) => return,
                    }
                }
                // Dropped from the log under the follower: the client resumes and is told.
                Ok(None) => return,
                Err(e) => {
                    failures += 1;
                    if failures >= MAX_FAILURES {
                        tracing::warn!(error = %e, "gave up following a stream in the store");
                        return;
                    }
                    tokio::time::sleep(FOLLOW_WAIT).await;
                }
            }
        }
    }

    /// Whether the instance writing the stream is gone; `Err` when the session is.
    async fn writer_gone(&self) -> Result<bool, ()> {
        let id = self.key.session.as_str();
        match self.shared.touch(&[id], self.idle).await {
            Ok(alive) if !alive.first().copied().unwrap_or(false) => return Err(()),
            _ => {}
        }
        let writer = node_of(self.key.stream);
        if writer == self.shared.node() {
            return Ok(self.session.sender().is_none());
        }
        Ok(matches!(self.shared.is_alive(writer).await, Ok(false)))
    }

    /// The writer is gone: answer what it owed with errors, or carry the standalone
    /// stream on from this instance.
    async fn carry_on(self) {
        let Some(owed) = &self.owed else {
            if let Err(e) = self.session.standalone(self.tx) {
                tracing::debug!(error = ?e, "the standalone stream could not be carried on");
            }
            return;
        };
        tracing::info!(
            session = %self.key.session,
            stream = self.key.stream,
            owed = owed.len(),
            "the instance serving a stream is gone; answering what it owed with errors"
        );
        let mut appends = Vec::new();
        let mut events = Vec::new();
        for (i, id) in owed.iter().enumerate() {
            let message = Message::error(
                Some(id.clone()),
                ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    "the server instance handling this request stopped before answering; its outcome is unknown",
                ),
            )
            .to_json_string();
            let message = Bytes::from(message);
            let seq = self.next + 1 + i as u64;
            events.push(encode_event(
                Some(&event_id(self.key.stream, seq)),
                None,
                &message,
            ));
            appends.push(Append {
                key: self.key.clone(),
                seq,
                event: StoredEvent::Message {
                    message,
                    answers: Some(id.clone()),
                },
            });
        }
        if let Err(e) = self.shared.append(appends, self.idle).await {
            tracing::warn!(error = %e, "could not store the errors of a stream whose instance is gone");
        }
        for event in events {
            self.tx.send(event);
        }
    }
}
