//! The per-request era (2026-07-28) beside the handshake era: a request whose
//! `params._meta` carries the per-request envelope (`io.modelcontextprotocol/protocolVersion`,
//! ...) is served on its own, from what that envelope says, whatever the connection did
//! before.
//!
//! Here: checking the envelope (-32602, -32022) into the request's [`Era`], running the
//! method with [multi-round-trip](mrtr) input or as a task (the `asks` methods of the
//! [method table](super::methods)), and `server/discover`.

pub(crate) mod listen;
pub(crate) mod mrtr;
pub(crate) mod single_use;
mod state;

use std::sync::Arc;

use mcpflow_protocol::meta2026::{CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY};
use mcpflow_protocol::methods::method;
use mcpflow_protocol::mrtr::InputRequest;
use mcpflow_protocol::{
    ClientCapabilities, DiscoverResult, ErrorCode, ErrorObject, HANDSHAKE_VERSIONS, Implementation,
    LoggingLevel, PER_REQUEST_VERSIONS, ProtocolVersion,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub(crate) use listen::Listeners;
pub use state::StateKey;

use super::era::Era;
use super::methods;
use super::tasks::per_request as tasks;
use super::{Connection, ServerContext};
use crate::error::SessionError;
use crate::session::{BoxFuture, Member, Reply, RequestContext, RequestHead};

/// Cache hints put on discover, the four lists and reads unless the server says otherwise
/// ([`ServerBuilder::cache_hints`](crate::server::ServerBuilder::cache_hints)).
///
/// ```
/// use mcpflow::server::{CacheHints, Server};
///
/// // A catalog that changes rarely and is the same for everyone.
/// let hints = CacheHints { ttl_ms: 5 * 60_000, private: false };
/// let server = Server::builder("catalog", "1.0.0").cache_hints(hints).build();
/// # drop(server);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// `ttlMs`: how long a client may reuse the result.
    pub ttl_ms: u64,
    /// `cacheScope` is `private` when true (the default: results may depend on who asks).
    pub private: bool,
}

impl Default for CacheHints {
    fn default() -> Self {
        // Short: lists change at run time and a list_changed may be missed by a
        // client that does not listen.
        CacheHints {
            ttl_ms: 60_000,
            private: true,
        }
    }
}

/// What one 2026-07-28 request said about its client, in place of `initialize`, and
/// how it asks for input.
#[derive(Debug)]
pub(crate) struct PerRequest {
    pub(crate) version: ProtocolVersion,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) log_level: Option<LoggingLevel>,
    /// The input of a request that may answer `input_required`.
    pub(crate) round: Option<Arc<mrtr::Round>>,
    /// A `tools/call` that may become a task (tasks extension).
    pub(crate) task: Option<Arc<tasks::Escalation>>,
}

impl PerRequest {
    /// An input call: the answer this round carries for its key; once the call is a
    /// task, the task's answer; or (with the request registered for the
    /// `input_required` result) a wait that never ends.
    pub(crate) async fn ask<T: DeserializeOwned>(
        &self,
        cx: &ServerContext,
        request: InputRequest,
    ) -> Result<T, SessionError> {
        let method = request.method().to_owned();
        let Some(round) = &self.round else {
            return Err(SessionError::Rejected {
                method: method.into(),
                error: ErrorObject::invalid_params(
                    "only tools/call, prompts/get and resources/read may ask the client for input",
                ),
            });
        };
        let key = round.next_key(cx.named_input());
        if let Some(task) = self.task.as_ref().and_then(|e| e.task()) {
            let answer = tasks::ask(cx.server(), task, key, request).await?;
            return serde_json::from_value(answer).map_err(|e| SessionError::Codec {
                method: method.into(),
                detail: e.to_string(),
            });
        }
        if let Some(answer) = round.answer(&key) {
            return Ok(answer);
        }
        round.ask(key, request);
        std::future::pending().await
    }
}

/// A request's envelope: what it says about its client.
struct Envelope {
    version: ProtocolVersion,
    capabilities: ClientCapabilities,
    client_info: Option<Implementation>,
    log_level: Option<LoggingLevel>,
}

/// Read and check a request's envelope: -32602 for a missing or malformed key, -32022
/// for a version not served per request.
fn check_envelope(head: &RequestHead) -> Result<Envelope, ErrorObject> {
    let Member::Present(meta) = &head.meta else {
        return Err(ErrorObject::invalid_params(format!(
            "missing `params._meta`: a 2026-07-28 request carries `{PROTOCOL_VERSION_KEY}` and `{CLIENT_CAPABILITIES_KEY}`"
        )));
    };
    let malformed =
        |e: serde_json::Error| ErrorObject::invalid_params(format!("invalid `params._meta`: {e}"));
    let missing =
        |key: &str| ErrorObject::invalid_params(format!("`params._meta` is missing `{key}`"));
    if meta.duplicate {
        return Err(ErrorObject::invalid_params(
            "invalid `params._meta`: a member is given twice",
        ));
    }
    let version = match &meta.protocol_version {
        Some(raw) => {
            let version: String = raw.decode().map_err(malformed)?;
            PER_REQUEST_VERSIONS
                .iter()
                .find(|v| v.as_str() == version)
                .cloned()
                .ok_or_else(|| unsupported_version(&version))?
        }
        None => return Err(missing(PROTOCOL_VERSION_KEY)),
    };
    let capabilities = meta
        .client_capabilities
        .as_ref()
        .ok_or_else(|| missing(CLIENT_CAPABILITIES_KEY))?
        .decode()
        .map_err(malformed)?;
    let client_info = meta
        .client_info
        .as_ref()
        .map(|i| i.decode())
        .transpose()
        .map_err(malformed)?;
    let log_level = meta
        .log_level
        .as_ref()
        .map(|l| l.decode())
        .transpose()
        .map_err(malformed)?;
    Ok(Envelope {
        version,
        capabilities,
        client_info,
        log_level,
    })
}

/// -32022 naming what this server serves per request.
pub(crate) fn unsupported_version(requested: &str) -> ErrorObject {
    let supported: Vec<&str> = PER_REQUEST_VERSIONS
        .iter()
        .map(ProtocolVersion::as_str)
        .collect();
    ErrorObject::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "unsupported protocol version `{requested}`; supported: {}",
            supported.join(", ")
        ),
    )
    .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
}

/// -32021: the request needs `required` (a `ClientCapabilities` object) undeclared.
pub(crate) fn missing_capability(required: Value, what: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "this request needs the client capability {what}, which its clientCapabilities do not include"
        ),
    )
    .with_data(serde_json::json!({ "requiredCapabilities": required }))
}

fn refused(error: ErrorObject) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
    Box::pin(std::future::ready(Err(error)))
}

/// Answer one 2026-07-28 request for `name`.
pub(crate) fn serve(
    connection: &Arc<Connection>,
    name: &str,
    request: RequestContext,
) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
    let server = connection.server.clone();
    let head = request.head();
    let envelope = match check_envelope(head) {
        Ok(envelope) => envelope,
        Err(e) => return refused(e),
    };
    let Some(method) = methods::find(name, true).filter(|m| server.offers(m.offer)) else {
        return refused(ErrorObject::method_not_found(name));
    };
    let round = if method.asks {
        let principal = connection.principal.get().map(|p| p.owner_key());
        match mrtr::Round::new(&server, name, head, principal) {
            Ok(round) => Some(Arc::new(round)),
            Err(e) => return refused(e),
        }
    } else {
        None
    };
    let escalation = if name == method::TOOLS_CALL {
        match tasks::candidate(&server, head, &envelope.capabilities) {
            Ok(escalation) => escalation,
            Err(e) => return refused(e),
        }
    } else {
        None
    };
    // A call that may become a task runs with its own cancellation from the start,
    // which the task keeps once the request is gone.
    let request = match &escalation {
        Some(e) => request.detached(e.cancel.clone()),
        None => request,
    };
    let era = Era::PerRequest(Arc::new(PerRequest {
        version: envelope.version,
        capabilities: envelope.capabilities,
        client_info: envelope.client_info,
        log_level: envelope.log_level,
        round: round.clone(),
        task: escalation.clone(),
    }));
    let owner = era.task_owner(connection);
    let answer = (method.answer)(ServerContext::new(
        request,
        connection.clone(),
        era.clone(),
        method,
    ));
    Box::pin(async move {
        let outcome = match &round {
            Some(round) => {
                // A single-use state is consumed before its handler runs again.
                if let Err(e) = round.consume().await {
                    return Err(era.error(e));
                }
                let ended = match &escalation {
                    Some(escalation) => tasks::run(&server, owner, round, escalation, answer).await,
                    None => mrtr::run(round, answer).await,
                };
                match ended {
                    mrtr::Outcome::Done(outcome) => outcome,
                    mrtr::Outcome::InputRequired(result) => era.finish(&server, method, result),
                    mrtr::Outcome::Task(created) => era.finish(&server, method, created),
                }
            }
            None => answer.await,
        };
        outcome.map_err(|e| era.error(e))
    })
}

/// `server/discover`.
pub(crate) async fn discover(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let server = cx.server();
    let mut versions: Vec<ProtocolVersion> = PER_REQUEST_VERSIONS.to_vec();
    versions.extend(HANDSHAKE_VERSIONS.iter().cloned());
    let mut caps = server.capabilities();
    tasks::advertise(&mut caps);
    let mut result = DiscoverResult::new(versions, caps);
    result.instructions = server.inner.instructions.clone();
    cx.reply(result)
}
