//! Content blocks: what tools return, prompts contain and sampling exchanges.
//!
//! [`ContentBlock`] is tagged by `type`. A `type` this crate does not know (a newer
//! version's, or a vendor's) is kept whole in [`ContentBlock::Unknown`] instead of
//! failing the message.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::{JsonObject, Meta};
use crate::prompts::Role;
use crate::resources::{BlobResourceContents, Resource, ResourceContents, TextResourceContents};

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

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Value::Object(mut map) = Value::deserialize(deserializer)? else {
            return Err(de::Error::invalid_type(
                de::Unexpected::Other("a non-object"),
                &"a content block object",
            ));
        };
        let kind = match map.get("type") {
            Some(Value::String(s)) => s.clone(),
            _ => return Ok(ContentBlock::Unknown(Value::Object(map))),
        };
        fn inner<T: serde::de::DeserializeOwned, E: de::Error>(
            map: JsonObject,
            kind: &str,
        ) -> Result<T, E> {
            serde_json::from_value(Value::Object(map))
                .map_err(|e| E::custom(format_args!("invalid `{kind}` content block: {e}")))
        }
        let known = [
            "text",
            "image",
            "audio",
            "resource_link",
            "resource",
            "tool_use",
            "tool_result",
        ];
        if !known.contains(&kind.as_str()) {
            return Ok(ContentBlock::Unknown(Value::Object(map)));
        }
        map.remove("type");
        Ok(match kind.as_str() {
            "text" => ContentBlock::Text(text_from_map(map)?),
            "image" => ContentBlock::Image(inner(map, &kind)?),
            "audio" => ContentBlock::Audio(inner(map, &kind)?),
            "resource_link" => ContentBlock::ResourceLink(inner(map, &kind)?),
            "resource" => ContentBlock::Resource(inner(map, &kind)?),
            "tool_use" => ContentBlock::ToolUse(inner(map, &kind)?),
            _ => ContentBlock::ToolResult(inner(map, &kind)?),
        })
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

/// A text block from its already-parsed fields, moving the text out rather than
/// decoding the map a second time (text is the bulk of large results).
fn text_from_map<E: de::Error>(mut map: JsonObject) -> Result<TextContent, E> {
    let text = match map.remove("text") {
        Some(Value::String(text)) => text,
        Some(_) => {
            return Err(E::custom(
                "invalid `text` content block: `text` must be a string",
            ));
        }
        None => {
            return Err(E::custom(
                "invalid `text` content block: missing field `text`",
            ));
        }
    };
    let annotations = match map.remove("annotations") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            serde_json::from_value(v)
                .map_err(|e| E::custom(format_args!("invalid `text` content block: {e}")))?,
        ),
    };
    let meta = match map.remove("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => {
            return Err(E::custom(
                "invalid `text` content block: `_meta` must be an object",
            ));
        }
    };
    Ok(TextContent {
        text,
        annotations,
        meta,
        extra: map,
    })
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
