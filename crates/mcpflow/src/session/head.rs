//! A response, a request or a progress report read from its head alone, for the shape
//! most peers write.
//!
//! [`peek_response`](mcpflow_protocol::jsonrpc::peek_response) parses the whole frame
//! to find the result, and the caller then parses the result again to decode it. For
//! a frame that starts `{"jsonrpc":"2.0","id":ID,"result":` (this SDK writes that, and
//! so does the official Python SDK), the result is everything after that up to the
//! frame's closing `}`, so it is found without reading it: the caller's decode is then
//! the only pass over it.
//!
//! The result found this way is not checked here, and need not be: every reader of a
//! result parses all of its text and rejects what follows a value. If the text
//! between the head and the closing `}` is one JSON value, the frame is a well-formed
//! response with exactly that result; if it is not (a member after the result, a
//! brace missing, a second message), the caller's decode fails with that error
//! instead of the response being dropped.

use std::ops::Range;

use mcpflow_protocol::RequestId;
use mcpflow_protocol::jsonrpc::Request;
use serde_json::value::RawValue;

/// How this SDK opens every request and response it writes, and most peers do: such a
/// frame is no notification, and is a response exactly when `"result"` or `"error"`
/// comes next.
pub(crate) const ID_FIRST: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

/// The id and the result's byte range of a response frame that starts with the head
/// described in the module docs (whitespace allowed where JSON allows it) and whose
/// result is an object; `None` for any other frame, which then takes the full parse.
pub(crate) fn response_head(frame: &[u8]) -> Option<(RequestId, Range<usize>)> {
    let mut head = Head {
        bytes: frame,
        at: 0,
    };
    // The compact form in one comparison; else token by token.
    if head.bytes.starts_with(ID_FIRST) {
        head.at = ID_FIRST.len();
    } else {
        head.expect(b"{")?;
        head.expect(br#""jsonrpc""#)?;
        head.expect(b":")?;
        head.expect(br#""2.0""#)?;
        head.expect(b",")?;
        head.expect(br#""id""#)?;
        head.expect(b":")?;
    }
    let id = head.id()?;
    head.expect(b",")?;
    head.expect(br#""result""#)?;
    head.expect(b":")?;
    head.skip_whitespace();
    let start = head.at;
    if head.bytes.get(start) != Some(&b'{') {
        return None;
    }
    let body = before_closing_brace(&head.bytes[start..])?;
    (!body.is_empty()).then(|| (id, start..start + body.len()))
}

/// Whether `frame` opens with [`ID_FIRST`], an id and `,"method":`: a request as this
/// SDK writes it, which is no response, so [`response_head`] need not read its id first.
/// Only a scan: the id is read once, by [`request_head`].
pub(crate) fn opens_request(frame: &[u8]) -> bool {
    let Some(rest) = frame.strip_prefix(ID_FIRST) else {
        return false;
    };
    let mut head = Head { bytes: rest, at: 0 };
    if rest.starts_with(b"\"") {
        // A string id with escapes is left to the other readers.
        if head.plain_string().is_none() {
            return false;
        }
    } else {
        head.at = rest
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'-')
            .count();
    }
    rest.get(head.at..)
        .is_some_and(|after| after.starts_with(br#","method":"#))
}

/// A request that opens with [`ID_FIRST`] followed by a plain method name (no escapes)
/// and then its params or its end: `{"jsonrpc":"2.0","id":ID,"method":"M","params":P}`
/// or `{"jsonrpc":"2.0","id":ID,"method":"M"}`. The params are everything up to the
/// frame's closing `}`, and are taken only if that text is one JSON object or array
/// (`RawValue` checks it, and rejects a member after the params or a second message).
/// `None` for any other frame, which then takes the full parse and its errors.
pub(crate) fn request_head(frame: &[u8]) -> Option<Request> {
    let mut head = Head {
        bytes: frame.strip_prefix(ID_FIRST)?,
        at: 0,
    };
    let id = head.id()?;
    let mut head = Head {
        bytes: head.bytes.get(head.at..)?.strip_prefix(br#","method":"#)?,
        at: 0,
    };
    let method = head.plain_string()?.to_owned();
    let rest = head.bytes.get(head.at..)?;
    if trim_end(rest) == b"}" {
        return Some(Request {
            id,
            method,
            params: None,
        });
    }
    let params = before_closing_brace(rest.strip_prefix(br#","params":"#)?)?;
    if !(params.starts_with(b"{") || params.starts_with(b"[")) {
        return None;
    }
    let params = std::str::from_utf8(params).ok()?;
    let params = RawValue::from_string(params.to_owned()).ok()?;
    Some(Request {
        id,
        method,
        params: Some(params),
    })
}

/// How this SDK opens every progress notification it writes.
pub(crate) const PROGRESS_FIRST: &[u8] =
    br#"{"jsonrpc":"2.0","method":"notifications/progress","params":"#;

/// The params of a progress notification that opens with [`PROGRESS_FIRST`]: the rest
/// of the frame up to its closing `}`. Not checked here, as with a result found by
/// [`response_head`]: the reader parses all of it strictly, and anything that does not
/// parse as one object (a member after the params, a second message) takes the full
/// parse instead.
pub(crate) fn progress_params(frame: &[u8]) -> Option<&[u8]> {
    let params = before_closing_brace(frame.strip_prefix(PROGRESS_FIRST)?)?;
    (!params.is_empty()).then_some(params)
}

/// A cursor over the head of a frame.
struct Head<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Head<'a> {
    fn skip_whitespace(&mut self) {
        while self.bytes.get(self.at).is_some_and(|b| is_whitespace(*b)) {
            self.at += 1;
        }
    }

    /// Step over `token`, after any whitespace.
    fn expect(&mut self, token: &[u8]) -> Option<()> {
        self.skip_whitespace();
        let rest = self.bytes.get(self.at..)?;
        rest.starts_with(token).then(|| self.at += token.len())
    }

    /// An integer id in JSON's syntax, or a string id without escapes or control
    /// characters. (Any other id takes the full parse.)
    fn id(&mut self) -> Option<RequestId> {
        self.skip_whitespace();
        let rest = self.bytes.get(self.at..)?;
        if rest.starts_with(b"\"") {
            return Some(RequestId::string(self.plain_string()?));
        }
        let sign = usize::from(rest.first() == Some(&b'-'));
        let digits = rest[sign..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        // JSON has no leading zeros; a fraction or exponent is not an integer id.
        if digits == 0 || (digits > 1 && rest[sign] == b'0') {
            return None;
        }
        let len = sign + digits;
        if matches!(rest.get(len), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let id = RequestId::parse_integer(std::str::from_utf8(&rest[..len]).ok()?)?;
        self.at += len;
        Some(id)
    }

    /// A JSON string at the cursor that needs no unescaping (no `\`, no control
    /// characters), without its quotes.
    fn plain_string(&mut self) -> Option<&'a str> {
        let string = self.bytes.get(self.at..)?.strip_prefix(b"\"")?;
        let len = string.iter().position(|b| *b == b'"')?;
        let text = &string[..len];
        if text.iter().any(|b| *b == b'\\' || *b < 0x20) {
            return None;
        }
        self.at += len + 2;
        std::str::from_utf8(text).ok()
    }
}

/// What lies before the frame's closing `}` (whitespace around it dropped); `None` when
/// the frame does not end with one.
fn before_closing_brace(rest: &[u8]) -> Option<&[u8]> {
    Some(trim_end(trim_end(rest).strip_suffix(b"}")?))
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn trim_end(bytes: &[u8]) -> &[u8] {
    let kept = bytes
        .iter()
        .rposition(|b| !is_whitespace(*b))
        .map_or(0, |i| i + 1);
    &bytes[..kept]
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpflow_protocol::jsonrpc::peek_response;

    /// What the full parse makes of `frame`: the id and the result's range.
    fn full(frame: &str) -> Option<(RequestId, Range<usize>)> {
        let (id, result) = peek_response(frame)?;
        let start = result.get().as_ptr().addr() - frame.as_ptr().addr();
        Some((id, start..start + result.get().len()))
    }

    #[test]
    fn finds_what_the_full_parse_finds_for_the_common_shape() {
        for frame in [
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":-3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":0,"result":{"a":"}"}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","id":"abc-1","result":{"nested":{"x":[1,{}]}}}"#,
            " { \"jsonrpc\" : \"2.0\" ,\n\"id\"\t: 12 , \"result\" :\r\n {\"a\" : 1} \n } \r\n",
        ] {
            let fast = response_head(frame.as_bytes());
            assert!(fast.is_some(), "{frame}");
            assert_eq!(fast, full(frame), "{frame}");
        }
    }

    #[test]
    fn leaves_every_other_shape_to_the_full_parse() {
        for frame in [
            // Another order, or another member first.
            r#"{"id":1,"jsonrpc":"2.0","result":{}}"#,
            r#"{"result":{},"jsonrpc":"2.0","id":1}"#,
            // Not a result, or not an object.
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
            // Ids that are not plain integers or plain strings.
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":01,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":+1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1e3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"a","#,
            // Wrong version, or no closing brace.
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"#,
            r#"{"jsonrpc":"2.0","id":1,"result":"#,
            "",
        ] {
            assert_eq!(response_head(frame.as_bytes()), None, "{frame}");
        }
    }

    /// What the full decode makes of a request frame: id, method and params' text.
    fn full_request(frame: &str) -> Option<(RequestId, String, Option<String>)> {
        use mcpflow_protocol::Message;
        use mcpflow_protocol::jsonrpc::{Decoded, decode};
        match decode(frame.as_bytes()) {
            Decoded::Single(Ok(Message::Request(r))) => {
                Some((r.id, r.method, r.params.map(|p| p.get().to_owned())))
            }
            _ => None,
        }
    }

    #[test]
    fn reads_a_request_as_the_full_decode_does() {
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"}"}}}"#,
            r#"{"jsonrpc":"2.0","id":"a-1","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":-7,"method":"x","params":[1,{"a":[]}]} "#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/list","params":{}}"#,
        ] {
            let fast = request_head(frame.as_bytes())
                .map(|r| (r.id, r.method, r.params.map(|p| p.get().to_owned())));
            assert!(fast.is_some(), "{frame}");
            assert_eq!(fast, full_request(frame), "{frame}");
        }
    }

    #[test]
    fn tells_a_request_in_this_sdks_layout_from_any_response() {
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":"a-1","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":-7,"method":"x"}"#,
        ] {
            assert!(opens_request(frame.as_bytes()), "{frame}");
        }
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"method":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":"a,\"method\":","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"a\",\"method\":","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":",\"method\":"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":1}"#,
            r#"{"jsonrpc":"2.0","id":"#,
            r#"{"jsonrpc":"2.0","id":"unterminated"#,
        ] {
            assert!(!opens_request(frame.as_bytes()), "{frame}");
        }
    }

    #[test]
    fn leaves_every_other_request_to_the_full_decode() {
        for frame in [
            // A member after the params, a second message, a brace missing.
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}{"a":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1},"params":{}}"#,
            // Params that are no object or array, a method with escapes or not a string.
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"a\"b","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"a\u0062","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7,"params":{}}"#,
            // Ids the head does not read, another order, another version.
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":1}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m""#,
        ] {
            assert!(request_head(frame.as_bytes()).is_none(), "{frame}");
        }
    }

    #[test]
    fn finds_the_params_of_a_progress_report_in_this_sdks_layout() {
        for (frame, params) in [
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2.0}}"#,
                r#"{"progressToken":1,"progress":2.0}"#,
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"a\":\"}\"} }\r",
                r#"{"a":"}"}"#,
            ),
            // A member after the params, a brace missing, params that are no object:
            // found, and the reader's strict parse then refuses them.
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{},"id":1}"#,
                r#"{},"id":1"#,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}"#,
                "{",
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":[1,2]}"#,
                "[1,2]",
            ),
        ] {
            let found = progress_params(frame.as_bytes()).map(|p| std::str::from_utf8(p).unwrap());
            assert_eq!(found, Some(params), "{frame}");
        }
        for frame in [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":}"#,
            r#"{"method":"notifications/progress","jsonrpc":"2.0","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
        ] {
            assert_eq!(progress_params(frame.as_bytes()), None, "{frame}");
        }
    }

    /// A malformed tail is found as a result that does not parse: the caller's strict
    /// decode then fails, where the full parse drops the frame.
    #[test]
    fn a_malformed_tail_leaves_a_result_that_does_not_parse() {
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}} {"b":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}}"#,
        ] {
            assert_eq!(full(frame), None, "{frame}");
            let (_, range) = response_head(frame.as_bytes()).expect("the head matches");
            assert!(
                serde_json::from_str::<serde_json::Value>(&frame[range]).is_err(),
                "{frame}"
            );
        }
    }
}
