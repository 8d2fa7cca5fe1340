//! Content blocks: what tools return, prompts contain and sampling exchanges.
//!
//! [`ContentBlock`] is tagged by `type`. A `type` this crate does not know (a newer
//! version's, or a vendor's) is kept whole in [`ContentBlock::Unknown`] instead of
//! failing the message.

use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::{JsonObject, Meta};
use crate::prompts::Role;
use crate::resources::{BlobResourceContents, Resource, ResourceContents, TextResourceContents};

mod decode;

/// One block of content, tagged by `type`.
///
/// `text`, `image` and `resource` exist in every version; `audio` is 2025-03-26+,
/// `resource_link` 2025-06-18+. `tool_use` and `tool_result` (2025-11-25+) are only valid
/// in sampling messages.
///
/// ```
/// use mcpflow_protocol::ContentBlock;
///
/// let block = ContentBlock::text("hello");
/// assert_eq!(serde_json::to_string(&block).unwrap(), r#"{"type":"text","text":"hello"}"#);
/// let odd: ContentBlock = serde_json::from_str(r#"{"type":"video","url":"x"}"#).unwrap();
/// assert!(matches!(odd, ContentBlock::Unknown(_)));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `type: "text"`.
    Text(TextContent),
    /// `type: "image"`: base64 image data.
    Image(ImageContent),
    /// `type: "audio"`: base64 audio data (2025-03-26+).
    Audio(AudioContent),
    /// `type: "resource_link"`: a resource by reference (2025-06-18+).
    ResourceLink(Resource),
    /// `type: "resource"`: a resource embedded by value.
    Resource(EmbeddedResource),
    /// `type: "tool_use"`: the model calls a tool (sampling only, 2025-11-25+).
    ToolUse(ToolUseContent),
    /// `type: "tool_result"`: a tool's answer to the model (sampling only, 2025-11-25+).
    ToolResult(ToolResultContent),
    /// Any other `type`, or an object without a string `type`, kept verbatim.
    Unknown(Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// An image block from base64 `data` and its MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Default::default()
        })
    }

    /// An audio block from base64 `data` and its MIME type.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Default::default()
        })
    }

    /// A link to a resource.
    pub fn resource_link(resource: Resource) -> Self {
        ContentBlock::ResourceLink(resource)
    }

    /// An embedded resource.
    pub fn embedded(resource: ResourceContents) -> Self {
        ContentBlock::Resource(EmbeddedResource::new(resource))
    }

    /// An embedded text resource.
    pub fn embedded_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::embedded(ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: text.into(),
            ..Default::default()
        }))
    }

    /// An embedded binary resource from base64 `blob`.
    pub fn embedded_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        blob: impl Into<String>,
    ) -> Self {
        Self::embedded(ResourceContents::Blob(BlobResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            blob: blob.into(),
            ..Default::default()
        }))
    }

    /// The `type` tag (`"text"`, `"image"`, ...; for unknown blocks, their own tag or `""`).
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            ContentBlock::ResourceLink(_) => "resource_link",
            ContentBlock::Resource(_) => "resource",
            ContentBlock::ToolUse(_) => "tool_use",
            ContentBlock::ToolResult(_) => "tool_result",
            ContentBlock::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        ContentBlock::Text(c)
    }
}

impl From<ImageContent> for ContentBlock {
    fn from(c: ImageContent) -> Self {
        ContentBlock::Image(c)
    }
}

impl From<AudioContent> for ContentBlock {
    fn from(c: AudioContent) -> Self {
        ContentBlock::Audio(c)
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(c: EmbeddedResource) -> Self {
        ContentBlock::Resource(c)
    }
}

/// Borrowing twin of the known variants, for serialization with the `type` tag.
#[derive(Serialize)]
#[serde(tag = "type")]
enum Tagged<'a> {
    #[serde(rename = "text")]
    Text(&'a TextContent),
    #[serde(rename = "image")]
    Image(&'a ImageContent),
    #[serde(rename = "audio")]
    Audio(&'a AudioContent),
    #[serde(rename = "resource_link")]
    ResourceLink(&'a Resource),
    #[serde(rename = "resource")]
    Resource(&'a EmbeddedResource),
    #[serde(rename = "tool_use")]
    ToolUse(&'a ToolUseContent),
    #[serde(rename = "tool_result")]
    ToolResult(&'a ToolResultContent),
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tagged = match self {
            ContentBlock::Text(c) => Tagged::Text(c),
            ContentBlock::Image(c) => Tagged::Image(c),
            ContentBlock::Audio(c) => Tagged::Audio(c),
            ContentBlock::ResourceLink(c) => Tagged::ResourceLink(c),
            ContentBlock::Resource(c) => Tagged::Resource(c),
            ContentBlock::ToolUse(c) => Tagged::ToolUse(c),
            ContentBlock::ToolResult(c) => Tagged::ToolResult(c),
            ContentBlock::Unknown(v) => return v.serialize(serializer),
        };
        tagged.serialize(serializer)
    }
}

/// Hints for the client on how to use or show an object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change (2025-06-18+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Text content.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl TextContent {
    /// Text content without annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            ..Default::default()
        }
    }
}

/// Image content: base64 data and a MIME type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Audio content: base64 data and a MIME type (2025-03-26+).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// MIME type, e.g. `audio/wav`.
    pub mime_type: String,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A resource embedded by value.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The resource's contents (text or blob).
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl EmbeddedResource {
    /// Embeds `resource` without annotations.
    pub fn new(resource: ResourceContents) -> Self {
        EmbeddedResource {
            resource,
            ..Default::default()
        }
    }
}

/// The model's request to call a tool (sampling, 2025-11-25+).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUseContent {
    /// Id that the matching [`ToolResultContent::tool_use_id`] repeats.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    pub input: JsonObject,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A tool's result given back to the model (sampling, 2025-11-25+).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The [`ToolUseContent::id`] this answers.
    pub tool_use_id: String,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result (an object in 2025-11-25, any JSON in 2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_kinds_round_trip() {
        for v in [
            json!({"type": "text", "text": "hi", "annotations": {"priority": 1}}),
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav", "_meta": {"a": 1}}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "x:/b", "blob": "AA=="}}),
            json!({"type": "tool_use", "id": "1", "name": "t", "input": {}}),
            json!({"type": "tool_result", "toolUseId": "1", "content": [{"type": "text", "text": "r"}]}),
        ] {
            let block: ContentBlock = serde_json::from_value(v.clone()).expect("known block");
            assert!(!matches!(block, ContentBlock::Unknown(_)), "{v}");
            assert_eq!(block.kind(), v["type"]);
            assert_eq!(serde_json::to_value(&block).expect("ser"), v);
        }
    }

    #[test]
    fn unknown_and_malformed() {
        let v = json!({"type": "video", "url": "x", "n": 1.5});
        let block: ContentBlock = serde_json::from_value(v.clone()).expect("unknown kept");
        assert_eq!(block.kind(), "video");
        assert_eq!(serde_json::to_value(&block).expect("ser"), v);
        assert!(serde_json::from_value::<ContentBlock>(json!({"type": "text"})).is_err());
        assert!(serde_json::from_value::<ContentBlock>(json!("text")).is_err());
    }

    /// Decodes `json` through both a borrowing reader (`from_str`) and an owning one
    /// (`from_value`), which must agree.
    fn both(json: &str) -> Result<ContentBlock, String> {
        let from_str = serde_json::from_str::<ContentBlock>(json).map_err(|e| e.to_string());
        let value: Value = serde_json::from_str(json).expect("test JSON");
        let from_value = serde_json::from_value::<ContentBlock>(value).map_err(|e| e.to_string());
        match (&from_str, &from_value) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{json}"),
            (Err(a), Err(b)) => assert!(a.starts_with(b.as_str()), "{a} / {b}"),
            _ => panic!("from_str {from_str:?} but from_value {from_value:?} for {json}"),
        }
        from_value
    }

    #[test]
    fn text_in_either_key_order() {
        for json in [
            r#"{"type":"text","text":"hi \"there\""}"#,
            r#"{"text":"hi \"there\"","type":"text"}"#,
        ] {
            assert_eq!(both(json), Ok(ContentBlock::text("hi \"there\"")), "{json}");
        }
    }

    #[test]
    fn text_with_annotations_meta_and_unknown_keys() {
        let expected = ContentBlock::Text(TextContent {
            text: "hi".into(),
            annotations: Some(Annotations {
                priority: Some(0.5),
                ..Default::default()
            }),
            meta: json!({"k": [1]}).as_object().cloned(),
            extra: json!({"x-vendor": {"a": null}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        });
        for json in [
            r#"{"type":"text","text":"hi","annotations":{"priority":0.5},"_meta":{"k":[1]},"x-vendor":{"a":null}}"#,
            r#"{"x-vendor":{"a":null},"_meta":{"k":[1]},"annotations":{"priority":0.5},"text":"hi","type":"text"}"#,
            r#"{"annotations":{"priority":0.5},"type":"text","x-vendor":{"a":null},"text":"hi","_meta":{"k":[1]}}"#,
        ] {
            let block = both(json).expect("text block");
            assert_eq!(block, expected, "{json}");
            assert_eq!(
                serde_json::to_value(&block).expect("ser"),
                serde_json::from_str::<Value>(json).expect("json"),
            );
        }
        // `null` annotations and `_meta` read as absent, as before.
        assert_eq!(
            both(r#"{"type":"text","text":"a","annotations":null,"_meta":null}"#),
            Ok(ContentBlock::text("a"))
        );
    }

    #[test]
    fn other_kinds_round_trip_in_either_order() {
        for json in [
            r#"{"type":"image","data":"AA==","mimeType":"image/png","annotations":{"audience":["user"]}}"#,
            r#"{"data":"AA==","mimeType":"audio/wav","_meta":{"a":1},"type":"audio"}"#,
            r#"{"type":"resource_link","uri":"file:///a","name":"a","text":"not the text field"}"#,
            r#"{"resource":{"uri":"x:/b","text":"t"},"type":"resource"}"#,
            r#"{"type":"tool_use","id":"1","name":"t","input":{"q":"text"}}"#,
            r#"{"toolUseId":"1","type":"tool_result","content":[{"text":"r","type":"text"}],"isError":true}"#,
        ] {
            let block = both(json).expect("known block");
            let value: Value = serde_json::from_str(json).expect("json");
            assert!(!matches!(block, ContentBlock::Unknown(_)), "{json}");
            assert_eq!(block.kind(), value["type"], "{json}");
            assert_eq!(serde_json::to_value(&block).expect("ser"), value, "{json}");
        }
    }

    #[test]
    fn unknown_or_missing_type_kept_whole() {
        for json in [
            r#"{"type":"video","url":"x","text":"caption","n":1.5}"#,
            r#"{"text":"caption","type":"video"}"#,
            r#"{"text":"no type","annotations":{"priority":"high"}}"#,
            r#"{"type":7,"text":"x"}"#,
            r#"{"text":"x","type":["text"]}"#,
            r#"{"type":null}"#,
            r#"{}"#,
        ] {
            let block = both(json).expect("kept");
            let value: Value = serde_json::from_str(json).expect("json");
            assert_eq!(block, ContentBlock::Unknown(value), "{json}");
        }
    }

    #[test]
    fn repeated_type_keeps_the_last() {
        assert_eq!(
            both(r#"{"type":"text","text":"a","type":"video"}"#),
            Ok(ContentBlock::Unknown(json!({"type": "video", "text": "a"})))
        );
        assert_eq!(
            both(r#"{"type":"video","text":"a","type":"text"}"#),
            Ok(ContentBlock::text("a"))
        );
        assert_eq!(
            both(r#"{"text":"a","type":"text","text":"b"}"#),
            Ok(ContentBlock::text("b"))
        );
    }

    #[test]
    fn malformed_text_blocks() {
        let cases = [
            (
                r#"{"type":"text","text":5}"#,
                "invalid `text` content block: `text` must be a string",
            ),
            (
                r#"{"text":null,"type":"text"}"#,
                "invalid `text` content block: `text` must be a string",
            ),
            (
                r#"{"type":"text"}"#,
                "invalid `text` content block: missing field `text`",
            ),
            (
                r#"{"type":"text","text":"a","_meta":[]}"#,
                "invalid `text` content block: `_meta` must be an object",
            ),
            (
                r#"{"type":"text","text":"a","annotations":{"priority":"high"}}"#,
                "invalid `text` content block: invalid type: string \"high\", expected f64",
            ),
            (
                r#"{"type":"image","data":"AA=="}"#,
                "invalid `image` content block: missing field `mimeType`",
            ),
        ];
        for (json, message) in cases {
            let error = both(json).expect_err(json);
            assert_eq!(error, message, "{json}");
            // Nested, the error also says where.
            let nested = format!(r#"{{"content":[{json}]}}"#);
            let error = serde_json::from_str::<crate::CallToolResult>(&nested)
                .expect_err(json)
                .to_string();
            assert!(error.starts_with(message), "{error}");
            assert!(error.contains(" at line 1 column "), "{error}");
        }
    }

    #[test]
    fn non_objects_are_rejected() {
        for json in [r#""text""#, "1", "-1", "1.5", "true", "null", r#"["text"]"#] {
            let error = both(json).expect_err(json);
            assert_eq!(
                error, "invalid type: a non-object, expected a content block object",
                "{json}"
            );
        }
    }

    #[test]
    fn constructors() {
        let b = ContentBlock::embedded_text("file:///a.txt", "text/plain", "A");
        assert_eq!(
            serde_json::to_value(&b).expect("ser"),
            json!({"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}})
        );
        assert_eq!(ContentBlock::text("x").as_text(), Some("x"));
    }
}
