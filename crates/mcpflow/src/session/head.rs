//! A request's params read once: [`RequestHead`] holds, from one serde pass over the
//! params, every member that something other than the method's own decoder needs (the
//! era, the authorization check, the HTTP header check, input rounds, tasks, progress)
//! and the members most methods take (`name`, `uri`, `arguments`, `cursor`, `taskId`).
//! Raw members stay JSON text sharing the frame's buffer, decoded only by whoever needs
//! their type.
//!
//! A member of the wrong type, or given twice, is recorded as [`Member::Invalid`] rather
//! than failing the whole read: only a method that uses the member refuses the request.

use std::borrow::Cow;
use std::fmt;

use bytes::Bytes;
use mcpflow_protocol::ErrorObject;
use mcpflow_protocol::meta2026::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY,
};
use serde::Deserializer;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// JSON text cut from a frame (one value, no surrounding whitespace), decoded by
/// whoever knows its type.
#[derive(Clone, PartialEq, Eq)]
pub struct JsonText(Bytes);

impl JsonText {
    /// `part`, text borrowed from `frame`, sharing the frame's buffer (see
    /// [`part_of`](super::reader::part_of)).
    pub(crate) fn cut(frame: &Bytes, part: &str) -> JsonText {
        JsonText(super::reader::part_of(frame, part))
    }

    /// The text. It was cut from a `&str`, so it is UTF-8.
    pub fn get(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The bytes, sharing the frame's buffer.
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }

    /// Whether the value is an object (serde hands values over without the whitespace
    /// around them, so the first byte tells).
    pub fn is_object(&self) -> bool {
        self.0.first() == Some(&b'{')
    }

    /// Decode the value as `T`.
    ///
    /// # Errors
    /// When it does not fit `T`.
    pub fn decode<'a, T: serde::Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.0)
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

/// One member of the params: absent (or `null`), present, or unusable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Member<T> {
    #[default]
    Absent,
    Present(T),
    /// Of the wrong type, or given twice: why.
    Invalid(&'static str),
}

impl<T> Member<T> {
    /// The value, when present and usable.
    pub(crate) fn get(&self) -> Option<&T> {
        match self {
            Member::Present(value) => Some(value),
            _ => None,
        }
    }

    /// The value for a method that needs it: -32602 naming `name` when it is absent or
    /// unusable.
    pub(crate) fn required(&self, name: &str) -> Result<&T, ErrorObject> {
        match self {
            Member::Present(value) => Ok(value),
            Member::Absent => Err(ErrorObject::invalid_params(format!(
                "missing field `{name}`"
            ))),
            Member::Invalid(why) => Err(ErrorObject::invalid_params(format!("`{name}` {why}"))),
        }
    }

    /// The value for a method that may go without it: -32602 when it is unusable.
    pub(crate) fn optional(&self, name: &str) -> Result<Option<&T>, ErrorObject> {
        match self {
            Member::Present(value) => Ok(Some(value)),
            Member::Absent => Ok(None),
            Member::Invalid(why) => Err(ErrorObject::invalid_params(format!("`{name}` {why}"))),
        }
    }

    fn is_present(&self) -> bool {
        !matches!(self, Member::Absent)
    }
}

/// The members of a request's params read once (see the [module documentation](self)).
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestHead {
    /// `name`: the tool or prompt.
    pub(crate) name: Member<String>,
    /// `uri`: the resource.
    pub(crate) uri: Member<String>,
    /// `cursor`: the page of a list.
    pub(crate) cursor: Member<String>,
    /// `taskId` (tasks).
    pub(crate) task_id: Member<String>,
    /// `arguments`, as sent (any JSON; methods check the kind).
    pub(crate) arguments: Member<JsonText>,
    /// `task` (2025-11-25: run the call as a task).
    pub(crate) task: Member<JsonText>,
    /// `inputResponses` (2026-07-28 input rounds).
    pub(crate) input_responses: Member<JsonText>,
    /// `requestState` (2026-07-28 input rounds).
    pub(crate) request_state: Member<String>,
    /// `_meta`, when an object.
    pub(crate) meta: Member<MetaHead>,
}

/// The members of a request's `params._meta` that the engine acts on, raw.
#[derive(Clone, Debug, Default)]
pub(crate) struct MetaHead {
    /// `progressToken`, when a string or an integer.
    pub(crate) progress_token: Option<Box<RawValue>>,
    /// `io.modelcontextprotocol/protocolVersion` (2026-07-28), any JSON.
    pub(crate) protocol_version: Option<JsonText>,
    /// `io.modelcontextprotocol/clientCapabilities`, any JSON.
    pub(crate) client_capabilities: Option<JsonText>,
    /// `io.modelcontextprotocol/clientInfo`, any JSON.
    pub(crate) client_info: Option<JsonText>,
    /// `io.modelcontextprotocol/logLevel`, any JSON.
    pub(crate) log_level: Option<JsonText>,
    /// `traceparent` (W3C trace context), any JSON.
    pub(crate) traceparent: Option<JsonText>,
    /// `tracestate`, any JSON.
    pub(crate) tracestate: Option<JsonText>,
    /// A member above was given twice.
    pub(crate) duplicate: bool,
}

impl MetaHead {
    /// Whether it carries the 2026-07-28 per-request envelope (either key, whatever its
    /// value).
    pub(crate) fn carries_envelope(&self) -> bool {
        self.protocol_version.is_some() || self.client_capabilities.is_some()
    }
}

impl RequestHead {
    /// Read the params, JSON text as it lies in `frame`, in one pass. Params that are
    /// an array (or absent) have none of these members.
    pub(crate) fn read(params: Option<&Bytes>) -> RequestHead {
        let Some(params) = params.filter(|p| p.first() == Some(&b'{')) else {
            return RequestHead::default();
        };
        let mut de = serde_json::Deserializer::from_slice(params);
        // The decoder checked the params are one JSON object, but not that its strings
        // decode: a lone surrogate fails here, and then no member is usable.
        HeadSeed(params)
            .deserialize(&mut de)
            .unwrap_or_else(|_| RequestHead::unreadable())
    }

    /// The head of params holding a string that does not decode: each text member
    /// says so to the method that needs it, rather than pass for absent.
    fn unreadable() -> RequestHead {
        const WHY: &str =
            "could not be read: the params hold a string that does not decode (a lone surrogate?)";
        RequestHead {
            name: Member::Invalid(WHY),
            uri: Member::Invalid(WHY),
            cursor: Member::Invalid(WHY),
            task_id: Member::Invalid(WHY),
            request_state: Member::Invalid(WHY),
            ..RequestHead::default()
        }
    }

    /// The `_meta` object, when there is one.
    pub(crate) fn meta(&self) -> Option<&MetaHead> {
        self.meta.get()
    }

    /// Whether the request carries the 2026-07-28 per-request envelope.
    pub(crate) fn carries_envelope(&self) -> bool {
        self.meta().is_some_and(MetaHead::carries_envelope)
    }
}

/// Reads the params object into a [`RequestHead`], cutting raw members from `.0`.
struct HeadSeed<'b>(&'b Bytes);

impl<'de> DeserializeSeed<'de> for HeadSeed<'_> {
    type Value = RequestHead;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RequestHead, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for HeadSeed<'_> {
    type Value = RequestHead;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RequestHead, A::Error> {
        let frame = self.0;
        let mut head = RequestHead::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match &*key {
                "name" => text(&mut head.name, map.next_value()?),
                "uri" => text(&mut head.uri, map.next_value()?),
                "cursor" => text(&mut head.cursor, map.next_value()?),
                "taskId" => text(&mut head.task_id, map.next_value()?),
                "requestState" => text(&mut head.request_state, map.next_value()?),
                "arguments" => raw(&mut head.arguments, frame, map.next_value()?),
                "task" => raw(&mut head.task, frame, map.next_value()?),
                "inputResponses" => raw(&mut head.input_responses, frame, map.next_value()?),
                "_meta" => {
                    let meta = map.next_value_seed(MetaSeed(frame))?;
                    head.meta = if head.meta.is_present() {
                        Member::Invalid("is given twice")
                    } else {
                        meta
                    };
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(head)
    }
}

/// Record a text member.
fn text(slot: &mut Member<String>, value: Lenient<'_>) {
    *slot = match (slot.is_present(), value) {
        (true, _) => Member::Invalid("is given twice"),
        (false, Lenient::Null) => Member::Absent,
        (false, Lenient::Text(text)) => Member::Present(text.into_owned()),
        (false, Lenient::Other) => Member::Invalid("must be a string"),
    };
}

/// Record a raw member (`null` is absent).
fn raw(slot: &mut Member<JsonText>, frame: &Bytes, value: &RawValue) {
    *slot = if slot.is_present() {
        Member::Invalid("is given twice")
    } else if value.get() == "null" {
        Member::Absent
    } else {
        Member::Present(JsonText::cut(frame, value.get()))
    };
}

/// Reads `_meta`: an object into a [`MetaHead`], anything else as unusable.
struct MetaSeed<'b>(&'b Bytes);

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = Member<MetaHead>;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Member<MetaHead>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed<'_> {
    type Value = Member<MetaHead>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`_meta`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Member<MetaHead>, A::Error> {
        let frame = self.0;
        let mut meta = MetaHead::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let slot = match &*key {
                "progressToken" => {
                    let token: &RawValue = map.next_value()?;
                    meta.duplicate |= meta.progress_token.is_some();
                    // A token is an integer or a string: the values a request id may take.
                    meta.progress_token =
                        serde_json::from_str::<mcpflow_protocol::RequestId>(token.get())
                            .is_ok()
                            .then(|| token.to_owned());
                    continue;
                }
                PROTOCOL_VERSION_KEY => &mut meta.protocol_version,
                CLIENT_CAPABILITIES_KEY => &mut meta.client_capabilities,
                CLIENT_INFO_KEY => &mut meta.client_info,
                LOG_LEVEL_KEY => &mut meta.log_level,
                "traceparent" => &mut meta.traceparent,
                "tracestate" => &mut meta.tracestate,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            let value: &RawValue = map.next_value()?;
            meta.duplicate |= slot.is_some();
            *slot = Some(JsonText::cut(frame, value.get()));
        }
        Ok(Member::Present(meta))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Member<MetaHead>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Member::Invalid("must be an object"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Member<MetaHead>, E> {
        Ok(Member::Absent)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Member<MetaHead>, E> {
        Ok(Member::Invalid("must be an object"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Member<MetaHead>, E> {
        Ok(Member::Invalid("must be an object"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Member<MetaHead>, E> {
        Ok(Member::Invalid("must be an object"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Member<MetaHead>, E> {
        Ok(Member::Invalid("must be an object"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Member<MetaHead>, E> {
        Ok(Member::Invalid("must be an object"))
    }
}

/// A member read as text when it is a string: `null`, the text, or anything else.
enum Lenient<'de> {
    Null,
    Text(Cow<'de, str>),
    Other,
}

impl<'de> serde::Deserialize<'de> for Lenient<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LenientVisitor)
    }
}

struct LenientVisitor;

impl<'de> Visitor<'de> for LenientVisitor {
    type Value = Lenient<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Text(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Null)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Lenient<'de>, E> {
        Ok(Lenient::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lenient<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Lenient::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lenient<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Lenient::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of params as the decoder hands them over: one JSON value, no
    /// surrounding whitespace.
    fn head(params: &str) -> RequestHead {
        let raw: &RawValue = serde_json::from_str(params).expect("JSON params");
        RequestHead::read(Some(&Bytes::copy_from_slice(raw.get().as_bytes())))
    }

    fn token(params: &str) -> Option<String> {
        head(params)
            .meta()
            .and_then(|m| m.progress_token.as_ref())
            .map(|t| t.get().to_owned())
    }

    #[test]
    fn a_string_that_does_not_decode_makes_the_text_members_unusable_not_absent() {
        let h = head(r#"{"name":"a\ud800b","arguments":{}}"#);
        let error = h.name.required("name").expect_err("unusable");
        assert!(
            error.message.contains("lone surrogate"),
            "{}",
            error.message
        );
        assert!(h.cursor.optional("cursor").is_err());
    }

    #[test]
    fn members_are_read_in_any_order_and_layout() {
        for params in [
            r#"{"name":"echo","arguments":{"a":[1]},"_meta":{"progressToken":7}}"#,
            r#" { "_meta" : { "progressToken" : 7 } , "arguments" : {"a":[1]}, "name":"ec\u0068o"}"#,
            r#"{"arguments":{"a":[1]},"other":{"name":"x"},"\u005fmeta":{"progressToken":7},"name":"echo"}"#,
        ] {
            let h = head(params);
            assert_eq!(h.name, Member::Present("echo".to_owned()), "{params}");
            assert_eq!(
                h.arguments.get().map(JsonText::get),
                Some(r#"{"a":[1]}"#),
                "{params}"
            );
            assert_eq!(token(params).as_deref(), Some("7"), "{params}");
            assert!(!h.carries_envelope());
        }
    }

    #[test]
    fn a_progress_token_is_a_string_or_an_integer() {
        for (params, expected) in [
            (r#"{"_meta":{"progressToken":0}}"#, Some("0")),
            (r#"{"_meta":{"progressToken":-7}}"#, Some("-7")),
            (
                r#"{"_meta":{"progressToken":18446744073709551615}}"#,
                Some("18446744073709551615"),
            ),
            (r#"{"_meta":{"progressToken":"a\"b"}}"#, Some(r#""a\"b""#)),
            (r#"{"_meta":{"progressToken":1.5}}"#, None),
            (r#"{"_meta":{"progressToken":123456789012345678901}}"#, None),
            (r#"{"_meta":{"progressToken":null}}"#, None),
            (r#"{"_meta":{}}"#, None),
            (
                r#"{"name":"echo","arguments":{"_meta":{"progressToken":1}}}"#,
                None,
            ),
            (r#"[{"progressToken":1}]"#, None),
        ] {
            assert_eq!(token(params).as_deref(), expected, "{params}");
        }
    }

    #[test]
    fn wrong_types_and_repeats_are_recorded_not_fatal() {
        let h = head(r#"{"name":5,"uri":"file:///a","cursor":["x"],"_meta":[1],"taskId":null}"#);
        assert_eq!(h.name, Member::Invalid("must be a string"));
        assert_eq!(h.uri, Member::Present("file:///a".to_owned()));
        assert_eq!(h.cursor, Member::Invalid("must be a string"));
        assert_eq!(h.task_id, Member::Absent);
        assert!(matches!(h.meta, Member::Invalid(_)));
        let h = head(r#"{"name":"a","name":"b","_meta":null}"#);
        assert_eq!(h.name, Member::Invalid("is given twice"));
        assert!(matches!(h.meta, Member::Absent));
        let refused = h.name.required("name").expect_err("a repeated name");
        assert!(
            refused.message.contains("`name` is given twice"),
            "{refused:?}"
        );
        let h = head(r#"{"_meta":{"progressToken":1,"progressToken":2}}"#);
        assert!(h.meta().is_some_and(|m| m.duplicate));
    }

    #[test]
    fn the_envelope_is_seen_whatever_its_values() {
        for params in [
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":null}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}"#,
        ] {
            assert!(head(params).carries_envelope(), "{params}");
        }
        assert!(!head(r#"{"_meta":{"io.modelcontextprotocol/clientInfo":{}}}"#).carries_envelope());
    }
}
