//! The era a request is served in, as a value: everything a handler's context does
//! differently in the handshake era and in the per-request era (2026-07-28). A
//! [`ServerContext`] holds one and asks it; it never branches on the era itself.
//!
//! | | handshake | per-request |
//! |---|---|---|
//! | who the client is | what `initialize` said | what the request's `_meta` says |
//! | asking for input | a server-to-client request (through the task, for a task) | an `input_required` round, or parking the task the call became |
//! | a missing capability | `-32601` naming `initialize` | `-32021` naming the capability |
//! | results | as the method made them | with `resultType`, cache hints and `serverInfo` |
//! | log messages | at or above `logging/setLevel` | at or above the request's `logLevel`, none without |
//! | task owner | the connection | the principal, or whoever holds the id |
//!
//! List changes travel per era too, but they are not a request's: a handshake
//! connection gets notifications, per-request clients the `subscriptions/listen` streams
//! that asked ([`announce`](super::announce)).

use std::sync::Arc;

use mcpflow_protocol::mrtr::InputRequest;
use mcpflow_protocol::{
    ClientCapabilities, EmptyParams, ErrorCode, ErrorObject, Implementation, LoggingLevel,
    ProtocolVersion,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::finish::{Finish, Finishing};
use super::methods::Method;
use super::per_request::PerRequest;
use super::tasks::{self, TaskEntry, TaskOwner};
use super::{Connection, Server, ServerContext};
use crate::error::SessionError;
use crate::session::{Reply, RequestOptions};

/// The era of one request (see the [module documentation](self)).
#[derive(Clone, Debug)]
pub(crate) enum Era {
    /// A connection that did (or is doing) the `initialize` handshake.
    Handshake,
    /// A 2026-07-28 request, with what its envelope said.
    PerRequest(Arc<PerRequest>),
}

impl Era {
    pub(crate) fn is_per_request(&self) -> bool {
        matches!(self, Era::PerRequest(_))
    }

    pub(crate) fn client_capabilities(&self, connection: &Connection) -> ClientCapabilities {
        match self {
            Era::Handshake => connection.client_capabilities(),
            Era::PerRequest(r) => r.capabilities.clone(),
        }
    }

    pub(crate) fn client_info(&self, connection: &Connection) -> Option<Implementation> {
        match self {
            Era::Handshake => connection.client_info(),
            Era::PerRequest(r) => r.client_info.clone(),
        }
    }

    pub(crate) fn protocol_version(&self, connection: &Connection) -> Option<ProtocolVersion> {
        match self {
            Era::Handshake => connection.protocol_version(),
            Era::PerRequest(r) => Some(r.version.clone()),
        }
    }

    /// The least severe level a log message must have to be sent; `None`: none is.
    pub(crate) fn log_floor(&self, connection: &Connection) -> Option<LoggingLevel> {
        match self {
            Era::Handshake => Some(connection.log_level()),
            Era::PerRequest(r) => r.log_level,
        }
    }

    /// Who owns the tasks the request creates or sees: its connection in the handshake
    /// era; per request (no connection outlives a request) its principal, or anyone
    /// holding the task id when requests are not authorized.
    pub(crate) fn task_owner(&self, connection: &Connection) -> TaskOwner {
        match (self, connection.principal.get()) {
            (Era::Handshake, _) => TaskOwner::Connection(connection.id),
            (Era::PerRequest(_), Some(principal)) => {
                TaskOwner::Principal(principal.owner_key().into())
            }
            (Era::PerRequest(_), None) => TaskOwner::Anyone,
        }
    }

    /// The task a per-request `tools/call` became, once it did.
    pub(crate) fn task(&self) -> Option<&Arc<TaskEntry>> {
        match self {
            Era::Handshake => None,
            Era::PerRequest(r) => r.task.as_ref()?.task(),
        }
    }

    /// Whether a `tools/call`'s `task` param asks to run it as a task (2025-11-25);
    /// 2026-07-28 has no such param: the server decides which calls become tasks.
    pub(crate) fn honours_task_param(&self) -> bool {
        !self.is_per_request()
    }

    /// Whether the call may still become a task (a per-request `tools/call` of a tool
    /// with task support, from a client that declared the extension).
    /// The input round of a 2026-07-28 request that may ask for input.
    pub(crate) fn round(&self) -> Option<&Arc<crate::server::per_request::mrtr::Round>> {
        match self {
            Era::Handshake => None,
            Era::PerRequest(r) => r.round.as_ref(),
        }
    }

    pub(crate) fn may_become_task(&self) -> bool {
        match self {
            Era::Handshake => false,
            Era::PerRequest(r) => r.task.as_ref().is_some_and(|e| e.task().is_none()),
        }
    }

    /// The refusal of an input call the client did not declare, `capability` being its
    /// key and what it is for (`("sampling.tools", "sampling with tools")`) and
    /// `required` the `ClientCapabilities` object it needs.
    pub(crate) fn undeclared(
        &self,
        connection: &Connection,
        method: &str,
        capability: (&str, &str),
        required: serde_json::Value,
    ) -> SessionError {
        let (key, what) = capability;
        let error = match self {
            Era::PerRequest(_) => {
                super::per_request::missing_capability(required, &format!("`{key}` ({what})"))
            }
            Era::Handshake if connection.protocol_version().is_none() => ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "cannot ask the client for {what} ({method}): this connection had no initialize handshake, as on a stateless HTTP server, which keeps no session to send requests on"
                ),
            ),
            Era::Handshake => ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("the client did not declare the `{key}` capability ({what}) in initialize"),
            ),
        };
        SessionError::Rejected {
            method: method.into(),
            error,
        }
    }

    /// Ask the client for input: a request to it (through the task, for a task), or an
    /// input round (through the task the call became, once it did).
    pub(crate) async fn ask<T: DeserializeOwned>(
        &self,
        cx: &ServerContext,
        request: InputRequest,
    ) -> Result<T, SessionError> {
        match self {
            Era::Handshake => {
                let method = request.method().to_owned();
                match request {
                    InputRequest::Elicit(p) => send(cx, &method, &p).await,
                    InputRequest::CreateMessage(p) => send(cx, &method, &*p).await,
                    InputRequest::ListRoots(_) => send(cx, &method, &EmptyParams::default()).await,
                    InputRequest::Other { params, .. } => send(cx, &method, &params).await,
                    _ => Err(SessionError::Codec {
                        method: method.into(),
                        detail: "not a request this server sends".into(),
                    }),
                }
            }
            Era::PerRequest(r) => r.ask(cx, request).await,
        }
    }

    /// The reply carrying `result`, finished for this era.
    pub(crate) fn finish<R: Finish>(
        &self,
        server: &Server,
        method: &Method,
        mut result: R,
    ) -> Result<Reply, ErrorObject> {
        if self.is_per_request() {
            let info = &server.inner.info_json;
            result.finish(&Finishing {
                cache: method.cacheable.then_some(server.inner.cache_hints),
                server_info: (!info.is_null()).then_some(info),
            });
        }
        result.into_reply()
    }

    /// A method's error, as this era reports it: 2026-07-28 reports an unknown resource
    /// as invalid params.
    pub(crate) fn error(&self, mut error: ErrorObject) -> ErrorObject {
        if self.is_per_request() && error.code == ErrorCode::RESOURCE_NOT_FOUND {
            error.code = ErrorCode::INVALID_PARAMS;
        }
        error
    }
}

/// A request to the client: directly, or as the task's (2025-11-25 tasks).
async fn send<P: Serialize, T: DeserializeOwned>(
    cx: &ServerContext,
    method: &str,
    params: &P,
) -> Result<T, SessionError> {
    match cx.running_task() {
        Some(task) => tasks::ask(task, cx.peer(), method, params).await,
        None => {
            cx.peer()
                .request(method, params, RequestOptions::new())
                .await
        }
    }
}
