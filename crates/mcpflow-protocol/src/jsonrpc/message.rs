//! [`Message`], the four kinds of JSON-RPC message, and their writer.

use serde::Serialize;
use serde_json::value::RawValue;

use super::{ErrorObject, RequestId};
use crate::json_text::write_str;

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
        write_str(out, method);
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
    write_str(out, method);
    if let Some(p) = params {
        out.extend_from_slice(br#","params":"#);
        out.extend_from_slice(p.get().as_bytes());
    }
}
