//! Calling a tool by its catalog name: resolve, filter, check the arguments, ask for
//! approval, then send under the server's deadlines and in-flight limit.
//!
//! No lock is held across the call: the connection is cloned out of its slot, the
//! in-flight limit is a semaphore permit, and the compiled schemas sit behind a mutex
//! taken only to look one up. A timed-out or cancelled call is dropped, which makes the
//! engine send `notifications/cancelled` (bounded, off the caller's path) and ignore
//! a late answer.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpflow_protocol::{
    CallToolRequestParams, CallToolResult, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorObject, JsonObject,
};
use tokio_util::sync::CancellationToken;

use super::ToolHost;
use super::error::{HostError, TimeoutPhase};
use super::snapshot::{CatalogSnapshot, CatalogTool};
use super::supervisor::ServerSlot;
use crate::client::ClientContext;
use crate::error::SessionError;
use crate::session::{BoxFuture, ProgressCallback, ProgressUpdate, RequestOptions};

/// The default deadline of a call without answer or progress: 300 s.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);
/// The default cap on a call's total time, however much progress arrives: 30 min.
pub const DEFAULT_MAX_TOTAL: Duration = Duration::from_secs(30 * 60);

/// A call about to be sent, as the approval hook sees it.
#[derive(Debug, Clone)]
pub struct ToolCallInfo {
    /// The catalog name.
    pub name: String,
    /// The server.
    pub server: String,
    /// The tool as the server lists it (remote name, annotations).
    pub tool: mcpflow_protocol::Tool,
    /// The arguments.
    pub arguments: serde_json::Value,
}

/// The approval hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Send the call.
    Approve,
    /// Do not send it; the caller gets [`HostError::Denied`] with this reason.
    Deny(String),
}

/// Asked before each call.
pub type ApprovalHook = Arc<dyn Fn(ToolCallInfo) -> BoxFuture<'static, Approval> + Send + Sync>;

/// A server's `sampling/createMessage`, with the server that asked.
pub type HostSamplingHandler = Arc<
    dyn Fn(
            String,
            CreateMessageRequestParams,
            ClientContext,
        ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>>
        + Send
        + Sync,
>;

/// A server's `elicitation/create`, with the server that asked and the host call that
/// caused it when one can tell ([`ElicitationRequest::call`]).
pub type HostElicitationHandler = Arc<
    dyn Fn(ElicitationRequest) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>>
        + Send
        + Sync,
>;

/// What an elicitation handler gets.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server that asks.
    pub server: String,
    /// The tool call in flight on that server when it asked, when exactly one was (a
    /// server's request carries no link to the call on stdio; with several calls in
    /// flight, `None` rather than a guess).
    pub call: Option<ToolCallInfo>,
    /// What the server asks.
    pub params: ElicitRequestParams,
    /// The client, and the server's request (progress, cancellation).
    pub context: ClientContext,
}

/// Per-call options for [`ToolHost::call_with`].
#[derive(Clone, Default)]
#[must_use]
pub struct CallOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_total: Option<Duration>,
    pub(crate) on_progress: Option<ProgressCallback>,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) snapshot: Option<Arc<CatalogSnapshot>>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("max_total", &self.max_total)
            .field("snapshot", &self.snapshot.as_ref().map(|s| s.generation()))
            .finish_non_exhaustive()
    }
}

impl CallOptions {
    /// The host's and server's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The deadline without answer or progress (overrides the tool's and server's).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// The cap on the total time (overrides the server's).
    pub fn max_total(mut self, d: Duration) -> Self {
        self.max_total = Some(d);
        self
    }

    /// Called with each progress report, in order, before the result returns.
    pub fn on_progress(mut self, f: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Cancel the call when `token` trips ([`HostError::Cancelled`]).
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Resolve the name in this snapshot (the one the model saw this turn) instead of
    /// the current one.
    pub fn snapshot(mut self, snapshot: Arc<CatalogSnapshot>) -> Self {
        self.snapshot = Some(snapshot);
        self
    }
}

/// Deadlines of one server.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deadlines {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_total: Option<Duration>,
    pub(crate) per_tool: HashMap<String, Duration>,
}

/// The calls in flight on one server, for telling an elicitation which call caused it.
#[derive(Default)]
pub(crate) struct InFlight {
    next: std::sync::atomic::AtomicU64,
    calls: Mutex<HashMap<u64, ToolCallInfo>>,
}

impl InFlight {
    fn enter(self: &Arc<Self>, info: ToolCallInfo) -> InFlightGuard {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().insert(id, info);
        InFlightGuard {
            calls: self.clone(),
            id,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, ToolCallInfo>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The one call in flight, if exactly one is.
    pub(crate) fn sole(&self) -> Option<ToolCallInfo> {
        let calls = self.lock();
        if calls.len() == 1 {
            calls.values().next().cloned()
        } else {
            None
        }
    }
}

struct InFlightGuard {
    calls: Arc<InFlight>,
    id: u64,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.calls.lock().remove(&self.id);
    }
}

/// Compiled `inputSchema`s by catalog name, recompiled when the schema changes.
#[derive(Default)]
pub(crate) struct InputValidators(Mutex<HashMap<String, CompiledSchema>>);

/// A schema and its compiled form (`None`: it does not compile).
type CompiledSchema = (JsonObject, Option<Arc<jsonschema::Validator>>);

impl InputValidators {
    fn check(&self, entry: &CatalogTool, arguments: &serde_json::Value) -> Result<(), HostError> {
        let schema = &entry.remote().input_schema;
        let validator = {
            let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            match cache.get(entry.name()) {
                Some((known, validator)) if known == schema => validator.clone(),
                _ => {
                    let compiled =
                        jsonschema::validator_for(&serde_json::Value::Object(schema.clone()))
                            .ok()
                            .map(Arc::new);
                    cache.insert(entry.name().to_owned(), (schema.clone(), compiled.clone()));
                    compiled
                }
            }
        };
        let Some(validator) = validator else {
            tracing::warn!(tool = %entry.name(), "the tool's inputSchema does not compile; its arguments are not checked");
            return Ok(());
        };
        let errors: Vec<String> = validator
            .iter_errors(arguments)
            .take(5)
            .map(|e| {
                let path = e.instance_path().to_string();
                format!("{}: {e}", if path.is_empty() { "/" } else { &path })
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(HostError::InvalidArguments {
                tool: entry.name().to_owned(),
                detail: errors.join("; "),
            })
        }
    }
}

impl ToolHost {
    /// Call the tool the catalog offers as `name` with the default options.
    ///
    /// # Errors
    /// See [`call_with`](Self::call_with).
    pub async fn call(
        &self,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<CallToolResult, HostError> {
        self.call_with(name, arguments, CallOptions::new()).await
    }

    /// Call the tool the catalog offers as `name`.
    ///
    /// The deadline without answer or progress is, first found: the options', the
    /// tool's, the server's, 300 s; progress restarts it, up to the total cap (the
    /// options', the server's, 30 min). A tool annotated read-only or idempotent is
    /// sent once more when the connection dropped under it and a new one is up; no
    /// other call is ever repeated.
    ///
    /// # Errors
    /// [`HostError`]: every variant but [`HostError::Closed`] names the tool, and
    /// [`HostError::to_model_text`] renders it for the model.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: serde_json::Value,
        options: CallOptions,
    ) -> Result<CallToolResult, HostError> {
        let inner = &self.inner;
        if inner.calls_stop.is_cancelled() {
            return Err(HostError::Closed);
        }
        let snapshot = options
            .snapshot
            .clone()
            .unwrap_or_else(|| inner.catalog.snapshot());
        let entry = resolve(&snapshot, name)?;
        let (slot, deadlines) = inner
            .server(entry.server())
            .ok_or_else(|| not_found(&snapshot, name))?;
        // Checked again at call time: the snapshot may come from the caller.
        if !inner
            .catalog
            .filter(slot.index)
            .is_some_and(|f| f.permits(entry.server(), entry.remote()))
        {
            return Err(not_found(&snapshot, name));
        }
        let arguments = match arguments {
            serde_json::Value::Null => serde_json::Value::Object(JsonObject::new()),
            other => other,
        };
        inner.validators.check(entry, &arguments)?;
        // Before the approval hook, which may wait on a person: an outage fails now.
        slot.client()?;
        let info = ToolCallInfo {
            name: name.to_owned(),
            server: entry.server().to_owned(),
            tool: entry.remote().clone(),
            arguments,
        };
        if let Some(approve) = &inner.approval
            && let Approval::Deny(reason) = approve(info.clone()).await
        {
            return Err(HostError::Denied {
                tool: name.to_owned(),
                reason,
            });
        }
        let idle = options
            .timeout
            .or_else(|| deadlines.per_tool.get(&entry.remote().name).copied())
            .or(deadlines.timeout)
            .unwrap_or(DEFAULT_TOOL_TIMEOUT);
        let cap = options
            .max_total
            .or(deadlines.max_total)
            .unwrap_or(DEFAULT_MAX_TOTAL);
        let cancel = options.cancel.clone().unwrap_or_default();
        let attempt = Attempt {
            slot,
            info: &info,
            idle,
            cap,
            on_progress: options.on_progress.clone(),
        };
        let stop = inner.calls_stop.clone();
        let span = crate::telemetry::host_call(name, entry.server());
        let run = async {
            match attempt.send().await {
                Err(HostError::ServerUnavailable { .. })
                    if retry_safe(entry) && slot.client().is_ok() =>
                {
                    tracing::info!(tool = %name, "the connection dropped under a read-only or idempotent call; sending it again");
                    attempt.send().await
                }
                other => other,
            }
        };
        let result = tracing::Instrument::instrument(
            async {
                tokio::select! {
                    biased;
                    () = stop.cancelled() => Err(cancelled(name, "the tool host is closing")),
                    () = cancel.cancelled() => Err(cancelled(name, "cancelled by the caller")),
                    result = run => result,
                }
            },
            span.clone(),
        )
        .await;
        match &result {
            Ok(call) if call.is_error() => crate::telemetry::host_call_failed(&span, "tool_error"),
            Ok(_) => {}
            Err(error) => crate::telemetry::host_call_failed(&span, error.error_type()),
        }
        result
    }
}

fn cancelled(name: &str, reason: &str) -> HostError {
    HostError::Cancelled {
        tool: name.to_owned(),
        reason: reason.to_owned(),
    }
}

fn retry_safe(entry: &CatalogTool) -> bool {
    entry
        .remote()
        .annotations
        .as_ref()
        .is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true))
}

fn not_found(snapshot: &CatalogSnapshot, name: &str) -> HostError {
    HostError::ToolNotFound {
        name: name.to_owned(),
        available: snapshot.tool_names(),
    }
}

fn resolve<'a>(snapshot: &'a CatalogSnapshot, name: &str) -> Result<&'a CatalogTool, HostError> {
    if let Some(entry) = snapshot.tool(name) {
        return Ok(entry);
    }
    match snapshot.tool_collision(name) {
        Some(collision) => Err(HostError::Ambiguous {
            name: name.to_owned(),
            servers: collision.servers.iter().map(ToString::to_string).collect(),
        }),
        None => Err(not_found(snapshot, name)),
    }
}

/// One sending of a call.
struct Attempt<'a> {
    slot: &'a ServerSlot,
    info: &'a ToolCallInfo,
    idle: Duration,
    cap: Duration,
    on_progress: Option<ProgressCallback>,
}

impl Attempt<'_> {
    async fn send(&self) -> Result<CallToolResult, HostError> {
        let name = &self.info.name;
        let server = &self.info.server;
        let client = self.slot.client()?;
        let _permit = match &self.slot.in_flight {
            None => None,
            Some(limit) => {
                match tokio::time::timeout(self.idle, limit.clone().acquire_owned()).await {
                    Ok(Ok(permit)) => Some(permit),
                    Ok(Err(_)) => return Err(HostError::Closed),
                    Err(_) => {
                        return Err(HostError::Timeout {
                            tool: name.clone(),
                            server: server.clone(),
                            phase: TimeoutPhase::Queued,
                            after: self.idle,
                        });
                    }
                }
            }
        };
        let _in_flight = self.slot.calls.enter(self.info.clone());
        let mut params = CallToolRequestParams::new(&self.info.tool.name);
        params.arguments = self.info.arguments.as_object().cloned();
        let mut request = RequestOptions::new()
            .timeout(self.idle)
            .max_total(self.cap)
            .reset_on_progress(true)
            .with_progress_token();
        if let Some(forward) = self.on_progress.clone() {
            request = request.on_progress(move |p| forward(p));
        }
        let error = match client.call_tool_with(&params, request).await {
            Ok(result) if result.is_error() => {
                return Err(HostError::ToolFailed {
                    tool: name.clone(),
                    server: server.clone(),
                    result: Box::new(result),
                });
            }
            Ok(result) => return Ok(result),
            Err(error) => error,
        };
        Err(match error {
            SessionError::Timeout { after, .. } => HostError::Timeout {
                tool: name.clone(),
                server: server.clone(),
                phase: TimeoutPhase::Idle,
                after,
            },
            SessionError::MaxTotalExceeded { after, .. } => HostError::Timeout {
                tool: name.clone(),
                server: server.clone(),
                phase: TimeoutPhase::Total,
                after,
            },
            SessionError::Closed { reason, .. } => HostError::ServerUnavailable {
                server: server.clone(),
                cause: format!("the connection ended during the call: {reason}"),
                retry_in: None,
            },
            // The request did not reach the server (an HTTP connection refused): it may
            // be gone, which its supervisor checks now.
            SessionError::Transport { error, .. } => {
                self.slot.suspect();
                HostError::ServerUnavailable {
                    server: server.clone(),
                    cause: format!("the call could not reach the server: {error}"),
                    retry_in: None,
                }
            }
            error => HostError::Protocol {
                tool: name.clone(),
                server: server.clone(),
                error: Box::new(error),
            },
        })
    }
}
