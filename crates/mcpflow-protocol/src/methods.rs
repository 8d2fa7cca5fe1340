//! Method names and their params/result types, so the SDK can write
//! `session.request::<CallTool>(params)`.
//!
//! Each request or notification has a unit marker type implementing [`RequestMethod`] or
//! [`NotificationMethod`]; [`method`] lists the name strings.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::completion::{CompleteRequestParams, CompleteResult};
use crate::discover::DiscoverResult;
use crate::elicitation::{
    ElicitRequestParams, ElicitResult, ElicitationCompleteNotificationParams,
};
use crate::empty::{EmptyParams, EmptyResult};
use crate::initialize::{InitializeRequestParams, InitializeResult};
use crate::logging::{LoggingMessageNotificationParams, SetLevelRequestParams};
use crate::meta::JsonObject;
use crate::notifications::{CancelledNotificationParams, ProgressNotificationParams};
use crate::pagination::PaginatedRequestParams;
use crate::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, ResourceUpdatedNotificationParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::subscriptions::{
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};
use crate::tasks::{ListTasksResult, Task, TaskIdParams};
use crate::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};

/// A JSON-RPC request method: its name, params and result types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an MCP request method",
    note = "use a marker from `mcpflow_protocol::methods`, e.g. `CallTool`, or implement `RequestMethod`"
)]
pub trait RequestMethod {
    /// The method name, e.g. `tools/call`.
    const METHOD: &'static str;
    /// The params type.
    type Params: Serialize + DeserializeOwned + Send + 'static;
    /// The result type.
    type Result: Serialize + DeserializeOwned + Send + 'static;

    /// What the request mirrors of its params into the headers of 2026-07-28's HTTP
    /// transport. Nothing, unless the method names something (`tools/call`,
    /// `prompts/get`, `resources/read` and the tasks extension's methods do).
    ///
    /// ```
    /// use mcpflow_protocol::methods::{CallTool, ListTools, RequestMethod};
    /// use mcpflow_protocol::{CallToolRequestParams, PaginatedRequestParams};
    ///
    /// let call = CallToolRequestParams::new("weather");
    /// assert_eq!(CallTool::mirrored(&call).name, Some("weather"));
    /// assert_eq!(ListTools::mirrored(&PaginatedRequestParams::default()).name, None);
    /// ```
    fn mirrored(params: &Self::Params) -> MirroredParams<'_> {
        let _ = params;
        MirroredParams::default()
    }
}

/// What a request mirrors of its params into HTTP headers (2026-07-28): the name that
/// goes into `Mcp-Name`, and for `tools/call` the arguments whose `x-mcp-header`
/// properties go into `Mcp-Param-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MirroredParams<'a> {
    /// The tool or prompt name, the resource URI, or the task id.
    pub name: Option<&'a str>,
    /// The tool call's arguments.
    pub arguments: Option<&'a JsonObject>,
}

/// A JSON-RPC notification method: its name and params type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an MCP notification method",
    note = "use a marker from `mcpflow_protocol::methods`, e.g. `Progress`, or implement `NotificationMethod`"
)]
pub trait NotificationMethod {
    /// The method name, e.g. `notifications/progress`.
    const METHOD: &'static str;
    /// The params type.
    type Params: Serialize + DeserializeOwned + Send + 'static;
}

/// Method name strings.
pub mod method {
    /// `initialize` (client → server; handshake versions only).
    pub const INITIALIZE: &str = "initialize";
    /// `ping` (either direction).
    pub const PING: &str = "ping";
    /// `tools/list`.
    pub const TOOLS_LIST: &str = "tools/list";
    /// `tools/call`.
    pub const TOOLS_CALL: &str = "tools/call";
    /// `resources/list`.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// `resources/templates/list`.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// `resources/read`.
    pub const RESOURCES_READ: &str = "resources/read";
    /// `resources/subscribe`.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// `resources/unsubscribe`.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// `prompts/list`.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// `prompts/get`.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// `completion/complete`.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// `logging/setLevel`.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// `sampling/createMessage` (server → client).
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// `elicitation/create` (server → client).
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// `roots/list` (server → client).
    pub const ROOTS_LIST: &str = "roots/list";
    /// `tasks/get` (2025-11-25).
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/result` (2025-11-25).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// `tasks/list` (2025-11-25).
    pub const TASKS_LIST: &str = "tasks/list";
    /// `tasks/cancel` (2025-11-25).
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// `server/discover` (2026-07-28).
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// `subscriptions/listen` (2026-07-28).
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

    /// `notifications/initialized`.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// `notifications/progress`.
    pub const PROGRESS: &str = "notifications/progress";
    /// `notifications/cancelled`.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// `notifications/message`.
    pub const LOGGING_MESSAGE: &str = "notifications/message";
    /// `notifications/tools/list_changed`.
    pub const TOOL_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// `notifications/prompts/list_changed`.
    pub const PROMPT_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// `notifications/resources/list_changed`.
    pub const RESOURCE_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// `notifications/resources/updated`.
    pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";
    /// `notifications/roots/list_changed`.
    pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// `notifications/elicitation/complete` (2025-11-25).
    pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
    /// `notifications/tasks/status` (2025-11-25).
    pub const TASK_STATUS: &str = "notifications/tasks/status";
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

    /// Every request method name.
    pub const REQUESTS: &[&str] = &[
        INITIALIZE,
        PING,
        TOOLS_LIST,
        TOOLS_CALL,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
        LOGGING_SET_LEVEL,
        SAMPLING_CREATE_MESSAGE,
        ELICITATION_CREATE,
        ROOTS_LIST,
        TASKS_GET,
        TASKS_RESULT,
        TASKS_LIST,
        TASKS_CANCEL,
        SERVER_DISCOVER,
        SUBSCRIPTIONS_LISTEN,
    ];

    /// Every notification method name.
    pub const NOTIFICATIONS: &[&str] = &[
        INITIALIZED,
        PROGRESS,
        CANCELLED,
        LOGGING_MESSAGE,
        TOOL_LIST_CHANGED,
        PROMPT_LIST_CHANGED,
        RESOURCE_LIST_CHANGED,
        RESOURCE_UPDATED,
        ROOTS_LIST_CHANGED,
        ELICITATION_COMPLETE,
        TASK_STATUS,
        SUBSCRIPTIONS_ACKNOWLEDGED,
    ];
}

macro_rules! request_method {
    ($(#[$doc:meta])* $name:ident, $method:expr, $params:ty, $result:ty) => {
        request_method!($(#[$doc])* $name, $method, $params, $result, |_p| MirroredParams::default());
    };
    ($(#[$doc:meta])* $name:ident, $method:expr, $params:ty, $result:ty, |$p:ident| $mirrored:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;

        impl RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;

            fn mirrored($p: &Self::Params) -> MirroredParams<'_> {
                $mirrored
            }
        }
    };
}

macro_rules! notification_method {
    ($(#[$doc:meta])* $name:ident, $method:expr, $params:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;

        impl NotificationMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
        }
    };
}

request_method!(
    /// `initialize`: the handshake (2024-11-05 through 2025-11-25).
    Initialize, method::INITIALIZE, InitializeRequestParams, InitializeResult
);
request_method!(
    /// `ping`: liveness check, answered with `{}`.
    Ping, method::PING, EmptyParams, EmptyResult
);
request_method!(
    /// `tools/list`.
    ListTools, method::TOOLS_LIST, PaginatedRequestParams, ListToolsResult
);
request_method!(
    /// `tools/call`. A task-augmented call answers with
    /// [`CreateTaskResult`](crate::tasks::CreateTaskResult) instead.
    CallTool, method::TOOLS_CALL, CallToolRequestParams, CallToolResult,
    |p| MirroredParams { name: Some(&p.name), arguments: p.arguments.as_ref() }
);
request_method!(
    /// `resources/list`.
    ListResources, method::RESOURCES_LIST, PaginatedRequestParams, ListResourcesResult
);
request_method!(
    /// `resources/templates/list`.
    ListResourceTemplates, method::RESOURCES_TEMPLATES_LIST, PaginatedRequestParams,
    ListResourceTemplatesResult
);
request_method!(
    /// `resources/read`.
    ReadResource, method::RESOURCES_READ, ReadResourceRequestParams, ReadResourceResult,
    |p| MirroredParams { name: Some(&p.uri), arguments: None }
);
request_method!(
    /// `resources/subscribe`.
    Subscribe, method::RESOURCES_SUBSCRIBE, SubscribeRequestParams, EmptyResult
);
request_method!(
    /// `resources/unsubscribe`.
    Unsubscribe, method::RESOURCES_UNSUBSCRIBE, UnsubscribeRequestParams, EmptyResult
);
request_method!(
    /// `prompts/list`.
    ListPrompts, method::PROMPTS_LIST, PaginatedRequestParams, ListPromptsResult
);
request_method!(
    /// `prompts/get`.
    GetPrompt, method::PROMPTS_GET, GetPromptRequestParams, GetPromptResult,
    |p| MirroredParams { name: Some(&p.name), arguments: None }
);
request_method!(
    /// `completion/complete`.
    Complete, method::COMPLETION_COMPLETE, CompleteRequestParams, CompleteResult
);
request_method!(
    /// `logging/setLevel`.
    SetLevel, method::LOGGING_SET_LEVEL, SetLevelRequestParams, EmptyResult
);
request_method!(
    /// `sampling/createMessage` (server → client).
    CreateMessage, method::SAMPLING_CREATE_MESSAGE, CreateMessageRequestParams,
    CreateMessageResult
);
request_method!(
    /// `elicitation/create` (server → client).
    Elicit, method::ELICITATION_CREATE, ElicitRequestParams, ElicitResult
);
request_method!(
    /// `roots/list` (server → client).
    ListRoots, method::ROOTS_LIST, EmptyParams, ListRootsResult
);
request_method!(
    /// `tasks/get` (2025-11-25).
    GetTask, method::TASKS_GET, TaskIdParams, Task,
    |p| MirroredParams { name: Some(&p.task_id), arguments: None }
);
request_method!(
    /// `tasks/result` (2025-11-25): the underlying request's result, kept as an object;
    /// deserialize it as that request's result type.
    GetTaskPayload, method::TASKS_RESULT, TaskIdParams, JsonObject
);
request_method!(
    /// `tasks/list` (2025-11-25).
    ListTasks, method::TASKS_LIST, PaginatedRequestParams, ListTasksResult
);
request_method!(
    /// `tasks/cancel` (2025-11-25).
    CancelTask, method::TASKS_CANCEL, TaskIdParams, Task,
    |p| MirroredParams { name: Some(&p.task_id), arguments: None }
);
request_method!(
    /// `server/discover` (2026-07-28): params carry only the per-request `_meta`.
    Discover, method::SERVER_DISCOVER, EmptyParams, DiscoverResult
);
request_method!(
    /// `subscriptions/listen` (2026-07-28): answered only when the stream closes.
    SubscriptionsListen, method::SUBSCRIPTIONS_LISTEN, SubscriptionsListenRequestParams,
    SubscriptionsListenResult
);

notification_method!(
    /// `notifications/initialized`.
    Initialized, method::INITIALIZED, EmptyParams
);
notification_method!(
    /// `notifications/progress`.
    Progress, method::PROGRESS, ProgressNotificationParams
);
notification_method!(
    /// `notifications/cancelled`.
    Cancelled, method::CANCELLED, CancelledNotificationParams
);
notification_method!(
    /// `notifications/message`.
    LoggingMessage, method::LOGGING_MESSAGE, LoggingMessageNotificationParams
);
notification_method!(
    /// `notifications/tools/list_changed`.
    ToolListChanged, method::TOOL_LIST_CHANGED, EmptyParams
);
notification_method!(
    /// `notifications/prompts/list_changed`.
    PromptListChanged, method::PROMPT_LIST_CHANGED, EmptyParams
);
notification_method!(
    /// `notifications/resources/list_changed`.
    ResourceListChanged, method::RESOURCE_LIST_CHANGED, EmptyParams
);
notification_method!(
    /// `notifications/resources/updated`.
    ResourceUpdated, method::RESOURCE_UPDATED, ResourceUpdatedNotificationParams
);
notification_method!(
    /// `notifications/roots/list_changed`.
    RootsListChanged, method::ROOTS_LIST_CHANGED, EmptyParams
);
notification_method!(
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete, method::ELICITATION_COMPLETE, ElicitationCompleteNotificationParams
);
notification_method!(
    /// `notifications/tasks/status` (2025-11-25).
    TaskStatusNotification, method::TASK_STATUS, Task
);
notification_method!(
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged, method::SUBSCRIPTIONS_ACKNOWLEDGED,
    SubscriptionsAcknowledgedNotificationParams
);

#[cfg(test)]
mod tests {
    use super::*;

    fn name<M: RequestMethod>() -> &'static str {
        M::METHOD
    }

    #[test]
    fn names_are_listed_once() {
        assert_eq!(name::<CallTool>(), "tools/call");
        assert_eq!(
            <Progress as NotificationMethod>::METHOD,
            "notifications/progress"
        );
        let mut all: Vec<&str> = method::REQUESTS
            .iter()
            .chain(method::NOTIFICATIONS)
            .copied()
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }
}
