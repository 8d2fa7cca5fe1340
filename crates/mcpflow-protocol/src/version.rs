//! Protocol versions and the server side of version negotiation.
//!
//! MCP versions are dates (`YYYY-MM-DD`). [`ProtocolVersion`] holds any string so a
//! peer's unknown version can be read, logged and answered; the associated consts name
//! the versions this crate knows.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An MCP protocol version, such as `2025-11-25`. Serializes as a plain string.
///
/// Ordering is by date: known versions are `YYYY-MM-DD` strings, which sort as text.
///
/// ```
/// use mcpflow_protocol::ProtocolVersion;
///
/// assert!(ProtocolVersion::V2025_11_25 > ProtocolVersion::V2024_11_05);
/// assert_eq!(ProtocolVersion::negotiate("2025-06-18"), ProtocolVersion::V2025_06_18);
/// assert_eq!(ProtocolVersion::negotiate("1999-01-01"), ProtocolVersion::LATEST_HANDSHAKE);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProtocolVersion(Cow<'static, str>);

impl ProtocolVersion {
    /// The first release: HTTP+SSE transport.
    pub const V2024_11_05: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2024-11-05"));
    /// Streamable HTTP, tool annotations, audio, JSON-RPC batching.
    pub const V2025_03_26: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2025-03-26"));
    /// Structured tool output, elicitation, resource links; batching removed.
    pub const V2025_06_18: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2025-06-18"));
    /// Tasks, URL elicitation, sampling with tools, icons. The last version with `initialize`.
    pub const V2025_11_25: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2025-11-25"));
    /// The stateless redesign: no handshake, per-request `_meta`.
    pub const V2026_07_28: ProtocolVersion = ProtocolVersion(Cow::Borrowed("2026-07-28"));

    /// The newest version negotiated with `initialize`.
    pub const LATEST_HANDSHAKE: ProtocolVersion = Self::V2025_11_25;

    /// A version from a static string (known or not).
    pub const fn from_static(version: &'static str) -> Self {
        ProtocolVersion(Cow::Borrowed(version))
    }

    /// The version string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this crate knows the version (handshake versions and 2026-07-28).
    pub fn is_known(&self) -> bool {
        PER_REQUEST_VERSIONS.contains(self) || self.is_handshake()
    }

    /// Whether the version is negotiated with `initialize` (2024-11-05 through 2025-11-25).
    pub fn is_handshake(&self) -> bool {
        HANDSHAKE_VERSIONS.contains(self)
    }

    /// Whether this version is `other` or newer. Versions are dates, so they compare as
    /// text; an unknown version compares by its text too.
    pub fn at_least(&self, other: &ProtocolVersion) -> bool {
        self.as_str() >= other.as_str()
    }

    /// Whether JSON-RPC batches are allowed. Only 2025-03-26 has them.
    pub fn supports_batches(&self) -> bool {
        self == &Self::V2025_03_26
    }

    /// Server side of `initialize`: the requested version when it is a handshake version
    /// this crate supports, otherwise [`ProtocolVersion::LATEST_HANDSHAKE`].
    pub fn negotiate(requested: &str) -> ProtocolVersion {
        HANDSHAKE_VERSIONS
            .iter()
            .find(|v| v.as_str() == requested)
            .cloned()
            .unwrap_or(Self::LATEST_HANDSHAKE)
    }
}

/// The versions negotiated with `initialize`, newest first.
pub const HANDSHAKE_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V2025_11_25,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2024_11_05,
];

/// The versions whose requests each carry their own version, capabilities and client
/// (`_meta`), with no `initialize`, newest first.
pub const PER_REQUEST_VERSIONS: &[ProtocolVersion] = &[ProtocolVersion::V2026_07_28];

/// The newest version negotiated with `initialize` (2025-11-25).
pub const LATEST_HANDSHAKE: ProtocolVersion = ProtocolVersion::LATEST_HANDSHAKE;

impl Default for ProtocolVersion {
    /// [`ProtocolVersion::LATEST_HANDSHAKE`].
    fn default() -> Self {
        Self::LATEST_HANDSHAKE
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ProtocolVersion {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&'static str> for ProtocolVersion {
    fn from(version: &'static str) -> Self {
        ProtocolVersion(Cow::Borrowed(version))
    }
}

impl From<String> for ProtocolVersion {
    fn from(version: String) -> Self {
        ProtocolVersion(Cow::Owned(version))
    }
}

impl FromStr for ProtocolVersion {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(ProtocolVersion(Cow::Owned(s.to_owned())))
    }
}

impl PartialEq<str> for ProtocolVersion {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ProtocolVersion {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_versions_are_newest_first() {
        let mut sorted = HANDSHAKE_VERSIONS.to_vec();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(sorted, HANDSHAKE_VERSIONS);
        assert_eq!(HANDSHAKE_VERSIONS[0], LATEST_HANDSHAKE);
    }

    #[test]
    fn negotiation_and_flags() {
        assert_eq!(
            ProtocolVersion::negotiate("2024-11-05"),
            ProtocolVersion::V2024_11_05
        );
        assert_eq!(ProtocolVersion::negotiate("2026-07-28"), LATEST_HANDSHAKE);
        assert!(ProtocolVersion::V2025_03_26.supports_batches());
        assert!(!ProtocolVersion::V2025_06_18.supports_batches());
        assert!(ProtocolVersion::V2026_07_28.is_known());
        assert!(!ProtocolVersion::V2026_07_28.is_handshake());
        assert!(!ProtocolVersion::from("2030-01-01".to_owned()).is_known());
    }

    #[test]
    fn serializes_as_plain_string() {
        let v: ProtocolVersion = serde_json::from_str("\"2031-02-03\"").expect("string");
        assert_eq!(v, "2031-02-03");
        assert_eq!(serde_json::to_string(&v).expect("ser"), "\"2031-02-03\"");
        assert!(serde_json::from_str::<ProtocolVersion>("5").is_err());
    }
}
