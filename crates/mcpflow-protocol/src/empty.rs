//! Params and results with no fields of their own (`ping`, `notifications/initialized`,
//! the `list_changed` notifications, `{}` results).

use serde::{Deserialize, Deserializer, Serialize};

use crate::meta::{JsonObject, Meta};
use crate::meta2026::ResultType;

/// Params with no fields: absent params, `null`, `{}` and `{"_meta": ..}` all deserialize.
///
/// Serializes as `{}` (or with `_meta` when set).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct EmptyParams {
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl<'de> Deserialize<'de> for EmptyParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
            #[serde(flatten)]
            extra: JsonObject,
        }
        Ok(Option::<Raw>::deserialize(deserializer)?
            .map(|r| EmptyParams {
                meta: r.meta,
                extra: r.extra,
            })
            .unwrap_or_default())
    }
}

/// A result with no fields (`{}`), as answered to `ping`, `resources/subscribe`,
/// `logging/setLevel`. `_meta`, 2026-07-28 `resultType` and unknown fields are kept.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct EmptyResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `resultType` (2026-07-28): `complete`.
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl<'de> Deserialize<'de> for EmptyResult {
    /// Also accepts `null`, which some peers send for empty results.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut params = EmptyParams::deserialize(deserializer)?;
        let result_type = params
            .extra
            .remove("resultType")
            .and_then(|t| serde_json::from_value(t).ok());
        Ok(EmptyResult {
            meta: params.meta,
            result_type,
            extra: params.extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn accepts_absent_null_and_meta() {
        assert_eq!(
            serde_json::from_value::<EmptyParams>(Value::Null).expect("null"),
            EmptyParams::default()
        );
        let p: EmptyParams = serde_json::from_value(json!({"_meta": {"k": 1}})).expect("meta");
        assert_eq!(
            serde_json::to_value(&p).expect("ser"),
            json!({"_meta": {"k": 1}})
        );
        assert_eq!(
            serde_json::to_value(EmptyResult::default()).expect("ser"),
            json!({})
        );
        assert!(serde_json::from_value::<EmptyParams>(json!(3)).is_err());
    }
}
