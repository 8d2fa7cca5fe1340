//! A session the server no longer knows (404 on a frame that carried its id): fail the
//! frame with what to do, or send the original `initialize` again, adopt the new
//! session and send the frame once more.

use std::sync::Arc;

use bytes::Bytes;
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, Response};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::connection::{ACCEPT_POST, Connection, Waiter, body_snippet, describe, is_event_stream};
use super::outgoing::Outgoing;
use super::post::{Gate, http, post, read_body};
use super::sse::Cursor;
use super::stream::{EventReader, Next, idle_error, start_standalone};
use crate::error::TransportError;

/// A 404 on a frame that carried session `session`: the session expired.
pub(super) async fn expired(
    conn: &Arc<Connection>,
    outgoing: &Outgoing,
    waiter: &Waiter,
    gate: &mut Gate,
    session: &str,
    may_reinitialize: bool,
) {
    let hint = if !conn.config.reinitialize_on_404 {
        "; reinitialize_on_404 is off, so connect again to start a new session"
    } else if !may_reinitialize {
        "; it expired again right after re-initializing"
    } else if conn.handshake().is_none() {
        "; no initialize was sent on this connection to repeat"
    } else {
        ""
    };
    let error = |detail: String| http("POST", Some(404), detail);
    if !hint.is_empty() {
        let detail =
            format!("session `{session}` expired: the server answered 404 Not Found{hint}");
        conn.fail_frame(outgoing, waiter, error(detail)).await;
        return;
    }
    // Later frames wait for the new session in `post`, not behind this frame.
    gate.take();
    if let Err(e) = reinitialize(conn, session).await {
        conn.fail_frame(outgoing, waiter, e).await;
        return;
    }
    if outgoing.is_response() {
        tracing::warn!(
            "dropped {} after session `{session}` expired: it answered a request of the old session",
            outgoing.describe()
        );
        return;
    }
    post(conn, outgoing, waiter, gate, false).await;
}

/// Replace the expired session `expired`: send the original `initialize` again (its
/// answer is not passed on), adopt the new session id and version, then send
/// `notifications/initialized` and reopen the standalone stream. When another task
/// already replaced that session, nothing is done.
async fn reinitialize(conn: &Arc<Connection>, expired: &str) -> Result<(), TransportError> {
    let _one_at_a_time = conn.reinitializing.lock().await;
    if conn.session().is_none_or(|s| s.text != expired) {
        return Ok(());
    }
    let Some(handshake) = conn.handshake() else {
        return Err(http(
            "re-initialize",
            Some(404),
            format!("session `{expired}` expired and there is no initialize to repeat"),
        ));
    };
    tracing::info!(
        session = expired,
        "the session expired; initializing a new one"
    );
    let failed = |status: Option<u16>, what: String| {
        http(
            "re-initialize",
            status,
            format!(
                "session `{expired}` expired (404 Not Found) and starting a new one failed: {what}"
            ),
        )
    };
    // POST one handshake message; an error status fails the re-initialize with its body.
    let send = async |body: Bytes, with_session: bool, what: &str| {
        let response = conn
            .prepare(
                Method::POST,
                conn.config.url.clone(),
                ACCEPT_POST,
                with_session,
            )
            .await
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| failed(None, describe(&e)))?;
        let status = response.status();
        if status.is_success() {
            Ok(response)
        } else {
            let body = body_snippet(response).await;
            Err(failed(
                Some(status.as_u16()),
                format!("{what} answered {status}: {body}"),
            ))
        }
    };
    conn.clear_session();
    let response = send(handshake.initialize.clone(), false, "initialize").await?;
    let status = response.status();
    conn.capture_session(&response);
    let answer = initialize_answer(conn, response, &handshake.initialize_id)
        .await
        .map_err(|what| failed(Some(status.as_u16()), what))?;
    #[derive(Deserialize)]
    struct Answer<'a> {
        #[serde(borrow, default)]
        result: Option<&'a RawValue>,
        #[serde(borrow, default)]
        error: Option<&'a RawValue>,
    }
    let parsed: Answer<'_> = serde_json::from_slice(&answer)
        .map_err(|e| failed(None, format!("unreadable initialize answer: {e}")))?;
    match (parsed.result, parsed.error) {
        (Some(result), _) => conn.capture_version(result.get().as_bytes()),
        (None, Some(error)) => {
            return Err(failed(
                None,
                format!("initialize was rejected: {}", error.get()),
            ));
        }
        (None, None) => return Err(failed(None, "initialize answer has no result".to_owned())),
    }
    if let Some(initialized) = handshake.initialized {
        send(initialized, true, "notifications/initialized").await?;
        start_standalone(conn, None);
    }
    tracing::info!(
        session = conn.session().map(|s| s.text).unwrap_or_default(),
        "initialized a new session"
    );
    Ok(())
}

/// The answer to the repeated `initialize`, from a JSON body or an event stream; other
/// messages on that stream go to the reader.
async fn initialize_answer(
    conn: &Arc<Connection>,
    response: Response,
    id: &mcpflow_protocol::RequestId,
) -> Result<Vec<u8>, String> {
    let is_answer = |bytes: &[u8]| {
        #[derive(Deserialize)]
        struct Id {
            id: Option<mcpflow_protocol::RequestId>,
        }
        serde_json::from_slice::<Id>(bytes)
            .ok()
            .and_then(|m| m.id)
            .is_some_and(|i| i.correlates_with(id))
    };
    if !is_event_stream(&response) {
        let body = read_body(conn, response).await.map_err(|e| e.to_string())?;
        return if is_answer(&body) {
            Ok(body)
        } else {
            Err("the body does not answer initialize".to_owned())
        };
    }
    let mut reader = EventReader::new(response, Cursor::default(), conn);
    loop {
        match reader.next().await {
            Next::Event(event) if event.is_message() && is_answer(&event.data) => {
                return Ok(event.data);
            }
            Next::Event(event) => conn.deliver_event(event).await,
            Next::Ended => return Err("the event stream ended before the answer".to_owned()),
            Next::Failed(e) => return Err(format!("the event stream failed: {e}")),
            Next::Idle => {
                return Err(idle_error("re-initialize", conn.config.sse_idle_timeout).to_string());
            }
        }
    }
}
