//! The JSON-RPC 2.0 envelope: [`Message`], [`RequestId`], [`ErrorCode`], [`ErrorObject`],
//! and [`decode`], which reads a frame into a [`MessageRef`] in one serde pass.
//!
//! Decoding borrows the frame and validates the envelope member by member, so a
//! malformed message still yields the request id it carried (when it had a readable one)
//! and the answer can name it. Params and results stay raw JSON ([`RawValue`]) until a
//! handler that knows their type decodes them. Key order, whitespace and escapes do not
//! matter: serde reads the frame, whatever peer wrote it.
//!
//! ```
//! use mcpflow_protocol::jsonrpc::{decode_message, Message};
//!
//! let Ok(Message::Request(req)) = decode_message(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#)
//! else {
//!     panic!("a request");
//! };
//! assert_eq!(req.method, "ping");
//! assert_eq!(req.id.to_string(), "7");
//! ```

use serde::Serialize;
use serde_json::value::RawValue;

mod decode;
mod error;
mod id;
mod message;

pub use decode::{
    DecodeError, Decoded, MessageRef, decode, decode_message, id_of_prefix, response_id_of_prefix,
};
pub use error::{
    ErrorCode, ErrorObject, MissingRequiredClientCapabilityData, UnsupportedProtocolVersionData,
};
pub use id::RequestId;
pub use message::{ErrorResponse, Message, Notification, Request, Response};

/// Serialize `value` as raw JSON params or result.
///
/// # Errors
/// When `value`'s `Serialize` implementation fails (e.g. a map with non-string keys).
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

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

    /// The envelope writer writes what serde_json writes for the same members in the
    /// same order.
    #[test]
    fn the_writer_writes_what_serde_json_writes() {
        #[derive(Serialize)]
        struct Envelope<'a> {
            jsonrpc: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<Option<&'a RequestId>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            method: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a RawValue>,
            #[serde(skip_serializing_if = "Option::is_none")]
            result: Option<&'a RawValue>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a ErrorObject>,
        }
        let envelope = |m: &Message| {
            let mut e = Envelope {
                jsonrpc: "2.0",
                id: None,
                method: None,
                params: None,
                result: None,
                error: None,
            };
            match m {
                Message::Request(r) => {
                    (e.id, e.method, e.params) = (
                        Some(Some(&r.id)),
                        Some(r.method.as_str()),
                        r.params.as_deref(),
                    );
                }
                Message::Notification(n) => {
                    (e.method, e.params) = (Some(n.method.as_str()), n.params.as_deref())
                }
                Message::Response(r) => (e.id, e.result) = (Some(Some(&r.id)), Some(&*r.result)),
                Message::Error(x) => (e.id, e.error) = (Some(x.id.as_ref()), Some(&x.error)),
            }
            serde_json::to_string(&e).unwrap()
        };
        let params =
            to_raw(&serde_json::json!({"text": "a \"q\" \u{1} é \u{7f}", "n": [1.5, null]}))
                .unwrap();
        for message in [
            Message::request(RequestId::number(-7), "tools/call", Some(params.clone())),
            Message::request(RequestId::string("id \"with\" \n escapes"), "m\u{8}", None),
            Message::request(RequestId::unsigned(u64::MAX), "ping", None),
            Message::notification("notifications/progress", Some(params.clone())),
            Message::notification("n", None),
            Message::response(RequestId::string("é"), params),
            Message::error(
                None,
                ErrorObject::method_not_found("x/y").with_data(serde_json::json!([1])),
            ),
            Message::error(Some(RequestId::number(3)), ErrorObject::internal("boom")),
        ] {
            assert_eq!(message.to_json_string(), envelope(&message));
        }
        let mut head = Vec::new();
        Message::write_response_head(&RequestId::string("a\"b"), &mut head);
        head.extend_from_slice(b"{}}");
        let whole = Message::response(
            RequestId::string("a\"b"),
            to_raw(&serde_json::json!({})).unwrap(),
        );
        assert_eq!(String::from_utf8(head).unwrap(), envelope(&whole));
    }

    #[test]
    fn ids_correlate_across_string_and_number() {
        assert!(RequestId::string("7").correlates_with(&RequestId::number(7)));
        assert!(!RequestId::string("07").correlates_with(&RequestId::number(7)));
        assert_eq!(RequestId::string("7").to_string(), "\"7\"");
        assert_eq!(RequestId::number(7).to_string(), "7");
    }

    /// The same message in the key orders and spellings different peers write decodes
    /// to one value.
    #[test]
    fn any_key_order_whitespace_or_escape_decodes_alike() {
        let expected =
            single(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#)
                .unwrap();
        for frame in [
            r#"{"method":"tools/call","params":{"name":"echo"},"jsonrpc":"2.0","id":7}"#,
            r#"{"id":7,"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            " {\n \"jsonrpc\" : \"2.0\" ,\t\"id\":7, \"method\":\"tools/call\", \"params\":{\"name\":\"echo\"} } ",
            r#"{"jsonrpc":"2.0","id":7,"method":"tools\/call","params":{"name":"echo"}}"#,
            r#"{"\u006asonrpc":"2.0","\u0069d":7,"method":"\u0074ools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"\u0032.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#,
        ] {
            let decoded = single(frame).unwrap_or_else(|e| panic!("{frame}: {e}"));
            let (Message::Request(a), Message::Request(b)) = (&decoded, &expected) else {
                panic!("{frame} is a request");
            };
            assert_eq!((&a.id, &a.method), (&b.id, &b.method), "{frame}");
            let params: serde_json::Value =
                serde_json::from_str(a.params.as_ref().unwrap().get()).unwrap();
            assert_eq!(params, serde_json::json!({"name": "echo"}), "{frame}");
        }
        for frame in [
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#,
            r#"{"result":{"a":1},"jsonrpc":"2.0","id":7}"#,
            r#"{"id":7,"result":{"a":1},"jsonrpc":"2.0"}"#,
        ] {
            let Decoded::Single(Ok(MessageRef::Response { id, result })) = decode(frame.as_bytes())
            else {
                panic!("{frame} is a response");
            };
            assert_eq!((id, result.get()), (RequestId::number(7), r#"{"a":1}"#));
        }
    }

    #[test]
    fn a_result_is_borrowed_from_its_frame() {
        let frame = br#"{"result":{"tools":[]},"jsonrpc":"2.0","id":1}"#;
        let Decoded::Single(Ok(MessageRef::Response { result, .. })) = decode(frame) else {
            panic!("a response");
        };
        let start = result.get().as_ptr().addr() - frame.as_ptr().addr();
        assert_eq!(
            &frame[start..start + result.get().len()],
            br#"{"tools":[]}"#
        );
    }

    #[test]
    fn a_malformed_response_names_the_request_it_answers_and_is_not_answered() {
        for (frame, to) in [
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}"#,
                Some(7),
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}"#,
                Some(7),
            ),
            (
                r#"{"result":{"a":1},"id":7,"jsonrpc":"2.0","result":2}"#,
                Some(7),
            ),
            (r#"{"error":{"code":"x"},"jsonrpc":"2.0","id":7}"#, Some(7)),
            (r#"{"jsonrpc":"1.0","id":7,"result":{}}"#, Some(7)),
            (r#"{"jsonrpc":"2.0","result":{"a":[1,"#, None),
            (r#"{"jsonrpc":"2.0","id":true,"result":{}}"#, None),
        ] {
            let e = single(frame).expect_err(frame);
            assert!(e.is_response(), "{frame}");
            assert_eq!(e.id(), None, "{frame}: a response is never answered");
            assert_eq!(
                e.response_to(),
                to.map(RequestId::number).as_ref(),
                "{frame}"
            );
        }
        for frame in [
            r#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"m","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"params":{"a":1"#,
        ] {
            let e = single(frame).expect_err(frame);
            assert_eq!(e.response_to(), None, "{frame}");
        }
    }

    #[test]
    fn the_id_of_a_cut_frame_is_read_only_when_whole_and_at_the_top_level() {
        for (prefix, id) in [
            (
                &br#"{"jsonrpc":"2.0","id":42,"method":"x","params":{"a":"xxxx"#[..],
                Some(RequestId::number(42)),
            ),
            (
                br#"{"id":"abc","jsonrpc":"2.0""#,
                Some(RequestId::string("abc")),
            ),
            (
                br#"{"method":"x","id":"a\"b","params":["#,
                Some(RequestId::string("a\"b")),
            ),
            (
                br#" { "\u0069d" : 7 , "method""#,
                Some(RequestId::number(7)),
            ),
            (br#"{"params":{"id":3}"#, None),
            (br#"{"params":{"a":"xxxx"#, None),
            (br#"{"jsonrpc":"2.0","id":12345"#, None),
            (br#"{"jsonrpc":"2.0","id":"abc"#, None),
            (br#"{"jsonrpc":"2.0","id":1.5,"#, None),
            (br#"[{"id":1,"#, None),
            (b"\xff\xfe", None),
        ] {
            assert_eq!(
                id_of_prefix(prefix),
                id,
                "{}",
                String::from_utf8_lossy(prefix)
            );
        }
    }
}
