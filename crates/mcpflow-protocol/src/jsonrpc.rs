//! The JSON-RPC 2.0 envelope: [`Message`], [`RequestId`], [`ErrorCode`], [`ErrorObject`].
//!
//! Decoding borrows the frame and validates the envelope by hand, field by field, so a
//! malformed message still yields the request id it carried (when it had a readable one)
//! and the answer can name it. Params and results stay raw JSON ([`RawValue`]) until a
//! handler that knows their type decodes them: each frame is parsed once.
//!
//! ```
//! use mcpflow_protocol::jsonrpc::{decode, Decoded, Message};
//!
//! let Decoded::Single(Ok(Message::Request(req))) =
//!     decode(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#)
//! else {
//!     panic!("a request");
//! };
//! assert_eq!(req.method, "ping");
//! assert_eq!(req.id.to_string(), "7");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

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

    fn write_json(&self, out: &mut Vec<u8>) {
        match &self.0 {
            IdRepr::Number(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
            IdRepr::Large(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
            IdRepr::String(s) => write_json_string(out, s),
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

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A request: it has an id and expects exactly one response.
#[derive(Clone, Debug)]
pub struct Request {
    /// Chosen by the sender; the response carries it back.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The params, undecoded (an object or an array when present).
    pub params: Option<Box<RawValue>>,
}

/// A notification: no id, never answered.
#[derive(Clone, Debug)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The params, undecoded.
    pub params: Option<Box<RawValue>>,
}

/// A successful response.
#[derive(Clone, Debug)]
pub struct Response {
    /// The id of the request it answers.
    pub id: RequestId,
    /// The result, undecoded.
    pub result: Box<RawValue>,
}

/// An error response.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorResponse {
    /// The id of the request it answers; `None` when that request's id was unreadable.
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// One JSON-RPC message.
///
/// Equality compares raw params and results as text.
#[derive(Clone, Debug)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

impl Message {
    /// A request message.
    pub fn request(
        id: RequestId,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Message::Request(Request {
            id,
            method: method.into(),
            params,
        })
    }

    /// A notification message.
    pub fn notification(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        Message::Notification(Notification {
            method: method.into(),
            params,
        })
    }

    /// A success response.
    pub fn response(id: RequestId, result: Box<RawValue>) -> Self {
        Message::Response(Response { id, result })
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Message::Error(ErrorResponse { id, error })
    }

    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            _ => None,
        }
    }

    /// Write what precedes the params of a request
    /// (`{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":`); the params and a closing
    /// `}` complete it, as [`write_json`](Self::write_json) would write it.
    ///
    /// ```
    /// use mcpflow_protocol::{Message, RequestId};
    /// use serde_json::value::RawValue;
    ///
    /// let params = RawValue::from_string("{}".to_owned())?;
    /// let mut whole = Vec::new();
    /// Message::request(RequestId::number(7), "tools/list", Some(params)).write_json(&mut whole);
    ///
    /// let mut frame = Vec::new();
    /// Message::write_request_head(&RequestId::number(7), "tools/list", &mut frame);
    /// frame.extend_from_slice(b"{}}");
    /// assert_eq!(frame, whole);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn write_request_head(id: &RequestId, method: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        id.write_json(out);
        write_method_params(out, method, None);
        out.extend_from_slice(br#","params":"#);
    }

    /// Write what precedes the result of a response with id `id`
    /// (`{"jsonrpc":"2.0","id":ID,"result":`); the result and a closing `}` complete
    /// it, as [`write_json`](Self::write_json) would write it.
    pub fn write_response_head(id: &RequestId, out: &mut Vec<u8>) {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        id.write_json(out);
        out.extend_from_slice(br#","result":"#);
    }

    /// Append a notification as compact JSON, serializing `params` straight into `out`
    /// (no intermediate raw value), as [`write_json`](Self::write_json) would write it.
    ///
    /// # Errors
    /// When `params` does not serialize; `out` then holds a partial message.
    pub fn write_notification<P: Serialize + ?Sized>(
        method: &str,
        params: Option<&P>,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
        write_json_string(out, method);
        if let Some(params) = params {
            out.extend_from_slice(br#","params":"#);
            serde_json::to_writer(&mut *out, params)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// Append this message as compact JSON (no trailing newline) to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
        match self {
            Message::Request(r) => {
                out.extend_from_slice(br#","id":"#);
                r.id.write_json(out);
                write_method_params(out, &r.method, r.params.as_deref());
            }
            Message::Notification(n) => write_method_params(out, &n.method, n.params.as_deref()),
            Message::Response(r) => {
                out.extend_from_slice(br#","id":"#);
                r.id.write_json(out);
                out.extend_from_slice(br#","result":"#);
                out.extend_from_slice(r.result.get().as_bytes());
            }
            Message::Error(e) => {
                out.extend_from_slice(br#","id":"#);
                match &e.id {
                    Some(id) => id.write_json(out),
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(br#","error":"#);
                // An `ErrorObject` always serializes: its fields are plain JSON values.
                if serde_json::to_writer(&mut *out, &e.error).is_err() {
                    out.extend_from_slice(br#"{"code":-32603,"message":"unserializable error"}"#);
                }
            }
        }
        out.push(b'}');
    }

    /// This message as a compact JSON string.
    pub fn to_json_string(&self) -> String {
        let mut out = Vec::with_capacity(128);
        self.write_json(&mut out);
        // `write_json` writes only UTF-8: literals, serde_json output and raw JSON text.
        String::from_utf8(out).unwrap_or_default()
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        fn raw(v: Option<&RawValue>) -> Option<&str> {
            v.map(RawValue::get)
        }
        match (self, other) {
            (Message::Request(a), Message::Request(b)) => {
                a.id == b.id
                    && a.method == b.method
                    && raw(a.params.as_deref()) == raw(b.params.as_deref())
            }
            (Message::Notification(a), Message::Notification(b)) => {
                a.method == b.method && raw(a.params.as_deref()) == raw(b.params.as_deref())
            }
            (Message::Response(a), Message::Response(b)) => {
                a.id == b.id && a.result.get() == b.result.get()
            }
            (Message::Error(a), Message::Error(b)) => a == b,
            _ => false,
        }
    }
}

fn write_method_params(out: &mut Vec<u8>, method: &str, params: Option<&RawValue>) {
    out.extend_from_slice(br#","method":"#);
    write_json_string(out, method);
    if let Some(p) = params {
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(p.get().as_bytes());
    }
}

fn write_json_string(out: &mut Vec<u8>, s: &str) {
    let plain = s
        .bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f);
    if plain {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else if serde_json::to_writer(&mut *out, s).is_err() {
        out.extend_from_slice(b"\"\"");
    }
}

/// Why a frame is not a valid JSON-RPC message. [`DecodeError::code`] is the JSON-RPC
/// error to answer with; [`DecodeError::id`] the id to answer to, when one was readable.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct DecodeError {
    code: ErrorCode,
    id: Option<RequestId>,
    reason: Cow<'static, str>,
    is_response: bool,
}

impl DecodeError {
    fn parse(reason: impl Into<Cow<'static, str>>) -> Self {
        DecodeError {
            code: ErrorCode::PARSE_ERROR,
            id: None,
            reason: reason.into(),
            is_response: false,
        }
    }

    fn invalid(id: Option<RequestId>, reason: impl Into<Cow<'static, str>>) -> Self {
        DecodeError {
            code: ErrorCode::INVALID_REQUEST,
            id,
            reason: reason.into(),
            is_response: false,
        }
    }

    /// `-32700` (not JSON) or `-32600` (JSON, but not a valid message).
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The id to answer to: the offending request's, when it had a readable one; never
    /// a response's (a malformed response is not answered).
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// Whether the frame looked like a response. Responses are never answered, so a
    /// malformed one is only logged.
    pub fn is_response(&self) -> bool {
        self.is_response
    }

    /// The error response to send back (callers skip it when [`Self::is_response`]).
    pub fn to_error_object(&self) -> ErrorObject {
        let title = if self.code == ErrorCode::PARSE_ERROR {
            "parse error"
        } else {
            "invalid request"
        };
        ErrorObject::new(self.code, format!("{title}: {}", self.reason))
    }
}

/// The result of decoding one frame: a single message or a batch (an array).
#[derive(Debug)]
pub enum Decoded {
    /// One message, or why it is invalid.
    Single(Result<Message, DecodeError>),
    /// A JSON array of messages (2025-03-26 batches). Each element decodes on its own.
    Batch(Vec<Result<Message, DecodeError>>),
}

/// Decode one frame (one line of stdio, one HTTP body, one SSE event).
pub fn decode(frame: &[u8]) -> Decoded {
    let first = frame.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return match serde_json::from_slice::<Vec<&RawValue>>(frame) {
            Ok(items) if items.is_empty() => {
                Decoded::Single(Err(DecodeError::invalid(None, "empty batch")))
            }
            Ok(items) => Decoded::Batch(items.into_iter().map(decode_value).collect()),
            Err(e) => Decoded::Single(Err(classify(e))),
        };
    }
    // The common case, an object, is read in one pass straight into its members.
    // (Checked as UTF-8 first: members the envelope skips are not checked by the parser.)
    if first == Some(&b'{') {
        let Ok(text) = std::str::from_utf8(frame) else {
            return Decoded::Single(Err(DecodeError::parse("the message is not valid UTF-8")));
        };
        return Decoded::Single(
            serde_json::from_str::<Envelope<'_>>(text)
                .map_err(classify)
                .and_then(from_envelope),
        );
    }
    match serde_json::from_slice::<&RawValue>(frame) {
        Ok(raw) => Decoded::Single(decode_value(raw)),
        Err(e) => Decoded::Single(Err(classify(e))),
    }
}

/// A notification read without copying anything: its method and params, borrowed from
/// the frame. `None` unless the frame is one well-formed notification (`"jsonrpc":
/// "2.0"`, a method, params an object or array if present, no `id`, `result` or
/// `error`) whose method needs no unescaping; [`decode`] says what is wrong otherwise.
pub fn peek_notification(frame: &[u8]) -> Option<(&str, Option<&RawValue>)> {
    let text = std::str::from_utf8(frame).ok()?;
    let env: Envelope<'_> = serde_json::from_str(text).ok()?;
    if env.id.is_some() || env.result.is_some() || env.error.is_some() {
        return None;
    }
    if env.jsonrpc?.get() != r#""2.0""# {
        return None;
    }
    let method = env.method?.get().strip_prefix('"')?.strip_suffix('"')?;
    if method.contains('\\') {
        return None;
    }
    let params = match env.params {
        None => None,
        Some(p) if p.get().starts_with('{') || p.get().starts_with('[') => Some(p),
        Some(_) => return None,
    };
    Some((method, params))
}

/// A success response read without copying its result: its id, and its result borrowed
/// from the frame's text. `None` unless the text is one well-formed response
/// (`"jsonrpc": "2.0"`, an id that is a string or an integer, a `result`, no `method`
/// or `error`); [`decode`] says what is wrong otherwise.
///
/// ```
/// use mcpflow_protocol::jsonrpc::peek_response;
/// use mcpflow_protocol::RequestId;
///
/// let frame = r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#;
/// let (id, result) = peek_response(frame).unwrap();
/// assert_eq!(id, RequestId::number(7));
/// assert_eq!(result.get(), r#"{"tools":[]}"#);
/// assert!(peek_response(r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}"#).is_none());
/// ```
pub fn peek_response(text: &str) -> Option<(RequestId, &RawValue)> {
    let env: Envelope<'_> = serde_json::from_str(text).ok()?;
    if env.method.is_some() || env.error.is_some() || env.jsonrpc?.get() != r#""2.0""# {
        return None;
    }
    let result = env.result?;
    let id = parse_id(env.id.filter(|id| id.get() != "null")?).ok()?;
    Some((id, result))
}

/// Decode one message that must not be a batch.
pub fn decode_message(frame: &[u8]) -> Result<Message, DecodeError> {
    match decode(frame) {
        Decoded::Single(m) => m,
        Decoded::Batch(_) => Err(DecodeError::invalid(None, "batches are not accepted here")),
    }
}

fn classify(e: serde_json::Error) -> DecodeError {
    match e.classify() {
        serde_json::error::Category::Data => DecodeError::invalid(None, e.to_string()),
        _ => DecodeError::parse(e.to_string()),
    }
}

/// Every member read as raw JSON, so a bad member never hides the others.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// `Some` for a present member, even `null` (plain `Option` would fold `null` into `None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn decode_value(raw: &RawValue) -> Result<Message, DecodeError> {
    let text = raw.get();
    if !text.starts_with('{') {
        return Err(DecodeError::invalid(
            None,
            "a message must be a JSON object",
        ));
    }
    from_envelope(serde_json::from_str(text).map_err(classify)?)
}

fn from_envelope(env: Envelope<'_>) -> Result<Message, DecodeError> {
    let is_response = env.method.is_none() && (env.result.is_some() || env.error.is_some());
    let id = match env.id {
        None => None,
        Some(raw_id) if raw_id.get() == "null" => None,
        Some(raw_id) => match parse_id(raw_id) {
            Ok(id) => Some(id),
            Err(reason) => {
                return Err(DecodeError {
                    is_response,
                    ..DecodeError::invalid(None, reason)
                });
            }
        },
    };
    // A response is never answered, so its errors name no id to answer to.
    let answer_to = id.clone().filter(|_| !is_response);
    let fail = |reason: &'static str| DecodeError {
        is_response,
        ..DecodeError::invalid(answer_to.clone(), reason)
    };
    match env.jsonrpc.map(|v| v.get()) {
        Some(r#""2.0""#) => {}
        Some(_) => return Err(fail(r#"`jsonrpc` must be "2.0""#)),
        None => return Err(fail(r#"missing `"jsonrpc": "2.0"`"#)),
    }
    if let Some(method) = env.method {
        let method: Cow<'_, str> =
            serde_json::from_str(method.get()).map_err(|_| fail("`method` must be a string"))?;
        if env.result.is_some() || env.error.is_some() {
            return Err(fail(
                "a message cannot carry both `method` and `result`/`error`",
            ));
        }
        let params = match env.params {
            None => None,
            Some(p) if p.get().starts_with('{') || p.get().starts_with('[') => Some(p.to_owned()),
            Some(_) => return Err(fail("`params` must be an object or an array")),
        };
        let method = method.into_owned();
        return Ok(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None if env.id.is_some() => return Err(fail("a request id must not be null")),
            None => Message::Notification(Notification { method, params }),
        });
    }
    match (env.result, env.error) {
        (Some(_), Some(_)) => Err(fail("a response cannot carry both `result` and `error`")),
        (Some(result), None) => match id {
            Some(id) => Ok(Message::Response(Response {
                id,
                result: result.to_owned(),
            })),
            None => Err(fail("a result response needs an id")),
        },
        (None, Some(error)) => {
            let error: ErrorObject = serde_json::from_str(error.get()).map_err(|_| {
                fail("`error` must be an object with an integer `code` and a `message`")
            })?;
            Ok(Message::Error(ErrorResponse { id, error }))
        }
        (None, None) => Err(fail("neither `method` nor `result`/`error`")),
    }
}

fn parse_id(raw: &RawValue) -> Result<RequestId, &'static str> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<String>(text)
            .map(RequestId::string)
            .map_err(|_| "unreadable string id"),
        Some(b'-' | b'0'..=b'9') => RequestId::parse_integer(text)
            .ok_or("a numeric id must be an integer from -2^63 to 2^64-1"),
        _ => Err("an id must be a string or an integer"),
    }
}

/// Serialize `value` as raw JSON params or result.
///
/// # Errors
/// When `value`'s `Serialize` implementation fails (e.g. a map with non-string keys).
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(frame: &str) -> Result<Message, DecodeError> {
        decode_message(frame.as_bytes())
    }

    #[test]
    fn integer_ids_run_from_i64_min_to_u64_max() {
        let edge = RequestId::unsigned(i64::MAX as u64);
        assert_eq!(
            edge,
            RequestId::number(i64::MAX),
            "one representation per id"
        );
        let large = RequestId::unsigned(u64::MAX);
        assert_eq!(large.as_number(), None);
        assert_eq!(large.correlation_number(), None, "never one of our own ids");
        assert_eq!(large.to_string(), "18446744073709551615");
        assert_eq!(
            serde_json::to_string(&large).unwrap(),
            "18446744073709551615"
        );
        let read: RequestId = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(read, large);
        for (text, id) in [
            ("18446744073709551615", large.clone()),
            ("9223372036854775808", RequestId::unsigned(1_u64 << 63)),
            ("-9223372036854775808", RequestId::number(i64::MIN)),
        ] {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"ping"}}"#);
            let Ok(Message::Request(request)) = single(&frame) else {
                panic!("{frame} is a request");
            };
            assert_eq!(request.id, id);
            let mut out = Vec::new();
            Message::Request(request).write_json(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), frame);
        }
        for beyond in ["18446744073709551616", "-9223372036854775809"] {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":{beyond},"method":"ping"}}"#);
            let error = single(&frame).expect_err("beyond the range");
            assert!(error.to_string().contains("-2^63 to 2^64-1"), "{error}");
        }
    }

    #[test]
    fn notifications_written_directly_match_write_json() {
        let params = serde_json::json!({"progressToken": "a\"b", "progress": 1.5});
        let mut direct = Vec::new();
        Message::write_notification("notifications/progress", Some(&params), &mut direct).unwrap();
        let raw = to_raw(&params).unwrap();
        let message = Message::notification("notifications/progress", Some(raw));
        assert_eq!(String::from_utf8(direct).unwrap(), message.to_json_string());
        let mut bare = Vec::new();
        Message::write_notification::<()>("n", None, &mut bare).unwrap();
        assert_eq!(bare, br#"{"jsonrpc":"2.0","method":"n"}"#);
    }

    #[test]
    fn peeks_at_well_formed_notifications_only() {
        let (method, params) =
            peek_notification(br#"{"params":{"a":1},"method":"n/x","jsonrpc":"2.0"}"#).unwrap();
        assert_eq!(
            (method, params.map(RawValue::get)),
            ("n/x", Some(r#"{"a":1}"#))
        );
        let (method, params) = peek_notification(br#"{"jsonrpc":"2.0","method":"n"}"#).unwrap();
        assert_eq!((method, params.is_none()), ("n", true));
        for frame in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"n"}"#[..],
            br#"{"jsonrpc":"2.0","method":"n","result":{}}"#,
            br#"{"jsonrpc":"1.0","method":"n"}"#,
            br#"{"method":"n"}"#,
            br#"{"jsonrpc":"2.0","method":"n\u002f"}"#,
            br#"{"jsonrpc":"2.0","method":"n","params":3}"#,
            br#"{"jsonrpc":"2.0","method":5}"#,
            br#"[{"jsonrpc":"2.0","method":"n"}]"#,
            b"not json",
        ] {
            let peeked = peek_notification(frame);
            assert!(peeked.is_none(), "{}", String::from_utf8_lossy(frame));
        }
    }

    #[test]
    fn peeks_at_what_decode_reads_as_a_response_only() {
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":[1,"x"]}}"#,
            r#"{"result":null,"id":"s\"q","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-3,"result":5,"params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
        ] {
            let decoded = match single(frame) {
                Ok(Message::Response(r)) => Some((r.id, r.result.get().to_owned())),
                _ => None,
            };
            let peeked = peek_response(frame).map(|(id, result)| (id, result.get().to_owned()));
            assert_eq!(peeked, decoded, "{frame}");
        }
        assert!(peek_response(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_some());
    }

    #[test]
    fn decodes_each_kind() {
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}"#),
            Ok(Message::Request(_))
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","method":"n"}"#),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Ok(Message::Response(_))
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#),
            Ok(Message::Error(ErrorResponse { id: None, .. }))
        ));
    }

    #[test]
    fn bad_shapes_name_the_id_when_readable() {
        let e = single(r#"{"jsonrpc":"1.0","id":9,"method":"m"}"#).unwrap_err();
        assert_eq!(e.code(), ErrorCode::INVALID_REQUEST);
        assert_eq!(e.id(), Some(&RequestId::number(9)));
        let e = single(r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#).unwrap_err();
        assert_eq!(e.id(), None);
        let e = single(r#"{"jsonrpc":"2.0","id":1e400,"method":"m"}"#).unwrap_err();
        assert!(matches!(
            e.code(),
            ErrorCode::PARSE_ERROR | ErrorCode::INVALID_REQUEST
        ));
        let e = single(r#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"m"}"#).unwrap_err();
        assert_eq!(e.code(), ErrorCode::INVALID_REQUEST);
        let e = single(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#).unwrap_err();
        assert_eq!(e.code(), ErrorCode::INVALID_REQUEST);
        let e = single(r#"{"jsonrpc":"2.0","id":1,"method":5}"#).unwrap_err();
        assert_eq!(e.id(), Some(&RequestId::number(1)));
        let e = single(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}"#).unwrap_err();
        assert_eq!(e.code(), ErrorCode::INVALID_REQUEST);
        assert_eq!(
            single("{not json").unwrap_err().code(),
            ErrorCode::PARSE_ERROR
        );
        assert_eq!(single("[1,2").unwrap_err().code(), ErrorCode::PARSE_ERROR);
        assert_eq!(single("42").unwrap_err().code(), ErrorCode::INVALID_REQUEST);
        assert!(
            single(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#)
                .unwrap_err()
                .is_response()
        );
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        let frame = b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\"}";
        assert_eq!(
            decode_message(frame).unwrap_err().code(),
            ErrorCode::PARSE_ERROR
        );
        // Also in a member the envelope does not read.
        let frame = b"{\"jsonrpc\":\"2.0\",\"x\":\"\xff\",\"method\":\"ping\",\"id\":1}";
        assert_eq!(
            decode_message(frame).unwrap_err().code(),
            ErrorCode::PARSE_ERROR
        );
    }

    #[test]
    fn million_deep_nesting_does_not_overflow_the_stack() {
        let depth = 1_000_000;
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":[{}1{}]}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        // Either outcome is fine; returning at all is the point.
        let _ = decode(frame.as_bytes());
        let unbalanced = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}"#,
            "[".repeat(depth)
        );
        assert!(decode_message(unbalanced.as_bytes()).is_err());
    }

    #[test]
    fn batches_decode_element_by_element() {
        let Decoded::Batch(items) =
            decode(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":true,"method":"b"}]"#)
        else {
            panic!("a batch")
        };
        assert!(items[0].is_ok());
        assert!(items[1].is_err());
        assert!(matches!(decode(b"[]"), Decoded::Single(Err(_))));
    }

    #[test]
    fn writes_round_trip() {
        let msgs = [
            Message::request(
                RequestId::string("x\"y"),
                "tools/call",
                Some(to_raw(&serde_json::json!({"a":[1,2]})).unwrap()),
            ),
            Message::notification("notifications/initialized", None),
            Message::response(
                RequestId::number(-4),
                to_raw(&serde_json::json!({})).unwrap(),
            ),
            Message::response(RequestId::number(i64::MIN), to_raw(&1).unwrap()),
            Message::response(RequestId::number(i64::MAX), to_raw(&2).unwrap()),
            Message::error(None, ErrorObject::method_not_found("x/y")),
        ];
        for m in msgs {
            let text = m.to_json_string();
            assert_eq!(single(&text).unwrap(), m, "{text}");
        }
    }

    #[test]
    fn ids_correlate_across_string_and_number() {
        assert!(RequestId::string("7").correlates_with(&RequestId::number(7)));
        assert!(!RequestId::string("07").correlates_with(&RequestId::number(7)));
        assert_eq!(RequestId::string("7").to_string(), "\"7\"");
        assert_eq!(RequestId::number(7).to_string(), "7");
    }
}
