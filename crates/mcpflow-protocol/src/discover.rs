//! `server/discover` (2026-07-28): the server's versions, capabilities and instructions,
//! asked for without a handshake.

use serde::{Deserialize, Serialize};

use crate::capabilities::ServerCapabilities;
use crate::meta::{JsonObject, Meta};
use crate::meta2026::{CacheScope, ResultType};
use crate::version::ProtocolVersion;

/// Result of `server/discover` (`DiscoverResult`). Its params are
/// [`EmptyParams`](crate::EmptyParams) carrying the per-request `_meta`.
///
/// The server's name and version go in `_meta["io.modelcontextprotocol/serverInfo"]`
/// (see [`ResultMeta`](crate::meta2026::ResultMeta)).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// `complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Protocol versions the server speaks.
    pub supported_versions: Vec<ProtocolVersion>,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// Guidance on using the server, e.g. for a system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the client may cache this result, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the cached result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result metadata (`serverInfo`).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl DiscoverResult {
    /// A complete result listing `versions` and `capabilities`.
    pub fn new(versions: Vec<ProtocolVersion>, capabilities: ServerCapabilities) -> Self {
        DiscoverResult {
            result_type: Some(ResultType::Complete),
            supported_versions: versions,
            capabilities,
            ..Default::default()
        }
    }
}
