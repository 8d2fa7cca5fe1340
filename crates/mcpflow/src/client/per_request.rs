//! The per-request era (2026-07-28) of a client connection: [`PerRequest`]. Every request
//! carries the envelope (set on the session once, [`Identity::envelope`]); what its HTTP
//! headers mirror of its params goes with it ([`PerRequest::mirror`]); tool calls,
//! prompts and reads answer `input_required` rounds ([`mrtr`](super::mrtr)); list
//! changes and resource updates arrive on a `subscriptions/listen` stream
//! ([`listen`](super::listen)); tasks speak the tasks extension
//! ([`tasks_per_request`](super::tasks_per_request)).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpflow_protocol::discover::DiscoverResult;
use mcpflow_protocol::methods::{self, RequestMethod, method};
use mcpflow_protocol::{
    CallToolRequestParams, CallToolResult, EmptyParams, ErrorCode, LoggingLevel, MirroredParams,
    ProtocolVersion, ResultType,
};
use serde_json::value::RawValue;
use tokio::task::JoinHandle;

use super::adapter::EraAdapter;
use super::era::{self, Identity};
use super::headers::encode_text;
use super::listen::{self, Listen};
use super::mrtr::Resumable;
use super::{ClientHandle, mrtr};
use crate::error::SessionError;
use crate::session::RequestOptions;
use crate::transport::Mirrored;

/// Longest `connect` waits for the listen stream's acknowledgement (a server that never
/// sends one only delays the connection this much).
const LISTEN_ACK_WAIT: Duration = Duration::from_secs(2);

/// A connection in the per-request era: what its requests carry, what the server said
/// of itself, and its listen stream.
pub(crate) struct PerRequest {
    pub(super) identity: Identity,
    discovered: DiscoverResult,
    listen: Arc<Listen>,
    /// The task keeping the listen stream open.
    listen_task: Mutex<Option<JoinHandle<()>>>,
}

/// Speak the per-request era on `handle`'s connection, with a server that answered the
/// probe with `discovered` (at `identity.version`): set the envelope, then open the
/// listen stream and wait (at most `ack_wait`, and [`LISTEN_ACK_WAIT`]) until the server
/// confirms it, so that no list change announced after `connect` returns is missed.
pub(super) async fn speak(
    handle: &ClientHandle,
    identity: Identity,
    discovered: DiscoverResult,
    log_level: Option<LoggingLevel>,
    ack_wait: Duration,
) {
    handle.peer.set_envelope(Some(identity.envelope(log_level)));
    let _ = handle
        .shared
        .server
        .set(era::as_initialize(identity.version.clone(), &discovered));
    let listen = Arc::new(Listen::default());
    let capabilities = discovered.capabilities.clone();
    let era = PerRequest {
        identity,
        discovered,
        listen: listen.clone(),
        listen_task: Mutex::new(None),
    };
    handle.peer.note_version(era.identity.version.as_str());
    // Set before the stream opens: its acknowledgements are noted through it.
    let _ = handle.shared.era.set(EraAdapter::PerRequest(Box::new(era)));
    let task = listen::start(
        &handle.peer,
        &listen,
        &capabilities,
        ack_wait.min(LISTEN_ACK_WAIT),
    )
    .await;
    match handle.shared.era.get() {
        Some(EraAdapter::PerRequest(era)) => *era.listen_task() = Some(task),
        _ => task.abort(),
    }
}

impl PerRequest {
    pub(super) fn discovered(&self) -> &DiscoverResult {
        &self.discovered
    }

    fn version(&self) -> &ProtocolVersion {
        &self.identity.version
    }

    fn listen_task(&self) -> std::sync::MutexGuard<'_, Option<JoinHandle<()>>> {
        self.listen_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `options` carrying what the request's HTTP headers mirror of its params: the
    /// name in `Mcp-Name`, and the tool's `x-mcp-header` arguments, as the tool lists
    /// this client read declare them, in `Mcp-Param-*`. A request that names nothing
    /// mirrors only the envelope's version, which the session adds.
    pub(super) fn mirror(
        &self,
        handle: &ClientHandle,
        mirrored: MirroredParams<'_>,
        options: RequestOptions,
    ) -> RequestOptions {
        let Some(name) = mirrored.name else {
            return options;
        };
        let options = options.subject(Some(name));
        let params = mirrored.arguments.map_or_else(Vec::new, |arguments| {
            handle.shared.tool_headers.param_headers(name, arguments)
        });
        options.mirrored(Arc::new(Mirrored {
            version: self.version().clone(),
            name: Some(encode_text(name)),
            params,
        }))
    }

    /// `options` for a request of `M` with `params`.
    pub(super) fn mirror_of<M: RequestMethod>(
        &self,
        handle: &ClientHandle,
        params: &M::Params,
        options: RequestOptions,
    ) -> RequestOptions {
        self.mirror(handle, M::mirrored(params), options)
    }

    /// `server/discover` checks the server answers (2026-07-28 has no `ping`).
    pub(super) async fn ping(&self, handle: &ClientHandle) -> Result<(), SessionError> {
        handle
            .request::<methods::Discover>(&EmptyParams::default(), RequestOptions::new())
            .await
            .map(drop)
    }

    /// `tools/call` with its `input_required` rounds. A header mismatch means the tool's
    /// `x-mcp-header` annotations changed: they are learnt again from a fresh list, and
    /// the call is sent once more.
    pub(super) async fn call_tool(
        &self,
        handle: &ClientHandle,
        params: &CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult, SessionError> {
        let first = self.mirror_of::<methods::CallTool>(handle, params, options.clone());
        let answer: Result<CallToolResult, SessionError> = match mrtr::request_with_input(
            handle,
            method::TOOLS_CALL,
            params,
            first,
        )
        .await
        {
            Err(SessionError::Rejected { error, .. })
                if error.code == ErrorCode::HEADER_MISMATCH =>
            {
                tracing::debug!(tool = %params.name, "header mismatch; refreshing the tool list and retrying");
                handle.caches().tools.mark_dirty();
                handle.tools().await?;
                let again = self.mirror_of::<methods::CallTool>(handle, params, options);
                mrtr::request_with_input(handle, method::TOOLS_CALL, params, again).await
            }
            other => other,
        };
        answer.and_then(|result| match result.result_type {
            // A task is created only for a call that declares the extension.
            Some(ResultType::Task) => Err(SessionError::Codec {
                method: method::TOOLS_CALL.into(),
                detail:
                    "the server answered resultType `task` to a call that did not ask for a task"
                        .to_owned(),
            }),
            _ => Ok(result),
        })
    }

    /// A request of `M` with its `input_required` rounds.
    pub(super) async fn resumable<M>(
        &self,
        handle: &ClientHandle,
        params: &M::Params,
    ) -> Result<M::Result, SessionError>
    where
        M: RequestMethod,
        M::Params: Resumable,
    {
        let options = self.mirror_of::<M>(handle, params, RequestOptions::new());
        mrtr::request_with_input(handle, M::METHOD, params, options).await
    }

    /// `uri` joins the listen stream's `resourceSubscriptions`; returns once the server
    /// acknowledged it (within the request timeout).
    pub(super) async fn subscribe(
        &self,
        handle: &ClientHandle,
        uri: &str,
    ) -> Result<(), SessionError> {
        let limit = handle.peer.config().request_timeout();
        self.listen
            .subscribe(&self.discovered.capabilities, limit, uri)
            .await
    }

    /// `uri` leaves the listen stream's filter.
    pub(super) async fn unsubscribe(
        &self,
        handle: &ClientHandle,
        uri: &str,
    ) -> Result<(), SessionError> {
        let limit = handle.peer.config().request_timeout();
        self.listen
            .unsubscribe(&self.discovered.capabilities, limit, uri)
            .await
    }

    /// Every later request asks for logs at `level` (`_meta` `logLevel`): 2026-07-28 has
    /// no `logging/setLevel`.
    pub(super) fn set_logging_level(&self, handle: &ClientHandle, level: LoggingLevel) {
        handle
            .peer
            .set_envelope(Some(self.identity.envelope(Some(level))));
    }

    pub(super) fn listen_acknowledged(&self, params: Option<&RawValue>) -> bool {
        self.listen.acknowledged(params)
    }

    /// End the listen stream: dropping its request ends its stream (HTTP) or cancels it
    /// (stdio).
    pub(super) async fn close(&self) {
        let task = self.listen_task().take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
    }
}
