//! The endpoint's side of a fleet: finding a session in the store, starting this
//! instance's copy of it, recording a new one, and forwarding a client's answer to the
//! instance that waits for it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::http::StatusCode;
use bytes::Bytes;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{ErrorCode, RequestId};
use serde_json::value::RawValue;

use super::{
    DeliverForwarded, Forwarded, Room, SessionRecord, SessionStore, StoreError, node_of_request,
};
use crate::http::server::handlers::{Refusal, refuse};
use crate::http::server::session::{HttpSession, ReplyMode};
use crate::http::server::table::AppState;
use crate::server::Principal;
use crate::transport::{InboundFrame, ReadFrame};

/// How long a request waits for this instance's copy of its session to start.
const START_WAIT: Duration = Duration::from_secs(10);

/// 503 with `Retry-After`: the store cannot be reached, and nothing falls back to memory.
pub(in crate::http::server) fn unavailable(e: &StoreError) -> Refusal {
    tracing::warn!(error = %e, "the session store is unavailable");
    refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::INTERNAL_ERROR,
        None,
        format!("the session store is unavailable ({e}); try again shortly"),
    )
    .retry_after(1)
}

fn unknown(id: &str) -> Refusal {
    refuse(
        StatusCode::NOT_FOUND,
        ErrorCode::INVALID_REQUEST,
        None,
        format!(
            "session `{id}` is unknown or has been terminated; start a new session with `initialize`"
        ),
    )
}

/// The session `id` names, from this instance's table or started from the store: 404
/// when the fleet no longer has it (or `principal` does not own it), 503 while the store
/// cannot be reached.
pub(in crate::http::server) async fn find(
    state: &Arc<AppState>,
    shared: &Arc<dyn SessionStore>,
    id: &str,
    principal: Option<&Arc<Principal>>,
) -> Result<Arc<HttpSession>, Refusal> {
    let idle = state.config.idle_timeout;
    let session = match state.session(id) {
        Some(session) => {
            let alive = shared
                .touch(&[id], idle)
                .await
                .map_err(|e| unavailable(&e))?;
            if !alive.first().copied().unwrap_or(false) {
                state.remove_session(id);
                return Err(unknown(id));
            }
            session
        }
        None => {
            let record = shared
                .load(id, idle)
                .await
                .map_err(|e| unavailable(&e))?
                .ok_or_else(|| unknown(id))?;
            start_copy(state, id, record)?
        }
    };
    if !session.ready(START_WAIT).await {
        return Err(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::INTERNAL_ERROR,
            None,
            "this instance could not start its copy of the session in time; try again".into(),
        )
        .retry_after(1));
    }
    if let Some(principal) = principal
        && !session.bind(principal.clone())
    {
        tracing::warn!(subject = %principal.subject, "a principal named a session it does not own");
        return Err(unknown(id));
    }
    Ok(session)
}

/// This instance's copy of session `id`: a session that answers the client's
/// `initialize` from the record to itself, before any other request of the client.
fn start_copy(
    state: &Arc<AppState>,
    id: &str,
    record: SessionRecord,
) -> Result<Arc<HttpSession>, Refusal> {
    let corrupt = |why: &str| {
        tracing::warn!(
            session = id,
            why,
            "a session record in the store is unreadable"
        );
        refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            None,
            "the session's record in the store is unreadable; start a new session".into(),
        )
    };
    let init = ReadFrame::read(Bytes::from(record.initialize.get().to_owned()));
    let init_id = init
        .requests()
        .find(|r| r.method == method::INITIALIZE)
        .map(|r| r.id.clone())
        .ok_or_else(|| corrupt("no initialize request"))?;
    let (session, created) = state.create_session(id.to_owned(), true)?;
    if !created {
        return Ok(session);
    }
    if let Some(owner) = record.owner {
        session.set_owner(owner);
    }
    let sender = session.sender().ok_or_else(|| corrupt("ended at once"))?;
    let reply = session
        .open(
            std::slice::from_ref(&init_id),
            ReplyMode::Json,
            Some(&init_id),
            None,
        )
        .map_err(|_| corrupt("no stream for initialize"))?;
    let started = session.clone();
    tokio::spawn(async move {
        let answered = async {
            sender.send(InboundFrame::Read(init)).await.ok()?;
            let super::super::session::Reply::Json(done) = reply else {
                return None;
            };
            done.await.ok()?;
            let initialized = mcpflow_protocol::Message::notification(
                mcpflow_protocol::methods::method::INITIALIZED,
                None,
            )
            .to_json_string();
            sender
                .send(InboundFrame::Read(ReadFrame::read(Bytes::from(
                    initialized,
                ))))
                .await
                .ok()
        };
        match tokio::time::timeout(START_WAIT, answered).await {
            Ok(Some(())) => started.set_ready(),
            _ => {
                tracing::warn!(session = %started.id, "this instance's copy of a session did not start");
                started.terminate();
            }
        }
    });
    Ok(session)
}

/// Make room for a new session under the fleet's cap ([`HttpServer::max_sessions`]):
/// 503 with `Retry-After` when every session is in use.
///
/// [`HttpServer::max_sessions`]: crate::http::server::HttpServer::max_sessions
pub(in crate::http::server) async fn make_room(
    shared: &Arc<dyn SessionStore>,
    state: &AppState,
) -> Result<(), Refusal> {
    let config = &state.config;
    // Busy sessions are touched every reaper tick: twice that unused is idle.
    let idle_for = 2 * state.reaper_every();
    match shared
        .make_room(config.max_sessions, idle_for, config.idle_timeout)
        .await
        .map_err(|e| unavailable(&e))?
    {
        Room::Free => Ok(()),
        Room::Evicted(id) => {
            tracing::info!(session = %id, max_sessions = config.max_sessions, "evicted the fleet's least recently used session to make room");
            state.evicted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            state.remove_session(&id);
            Ok(())
        }
        _ => Err(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::INTERNAL_ERROR,
            None,
            format!(
                "the servers behind this endpoint already serve {} sessions (max_sessions), none of them idle; try again later",
                config.max_sessions
            ),
        )
        .retry_after(1)),
    }
}

/// Write a new session's record before its `initialize` is answered, so that its next
/// request may land on any instance. Until that request it expires as an unused session
/// does, so a flood of abandoned sessions does not fill the store.
pub(in crate::http::server) async fn record(
    shared: &Arc<dyn SessionStore>,
    state: &AppState,
    session: &HttpSession,
    initialize: &Bytes,
) -> Result<(), Refusal> {
    let record = SessionRecord::new(initialize, session.owner()).map_err(|e| unavailable(&e))?;
    shared
        .create(
            &session.id,
            &record,
            state
                .config
                .unused_idle_timeout
                .min(state.config.idle_timeout),
        )
        .await
        .map_err(|e| unavailable(&e))
}

/// The instance a single response in `frame` is for, when that is another one.
pub(in crate::http::server) fn answer_elsewhere(
    frame: &ReadFrame,
    shared: &Arc<dyn SessionStore>,
) -> Option<u32> {
    let id: &RequestId = frame.response_id()?;
    node_of_request(id).filter(|&node| node != shared.node())
}

/// Forward `body`, the client's answer, to instance `node` of session `session`.
pub(in crate::http::server) async fn forward(
    shared: &Arc<dyn SessionStore>,
    node: u32,
    session: &str,
    body: &Bytes,
) -> Result<(), Refusal> {
    let text = std::str::from_utf8(body).map_err(|_| unreadable())?;
    let message = RawValue::from_string(text.to_owned()).map_err(|_| unreadable())?;
    let forwarded = Forwarded {
        session: session.to_owned(),
        message,
    };
    shared
        .forward(node, forwarded)
        .await
        .map_err(|e| unavailable(&e))
}

fn unreadable() -> Refusal {
    refuse(
        StatusCode::BAD_REQUEST,
        ErrorCode::PARSE_ERROR,
        None,
        "the body is not UTF-8 JSON".into(),
    )
}

/// Hand each message forwarded to this instance to the session it names here.
pub(in crate::http::server) fn deliver_forwarded(state: Weak<AppState>) -> DeliverForwarded {
    Arc::new(move |forwarded: Forwarded| {
        let state = state.clone();
        Box::pin(async move {
            let Some(sender) = state
                .upgrade()
                .and_then(|state| state.session(&forwarded.session))
                .and_then(|session| session.sender())
            else {
                tracing::debug!(session = %forwarded.session, "a forwarded answer's session is not held here");
                return;
            };
            let frame = ReadFrame::read(Bytes::from(forwarded.message.get().to_owned()));
            let _ = sender.send(InboundFrame::Read(frame)).await;
        })
    })
}
