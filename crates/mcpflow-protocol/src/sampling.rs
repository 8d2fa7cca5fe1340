//! Sampling: `sampling/createMessage`, the server asking the client's LLM for a message.

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::ContentBlock;
use crate::meta::{JsonObject, Meta};
use crate::prompts::Role;
use crate::tasks::TaskMetadata;
use crate::tools::Tool;

/// Well-known `stopReason` values; peers may send others.
pub mod stop_reason {
    /// The model ended its turn.
    pub const END_TURN: &str = "endTurn";
    /// A stop sequence matched.
    pub const STOP_SEQUENCE: &str = "stopSequence";
    /// `maxTokens` was reached.
    pub const MAX_TOKENS: &str = "maxTokens";
    /// The model wants to call tools (2025-11-25).
    pub const TOOL_USE: &str = "toolUse";
}

/// Params of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Preferences for choosing a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// System prompt; the client may change or omit it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which MCP servers' context to include (values other than `none` are soft-deprecated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub temperature: Option<f64>,
    /// Most tokens to sample.
    pub max_tokens: u64,
    /// Sequences that stop sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata passed through to the LLM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may call (2025-11-25; needs `sampling.tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model should use the tools (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Run as a task (2025-11-25, experimental).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CreateMessageRequestParams {
    /// Params with these messages and a token limit.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        CreateMessageRequestParams {
            messages,
            max_tokens,
            ..Default::default()
        }
    }
}

/// Which servers' context the client should add to the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum IncludeContext {
    /// No context.
    None,
    /// Context from the requesting server.
    ThisServer,
    /// Context from all connected servers.
    AllServers,
}

/// How the model should use tools (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolChoice {
    /// `auto` (default), `required` or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Tool-use mode of [`ToolChoice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call tools.
    None,
}

/// Preferences for the client's model choice. Priorities range from 0 to 1.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, in order of preference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much to favour low cost.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub cost_priority: Option<f64>,
    /// How much to favour low latency.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub speed_priority: Option<f64>,
    /// How much to favour capability.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub intelligence_priority: Option<f64>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A model name hint (a substring such as `claude-3-sonnet`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelHint {
    /// Name or name fragment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingMessage {
    /// Speaker.
    pub role: Role,
    /// One block, or (2025-11-25+) several.
    pub content: SamplingContent,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl SamplingMessage {
    /// A message from `role` with one block.
    pub fn new(role: Role, content: ContentBlock) -> Self {
        SamplingMessage {
            role,
            content: SamplingContent::Single(content),
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// A user message with text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, ContentBlock::text(text))
    }

    /// An assistant message with text.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, ContentBlock::text(text))
    }
}

/// Content of a sampling message: a single block (every version) or an array
/// (2025-11-25+). Serializes in the form it was given.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(
    clippy::large_enum_variant,
    reason = "boxing the single block would make the common case awkward to match"
)]
pub enum SamplingContent {
    /// One block, sent as an object.
    Single(ContentBlock),
    /// Several blocks, sent as an array.
    Multiple(Vec<ContentBlock>),
}

impl SamplingContent {
    /// The blocks, whichever form they came in.
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            SamplingContent::Single(b) => std::slice::from_ref(b),
            SamplingContent::Multiple(v) => v,
        }
    }
}

impl From<ContentBlock> for SamplingContent {
    fn from(block: ContentBlock) -> Self {
        SamplingContent::Single(block)
    }
}

impl From<Vec<ContentBlock>> for SamplingContent {
    fn from(blocks: Vec<ContentBlock>) -> Self {
        SamplingContent::Multiple(blocks)
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if value.is_array() {
            serde_json::from_value(value)
                .map(SamplingContent::Multiple)
                .map_err(serde::de::Error::custom)
        } else {
            serde_json::from_value(value)
                .map(SamplingContent::Single)
                .map_err(serde::de::Error::custom)
        }
    }
}

/// Result of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Speaker (normally `assistant`).
    pub role: Role,
    /// The sampled content.
    pub content: SamplingContent,
    /// Name of the model that produced it.
    pub model: String,
    /// Why sampling stopped; see [`stop_reason`] for known values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CreateMessageResult {
    /// An assistant text answer from `model`, stopped at end of turn.
    pub fn assistant_text(model: impl Into<String>, text: impl Into<String>) -> Self {
        CreateMessageResult {
            role: Role::Assistant,
            content: SamplingContent::Single(ContentBlock::text(text)),
            model: model.into(),
            stop_reason: Some(stop_reason::END_TURN.to_owned()),
            meta: None,
            extra: JsonObject::new(),
        }
    }
}
