//! Reading a POST body under three limits: its size (refused from `Content-Length`
//! before anything is read), a deadline, and a budget of bytes buffered across every
//! request of the process, so that stalled uploads cannot add up to the memory of the
//! machine.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_LENGTH;
use axum::http::{HeaderMap, StatusCode};
use bytes::BytesMut;
use futures_util::StreamExt;
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
