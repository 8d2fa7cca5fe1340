//! Frames read into messages, once. The reader reads each frame it gets as bytes; a
//! transport that must look inside a frame to route it (streamable HTTP: which session,
//! which scopes, which era) reads it with [`ReadFrame::read`] instead and hands the
//! session what it read, so no layer reads the frame again.

use std::borrow::Cow;
use std::sync::OnceLock;

use bytes::Bytes;
use mcpflow_protocol::RequestId;
use mcpflow_protocol::jsonrpc::{DecodeError, Decoded, ErrorResponse, MessageRef, decode};
use serde_json::value::RawValue;

use super::head::{JsonText, RequestHead};

/// One message of a frame, as the session routes it.
#[derive(Debug)]
pub(crate) enum Item<'a> {
    Request(ReadRequest),
    Notification {
        method: Cow<'a, str>,
        params: Option<Cow<'a, RawValue>>,
    },
    /// A response; its result still in the frame.
    Response {
        id: RequestId,
        result: Bytes,
    },
    Error(ErrorResponse),
}

/// A request as read: its params stay JSON text in the frame; its [`RequestHead`] once
/// someone read it.
#[derive(Debug)]
pub(crate) struct ReadRequest {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Option<JsonText>,
    /// Boxed: read for some requests only, and large.
    pub(crate) head: OnceLock<Box<RequestHead>>,
}

impl ReadRequest {
    /// The head, read now if nobody has yet.
    #[cfg(feature = "http-server")]
    pub(crate) fn head(&self) -> &RequestHead {
        self.head
            .get_or_init(|| Box::new(RequestHead::read(self.params.as_ref().map(JsonText::bytes))))
    }
}

impl<'a> Item<'a> {
    /// The item a decoded message makes; `frame` is the frame it was decoded from.
    fn of(frame: &Bytes, message: MessageRef<'a>) -> Item<'a> {
        match message {
            MessageRef::Request { id, method, params } => Item::Request(ReadRequest {
                id,
                method: method.into_owned(),
                params: params.map(|p| JsonText::cut(frame, p.get())),
                head: OnceLock::new(),
            }),
            MessageRef::Notification { method, params } => Item::Notification {
                method,
                params: params.map(Cow::Borrowed),
            },
            MessageRef::Response { id, result } => Item::Response {
                id,
                result: super::reader::part_of(frame, result.get()),
            },
            MessageRef::Error(e) => Item::Error(e),
        }
    }

    fn into_owned(self) -> Item<'static> {
        match self {
            Item::Request(request) => Item::Request(request),
            Item::Notification { method, params } => Item::Notification {
                method: Cow::Owned(method.into_owned()),
                params: params.map(|p| Cow::Owned(p.into_owned())),
            },
            Item::Response { id, result } => Item::Response { id, result },
            Item::Error(e) => Item::Error(e),
        }
    }
}

/// A frame's messages: one, or a batch, each read or why it could not be.
#[derive(Debug)]
pub(crate) enum Items<'a> {
    Single(Result<Item<'a>, DecodeError>),
    Batch(Vec<Result<Item<'a>, DecodeError>>),
}

impl<'a> Items<'a> {
    /// Read `frame` in one serde pass (see [`decode`]).
    pub(crate) fn of(frame: &'a Bytes) -> Items<'a> {
        match decode(frame) {
            Decoded::Single(m) => Items::Single(m.map(|m| Item::of(frame, m))),
            Decoded::Batch(items) => Items::Batch(
                items
                    .into_iter()
                    .map(|m| m.map(|m| Item::of(frame, m)))
                    .collect(),
            ),
        }
    }
}

/// A frame read into its messages, handed to the session in place of its bytes
/// ([`InboundFrame::Read`](crate::transport::InboundFrame::Read)), so that the session
/// does not read it again.
///
/// ```
/// use mcpflow::transport::bytes::Bytes;
/// use mcpflow::transport::ReadFrame;
///
/// let frame = serde_json::to_vec(&serde_json::json!({
///     "jsonrpc": "2.0", "id": 1, "method": "tools/list",
/// }))?;
/// let read = ReadFrame::read(Bytes::from(frame));
/// assert!(!read.is_batch());
/// assert_eq!(read.first_error(), None);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug)]
pub struct ReadFrame {
    pub(crate) items: Items<'static>,
}

impl ReadFrame {
    /// Read `frame` (one message or a batch) in one pass.
    pub fn read(frame: Bytes) -> ReadFrame {
        let items = match Items::of(&frame) {
            Items::Single(item) => Items::Single(item.map(Item::into_owned)),
            Items::Batch(items) => {
                Items::Batch(items.into_iter().map(|i| i.map(Item::into_owned)).collect())
            }
        };
        ReadFrame { items }
    }

    /// Whether the frame is a batch (a JSON array), even of one message.
    pub fn is_batch(&self) -> bool {
        matches!(self.items, Items::Batch(_))
    }

    /// Why the first message that could not be read could not be, if one could not.
    pub fn first_error(&self) -> Option<&DecodeError> {
        self.each().find_map(|i| i.as_ref().err())
    }

    fn each(&self) -> impl Iterator<Item = &Result<Item<'static>, DecodeError>> {
        let (one, many) = match &self.items {
            Items::Single(item) => (Some(item), &[][..]),
            Items::Batch(items) => (None, &items[..]),
        };
        one.into_iter().chain(many)
    }

    #[cfg(feature = "http-server")]
    pub(crate) fn each_mut(
        &mut self,
    ) -> impl Iterator<Item = &mut Result<Item<'static>, DecodeError>> {
        let (one, many) = match &mut self.items {
            Items::Single(item) => (Some(item), &mut [][..]),
            Items::Batch(items) => (None, &mut items[..]),
        };
        one.into_iter().chain(many)
    }

    /// The requests, in order.
    #[cfg(feature = "http-server")]
    pub(crate) fn requests(&self) -> impl Iterator<Item = &ReadRequest> {
        self.each().filter_map(|i| match i {
            Ok(Item::Request(r)) => Some(r),
            _ => None,
        })
    }

    /// The requests, in order, to read their heads.
    #[cfg(feature = "http-server")]
    pub(crate) fn requests_mut(&mut self) -> impl Iterator<Item = &mut ReadRequest> {
        self.each_mut().filter_map(|i| match i {
            Ok(Item::Request(r)) => Some(r),
            _ => None,
        })
    }

    /// What a frame of one message answers: the id of the request and, for a result,
    /// its text; for a malformed response, the request it names when that could be
    /// read. A batch answers nothing here (its parts are read one by one).
    #[cfg(feature = "http-client")]
    pub(crate) fn answer(&self) -> Answer<'_> {
        match &self.items {
            Items::Single(Ok(Item::Response { id, result })) => Answer::To(id, Some(result)),
            Items::Single(Ok(Item::Error(e))) => match &e.id {
                Some(id) => Answer::To(id, None),
                None => Answer::Nothing,
            },
            Items::Single(Err(e)) if e.is_response() => match e.response_to() {
                Some(id) => Answer::To(id, None),
                None => Answer::Unaddressed,
            },
            _ => Answer::Nothing,
        }
    }

    /// Whether the frame is one notification.
    #[cfg(feature = "http-server")]
    pub(crate) fn is_notification(&self) -> bool {
        matches!(&self.items, Items::Single(Ok(Item::Notification { .. })))
    }

    /// The request a frame of one response (a result or an error) answers.
    #[cfg(feature = "http-server")]
    pub(crate) fn response_id(&self) -> Option<&RequestId> {
        match &self.items {
            Items::Single(Ok(Item::Response { id, .. })) => Some(id),
            Items::Single(Ok(Item::Error(e))) => e.id.as_ref(),
            _ => None,
        }
    }

    /// The ids of the requests that `notifications/cancelled` messages in it cancel.
    #[cfg(feature = "http-server")]
    pub(crate) fn cancels(&self) -> impl Iterator<Item = RequestId> + '_ {
        self.each().filter_map(|i| match i {
            Ok(Item::Notification { method, params }) => cancelled(method, params.as_deref()),
            _ => None,
        })
    }
}

/// What a frame answers ([`ReadFrame::answer`]).
#[cfg(feature = "http-client")]
#[derive(Debug)]
pub(crate) enum Answer<'a> {
    /// Not a response.
    Nothing,
    /// A response to this request, with its result's text when it is a result.
    To(&'a RequestId, Option<&'a Bytes>),
    /// A response whose request cannot be known (no id, or an unreadable one).
    Unaddressed,
}

/// The request a `notifications/cancelled` names, when it is one and names one.
pub(crate) fn cancelled(method: &str, params: Option<&RawValue>) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct Cancelled {
        #[serde(rename = "requestId")]
        request_id: Option<RequestId>,
    }
    if method != "notifications/cancelled" {
        return None;
    }
    serde_json::from_str::<Cancelled>(params?.get())
        .ok()?
        .request_id
}
