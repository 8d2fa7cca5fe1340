//! `_meta` maps and progress tokens.
//!
//! Almost every params, result and entity type carries an optional `_meta` object. Its
//! keys are open (vendor prefixes such as `com.example/trace`); the few that MCP reserves
//! are named here as constants.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A `_meta` object: open keys, any JSON values.
pub type Meta = serde_json::Map<String, Value>;

/// A JSON object kept verbatim (schemas, capability flags, tool arguments).
pub type JsonObject = serde_json::Map<String, Value>;

/// `_meta` key of a request's progress token (all versions).
pub const PROGRESS_TOKEN_KEY: &str = "progressToken";
/// `_meta` key tying a message to a task (2025-11-25): `{taskId}`.
pub const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";
/// `_meta` key of a string the host may give the model while a task runs (2025-11-25).
pub const MODEL_IMMEDIATE_RESPONSE_KEY: &str = "io.modelcontextprotocol/model-immediate-response";

/// A progress token: a string or an integer chosen by the sender of a request.
///
/// Booleans, floats and `null` are rejected when deserializing.
///
/// ```
/// use mcpflow_protocol::ProgressToken;
///
/// let t: ProgressToken = serde_json::from_str("7").unwrap();
/// assert_eq!(t, ProgressToken::Integer(7));
/// assert_eq!(t.to_string(), "7");
/// assert!(serde_json::from_str::<ProgressToken>("true").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// A string token.
    String(String),
    /// An integer token.
    Integer(i64),
}

impl fmt::Display for ProgressToken {
    /// Strings are quoted, so `7` and `"7"` read differently in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgressToken::String(s) => write!(f, "{s:?}"),
            ProgressToken::Integer(n) => write!(f, "{n}"),
        }
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        ProgressToken::String(s)
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        ProgressToken::String(s.to_owned())
    }
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        ProgressToken::Integer(n)
    }
}

impl<'de> Deserialize<'de> for ProgressToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TokenVisitor;

        impl Visitor<'_> for TokenVisitor {
            type Value = ProgressToken;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a progress token (a string or an integer)")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ProgressToken::String(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(ProgressToken::String(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(ProgressToken::Integer(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                i64::try_from(v)
                    .map(ProgressToken::Integer)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
        }

        deserializer.deserialize_any(TokenVisitor)
    }
}

/// Reads `progressToken` from a `_meta` map. `None` when absent or not a string/integer.
pub fn progress_token(meta: &Meta) -> Option<ProgressToken> {
    match meta.get(PROGRESS_TOKEN_KEY)? {
        Value::String(s) => Some(ProgressToken::String(s.clone())),
        Value::Number(n) => n.as_i64().map(ProgressToken::Integer),
        _ => None,
    }
}

/// Reads `progressToken` from an optional `_meta` (as found on params types).
pub fn progress_token_of(meta: Option<&Meta>) -> Option<ProgressToken> {
    meta.and_then(progress_token)
}

/// Sets `progressToken` in a `_meta` map, replacing any previous token.
pub fn insert_progress_token(meta: &mut Meta, token: ProgressToken) {
    let value = match token {
        ProgressToken::String(s) => Value::String(s),
        ProgressToken::Integer(n) => Value::from(n),
    };
    meta.insert(PROGRESS_TOKEN_KEY.to_owned(), value);
}

/// Sets `progressToken` in an optional `_meta`, creating the map when absent.
pub fn set_progress_token(meta: &mut Option<Meta>, token: ProgressToken) {
    insert_progress_token(meta.get_or_insert_with(Meta::new), token);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_parse_and_reject() {
        let s: ProgressToken = serde_json::from_value(json!("abc")).expect("string");
        assert_eq!(s.to_string(), "\"abc\"");
        let n: ProgressToken = serde_json::from_value(json!(-4)).expect("integer");
        assert_eq!(n, ProgressToken::Integer(-4));
        for bad in [
            json!(true),
            json!(1.5),
            json!(null),
            json!([1]),
            json!(u64::MAX),
        ] {
            assert!(serde_json::from_value::<ProgressToken>(bad).is_err());
        }
    }

    #[test]
    fn meta_helpers() {
        let mut meta = None;
        set_progress_token(&mut meta, ProgressToken::Integer(3));
        assert_eq!(
            progress_token_of(meta.as_ref()),
            Some(ProgressToken::Integer(3))
        );
        let mut m = Meta::new();
        insert_progress_token(&mut m, "x".into());
        assert_eq!(Value::Object(m.clone()), json!({"progressToken": "x"}));
        assert_eq!(progress_token(&m), Some(ProgressToken::from("x")));
    }
}
