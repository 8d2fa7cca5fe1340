//! [`Reply`]: a request's result as a [`Service`](super::Service) hands it to the engine,
//! serialized once, with room in front for the response's head.

use std::fmt;

use mcpflow_protocol::{Message, RequestId};
use serde::Serialize;
use serde_json::value::RawValue;

use super::encode::into_frame;
use super::writer::Outbound;
use crate::transport::{Frame, FrameMeta};

/// Bytes kept free in front of a serialized result for the response's head:
/// `{"jsonrpc":"2.0","id":` and `,"result":` (32 bytes) and an id of up to 24, which
/// holds every integer id and short string ids.
const HEADROOM: usize = 56;

/// A request's result, serialized: what a [`Service`](super::Service) answers with.
///
/// [`Reply::json`] serializes the result once, into a buffer with room in front for
/// the response's head, so the engine writes the response without copying or
/// reallocating the result. A result already held as raw JSON converts with `From`.
///
/// ```
/// use mcpflow::session::Reply;
/// use serde_json::json;
///
/// let reply = Reply::json(&json!({"tools": []})).unwrap();
/// assert_eq!(reply.get(), r#"{"tools":[]}"#);
///
/// let raw = serde_json::value::RawValue::from_string("{}".to_owned()).unwrap();
/// assert_eq!(Reply::from(raw).get(), "{}");
/// ```
pub struct Reply(Body);

enum Body {
    /// The result's JSON at `buf[start..]`; `buf[..start]` is free.
    Framed {
        buf: Vec<u8>,
        start: usize,
    },
    Raw(Box<RawValue>),
}

impl Reply {
    /// Serialize `value` as the result.
    ///
    /// # Errors
    /// When `value`'s `Serialize` implementation fails (a map with non-string keys, say).
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Reply, serde_json::Error> {
        Reply::written(128, |buf| serde_json::to_writer(buf, value))
    }

    /// The result `write` appends as JSON to a buffer with room for about `len` bytes
    /// of it. What `write` appends must be one JSON value.
    pub(crate) fn written(
        len: usize,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
    ) -> Result<Reply, serde_json::Error> {
        let mut buf = Vec::with_capacity(HEADROOM + len);
        buf.resize(HEADROOM, b' ');
        write(&mut buf)?;
        Ok(Reply(Body::Framed {
            buf,
            start: HEADROOM,
        }))
    }

    /// The result's JSON text.
    pub fn get(&self) -> &str {
        match &self.0 {
            // JSON written after ASCII spaces: valid UTF-8.
            Body::Framed { buf, start } => std::str::from_utf8(&buf[*start..]).unwrap_or(""),
            Body::Raw(raw) => raw.get(),
        }
    }

    /// The response to request `id` carrying this result, as a frame for the writer.
    pub(crate) fn into_frame(self, id: RequestId, meta: FrameMeta) -> Outbound {
        let (mut buf, start) = match self.0 {
            Body::Raw(raw) => return into_frame(Message::response(id, raw), meta),
            Body::Framed { buf, start } => (buf, start),
        };
        let mut head = Vec::with_capacity(HEADROOM);
        Message::write_response_head(&id, &mut head);
        if head.len() <= start {
            // The head goes in front of the result: the frame is a slice of the buffer
            // the result was serialized into.
            let at = start - head.len();
            buf[at..start].copy_from_slice(&head);
            buf.push(b'}');
            let frame = bytes::Bytes::from(buf).slice(at..);
            return Outbound::frame(Frame::new(frame), meta);
        }
        // A string id too long for the room in front: the head in a buffer of its own.
        head.reserve(buf.len() - start + 1);
        head.extend_from_slice(&buf[start..]);
        head.push(b'}');
        Outbound::new(head, meta)
    }
}

impl From<Box<RawValue>> for Reply {
    fn from(raw: Box<RawValue>) -> Reply {
        Reply(Body::Raw(raw))
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Reply").field(&self.get()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(reply: Reply, id: RequestId) -> String {
        let meta = FrameMeta::response(id.clone());
        let out = reply.into_frame(id, meta);
        String::from_utf8(out.frame.into_bytes().to_vec()).expect("UTF-8")
    }

    #[test]
    fn a_reply_becomes_the_response_for_any_id() {
        let value = serde_json::json!({"content":[{"type":"text","text":"hi \"there\""}]});
        let ids = [
            RequestId::number(7),
            RequestId::number(i64::MIN),
            RequestId::unsigned(u64::MAX),
            RequestId::string("a"),
            RequestId::string("an id longer than the room kept in front of a result"),
        ];
        for id in ids {
            for reply in [
                Reply::json(&value).expect("serializes"),
                Reply::from(serde_json::value::to_raw_value(&value).expect("serializes")),
            ] {
                let raw = serde_json::value::to_raw_value(&value).expect("serializes");
                let written = Message::response(id.clone(), raw).to_json_string();
                let text = frame(reply, id.clone());
                assert_eq!(
                    text, written,
                    "byte for byte what the envelope writer writes"
                );
                let message: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                let id_json = serde_json::to_value(&id).expect("id");
                assert_eq!(
                    message,
                    serde_json::json!({"jsonrpc":"2.0","id":id_json,"result":value}),
                    "{text}"
                );
                assert!(!text.starts_with(' '), "no padding on the wire: {text}");
            }
        }
    }

    #[test]
    fn a_large_reply_is_one_response() {
        let text = "x".repeat(crate::config::LARGE_MESSAGE_BYTES * 2);
        let reply = Reply::json(&serde_json::json!({"text": text})).expect("serializes");
        let framed = frame(reply, RequestId::number(1));
        let message: serde_json::Value = serde_json::from_str(&framed).expect("JSON");
        assert_eq!(
            message["result"]["text"].as_str().map(str::len),
            Some(text.len())
        );
    }
}
