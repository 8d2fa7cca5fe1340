//! A POST body read once: its messages ([`ReadFrame`]) and what the endpoint routes by
//! (the request ids, an `initialize`, the cancellations, whether it is a batch). The
//! authorization layer, when it needs the body's methods for scopes, reads it and hands
//! it on ([`ReadAhead`]); the endpoint reads it otherwise; the session takes the
//! messages as they were read.

use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::http::StatusCode;
use mcpflow_protocol::RequestId;
use mcpflow_protocol::jsonrpc::DecodeError;
use mcpflow_protocol::methods::method;

use super::handlers::{Refusal, refuse};
use crate::session::ReadRequest;
use crate::transport::ReadFrame;

/// A POST body, read.
pub(crate) struct Posted {
    /// The body as it came (shared with `frame`, not copied).
    pub(crate) body: Bytes,
    pub(crate) frame: ReadFrame,
    pub(crate) requests: Vec<RequestId>,
    pub(crate) cancels: Vec<RequestId>,
    pub(crate) initialize: Option<RequestId>,
    pub(crate) batch: bool,
}

impl Posted {
    /// Read a body: 400 when a message in it does not decode.
    pub(crate) fn read(body: Bytes) -> Result<Posted, Refusal> {
        let frame = ReadFrame::read(body.clone());
        if let Some(e) = frame.first_error() {
            return Err(undecodable(e));
        }
        let batch = frame.is_batch();
        let requests: Vec<RequestId> = frame.requests().map(|r| r.id.clone()).collect();
        let initialize = frame
            .requests()
            .find(|r| r.method == method::INITIALIZE)
            .map(|r| r.id.clone());
        if initialize.is_some() && batch {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                mcpflow_protocol::ErrorCode::INVALID_REQUEST,
                None,
                "`initialize` must not be part of a JSON-RPC batch".into(),
            ));
        }
        let cancels = frame.cancels().collect();
        Ok(Posted {
            body,
            frame,
            requests,
            cancels,
            initialize,
            batch,
        })
    }

    /// The body's request when the body is that one request (not a batch).
    pub(crate) fn single(&mut self) -> Option<&mut ReadRequest> {
        if self.batch {
            return None;
        }
        self.frame.requests_mut().next()
    }

    /// The requests' methods, with the tool each `tools/call` names, for the scopes
    /// they need.
    #[cfg(feature = "http-client")]
    pub(crate) fn calls(&mut self) -> Vec<(String, Option<String>)> {
        self.frame
            .requests_mut()
            .map(|r| {
                let tool = (r.method == method::TOOLS_CALL)
                    .then(|| r.head().name.get().cloned())
                    .flatten();
                (r.method.clone(), tool)
            })
            .collect()
    }
}

/// The 400 for a message that does not decode, naming the id to answer to when there is
/// one (never a response's: MCP allows a body for a refused response only without one).
fn undecodable(e: &DecodeError) -> Refusal {
    refuse(
        StatusCode::BAD_REQUEST,
        e.code(),
        e.id().cloned(),
        e.to_error_object().message,
    )
}

/// A body a layer before the endpoint read, for the endpoint to take (a request
/// extension; the body itself is then empty).
#[derive(Clone)]
pub(crate) struct ReadAhead(Arc<Mutex<Option<Posted>>>);

impl ReadAhead {
    #[cfg(feature = "http-client")]
    pub(crate) fn new(posted: Posted) -> ReadAhead {
        ReadAhead(Arc::new(Mutex::new(Some(posted))))
    }

    /// The body, to the one who takes it first.
    pub(crate) fn take(&self) -> Option<Posted> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}
