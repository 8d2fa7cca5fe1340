//! [`RequestId`]: the id that pairs a request with its response.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::json_text::write_str;

/// A JSON-RPC request id: a string or an integer from `i64::MIN` to `u64::MAX` (never
/// `null`, never a bool).
///
/// The representation is private. `Display` quotes string ids, so `7` and `"7"` read
/// differently in logs; [`RequestId::correlates_with`] treats them as the same id, as the
/// official SDKs do when they match responses.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestId(IdRepr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum IdRepr {
    Number(i64),
    /// An integer above `i64::MAX` (never one that fits `Number`, so equal ids have one
    /// representation). This side never sends one; it answers peers that do.
    Large(u64),
    String(Arc<str>),
}

impl RequestId {
    /// An integer id.
    pub const fn number(n: i64) -> Self {
        RequestId(IdRepr::Number(n))
    }

    /// An integer id given unsigned: up to `u64::MAX`, as large as a peer may send.
    ///
    /// ```
    /// use mcpflow_protocol::RequestId;
    /// assert_eq!(RequestId::unsigned(7), RequestId::number(7));
    /// assert_eq!(RequestId::unsigned(u64::MAX).to_string(), "18446744073709551615");
    /// ```
    pub fn unsigned(n: u64) -> Self {
        match i64::try_from(n) {
            Ok(n) => RequestId::number(n),
            Err(_) => RequestId(IdRepr::Large(n)),
        }
    }

    /// An integer id from its decimal text: `None` unless the text is an integer from
    /// `i64::MIN` to `u64::MAX`.
    ///
    /// ```
    /// use mcpflow_protocol::RequestId;
    /// assert_eq!(RequestId::parse_integer("-7"), Some(RequestId::number(-7)));
    /// assert_eq!(RequestId::parse_integer("18446744073709551615"), Some(RequestId::unsigned(u64::MAX)));
    /// assert_eq!(RequestId::parse_integer("1.5"), None);
    /// ```
    pub fn parse_integer(text: &str) -> Option<Self> {
        text.parse::<i64>()
            .map(RequestId::number)
            .or_else(|_| text.parse::<u64>().map(RequestId::unsigned))
            .ok()
    }

    /// A string id.
    pub fn string(s: impl Into<Arc<str>>) -> Self {
        RequestId(IdRepr::String(s.into()))
    }

    /// The integer, when this is an integer id that fits an `i64`.
    pub fn as_number(&self) -> Option<i64> {
        match self.0 {
            IdRepr::Number(n) => Some(n),
            IdRepr::Large(_) | IdRepr::String(_) => None,
        }
    }

    /// The string, when this is a string id.
    pub fn as_str(&self) -> Option<&str> {
        match &self.0 {
            IdRepr::Number(_) | IdRepr::Large(_) => None,
            IdRepr::String(s) => Some(s),
        }
    }

    /// The integer this id stands for when matching responses: the integer itself, or a
    /// string holding a canonical decimal integer (`"7"`, not `"07"` or `"+7"`).
    pub fn correlation_number(&self) -> Option<i64> {
        match &self.0 {
            IdRepr::Number(n) => Some(*n),
            IdRepr::Large(_) => None,
            IdRepr::String(s) => {
                let n: i64 = s.parse().ok()?;
                (n.to_string() == **s).then_some(n)
            }
        }
    }

    /// Whether a response carrying `self` answers a request sent with `other`
    /// (equal ids, or an integer and its decimal string).
    pub fn correlates_with(&self, other: &RequestId) -> bool {
        self == other
            || matches!(
                (self.correlation_number(), other.correlation_number()),
                (Some(a), Some(b)) if a == b
            )
    }

    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match &self.0 {
            IdRepr::Number(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
            IdRepr::Large(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
            IdRepr::String(s) => write_str(out, s),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            IdRepr::Number(n) => write!(f, "{n}"),
            IdRepr::Large(n) => write!(f, "{n}"),
            IdRepr::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({self})")
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::string(s)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            IdRepr::Number(n) => serializer.serialize_i64(*n),
            IdRepr::Large(n) => serializer.serialize_u64(*n),
            IdRepr::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl de::Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer from -2^63 to 2^64-1")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                Ok(RequestId::unsigned(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::string(v))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}
