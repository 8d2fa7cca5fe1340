//! [`Outgoing`]: a frame this side sends, with what the session knew of it when it built
//! it ([`FrameMeta`]: the method, the request's id, the request a cancellation names, the
//! 2026-07-28 facts its headers mirror). The frame itself is never read back.

use bytes::Bytes;
use mcpflow_protocol::RequestId;
use mcpflow_protocol::methods::method;

use crate::transport::{FrameKind, FrameMeta, Mirrored};

/// One outbound frame and its facts.
#[derive(Debug, Clone)]
pub(super) struct Outgoing {
    pub(super) bytes: Bytes,
    pub(super) meta: FrameMeta,
}

impl Outgoing {
    pub(super) fn new(bytes: Bytes, meta: &FrameMeta) -> Outgoing {
        Outgoing {
            bytes,
            meta: meta.clone(),
        }
    }

    /// The ids of the requests in the frame (this side sends each request alone).
    pub(super) fn ids(&self) -> &[RequestId] {
        self.meta.id().map_or(&[], std::slice::from_ref)
    }

    /// The method of a request or notification.
    pub(super) fn method(&self) -> Option<&str> {
        self.meta.method()
    }

    /// For `notifications/cancelled`: the request it cancels.
    pub(super) fn cancels(&self) -> Option<&RequestId> {
        self.meta.cancels()
    }

    /// For a 2026-07-28 request: what its HTTP headers mirror.
    pub(super) fn mirrored(&self) -> Option<&Mirrored> {
        self.meta.mirrored()
    }

    pub(super) fn is_request(&self) -> bool {
        self.meta.id().is_some()
    }

    pub(super) fn is_response(&self) -> bool {
        matches!(self.meta.kind, FrameKind::Response(_))
    }

    pub(super) fn is_initialize(&self) -> bool {
        self.is_request() && self.method() == Some(method::INITIALIZE)
    }

    pub(super) fn is_cancellation(&self) -> bool {
        self.meta.cancels().is_some()
    }

    pub(super) fn is_initialized_notification(&self) -> bool {
        !self.is_request() && self.method() == Some(method::INITIALIZED)
    }

    /// How the frame is named in logs and errors.
    pub(super) fn describe(&self) -> String {
        match (self.method(), &self.meta.kind) {
            (Some(method), _) => format!("`{method}`"),
            (None, FrameKind::Response(Some(id))) => format!("the response to request {id}"),
            _ => "a response".to_owned(),
        }
    }
}
