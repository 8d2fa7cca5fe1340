//! Tools: `tools/list`, `tools/call` and their types.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::ContentBlock;
use crate::implementation::Icon;
use crate::meta::{JsonObject, Meta};
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
    /// JSON Schema of the arguments; its root is `type: "object"`.
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
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
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
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A member name of a message read field by field: a known one without allocating, any
/// other kept for the `extra` map.
enum Member<K> {
    Known(K),
    Other(String),
}

impl<'de, K: KnownMember> Deserialize<'de> for Member<K> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name<K>(std::marker::PhantomData<K>);
        impl<K: KnownMember> serde::de::Visitor<'_> for Name<K> {
            type Value = Member<K>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Member<K>, E> {
                Ok(
                    K::from_name(name)
                        .map_or_else(|| Member::Other(name.to_owned()), Member::Known),
                )
            }
            fn visit_string<E: serde::de::Error>(self, name: String) -> Result<Member<K>, E> {
                Ok(K::from_name(&name).map_or(Member::Other(name), Member::Known))
            }
        }
        deserializer.deserialize_identifier(Name(std::marker::PhantomData))
    }
}

/// The members a hand-written visitor knows by name.
trait KnownMember: Sized {
    fn from_name(name: &str) -> Option<Self>;
}

enum CallToolMember {
    Name,
    Arguments,
    Task,
    Meta,
}

impl KnownMember for CallToolMember {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "name" => CallToolMember::Name,
            "arguments" => CallToolMember::Arguments,
            "task" => CallToolMember::Task,
            "_meta" => CallToolMember::Meta,
            _ => return None,
        })
    }
}

/// Read field by field instead of through `#[serde(flatten)]`, which would buffer every
/// argument before decoding it: this runs for every tool call a server answers.
impl<'de> Deserialize<'de> for CallToolRequestParams {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = CallToolRequestParams;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a CallToolRequestParams object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<CallToolRequestParams, A::Error> {
                let mut name = None;
                let mut params = CallToolRequestParams::default();
                while let Some(member) = map.next_key::<Member<CallToolMember>>()? {
                    match member {
                        Member::Known(CallToolMember::Name) => name = Some(map.next_value()?),
                        Member::Known(CallToolMember::Arguments) => {
                            params.arguments = map.next_value()?;
                        }
                        Member::Known(CallToolMember::Task) => params.task = map.next_value()?,
                        Member::Known(CallToolMember::Meta) => params.meta = map.next_value()?,
                        Member::Other(key) => {
                            let value = map.next_value::<Value>()?;
                            params.extra.insert(key, value);
                        }
                    }
                }
                params.name = name.ok_or_else(|| serde::de::Error::missing_field("name"))?;
                Ok(params)
            }
        }
        deserializer.deserialize_map(Fields)
    }
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

/// The text and `isError` of a result written exactly as [`CallToolResult::write_json`]
/// writes one plain text block: `{"content":[{"type":"text","text":LITERAL}]}`, maybe
/// with `,"isError":BOOL` after the list. `LITERAL` must parse as one JSON string, so
/// what matches is a well-formed result of that shape; anything else is `None`.
fn small_plain_text(result: &str) -> Option<(String, Option<bool>)> {
    let rest = result.strip_prefix(PLAIN_TEXT_HEAD)?;
    let (literal, is_error) = [None, Some(false), Some(true)]
        .into_iter()
        .find_map(|is_error| Some((rest.strip_suffix(plain_text_tail(is_error))?, is_error)))?;
    let text = serde_json::from_str::<String>(literal).ok()?;
    Some((text, is_error))
}

/// What comes before the text's string literal in a result of one plain text block, as
/// this crate writes it.
const PLAIN_TEXT_HEAD: &str = r#"{"content":[{"type":"text","text":"#;

/// What comes after the text's string literal in a result of one plain text block with
/// this `isError`, as this crate writes it.
fn plain_text_tail(is_error: Option<bool>) -> &'static str {
    match is_error {
        None => "}]}",
        Some(false) => r#"}],"isError":false}"#,
        Some(true) => r#"}],"isError":true}"#,
    }
}

/// A result at least this long is decoded in place by [`CallToolResult::from_json_in`];
/// below it, a copy costs less than a second look at the result.
const LARGE_TEXT_BYTES: usize = 64 * 1024;

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
    /// Fields this crate does not know (e.g. 2026-07-28 `resultType`).
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

enum ResultMember {
    Content,
    StructuredContent,
    IsError,
    Meta,
}

impl KnownMember for ResultMember {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "content" => ResultMember::Content,
            "structuredContent" => ResultMember::StructuredContent,
            "isError" => ResultMember::IsError,
            "_meta" => ResultMember::Meta,
            _ => return None,
        })
    }
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
                while let Some(member) = map.next_key::<Member<ResultMember>>()? {
                    match member {
                        Member::Known(ResultMember::Content) => {
                            content = Some(map.next_value::<ContentList>()?.0);
                        }
                        Member::Known(ResultMember::StructuredContent) => {
                            result.structured_content = map.next_value()?;
                        }
                        Member::Known(ResultMember::IsError) => {
                            result.is_error = map.next_value()?
                        }
                        Member::Known(ResultMember::Meta) => result.meta = map.next_value()?,
                        Member::Other(key) => {
                            let value = map.next_value::<Value>()?;
                            result.extra.insert(key, value);
                        }
                    }
                }
                result.content =
                    content.ok_or_else(|| serde::de::Error::missing_field("content"))?;
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

    /// This result as compact JSON, consuming it: the bytes [`write_json`](Self::write_json)
    /// writes. A result that is one plain text block (no annotations or metadata) with
    /// nothing else but `isError` is written inside the text's own buffer, so a large
    /// text costs no second buffer of its size; any other result is written into a
    /// buffer sized for its text and data.
    ///
    /// # Errors
    /// As [`write_json`](Self::write_json).
    ///
    /// ```
    /// use mcpflow_protocol::CallToolResult;
    ///
    /// let result = CallToolResult::text("line one\nline \"two\"");
    /// let expected = serde_json::to_vec(&result)?;
    /// assert_eq!(result.into_json()?, expected);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn into_json(mut self) -> Result<Vec<u8>, serde_json::Error> {
        let plain = self.content.len() == 1
            && self.structured_content.is_none()
            && self.meta.is_none()
            && self.extra.is_empty()
            && matches!(
                &self.content[0],
                ContentBlock::Text(t) if t.annotations.is_none() && t.meta.is_none() && t.extra.is_empty()
            );
        if plain && let Some(ContentBlock::Text(text)) = self.content.pop() {
            return Ok(crate::json_text::wrap_in_place(
                text.text,
                PLAIN_TEXT_HEAD.as_bytes(),
                plain_text_tail(self.is_error).as_bytes(),
            ));
        }
        let payload = self.payload_len();
        // Room for the envelope and a few escapes; more escapes just grow the buffer.
        let mut out = Vec::with_capacity(payload + payload / 64 + 4096);
        self.write_json(&mut out)?;
        Ok(out)
    }

    /// Decode the result that lies at `json[range]` (a response's `result` inside the
    /// frame it came in, say), taking `json`'s buffer for the text when the result is one
    /// large plain text block: the text is unescaped into the front of the buffer, so a
    /// 10 MiB result costs no second 10 MiB. A small one laid out as
    /// [`write_json`](Self::write_json) writes it is read from its head and tail. Any
    /// other result decodes as `serde_json::from_str(&json[range])` does, to the same
    /// value.
    ///
    /// # Errors
    /// When `json[range]` is not a `CallToolResult` (or `range` is not within `json`).
    ///
    /// ```
    /// use mcpflow_protocol::CallToolResult;
    ///
    /// let frame = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\nb"}]}}"#;
    /// let start = frame.find(r#"{"content""#).unwrap();
    /// let result = CallToolResult::from_json_in(frame.to_owned(), start..frame.len() - 1)?;
    /// assert_eq!(result, CallToolResult::text("a\nb"));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_json_in(json: String, range: Range<usize>) -> Result<Self, serde_json::Error> {
        use serde::de::Error as _;
        let Some(result) = json.get(range.clone()) else {
            return Err(serde_json::Error::custom(
                "the result's range is not in its text",
            ));
        };
        // A small result as `write_json` writes one plain text block: its text is the
        // one string literal between the head and the tail, read in one pass.
        if range.len() < LARGE_TEXT_BYTES
            && let Some((text, is_error)) = small_plain_text(result)
        {
            return Ok(CallToolResult {
                is_error,
                ..CallToolResult::text(text)
            });
        }
        // The one shape decoded in place: anything else (annotations, `_meta`, more
        // blocks, structured content, unknown members, duplicates) fails here.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct PlainText<'a> {
            #[serde(rename = "type", borrow)]
            kind: &'a str,
            #[serde(borrow)]
            text: &'a serde_json::value::RawValue,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct Plain<'a> {
            #[serde(borrow)]
            content: [PlainText<'a>; 1],
            #[serde(default)]
            is_error: Option<bool>,
        }
        // Where the text's literal lies in `json`, for a large result of that shape.
        let plain = (range.len() >= LARGE_TEXT_BYTES)
            .then(|| serde_json::from_str::<Plain<'_>>(result).ok())
            .flatten()
            .and_then(
                |Plain {
                     content: [block],
                     is_error,
                 }| {
                    let literal = block.text.get();
                    (block.kind == "text" && literal.starts_with('"')).then_some(())?;
                    let start = literal.as_ptr().addr().checked_sub(json.as_ptr().addr())?;
                    Some((start..start + literal.len(), is_error))
                },
            );
        let Some((literal, is_error)) = plain else {
            return serde_json::from_str(result);
        };
        let text = crate::json_unescape::unwrap_in_place(json, literal)
            .map_err(serde_json::Error::custom)?;
        Ok(CallToolResult {
            is_error,
            ..CallToolResult::text(text)
        })
    }

    /// Append this result as compact JSON to `out`: the bytes `serde_json::to_writer`
    /// writes, with the text of plain text blocks escaped a chunk at a time instead of
    /// a byte at a time (several times faster for long runs without escapes, about the
    /// same for text dense with them).
    ///
    /// # Errors
    /// When a member's `Serialize` implementation fails (it does not for values read
    /// from JSON).
    ///
    /// ```
    /// use mcpflow_protocol::CallToolResult;
    ///
    /// let result = CallToolResult::text("line one\nline \"two\"");
    /// let mut out = Vec::new();
    /// result.write_json(&mut out)?;
    /// assert_eq!(out, serde_json::to_vec(&result)?);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.extend_from_slice(br#"{"content":["#);
        for (i, block) in self.content.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match block {
                ContentBlock::Text(text)
                    if text.annotations.is_none()
                        && text.meta.is_none()
                        && text.extra.is_empty() =>
                {
                    out.extend_from_slice(br#"{"type":"text","text":"#);
                    crate::json_text::write_str(out, &text.text);
                    out.push(b'}');
                }
                block => serde_json::to_writer(&mut *out, block)?,
            }
        }
        out.push(b']');
        if let Some(value) = &self.structured_content {
            out.extend_from_slice(br#","structuredContent":"#);
            serde_json::to_writer(&mut *out, value)?;
        }
        if let Some(is_error) = self.is_error {
            out.extend_from_slice(if is_error {
                br#","isError":true"#
            } else {
                br#","isError":false"#
            });
        }
        if let Some(meta) = &self.meta {
            out.extend_from_slice(br#","_meta":"#);
            serde_json::to_writer(&mut *out, meta)?;
        }
        for (key, value) in &self.extra {
            out.push(b',');
            crate::json_text::write_str(out, key);
            out.push(b':');
            serde_json::to_writer(&mut *out, value)?;
        }
        out.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn into_json_writes_what_serde_json_writes() {
        let mut annotated = crate::content::TextContent::new("annotated");
        annotated.meta = Some(json!({"k": 1}).as_object().cloned().unwrap());
        let mut flagged = CallToolResult::text("ok \"quoted\"\n");
        flagged.is_error = Some(false);
        let mut unflagged = CallToolResult::text("no flag");
        unflagged.is_error = None;
        let mut with_meta = CallToolResult::text("with meta");
        with_meta.meta = Some(json!({"m": true}).as_object().cloned().unwrap());
        let results = [
            CallToolResult::default(),
            CallToolResult::text(format!("{}\u{1}\n\"é🎉\\", "x".repeat(20_000))),
            CallToolResult::error("it failed"),
            flagged,
            unflagged,
            with_meta,
            CallToolResult::structured(json!({"a": 1})),
            CallToolResult {
                content: vec![ContentBlock::Text(annotated)],
                ..CallToolResult::default()
            },
            CallToolResult {
                content: vec![
                    ContentBlock::Text(crate::content::TextContent::new("one")),
                    ContentBlock::Text(crate::content::TextContent::new("two")),
                ],
                ..CallToolResult::default()
            },
        ];
        for result in results {
            let expected = serde_json::to_vec(&result).unwrap();
            let got = result.clone().into_json().unwrap();
            assert!(
                got == expected,
                "{result:?}: {}",
                String::from_utf8_lossy(&got)
            );
        }
    }

    #[test]
    fn write_json_writes_what_serde_json_writes() {
        let mut annotated = crate::content::TextContent::new("annotated \"text\"");
        annotated.meta = Some(json!({"k": 1}).as_object().cloned().unwrap());
        let results = [
            CallToolResult::default(),
            CallToolResult::text("plain"),
            CallToolResult::text(format!("{}\u{1}\n\"é🎉\\", "x".repeat(100))),
            CallToolResult::error("it failed"),
            CallToolResult::structured(json!({"a": [1, "two", null], "b": {"c": 1.5}})),
            CallToolResult {
                content: vec![
                    ContentBlock::text("one"),
                    ContentBlock::Text(annotated),
                    ContentBlock::image("aGk=", "image/png"),
                    ContentBlock::text("two"),
                ],
                structured_content: Some(json!("any json")),
                is_error: Some(false),
                meta: Some(json!({"trace": "t-1"}).as_object().cloned().unwrap()),
                extra: json!({"resultType": "complete", "we\"ird": [true]})
                    .as_object()
                    .cloned()
                    .unwrap(),
            },
        ];
        for result in &results {
            let mut out = Vec::new();
            result.write_json(&mut out).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(result).unwrap(),
                "{result:?}"
            );
        }
    }

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
}
