//! Decoding frames: one serde pass per frame, borrowing params and results.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::value::RawValue;

use super::{
    ErrorCode, ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response,
};

/// Why a frame is not a valid JSON-RPC message. [`DecodeError::code`] is the JSON-RPC
/// error to answer with; [`DecodeError::id`] the id to answer to, when one was readable.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct DecodeError {
    code: ErrorCode,
    id: Option<RequestId>,
    reason: Cow<'static, str>,
    is_response: bool,
    /// For a response: the id of the request it answers, when readable.
    response_to: Option<RequestId>,
}

impl DecodeError {
    fn parse(reason: impl Into<Cow<'static, str>>) -> Self {
        DecodeError {
            code: ErrorCode::PARSE_ERROR,
            id: None,
            reason: reason.into(),
            is_response: false,
            response_to: None,
        }
    }

    fn invalid(id: Option<RequestId>, reason: impl Into<Cow<'static, str>>) -> Self {
        DecodeError {
            code: ErrorCode::INVALID_REQUEST,
            id,
            reason: reason.into(),
            is_response: false,
            response_to: None,
        }
    }

    /// This error, for a frame that is a response to the request `to` (when known).
    fn of_response(self, to: Option<RequestId>) -> Self {
        DecodeError {
            id: None,
            is_response: true,
            response_to: to,
            ..self
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

    /// For a malformed response, the id of the request it answers, when that could be
    /// read: the request has its answer, unreadable, and need not wait for a timeout.
    ///
    /// ```
    /// use mcpflow_protocol::jsonrpc::decode_message;
    /// use mcpflow_protocol::RequestId;
    ///
    /// let cut = decode_message(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}"#).unwrap_err();
    /// assert!(cut.is_response());
    /// assert_eq!(cut.response_to(), Some(&RequestId::number(7)));
    /// ```
    pub fn response_to(&self) -> Option<&RequestId> {
        self.response_to.as_ref()
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

/// One message decoded from a frame, borrowing from it: params and results stay raw
/// JSON text in the frame until a handler that knows their type decodes them.
/// [`MessageRef::into_owned`] makes a [`Message`] of it.
#[derive(Debug)]
pub enum MessageRef<'a> {
    /// A request.
    Request {
        /// Chosen by the sender; the response carries it back.
        id: RequestId,
        /// The method name (borrowed unless it was written with escapes).
        method: Cow<'a, str>,
        /// The params, an object or an array when present.
        params: Option<&'a RawValue>,
    },
    /// A notification.
    Notification {
        /// The method name (borrowed unless it was written with escapes).
        method: Cow<'a, str>,
        /// The params, an object or an array when present.
        params: Option<&'a RawValue>,
    },
    /// A successful response.
    Response {
        /// The id of the request it answers.
        id: RequestId,
        /// The result, as it lies in the frame.
        result: &'a RawValue,
    },
    /// An error response.
    Error(ErrorResponse),
}

impl MessageRef<'_> {
    /// The message as a value of its own (params and result copied out of the frame).
    pub fn into_owned(self) -> Message {
        match self {
            MessageRef::Request { id, method, params } => Message::Request(Request {
                id,
                method: method.into_owned(),
                params: params.map(RawValue::to_owned),
            }),
            MessageRef::Notification { method, params } => Message::Notification(Notification {
                method: method.into_owned(),
                params: params.map(RawValue::to_owned),
            }),
            MessageRef::Response { id, result } => Message::Response(Response {
                id,
                result: result.to_owned(),
            }),
            MessageRef::Error(e) => Message::Error(e),
        }
    }
}

/// The result of decoding one frame: a single message or a batch (an array).
#[derive(Debug)]
pub enum Decoded<'a> {
    /// One message, or why it is invalid.
    Single(Result<MessageRef<'a>, DecodeError>),
    /// A JSON array of messages (2025-03-26 batches). Each element decodes on its own.
    Batch(Vec<Result<MessageRef<'a>, DecodeError>>),
}

/// Decode one frame (one line of stdio, one HTTP body, one SSE event) in one pass,
/// borrowing params and results from it.
///
/// ```
/// use mcpflow_protocol::jsonrpc::{decode, Decoded, MessageRef};
///
/// // Any key order, any whitespace: the envelope is read by serde.
/// let frame = br#"{"method":"tools/list","params":{},"jsonrpc":"2.0","id":7}"#;
/// let Decoded::Single(Ok(MessageRef::Request { id, method, params })) = decode(frame) else {
///     panic!("a request");
/// };
/// assert_eq!((id.to_string(), &*method), ("7".to_owned(), "tools/list"));
/// assert_eq!(params.map(|p| p.get()), Some("{}"));
/// ```
pub fn decode(frame: &[u8]) -> Decoded<'_> {
    // Checked as UTF-8 first: members the envelope skips are not checked by the parser.
    let Ok(text) = std::str::from_utf8(frame) else {
        return Decoded::Single(Err(DecodeError::parse("the message is not valid UTF-8")));
    };
    let value = text.trim_start();
    if value.starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) if items.is_empty() => {
                Decoded::Single(Err(DecodeError::invalid(None, "empty batch")))
            }
            Ok(items) => Decoded::Batch(items.into_iter().map(decode_value).collect()),
            Err(e) => Decoded::Single(Err(classify(e))),
        };
    }
    // An object, the common case, is read in one pass straight into its members.
    if value.starts_with('{') {
        return Decoded::Single(match serde_json::from_str::<Envelope<'_>>(text) {
            Ok(envelope) => from_envelope(envelope),
            Err(e) => Err(unreadable_object(text, e)),
        });
    }
    match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) => Decoded::Single(decode_value(raw)),
        Err(e) => Decoded::Single(Err(classify(e))),
    }
}

/// Decode one message that must not be a batch, as a value of its own.
///
/// # Errors
/// Why the frame is not one valid message (a batch is refused too).
pub fn decode_message(frame: &[u8]) -> Result<Message, DecodeError> {
    match decode(frame) {
        Decoded::Single(m) => m.map(MessageRef::into_owned),
        Decoded::Batch(_) => Err(DecodeError::invalid(None, "batches are not accepted here")),
    }
}

/// The top-level `id` of a frame cut short (the first bytes of one too large to read),
/// when it comes whole before anything unreadable: an oversized request can then still
/// be answered with its id.
///
/// ```
/// use mcpflow_protocol::jsonrpc::id_of_prefix;
/// use mcpflow_protocol::RequestId;
///
/// assert_eq!(id_of_prefix(br#"{"jsonrpc":"2.0","id":42,"method":"x","params":{"a":"xx"#), Some(RequestId::number(42)));
/// assert_eq!(id_of_prefix(br#"{"method":"x","id":"abc","params":{"#), Some(RequestId::string("abc")));
/// assert_eq!(id_of_prefix(br#"{"params":{"id":3}"#), None); // not at the top level
/// assert_eq!(id_of_prefix(br#"{"jsonrpc":"2.0","id":12345"#), None); // the number may go on
/// ```
pub fn id_of_prefix(prefix: &[u8]) -> Option<RequestId> {
    whole_id(prefix, &salvage(prefix))
}

/// The `id` `salvaged` from `prefix`, unless it reaches the prefix's end, where it may
/// have been cut (`12345` of `123456`).
fn whole_id(prefix: &[u8], salvaged: &Salvaged<'_>) -> Option<RequestId> {
    let raw = salvaged.id?;
    let end = raw.get().as_ptr().addr() + raw.get().len();
    if end >= prefix.as_ptr().addr() + prefix.len() {
        return None;
    }
    parse_id(raw).ok()
}

/// The id of the response a frame cut short starts, when the members read before the
/// cut make it one (a `result` or `error` member begun, no `method`, the `id` whole):
/// the request it answers can fail at once instead of waiting for its timeout, and
/// nothing is sent back for it.
///
/// ```
/// use mcpflow_protocol::jsonrpc::response_id_of_prefix;
/// use mcpflow_protocol::RequestId;
///
/// let cut = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xx"#;
/// assert_eq!(response_id_of_prefix(cut), Some(RequestId::number(7)));
/// assert_eq!(response_id_of_prefix(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"#), None);
/// ```
pub fn response_id_of_prefix(prefix: &[u8]) -> Option<RequestId> {
    let salvaged = salvage(prefix);
    if !salvaged.answer || salvaged.method {
        return None;
    }
    whole_id(prefix, &salvaged)
}

/// What the top-level members read before a frame turned out unreadable say of it.
#[derive(Default)]
struct Salvaged<'a> {
    /// The `id` member, when it was whole.
    id: Option<&'a RawValue>,
    /// Whether a `method` member was met.
    method: bool,
    /// Whether a `result` or `error` member was met.
    answer: bool,
}

/// Read the members of the top-level object of `frame` until it ends or turns
/// unreadable, noting what [`Salvaged`] keeps.
fn salvage(frame: &[u8]) -> Salvaged<'_> {
    struct Members<'s, 'a>(&'s mut Salvaged<'a>);

    impl<'a> de::DeserializeSeed<'a> for Members<'_, 'a> {
        type Value = ();
        fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'a> de::Visitor<'a> for Members<'_, 'a> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<M: de::MapAccess<'a>>(self, mut map: M) -> Result<(), M::Error> {
            while let Some(key) = map.next_key::<Cow<'a, str>>()? {
                match &*key {
                    "id" => self.0.id = Some(map.next_value()?),
                    "method" => self.0.method = true,
                    "result" | "error" => self.0.answer = true,
                    _ => {}
                }
                if key != "id" {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
            Ok(())
        }
    }

    let mut salvaged = Salvaged::default();
    let mut de = serde_json::Deserializer::from_slice(frame);
    // The frame is known to be unreadable: what was read before the failure is kept.
    let _ = de::DeserializeSeed::deserialize(Members(&mut salvaged), &mut de);
    salvaged
}

/// The error for an object that does not parse as an envelope. One whose members read
/// so far make it a response is not answered, and names the request it answers.
fn unreadable_object(text: &str, e: serde_json::Error) -> DecodeError {
    let error = classify(e);
    let salvaged = salvage(text.as_bytes());
    if salvaged.answer && !salvaged.method {
        return error.of_response(salvaged.id.and_then(|raw| parse_id(raw).ok()));
    }
    error
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

fn decode_value(raw: &RawValue) -> Result<MessageRef<'_>, DecodeError> {
    let text = raw.get();
    if !text.starts_with('{') {
        return Err(DecodeError::invalid(
            None,
            "a message must be a JSON object",
        ));
    }
    from_envelope(serde_json::from_str(text).map_err(|e| unreadable_object(text, e))?)
}

fn from_envelope(env: Envelope<'_>) -> Result<MessageRef<'_>, DecodeError> {
    let is_response = env.method.is_none() && (env.result.is_some() || env.error.is_some());
    let id = match env.id {
        None => None,
        Some(raw_id) if raw_id.get() == "null" => None,
        Some(raw_id) => match parse_id(raw_id) {
            Ok(id) => Some(id),
            Err(reason) => {
                let error = DecodeError::invalid(None, reason);
                return Err(if is_response {
                    error.of_response(None)
                } else {
                    error
                });
            }
        },
    };
    // A response is never answered, so its errors name no id to answer to, but the
    // request it answers.
    let fail = |reason: &'static str| {
        let error = DecodeError::invalid(id.clone(), reason);
        if is_response {
            error.of_response(id.clone())
        } else {
            error
        }
    };
    // The version is compared as a string, however it was written (`"\u0032.0"` too).
    let version = env
        .jsonrpc
        .map(|v| string_of(v).is_some_and(|v| v == "2.0"));
    match version {
        Some(true) => {}
        Some(false) => return Err(fail(r#"`jsonrpc` must be "2.0""#)),
        None => return Err(fail(r#"missing `"jsonrpc": "2.0"`"#)),
    }
    if let Some(method) = env.method {
        let method = string_of(method).ok_or_else(|| fail("`method` must be a string"))?;
        if env.result.is_some() || env.error.is_some() {
            return Err(fail(
                "a message cannot carry both `method` and `result`/`error`",
            ));
        }
        let params = match env.params {
            None => None,
            Some(p) if p.get().starts_with('{') || p.get().starts_with('[') => Some(p),
            Some(_) => return Err(fail("`params` must be an object or an array")),
        };
        return Ok(match id {
            Some(id) => MessageRef::Request { id, method, params },
            None if env.id.is_some() => return Err(fail("a request id must not be null")),
            None => MessageRef::Notification { method, params },
        });
    }
    match (env.result, env.error) {
        (Some(_), Some(_)) => Err(fail("a response cannot carry both `result` and `error`")),
        (Some(result), None) => match id {
            Some(id) => Ok(MessageRef::Response { id, result }),
            None => Err(fail("a result response needs an id")),
        },
        (None, Some(error)) => {
            let error: ErrorObject = serde_json::from_str(error.get()).map_err(|_| {
                fail("`error` must be an object with an integer `code` and a `message`")
            })?;
            Ok(MessageRef::Error(ErrorResponse { id, error }))
        }
        (None, None) => Err(fail("neither `method` nor `result`/`error`")),
    }
}

/// A JSON string's value, borrowed unless it was written with escapes.
fn string_of(raw: &RawValue) -> Option<Cow<'_, str>> {
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(text) => Some(Cow::Borrowed(text)),
        Err(_) => serde_json::from_str::<String>(raw.get())
            .ok()
            .map(Cow::Owned),
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
