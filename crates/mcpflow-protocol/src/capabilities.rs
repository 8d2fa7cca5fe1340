//! Client and server capabilities, exchanged in `initialize`.
//!
//! Every field is optional: a capability is on when its object is present (`"logging": {}`).
//! Unknown capabilities (and 2026-07-28 additions this crate does not type yet) are kept
//! in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::JsonObject;

/// What a client offers the server.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Non-standard capabilities, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// The client can list filesystem roots (`roots/list`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// The client can sample an LLM (`sampling/createMessage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// The client can ask its user for input (`elicitation/create`, 2025-06-18+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Task-augmented requests the client accepts (2025-11-25, experimental).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksCapability>,
    /// Extensions, by identifier (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Fields this crate does not know, kept for re-serialization.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ClientCapabilities {
    /// Declares `roots`, with `listChanged` when `list_changed` is true.
    #[must_use]
    pub fn with_roots(mut self, list_changed: bool) -> Self {
        self.roots = Some(RootsCapability {
            list_changed: list_changed.then_some(true),
            ..Default::default()
        });
        self
    }

    /// Declares `sampling: {}`.
    #[must_use]
    pub fn with_sampling(mut self) -> Self {
        self.sampling = Some(SamplingCapability::default());
        self
    }

    /// Declares `elicitation: {}` (form mode only, understood by every version).
    #[must_use]
    pub fn with_elicitation(mut self) -> Self {
        self.elicitation = Some(ElicitationCapability::default());
        self
    }

    /// Whether the client accepts URL-mode elicitation (2025-11-25).
    pub fn supports_url_elicitation(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }

    /// Whether the client accepts form-mode elicitation. `elicitation: {}` means form.
    pub fn supports_form_elicitation(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }
}

/// What a server offers the client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Non-standard capabilities, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// The server sends log messages (`notifications/message`, `logging/setLevel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// The server completes arguments (`completion/complete`, 2025-03-26+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// The server offers prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// The server offers resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server offers tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Task-augmented requests the server accepts (2025-11-25, experimental).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksCapability>,
    /// Extensions, by identifier (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Fields this crate does not know, kept for re-serialization.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ServerCapabilities {
    /// Declares `tools`, with `listChanged` when `list_changed` is true.
    #[must_use]
    pub fn with_tools(mut self, list_changed: bool) -> Self {
        self.tools = Some(ToolsCapability {
            list_changed: list_changed.then_some(true),
            ..Default::default()
        });
        self
    }

    /// Declares `prompts`, with `listChanged` when `list_changed` is true.
    #[must_use]
    pub fn with_prompts(mut self, list_changed: bool) -> Self {
        self.prompts = Some(PromptsCapability {
            list_changed: list_changed.then_some(true),
            ..Default::default()
        });
        self
    }

    /// Declares `resources`, with `subscribe` / `listChanged` when true.
    #[must_use]
    pub fn with_resources(mut self, subscribe: bool, list_changed: bool) -> Self {
        self.resources = Some(ResourcesCapability {
            subscribe: subscribe.then_some(true),
            list_changed: list_changed.then_some(true),
            ..Default::default()
        });
        self
    }

    /// Declares `logging: {}`.
    #[must_use]
    pub fn with_logging(mut self) -> Self {
        self.logging = Some(JsonObject::new());
        self
    }

    /// Declares `completions: {}`.
    #[must_use]
    pub fn with_completions(mut self) -> Self {
        self.completions = Some(JsonObject::new());
        self
    }
}

/// `roots` client capability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// The client sends `notifications/roots/list_changed` (gone in 2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `sampling` client capability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingCapability {
    /// The client honours `includeContext` other than `none` (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// The client accepts `tools` / `toolChoice` (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `elicitation` client capability. An empty object means form mode only.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCapability {
    /// Form mode (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `prompts` server capability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// The server sends `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `resources` server capability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// The server accepts `resources/subscribe`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server sends `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `tools` server capability.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// The server sends `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `tasks` capability (2025-11-25, experimental), on either side.
///
/// `requests` differs by side (`{tools: {call}}` on servers, `{sampling: {createMessage},
/// elicitation: {create}}` on clients) and is kept as an object; see
/// [`TasksCapability::accepts`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TasksCapability {
    /// The peer serves `tasks/list`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<JsonObject>,
    /// The peer serves `tasks/cancel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<JsonObject>,
    /// The request kinds the peer accepts as tasks, e.g. `{"tools": {"call": {}}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<JsonObject>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl TasksCapability {
    /// Whether `requests.<group>.<name>` is declared, e.g. `accepts("tools", "call")`.
    pub fn accepts(&self, group: &str, name: &str) -> bool {
        self.requests
            .as_ref()
            .and_then(|r| r.get(group))
            .and_then(Value::as_object)
            .is_some_and(|g| g.contains_key(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builders_serialize_compactly() {
        let caps = ServerCapabilities::default()
            .with_tools(true)
            .with_resources(true, false)
            .with_logging();
        assert_eq!(
            serde_json::to_value(&caps).expect("ser"),
            json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}, "logging": {}})
        );
        let client = ClientCapabilities::default()
            .with_roots(false)
            .with_elicitation();
        assert!(client.supports_form_elicitation());
        assert!(!client.supports_url_elicitation());
    }

    #[test]
    fn tasks_requests_lookup() {
        let caps: ServerCapabilities =
            serde_json::from_value(json!({"tasks": {"requests": {"tools": {"call": {}}}}}))
                .expect("de");
        let tasks = caps.tasks.expect("tasks");
        assert!(tasks.accepts("tools", "call"));
        assert!(!tasks.accepts("sampling", "createMessage"));
    }
}
