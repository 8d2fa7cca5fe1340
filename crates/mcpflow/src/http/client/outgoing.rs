//! [`Outgoing`]: a frame this side sends, with what the transport needs to know of it
//! (the requests it carries, the method, the request a cancellation names).

use bytes::Bytes;
use mcpflow_protocol::RequestId;
use serde::Deserialize;

use super::connection::Envelope;
use crate::transport::{FrameKind, FrameMeta};

/// One outbound frame, as read on its way out.
#[derive(Debug, Clone)]
pub(super) struct Outgoing {
    pub(super) bytes: Bytes,
    pub(super) kind: FrameKind,
    /// Ids of the requests in the frame.
    pub(super) ids: Vec<RequestId>,
    /// The method (requests and notifications).
    pub(super) method: Option<String>,
    /// For `notifications/cancelled`: the request it cancels.
    pub(super) cancels: Option<RequestId>,
    /// For a 2026-07-28 request (its `_meta` names the protocol version): what its
    /// HTTP headers mirror.
    pub(super) per_request: Option<Mirrored>,
}

/// The members of a 2026-07-28 request mirrored into `MCP-Protocol-Version`, `Mcp-Name`
/// and `Mcp-Param-*`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Mirrored {
    #[serde(rename = "_meta")]
    meta: EnvelopeVersion,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) uri: Option<String>,
    /// Left unparsed: only a tool with `x-mcp-header` arguments needs them read.
    #[serde(default)]
    pub(super) arguments: Option<Box<serde_json::value::RawValue>>,
    /// `tasks/get`, `tasks/update` and `tasks/cancel` (the tasks extension).
    #[serde(default, rename = "taskId")]
    pub(super) task_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct EnvelopeVersion {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: String,
}

impl Mirrored {
    pub(super) fn protocol_version(&self) -> &str {
        &self.meta.protocol_version
    }
}

impl Outgoing {
    pub(super) fn read(frame: Bytes, meta: &FrameMeta) -> Outgoing {
        let mut outgoing = Outgoing {
            bytes: frame.clone(),
            kind: meta.kind.clone(),
            ids: Vec::new(),
            method: None,
            cancels: None,
            per_request: None,
        };
        let mut note = |env: Envelope<'_>| {
            if let (Some(method), Some(id)) = (&env.method, &env.id) {
                if outgoing.ids.is_empty() {
                    outgoing.per_request = env
                        .params
                        .and_then(|p| serde_json::from_str::<Mirrored>(p.get()).ok());
                }
                outgoing.ids.push(id.clone());
                outgoing.method.get_or_insert_with(|| method.to_string());
            } else if let Some(method) = &env.method {
                if method == "notifications/cancelled" {
                    #[derive(Deserialize)]
                    struct Cancelled {
                        #[serde(rename = "requestId")]
                        request_id: Option<RequestId>,
                    }
                    outgoing.cancels = env
                        .params
                        .and_then(|p| serde_json::from_str::<Cancelled>(p.get()).ok())
                        .and_then(|c| c.request_id);
                }
                outgoing.method.get_or_insert_with(|| method.to_string());
            }
        };
        if frame.trim_ascii_start().starts_with(b"[") {
            if let Ok(items) = serde_json::from_slice::<Vec<Envelope<'_>>>(&frame) {
                items.into_iter().for_each(&mut note);
            }
        } else if let Ok(env) = serde_json::from_slice::<Envelope<'_>>(&frame) {
            note(env);
        }
        outgoing
    }

    pub(super) fn is_request(&self) -> bool {
        !self.ids.is_empty()
    }

    pub(super) fn is_initialize(&self) -> bool {
        self.is_request() && self.method.as_deref() == Some("initialize")
    }

    pub(super) fn is_cancellation(&self) -> bool {
        self.cancels.is_some()
    }

    pub(super) fn is_initialized_notification(&self) -> bool {
        !self.is_request() && self.method.as_deref() == Some("notifications/initialized")
    }

    /// How the frame is named in logs and errors.
    pub(super) fn describe(&self) -> String {
        match (&self.method, self.kind.clone()) {
            (Some(method), _) => format!("`{method}`"),
            (None, FrameKind::Response(Some(id))) => format!("the response to request {id}"),
            _ => "a response".to_owned(),
        }
    }
}
