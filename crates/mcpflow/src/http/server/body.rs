//! Reading a POST body under three limits: its size (refused from `Content-Length`
//! before anything is read), a deadline, and a budget of bytes buffered across every
//! request of the process, so that stalled uploads cannot add up to the memory of the
//! machine; and closing, openly, a connection whose request was answered before its
//! body was read.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::header::{CONNECTION, CONTENT_LENGTH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use bytes::BytesMut;
use futures_util::StreamExt;
use hyper::body::{Frame, SizeHint};
use mcpflow_protocol::ErrorCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::handlers::{Refusal, refuse};

/// The process-wide budget of buffered request-body bytes.
#[derive(Debug)]
pub(super) struct BodyBudget {
    bytes: Arc<Semaphore>,
    total: usize,
}

impl BodyBudget {
    pub(super) fn new(total: usize) -> Self {
        let total = total.min(Semaphore::MAX_PERMITS);
        BodyBudget {
            bytes: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Bytes buffered right now.
    pub(super) fn in_use(&self) -> usize {
        self.total - self.bytes.available_permits()
    }
}

/// The limits one body is read under.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyLimits {
    pub(super) max_bytes: usize,
    pub(super) timeout: Duration,
}

/// The whole body, or the refusal to send instead. Every refusal closes the connection,
/// since the rest of the body is not read.
pub(super) async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limits: BodyLimits,
    budget: &BodyBudget,
) -> Result<Bytes, Refusal> {
    let max = limits.max_bytes;
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > max as u64
    {
        return Err(too_large(format!(
            "the request body is {declared} bytes; the limit is {max} (max_body_bytes)"
        )));
    }
    let read = read_chunks(body, max, budget);
    match tokio::time::timeout(limits.timeout, read).await {
        Ok(read) => read,
        Err(_) => Err(refuse(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::INVALID_REQUEST,
            None,
            format!(
                "the request body did not arrive within {:?} (body_timeout)",
                limits.timeout
            ),
        )
        .closing()),
    }
}

async fn read_chunks(body: Body, max: usize, budget: &BodyBudget) -> Result<Bytes, Refusal> {
    let mut stream = body.into_data_stream();
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut len = 0usize;
    // Held until the body is whole: the bytes it stands for are buffered until then.
    let mut held: Option<OwnedSemaphorePermit> = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            refuse(
                StatusCode::BAD_REQUEST,
                ErrorCode::PARSE_ERROR,
                None,
                format!("the request body could not be read: {e}"),
            )
            .closing()
        })?;
        len += chunk.len();
        if len > max {
            return Err(too_large(format!(
                "the request body is over the limit of {max} bytes (max_body_bytes)"
            )));
        }
        let Some(permit) = u32::try_from(chunk.len())
            .ok()
            .and_then(|n| budget.bytes.clone().try_acquire_many_owned(n).ok())
        else {
            return Err(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::INTERNAL_ERROR,
                None,
                format!(
                    "the server is already buffering {} bytes of request bodies (max_buffered_body_bytes); try again",
                    budget.total
                ),
            )
            .closing()
            .retry_after(1));
        };
        match &mut held {
            Some(held) => held.merge(permit),
            None => held = Some(permit),
        }
        if !chunk.is_empty() {
            chunks.push(chunk);
        }
    }
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.swap_remove(0),
        _ => {
            let mut whole = BytesMut::with_capacity(len);
            for chunk in chunks {
                whole.extend_from_slice(&chunk);
            }
            whole.freeze()
        }
    })
}

fn too_large(message: String) -> Refusal {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::INVALID_REQUEST,
        None,
        message,
    )
    .closing()
}

/// Middleware: a response given before its request's body was read to the end (a
/// refusal from the authorization layer or a header check) says `Connection: close`.
/// The unread body stands between this request and the next on the connection, so the
/// server closes it after the response; said openly, a client does not send its next
/// request into that close ("Server disconnected without sending a response").
pub(super) async fn close_if_unread(request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let read = Arc::new(AtomicBool::new(false));
    let flag = read.clone();
    let request = request.map(move |inner| Body::new(Tracked { inner, read: flag }));
    let mut response = next.run(request).await;
    if !read.load(Ordering::Acquire) {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that records when it was read to its end.
struct Tracked {
    inner: Body,
    read: Arc<AtomicBool>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
