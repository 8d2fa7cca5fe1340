//! [`ServerContext`]: what a server handler can do besides returning its result.

use std::sync::Arc;

use mcpflow_protocol::methods::method;
use mcpflow_protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCompleteNotificationParams, ErrorObject, Implementation,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParams, ProtocolVersion,
};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::{Connection, Principal, Server};
use crate::error::SessionError;
use crate::session::{Peer, RequestContext, RequestOptions};

/// Given to every server handler: report progress, log, reach the client (sampling,
/// elicitation, roots), see cancellation, and change what the server offers.
///
/// Requests sent from here are tagged with the handler's request, so over HTTP they
/// travel on that request's stream.
#[derive(Clone, Debug)]
pub struct ServerContext {
    request: RequestContext,
    connection: Arc<Connection>,
}

impl ServerContext {
    pub(crate) fn new(request: RequestContext, connection: Arc<Connection>) -> Self {
        ServerContext {
            request,
            connection,
        }
    }

    /// What this connection learned from the client, for the methods that change it.
    pub(super) fn connection(&self) -> &Connection {
        &self.connection
    }

    /// The engine-level context: id, cancellation, progress token, peer.
    pub fn request(&self) -> &RequestContext {
        &self.request
    }

    /// The connection to the client.
    pub fn peer(&self) -> &Peer {
        self.request.peer()
    }

    /// The server, to add or remove tools, resources and prompts (clients are notified).
    pub fn server(&self) -> &Server {
        &self.connection.server
    }

    /// Tripped when the client cancels this request or the connection closes.
    pub fn cancellation(&self) -> &CancellationToken {
        self.request.cancellation()
    }

    /// The request's `params._meta` (progress token, vendor keys).
    pub fn meta(&self) -> Option<&mcpflow_protocol::Meta> {
        self.request.meta()
    }

    /// What the client declared in `initialize`.
    pub fn client_capabilities(&self) -> ClientCapabilities {
        self.connection.client_capabilities()
    }

    /// Who the client said it is.
    pub fn client_info(&self) -> Option<Implementation> {
        self.connection.client_info()
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.connection.protocol_version()
    }

    /// Who the request acts for: the principal of the verified access token, when the
    /// HTTP server authorizes requests ([`HttpServer::auth`]); `None` otherwise. Within
    /// an HTTP session it is the principal of the session's newest request (always the
    /// same subject, since a session is bound to the one that created it).
    ///
    /// [`HttpServer::auth`]: crate::http::server::HttpServer::auth
    pub fn auth(&self) -> Option<Arc<Principal>> {
        self.connection.principal.get()
    }

    /// Over streamable HTTP, end the event stream that will carry this request's answer
    /// now, after what was sent before it; the client reconnects after the server's
    /// `retry` interval with `Last-Event-ID` and receives the rest, including the
    /// result (SEP-1699 polling). A long call so frees its connection. It does nothing
    /// where the stream could not be resumed (no event store, a client older than
    /// 2025-11-25, a JSON response) and on other transports.
    pub async fn close_event_stream(&self) {
        self.request.peer().end_related_stream().await;
    }

    /// Report progress (sent only if the client asked for it with a progress token).
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), SessionError> {
        // Progress `message` is a 2025-03-26 field.
        let message = message.filter(|_| {
            self.protocol_version()
                .is_none_or(|v| v.at_least(&ProtocolVersion::V2025_03_26))
        });
        self.request.report_progress(progress, total, message).await
    }

    /// Send a log message (`notifications/message`) if `level` is at or above the level
    /// the client set with `logging/setLevel` (everything is sent until it sets one).
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn log(
        &self,
        level: LoggingLevel,
        data: impl Into<serde_json::Value>,
    ) -> Result<(), SessionError> {
        self.send_log(LoggingMessageNotificationParams::new(level, data))
            .await
    }

    /// Like [`log`](Self::log), naming the logger (the component) the message comes from.
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn log_from(
        &self,
        logger: &str,
        level: LoggingLevel,
        data: impl Into<serde_json::Value>,
    ) -> Result<(), SessionError> {
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = Some(logger.to_owned());
        self.send_log(params).await
    }

    async fn send_log(&self, params: LoggingMessageNotificationParams) -> Result<(), SessionError> {
        if params.level < self.connection.log_level() {
            return Ok(());
        }
        self.peer()
            .notify_raw(method::LOGGING_MESSAGE, Some(&params))
            .await
    }

    /// Ask the client's model for a completion (`sampling/createMessage`).
    ///
    /// With `tools` (or `tool_choice`) set, the model may answer with `tool_use`
    /// blocks (stop reason `toolUse`); run them and sample again with their
    /// `tool_result`s. That needs a client that declared `sampling.tools` (2025-11-25).
    ///
    /// # Errors
    /// [`SessionError::Rejected`] when the client did not declare sampling (or
    /// `sampling.tools`, for a request with tools) or refused.
    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, SessionError> {
        let caps = self.client_capabilities();
        let Some(sampling) = caps.sampling else {
            return Err(undeclared(method::SAMPLING_CREATE_MESSAGE, "sampling"));
        };
        if (params.tools.is_some() || params.tool_choice.is_some()) && sampling.tools.is_none() {
            return Err(undeclared(
                method::SAMPLING_CREATE_MESSAGE,
                "sampling with tools (sampling.tools)",
            ));
        }
        self.peer()
            .request(
                method::SAMPLING_CREATE_MESSAGE,
                &params,
                RequestOptions::new(),
            )
            .await
    }

    /// Ask the user for input through the client (`elicitation/create`).
    ///
    /// # Errors
    /// [`SessionError::Rejected`] when the client did not declare the elicitation mode.
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, SessionError> {
        let caps = self.client_capabilities();
        let declared = match &params {
            ElicitRequestParams::Url(_) => caps.supports_url_elicitation(),
            _ => caps.supports_form_elicitation(),
        };
        if !declared {
            return Err(undeclared(
                method::ELICITATION_CREATE,
                "this elicitation mode",
            ));
        }
        self.peer()
            .request(method::ELICITATION_CREATE, &params, RequestOptions::new())
            .await
    }

    /// Ask the user for a value of type `T` through a form (`elicitation/create`, form
    /// mode): `T`'s JSON Schema is the requested schema (keep it flat: strings, numbers,
    /// booleans and enums). `Ok(Some(value))` when the user accepted, `Ok(None)` when
    /// they declined or cancelled.
    ///
    /// # Errors
    /// As [`ServerContext::elicit`], or [`SessionError::Codec`] when the answer does not
    /// fit `T`.
    pub async fn elicit_as<T>(&self, message: &str) -> Result<Option<T>, SessionError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let mut schema = super::typed::schema_of::<T>();
        // Elicitation schemas are a restricted subset: drop the meta keys schemars adds.
        schema.remove("$schema");
        schema.remove("title");
        let answer = self
            .elicit(ElicitRequestParams::form(message, schema))
            .await?;
        if answer.action != mcpflow_protocol::ElicitAction::Accept {
            return Ok(None);
        }
        let content = serde_json::Value::Object(answer.content.unwrap_or_default());
        serde_json::from_value(content)
            .map(Some)
            .map_err(|e| SessionError::Codec {
                method: method::ELICITATION_CREATE.into(),
                detail: format!("the user's answer does not fit the requested type: {e}"),
            })
    }

    /// Tell the client that the URL elicitation `elicitation_id` finished
    /// (`notifications/elicitation/complete`), so it can retry what needed it. May be
    /// sent from a clone of this context after the request ended (e.g. from the web
    /// handler that received the user's answer); it travels outside the request.
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn notify_elicitation_complete(
        &self,
        elicitation_id: &str,
    ) -> Result<(), SessionError> {
        let params = ElicitationCompleteNotificationParams::new(elicitation_id);
        self.peer()
            .unrelated()
            .notify_raw(method::ELICITATION_COMPLETE, Some(&params))
            .await
    }

    /// Ask the client for its roots (`roots/list`).
    ///
    /// # Errors
    /// [`SessionError::Rejected`] when the client did not declare roots.
    pub async fn list_roots(&self) -> Result<ListRootsResult, SessionError> {
        if self.client_capabilities().roots.is_none() {
            return Err(undeclared(method::ROOTS_LIST, "roots"));
        }
        let empty = RawValue::from_string("{}".to_owned()).ok();
        let raw = self
            .peer()
            .request_raw(method::ROOTS_LIST, empty, RequestOptions::new())
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| SessionError::Codec {
            method: method::ROOTS_LIST.into(),
            detail: e.to_string(),
        })
    }

    /// Tell this client that a subscribed resource changed (`notifications/resources/updated`).
    /// Sent only if the client subscribed to `uri`.
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn notify_resource_updated(&self, uri: &str) -> Result<(), SessionError> {
        self.connection
            .notify_resource_updated(self.peer(), uri)
            .await
    }
}

fn undeclared(method: &str, what: &str) -> SessionError {
    SessionError::Rejected {
        method: method.into(),
        error: ErrorObject::new(
            mcpflow_protocol::ErrorCode::METHOD_NOT_FOUND,
            format!("the client did not declare {what} support in initialize"),
        ),
    }
}
