//! Outbound frames: each message serialized once, into the buffer the transport gets.

use bytes::Bytes;
use mcpflow_protocol::{ErrorObject, Message, RequestId};
use serde::Serialize;
use serde_json::value::RawValue;

use super::options::RequestOptions;
use super::writer::Outbound;
use crate::config::LARGE_MESSAGE_BYTES;
use crate::error::SessionError;
use crate::transport::{Frame, FrameKind, FrameMeta};

/// A reply the reader queues on the control queue.
pub(crate) fn outbound(message: &Message, kind: FrameKind) -> Outbound {
    Outbound::new(serialize(message), FrameMeta::new(kind))
}

/// The error response to `id`, its code among the frame's facts.
pub(crate) fn error_frame(id: Option<RequestId>, error: ErrorObject, meta: FrameMeta) -> Outbound {
    let meta = meta.with_error(error.code);
    Outbound::new(serialize(&Message::error(id, error)), meta)
}

/// The frame for `message`; a large response's result is not copied.
pub(crate) fn into_frame(message: Message, meta: FrameMeta) -> Outbound {
    match message {
        Message::Response(r) if r.result.get().len() >= LARGE_MESSAGE_BYTES => {
            let mut head = Vec::with_capacity(64);
            Message::write_response_head(&r.id, &mut head);
            let result = Bytes::from(Box::<str>::from(r.result).into_boxed_bytes());
            Outbound::frame(Frame::response(Bytes::from(head), result), meta)
        }
        message => Outbound::new(serialize(&message), meta),
    }
}

/// `message` as compact JSON, in a buffer sized for it.
pub(crate) fn serialize(message: &Message) -> Vec<u8> {
    let payload = match message {
        Message::Request(r) => r.params.as_ref().map_or(0, |p| p.get().len()),
        Message::Notification(n) => n.params.as_ref().map_or(0, |p| p.get().len()),
        Message::Response(r) => r.result.get().len(),
        Message::Error(_) => 0,
    };
    let mut bytes = Vec::with_capacity(128 + payload);
    message.write_json(&mut bytes);
    bytes
}

/// A request's frame, and the caller's own progress token when it set one in `_meta`.
/// Without progress or `_meta` entries the params are serialized straight into the
/// frame. With them, params that are an object with no `_meta` of their own are
/// serialized after the `_meta` in the same pass; any others are merged first.
pub(crate) fn request_frame<P: Serialize + ?Sized>(
    method: &str,
    params: &P,
    options: &RequestOptions,
    id: i64,
) -> Result<(Vec<u8>, Option<String>), SessionError> {
    let codec = |e: serde_json::Error| SessionError::Codec {
        method: method.into(),
        detail: format!("params do not serialize: {e}"),
    };
    let mut bytes = Vec::with_capacity(192);
    Message::write_request_head(&RequestId::number(id), method, &mut bytes);
    let Some((meta, alias)) = MetaEntries::of(options, id) else {
        serde_json::to_writer(&mut bytes, params).map_err(codec)?;
        bytes.push(b'}');
        return Ok((bytes, None));
    };
    bytes.extend_from_slice(br#"{"_meta":"#);
    if serde_json::to_writer(&mut bytes, &meta).is_ok() {
        let members = bytes.len();
        if serde_json::to_writer(&mut bytes, params).is_ok()
            && bytes.get(members) == Some(&b'{')
            && memchr::memmem::find(&bytes[members..], META_KEY).is_none()
        {
            // `{"_meta":{..}` then the params' members: `{"a":1}` becomes `,"a":1}`,
            // byte for byte serde_json's `flatten` of the two (a test compares them).
            if bytes.len() - members == 2 {
                bytes.truncate(members + 1);
                bytes[members] = b'}';
            } else {
                bytes[members] = b',';
            }
            bytes.push(b'}');
            return Ok((bytes, alias));
        }
    }
    let raw = serde_json::value::to_raw_value(params).map_err(codec)?;
    raw_request_frame(method, Some(raw), options, id)
}

/// How serde_json writes the key of `_meta` (it never escapes `_`).
const META_KEY: &[u8] = br#""_meta""#;

/// The `_meta` entries a request is sent with: the progress token when one is asked for
/// and none is given, then the connection's shared entries that the request's own do
/// not replace, then the request's own.
struct MetaEntries<'a> {
    token: Option<i64>,
    shared: Option<&'a serde_json::Map<String, serde_json::Value>>,
    own: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

impl<'a> MetaEntries<'a> {
    /// The entries for `options`, and the caller's own token (JSON text) to route
    /// progress by; `None` when there are no entries at all.
    fn of(options: &'a RequestOptions, id: i64) -> Option<(MetaEntries<'a>, Option<String>)> {
        let shared = options.envelope.as_deref().map(|e| &e.meta);
        let own = options.meta.as_ref();
        if !options.want_progress && shared.is_none() && own.is_none() {
            return None;
        }
        let given = [own, shared]
            .into_iter()
            .flatten()
            .find_map(|meta| meta.get(PROGRESS_TOKEN));
        let (token, alias) = match (options.want_progress, given) {
            (false, _) => (None, None),
            (true, Some(given)) => (None, Some(given.to_string())),
            (true, None) => (Some(id), None),
        };
        Some((MetaEntries { token, shared, own }, alias))
    }

    /// The shared entries that the request's own do not replace, then the request's own.
    fn entries(&self) -> impl Iterator<Item = (&'a String, &'a serde_json::Value)> {
        let own = self.own;
        let shared = self.shared.into_iter().flatten();
        shared
            .filter(move |(key, _)| !own.is_some_and(|own| own.contains_key(*key)))
            .chain(own.into_iter().flatten())
    }
}

impl Serialize for MetaEntries<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if let Some(token) = self.token {
            map.serialize_entry(PROGRESS_TOKEN, &token)?;
        }
        for (key, value) in self.entries() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

const PROGRESS_TOKEN: &str = "progressToken";

/// As [`request_frame`], for params already serialized.
pub(crate) fn raw_request_frame(
    method: &str,
    params: Option<Box<RawValue>>,
    options: &RequestOptions,
    id: i64,
) -> Result<(Vec<u8>, Option<String>), SessionError> {
    let (params, alias) = with_meta(method, params, options, id)?;
    let message = Message::request(RequestId::number(id), method, params);
    Ok((serialize(&message), alias))
}

/// Put the progress token and `_meta` entries into the params, as the options ask. A
/// caller's own `progressToken` is kept, and returned as the alias to route its
/// progress by.
fn with_meta(
    method: &str,
    params: Option<Box<RawValue>>,
    options: &RequestOptions,
    id: i64,
) -> Result<(Option<Box<RawValue>>, Option<String>), SessionError> {
    // The token is settled below: params' own `_meta` may carry one too.
    let Some((entries, _)) = MetaEntries::of(options, id) else {
        return Ok((params, None));
    };
    let codec = |detail: String| SessionError::Codec {
        method: method.into(),
        detail,
    };
    let mut object: serde_json::Map<String, serde_json::Value> = match &params {
        None => serde_json::Map::new(),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|_| codec("progress and `_meta` options need object params".to_owned()))?,
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    let serde_json::Value::Object(meta) = meta else {
        return Err(codec("`_meta` in params must be an object".to_owned()));
    };
    meta.extend(entries.entries().map(|(k, v)| (k.clone(), v.clone())));
    let mut alias = None;
    if options.want_progress {
        match meta.get(PROGRESS_TOKEN) {
            Some(token) => alias = Some(token.to_string()),
            None => {
                meta.insert(PROGRESS_TOKEN.to_owned(), id.into());
            }
        }
    }
    let raw = serde_json::value::to_raw_value(&object).map_err(|e| codec(e.to_string()))?;
    Ok((Some(raw), alias))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use std::sync::Arc;

    use super::*;
    use crate::session::RequestEnvelope;

    fn raw(text: &str) -> Option<Box<RawValue>> {
        Some(RawValue::from_string(text.to_owned()).expect("valid JSON"))
    }

    fn value(bytes: &[u8]) -> serde_json::Value {
        serde_json::from_slice(bytes).expect("valid JSON")
    }

    #[test]
    fn typed_params_are_framed_as_raw_ones_are() {
        let cases = [
            serde_json::json!({}),
            serde_json::json!({"name": "x", "arguments": {"text": "}{"}}),
            serde_json::json!({"name": "x", "arguments": {"_meta": 1}}),
            serde_json::json!({"_meta": {"k": 1}, "name": "y"}),
            serde_json::json!({"_meta": {"progressToken": "mine"}}),
        ];
        let mut meta = serde_json::Map::new();
        meta.insert("vendor".to_owned(), serde_json::json!(true));
        let mut shared = serde_json::Map::new();
        shared.insert("vendor".to_owned(), serde_json::json!("shared"));
        shared.insert("io.x/info".to_owned(), serde_json::json!({"name": "c"}));
        let enveloped = |options: RequestOptions| RequestOptions {
            envelope: Some(Arc::new(RequestEnvelope {
                meta: shared.clone(),
                mirrored: None,
            })),
            ..options
        };
        let mut own_token = serde_json::Map::new();
        own_token.insert("progressToken".to_owned(), serde_json::json!("own"));
        let options = [
            RequestOptions::new(),
            RequestOptions::new().with_progress_token(),
            RequestOptions::new()
                .with_progress_token()
                .meta(meta.clone()),
            enveloped(RequestOptions::new()),
            enveloped(RequestOptions::new().with_progress_token()),
            enveloped(RequestOptions::new().with_progress_token().meta(meta)),
            enveloped(RequestOptions::new().with_progress_token().meta(own_token)),
        ];
        for params in &cases {
            for options in &options {
                let (typed, typed_alias) = request_frame("m", params, options, 7).unwrap();
                let raw = serde_json::value::to_raw_value(params).unwrap();
                let (from_raw, alias) = raw_request_frame("m", Some(raw), options, 7).unwrap();
                assert_eq!(value(&typed), value(&from_raw), "{params:?}");
                assert_eq!(typed_alias, alias);
            }
        }
        assert!(request_frame("m", &[1], &RequestOptions::new().with_progress_token(), 7).is_err());
        let (plain, _) = request_frame("m", &serde_json::json!({"a": 1}), &options[0], 7).unwrap();
        assert_eq!(
            plain, br#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}}"#,
            "written as serde_json writes the message"
        );
    }

    /// The one-pass token is what serde_json writes for params whose first member is
    /// that `_meta`.
    #[test]
    fn a_token_is_written_as_serde_json_writes_it() {
        let mut params = mcpflow_protocol::CallToolRequestParams::new("echo");
        params.arguments = serde_json::from_str(r#"{"text":"a \"q\" é","n":[1,{}]}"#).unwrap();
        let progress = RequestOptions::new().with_progress_token();
        let (frame, alias) = request_frame("tools/call", &params, &progress, 9).unwrap();
        assert_eq!(alias, None);
        let mut expected = serde_json::to_string(&serde_json::json!({"progressToken": 9})).unwrap();
        expected = format!(r#"{{"_meta":{expected},"#);
        expected.push_str(&serde_json::to_string(&params).unwrap()[1..]);
        let expected =
            format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{expected}}}"#);
        assert_eq!(String::from_utf8(frame).unwrap(), expected);
        // `_meta` of the params' own, or in a value: merged by the general path.
        for params in [
            serde_json::json!({"_meta": {"k": 1}, "name": "x"}),
            serde_json::json!({"name": "x", "arguments": {"text": "\"_meta\""}}),
        ] {
            let (frame, _) = request_frame("m", &params, &progress, 9).unwrap();
            let raw = serde_json::value::to_raw_value(&params).unwrap();
            let (merged, _) = raw_request_frame("m", Some(raw), &progress, 9).unwrap();
            assert_eq!(frame, merged, "{params}");
        }
    }

    /// Shared entries, the request's own and the token are written in one pass as
    /// serde_json writes the same `_meta`, the request's own entries winning.
    #[test]
    fn shared_entries_are_written_under_the_requests_own() {
        let mut shared = serde_json::Map::new();
        shared.insert("a".to_owned(), serde_json::json!({"v": [1, "x"]}));
        shared.insert("b".to_owned(), serde_json::json!("shared"));
        let mut own = serde_json::Map::new();
        own.insert("b".to_owned(), serde_json::json!("own"));
        let options = RequestOptions {
            envelope: Some(Arc::new(RequestEnvelope {
                meta: shared,
                mirrored: None,
            })),
            ..RequestOptions::new().with_progress_token().meta(own)
        };
        let params = serde_json::json!({"name": "echo", "arguments": {"t": "é\""}});
        let (frame, alias) = request_frame("tools/call", &params, &options, 4).unwrap();
        assert_eq!(alias, None);
        let expected = serde_json::json!({
            "jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {
                "_meta": {"progressToken": 4, "a": {"v": [1, "x"]}, "b": "own"},
                "name": "echo", "arguments": {"t": "é\""},
            },
        });
        let written = format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"_meta":{},{}}}"#,
            r#"{"progressToken":4,"a":{"v":[1,"x"]},"b":"own"}"#,
            &serde_json::to_string(&params).unwrap()[1..],
        );
        assert_eq!(String::from_utf8(frame.clone()).unwrap(), written);
        assert_eq!(value(&frame), expected);
        let (empty, _) = request_frame("m", &serde_json::json!({}), &options, 4).unwrap();
        assert_eq!(
            value(&empty)["params"],
            serde_json::json!({"_meta": {"progressToken": 4, "a": {"v": [1, "x"]}, "b": "own"}})
        );
    }

    /// What serde_json writes for a request whose params are `meta` as `_meta`, then the
    /// members of `params`.
    fn serde_json_frame<P: Serialize>(
        id: i64,
        method: &str,
        params: &P,
        meta: &MetaEntries<'_>,
    ) -> Vec<u8> {
        #[derive(Serialize)]
        struct Request<'a, P> {
            jsonrpc: &'static str,
            id: i64,
            method: &'a str,
            params: Params<'a, P>,
        }
        #[derive(Serialize)]
        struct Params<'a, P> {
            #[serde(rename = "_meta")]
            meta: &'a MetaEntries<'a>,
            #[serde(flatten)]
            params: &'a P,
        }
        let params = Params { meta, params };
        serde_json::to_vec(&Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        })
        .unwrap()
    }

    /// The frame spliced from `{"_meta":`, the entries and the params' members is byte
    /// for byte what serde_json writes for the same request.
    #[test]
    fn the_one_pass_frame_is_what_serde_json_writes() {
        let mut shared = serde_json::Map::new();
        shared.insert("io.x/version".to_owned(), serde_json::json!("2026-07-28"));
        shared.insert(
            "io.x/info".to_owned(),
            serde_json::json!({"name": "c", "v": [1]}),
        );
        let mut own = serde_json::Map::new();
        own.insert("io.x/info".to_owned(), serde_json::json!("own"));
        own.insert("progressToken".to_owned(), serde_json::json!("mine"));
        let enveloped = |options: RequestOptions| RequestOptions {
            envelope: Some(Arc::new(RequestEnvelope {
                meta: shared.clone(),
                mirrored: None,
            })),
            ..options
        };
        let options = [
            RequestOptions::new().with_progress_token(),
            RequestOptions::new().meta(own.clone()),
            enveloped(RequestOptions::new()),
            enveloped(RequestOptions::new().with_progress_token()),
            enveloped(RequestOptions::new().with_progress_token().meta(own)),
        ];
        let mut typed = mcpflow_protocol::CallToolRequestParams::new("echo");
        typed.arguments = serde_json::from_str(r#"{"text":"}{ \"q\" é","n":[1,{}]}"#).unwrap();
        let call = serde_json::to_value(&typed).unwrap();
        for params in [
            serde_json::json!({}),
            serde_json::json!({"name": "x"}),
            call,
        ] {
            for options in &options {
                let (frame, alias) = request_frame("tools/call", &params, options, 9).unwrap();
                let (meta, expected_alias) = MetaEntries::of(options, 9).unwrap();
                let expected = serde_json_frame(9, "tools/call", &params, &meta);
                assert_eq!(
                    String::from_utf8(frame).unwrap(),
                    String::from_utf8(expected).unwrap(),
                    "{params} with {options:?}"
                );
                assert_eq!(alias, expected_alias);
            }
        }
    }

    #[test]
    fn progress_tokens_are_added_or_merged() {
        let progress = RequestOptions::new().with_progress_token();
        let params = |params: Option<Box<RawValue>>| {
            let (frame, alias) = raw_request_frame("m", params, &progress, 7).unwrap();
            (value(&frame)["params"].clone(), alias)
        };
        let token = serde_json::json!({"_meta": {"progressToken": 7}});
        assert_eq!(params(None), (token.clone(), None));
        assert_eq!(params(raw(" { } ")), (token, None));
        assert_eq!(
            params(raw(r#"{"name":"x","arguments":{"a":[1]}}"#)).0,
            serde_json::json!({"_meta": {"progressToken": 7}, "name": "x", "arguments": {"a": [1]}})
        );
        // Existing `_meta` is merged, and a caller's own token is kept as the alias.
        assert_eq!(
            params(raw(r#"{"_meta":{"k":1}}"#)).0,
            serde_json::json!({"_meta": {"k": 1, "progressToken": 7}})
        );
        assert_eq!(
            params(raw(r#"{"_meta":{"progressToken":"mine"}}"#)),
            (
                serde_json::json!({"_meta": {"progressToken": "mine"}}),
                Some(r#""mine""#.to_owned())
            )
        );
        assert!(raw_request_frame("m", raw("[1]"), &progress, 7).is_err());
        assert!(raw_request_frame("m", raw(r#"{"_meta":3}"#), &progress, 7).is_err());
    }

    #[test]
    fn a_large_result_is_framed_in_parts_without_a_copy() {
        let text = "x".repeat(LARGE_MESSAGE_BYTES);
        let result = serde_json::value::to_raw_value(&text).unwrap();
        let at = result.get().as_ptr();
        let meta = FrameMeta::new(FrameKind::Response(Some(RequestId::number(3))));
        let outbound = into_frame(Message::response(RequestId::number(3), result), meta);
        let frame = outbound.frame;
        assert!(frame.is_parted());
        assert_eq!(
            frame.parts().nth(1).map(<[u8]>::as_ptr),
            Some(at),
            "the result's own buffer"
        );
        let whole = frame.into_bytes();
        assert_eq!(
            value(&whole),
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": text})
        );
    }
}
