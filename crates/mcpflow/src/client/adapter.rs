//! The era a connection speaks, chosen once by [`connect`](super::ClientBuilder::connect):
//! [`EraAdapter`]. Every client call whose wire form differs between the eras asks it, so
//! the calls themselves never look at the era. The handshake era's ways are written here
//! (each is the plain request of 2025-11-25 and before); the per-request era's live in
//! [`PerRequest`].

use std::time::Duration;

use mcpflow_protocol::discover::DiscoverResult;
use mcpflow_protocol::methods::{self, method};
use mcpflow_protocol::resources::SubscribeRequestParams;
use mcpflow_protocol::tasks::{ListTasksResult, Task, TaskIdParams};
use mcpflow_protocol::tasks2026::DetailedTask;
use mcpflow_protocol::{
    CallToolRequestParams, CallToolResult, EmptyParams, ErrorCode, ErrorObject, LoggingLevel,
    MirroredParams, PaginatedRequestParams, RequestMethod, SetLevelRequestParams,
};
use serde_json::value::RawValue;

use super::ClientHandle;
use super::mrtr::Resumable;
use super::per_request::PerRequest;
use super::tasks::{self, TaskStart};
use crate::error::SessionError;
use crate::session::RequestOptions;

/// How one connection speaks to its server.
pub(crate) enum EraAdapter {
    /// `initialize` ran: the requests of 2025-11-25 and before, on a connection that
    /// remembers the handshake.
    Handshake,
    /// 2026-07-28: every request carries the per-request envelope.
    PerRequest(Box<PerRequest>),
}

/// The era of a connection until `connect` has found it.
pub(super) static HANDSHAKE: EraAdapter = EraAdapter::Handshake;

impl EraAdapter {
    /// The server's `server/discover` result, in the per-request era.
    pub(super) fn discovered(&self) -> Option<&DiscoverResult> {
        match self {
            EraAdapter::Handshake => None,
            EraAdapter::PerRequest(era) => Some(era.discovered()),
        }
    }

    /// The answer to a request the server sent, when this era has no such requests:
    /// in the per-request era a server asks for input with `input_required`, and the
    /// client's callbacks answer only that.
    pub(super) fn refuse_server_request(&self, method: &str) -> Option<ErrorObject> {
        match self {
            EraAdapter::Handshake => None,
            EraAdapter::PerRequest(_) => Some(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "`{method}`: a 2026-07-28 server sends no requests; it asks for input with an `input_required` result"
                ),
            )),
        }
    }

    /// `options` for a request whose params name `mirrored`: in the per-request era, with
    /// what its HTTP headers mirror of them.
    pub(super) fn mirror(
        &self,
        handle: &ClientHandle,
        mirrored: MirroredParams<'_>,
        options: RequestOptions,
    ) -> RequestOptions {
        match self {
            EraAdapter::Handshake => options.subject(mirrored.name),
            EraAdapter::PerRequest(era) => era.mirror(handle, mirrored, options),
        }
    }

    /// A liveness check: `ping`, or `server/discover` (2026-07-28 has no `ping`).
    pub(super) async fn ping(&self, handle: &ClientHandle) -> Result<(), SessionError> {
        match self {
            EraAdapter::Handshake => handle
                .request::<methods::Ping>(&EmptyParams::default(), RequestOptions::new())
                .await
                .map(drop),
            EraAdapter::PerRequest(era) => era.ping(handle).await,
        }
    }

    /// `tools/call`; in the per-request era with its `input_required` rounds.
    pub(super) async fn call_tool(
        &self,
        handle: &ClientHandle,
        params: &CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult, SessionError> {
        match self {
            EraAdapter::Handshake => handle.request::<methods::CallTool>(params, options).await,
            EraAdapter::PerRequest(era) => era.call_tool(handle, params, options).await,
        }
    }

    /// A request the server may answer `input_required` (`resources/read`,
    /// `prompts/get`): in the per-request era, with its rounds.
    pub(super) async fn resumable<M>(
        &self,
        handle: &ClientHandle,
        params: &M::Params,
    ) -> Result<M::Result, SessionError>
    where
        M: RequestMethod,
        M::Params: Resumable,
    {
        match self {
            EraAdapter::Handshake => handle.request::<M>(params, RequestOptions::new()).await,
            EraAdapter::PerRequest(era) => era.resumable::<M>(handle, params).await,
        }
    }

    /// `resources/subscribe`, or `uri` joins the listen stream's filter.
    pub(super) async fn subscribe(
        &self,
        handle: &ClientHandle,
        uri: &str,
    ) -> Result<(), SessionError> {
        match self {
            EraAdapter::Handshake => handle
                .request::<methods::Subscribe>(
                    &SubscribeRequestParams::new(uri),
                    RequestOptions::new(),
                )
                .await
                .map(drop),
            EraAdapter::PerRequest(era) => era.subscribe(handle, uri).await,
        }
    }

    /// `resources/unsubscribe`, or `uri` leaves the listen stream's filter.
    pub(super) async fn unsubscribe(
        &self,
        handle: &ClientHandle,
        uri: &str,
    ) -> Result<(), SessionError> {
        match self {
            EraAdapter::Handshake => handle
                .request::<methods::Unsubscribe>(
                    &SubscribeRequestParams::new(uri),
                    RequestOptions::new(),
                )
                .await
                .map(drop),
            EraAdapter::PerRequest(era) => era.unsubscribe(handle, uri).await,
        }
    }

    /// `logging/setLevel`, or the level every later request's envelope asks for.
    pub(super) async fn set_logging_level(
        &self,
        handle: &ClientHandle,
        level: LoggingLevel,
    ) -> Result<(), SessionError> {
        match self {
            EraAdapter::Handshake => handle
                .request::<methods::SetLevel>(
                    &SetLevelRequestParams::new(level),
                    RequestOptions::new(),
                )
                .await
                .map(drop),
            EraAdapter::PerRequest(era) => {
                era.set_logging_level(handle, level);
                Ok(())
            }
        }
    }

    /// A tool call as a task: with a `task` param, or declaring the tasks extension.
    pub(super) async fn start_tool_task(
        &self,
        handle: &ClientHandle,
        params: CallToolRequestParams,
        ttl: Option<Duration>,
    ) -> Result<TaskStart, SessionError> {
        match self {
            EraAdapter::Handshake => tasks::start(handle, params, ttl).await,
            // 2026-07-28 has no way to ask for a lifetime: the server decides.
            EraAdapter::PerRequest(era) => era.start_tool_task(handle, &params).await,
        }
    }

    /// `tasks/get`, in the 2025-11-25 shape.
    pub(super) async fn get_task(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<Task, SessionError> {
        match self {
            EraAdapter::Handshake => {
                handle
                    .request::<methods::GetTask>(&TaskIdParams::new(task_id), RequestOptions::new())
                    .await
            }
            EraAdapter::PerRequest(era) => era.get_task(handle, task_id).await,
        }
    }

    /// `tasks/get` as 2026-07-28 shows a task.
    pub(super) async fn task_details(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<DetailedTask, SessionError> {
        match self {
            EraAdapter::Handshake => Err(SessionError::Codec {
                method: method::TASKS_GET.into(),
                detail: "task details are 2026-07-28's; use get_task and task_result".to_owned(),
            }),
            EraAdapter::PerRequest(era) => era.task_details(handle, task_id).await,
        }
    }

    /// `tasks/result` (2025-11-25 only).
    pub(super) async fn task_result(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<CallToolResult, SessionError> {
        match self {
            EraAdapter::Handshake => tasks::result(handle, task_id).await,
            EraAdapter::PerRequest(_) => Err(removed_task_method(method::TASKS_RESULT)),
        }
    }

    /// `tasks/list` (2025-11-25 only).
    pub(super) async fn list_tasks(
        &self,
        handle: &ClientHandle,
        params: &PaginatedRequestParams,
    ) -> Result<ListTasksResult, SessionError> {
        match self {
            EraAdapter::Handshake => {
                handle
                    .request::<methods::ListTasks>(params, RequestOptions::new())
                    .await
            }
            EraAdapter::PerRequest(_) => Err(removed_task_method(method::TASKS_LIST)),
        }
    }

    /// `tasks/cancel`, and the task as it is then.
    pub(super) async fn cancel_task(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<Task, SessionError> {
        match self {
            EraAdapter::Handshake => {
                handle
                    .request::<methods::CancelTask>(
                        &TaskIdParams::new(task_id),
                        RequestOptions::new(),
                    )
                    .await
            }
            EraAdapter::PerRequest(era) => era.cancel_task(handle, task_id).await,
        }
    }

    /// Wait, without a deadline, until the task ends, answering what it asks.
    pub(super) async fn wait_task(
        &self,
        handle: &ClientHandle,
        task_id: &str,
    ) -> Result<CallToolResult, SessionError> {
        match self {
            EraAdapter::Handshake => tasks::wait(handle, task_id).await,
            EraAdapter::PerRequest(era) => era.wait_task(handle, task_id).await,
        }
    }

    /// Note a `notifications/subscriptions/acknowledged` (on the reader: never blocks).
    /// Whether it confirmed a listen stream opened again, so that changes may have gone
    /// unannounced in between.
    pub(super) fn listen_acknowledged(&self, params: Option<&RawValue>) -> bool {
        match self {
            EraAdapter::Handshake => false,
            EraAdapter::PerRequest(era) => era.listen_acknowledged(params),
        }
    }

    /// Stop what the era keeps running beside the connection (the listen stream).
    pub(super) async fn close(&self) {
        if let EraAdapter::PerRequest(era) = self {
            era.close().await;
        }
    }
}

/// The refusal of a 2025-11-25 task method that 2026-07-28 removed.
fn removed_task_method(method: &str) -> SessionError {
    SessionError::Codec {
        method: method.to_owned().into(),
        detail: format!(
            "`{method}` does not exist on a 2026-07-28 connection (the \
             io.modelcontextprotocol/tasks extension): use await_task, or connect with \
             Era::Handshake"
        ),
    }
}
