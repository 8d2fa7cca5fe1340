//! The 2026-07-28 era beside the handshake era: a request whose `params._meta` carries
//! the per-request envelope (`io.modelcontextprotocol/protocolVersion`, ...) is served
//! per request, from what that envelope says, whatever the connection did before.
//!
//! Here: recognising such a request, checking its envelope (-32602, -32022), refusing
//! the methods 2026-07-28 removed (-32601), running the method (with
//! [multi-round-trip](mrtr) input for `tools/call`, `prompts/get` and `resources/read`),
//! and dressing its result (`resultType`, cache hints, `serverInfo`).

mod listen;
pub(crate) mod mrtr;
mod state;

use std::future::Future;
use std::sync::Arc;

use mcpflow_protocol::meta2026::{
    CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY, RequestMeta, SERVER_INFO_KEY,
};
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{
    ClientCapabilities, DiscoverResult, ErrorCode, ErrorObject, HANDSHAKE_VERSIONS, Implementation,
    JsonObject, LoggingLevel, ProtocolVersion,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

pub(crate) use listen::Listeners;
pub use state::StateKey;

use super::methods::{completion, prompts, resources, tools};
use super::tasks::per_request as tasks;
use super::{Connection, ServerContext};
use crate::session::{BoxFuture, Reply, RequestContext};

/// The versions served per request, newest first.
pub(crate) const PER_REQUEST_VERSIONS: &[ProtocolVersion] = &[ProtocolVersion::V2026_07_28];

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

/// What one 2026-07-28 request said about its client, in place of `initialize`.
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

/// The part of a request's params the era is chosen by.
#[derive(Deserialize, Default)]
struct Envelope {
    #[serde(default, rename = "_meta")]
    meta: Option<JsonObject>,
}

/// `params._meta`, when the params are an object that has one.
fn envelope(params: Option<&RawValue>) -> Option<JsonObject> {
    let raw = params?;
    serde_json::from_str::<Envelope>(raw.get()).ok()?.meta
}

/// Whether a request belongs to the 2026-07-28 era: its `_meta` carries one of the two
/// envelope keys, or its method exists only there.
pub(crate) fn carries_envelope(method: &str, params: Option<&RawValue>) -> bool {
    if method == method::SERVER_DISCOVER || method == method::SUBSCRIPTIONS_LISTEN {
        return true;
    }
    envelope(params).is_some_and(|m| {
        m.contains_key(PROTOCOL_VERSION_KEY) || m.contains_key(CLIENT_CAPABILITIES_KEY)
    })
}

/// Read and check a request's envelope: -32602 for a missing or malformed key, -32022
/// for a version not served per request.
pub(crate) fn check_envelope(params: Option<&RawValue>) -> Result<RequestMeta, ErrorObject> {
    let meta = envelope(params).ok_or_else(|| {
        ErrorObject::invalid_params(format!(
            "missing `params._meta`: a 2026-07-28 request carries `{PROTOCOL_VERSION_KEY}` and `{CLIENT_CAPABILITIES_KEY}`"
        ))
    })?;
    let version = meta.get(PROTOCOL_VERSION_KEY);
    if let Some(Value::String(v)) = version
        && !PER_REQUEST_VERSIONS.iter().any(|m| m.as_str() == v)
    {
        return Err(unsupported_version(v));
    }
    let read = RequestMeta::from_meta(&meta)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid `params._meta`: {e}")))?;
    for (key, present) in [
        (PROTOCOL_VERSION_KEY, read.protocol_version.is_some()),
        (CLIENT_CAPABILITIES_KEY, read.client_capabilities.is_some()),
    ] {
        if !present {
            return Err(ErrorObject::invalid_params(format!(
                "`params._meta` is missing `{key}`"
            )));
        }
    }
    Ok(read)
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

/// Whether `method` exists for a 2026-07-28 request (the handshake-era ones do not).
pub(crate) fn is_per_request_method(name: &str) -> bool {
    matches!(
        name,
        method::SERVER_DISCOVER
            | method::SUBSCRIPTIONS_LISTEN
            | method::TOOLS_LIST
            | method::TOOLS_CALL
            | method::RESOURCES_LIST
            | method::RESOURCES_TEMPLATES_LIST
            | method::RESOURCES_READ
            | method::PROMPTS_LIST
            | method::PROMPTS_GET
            | method::COMPLETION_COMPLETE
            | method::TASKS_GET
            | method::TASKS_CANCEL
            | mcpflow_protocol::tasks2026::TASKS_UPDATE
    )
}

/// Whether the result of `method` carries cache hints.
fn is_cacheable(name: &str) -> bool {
    matches!(
        name,
        method::SERVER_DISCOVER
            | method::TOOLS_LIST
            | method::RESOURCES_LIST
            | method::RESOURCES_TEMPLATES_LIST
            | method::RESOURCES_READ
            | method::PROMPTS_LIST
    )
}

fn boxed(
    answer: impl Future<Output = Result<Reply, ErrorObject>> + Send + 'static,
) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
    Box::pin(answer)
}

/// Answer one 2026-07-28 request.
pub(crate) fn handle(
    connection: &Arc<Connection>,
    name: String,
    params: Option<Box<RawValue>>,
    request: RequestContext,
) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
    let server = connection.server.clone();
    let meta = match check_envelope(params.as_deref()) {
        Ok(meta) => meta,
        Err(e) => return boxed(std::future::ready(Err(e))),
    };
    if !is_per_request_method(&name) || server.lacks_capability_for(&name) {
        return boxed(std::future::ready(Err(ErrorObject::method_not_found(
            &name,
        ))));
    }
    if name == method::COMPLETION_COMPLETE && server.capabilities().completions.is_none() {
        return boxed(std::future::ready(Err(ErrorObject::method_not_found(
            &name,
        ))));
    }
    let round = if mrtr::may_ask(&name) {
        match mrtr::Round::from_params(&server, &name, params.as_deref()) {
            Ok(round) => Some(Arc::new(round)),
            Err(e) => return boxed(std::future::ready(Err(e))),
        }
    } else {
        None
    };
    let capabilities = meta.client_capabilities.unwrap_or_default();
    let escalation = if name == method::TOOLS_CALL {
        match tasks::candidate(&server, params.as_deref(), &capabilities) {
            Ok(escalation) => escalation,
            Err(e) => return boxed(std::future::ready(Err(e))),
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
    let per_request = Arc::new(PerRequest {
        version: meta
            .protocol_version
            .unwrap_or(ProtocolVersion::V2026_07_28),
        capabilities,
        client_info: meta.client_info,
        log_level: meta.log_level,
        round: round.clone(),
        task: escalation.clone(),
    });
    let cx = ServerContext::new(request, connection.clone()).with_per_request(per_request);
    let owner = cx.task_owner();
    let answer: BoxFuture<'static, Result<Reply, ErrorObject>> = match name.as_str() {
        method::SERVER_DISCOVER => boxed(std::future::ready(discover(&cx))),
        method::SUBSCRIPTIONS_LISTEN => boxed(listen::listen(params, cx)),
        method::TOOLS_LIST => boxed(tools::list(params, cx)),
        method::TOOLS_CALL => boxed(tools::call(params, cx)),
        method::RESOURCES_LIST => boxed(resources::list(params, cx)),
        method::RESOURCES_TEMPLATES_LIST => boxed(resources::templates_list(params, cx)),
        method::RESOURCES_READ => boxed(resources::read(params, cx)),
        method::PROMPTS_LIST => boxed(prompts::list(params, cx)),
        method::PROMPTS_GET => boxed(prompts::get(params, cx)),
        method::TASKS_GET => boxed(tasks::get(params, cx)),
        method::TASKS_CANCEL => boxed(tasks::cancel(params, cx)),
        mcpflow_protocol::tasks2026::TASKS_UPDATE => boxed(tasks::update(params, cx)),
        _ => boxed(completion::complete(params, cx)),
    };
    Box::pin(async move {
        let outcome = match &round {
            Some(round) => match match &escalation {
                Some(escalation) => tasks::run(&server, owner, round, escalation, answer).await,
                None => mrtr::run(round, answer).await,
            } {
                mrtr::Outcome::Done(outcome) => outcome,
                mrtr::Outcome::InputRequired(result) => return dress(&server, &name, &result),
            },
            None => answer.await,
        };
        match outcome {
            Ok(reply) => dress_reply(&server, &name, &reply),
            Err(mut error) => {
                if error.code == ErrorCode::RESOURCE_NOT_FOUND {
                    // 2026-07-28 reports an unknown resource as invalid params.
                    error.code = ErrorCode::INVALID_PARAMS;
                }
                Err(error)
            }
        }
    })
}

/// The `server/discover` result.
fn discover(cx: &ServerContext) -> Result<Reply, ErrorObject> {
    let server = cx.server();
    let mut versions: Vec<ProtocolVersion> = PER_REQUEST_VERSIONS.to_vec();
    versions.extend(HANDSHAKE_VERSIONS.iter().cloned());
    let mut caps = server.capabilities();
    tasks::advertise(&mut caps);
    let mut result = DiscoverResult::new(versions, caps);
    result.instructions = server.inner.instructions.clone();
    Reply::json(&result).map_err(ErrorObject::internal)
}

fn dress<T: serde::Serialize>(
    server: &super::Server,
    name: &str,
    value: &T,
) -> Result<Reply, ErrorObject> {
    let value = serde_json::to_value(value).map_err(ErrorObject::internal)?;
    finish(server, name, value)
}

/// A method's reply with the 2026-07-28 envelope fields added: it was written by this
/// server, so reading it back cannot fail on peer input.
fn dress_reply(server: &super::Server, name: &str, reply: &Reply) -> Result<Reply, ErrorObject> {
    let value: Value = serde_json::from_str(reply.get()).map_err(ErrorObject::internal)?;
    finish(server, name, value)
}

fn finish(server: &super::Server, name: &str, mut value: Value) -> Result<Reply, ErrorObject> {
    let Value::Object(map) = &mut value else {
        return Reply::json(&value).map_err(ErrorObject::internal);
    };
    let complete =
        !map.contains_key("resultType") || map.get("resultType") == Some(&Value::from("complete"));
    map.entry("resultType").or_insert_with(|| "complete".into());
    if complete && is_cacheable(name) {
        let hints = server.inner.cache_hints;
        map.entry("ttlMs").or_insert_with(|| hints.ttl_ms.into());
        map.entry("cacheScope")
            .or_insert_with(|| if hints.private { "private" } else { "public" }.into());
    }
    let info = &server.inner.info_json;
    if !info.is_null() {
        let meta = map
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(meta) = meta {
            meta.entry(SERVER_INFO_KEY).or_insert_with(|| info.clone());
        }
    }
    Reply::json(&value).map_err(ErrorObject::internal)
}
