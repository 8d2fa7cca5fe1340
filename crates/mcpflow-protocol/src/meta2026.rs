//! 2026-07-28 envelope pieces shared by every message: the per-request `_meta` keys that
//! replace `initialize`, the result `_meta` keys, [`ResultType`] and the cache hints
//! ([`CacheScope`], `ttlMs`).
//!
//! The keys stay in the ordinary [`Meta`] map of each params or result type, so a message
//! round-trips unchanged; [`RequestMeta`] and [`ResultMeta`] are typed views of them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::capabilities::ClientCapabilities;
use crate::implementation::Implementation;
use crate::jsonrpc::RequestId;
use crate::logging::LoggingLevel;
use crate::meta::{JsonObject, Meta, ProgressToken};
use crate::version::ProtocolVersion;

/// Request `_meta` key: the protocol version of this request (required in 2026-07-28).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// Request `_meta` key: the client's capabilities for this request (required).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// Request `_meta` key: the client's name and version (SHOULD).
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// Request `_meta` key: the lowest log level sent for this request (optional; absent
/// means no `notifications/message` at all).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key: the server's name and version (SHOULD).
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Notification and result `_meta` key: the id of the `subscriptions/listen` request a
/// message belongs to.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The typed view of a 2026-07-28 request `_meta` (`RequestMetaObject`).
///
/// ```
/// use mcpflow_protocol::meta2026::RequestMeta;
/// use mcpflow_protocol::{ClientCapabilities, ProtocolVersion};
///
/// let meta = RequestMeta::new(ProtocolVersion::V2026_07_28, ClientCapabilities::default());
/// let map = meta.to_meta();
/// assert_eq!(map["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
/// assert_eq!(RequestMeta::from_meta(&map).unwrap(), meta);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`.
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<ProtocolVersion>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_capabilities: Option<ClientCapabilities>,
    /// `io.modelcontextprotocol/clientInfo`.
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel`.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// `progressToken`.
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<ProgressToken>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RequestMeta {
    /// The two required keys.
    pub fn new(version: ProtocolVersion, capabilities: ClientCapabilities) -> Self {
        RequestMeta {
            protocol_version: Some(version),
            client_capabilities: Some(capabilities),
            ..Default::default()
        }
    }

    /// Sets `clientInfo`.
    #[must_use]
    pub fn with_client_info(mut self, info: Implementation) -> Self {
        self.client_info = Some(info);
        self
    }

    /// Sets `logLevel`.
    #[must_use]
    pub fn with_log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Reads the keys of a `_meta` map; an error names a key of the wrong shape.
    pub fn from_meta(meta: &Meta) -> Result<Self, serde_json::Error> {
        view_of(meta)
    }

    /// Whether both required keys (`protocolVersion`, `clientCapabilities`) are present,
    /// which is what marks a request as 2026-07-28 (stateless) rather than handshake era.
    pub fn is_per_request(&self) -> bool {
        self.protocol_version.is_some() && self.client_capabilities.is_some()
    }

    /// The `_meta` map.
    pub fn to_meta(&self) -> Meta {
        map_of(self)
    }
}

/// Whether a request `_meta` carries the 2026-07-28 protocol version key.
pub fn has_per_request_meta(meta: Option<&Meta>) -> bool {
    meta.is_some_and(|m| m.contains_key(PROTOCOL_VERSION_KEY))
}

/// The typed view of a 2026-07-28 result or notification `_meta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResultMeta {
    /// `io.modelcontextprotocol/serverInfo`.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// `io.modelcontextprotocol/subscriptionId`.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResultMeta {
    /// Reads the keys of a `_meta` map.
    pub fn from_meta(meta: &Meta) -> Result<Self, serde_json::Error> {
        view_of(meta)
    }

    /// The `_meta` map.
    pub fn to_meta(&self) -> Meta {
        map_of(self)
    }
}

/// A typed view of a `_meta` map.
fn view_of<T: serde::de::DeserializeOwned>(meta: &Meta) -> Result<T, serde_json::Error> {
    serde_json::from_value(serde_json::Value::Object(meta.clone()))
}

/// A typed view written back as a `_meta` map.
fn map_of<T: Serialize>(view: &T) -> Meta {
    match serde_json::to_value(view) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => Meta::new(),
    }
}

/// Reads `io.modelcontextprotocol/subscriptionId` from a `_meta`.
pub fn subscription_id(meta: Option<&Meta>) -> Option<RequestId> {
    serde_json::from_value(meta?.get(SUBSCRIPTION_ID_KEY)?.clone()).ok()
}

/// Sets `io.modelcontextprotocol/subscriptionId` in an optional `_meta`.
pub fn set_subscription_id(meta: &mut Option<Meta>, id: &RequestId) {
    if let Ok(v) = serde_json::to_value(id) {
        meta.get_or_insert_with(Meta::new)
            .insert(SUBSCRIPTION_ID_KEY.to_owned(), v);
    }
}

/// `resultType` (2026-07-28): how to read a result. Absent means complete.
///
/// The schema types it as an open string, so other values round-trip as [`ResultType::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResultType {
    /// `complete`: the final result.
    Complete,
    /// `input_required`: an [`InputRequiredResult`](crate::mrtr::InputRequiredResult).
    InputRequired,
    /// `task` (tasks extension): a task was created.
    Task,
    /// Any other value.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
            ResultType::Other(s) => s,
        }
    }

    /// From the wire string.
    pub fn parse(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            "task" => ResultType::Task,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(ResultType::parse(&String::deserialize(deserializer)?))
    }
}

/// `cacheScope` (2026-07-28): who may reuse a cached result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CacheScope {
    /// No user-specific data: any cache may share it across authorization contexts.
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_meta_reads_and_writes() {
        let v = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/logLevel": "warning",
            "progressToken": 3,
            "com.example/trace": "t"
        });
        let meta: RequestMeta = serde_json::from_value(v.clone()).expect("reads");
        assert!(meta.is_per_request());
        assert_eq!(meta.log_level, Some(LoggingLevel::Warning));
        assert_eq!(serde_json::to_value(&meta).expect("writes"), v);
        assert!(!RequestMeta::default().is_per_request());
    }

    #[test]
    fn result_type_round_trips_unknown() {
        for s in ["complete", "input_required", "task", "later"] {
            let t: ResultType = serde_json::from_value(json!(s)).expect("reads");
            assert_eq!(serde_json::to_value(&t).expect("writes"), json!(s));
        }
        assert!(serde_json::from_value::<CacheScope>(json!("shared")).is_err());
    }

    #[test]
    fn subscription_id_helpers() {
        let mut meta = None;
        set_subscription_id(&mut meta, &RequestId::from("listen-1"));
        assert_eq!(
            subscription_id(meta.as_ref()),
            Some(RequestId::from("listen-1"))
        );
    }
}
