//! `x-mcp-header` (2026-07-28): tool arguments a client mirrors into `Mcp-Param-{Name}`
//! HTTP headers. A tool whose annotations break the rules is dropped from the list,
//! with a warning, so it is never called; the others' annotations are kept
//! ([`ToolHeaders`]) for the calls that follow.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use mcpflow_protocol::{JsonObject, Tool};
use serde_json::Value;

/// The annotation key in a property's schema.
const ANNOTATION: &str = "x-mcp-header";

/// `(argument, header name)` pairs of a tool's `x-mcp-header` annotations, or why the
/// annotations are invalid (empty name, a character outside an HTTP token, a duplicate
/// name in any case, a property that is not a string, integer or boolean).
pub(crate) fn header_params(
    input_schema: &serde_json::Map<String, Value>,
) -> Result<Vec<(String, String)>, String> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (argument, schema) in properties {
        let Some(annotation) = schema.get(ANNOTATION) else {
            continue;
        };
        let Some(name) = annotation.as_str() else {
            return Err(format!("`{argument}`: {ANNOTATION} is not a string"));
        };
        if name.is_empty() {
            return Err(format!("`{argument}`: {ANNOTATION} is empty"));
        }
        if !name.bytes().all(is_token_byte) {
            return Err(format!(
                "`{argument}`: {ANNOTATION} `{}` is not an HTTP token",
                name.escape_debug()
            ));
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            other => {
                return Err(format!(
                    "`{argument}`: {ANNOTATION} on a property of type {}, not string, integer or boolean",
                    other.unwrap_or("(none)")
                ));
            }
        }
        if pairs.iter().any(|(_, n)| n.eq_ignore_ascii_case(name)) {
            return Err(format!("{ANNOTATION} `{name}` is used twice"));
        }
        pairs.push((argument.clone(), name.to_owned()));
    }
    Ok(pairs)
}

/// The `x-mcp-header` arguments of each tool, as the tool lists this client read said:
/// `(argument, header name)` pairs by tool.
#[derive(Debug, Default)]
pub(crate) struct ToolHeaders(Mutex<HashMap<String, Vec<(String, String)>>>);

impl ToolHeaders {
    /// Drop the tools whose `x-mcp-header` annotations are invalid, with a warning
    /// each, and keep the annotations of the others.
    pub(crate) fn keep_valid(&self, tools: &mut Vec<Tool>) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        tools.retain(|tool| match header_params(&tool.input_schema) {
            Ok(pairs) => {
                known.insert(tool.name.clone(), pairs);
                true
            }
            Err(why) => {
                known.remove(&tool.name);
                tracing::warn!(tool = %tool.name, "dropped a tool with an invalid x-mcp-header: {why}");
                false
            }
        });
    }

    /// The `Mcp-Param-*` headers of a call of `tool` with `arguments`, as names and
    /// encoded values: arguments that are absent or null, or not a string, number or
    /// boolean, get none.
    pub(crate) fn param_headers(
        &self,
        tool: &str,
        arguments: &JsonObject,
    ) -> Vec<(String, String)> {
        let known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(pairs) = known.get(tool) else {
            return Vec::new();
        };
        pairs
            .iter()
            .filter_map(|(argument, header)| {
                let value = header_value(arguments.get(argument)?)?;
                Some((format!("Mcp-Param-{header}"), value))
            })
            .collect()
    }
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A header value for an argument: strings as they are when safe ASCII, otherwise (and
/// when they look like the sentinel) as `=?base64?…?=`; numbers in decimal; booleans
/// as `true`/`false`. `None` for null and for objects and arrays.
pub(crate) fn header_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(encode_text(s)),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A text as a header value (`Mcp-Name`, `Mcp-Param-*`).
pub(crate) fn encode_text(s: &str) -> String {
    let safe = s.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && s.trim() == s
        && !(s.starts_with("=?base64?") && s.ends_with("?="));
    if safe {
        s.to_owned()
    } else {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        format!("=?base64?{encoded}?=")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_encoded_as_the_spec_says() {
        assert_eq!(encode_text("us-west1"), "us-west1");
        assert_eq!(encode_text("us west 1"), "us west 1");
        assert_eq!(
            encode_text("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_text(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_text("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(encode_text("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
        assert_eq!(header_value(&json!(42)), Some("42".to_owned()));
        assert_eq!(header_value(&json!(false)), Some("false".to_owned()));
        assert_eq!(header_value(&json!(null)), None);
    }

    #[test]
    fn invalid_annotations_are_named() {
        let ok = json!({"properties": {"r": {"type": "string", "x-mcp-header": "Region"}, "q": {"type": "string"}}});
        assert_eq!(
            header_params(ok.as_object().unwrap()),
            Ok(vec![("r".to_owned(), "Region".to_owned())])
        );
        for bad in [
            json!({"properties": {"v": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"v": {"type": "object", "x-mcp-header": "D"}}}),
            json!({"properties": {"v": {"type": "number", "x-mcp-header": "S"}}}),
            json!({"properties": {"v": {"type": "string", "x-mcp-header": "My Region"}}}),
            json!({"properties": {"v": {"type": "string", "x-mcp-header": "Région"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}}),
        ] {
            assert!(header_params(bad.as_object().unwrap()).is_err(), "{bad}");
        }
    }
}
