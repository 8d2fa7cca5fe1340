//! Logging: `logging/setLevel` and `notifications/message`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::{JsonObject, Meta};

/// Severity of a log message: the eight RFC 5424 levels, ordered from `Debug` (lowest)
/// to `Emergency` (highest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debug-level detail.
    Debug,
    /// Informational.
    #[default]
    Info,
    /// Normal but significant.
    Notice,
    /// Warning.
    Warning,
    /// Error.
    Error,
    /// Critical condition.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// Every level, lowest first.
    ///
    /// ```
    /// use mcpflow_protocol::LoggingLevel;
    /// assert_eq!(LoggingLevel::ALL[0], LoggingLevel::Debug);
    /// assert!(LoggingLevel::ALL.is_sorted());
    /// ```
    pub const ALL: [LoggingLevel; 8] = [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
        LoggingLevel::Error,
        LoggingLevel::Critical,
        LoggingLevel::Alert,
        LoggingLevel::Emergency,
    ];

    /// The wire name (`"debug"`, `"info"`, ...).
    pub fn as_str(self) -> &'static str {
        NAMES[self as usize]
    }
}

/// The wire names, in the order of the variants.
const NAMES: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// By name; anything else than a string is refused as such (the derived decoder gave
/// serde_json's bare "expected value" for a number).
impl<'de> Deserialize<'de> for LoggingLevel {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Level;
        impl serde::de::Visitor<'_> for Level {
            type Value = LoggingLevel;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a logging level: one of ")?;
                f.write_str(&NAMES.join(", "))
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<LoggingLevel, E> {
                LoggingLevel::ALL
                    .into_iter()
                    .find(|level| level.as_str() == name)
                    .ok_or_else(|| E::unknown_variant(name, &NAMES))
            }

            fn visit_bytes<E: serde::de::Error>(self, name: &[u8]) -> Result<LoggingLevel, E> {
                match std::str::from_utf8(name) {
                    Ok(name) => self.visit_str(name),
                    Err(_) => Err(E::invalid_value(serde::de::Unexpected::Bytes(name), &self)),
                }
            }
        }
        deserializer.deserialize_str(Level)
    }
}

impl std::fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Params of `logging/setLevel`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetLevelRequestParams {
    /// Lowest level the server should send.
    pub level: LoggingLevel,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl SetLevelRequestParams {
    /// Params setting `level`.
    pub fn new(level: LoggingLevel) -> Self {
        SetLevelRequestParams {
            level,
            ..Default::default()
        }
    }
}

/// Params of `notifications/message`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggingMessageNotificationParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Name of the logger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value.
    pub data: Value,
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl LoggingMessageNotificationParams {
    /// A message at `level` with `data`.
    pub fn new(level: LoggingLevel, data: impl Into<Value>) -> Self {
        LoggingMessageNotificationParams {
            level,
            data: data.into(),
            ..Default::default()
        }
    }

    /// Sets the logger name.
    #[must_use]
    pub fn with_logger(mut self, logger: impl Into<String>) -> Self {
        self.logger = Some(logger.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_lowercase() {
        assert!(LoggingLevel::Debug < LoggingLevel::Info);
        assert!(LoggingLevel::Alert < LoggingLevel::Emergency);
        let l: LoggingLevel = serde_json::from_str("\"warning\"").expect("de");
        assert_eq!(l, LoggingLevel::Warning);
        assert_eq!(
            serde_json::to_string(&LoggingLevel::Critical).expect("ser"),
            "\"critical\""
        );
        assert_eq!(LoggingLevel::Notice.to_string(), "notice");
        for (level, name) in LoggingLevel::ALL.into_iter().zip(NAMES) {
            assert_eq!(level.as_str(), name);
            let quoted = format!("\"{name}\"");
            assert_eq!(
                serde_json::from_str::<LoggingLevel>(&quoted).expect("de"),
                level
            );
        }
    }

    #[test]
    fn a_level_that_is_not_a_name_is_refused_as_such() {
        let number = serde_json::from_str::<SetLevelRequestParams>(r#"{"level":3}"#)
            .expect_err("a number")
            .to_string();
        assert!(
            number
                .starts_with("invalid type: integer `3`, expected a logging level: one of debug,"),
            "{number}"
        );
        let unknown = serde_json::from_str::<LoggingLevel>(r#""loud""#)
            .expect_err("unknown")
            .to_string();
        assert!(
            unknown.contains("unknown variant `loud`, expected one of"),
            "{unknown}"
        );
    }

    #[test]
    fn a_level_reads_from_bytes_for_formats_that_give_them() {
        use serde::de::value::{BytesDeserializer, Error};
        let level = LoggingLevel::deserialize(BytesDeserializer::<Error>::new(b"alert"));
        assert_eq!(level, Ok(LoggingLevel::Alert));
        let invalid = LoggingLevel::deserialize(BytesDeserializer::<Error>::new(b"\xff"));
        assert!(invalid.is_err());
    }
}
