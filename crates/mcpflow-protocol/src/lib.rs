//! Wire types of the Model Context Protocol.
//!
//! Pure data: no I/O and no async runtime. The SDK crate `mcpflow` moves these types
//! over transports; this crate only describes them.
//!
//! Types follow MCP 2025-11-25 and 2026-07-28 and read what 2025-06-18, 2025-03-26 and
//! 2024-11-05 peers send (fields newer than a version are `Option`). Unknown fields are
//! kept in each type's `extra` map and written back. The 2026-07-28 per-request `_meta`
//! keys stay in `_meta` ([`RequestMeta`] reads them); `resultType` is typed on the
//! results that carry cache hints or may ask for input, and kept in `extra` elsewhere.
//!
//! # Layout
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope ([`Message`]), request ids and error codes.
//! - [`version`]: [`ProtocolVersion`] and version negotiation.
//! - [`meta`]: `_meta` maps ([`Meta`]) and [`ProgressToken`].
//! - [`methods`]: [`RequestMethod`] / [`NotificationMethod`], one marker per method, and
//!   the [`method`](methods::method) name constants.
//! - [`empty`]: [`EmptyParams`] and [`EmptyResult`].
//! - [`pagination`]: [`PaginatedRequestParams`] and [`Cursor`].
//! - [`capabilities`]: [`ClientCapabilities`], [`ServerCapabilities`].
//! - [`implementation`]: [`Implementation`], [`Icon`].
//! - [`initialize`]: the handshake params and result.
//! - [`notifications`]: progress, cancellation and list-changed params.
//! - [`content`]: [`ContentBlock`] and its kinds, [`Annotations`].
//! - [`tools`]: [`Tool`], `tools/list`, `tools/call`.
//! - [`resources`]: [`Resource`], templates, reading, subscriptions.
//! - [`prompts`]: [`Prompt`], `prompts/get`, [`Role`].
//! - [`completion`]: argument completion (`completion/complete`).
//! - [`logging`]: [`LoggingLevel`], `logging/setLevel`, `notifications/message`.
//! - [`sampling`]: LLM sampling through the client (`sampling/createMessage`).
//! - [`elicitation`]: `elicitation/create` (form and URL modes).
//! - [`roots`]: the client's filesystem roots (`roots/list`).
//! - [`tasks`]: 2025-11-25 tasks (experimental).
//! - [`tasks2026`]: 2026-07-28 tasks, the `io.modelcontextprotocol/tasks` extension.
//! - [`meta2026`]: 2026-07-28 per-request `_meta` keys, [`ResultType`], [`CacheScope`].
//! - [`discover`]: `server/discover` (2026-07-28).
//! - [`subscriptions`]: `subscriptions/listen` and its acknowledgement (2026-07-28).
//! - [`mrtr`]: multi-round-trip requests, `input_required` results (2026-07-28).
//! - [`elicitation_schema`]: the primitive schemas of an elicitation form.

mod json_text;
pub mod jsonrpc;

pub mod capabilities;
pub mod completion;
pub mod content;
pub mod discover;
pub mod elicitation;
pub mod elicitation_schema;
pub mod empty;
pub mod implementation;
pub mod initialize;
pub mod logging;
pub mod meta;
pub mod meta2026;
pub mod methods;
pub mod mrtr;
pub mod notifications;
mod number;
pub mod pagination;
pub mod prompts;
pub mod resources;
pub mod roots;
pub mod sampling;
pub mod subscriptions;
pub mod tasks;
pub mod tasks2026;
pub mod tools;
pub mod version;

pub use jsonrpc::{ErrorCode, ErrorObject, Message, RequestId};

pub use capabilities::{ClientCapabilities, ServerCapabilities};
pub use completion::{CompleteRequestParams, CompleteResult, CompletionReference};
pub use content::{Annotations, ContentBlock};
pub use discover::DiscoverResult;
pub use elicitation::{
    ElicitAction, ElicitRequestParams, ElicitResult, ElicitationCompleteNotificationParams,
    UrlElicitationRequired,
};
pub use empty::{EmptyParams, EmptyResult};
pub use implementation::{Icon, Implementation};
pub use initialize::{InitializeRequestParams, InitializeResult};
pub use logging::{LoggingLevel, LoggingMessageNotificationParams, SetLevelRequestParams};
pub use meta::{JsonObject, Meta, ProgressToken};
pub use meta2026::{CacheScope, RequestMeta, ResultMeta, ResultType};
pub use methods::{MirroredParams, NotificationMethod, RequestMethod};
pub use mrtr::{
    InputRequest, InputRequests, InputRequiredResult, InputResponse, InputResponses,
    MaybeInputRequired,
};
pub use notifications::{CancelledNotificationParams, ProgressNotificationParams};
pub use pagination::{Cursor, PaginatedRequestParams};
pub use prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage, Role,
};
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParams, SubscribeRequestParams,
};
pub use roots::{ListRootsResult, Root};
pub use sampling::{
    CreateMessageRequestParams, CreateMessageResult, SamplingContent, SamplingMessage,
};
pub use subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
pub use tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations};
pub use version::{HANDSHAKE_VERSIONS, LATEST_HANDSHAKE, PER_REQUEST_VERSIONS, ProtocolVersion};
