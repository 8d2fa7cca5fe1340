//! Multi-round-trip requests (2026-07-28): instead of sending the client a request, the
//! server answers `tools/call`, `prompts/get` or `resources/read` with an
//! [`InputRequiredResult`]; the client fulfils its [`InputRequest`]s and retries the
//! original request with [`InputResponse`]s and the echoed `requestState`.

use std::collections::BTreeMap;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::elicitation::{ElicitRequestParams, ElicitResult};
use crate::empty::EmptyParams;
use crate::meta::{JsonObject, Meta};
use crate::meta2026::ResultType;
use crate::methods::method;
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};

/// Input requests keyed by a server-chosen key (`InputRequests`).
pub type InputRequests = BTreeMap<String, InputRequest>;
/// The client's answers keyed as the requests were (`InputResponses`).
pub type InputResponses = BTreeMap<String, InputResponse>;

/// A request embedded in an [`InputRequiredResult`]: `{method, params}` with no `jsonrpc`
/// or `id`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage` (boxed: the largest params).
    CreateMessage(Box<CreateMessageRequestParams>),
    /// `roots/list`; `None` when the request had no `params`.
    ListRoots(Option<EmptyParams>),
    /// A method this crate does not know, kept verbatim.
    Other {
        /// The method name.
        method: String,
        /// The params, if any.
        params: Option<Value>,
    },
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &str {
        match self {
            InputRequest::Elicit(_) => method::ELICITATION_CREATE,
            InputRequest::CreateMessage(_) => method::SAMPLING_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => method::ROOTS_LIST,
            InputRequest::Other { method, .. } => method,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct RawInputRequest<P> {
    method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    params: Option<P>,
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let method = self.method().to_owned();
        match self {
            InputRequest::Elicit(p) => RawInputRequest {
                method,
                params: Some(p),
            }
            .serialize(serializer),
            InputRequest::CreateMessage(p) => RawInputRequest {
                method,
                params: Some(p),
            }
            .serialize(serializer),
            InputRequest::ListRoots(p) => RawInputRequest {
                method,
                params: p.as_ref(),
            }
            .serialize(serializer),
            InputRequest::Other { params, .. } => RawInputRequest {
                method,
                params: params.as_ref(),
            }
            .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawInputRequest::<Value>::deserialize(deserializer)?;
        fn params<T: DeserializeOwned, E: de::Error>(p: Option<Value>) -> Result<T, E> {
            serde_json::from_value(p.unwrap_or(Value::Null)).map_err(E::custom)
        }
        Ok(match raw.method.as_str() {
            method::ELICITATION_CREATE => InputRequest::Elicit(params(raw.params)?),
            method::SAMPLING_CREATE_MESSAGE => InputRequest::CreateMessage(params(raw.params)?),
            method::ROOTS_LIST => InputRequest::ListRoots(match raw.params {
                None => None,
                p => Some(params(p)?),
            }),
            _ => InputRequest::Other {
                method: raw.method,
                params: raw.params,
            },
        })
    }
}

/// The client's answer to one [`InputRequest`], read by its shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum InputResponse {
    /// Answer to `roots/list` (has `roots`).
    ListRoots(ListRootsResult),
    /// Answer to `elicitation/create` (has `action`).
    Elicit(ElicitResult),
    /// Answer to `sampling/createMessage` (has `role`, `content`, `model`; boxed).
    CreateMessage(Box<CreateMessageResult>),
    /// Any other object, kept verbatim.
    Other(JsonObject),
}

/// `InputRequiredResult`: the server needs input before it can complete the request.
/// At least one of `input_requests` and `request_state` must be set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// `input_required`.
    pub result_type: ResultType,
    /// What to ask the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes on the retry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl InputRequiredResult {
    /// A result asking for `requests`, optionally with `state`.
    pub fn new(requests: InputRequests, state: Option<String>) -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests: (!requests.is_empty()).then_some(requests),
            request_state: state,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// A result that is either complete (`T`) or asks for input. Reads by `resultType`:
/// `complete` (or absent, as from a server of an earlier version) and `task` are read
/// as `T` (a [`MaybeTask`](crate::tasks2026::MaybeTask) tells a task apart),
/// `input_required` as [`InputRequiredResult`]; any other value is an error naming it,
/// since the result's shape is then unknown.
///
/// ```
/// use mcpflow_protocol::EmptyResult;
/// use mcpflow_protocol::mrtr::MaybeInputRequired;
///
/// let done: MaybeInputRequired<EmptyResult> = serde_json::from_str(r#"{"resultType":"complete"}"#)?;
/// assert!(matches!(done, MaybeInputRequired::Complete(_)));
/// let odd = serde_json::from_str::<MaybeInputRequired<EmptyResult>>(r#"{"resultType":"later"}"#);
/// assert!(odd.unwrap_err().to_string().contains("`later`"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MaybeInputRequired<T> {
    /// The final result.
    Complete(T),
    /// Input is needed first.
    InputRequired(InputRequiredResult),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for MaybeInputRequired<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value.get("resultType") {
            None | Some(Value::Null) => {}
            Some(Value::String(kind)) if kind == "complete" || kind == "task" => {}
            Some(Value::String(kind)) if kind == "input_required" => {
                return serde_json::from_value(value)
                    .map(MaybeInputRequired::InputRequired)
                    .map_err(de::Error::custom);
            }
            Some(Value::String(kind)) => {
                return Err(de::Error::custom(format_args!(
                    "resultType `{kind}` is not one this request can take \
                     (`complete`, `input_required` or `task`)"
                )));
            }
            Some(other) => {
                return Err(de::Error::custom(format_args!(
                    "resultType must be a string, got {other}"
                )));
            }
        }
        serde_json::from_value(value)
            .map(MaybeInputRequired::Complete)
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_and_responses_read_by_shape() {
        let reqs: InputRequests = serde_json::from_value(json!({
            "a": {"method": "roots/list"},
            "b": {"method": "x/y", "params": {"k": 1}},
            "c": {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}}
        }))
        .expect("reads");
        assert!(matches!(reqs["a"], InputRequest::ListRoots(None)));
        assert_eq!(reqs["b"].method(), "x/y");
        assert!(matches!(reqs["c"], InputRequest::Elicit(_)));
        let resps: InputResponses = serde_json::from_value(json!({
            "a": {"roots": []},
            "c": {"action": "decline"},
            "d": {"whatever": true}
        }))
        .expect("reads");
        assert!(matches!(resps["a"], InputResponse::ListRoots(_)));
        assert!(matches!(resps["c"], InputResponse::Elicit(_)));
        assert!(matches!(resps["d"], InputResponse::Other(_)));
    }

    #[test]
    fn maybe_input_required_reads_result_type() {
        let r: MaybeInputRequired<crate::EmptyResult> =
            serde_json::from_value(json!({"resultType": "input_required", "requestState": "s"}))
                .expect("reads");
        assert!(matches!(r, MaybeInputRequired::InputRequired(_)));
        let r: MaybeInputRequired<crate::EmptyResult> =
            serde_json::from_value(json!({})).expect("reads");
        assert!(matches!(r, MaybeInputRequired::Complete(_)));
        let r: MaybeInputRequired<crate::EmptyResult> =
            serde_json::from_value(json!({"resultType": "complete"})).expect("reads");
        assert!(matches!(r, MaybeInputRequired::Complete(_)));
    }

    #[test]
    fn maybe_input_required_refuses_a_result_type_it_cannot_read() {
        for (value, named) in [
            (json!({"resultType": "banana"}), "`banana`"),
            (json!({"resultType": 3}), "must be a string, got 3"),
        ] {
            let error = serde_json::from_value::<MaybeInputRequired<crate::EmptyResult>>(value)
                .expect_err("refused");
            assert!(error.to_string().contains(named), "{error}");
        }
    }
}
