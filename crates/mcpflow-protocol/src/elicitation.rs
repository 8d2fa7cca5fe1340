//! Elicitation: `elicitation/create` (2025-06-18+), the server asking the user for input,
//! and `notifications/elicitation/complete` (2025-11-25).

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::{JsonObject, Meta};
use crate::tasks::TaskMetadata;

/// Params of `elicitation/create`: a form or (2025-11-25+) a URL to open.
///
/// A missing `mode` means form. Form params serialize without `mode` (understood by
/// every version) unless [`ElicitFormParams::explicit_mode`] is set, as it is when the
/// peer sent `"mode": "form"`; URL params serialize with `"mode": "url"`. Other modes fail to
/// deserialize, which a client answers with invalid params (-32602).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitRequestParams {
    /// Collect structured data in the client's UI.
    Form(ElicitFormParams),
    /// Send the user to a URL for an out-of-band flow.
    Url(ElicitUrlParams),
}

impl ElicitRequestParams {
    /// A form request with a flat object schema (`{"type": "object", "properties": ..}`).
    pub fn form(message: impl Into<String>, requested_schema: JsonObject) -> Self {
        ElicitRequestParams::Form(ElicitFormParams {
            message: message.into(),
            requested_schema,
            ..Default::default()
        })
    }

    /// A URL request (2025-11-25).
    pub fn url(
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: impl Into<String>,
    ) -> Self {
        ElicitRequestParams::Url(ElicitUrlParams {
            message: message.into(),
            url: url.into(),
            elicitation_id: Some(elicitation_id.into()),
            ..Default::default()
        })
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(f) => &f.message,
            ElicitRequestParams::Url(u) => &u.message,
        }
    }

    /// The request `_meta`.
    pub fn meta(&self) -> Option<&Meta> {
        match self {
            ElicitRequestParams::Form(f) => f.meta.as_ref(),
            ElicitRequestParams::Url(u) => u.meta.as_ref(),
        }
    }
}

/// Params written after a `mode` field.
#[derive(Serialize)]
struct Tagged<'a, P: Serialize> {
    mode: &'static str,
    #[serde(flatten)]
    params: &'a P,
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(f) if !f.explicit_mode => f.serialize(serializer),
            ElicitRequestParams::Form(f) => Tagged {
                mode: "form",
                params: f,
            }
            .serialize(serializer),
            ElicitRequestParams::Url(u) => Tagged {
                mode: "url",
                params: u,
            }
            .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Value::Object(mut map) = Value::deserialize(deserializer)? else {
            return Err(de::Error::custom("elicitation params must be an object"));
        };
        let explicit_mode = map.contains_key("mode");
        let mode = match map.remove("mode") {
            None | Some(Value::Null) => "form".to_owned(),
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(de::Error::custom(format_args!(
                    "elicitation `mode` must be a string, got {other}"
                )));
            }
        };
        match mode.as_str() {
            "form" => serde_json::from_value(Value::Object(map))
                .map(|f| ElicitRequestParams::Form(ElicitFormParams { explicit_mode, ..f }))
                .map_err(de::Error::custom),
            "url" => serde_json::from_value(Value::Object(map))
                .map(ElicitRequestParams::Url)
                .map_err(de::Error::custom),
            other => Err(de::Error::custom(format_args!(
                "unknown elicitation mode `{other}` (expected `form` or `url`)"
            ))),
        }
    }
}

/// Form-mode elicitation params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitFormParams {
    /// What to ask the user.
    pub message: String,
    /// Flat object schema of primitive properties, kept verbatim.
    pub requested_schema: JsonObject,
    /// Run as a task (2025-11-25, experimental).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
    /// Write `"mode": "form"` (2025-11-25 style). Off by default, since a missing mode
    /// means form in every version; set when the peer sent the field.
    #[serde(skip)]
    pub explicit_mode: bool,
}

/// URL-mode elicitation params (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitUrlParams {
    /// Why the user should open the URL.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// Id correlating `notifications/elicitation/complete`. Required in 2025-11-25;
    /// removed in 2026-07-28, hence optional here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
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

/// The user's answer to an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ElicitAction {
    /// Submitted (form) or consented (URL).
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// Result of `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// Submitted values (form mode, on accept): strings, numbers, booleans, string arrays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ElicitResult {
    fn with_action(action: ElicitAction, content: Option<JsonObject>) -> Self {
        ElicitResult {
            action,
            content,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// The user accepted, with form values.
    pub fn accept(content: JsonObject) -> Self {
        Self::with_action(ElicitAction::Accept, Some(content))
    }

    /// The user accepted a URL elicitation (no content).
    pub fn accept_url() -> Self {
        Self::with_action(ElicitAction::Accept, None)
    }

    /// The user declined.
    pub fn decline() -> Self {
        Self::with_action(ElicitAction::Decline, None)
    }

    /// The user dismissed the request.
    pub fn cancel() -> Self {
        Self::with_action(ElicitAction::Cancel, None)
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The completed URL elicitation.
    pub elicitation_id: String,
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ElicitationCompleteNotificationParams {
    /// Params for `elicitation_id`.
    pub fn new(elicitation_id: impl Into<String>) -> Self {
        ElicitationCompleteNotificationParams {
            elicitation_id: elicitation_id.into(),
            ..Default::default()
        }
    }
}

/// `data` of the URL-elicitation-required error (`-32042`, 2025-11-25): what the
/// user must complete, out of band, before the request can succeed.
///
/// ```
/// use mcpflow_protocol::elicitation::{ElicitUrlParams, UrlElicitationRequired};
///
/// let required = UrlElicitationRequired::new(vec![ElicitUrlParams {
///     message: "Authorize access to your calendar".into(),
///     url: "https://example.com/connect?id=el-1".into(),
///     elicitation_id: Some("el-1".into()),
///     ..Default::default()
/// }]);
/// let error = required.to_error("This request requires more information.");
/// assert_eq!(error.code.0, -32042);
/// assert_eq!(UrlElicitationRequired::from_error(&error), Some(required));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UrlElicitationRequired {
    /// The URL elicitations, each with its `elicitationId`.
    pub elicitations: Vec<ElicitUrlParams>,
}

/// The wire form: each elicitation carries `"mode": "url"`.
#[derive(Serialize, Deserialize)]
struct RequiredData {
    elicitations: Vec<ElicitRequestParams>,
}

impl UrlElicitationRequired {
    /// The data for these elicitations.
    pub fn new(elicitations: Vec<ElicitUrlParams>) -> Self {
        UrlElicitationRequired { elicitations }
    }

    /// The JSON-RPC error carrying this data.
    pub fn to_error(&self, message: impl Into<String>) -> crate::ErrorObject {
        let data = RequiredData {
            elicitations: self
                .elicitations
                .iter()
                .cloned()
                .map(ElicitRequestParams::Url)
                .collect(),
        };
        crate::ErrorObject::new(crate::ErrorCode::URL_ELICITATION_REQUIRED, message)
            .with_data(serde_json::to_value(data).unwrap_or(Value::Null))
    }

    /// The data of a `-32042` error; `None` for another code or data that does not
    /// decode (form-mode entries are skipped: the error carries URL elicitations only).
    pub fn from_error(error: &crate::ErrorObject) -> Option<Self> {
        if error.code != crate::ErrorCode::URL_ELICITATION_REQUIRED {
            return None;
        }
        let data = RequiredData::deserialize(error.data.as_ref()?).ok()?;
        Some(UrlElicitationRequired {
            elicitations: data
                .elicitations
                .into_iter()
                .filter_map(|e| match e {
                    ElicitRequestParams::Url(u) => Some(u),
                    ElicitRequestParams::Form(_) => None,
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes() {
        let form = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
        let p: ElicitRequestParams = serde_json::from_value(form.clone()).expect("form");
        assert!(matches!(p, ElicitRequestParams::Form(_)));
        assert_eq!(serde_json::to_value(&p).expect("ser"), form);
        let mut explicit = form.clone();
        explicit["mode"] = json!("form");
        let p: ElicitRequestParams = serde_json::from_value(explicit.clone()).expect("form");
        assert!(matches!(&p, ElicitRequestParams::Form(f) if f.explicit_mode));
        assert_eq!(serde_json::to_value(&p).expect("ser"), explicit);
        let url = json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"});
        let p: ElicitRequestParams = serde_json::from_value(url.clone()).expect("url");
        assert_eq!(p, ElicitRequestParams::url("m", "https://x", "e"));
        assert_eq!(serde_json::to_value(&p).expect("ser"), url);
        assert!(
            serde_json::from_value::<ElicitRequestParams>(json!({"mode": "x", "message": "m"}))
                .is_err()
        );
    }
}
