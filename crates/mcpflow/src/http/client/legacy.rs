//! The HTTP+SSE transport of 2024-11-05, for servers that refuse the first POST:
//! one long `GET` event stream whose `endpoint` event names where to POST, and whose
//! `message` events carry everything the server sends. It cannot resume: when that
//! stream ends, the connection ends.

use std::sync::Arc;

use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode, Url};
use tokio::sync::oneshot;

use super::connection::{
    ACCEPT_POST, ACCEPT_STREAM, Connection, Mode, Waiter, body_snippet, describe, is_event_stream,
};
use super::outgoing::Outgoing;
use super::sse::Cursor;
use super::stream::{EventReader, Next};
use crate::error::TransportError;

const CONTEXT: &str = "legacy SSE stream";

fn error(status: Option<u16>, detail: String) -> TransportError {
    TransportError::Http {
        context: CONTEXT,
        status,
        detail,
    }
}

/// The first POST (`initialize`, in `outgoing`) was answered `post_status`: open the
/// URL as an HTTP+SSE stream, wait for its endpoint, and send `initialize` there.
pub(super) async fn fall_back(
    conn: &Arc<Connection>,
    outgoing: &Outgoing,
    waiter: &Waiter,
    post_status: StatusCode,
    post_body: String,
    gate: &mut Option<oneshot::Sender<()>>,
) {
    let url = conn.config.url.clone();
    tracing::info!(
        %url, status = %post_status,
        "the server refused the initialize POST; trying the HTTP+SSE transport of 2024-11-05"
    );
    let refused = format!("POST answered {post_status} ({post_body})");
    let sent = super::authorize::send(conn, "GET stream", || {
        conn.prepare(Method::GET, url.clone(), ACCEPT_STREAM, false)
    })
    .await;
    let response = match sent {
        Ok(response) => response,
        Err(e) => {
            let detail = format!(
                "{refused}, and the HTTP+SSE stream could not be opened: {}",
                describe(&e)
            );
            conn.fail(waiter, error(None, detail)).await;
            return;
        }
    };
    let status = response.status();
    if !status.is_success() || !is_event_stream(&response) {
        let detail = format!(
            "{refused}, and GET answered {status} ({}): the URL serves neither streamable HTTP nor HTTP+SSE",
            body_snippet(response).await
        );
        conn.fail(waiter, error(Some(status.as_u16()), detail))
            .await;
        return;
    }
    let mut reader = EventReader::new(response, Cursor::default(), conn);
    let endpoint = loop {
        match reader.next().await {
            Next::Event(event) if event.event == "endpoint" => {
                break String::from_utf8_lossy(&event.data).trim().to_owned();
            }
            Next::Event(event) => conn.deliver_event(event).await,
            Next::Idle => {
                let detail = format!(
                    "{refused}, and the HTTP+SSE stream sent no `endpoint` event within {:?} (sse_idle_timeout)",
                    conn.config.sse_idle_timeout
                );
                conn.fail(waiter, error(None, detail)).await;
                return;
            }
            Next::Ended | Next::Failed(_) => {
                let detail =
                    format!("{refused}, and the HTTP+SSE stream ended before its `endpoint` event");
                conn.fail(waiter, error(None, detail)).await;
                return;
            }
        }
    };
    let endpoint = match url.join(&endpoint) {
        Ok(endpoint) if endpoint.origin() == url.origin() => endpoint,
        Ok(other) => {
            let detail = format!(
                "the HTTP+SSE endpoint `{other}` is on another origin than `{url}`; refusing to send messages there"
            );
            conn.fail(waiter, error(None, detail)).await;
            return;
        }
        Err(e) => {
            let detail = format!("the HTTP+SSE endpoint `{endpoint}` is not a valid URL: {e}");
            conn.fail(waiter, error(None, detail)).await;
            return;
        }
    };
    tracing::info!(%endpoint, "using the HTTP+SSE transport");
    conn.set_mode(Mode::Legacy(endpoint.clone()));
    let stream_conn = conn.clone();
    conn.spawn(async move { read_stream(&stream_conn, reader).await });
    post(conn, outgoing, waiter, endpoint, gate).await;
}

/// Deliver the stream's messages until it ends, then end the connection.
async fn read_stream(conn: &Connection, mut reader: EventReader) {
    let detail = loop {
        match reader.next().await {
            Next::Event(event) => conn.deliver_event(event).await,
            Next::Ended => {
                break "the server closed the HTTP+SSE event stream, which cannot be resumed; the connection is over".to_owned();
            }
            Next::Failed(e) => break format!("the HTTP+SSE event stream failed: {e}"),
            // A quiet stream is normal while nothing is asked.
            Next::Idle if conn.has_pending() => {
                break format!(
                    "no bytes on the HTTP+SSE event stream for {:?} (sse_idle_timeout) while requests were waiting",
                    conn.config.sse_idle_timeout
                );
            }
            Next::Idle => {}
        }
    };
    tracing::warn!("{detail}");
    conn.end(error(None, detail)).await;
}

/// POST one frame to the endpoint; its answer, if any, comes on the stream.
pub(super) async fn post(
    conn: &Connection,
    outgoing: &Outgoing,
    waiter: &Waiter,
    endpoint: Url,
    gate: &mut Option<oneshot::Sender<()>>,
) {
    let sent = super::authorize::send(conn, "POST", || async {
        conn.prepare(Method::POST, endpoint.clone(), ACCEPT_POST, false)
            .await
            .header(CONTENT_TYPE, "application/json")
            .body(outgoing.bytes.clone())
    })
    .await;
    gate.take();
    match sent {
        Ok(response) if response.status().is_success() => {}
        Ok(response) => {
            let status = response.status();
            let detail = format!(
                "the server rejected {}: {}",
                outgoing.describe(),
                body_snippet(response).await
            );
            let error = TransportError::Http {
                context: "POST",
                status: Some(status.as_u16()),
                detail,
            };
            conn.fail_frame(outgoing, waiter, error).await;
        }
        Err(e) => {
            let detail = format!("could not send {}: {}", outgoing.describe(), describe(&e));
            let error = TransportError::Http {
                context: "POST",
                status: None,
                detail,
            };
            conn.fail_frame(outgoing, waiter, error).await;
        }
    }
}
