//! [`ServerContext`]: what a server handler can do besides returning its result.

use std::sync::Arc;

use mcpflow_protocol::methods::method;
use mcpflow_protocol::mrtr::InputRequest;
use mcpflow_protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCompleteNotificationParams, ErrorObject, Implementation,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParams, ProtocolVersion,
};
use tokio_util::sync::CancellationToken;

use super::era::Era;
use super::finish::Finish;
use super::methods::Method;
use super::tasks::{TaskEntry, TaskOwner};
use super::{Connection, Principal, Server};
use crate::error::SessionError;
use crate::session::{Peer, Reply, RequestContext};

/// Given to every server handler: report progress, log, reach the client (sampling,
/// elicitation, roots), see cancellation, and change what the server offers.
///
/// Requests sent from here are tagged with the handler's request, so over HTTP they
/// travel on that request's stream. What differs between the protocol eras (who the
/// client is, how input is asked for, how results are finished) is the request's era's
/// to do, not the handler's.
#[derive(Clone, Debug)]
pub struct ServerContext {
    request: Arc<RequestContext>,
    connection: Arc<Connection>,
    era: Era,
    /// The method being answered.
    method: &'static Method,
    /// The key the next input call is asked under (2026-07-28 rounds).
    input_key: Option<Arc<str>>,
    /// The 2025-11-25 task this handler runs as, if it runs as one.
    task: Option<Arc<TaskEntry>>,
}

impl ServerContext {
    pub(crate) fn new(
        request: RequestContext,
        connection: Arc<Connection>,
        era: Era,
        method: &'static Method,
    ) -> Self {
        let cx = ServerContext {
            request: Arc::new(request),
            connection,
            era,
            method,
            input_key: None,
            task: None,
        };
        // A handshake-era span has the connection's version from the start.
        if let Era::PerRequest(request) = &cx.era {
            cx.request.operation().set_version(request.version.as_str());
        }
        cx
    }

    /// The context a tool running as `task` gets: the task's cancellation, and requests
    /// to the client routed as the task's (see [`tasks::ask`](super::tasks::ask)).
    pub(crate) fn for_task(&self, task: Arc<TaskEntry>) -> Self {
        ServerContext {
            request: Arc::new(self.request.detached(task.cancel.clone())),
            task: Some(task),
            ..self.clone()
        }
    }

    /// The reply carrying `result`, finished as the request's era finishes results.
    pub(crate) fn reply<R: Finish>(&self, result: R) -> Result<Reply, ErrorObject> {
        self.era.finish(self.server(), self.method, result)
    }

    /// The request's era.
    pub(crate) fn era(&self) -> &Era {
        &self.era
    }

    /// The 2025-11-25 task this handler runs as.
    pub(crate) fn running_task(&self) -> Option<&TaskEntry> {
        self.task.as_deref()
    }

    /// The key named with [`input_key`](Self::input_key), if one was.
    pub(crate) fn named_input(&self) -> Option<&str> {
        self.input_key.as_deref()
    }

    /// Who owns the tasks this request creates or sees.
    pub(crate) fn task_owner(&self) -> TaskOwner {
        self.era.task_owner(&self.connection)
    }

    /// The id of the task this handler runs as: when the client called the tool as a
    /// task (2025-11-25), or once the server made the call a task (2026-07-28).
    pub fn task_id(&self) -> Option<&str> {
        self.era
            .task()
            .map(|t| t.id.as_str())
            .or_else(|| self.task.as_deref().map(|t| t.id.as_str()))
    }

    /// Make the `requestState` this 2026-07-28 request issues with its input request
    /// single-use: the server accepts the client's retry with it once, and refuses a
    /// second request with the same state (-32602), on every instance that shares the
    /// server's [`ConsumedStates`](crate::server::fleet::ConsumedStates). Call it before
    /// the input call, on every round (the handler runs again on each). Elsewhere it
    /// does nothing.
    ///
    /// ```
    /// use mcpflow::protocol::{CallToolResult, ElicitRequestParams, Tool};
    /// use mcpflow::server::{Server, ToolError};
    ///
    /// let server = Server::builder("payments", "1.0.0")
    ///     .tool(Tool::new("pay", "Pays once confirmed", Tool::empty_input_schema()), |_args, cx| async move {
    ///         // A confirmation must not be replayed to pay twice.
    ///         cx.single_use_state();
    ///         let form = ElicitRequestParams::form("Pay 10 EUR?", Default::default());
    ///         let answer = cx.elicit(form).await.map_err(|e| ToolError::failed(e.to_string()))?;
    ///         Ok(CallToolResult::text(format!("{:?}", answer.action)))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn single_use_state(&self) {
        if let Some(round) = self.era.round() {
            round.make_single_use();
        }
    }

    /// Make this call a task now, when it may become one: a 2026-07-28 `tools/call` of
    /// a tool with task support, from a client that declared the tasks extension. The
    /// client is answered with the task at once (`resultType: "task"`) and the handler
    /// goes on in the background; its input calls from then on park the task
    /// (`input_required`, answered with `tasks/update`) instead of ending the call with
    /// an `input_required` round. Elsewhere (and once the call is a task) it returns at
    /// once.
    ///
    /// The server also makes such a call a task by itself as soon as the handler waits
    /// on anything but input; call this to ask for input inside the task rather than
    /// before it, or to turn a call that would finish at once into a task.
    pub async fn continue_as_task(&self) {
        if !self.era.may_become_task() {
            return;
        }
        // One poll that ends waiting on nothing but the wake-up: the server makes the
        // call a task at that poll.
        let mut yielded = false;
        std::future::poll_fn(|cx| {
            if yielded {
                return std::task::Poll::Ready(());
            }
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        })
        .await;
    }

    /// This context with `key` naming the input its next `elicit`, `create_message` or
    /// `list_roots` asks for, when a 2026-07-28 client is asked through an
    /// `input_required` result (`inputRequests[key]`); otherwise keys follow call
    /// order (`input-0`, `input-1`, ...). Handshake-era requests ignore it.
    ///
    /// ```no_run
    /// # async fn f(cx: mcpflow::server::ServerContext) -> Result<(), mcpflow::SessionError> {
    /// use mcpflow::protocol::ElicitRequestParams;
    /// let schema = serde_json::json!({"type": "object", "properties": {}});
    /// let schema = schema.as_object().cloned().unwrap_or_default();
    /// let answer = cx.input_key("user_name").elicit(ElicitRequestParams::form("Name?", schema)).await?;
    /// # drop(answer); Ok(()) }
    /// ```
    #[must_use]
    pub fn input_key(&self, key: &str) -> ServerContext {
        let mut cx = self.clone();
        cx.input_key = Some(Arc::from(key));
        cx
    }

    /// Whether this request is a 2026-07-28 one, carrying its own `_meta` envelope,
    /// rather than one of a connection that did the `initialize` handshake.
    pub fn is_per_request(&self) -> bool {
        self.era.is_per_request()
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

    /// Tripped when the client cancels this request or the connection closes; for a
    /// tool running as a task, when the client cancels the task (`tasks/cancel`).
    pub fn cancellation(&self) -> &CancellationToken {
        self.request.cancellation()
    }

    /// The request's `params._meta` (progress token, vendor keys).
    pub fn meta(&self) -> Option<&mcpflow_protocol::Meta> {
        self.request.meta()
    }

    /// What the client declared: in this request's `_meta` (2026-07-28), else in
    /// `initialize`.
    pub fn client_capabilities(&self) -> ClientCapabilities {
        self.era.client_capabilities(&self.connection)
    }

    /// Who the client said it is (in this request's `_meta`, or in `initialize`).
    pub fn client_info(&self) -> Option<Implementation> {
        self.era.client_info(&self.connection)
    }

    /// The request's protocol version (2026-07-28), or the negotiated one.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.era.protocol_version(&self.connection)
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
    /// A 2026-07-28 request gets messages only at or above the `logLevel` in its
    /// `_meta`, and none without one.
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
        if self
            .era
            .log_floor(&self.connection)
            .is_none_or(|least| params.level < least)
        {
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
        let with_tools = params.tools.is_some() || params.tool_choice.is_some();
        let Some(sampling) = caps.sampling else {
            return Err(self.undeclared(
                method::SAMPLING_CREATE_MESSAGE,
                ("sampling", "sampling"),
                serde_json::json!({"sampling": {}}),
            ));
        };
        if with_tools && sampling.tools.is_none() {
            return Err(self.undeclared(
                method::SAMPLING_CREATE_MESSAGE,
                ("sampling.tools", "sampling with tools"),
                serde_json::json!({"sampling": {"tools": {}}}),
            ));
        }
        self.era
            .ask(self, InputRequest::CreateMessage(Box::new(params)))
            .await
    }

    /// Ask the user for input through the client (`elicitation/create`).
    ///
    /// On a 2026-07-28 request this (like [`create_message`](Self::create_message) and
    /// [`list_roots`](Self::list_roots)) does not send a request: the client gets an
    /// `input_required` result and retries with the answer, and the handler runs again
    /// from the start, this call then returning the answer at once. Whatever the handler
    /// does before its input calls happens again on each round; keep it free of side
    /// effects, or make them idempotent.
    ///
    /// # Errors
    /// [`SessionError::Rejected`] when the client did not declare the elicitation mode.
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, SessionError> {
        let caps = self.client_capabilities();
        let (declared, mode, what) = match &params {
            ElicitRequestParams::Url(_) => {
                (caps.supports_url_elicitation(), "url", "URL elicitation")
            }
            _ => (caps.supports_form_elicitation(), "form", "form elicitation"),
        };
        if !declared {
            let key = format!("elicitation.{mode}");
            return Err(self.undeclared(
                method::ELICITATION_CREATE,
                (&key, what),
                serde_json::json!({"elicitation": {mode: {}}}),
            ));
        }
        self.era.ask(self, InputRequest::Elicit(params)).await
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
            return Err(self.undeclared(
                method::ROOTS_LIST,
                ("roots", "roots"),
                serde_json::json!({"roots": {}}),
            ));
        }
        self.era.ask(self, InputRequest::ListRoots(None)).await
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

impl ServerContext {
    /// The refusal of an input call the client did not declare (see
    /// [`Era::undeclared`]).
    fn undeclared(
        &self,
        method: &str,
        capability: (&str, &str),
        required: serde_json::Value,
    ) -> SessionError {
        self.era
            .undeclared(&self.connection, method, capability, required)
    }
}
