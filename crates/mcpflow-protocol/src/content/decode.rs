//! Reading a [`ContentBlock`] field by field (see its `Deserialize` implementation).

use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{ContentBlock, TextContent};
use crate::meta::JsonObject;

/// Hand-written rather than read through a `Value` first: text blocks are most of what
/// tools return (small ones by the hundred thousand, and the largest messages of a
/// session), so they are read field by field, the text straight into its `String` and
/// `type`/`text` recognised without allocating a key. Any other kind, or an object
/// without a string `type`, is collected into a map in the order received and decoded
/// from there, as these are rare.
impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `deserialize_any`, like `Value`, so a non-object gets this type's own error.
        deserializer.deserialize_any(BlockVisitor)
    }
}

/// What the `type` keys of a block read so far say.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// No `type` yet.
    Unseen,
    /// `type: "text"`: `text` is read aside, every other field into the map.
    Text,
    /// Any other `type` (kept in the map): every field goes into the map.
    Other,
}

struct BlockVisitor;

impl BlockVisitor {
    fn not_an_object<E: de::Error>() -> E {
        E::invalid_type(
            de::Unexpected::Other("a non-object"),
            &"a content block object",
        )
    }
}

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        let mut kind = Kind::Unseen;
        // `text`, when it comes after `type: "text"`.
        let mut text = None;
        // Every other field as received, so that a block of another kind, or one read
        // before its `type`, is the same object as before. A repeated key keeps its
        // last value, as in a `Value`.
        let mut fields = JsonObject::new();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Type => match map.next_value::<Tag>()? {
                    Tag::Text if kind != Kind::Other => kind = Kind::Text,
                    tag => {
                        // Another `type` after `text`: back to the map with its text.
                        if let Some(text) = text.take() {
                            fields.insert("text".to_owned(), text);
                        }
                        fields.insert("type".to_owned(), tag.into_value());
                        kind = Kind::Other;
                    }
                },
                Key::Text if kind == Kind::Text => text = Some(map.next_value::<Value>()?),
                Key::Text => {
                    let value = map.next_value::<Value>()?;
                    fields.insert("text".to_owned(), value);
                }
                Key::Other(key) => {
                    let value = map.next_value::<Value>()?;
                    fields.insert(key, value);
                }
            }
        }
        if kind == Kind::Text {
            // A `text` read before `type` is in the map; a later one wins.
            let early = fields.remove("text");
            return text_from_parts(text.or(early), fields).map(ContentBlock::Text);
        }
        block_from_map(fields)
    }

    // Whatever else `Value` accepts is a non-object, with the error it always had.

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_unit<E: de::Error>(self) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_none<E: de::Error>(self) -> Result<ContentBlock, E> {
        Err(Self::not_an_object())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<ContentBlock, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<ContentBlock, A::Error> {
        Err(Self::not_an_object())
    }
}

/// A block from all its fields (`type` included): unknown blocks are kept whole, known
/// kinds decoded from the map.
fn block_from_map<E: de::Error>(mut map: JsonObject) -> Result<ContentBlock, E> {
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
        "text" => {
            let text = map.remove("text");
            ContentBlock::Text(text_from_parts(text, map)?)
        }
        "image" => ContentBlock::Image(inner(map, &kind)?),
        "audio" => ContentBlock::Audio(inner(map, &kind)?),
        "resource_link" => ContentBlock::ResourceLink(inner(map, &kind)?),
        "resource" => ContentBlock::Resource(inner(map, &kind)?),
        "tool_use" => ContentBlock::ToolUse(inner(map, &kind)?),
        _ => ContentBlock::ToolResult(inner(map, &kind)?),
    })
}

/// A key of a block. `type` and `text` are matched on the borrowed string, so they cost
/// no allocation; any other key is owned, as it is kept in a map.
enum Key {
    Type,
    Text,
    Other(String),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "type" => Key::Type,
                    "text" => Key::Text,
                    _ => Key::Other(v.to_owned()),
                })
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Key, E> {
                Ok(match v.as_str() {
                    "type" => Key::Type,
                    "text" => Key::Text,
                    _ => Key::Other(v),
                })
            }
        }

        // As `Value` reads object keys.
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The value of a `type` key: `"text"` is recognised without allocating; anything else
/// (another string, or not a string at all) is read as the `Value` it would have been.
enum Tag {
    Text,
    Other(Value),
}

impl Tag {
    fn into_value(self) -> Value {
        match self {
            Tag::Text => Value::from("text"),
            Tag::Other(value) => value,
        }
    }
}

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TagVisitor;

        impl<'de> Visitor<'de> for TagVisitor {
            type Value = Tag;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any valid JSON value")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Tag, E> {
                Ok(match v {
                    "text" => Tag::Text,
                    _ => Tag::Other(Value::from(v)),
                })
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Tag, E> {
                Ok(match v.as_str() {
                    "text" => Tag::Text,
                    _ => Tag::Other(Value::String(v)),
                })
            }

            // The rest is handed to `Value` itself, so it reads exactly as before.

            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Tag, E> {
                Value::deserialize(v.into_deserializer()).map(Tag::Other)
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tag, E> {
                Value::deserialize(v.into_deserializer()).map(Tag::Other)
            }

            fn visit_i128<E: de::Error>(self, v: i128) -> Result<Tag, E> {
                Value::deserialize(v.into_deserializer()).map(Tag::Other)
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tag, E> {
                Value::deserialize(v.into_deserializer()).map(Tag::Other)
            }

            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Tag, E> {
                Value::deserialize(v.into_deserializer()).map(Tag::Other)
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tag, E> {
                Value::deserialize(v.into_deserializer()).map(Tag::Other)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Tag, E> {
                Ok(Tag::Other(Value::Null))
            }

            fn visit_none<E: de::Error>(self) -> Result<Tag, E> {
                Ok(Tag::Other(Value::Null))
            }

            fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Tag, D::Error> {
                Tag::deserialize(deserializer)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Tag, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(Tag::Other)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Tag, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(Tag::Other)
            }
        }

        deserializer.deserialize_any(TagVisitor)
    }
}

/// A text block from its `text` (if any) and its other fields, moving the text out
/// rather than decoding it again (text is the bulk of large results).
fn text_from_parts<E: de::Error>(
    text: Option<Value>,
    mut map: JsonObject,
) -> Result<TextContent, E> {
    let text = match text {
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
