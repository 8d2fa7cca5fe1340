//! Transports move frames (one JSON-RPC message or batch each) between peers.
//!
//! A [`Transport`] splits into a [`FrameReader`], owned by the session's reader task,
//! and a [`FrameWriter`], owned by its single writer task. Between the writer's
//! batches, the session may lend the writer to another task for one
//! [`FrameWriter::try_write_now`]; it is never used by two at once, so transports need
//! no locking. Frames travel as [`bytes::Bytes`] both ways, so a transport that keeps
//! whole messages (memory, HTTP) takes them without a copy.
//!
//! Each outbound frame comes with a [`FrameMeta`]: what kind of message it is, its method
//! and request id, and which inbound request it relates to, as the session knew them when
//! it built the frame. Byte-stream transports ignore it; the HTTP server uses it to route
//! a response, and the progress and server-to-client requests a handler sends, onto the
//! stream of the request that caused them; the HTTP client to know what each POST
//! carries and which headers it needs, without reading the frame back.
//!
//! | transport | role | module |
//! |---|---|---|
//! | in-memory pair, capacity 0, 1 or more frames | tests, in-process | [`memory`] |
//! | any `AsyncRead` + `AsyncWrite` (newline framing) | pipes, sockets | [`stream`] |
//! | stdin/stdout | a server started by a client | [`stdio`] |
//! | a child process | a client starting a server | [`child`] |

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcpflow_protocol::{ErrorCode, ProtocolVersion, RequestId};

use crate::error::TransportError;

pub mod child;
pub mod lines;
pub mod memory;
pub mod stdio;
pub mod stream;

pub use crate::session::{FrameRouter, ReadFrame};
pub use bytes;
pub use child::{ChildProcess, ChildProcessBuilder};
pub use memory::MemoryTransport;
pub use stream::StreamTransport;

/// What an outbound frame carries, for transports that route by message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameKind {
    /// A request this side sends.
    Request,
    /// A notification other than progress.
    Notification,
    /// A `notifications/progress` notification. Some clients lose progress that arrives
    /// in the same read as its request's response, so the writer keeps the two apart
    /// ([`FrameWriter::flush_apart`]).
    Progress,
    /// A response (result or error) to the peer's request with this id; `None` for an
    /// error answering an unreadable id.
    Response(Option<RequestId>),
}

/// Routing facts about one outbound frame, known when the session built it: a transport
/// that routes by message reads them here rather than from the frame's bytes.
///
/// ```
/// use mcpflow::protocol::RequestId;
/// use mcpflow::transport::{FrameKind, FrameMeta};
///
/// let meta = FrameMeta::new(FrameKind::Notification).related_to(Some(RequestId::number(4)));
/// assert_eq!(meta.related, Some(RequestId::number(4)));
/// assert_eq!(meta.method(), None, "a frame made outside the session names no method");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameMeta {
    /// The kind of message.
    pub kind: FrameKind,
    /// The peer's request this message was sent on behalf of (progress, logs and
    /// requests sent by a request handler), if any.
    pub related: Option<RequestId>,
    method: Option<Cow<'static, str>>,
    /// What a request or a cancellation names; boxed, so that the frequent frames
    /// (responses, progress) carry one pointer for it.
    names: Option<Box<Names>>,
    /// The code of an error response.
    error: Option<ErrorCode>,
}

/// The requests a frame names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Names {
    /// A request this side sends, and what its HTTP headers mirror.
    Request {
        id: RequestId,
        mirrored: Option<Arc<Mirrored>>,
    },
    /// `notifications/cancelled` for this side's request.
    Cancellation(RequestId),
}

impl FrameMeta {
    /// The facts of a frame of `kind` that names no method and no request of its own.
    pub fn new(kind: FrameKind) -> FrameMeta {
        FrameMeta {
            kind,
            related: None,
            method: None,
            names: None,
            error: None,
        }
    }

    /// The same facts, sent on behalf of the peer's request `related`.
    #[must_use]
    pub fn related_to(mut self, related: Option<RequestId>) -> FrameMeta {
        self.related = related;
        self
    }

    /// The method of a request or notification the session sent (`None` for a
    /// response).
    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The id of a request this side sends.
    pub fn id(&self) -> Option<&RequestId> {
        match self.names.as_deref() {
            Some(Names::Request { id, .. }) => Some(id),
            _ => None,
        }
    }

    /// For `notifications/cancelled`: the request it cancels.
    pub fn cancels(&self) -> Option<&RequestId> {
        match self.names.as_deref() {
            Some(Names::Cancellation(id)) => Some(id),
            _ => None,
        }
    }

    /// What a 2026-07-28 request mirrors into HTTP headers, as the client gave it.
    #[cfg(feature = "http-client")]
    pub(crate) fn mirrored(&self) -> Option<&Mirrored> {
        match self.names.as_deref() {
            Some(Names::Request { mirrored, .. }) => mirrored.as_deref(),
            _ => None,
        }
    }

    /// A request this side sends: its id and method, and what its HTTP headers mirror.
    pub(crate) fn request(
        id: RequestId,
        method: Cow<'static, str>,
        mirrored: Option<Arc<Mirrored>>,
    ) -> FrameMeta {
        FrameMeta {
            method: Some(method),
            names: Some(Box::new(Names::Request { id, mirrored })),
            ..FrameMeta::new(FrameKind::Request)
        }
    }

    /// A notification of `kind` (`Notification` or `Progress`).
    pub(crate) fn notification(kind: FrameKind, method: Cow<'static, str>) -> FrameMeta {
        FrameMeta {
            method: Some(method),
            ..FrameMeta::new(kind)
        }
    }

    /// `notifications/cancelled` for this side's request `id`.
    pub(crate) fn cancellation(id: RequestId) -> FrameMeta {
        FrameMeta {
            names: Some(Box::new(Names::Cancellation(id))),
            ..FrameMeta::notification(FrameKind::Notification, Cow::Borrowed(CANCELLED))
        }
    }

    /// The response to the peer's request `id`, sent on its behalf.
    pub(crate) fn response(id: RequestId) -> FrameMeta {
        FrameMeta::new(FrameKind::Response(Some(id.clone()))).related_to(Some(id))
    }

    /// The same response, an error with `code`.
    #[must_use]
    pub(crate) fn with_error(mut self, code: ErrorCode) -> FrameMeta {
        self.error = Some(code);
        self
    }

    /// The code of an error response, for a transport whose answer depends on it (the
    /// HTTP status of a 2026-07-28 answer).
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn error_code(&self) -> Option<ErrorCode> {
        self.error
    }
}

/// The method of a cancellation.
const CANCELLED: &str = mcpflow_protocol::methods::method::CANCELLED;

/// What the HTTP transport mirrors of a 2026-07-28 request into its headers: the
/// protocol version of its `_meta` (`MCP-Protocol-Version`), the tool or prompt name,
/// resource URI or task id (`Mcp-Name`), and the tool's `x-mcp-header` arguments
/// (`Mcp-Param-*`). The client builds it from the request's typed params as it sends;
/// every text is already a valid header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mirrored {
    pub(crate) version: ProtocolVersion,
    /// `Mcp-Name`, encoded.
    pub(crate) name: Option<String>,
    /// Each `Mcp-Param-*` header's name and encoded value.
    pub(crate) params: Vec<(String, String)>,
}

impl Mirrored {
    /// The facts of a request that names nothing: only its protocol version.
    pub(crate) fn version(version: ProtocolVersion) -> Mirrored {
        Mirrored {
            version,
            name: None,
            params: Vec::new(),
        }
    }
}

/// One outbound message's bytes: one buffer, or a large response as its head and its
/// result (the closing `}` follows), so that the result is never copied into a frame
/// buffer first. Cloning is cheap: the parts are reference-counted.
///
/// ```
/// use mcpflow::transport::Frame;
///
/// let frame = Frame::new(r#"{"jsonrpc":"2.0","method":"n"}"#.as_bytes().to_vec());
/// assert_eq!(frame.parts().collect::<Vec<_>>().concat(), frame.clone().into_bytes());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    head: Bytes,
    /// A large response's result, written after `head` and closed by `}`.
    result: Option<Bytes>,
}

impl Frame {
    /// A frame of one buffer.
    pub fn new(bytes: impl Into<Bytes>) -> Frame {
        Frame {
            head: bytes.into(),
            result: None,
        }
    }

    /// A response given as its head (up to `"result":`) and its result.
    pub(crate) fn response(head: Bytes, result: Bytes) -> Frame {
        Frame {
            head,
            result: Some(result),
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.head.len() + self.result.as_ref().map_or(0, |r| r.len() + 1)
    }

    /// Whether it has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it comes in parts (a large response).
    pub fn is_parted(&self) -> bool {
        self.result.is_some()
    }

    /// The parts, in order; their concatenation is the message.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        let rest = self.result.as_ref().map(|result| [&result[..], b"}"]);
        std::iter::once(&self.head[..]).chain(rest.into_iter().flatten())
    }

    /// The message in one buffer: free for a frame of one part; a large response is
    /// joined in its result's own buffer when nothing else holds it.
    pub fn into_bytes(self) -> Bytes {
        let Some(result) = self.result else {
            return self.head;
        };
        let mut message = Vec::from(result);
        message.reserve_exact(self.head.len() + 1);
        message.splice(0..0, self.head.iter().copied());
        message.push(b'}');
        Bytes::from(message)
    }
}

impl From<Vec<u8>> for Frame {
    fn from(bytes: Vec<u8>) -> Frame {
        Frame::new(bytes)
    }
}

impl From<Bytes> for Frame {
    fn from(bytes: Bytes) -> Frame {
        Frame::new(bytes)
    }
}

/// One inbound frame.
#[derive(Debug)]
#[non_exhaustive]
pub enum InboundFrame {
    /// The bytes of one message (or batch). A response's result is decoded straight from
    /// them, so they are kept as they came (`Bytes`, not copied).
    Message(Bytes),
    /// A frame the transport read already, to route it ([`ReadFrame::read`]): the
    /// session takes its messages as they were read.
    Read(ReadFrame),
    /// A frame longer than the limit was skipped; the transport resynchronised at the
    /// next boundary. `prefix` holds its first bytes, to recover the request id.
    Oversized {
        /// The frame's length in bytes (at least; it may have been cut short).
        len: usize,
        /// The first bytes of the frame.
        prefix: Vec<u8>,
        /// The limit it exceeded.
        limit: usize,
    },
    /// The transport could not complete one of this side's requests (an HTTP error
    /// status, a response stream that ended before the answer). The session fails that
    /// request at once with [`SessionError::Transport`](crate::SessionError::Transport);
    /// the connection stays open.
    RequestFailed {
        /// The id of this side's request.
        id: RequestId,
        /// Why it failed.
        error: TransportError,
    },
}

/// The receiving half of a transport.
pub trait FrameReader: Send + 'static {
    /// The next frame; `Ok(None)` when the peer ended the stream in order.
    ///
    /// Must be cancel-safe: the session calls it inside `select!`, and a frame must not
    /// be lost when the call is dropped before it completes.
    fn read_frame(
        &mut self,
    ) -> impl Future<Output = Result<Option<InboundFrame>, TransportError>> + Send;

    /// Whether the answers to a JSON-RPC batch the peer sent go back as one array frame,
    /// as JSON-RPC asks (the default). A transport that routes each response by its
    /// request id and builds the array itself (streamable HTTP) answers `false`.
    fn answers_batches_whole(&self) -> bool {
        true
    }

    /// Take the session's [`FrameRouter`], for messages this transport receives in
    /// other tasks than the one reading (see its docs). The session calls this once,
    /// before it reads. The default drops it: every message comes through
    /// [`read_frame`](Self::read_frame).
    fn set_router(&mut self, router: FrameRouter) {
        let _ = router;
    }
}

/// The sending half of a transport. Only [`write_frame`](Self::write_frame),
/// [`flush`](Self::flush) and [`close`](Self::close) are required; the other methods
/// are hooks with defaults that suit most transports.
pub trait FrameWriter: Send + 'static {
    /// Queue one frame (without a trailing newline; framing is the transport's job).
    fn write_frame(
        &mut self,
        frame: Frame,
        meta: &FrameMeta,
    ) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Push queued frames to the peer.
    fn flush(&mut self) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// End the outbound direction (close stdin of a child, end the stream) and release
    /// what the transport holds (reap a child process). Bounded in time.
    fn close(&mut self) -> impl Future<Output = ()> + Send;

    /// The peer stopped taking data and the connection is closing: release what the
    /// transport holds without writing or flushing anything more (a child process gets
    /// `SIGTERM` at once, since it cannot see its input end). The writer is dropped
    /// right after. The default does nothing more.
    fn abandon(&mut self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Take one whole frame and start pushing it to the peer without waiting, or take
    /// none of it. The session calls this from the task that made the frame, when its
    /// writer is idle and nothing is queued, which saves a hand-off to the writer task.
    /// A transport that takes the frame but cannot push all of it at once answers
    /// [`WriteNow::Buffered`]; the session then has the writer [`flush`](Self::flush),
    /// which also reports an error met here. The default takes nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use mcpflow::transport::{Frame, FrameKind, FrameMeta, FrameWriter, Transport, WriteNow};
    /// use mcpflow::transport::StreamTransport;
    /// use tokio::io::AsyncBufReadExt;
    ///
    /// let (ours, theirs) = tokio::io::duplex(1024);
    /// let (read, write) = tokio::io::split(ours);
    /// let (_reader, mut writer) = StreamTransport::new(read, write).split();
    /// let meta = FrameMeta::new(FrameKind::Request);
    /// let frame = Frame::new(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec());
    /// assert_eq!(writer.try_write_now(&frame, &meta), WriteNow::Sent);
    ///
    /// let mut line = String::new();
    /// tokio::io::BufReader::new(theirs).read_line(&mut line).await.unwrap();
    /// assert_eq!(line.trim_end().as_bytes(), frame.into_bytes());
    /// # }
    /// ```
    fn try_write_now(&mut self, frame: &Frame, meta: &FrameMeta) -> WriteNow {
        let _ = (frame, meta);
        WriteNow::Declined
    }

    /// Push queued frames to the peer and give it a chance to read them before the next
    /// frame. The writer calls this between progress sent for a request and the
    /// request's response, because some clients lose progress that arrives in the same
    /// read as its response (the TypeScript SDK 1.x does). The default flushes;
    /// a transport that can see how much the peer has not read yet may also wait,
    /// briefly, for it to read.
    fn flush_apart(&mut self) -> impl Future<Output = Result<(), TransportError>> + Send {
        self.flush()
    }

    /// The longest [`close`](Self::close) or [`abandon`](Self::abandon) may take, when
    /// that can be longer than twice the session's close grace: a child process's whole
    /// shutdown sequence (stdin closed, a wait, `SIGTERM`, a wait, `SIGKILL`). The
    /// session waits that long for the transport to close before it gives up on it.
    /// The default, `None`, allows twice the close grace.
    fn close_time(&self) -> Option<Duration> {
        None
    }

    /// End the stream carrying the answer to the peer's request `request` now, when the
    /// peer can resume it later (streamable HTTP with an event store: the client
    /// reconnects with `Last-Event-ID` and receives the rest). Frames queued before were
    /// flushed. Transports without such streams ignore it, which is the default.
    fn end_stream(&mut self, request: &RequestId) -> impl Future<Output = ()> + Send {
        let _ = request;
        std::future::ready(())
    }
}

/// What [`FrameWriter::try_write_now`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteNow {
    /// The frame was taken and pushed to the peer.
    Sent,
    /// The frame was taken, but not all of it reached the peer yet: the next
    /// [`FrameWriter::flush`] pushes the rest (or reports why it cannot).
    Buffered,
    /// Nothing was taken: the frame goes through the writer.
    Declined,
}

/// A bidirectional transport.
pub trait Transport: Send + 'static {
    /// The receiving half.
    type Reader: FrameReader;
    /// The sending half.
    type Writer: FrameWriter;
    /// Split into the halves the session's reader and writer own.
    fn split(self) -> (Self::Reader, Self::Writer);

    /// What carries the messages, as telemetry reports it (default:
    /// [`Carrier::Unspecified`]).
    fn carrier(&self) -> Carrier {
        Carrier::Unspecified
    }
}

/// What a [`Transport`] carries messages over, for the `network.transport` and
/// `network.protocol.name` attributes of [telemetry](crate::telemetry).
///
/// ```
/// use mcpflow::transport::Carrier;
///
/// assert_eq!(Carrier::Pipe.network_transport(), Some("pipe"));
/// assert_eq!(Carrier::Http.network_protocol(), Some("http"));
/// assert_eq!(Carrier::InProcess.network_transport(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Carrier {
    /// Not said (a stream of the caller's own).
    #[default]
    Unspecified,
    /// Within the process ([`memory`]).
    InProcess,
    /// A pipe: stdio, a child process.
    Pipe,
    /// HTTP over TCP: streamable HTTP, HTTP+SSE.
    Http,
}

impl Carrier {
    /// OpenTelemetry's `network.transport` value.
    pub fn network_transport(self) -> Option<&'static str> {
        match self {
            Carrier::Pipe => Some("pipe"),
            Carrier::Http => Some("tcp"),
            Carrier::Unspecified | Carrier::InProcess => None,
        }
    }

    /// OpenTelemetry's `network.protocol.name` value.
    pub fn network_protocol(self) -> Option<&'static str> {
        match self {
            Carrier::Http => Some("http"),
            _ => None,
        }
    }
}
