//! What a request handler gets besides the params: [`RequestContext`], and the reading
//! of the request's `params._meta` it carries.

use std::sync::OnceLock;

use mcpflow_protocol::RequestId;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::Peer;
use super::cancel::RequestCancel;
use crate::error::SessionError;

type JsonObject = serde_json::Map<String, serde_json::Value>;

/// What a request handler gets besides the params: its id, its cancellation token, its
/// progress token and a [`Peer`] whose messages are tagged as sent on behalf of this
/// request (HTTP routes them onto this request's stream).
#[derive(Clone, Debug)]
pub struct RequestContext {
    id: RequestId,
    progress_token: Option<Box<RawValue>>,
    meta: Option<MetaText>,
    /// `meta` decoded, the first time a handler asks.
    meta_map: OnceLock<Option<JsonObject>>,
    cancel: std::sync::Arc<RequestCancel>,
    peer: Peer,
}

/// A request's `params._meta`, as received.
#[derive(Clone, Debug)]
enum MetaText {
    /// Exactly `{"progressToken":TOKEN}`, the most common `_meta` by far: rebuilt from
    /// the token when a handler asks, so it costs no copy of its own.
    TokenOnly,
    Raw(Box<RawValue>),
}

impl RequestContext {
    /// The context of the request `id` with these params, reading the progress token
    /// and `_meta` from them.
    pub(crate) fn new(
        id: RequestId,
        params: Option<&RawValue>,
        cancel: std::sync::Arc<RequestCancel>,
        peer: Peer,
    ) -> RequestContext {
        let (meta, progress_token) = params.map_or((None, None), |p| meta_of(p.get()));
        RequestContext {
            id,
            progress_token,
            meta,
            meta_map: OnceLock::new(),
            cancel,
            peer,
        }
    }

    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The peer, for requests and notifications related to this request.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Tripped when the peer cancels the request or the connection closes.
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancel.token()
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The request's `params._meta`, as the peer sent it (vendor keys included).
    pub fn meta(&self) -> Option<&JsonObject> {
        let meta = self.meta.as_ref()?;
        self.meta_map
            .get_or_init(|| match meta {
                MetaText::Raw(raw) => serde_json::from_str(raw.get()).ok(),
                MetaText::TokenOnly => {
                    let token = serde_json::from_str(self.progress_token.as_deref()?.get()).ok()?;
                    Some(JsonObject::from_iter([("progressToken".to_owned(), token)]))
                }
            })
            .as_ref()
    }

    /// The progress token the peer sent, as raw JSON.
    pub fn progress_token(&self) -> Option<&RawValue> {
        self.progress_token.as_deref()
    }

    /// Send `notifications/progress` for this request. Does nothing when the peer did
    /// not ask for progress (no token).
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn report_progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), SessionError> {
        let Some(token) = &self.progress_token else {
            return Ok(());
        };
        #[derive(serde::Serialize)]
        struct Params<'a> {
            #[serde(rename = "progressToken")]
            token: &'a RawValue,
            progress: f64,
            #[serde(skip_serializing_if = "Option::is_none")]
            total: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            message: Option<&'a str>,
        }
        let params = Params {
            token,
            progress,
            total,
            message,
        };
        self.peer
            .notify_raw("notifications/progress", Some(&params))
            .await
    }
}

const JSON_WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// The params' `_meta` member, when it is an object. Read without decoding the rest of
/// the params when `_meta` is their first member (as this SDK and the official ones write
/// it); otherwise the params are parsed, skipping every other member.
fn find_meta(params: &str) -> Option<&RawValue> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    // A `_meta` key written with escapes is rare enough to pay for the full parse.
    if super::META_KEY.find(params.as_bytes()).is_none() && !params.contains('\\') {
        return None;
    }
    let first = params
        .trim_start_matches(JSON_WHITESPACE)
        .strip_prefix('{')
        .map(|rest| rest.trim_start_matches(JSON_WHITESPACE))
        .and_then(|rest| rest.strip_prefix(r#""_meta""#))
        .map(|rest| rest.trim_start_matches(JSON_WHITESPACE))
        .and_then(|rest| rest.strip_prefix(':'));
    let meta = match first {
        // One value read from the front; what follows it is the handler's to check.
        Some(value) => {
            <&RawValue>::deserialize(&mut serde_json::Deserializer::from_str(value)).ok()?
        }
        None => serde_json::from_str::<Params<'_>>(params).ok()?.meta?,
    };
    meta.get().starts_with('{').then_some(meta)
}

/// The params' `_meta` to keep, and its progress token.
fn meta_of(params: &str) -> (Option<MetaText>, Option<Box<RawValue>>) {
    // This SDK's own layout first: `_meta` leads the params and holds only a token.
    if let Some(token) = leading_token(params) {
        return (Some(MetaText::TokenOnly), Some(token));
    }
    match find_meta(params) {
        Some(meta) => read_meta(meta),
        None => (None, None),
    }
}

/// The token of params that open with `{"_meta":{"progressToken":N}` for a plain
/// integer `N`, as this SDK writes them: read without parsing anything else. What
/// follows that `_meta` is the handler's to check, as with [`find_meta`].
fn leading_token(params: &str) -> Option<Box<RawValue>> {
    let (digits, _) = super::split_leading_token(params)?;
    integer_token(digits)
}

/// `digits` as a progress token, when they are a non-negative JSON integer that fits
/// an `i64` for sure (at most 18 digits, no leading zero).
fn integer_token(digits: &str) -> Option<Box<RawValue>> {
    let integer = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    integer
        .then(|| RawValue::from_string(digits.to_owned()).ok())
        .flatten()
}

/// `_meta` to keep, and its progress token when that is a string or an integer.
fn read_meta(meta: &RawValue) -> (Option<MetaText>, Option<Box<RawValue>>) {
    // The common case, as this SDK writes it: `{"progressToken":123}`.
    if let Some(token) = meta
        .get()
        .strip_prefix(r#"{"progressToken":"#)
        .and_then(|rest| rest.strip_suffix('}'))
        .and_then(integer_token)
    {
        return (Some(MetaText::TokenOnly), Some(token));
    }
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "progressToken", borrow)]
        token: Option<&'a RawValue>,
    }
    let token = serde_json::from_str::<Meta<'_>>(meta.get())
        .ok()
        .and_then(|m| m.token)
        .filter(|t| {
            let text = t.get();
            text.starts_with('"') || text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok()
        });
    let token_only = token.is_some_and(|token| {
        meta.get()
            .strip_prefix(r#"{"progressToken":"#)
            .and_then(|rest| rest.strip_suffix('}'))
            == Some(token.get())
    });
    let text = if token_only {
        MetaText::TokenOnly
    } else {
        MetaText::Raw(meta.to_owned())
    };
    (Some(text), token.map(RawValue::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `_meta` and the progress token, as a handler sees them.
    fn read(params: &str) -> (Option<JsonObject>, Option<String>) {
        let (meta, token) = meta_of(params);
        let map = meta.map(|meta| match meta {
            MetaText::Raw(raw) => serde_json::from_str(raw.get()).expect("an object"),
            MetaText::TokenOnly => JsonObject::from_iter([(
                "progressToken".to_owned(),
                serde_json::from_str(token.as_deref().expect("a token").get()).expect("json"),
            )]),
        });
        (map, token.map(|t| t.get().to_owned()))
    }

    fn object(value: serde_json::Value) -> Option<JsonObject> {
        match value {
            serde_json::Value::Object(map) => Some(map),
            _ => None,
        }
    }

    #[test]
    fn meta_is_read_wherever_it_is_and_however_it_is_written() {
        use serde_json::json;
        let token_only = (object(json!({"progressToken": 7})), Some("7".to_owned()));
        for params in [
            r#"{"_meta":{"progressToken":7},"name":"echo"}"#,
            r#" { "_meta" : {"progressToken":7} , "name":"echo"}"#,
            r#"{"name":"echo","_meta":{"progressToken":7}}"#,
            r#"{"name":"echo","arguments":{"_meta":1},"_meta":{"progressToken":7}}"#,
            r#"{"\u005fmeta":{"progressToken":7}}"#,
            r#"{"_meta":{ "progressToken" : 7 }}"#,
        ] {
            assert_eq!(read(params), token_only, "{params}");
        }
        assert_eq!(
            read(r#"{"_meta":{"progressToken":0}}"#),
            (object(json!({"progressToken": 0})), Some("0".to_owned()))
        );
        assert_eq!(
            read(r#"{"_meta":{"progressToken":18446744073709551615}}"#),
            (
                object(json!({"progressToken": 18446744073709551615_u64})),
                Some("18446744073709551615".to_owned())
            )
        );
        assert_eq!(
            read(r#"{"_meta":{"progressToken":"a\"b","vendor/x":[1]},"name":"echo"}"#),
            (
                object(json!({"progressToken": "a\"b", "vendor/x": [1]})),
                Some(r#""a\"b""#.to_owned())
            )
        );
        // Near misses of this SDK's layout take the full read.
        assert_eq!(
            read(r#"{"_meta":{"progressToken":7,"vendor/x":1},"name":"echo"}"#),
            (
                object(json!({"progressToken": 7, "vendor/x": 1})),
                Some("7".to_owned())
            )
        );
        assert_eq!(
            read(r#"{"_meta":{"progressToken":-7}}"#),
            (object(json!({"progressToken": -7})), Some("-7".to_owned()))
        );
        assert_eq!(read(r#"{"_meta":{"progressToken":07}}"#), (None, None));
        // `_meta` without a usable token keeps everything and has no token.
        for (params, meta) in [
            (r#"{"_meta":{}}"#, json!({})),
            (
                r#"{"_meta":{"progressToken":1.5}}"#,
                json!({"progressToken": 1.5}),
            ),
            (
                r#"{"_meta":{"progressToken":123456789012345678901}}"#,
                json!({"progressToken": 123456789012345678901.0}),
            ),
            (
                r#"{"_meta":{"progressToken":null,"k":1}}"#,
                json!({"progressToken": null, "k": 1}),
            ),
        ] {
            assert_eq!(read(params), (object(meta), None), "{params}");
        }
        // No `_meta` at the top level, or one that is not an object.
        for params in [
            r#"{"name":"echo","arguments":{"_meta":{"progressToken":1}}}"#,
            r#"{"_meta":null}"#,
            r#"{"_meta":[1]}"#,
            r#"{"_meta":"#,
            r#"[1,2]"#,
        ] {
            assert_eq!(read(params), (None, None), "{params}");
        }
    }
}
