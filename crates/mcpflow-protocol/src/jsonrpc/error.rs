//! [`ErrorCode`] and [`ErrorObject`]: the `error` member of an error response.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::capabilities::ClientCapabilities;
use crate::meta::JsonObject;
use crate::version::ProtocolVersion;

/// A JSON-RPC error code. A newtype, not an enum, so codes this crate does not know
/// still round-trip.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters (unknown tool or prompt, bad cursor, bad arguments).
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal error (also used, with `data.reason = "busy"`, when a peer's requests
    /// exceed the configured limits).
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// Legacy-era "resource not found" (2024-11-05 through 2025-11-25).
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// URL elicitation required (2025-11-25 only).
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);
    /// A header disagrees with the body (2026-07-28).
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// A client capability the request needs was not declared (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct ErrorObject {
    /// What kind of error.
    pub code: ErrorCode,
    /// A short description.
    pub message: String,
    /// Anything else the sender attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    /// An error with no `data`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attach `data`.
    #[must_use]
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32601`, naming the method.
    pub fn method_not_found(method: &str) -> Self {
        ErrorObject::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// `-32602` with a reason.
    pub fn invalid_params(reason: impl fmt::Display) -> Self {
        ErrorObject::new(
            ErrorCode::INVALID_PARAMS,
            format!("invalid params: {reason}"),
        )
    }

    /// `-32603` with a reason.
    pub fn internal(reason: impl fmt::Display) -> Self {
        ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!("internal error: {reason}"),
        )
    }
}

impl ErrorObject {
    /// `-32020` (2026-07-28): an HTTP header disagrees with the body, or is missing or
    /// malformed.
    pub fn header_mismatch(reason: impl fmt::Display) -> Self {
        ErrorObject::new(
            ErrorCode::HEADER_MISMATCH,
            format!("Header mismatch: {reason}"),
        )
    }

    /// `-32021` (2026-07-28) with `data.requiredCapabilities`.
    pub fn missing_required_client_capability(required: ClientCapabilities) -> Self {
        let data = MissingRequiredClientCapabilityData {
            required_capabilities: required,
            extra: JsonObject::new(),
        };
        ErrorObject::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(serde_json::to_value(data).unwrap_or_default())
    }

    /// `-32022` (2026-07-28) with `data.supported` and `data.requested`.
    pub fn unsupported_protocol_version(
        requested: impl Into<String>,
        supported: Vec<ProtocolVersion>,
    ) -> Self {
        let data = UnsupportedProtocolVersionData {
            supported,
            requested: requested.into(),
            extra: JsonObject::new(),
        };
        ErrorObject::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(serde_json::to_value(data).unwrap_or_default())
    }

    /// `data` read as `T` (e.g. [`UnsupportedProtocolVersionData`]); `None` when absent or
    /// of another shape.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_value(self.data.clone()?).ok()
    }
}

/// `data` of `-32022` `UnsupportedProtocolVersionError`.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct UnsupportedProtocolVersionData {
    /// Versions the server supports; the client retries with one of them.
    pub supported: Vec<ProtocolVersion>,
    /// The version the client asked for.
    pub requested: String,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `data` of `-32021` `MissingRequiredClientCapabilityError`.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request needs.
    pub required_capabilities: ClientCapabilities,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}
