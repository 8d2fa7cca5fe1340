//! Tools: `tools/list`, `tools/call` and their types.

mod write;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::ContentBlock;
use crate::implementation::Icon;
use crate::meta::{JsonObject, Meta};
use crate::meta2026::{CacheScope, ResultType};
use crate::mrtr::InputResponses;
use crate::pagination::Cursor;
use crate::tasks::TaskMetadata;

/// A tool the server offers.
///
/// `input_schema` and `output_schema` are kept verbatim (`$schema`, `$defs`, `$ref`,
/// `additionalProperties`, composition keywords...): this crate never rewrites schemas.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; its root is `type: "object"`. Read as `{}` when a
    /// server leaves it out, so one such tool does not make the whole list unreadable.
    #[serde(default)]
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent` (2025-06-18+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints (2025-03-26+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Execution properties (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Icons for display (2025-11-25+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for re-serialization.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl Tool {
    /// A tool with a name, a description and an input schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: JsonObject,
    ) -> Self {
        Tool {
            name: name.into(),
            description: Some(description.into()),
            input_schema,
            ..Default::default()
        }
    }

    /// The schema `{"type": "object"}`, for tools that take no arguments.
    pub fn empty_input_schema() -> JsonObject {
        let mut schema = JsonObject::new();
        schema.insert("type".to_owned(), Value::from("object"));
        schema
    }

    /// Sets the display title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the output schema.
    #[must_use]
    pub fn with_output_schema(mut self, schema: JsonObject) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the annotations.
    #[must_use]
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets `execution.taskSupport` (2025-11-25): whether a client may, or must, call the
    /// tool as a task.
    #[must_use]
    pub fn with_task_support(mut self, support: TaskSupport) -> Self {
        self.execution.get_or_insert_default().task_support = Some(support);
        self
    }

    /// The tool's `execution.taskSupport`; absent means forbidden.
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .and_then(|e| e.task_support)
            .unwrap_or_default()
    }

    /// The name to show: `title`, else `annotations.title`, else `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or(&self.name)
    }
}

/// Hints about a tool's behaviour. Untrusted unless the server is trusted.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// Modifications may be destructive (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world of external entities (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Execution properties of a tool (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool may or must be called as a task (absent means forbidden).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Whether a tool supports task-augmented calls (2025-11-25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never as a task (the default).
    #[default]
    Forbidden,
    /// With or without a task.
    Optional,
    /// Only as a task.
    Required,
}

/// Result of `tools/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// This page of tools.
    pub tools: Vec<Tool>,
    /// Cursor of the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `resultType` (2026-07-28): `complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// How long the client may cache this result, in milliseconds (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the cached result (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ListToolsResult {
    /// A single-page result.
    pub fn new(tools: Vec<Tool>) -> Self {
        ListToolsResult {
            tools,
            ..Default::default()
        }
    }
}

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// Tool name.
    pub name: String,
    /// Arguments, matching the tool's input schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Run as a task (2025-11-25, experimental).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata (e.g. `progressToken`).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Answers to the input requests of an earlier `input_required` result (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// `requestState` echoed from an earlier `input_required` result (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CallToolRequestParams {
    /// Params calling `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        CallToolRequestParams {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Sets the arguments.
    #[must_use]
    pub fn with_arguments(mut self, arguments: JsonObject) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// Result of `tools/call`.
///
/// Tool failures are results with `isError: true`, not JSON-RPC errors, so the model can
/// see them.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result (2025-06-18+): an object up to 2025-11-25, any JSON in 2026-07-28.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `resultType` (2026-07-28): `complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Content blocks sized as they arrive: one block (the common result) takes one slot,
/// not the four a `Vec` grows to on its first push (a block is a few hundred bytes).
struct ContentList(Vec<ContentBlock>);

impl<'de> Deserialize<'de> for ContentList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Blocks;
        impl<'de> serde::de::Visitor<'de> for Blocks {
            type Value = ContentList;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence of content blocks")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ContentList, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(64));
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(ContentList(blocks))
            }
        }
        deserializer.deserialize_seq(Blocks)
    }
}

/// A member of a `CallToolResult` object; any other name is kept for its `extra` map.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ResultMember {
    Content,
    StructuredContent,
    IsError,
    ResultType,
    #[serde(rename = "_meta")]
    Meta,
    Other(String),
}

/// Read field by field instead of through `#[serde(flatten)]`, which would buffer the
/// whole result (often the largest message of a session) before decoding it.
impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = CallToolResult;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a CallToolResult object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<CallToolResult, A::Error> {
                let mut content = None;
                let mut result = CallToolResult::default();
                while let Some(member) = map.next_key::<ResultMember>()? {
                    match member {
                        ResultMember::Content => {
                            content = Some(map.next_value::<ContentList>()?.0);
                        }
                        ResultMember::StructuredContent => {
                            result.structured_content = map.next_value()?;
                        }
                        ResultMember::IsError => result.is_error = map.next_value()?,
                        ResultMember::ResultType => result.result_type = map.next_value()?,
                        ResultMember::Meta => result.meta = map.next_value()?,
                        ResultMember::Other(key) => {
                            let value = map.next_value::<Value>()?;
                            result.extra.insert(key, value);
                        }
                    }
                }
                // Read as empty when absent, as the TypeScript SDK does: some servers
                // omit it when they return only `structuredContent`.
                result.content = content.unwrap_or_default();
                Ok(result)
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

impl CallToolResult {
    /// A successful result with these blocks.
    pub fn success(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::success(vec![ContentBlock::text(text)])
    }

    /// A failed result (`isError: true`) with one text block explaining the failure.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(message)],
            is_error: Some(true),
            ..Default::default()
        }
    }

    /// A structured result; its JSON text is also sent as a text block, as the spec
    /// recommends for clients that ignore `structuredContent`.
    pub fn structured(value: Value) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(value.to_string())],
            structured_content: Some(value),
            ..Default::default()
        }
    }

    /// Whether `isError` is true.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// About how many bytes the content carries: its text and its (base64) data, and a
    /// rough 256 for each block of another kind. A guide for sizing buffers.
    ///
    /// ```
    /// use mcpflow_protocol::CallToolResult;
    ///
    /// assert_eq!(CallToolResult::text("four").payload_len(), 4);
    /// ```
    pub fn payload_len(&self) -> usize {
        self.content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(t) => t.text.len(),
                ContentBlock::Image(i) => i.data.len(),
                ContentBlock::Audio(a) => a.data.len(),
                _ => 256,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn call_params_read_each_member_and_keep_unknown_ones() {
        let text = r#"{"_meta":{"progressToken":3},"name":"echo","arguments":{"a":[1]},"task":{"ttl":5},"vendor":true}"#;
        let from_text: CallToolRequestParams = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        let from_value: CallToolRequestParams = serde_json::from_value(value).unwrap();
        assert_eq!(from_text, from_value);
        assert_eq!(from_text.name, "echo");
        assert_eq!(from_text.arguments, json!({"a": [1]}).as_object().cloned());
        assert_eq!(from_text.task.and_then(|t| t.ttl), Some(5));
        assert_eq!(from_text.meta.unwrap()["progressToken"], json!(3));
        assert_eq!(from_text.extra["vendor"], json!(true));
        let null_args: CallToolRequestParams =
            serde_json::from_str(r#"{"name":"x","arguments":null}"#).unwrap();
        assert_eq!(null_args.arguments, None);
        let missing = serde_json::from_str::<CallToolRequestParams>(r#"{"arguments":{}}"#);
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("missing field `name`")
        );
        let wrong =
            serde_json::from_str::<CallToolRequestParams>(r#"{"name":"x","arguments":[1]}"#);
        assert!(wrong.is_err(), "arguments must be an object");
    }

    /// `CallToolResult` read by a derive with `#[serde(flatten)]`: what the hand-written
    /// visitor replaces, so it must decode to the same value.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Derived {
        #[serde(default)]
        content: Vec<ContentBlock>,
        structured_content: Option<Value>,
        is_error: Option<bool>,
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
        result_type: Option<ResultType>,
        #[serde(flatten)]
        extra: JsonObject,
    }

    #[test]
    fn result_decodes_as_the_derived_reader_would() {
        let cases = [
            r#"{"content":[{"type":"text","text":"a"}]}"#,
            r#"{"content":[{"type":"text","text":"a\n\"b\"\u0041"}],"isError":true}"#,
            r#"{"isError":false,"content":[{"text":"a","type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":"a"}],"isError":null}"#,
            r#" { "content" : [ ] , "cont\u0065nt2" : 1 } "#,
            r#"{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}"#,
            r#"{"content":[{"type":"text","text":"a","_meta":{"k":1}}],"_meta":{"k":2}}"#,
            r#"{"content":[{"type":"text","text":"a"}],"resultType":"complete"}"#,
            r#"{"content":[],"resultType":"input_required","requestState":"s"}"#,
            r#"{"content":[],"resultType":7}"#,
            r#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"aGk=","mimeType":"image/png"}]}"#,
            r#"{"content":[],"structuredContent":{"isError":true}}"#,
            r#"{"content":[],"structuredContent":"any json"}"#,
            r#"{"content":[],"structuredContent":null}"#,
            // Without `content`: read as empty, the unknown member kept.
            r#"{"contents":[{"type":"text","text":"a"}]}"#,
            // Not results: both readers must refuse them.
            r#"{"content":[{"type":"text","text":"a"}],"isError":"yes"}"#,
            r#"{"content":[{"type":"text","text":"a"}],"isError":1}"#,
            r#"{"content":[{"type":"text","text":12}]}"#,
            r#"{"content":null}"#,
            r#"{"content":{}}"#,
            r#"{"content":[],"_meta":[]}"#,
            r#"[{"type":"text","text":"a"}]"#,
            r#""content""#,
        ];
        for text in cases {
            let ours = serde_json::from_str::<CallToolResult>(text).map_err(drop);
            let derived = serde_json::from_str::<Derived>(text)
                .map(|d| CallToolResult {
                    content: d.content,
                    structured_content: d.structured_content,
                    is_error: d.is_error,
                    meta: d.meta,
                    result_type: d.result_type,
                    extra: d.extra,
                })
                .map_err(drop);
            assert_eq!(ours, derived, "{text}");
        }
    }

    #[test]
    fn constructors() {
        assert_eq!(
            serde_json::to_value(CallToolResult::error("boom")).expect("ser"),
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
        );
        let s = CallToolResult::structured(json!({"a": 1}));
        assert_eq!(s.content[0].as_text(), Some(r#"{"a":1}"#));
        let tool = Tool::new("t", "does t", Tool::empty_input_schema());
        assert_eq!(
            serde_json::to_value(&tool).expect("ser"),
            json!({"name": "t", "description": "does t", "inputSchema": {"type": "object"}})
        );
        assert_eq!(tool.display_name(), "t");
    }

    #[test]
    fn schema_kept_verbatim() {
        let v = json!({"name": "x", "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "$defs": {"p": {"type": "string"}}, "properties": {"p": {"$ref": "#/$defs/p"}},
            "additionalProperties": false}});
        let tool: Tool = serde_json::from_value(v.clone()).expect("de");
        assert_eq!(serde_json::to_value(&tool).expect("ser"), v);
    }

    /// Servers that leave out a required member are read as the TypeScript client
    /// reads them: `content` as `[]`, `inputSchema` as `{}`.
    #[test]
    fn a_result_without_content_and_a_tool_without_input_schema_are_read() {
        let result: CallToolResult =
            serde_json::from_value(json!({"structuredContent": {"n": 1}})).expect("result");
        assert!(result.content.is_empty());
        assert_eq!(result.structured_content, Some(json!({"n": 1})));
        let tool: Tool = serde_json::from_value(json!({"name": "bare"})).expect("tool");
        assert_eq!(tool.name, "bare");
        assert!(tool.input_schema.is_empty());
        // A result that is not an object is still refused.
        assert!(serde_json::from_value::<CallToolResult>(json!([1])).is_err());
    }
}
