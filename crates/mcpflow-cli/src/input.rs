//! Tool arguments from the command line: `ARGS_JSON`, `@file.json`, `-` (stdin), or
//! `key=value` pairs whose values are read as the tool's input schema says.

use std::io::Read;

use serde_json::{Map, Value};

use crate::failure::Failure;

/// How the arguments were given.
#[derive(Debug, PartialEq)]
pub enum ArgsInput {
    /// One JSON object (from the text, a file or stdin).
    Object(Map<String, Value>),
    /// `key=value` pairs, to be typed by the schema.
    Pairs(Vec<(String, String)>),
}

/// Read the words after the tool's name.
///
/// # Errors
/// A usage failure for JSON that is not an object, an unreadable file, or a word that
/// is neither JSON nor `key=value`.
pub fn read_args(words: &[String]) -> Result<ArgsInput, Failure> {
    match words {
        [] => Ok(ArgsInput::Object(Map::new())),
        [one] if one == "-" => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| {
                Failure::usage(format!("could not read the arguments from stdin: {e}"))
            })?;
            object(&text, "the arguments on stdin")
        }
        [one] if one.starts_with('@') => {
            let path = &one[1..];
            let text = std::fs::read_to_string(path).map_err(|e| {
                Failure::usage(format!("could not read the arguments from `{path}`: {e}"))
            })?;
            object(&text, &format!("`{path}`"))
        }
        [one] if one.trim_start().starts_with('{') || !one.contains('=') => {
            object(one, "ARGS_JSON")
        }
        pairs => {
            let mut out = Vec::with_capacity(pairs.len());
            for pair in pairs {
                let (key, value) = pair.split_once('=').filter(|(k, _)| !k.is_empty()).ok_or_else(|| {
                    Failure::usage(format!(
                        "`{pair}` is not key=value; give the arguments as one JSON object, @file.json, - (stdin), or key=value pairs"
                    ))
                })?;
                out.push((key.to_owned(), value.to_owned()));
            }
            Ok(ArgsInput::Pairs(out))
        }
    }
}

fn object(text: &str, what: &str) -> Result<ArgsInput, Failure> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(ArgsInput::Object(map)),
        Ok(other) => Err(Failure::usage(format!(
            "{what} must be a JSON object, not `{}`",
            crate::failure::cut(&other.to_string(), 60)
        ))),
        Err(e) => Err(Failure::usage(format!("{what} is not valid JSON: {e}"))),
    }
}

/// `key=value` pairs as a JSON object. A value becomes the type the schema gives its
/// property (number, integer, boolean, array, object, null); a string otherwise, and
/// when no schema is known, JSON if it parses as a number, boolean or null.
///
/// # Errors
/// A usage failure naming the key whose value does not fit its type.
pub fn typed_pairs(
    pairs: &[(String, String)],
    schema: Option<&Value>,
) -> Result<Map<String, Value>, Failure> {
    let mut out = Map::new();
    for (key, raw) in pairs {
        let declared = schema
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(key))
            .map(types_of)
            .unwrap_or_default();
        let value = coerce(raw, &declared).ok_or_else(|| {
            Failure::usage(format!(
                "argument `{key}`: `{raw}` does not fit type {}",
                declared.join(" or ")
            ))
        })?;
        out.insert(key.clone(), value);
    }
    Ok(out)
}

fn types_of(property: &Value) -> Vec<String> {
    match property.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

fn coerce(raw: &str, types: &[String]) -> Option<Value> {
    if types.is_empty() {
        return Some(match serde_json::from_str::<Value>(raw) {
            Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Null)) => v,
            _ => Value::String(raw.to_owned()),
        });
    }
    let parsed = serde_json::from_str::<Value>(raw).ok();
    for t in types {
        let fits = match (t.as_str(), &parsed) {
            ("string", _) => return Some(Value::String(raw.to_owned())),
            ("integer", Some(v @ Value::Number(n))) if n.is_i64() || n.is_u64() => Some(v.clone()),
            ("number", Some(v @ Value::Number(_))) => Some(v.clone()),
            ("boolean", Some(v @ Value::Bool(_))) => Some(v.clone()),
            ("array", Some(v @ Value::Array(_))) => Some(v.clone()),
            ("object", Some(v @ Value::Object(_))) => Some(v.clone()),
            ("null", Some(Value::Null)) => Some(Value::Null),
            _ => None,
        };
        if fits.is_some() {
            return fits;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn json_pairs_and_errors() {
        assert_eq!(
            read_args(&words(&[r#"{"a":1}"#])).unwrap(),
            ArgsInput::Object(json!({"a":1}).as_object().unwrap().clone())
        );
        assert_eq!(
            read_args(&words(&["a=1", "b=x=y"])).unwrap(),
            ArgsInput::Pairs(vec![("a".into(), "1".into()), ("b".into(), "x=y".into())])
        );
        assert!(
            read_args(&words(&["[1,2]"]))
                .unwrap_err()
                .message
                .contains("must be a JSON object")
        );
        assert!(
            read_args(&words(&["{not json"]))
                .unwrap_err()
                .message
                .contains("not valid JSON")
        );
        assert!(
            read_args(&words(&["a=1", "oops"]))
                .unwrap_err()
                .message
                .contains("not key=value")
        );
        assert_eq!(
            read_args(&words(&["@/nonexistent/args.json"]))
                .unwrap_err()
                .exit,
            2
        );
    }

    #[test]
    fn pairs_follow_the_schema() {
        let schema = json!({"properties": {
            "n": {"type": "integer"}, "s": {"type": "string"}, "b": {"type": "boolean"},
            "l": {"type": "array"}, "x": {"type": ["number", "null"]}
        }});
        let pairs: Vec<(String, String)> = [
            ("n", "3"),
            ("s", "42"),
            ("b", "true"),
            ("l", "[1]"),
            ("x", "null"),
            ("free", "2.5"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let out = typed_pairs(&pairs, Some(&schema)).unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"n": 3, "s": "42", "b": true, "l": [1], "x": null, "free": 2.5})
        );
        let bad = typed_pairs(&[("n".into(), "three".into())], Some(&schema)).unwrap_err();
        assert_eq!(
            bad.message,
            "argument `n`: `three` does not fit type integer"
        );
    }
}
