//! What a request handler gets besides the params: [`RequestContext`]. The request's
//! `params._meta` (and its progress token) is read from the params the first time a
//! handler asks, by serde; most handlers never ask.

use std::sync::OnceLock;

use bytes::Bytes;
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
    /// The params' JSON text, as it lies in the frame the request came in.
    params: Option<Bytes>,
    /// `params._meta`, read the first time a handler asks.
    meta: OnceLock<MetaRead>,
    cancel: std::sync::Arc<RequestCancel>,
    peer: Peer,
}

/// A request's `params._meta` and the progress token in it.
#[derive(Clone, Debug, Default)]
struct MetaRead {
    map: Option<JsonObject>,
    token: Option<Box<RawValue>>,
}

impl RequestContext {
    /// The context of the request `id` whose params' JSON text is `params`.
    pub(crate) fn new(
        id: RequestId,
        params: Option<Bytes>,
        cancel: std::sync::Arc<RequestCancel>,
        peer: Peer,
    ) -> RequestContext {
        RequestContext {
            id,
            params,
            meta: OnceLock::new(),
            cancel,
            peer,
        }
    }

    /// A context for work that outlives this request (a task): the same id, params and
    /// progress token, its own cancellation, and a peer tied to no request (this
    /// request's stream ends with its answer).
    pub(crate) fn detached(&self, cancel: std::sync::Arc<RequestCancel>) -> RequestContext {
        RequestContext::new(
            self.id.clone(),
            self.params.clone(),
            cancel,
            self.peer.unrelated(),
        )
    }

    fn read_meta(&self) -> &MetaRead {
        self.meta
            .get_or_init(|| self.params.as_deref().map(read_meta).unwrap_or_default())
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
        self.read_meta().map.as_ref()
    }

    /// The progress token the peer sent, as raw JSON: a string or an integer.
    pub fn progress_token(&self) -> Option<&RawValue> {
        self.read_meta().token.as_deref()
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
        let Some(token) = self.progress_token() else {
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

/// `_meta` of params given as JSON text, when it is an object, and its progress token
/// when that is a string or an integer.
fn read_meta(params: &[u8]) -> MetaRead {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(default, rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(default, rename = "progressToken", borrow)]
        token: Option<&'a RawValue>,
    }
    // Params are an object or an array (the decoder checked); a struct would also be
    // read from an array.
    if params.first() != Some(&b'{') {
        return MetaRead::default();
    }
    let Ok(Params { meta: Some(meta) }) = serde_json::from_slice::<Params<'_>>(params) else {
        return MetaRead::default();
    };
    let Ok(map) = serde_json::from_str::<JsonObject>(meta.get()) else {
        return MetaRead::default();
    };
    // A token is an integer or a string: the values a request id may take.
    let token = serde_json::from_str::<Meta<'_>>(meta.get())
        .ok()
        .and_then(|m| m.token)
        .filter(|t| serde_json::from_str::<RequestId>(t.get()).is_ok())
        .map(RawValue::to_owned);
    MetaRead {
        map: Some(map),
        token,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `_meta` and the progress token, as a handler sees them.
    fn read(params: &str) -> (Option<JsonObject>, Option<String>) {
        // As the decoder hands params over: one JSON value, no surrounding whitespace.
        let raw: &RawValue = serde_json::from_str(params).expect("JSON params");
        let meta = read_meta(raw.get().as_bytes());
        (meta.map, meta.token.map(|t| t.get().to_owned()))
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
            r#"[1,2]"#,
            r#"[{"progressToken":1}]"#,
        ] {
            assert_eq!(read(params), (None, None), "{params}");
        }
    }
}
