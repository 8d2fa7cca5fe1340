//! What a request handler gets besides the method: [`RequestContext`]. The request's
//! params stay JSON text in the frame; their [`RequestHead`] (the members the engine and
//! most methods read, `_meta` and its progress token among them) is read in one pass the
//! first time something asks, or was read by the transport already.

use std::sync::OnceLock;

use mcpflow_protocol::{ErrorObject, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::Peer;
use super::cancel::RequestCancel;
use super::head::{JsonText, RequestHead};
use crate::error::SessionError;

type JsonObject = serde_json::Map<String, serde_json::Value>;

/// What a request handler gets besides the method: the request's id and params, its
/// cancellation token, its progress token and a [`Peer`] whose messages are tagged as
/// sent on behalf of this request (HTTP routes them onto this request's stream).
#[derive(Clone, Debug)]
pub struct RequestContext {
    id: RequestId,
    /// The params' JSON text, as it lies in the frame the request came in.
    params: Option<JsonText>,
    /// The params read once, when first asked (or by the transport).
    head: OnceLock<Box<RequestHead>>,
    /// `params._meta` whole, read only for a handler that asks for it.
    meta: OnceLock<Option<JsonObject>>,
    cancel: std::sync::Arc<RequestCancel>,
    peer: Peer,
    /// The request's server span and its recorded outcome.
    operation: crate::telemetry::Operation,
}

impl RequestContext {
    /// The context of the request `id` whose params' JSON text is `params`, with their
    /// head when the transport read it.
    pub(crate) fn new(
        id: RequestId,
        params: Option<JsonText>,
        head: Option<Box<RequestHead>>,
        cancel: std::sync::Arc<RequestCancel>,
        peer: Peer,
    ) -> RequestContext {
        let read = OnceLock::new();
        if let Some(head) = head {
            let _ = read.set(head);
        }
        RequestContext {
            id,
            params,
            head: read,
            meta: OnceLock::new(),
            cancel,
            peer,
            operation: crate::telemetry::Operation::default(),
        }
    }

    /// The request's server span and its recorded outcome.
    pub(crate) fn operation(&self) -> &crate::telemetry::Operation {
        &self.operation
    }

    /// Open the request's server span, named `method`, continuing the trace its
    /// `_meta` carries.
    pub(crate) fn open_operation(&mut self, method: std::borrow::Cow<'static, str>) {
        use crate::telemetry::{Operation, Side};
        let head = self.head();
        let subject = head.name.get().or(head.uri.get()).map(String::as_str);
        let operation = Operation::start(Side::Server, method, subject, self.peer.facts());
        operation.set_id(&self.id);
        if let Some(meta) = head.meta() {
            let text = |t: &Option<JsonText>| t.as_ref().and_then(|t| t.decode::<String>().ok());
            operation.continue_trace(
                text(&meta.traceparent).as_deref(),
                text(&meta.tracestate).as_deref(),
            );
        }
        self.operation = operation;
    }

    /// A context for work that outlives this request (a task): the same id, params and
    /// progress token, its own cancellation, and a peer tied to no request (this
    /// request's stream ends with its answer).
    pub(crate) fn detached(&self, cancel: std::sync::Arc<RequestCancel>) -> RequestContext {
        RequestContext {
            id: self.id.clone(),
            params: self.params.clone(),
            head: self.head.clone(),
            meta: self.meta.clone(),
            cancel,
            peer: self.peer.unrelated(),
            operation: self.operation.clone(),
        }
    }

    /// The params read once.
    pub(crate) fn head(&self) -> &RequestHead {
        self.head
            .get_or_init(|| Box::new(RequestHead::read(self.params.as_ref().map(JsonText::bytes))))
    }

    /// The request's params as JSON text (an object or an array), when it has any.
    pub fn params(&self) -> Option<&JsonText> {
        self.params.as_ref()
    }

    /// The params decoded as `T`; absent params read as an empty object, so a type
    /// whose members are all optional decodes from them.
    ///
    /// # Errors
    /// `-32602` (invalid params) naming what does not fit.
    pub fn decode_params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ErrorObject> {
        let text = self.params.as_ref().map_or("{}", JsonText::get);
        serde_json::from_str(text).map_err(ErrorObject::invalid_params)
    }

    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The peer, for requests and notifications related to this request.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Tripped when the peer cancels the request or the connection closes.
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancel.token()
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The request's `params._meta`, as the peer sent it (vendor keys included).
    pub fn meta(&self) -> Option<&JsonObject> {
        self.meta
            .get_or_init(|| {
                self.head().meta()?;
                #[derive(Deserialize)]
                struct Params {
                    #[serde(rename = "_meta")]
                    meta: JsonObject,
                }
                let text = self.params.as_ref()?.get();
                serde_json::from_str::<Params>(text).ok().map(|p| p.meta)
            })
            .as_ref()
    }

    /// The progress token the peer sent, as raw JSON: a string or an integer.
    pub fn progress_token(&self) -> Option<&RawValue> {
        self.head().meta()?.progress_token.as_deref()
    }

    /// Send `notifications/progress` for this request. Does nothing when the peer did
    /// not ask for progress (no token).
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn report_progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), SessionError> {
        let Some(token) = self.progress_token() else {
            return Ok(());
        };
        #[derive(serde::Serialize)]
        struct Params<'a> {
            #[serde(rename = "progressToken")]
            token: &'a RawValue,
            progress: f64,
            #[serde(skip_serializing_if = "Option::is_none")]
            total: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            message: Option<&'a str>,
        }
        let params = Params {
            token,
            progress,
            total,
            message,
        };
        self.peer
            .notify_raw("notifications/progress", Some(&params))
            .await
    }
}
