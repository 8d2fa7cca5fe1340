//! Helpers shared by the integration tests: bounded waits, transports by name, a raw
//! JSON-RPC peer for wire-level scenarios, message layouts, and small servers.
#![allow(dead_code)]

pub mod hostile;
pub mod http;
pub mod layout;
pub mod logs;
pub mod redis;
pub mod rng;
pub mod wait;

use std::sync::{Arc, Mutex};

use mcpflow::transport::lines::LineReader;
use mcpflow::transport::stream::LineWriter;
use mcpflow::transport::{
    Frame, FrameKind, FrameMeta, FrameReader, FrameWriter, InboundFrame, MemoryTransport,
    StreamTransport, Transport,
};
use serde_json::Value;

// Not every test binary uses each of these.
#[allow(unused_imports)]
pub use rng::Rng;
#[allow(unused_imports)]
pub use wait::{bounded, bounded_for, until};

/// A tool that takes any object: for servers whose handlers are the point of a test.
pub fn tool(name: &str) -> mcpflow::protocol::Tool {
    use mcpflow::protocol::Tool;
    Tool::new(name, format!("the {name} tool"), Tool::empty_input_schema())
}

/// The exit status and stderr tail of a call that failed because its server process
/// exited; panics naming any other error.
pub fn process_exited(err: &mcpflow::SessionError) -> (&str, &str) {
    use mcpflow::{CloseReason, SessionError, TransportError};
    match err {
        SessionError::Closed {
            reason:
                CloseReason::Transport(TransportError::ProcessExited {
                    status,
                    stderr_tail,
                }),
            ..
        } => (status, stderr_tail),
        _ => panic!("unexpected error: {err}"),
    }
}

/// The transports every engine scenario runs over.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Memory0,
    Memory1,
    MemoryLarge,
    /// Newline framing over a real OS socket pair, as stdio uses.
    Stdio,
    /// Streamable HTTP on a loopback socket: mcpflow's HTTP server and client. It has no
    /// transport pair; scenarios with a real server use [`connect`].
    Http,
}

pub const ALL: [Kind; 4] = [Kind::Memory0, Kind::Memory1, Kind::MemoryLarge, Kind::Stdio];

/// [`ALL`] and streamable HTTP, for scenarios with a real server on the other end.
pub const WITH_HTTP: [Kind; 5] = [
    Kind::Memory0,
    Kind::Memory1,
    Kind::MemoryLarge,
    Kind::Stdio,
    Kind::Http,
];

/// What keeps the server of [`connect`] running.
pub enum ServerGuard {
    Session(mcpflow::server::RunningServer),
    Http(mcpflow::http::server::RunningHttpServer),
}

/// `builder` connected to `server` over `kind`; keep the guard while the client is used.
pub async fn connect(
    kind: Kind,
    server: &mcpflow::server::Server,
    builder: mcpflow::client::ClientBuilder,
) -> (mcpflow::client::Client, ServerGuard) {
    let what = format!("connect over {kind:?}");
    if let Kind::Http = kind {
        let running = http::serve(mcpflow::http::server::HttpServer::new(server.clone())).await;
        let transport =
            mcpflow::http::client::HttpClientTransport::new(running.url()).expect("a valid URL");
        let client = bounded(&what, builder.connect(transport))
            .await
            .expect("connect");
        return (client, ServerGuard::Http(running));
    }
    let (c, s) = pair(kind);
    let running = server.serve(s);
    let client = bounded(&what, builder.connect(c)).await.expect("connect");
    (client, ServerGuard::Session(running))
}

/// The in-memory kinds: for paused-clock scenarios, where real socket I/O could race
/// the clock's auto-advance.
pub const MEMORY: [Kind; 3] = [Kind::Memory0, Kind::Memory1, Kind::MemoryLarge];

/// A connected pair of transports of one kind, boxed behind one type.
pub enum AnyTransport {
    Memory(MemoryTransport),
    Stream(StreamTransport<tokio::net::unix::OwnedReadHalf, tokio::net::unix::OwnedWriteHalf>),
}

pub fn pair(kind: Kind) -> (AnyTransport, AnyTransport) {
    match kind {
        Kind::Memory0 => wrap(MemoryTransport::pair(0)),
        Kind::Memory1 => wrap(MemoryTransport::pair(1)),
        Kind::MemoryLarge => wrap(MemoryTransport::pair(4096)),
        Kind::Http => panic!("HTTP has no transport pair: use common::connect"),
        Kind::Stdio => {
            let (a, b) = tokio::net::UnixStream::pair().expect("socket pair");
            let (ar, aw) = a.into_split();
            let (br, bw) = b.into_split();
            (
                AnyTransport::Stream(StreamTransport::new(ar, aw)),
                AnyTransport::Stream(StreamTransport::new(br, bw)),
            )
        }
    }
}

/// What a [`RecordingWriter`] saw, in order.
#[derive(Debug)]
pub enum Written {
    /// A frame: through the writer task (`write_frame`) or directly (`try_write_now`).
    Frame {
        direct: bool,
        kind: FrameKind,
        message: Value,
    },
    /// A `flush_apart`.
    Apart,
}

/// A line writer over a socket that logs what the engine writes through it.
pub struct RecordingWriter {
    lines: LineWriter<tokio::net::unix::OwnedWriteHalf>,
    log: Arc<Mutex<Vec<Written>>>,
}

impl RecordingWriter {
    fn record(&self, direct: bool, frame: &Frame, meta: &FrameMeta) {
        let message =
            serde_json::from_slice(&frame.clone().into_bytes()).expect("the engine writes JSON");
        self.log.lock().expect("the log").push(Written::Frame {
            direct,
            kind: meta.kind.clone(),
            message,
        });
    }
}

impl FrameWriter for RecordingWriter {
    async fn write_frame(
        &mut self,
        frame: Frame,
        meta: &FrameMeta,
    ) -> Result<(), mcpflow::TransportError> {
        self.record(false, &frame, meta);
        self.lines.write_frame(frame, meta).await
    }
    fn try_write_now(&mut self, frame: &Frame, meta: &FrameMeta) -> mcpflow::transport::WriteNow {
        let taken = self.lines.try_write_now(frame, meta);
        if taken != mcpflow::transport::WriteNow::Declined {
            self.record(true, frame, meta);
        }
        taken
    }
    async fn flush(&mut self) -> Result<(), mcpflow::TransportError> {
        self.lines.flush().await
    }
    async fn flush_apart(&mut self) -> Result<(), mcpflow::TransportError> {
        self.log.lock().expect("the log").push(Written::Apart);
        self.lines.flush().await
    }
    async fn close(&mut self) {
        self.lines.close().await;
    }
}

/// A line transport over a socket that records what is written on it: see
/// [`recording_socket_pair`].
pub struct RecordingTransport(
    Option<(LineReader<tokio::net::unix::OwnedReadHalf>, RecordingWriter)>,
);

impl Transport for RecordingTransport {
    type Reader = LineReader<tokio::net::unix::OwnedReadHalf>;
    type Writer = RecordingWriter;
    fn split(mut self) -> (Self::Reader, RecordingWriter) {
        self.0.take().expect("split once")
    }
}

/// A socket pair whose first side logs what the engine writes on it (the log is the
/// third value); the other side is a plain stream transport.
pub fn recording_socket_pair() -> (RecordingTransport, AnyTransport, Arc<Mutex<Vec<Written>>>) {
    let (a, b) = tokio::net::UnixStream::pair().expect("socket pair");
    let (ar, aw) = a.into_split();
    let (br, bw) = b.into_split();
    let log = Arc::new(Mutex::new(Vec::new()));
    let writer = RecordingWriter {
        lines: LineWriter::new(aw),
        log: log.clone(),
    };
    let ours = RecordingTransport(Some((LineReader::new(ar, 1 << 20), writer)));
    (
        ours,
        AnyTransport::Stream(StreamTransport::new(br, bw)),
        log,
    )
}

fn wrap((a, b): (MemoryTransport, MemoryTransport)) -> (AnyTransport, AnyTransport) {
    (AnyTransport::Memory(a), AnyTransport::Memory(b))
}

pub enum AnyReader {
    Memory(<MemoryTransport as Transport>::Reader),
    Stream(<StreamTransport<tokio::net::unix::OwnedReadHalf, tokio::net::unix::OwnedWriteHalf> as Transport>::Reader),
}

pub enum AnyWriter {
    Memory(<MemoryTransport as Transport>::Writer),
    Stream(<StreamTransport<tokio::net::unix::OwnedReadHalf, tokio::net::unix::OwnedWriteHalf> as Transport>::Writer),
}

impl Transport for AnyTransport {
    type Reader = AnyReader;
    type Writer = AnyWriter;
    fn split(self) -> (AnyReader, AnyWriter) {
        match self {
            AnyTransport::Memory(t) => {
                let (r, w) = t.split();
                (AnyReader::Memory(r), AnyWriter::Memory(w))
            }
            AnyTransport::Stream(t) => {
                let (r, w) = t.split();
                (AnyReader::Stream(r), AnyWriter::Stream(w))
            }
        }
    }
}

impl FrameReader for AnyReader {
    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, mcpflow::TransportError> {
        match self {
            AnyReader::Memory(r) => r.read_frame().await,
            AnyReader::Stream(r) => r.read_frame().await,
        }
    }
}

impl FrameWriter for AnyWriter {
    async fn write_frame(
        &mut self,
        frame: Frame,
        meta: &FrameMeta,
    ) -> Result<(), mcpflow::TransportError> {
        match self {
            AnyWriter::Memory(w) => w.write_frame(frame, meta).await,
            AnyWriter::Stream(w) => w.write_frame(frame, meta).await,
        }
    }
    fn try_write_now(&mut self, frame: &Frame, meta: &FrameMeta) -> mcpflow::transport::WriteNow {
        match self {
            AnyWriter::Memory(w) => w.try_write_now(frame, meta),
            AnyWriter::Stream(w) => w.try_write_now(frame, meta),
        }
    }
    async fn flush(&mut self) -> Result<(), mcpflow::TransportError> {
        match self {
            AnyWriter::Memory(w) => w.flush().await,
            AnyWriter::Stream(w) => w.flush().await,
        }
    }
    async fn close(&mut self) {
        match self {
            AnyWriter::Memory(w) => w.close().await,
            AnyWriter::Stream(w) => w.close().await,
        }
    }
}

/// A scripted JSON-RPC peer with no SDK: reads and writes raw frames.
pub struct RawPeer {
    reader: AnyReader,
    writer: AnyWriter,
}

impl RawPeer {
    pub fn new(transport: AnyTransport) -> Self {
        let (reader, writer) = transport.split();
        RawPeer { reader, writer }
    }

    pub async fn send_text(&mut self, text: &str) {
        self.send_bytes(text.as_bytes()).await;
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        let meta = FrameMeta::new(FrameKind::Notification);
        self.writer
            .write_frame(Frame::new(bytes.to_vec()), &meta)
            .await
            .expect("raw peer write");
        self.writer.flush().await.expect("raw peer flush");
    }

    pub async fn send(&mut self, value: Value) {
        self.send_text(&value.to_string()).await;
    }

    /// End this side's output (end of input for the other side, as a closed stdin).
    pub async fn close(&mut self) {
        self.writer.close().await;
    }

    /// Whether a message may hold a newline: not in newline-delimited framing.
    pub fn newlines_allowed(&self) -> bool {
        matches!(self.writer, AnyWriter::Memory(_))
    }

    /// Send several frames with one flush at the end, so they arrive as one burst.
    pub async fn send_burst(&mut self, frames: &[String]) {
        let meta = FrameMeta::new(FrameKind::Notification);
        for frame in frames {
            self.writer
                .write_frame(Frame::new(frame.clone().into_bytes()), &meta)
                .await
                .expect("raw peer write");
        }
        self.writer.flush().await.expect("raw peer flush");
    }

    /// The next message, parsed; `None` at end of stream.
    pub async fn recv(&mut self) -> Option<Value> {
        match self.reader.read_frame().await.expect("raw peer read")? {
            InboundFrame::Message(bytes) => {
                Some(serde_json::from_slice(&bytes).expect("peer sent JSON"))
            }
            other => panic!("unexpected frame {other:?}"),
        }
    }

    /// Send `text`; `Err` with why when the other side has gone (for a peer that may
    /// still be writing when the other side closes).
    pub async fn try_send_text(&mut self, text: &str) -> Result<(), String> {
        let meta = FrameMeta::new(FrameKind::Notification);
        self.writer
            .write_frame(Frame::new(text.as_bytes().to_vec()), &meta)
            .await
            .map_err(|e| e.to_string())?;
        self.writer.flush().await.map_err(|e| e.to_string())
    }

    /// The next message, parsed; `Ok(None)` at end of stream, `Err` with why for a read
    /// error or a message that is not JSON.
    pub async fn try_recv(&mut self) -> Result<Option<Value>, String> {
        match self.reader.read_frame().await.map_err(|e| e.to_string())? {
            None => Ok(None),
            Some(InboundFrame::Message(bytes)) => {
                serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                    format!(
                        "the peer sent something that is not JSON ({e}): {}",
                        String::from_utf8_lossy(&bytes)
                    )
                })
            }
            Some(other) => Err(format!("unexpected frame {other:?}")),
        }
    }

    /// Read until a message satisfies `pred`, returning it (others are skipped).
    pub async fn recv_until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let msg = self.recv().await.expect("stream ended early");
            if pred(&msg) {
                return msg;
            }
        }
    }

    /// The next `tools/call`, answering each `tools/list` met first with an empty list
    /// (a client fetches the list alongside its first call, to check the tool's output).
    pub async fn recv_tool_call(&mut self) -> Value {
        self.recv_answering_lists(|m| m["method"] == "tools/call")
            .await
    }

    /// Like [`recv_until`](Self::recv_until), answering each `tools/list` on the way
    /// with an empty list.
    pub async fn recv_answering_lists(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let msg = self.recv().await.expect("stream ended early");
            if pred(&msg) {
                return msg;
            }
            if msg["method"] == "tools/list" {
                self.send(
                    serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}),
                )
                .await;
            }
        }
    }

    /// Run `fut` (a client call) while answering each `tools/list` that arrives meanwhile
    /// with an empty list; other messages are dropped.
    pub async fn answering_lists<T>(&mut self, fut: impl Future<Output = T>) -> T {
        let mut fut = std::pin::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return out,
                msg = self.recv() => {
                    let Some(msg) = msg else { return fut.await };
                    if msg["method"] == "tools/list" {
                        self.send(serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}))
                            .await;
                    }
                }
            }
        }
    }

    /// Initialize as a client (request id 1) and read the server's answer.
    pub async fn initialize(&mut self) -> Value {
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "x", "version": "1"}}
        });
        bounded("sending initialize", self.send(request)).await;
        bounded("the answer to initialize", self.recv())
            .await
            .expect("the answer to initialize")
    }

    /// Answer the client's initialize (the first request) and swallow `initialized`.
    pub async fn accept_initialize(&mut self) {
        let init = self.recv_until(|m| m["method"] == "initialize").await;
        self.send(serde_json::json!({
            "jsonrpc": "2.0", "id": init["id"],
            "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": true}, "logging": {}},
                        "serverInfo": {"name": "raw", "version": "0"}}
        })).await;
        self.recv_until(|m| m["method"] == "notifications/initialized")
            .await;
    }
}

/// A server with a tool that takes anything, one that takes an integer, a prompt with a
/// required argument and a resource: a target for bad input. Add to it before `build`.
pub fn target_server(name: &str) -> mcpflow::server::ServerBuilder {
    use mcpflow::protocol::prompts::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
    use mcpflow::protocol::resources::{ReadResourceResult, Resource, ResourceContents};
    use mcpflow::protocol::{CallToolResult, Tool};
    let integer = serde_json::json!({
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]
    });
    let integer = integer.as_object().cloned().unwrap_or_default();
    mcpflow::server::Server::builder(name, "1")
        .tool(
            Tool::new("echo", "echo", Tool::empty_input_schema()),
            |_a, _c| async { Ok(CallToolResult::text("x")) },
        )
        .tool(
            Tool::new("strict", "takes an integer", integer),
            |_a, _c| async { Ok(CallToolResult::text("ran")) },
        )
        .prompt(
            Prompt::new("greet", "greets").with_argument(PromptArgument::new("name", "who", true)),
            |_a, _c| async { Ok(GetPromptResult::new(vec![PromptMessage::user_text("hi")])) },
        )
        .resource(Resource::new("x://one", "one"), |uri, _c| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri, "1",
            )]))
        })
}
