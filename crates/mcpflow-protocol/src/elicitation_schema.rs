//! The restricted JSON Schemas of an elicitation form's properties
//! (`PrimitiveSchemaDefinition`): strings, numbers, booleans and single- or
//! multi-select enums.
//!
//! [`ElicitFormParams::requested_schema`](crate::elicitation::ElicitFormParams) stays a
//! verbatim object; these types read one of its `properties` values.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::JsonObject;

/// One property of an elicitation form, told apart by `type` and its enum keys.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PrimitiveSchema {
    /// `{"type": "string"}`.
    String(StringSchema),
    /// `{"type": "number" | "integer"}`.
    Number(NumberSchema),
    /// `{"type": "boolean"}`.
    Boolean(BooleanSchema),
    /// `{"type": "string", "enum": [..]}` (with `enumNames` for the legacy titled form).
    SingleSelect(UntitledSingleSelectEnumSchema),
    /// `{"type": "string", "oneOf": [{const, title}, ..]}`.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// `{"type": "array", "items": {"type": "string", "enum": [..]}}`.
    MultiSelect(MultiSelectEnumSchema),
    /// `{"type": "array", "items": {"anyOf": [{const, title}, ..]}}`.
    TitledMultiSelect(MultiSelectEnumSchema),
}

/// Shared display fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SchemaText {
    /// Field label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `StringSchema`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Title and description.
    #[serde(flatten)]
    pub text: SchemaText,
    /// `date`, `date-time`, `email` or `uri`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Minimum length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Default value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `NumberSchema`; `integer` is whether `type` was `integer`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `type: "integer"` rather than `number`.
    #[serde(skip)]
    pub integer: bool,
    /// Title and description.
    #[serde(flatten)]
    pub text: SchemaText,
    /// Lower bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<serde_json::Number>,
    /// Upper bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<serde_json::Number>,
    /// Default value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Number>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `BooleanSchema`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Title and description.
    #[serde(flatten)]
    pub text: SchemaText,
    /// Default value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `UntitledSingleSelectEnumSchema` (and `LegacyTitledEnumSchema` with `enumNames`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledSingleSelectEnumSchema {
    /// Title and description.
    #[serde(flatten)]
    pub text: SchemaText,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Display names of the choices (legacy, deprecated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A choice with a display title: `{const, title}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TitledOption {
    /// The value.
    #[serde(rename = "const")]
    pub value: String,
    /// What the user sees.
    pub title: String,
}

/// `TitledSingleSelectEnumSchema`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Title and description.
    #[serde(flatten)]
    pub text: SchemaText,
    /// The choices.
    pub one_of: Vec<TitledOption>,
    /// Default choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `UntitledMultiSelectEnumSchema` and `TitledMultiSelectEnumSchema`; `items` is kept
/// verbatim (`{"type": "string", "enum": [..]}` or `{"anyOf": [{const, title}, ..]}`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MultiSelectEnumSchema {
    /// Title and description.
    #[serde(flatten)]
    pub text: SchemaText,
    /// The item schema.
    pub items: JsonObject,
    /// Fewest choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// Default choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

#[derive(Serialize)]
struct Typed<'a, P: Serialize> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    schema: &'a P,
}

impl Serialize for PrimitiveSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        fn typed<S: Serializer, P: Serialize>(
            s: S,
            kind: &'static str,
            p: &P,
        ) -> Result<S::Ok, S::Error> {
            Typed { kind, schema: p }.serialize(s)
        }
        match self {
            PrimitiveSchema::String(p) => typed(serializer, "string", p),
            PrimitiveSchema::Number(p) => {
                typed(serializer, if p.integer { "integer" } else { "number" }, p)
            }
            PrimitiveSchema::Boolean(p) => typed(serializer, "boolean", p),
            PrimitiveSchema::SingleSelect(p) => typed(serializer, "string", p),
            PrimitiveSchema::TitledSingleSelect(p) => typed(serializer, "string", p),
            PrimitiveSchema::MultiSelect(p) | PrimitiveSchema::TitledMultiSelect(p) => {
                typed(serializer, "array", p)
            }
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Value::Object(mut map) = Value::deserialize(deserializer)? else {
            return Err(de::Error::custom("a property schema must be an object"));
        };
        let kind = match map.remove("type") {
            Some(Value::String(s)) => s,
            _ => return Err(de::Error::custom("a property schema needs a string `type`")),
        };
        let titled_items = map.get("items").is_some_and(|i| i.get("anyOf").is_some());
        let has = |k: &str| map.contains_key(k);
        let (one_of, has_enum) = (has("oneOf"), has("enum"));
        let v = Value::Object(map);
        fn read<T: serde::de::DeserializeOwned, E: de::Error>(v: Value) -> Result<T, E> {
            serde_json::from_value(v).map_err(E::custom)
        }
        Ok(match kind.as_str() {
            "string" if one_of => PrimitiveSchema::TitledSingleSelect(read(v)?),
            "string" if has_enum => PrimitiveSchema::SingleSelect(read(v)?),
            "string" => PrimitiveSchema::String(read(v)?),
            "number" | "integer" => PrimitiveSchema::Number(NumberSchema {
                integer: kind == "integer",
                ..read(v)?
            }),
            "boolean" => PrimitiveSchema::Boolean(read(v)?),
            "array" if titled_items => PrimitiveSchema::TitledMultiSelect(read(v)?),
            "array" => PrimitiveSchema::MultiSelect(read(v)?),
            other => {
                return Err(de::Error::custom(format_args!(
                    "`{other}` is not a primitive schema type"
                )));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_are_told_apart() {
        for (v, integer) in [
            (json!({"type": "integer", "minimum": 1}), true),
            (json!({"type": "number"}), false),
        ] {
            let s: PrimitiveSchema = serde_json::from_value(v.clone()).expect("reads");
            assert!(matches!(&s, PrimitiveSchema::Number(n) if n.integer == integer));
            assert_eq!(serde_json::to_value(&s).expect("writes"), v);
        }
        let legacy = json!({"type": "string", "enum": ["a"], "enumNames": ["A"]});
        let s: PrimitiveSchema = serde_json::from_value(legacy.clone()).expect("reads");
        assert!(matches!(s, PrimitiveSchema::SingleSelect(_)));
        assert_eq!(serde_json::to_value(&s).expect("writes"), legacy);
        assert!(serde_json::from_value::<PrimitiveSchema>(json!({"type": "object"})).is_err());
    }
}
