//! JSON output for `f64` fields.
//!
//! MCP numbers such as `progress`, `total` or `priority` are JSON numbers, and peers
//! usually send whole values as integers (`"progress": 50`). Serializing an `f64` with
//! serde_json would print `50.0`; these helpers print whole values that fit in an `i64`
//! as integers, so a message read and written again keeps its shape.

use serde::Serializer;

/// Largest magnitude below which every whole `f64` is exactly an `i64` (2^53).
const EXACT_INT_LIMIT: f64 = 9_007_199_254_740_992.0;

fn write<S: Serializer>(value: f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_finite() && value.fract() == 0.0 && value.abs() <= EXACT_INT_LIMIT {
        // Exact: the value is whole and within the 2^53 range.
        #[allow(clippy::cast_possible_truncation)]
        serializer.serialize_i64(value as i64)
    } else {
        serializer.serialize_f64(value)
    }
}

/// Serializes an `f64`, printing whole values as integers.
pub(crate) fn f64<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    write(*value, serializer)
}

/// Serializes an `Option<f64>` (used with `skip_serializing_if = "Option::is_none"`).
pub(crate) fn opt_f64<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => write(*v, serializer),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize)]
    struct N {
        #[serde(serialize_with = "super::f64")]
        a: f64,
        #[serde(serialize_with = "super::opt_f64")]
        b: Option<f64>,
    }

    #[test]
    fn whole_values_print_as_integers() {
        let json = serde_json::to_string(&N {
            a: 50.0,
            b: Some(0.5),
        })
        .expect("serializes");
        assert_eq!(json, r#"{"a":50,"b":0.5}"#);
        let json = serde_json::to_string(&N { a: -3.0, b: None }).expect("serializes");
        assert_eq!(json, r#"{"a":-3,"b":null}"#);
    }
}
