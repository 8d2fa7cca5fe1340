//! Event streams: reading one with an idle limit, following a POST's stream until it
//! has delivered every answer it owes (resuming with `GET` and `Last-Event-ID` when it
//! ends early), and the standalone `GET` stream for what the server sends on its own.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::{Method, Response, StatusCode};
use tokio::sync::oneshot;

use super::connection::{
    ACCEPT_STREAM, Connection, Waiter, body_snippet, content_type, describe, is_event_stream,
};
use super::sse::{Cursor, SseEvent, SseParser};
use crate::error::TransportError;
use crate::http::LAST_EVENT_ID_HEADER;

/// Longest wait, after `notifications/initialized` was accepted, for the standalone
/// stream to be answered before later messages are sent anyway.
pub(super) const STREAM_OPEN_WAIT: Duration = Duration::from_secs(2);

/// What reading an event stream produced.
#[derive(Debug)]
pub(super) enum Next {
    /// One event (its id and retry are already in the cursor).
    Event(SseEvent),
    /// The server ended the stream.
    Ended,
    /// The stream failed (reset, broken chunking).
    Failed(String),
    /// No bytes arrived within the idle limit. Reading may continue.
    Idle,
}

/// Reads events from one response body.
pub(super) struct EventReader {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    parser: SseParser,
    ready: VecDeque<SseEvent>,
    idle: Duration,
    /// Where to resume from.
    pub(super) cursor: Cursor,
    /// Whether this stream produced any event.
    pub(super) saw_event: bool,
}

impl EventReader {
    pub(super) fn new(response: Response, cursor: Cursor, conn: &Connection) -> Self {
        EventReader {
            body: response.bytes_stream().boxed(),
            parser: SseParser::new(conn.config.max_frame_bytes),
            ready: VecDeque::new(),
            idle: conn.config.sse_idle_timeout,
            cursor,
            saw_event: false,
        }
    }

    /// The next event. Cancel-safe.
    pub(super) async fn next(&mut self) -> Next {
        loop {
            if let Some(event) = self.ready.pop_front() {
                self.cursor.observe(&event);
                self.saw_event = true;
                return Next::Event(event);
            }
            match tokio::time::timeout(self.idle, self.body.next()).await {
                Err(_) => return Next::Idle,
                Ok(None) => return Next::Ended,
                Ok(Some(Err(e))) => return Next::Failed(describe(&e)),
                Ok(Some(Ok(chunk))) => {
                    let mut events = Vec::new();
                    self.parser.push(&chunk, &mut events);
                    self.ready.extend(events);
                }
            }
        }
    }
}

/// The error for a stream silent past the idle limit.
pub(super) fn idle_error(context: &'static str, idle: Duration) -> TransportError {
    TransportError::Http {
        context,
        status: None,
        detail: format!(
            "no bytes on the event stream for {idle:?} (sse_idle_timeout); the server or the network stalled"
        ),
    }
}

/// Deliver an event stream that owes no answer (the server chose to answer a
/// notification or response with one) until it ends; it is not resumed.
pub(super) async fn drain(conn: &Connection, mut reader: EventReader) {
    loop {
        match reader.next().await {
            Next::Event(event) => conn.deliver_event(event).await,
            Next::Ended => return,
            Next::Failed(e) => {
                tracing::debug!(error = %e, "an event stream owing no answer failed");
                return;
            }
            Next::Idle => {
                tracing::debug!("an event stream owing no answer went silent; dropped it");
                return;
            }
        }
    }
}

/// Deliver a POST's event stream until `waiter` is settled, resuming it when it ends
/// early, or fail what it still owes. Stops as soon as the requests are answered
/// (on any stream) or cancelled.
pub(super) async fn follow(conn: &Arc<Connection>, waiter: &Waiter, mut reader: EventReader) {
    let max = conn.config.max_reconnects;
    let mut context = "POST stream";
    let mut attempts = 0u32;
    loop {
        let problem = loop {
            let Some(next) = waiter.unless_settled(reader.next()).await else {
                return;
            };
            match next {
                Next::Event(event) => {
                    conn.deliver_event(event).await;
                    if waiter.is_settled() {
                        return;
                    }
                }
                Next::Ended => {
                    break "the server closed the event stream before sending every answer"
                        .to_owned();
                }
                Next::Failed(e) => break format!("the event stream failed: {e}"),
                Next::Idle => {
                    let idle = conn.config.sse_idle_timeout;
                    conn.fail(waiter, idle_error(context, idle)).await;
                    return;
                }
            }
        };
        if waiter.is_settled() {
            return;
        }
        let Some(last_id) = reader.cursor.last_event_id.clone() else {
            let detail = format!("{problem}, and sent no event id to resume from");
            conn.fail(waiter, http_error(context, None, detail)).await;
            return;
        };
        if reader.saw_event {
            attempts = 0;
        }
        let delay = reader.cursor.delay(conn.config.reconnect_delay);
        context = "reconnect";
        let mut last_problem = problem;
        let mut last_status = None;
        let response = loop {
            if attempts >= max {
                let detail = format!(
                    "{last_problem}; gave up after {attempts} reconnect attempts (max_reconnects) to resume after event `{last_id}`"
                );
                conn.fail(waiter, http_error(context, last_status, detail))
                    .await;
                return;
            }
            attempts += 1;
            tracing::debug!(attempt = attempts, last_event_id = %last_id, ?delay, "resuming an event stream");
            let resumed = waiter
                // Boxed: a rare path, kept out of every stream's future.
                .unless_settled(Box::pin(async {
                    tokio::time::sleep(delay).await;
                    resume(conn, &last_id).await
                }))
                .await;
            match resumed {
                None => return,
                Some(Resumed::Stream(response)) => break response,
                Some(Resumed::Fatal(error)) => {
                    conn.fail(waiter, error).await;
                    return;
                }
                Some(Resumed::Retry { problem, status }) => {
                    last_problem = problem;
                    last_status = status;
                }
            }
        };
        reader = EventReader::new(response, reader.cursor, conn);
    }
}

fn http_error(context: &'static str, status: Option<u16>, detail: String) -> TransportError {
    TransportError::Http {
        context,
        status,
        detail,
    }
}

enum Resumed {
    Stream(Response),
    /// Resuming cannot work (405, expired session).
    Fatal(TransportError),
    /// This attempt failed; another may work.
    Retry {
        problem: String,
        status: Option<u16>,
    },
}

/// One `GET` with `Last-Event-ID`.
async fn resume(conn: &Connection, last_id: &str) -> Resumed {
    let url = conn.config.url.clone();
    let sent_session = conn.session();
    let sent = super::authorize::send(conn, "reconnect", || async {
        conn.prepare(Method::GET, url.clone(), ACCEPT_STREAM, true)
            .await
            .header(LAST_EVENT_ID_HEADER, last_id)
    })
    .await;
    let response = match sent {
        Ok(response) => response,
        Err(e) => {
            return Resumed::Retry {
                problem: format!("GET failed: {}", describe(&e)),
                status: None,
            };
        }
    };
    let status = response.status();
    if status == StatusCode::METHOD_NOT_ALLOWED {
        return Resumed::Fatal(http_error(
            "reconnect",
            Some(405),
            "the stream ended before every answer arrived, and the server does not allow resuming it (GET answered 405 Method Not Allowed)".to_owned(),
        ));
    }
    if status == StatusCode::NOT_FOUND
        && let Some(session) = sent_session
    {
        return Resumed::Fatal(http_error(
            "reconnect",
            Some(404),
            format!(
                "session `{}` expired while resuming the event stream (404 Not Found)",
                session.text
            ),
        ));
    }
    if !status.is_success() {
        return Resumed::Retry {
            problem: format!("GET answered {status}: {}", body_snippet(response).await),
            status: Some(status.as_u16()),
        };
    }
    if !is_event_stream(&response) {
        return Resumed::Retry {
            problem: format!(
                "GET answered with `{}`, not an event stream",
                content_type(&response)
            ),
            status: Some(status.as_u16()),
        };
    }
    Resumed::Stream(response)
}

/// Open the standalone stream on a task of its own. `opened` fires once the server
/// answered the first `GET` (or after [`STREAM_OPEN_WAIT`]), so messages sent after
/// initialization find the stream in place.
pub(super) fn start_standalone(conn: &Arc<Connection>, opened: Option<oneshot::Sender<()>>) {
    let generation = conn.next_standalone();
    let task_conn = conn.clone();
    conn.spawn(async move {
        let conn = task_conn;
        let mut opened = opened;
        let first = open(&conn, None);
        tokio::pin!(first);
        let first = match tokio::time::timeout(STREAM_OPEN_WAIT, &mut first).await {
            Ok(first) => first,
            Err(_) => {
                opened.take();
                first.await
            }
        };
        drop(opened);
        run_standalone(&conn, generation, first).await;
    });
}

enum Opened {
    Stream(Response),
    /// The server has no standalone stream (405), or refuses it.
    Refused(StatusCode, String),
    /// This attempt failed.
    Failed(String),
}

async fn open(conn: &Connection, last_id: Option<&str>) -> Opened {
    let sent = super::authorize::send(conn, "GET stream", || async {
        let url = conn.config.url.clone();
        let request = conn.prepare(Method::GET, url, ACCEPT_STREAM, true).await;
        match last_id {
            Some(id) => request.header(LAST_EVENT_ID_HEADER, id),
            None => request,
        }
    })
    .await;
    match sent {
        Ok(response) if response.status().is_success() && is_event_stream(&response) => {
            Opened::Stream(response)
        }
        Ok(response) if response.status().is_success() => Opened::Failed(format!(
            "GET answered with `{}`, not an event stream",
            content_type(&response)
        )),
        Ok(response) => {
            let status = response.status();
            Opened::Refused(status, body_snippet(response).await)
        }
        Err(e) => Opened::Failed(describe(&e)),
    }
}

async fn run_standalone(conn: &Arc<Connection>, generation: u64, first: Opened) {
    let max = conn.config.max_reconnects;
    let mut cursor = Cursor::default();
    let mut attempts = 0u32;
    let mut opened = first;
    loop {
        if !conn.is_current_standalone(generation) {
            return;
        }
        match opened {
            Opened::Stream(response) => {
                let mut reader = EventReader::new(response, cursor, conn);
                let mut idle = false;
                loop {
                    match reader.next().await {
                        Next::Event(event) => conn.deliver_event(event).await,
                        Next::Ended => {
                            tracing::debug!("the server closed the standalone event stream");
                            break;
                        }
                        Next::Failed(e) => {
                            tracing::debug!(error = %e, "the standalone event stream failed");
                            break;
                        }
                        Next::Idle => {
                            tracing::debug!("the standalone event stream is silent; reopening it");
                            idle = true;
                            break;
                        }
                    }
                }
                if idle || reader.saw_event {
                    attempts = 0;
                }
                cursor = reader.cursor;
            }
            Opened::Refused(StatusCode::METHOD_NOT_ALLOWED, _) => {
                tracing::debug!("the server offers no standalone event stream (GET answered 405)");
                return;
            }
            Opened::Refused(status, body) => {
                tracing::info!(
                    %status, %body,
                    "the server refused the standalone event stream; its own messages will arrive only on POST responses"
                );
                return;
            }
            Opened::Failed(e) => {
                tracing::debug!(error = %e, "opening the standalone event stream failed")
            }
        }
        if attempts >= max {
            tracing::warn!(
                attempts,
                "the standalone event stream is gone after {attempts} reconnect attempts (max_reconnects); \
                 the server's own messages will arrive only on POST responses"
            );
            return;
        }
        attempts += 1;
        tokio::time::sleep(cursor.delay(conn.config.reconnect_delay)).await;
        if !conn.is_current_standalone(generation) {
            return;
        }
        opened = open(conn, cursor.last_event_id.as_deref()).await;
    }
}
