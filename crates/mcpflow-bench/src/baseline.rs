//! The baseline: a minimal hand-written JSON-RPC exchange with no SDK. Tokio, serde_json,
//! newline framing; the client multiplexes ids through a map of oneshots; the server
//! answers inline in its read loop. Both sides write through one task that flushes when
//! its queue is empty. The client also writes requests in other SDKs' byte layouts
//! ([`Layout`]), to any system's server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::common::{ProgressLog, big_text};
use crate::layout::{Layout, notification_frame, request_frame, tool_call_frame};

const QUEUE: usize = 1024;

async fn write_loop<W: AsyncWrite + Unpin>(w: W, mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut w = BufWriter::with_capacity(64 * 1024, w);
    while let Some(mut frame) = rx.recv().await {
        loop {
            frame.push(b'\n');
            if w.write_all(&frame).await.is_err() {
                return;
            }
            match rx.try_recv() {
                Ok(next) => frame = next,
                Err(_) => break,
            }
        }
        if w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}

/// Any inbound JSON-RPC message, borrowing from its frame.
#[derive(Deserialize)]
pub(crate) struct Inbound<'a> {
    #[serde(default)]
    pub(crate) id: Option<u64>,
    #[serde(default, borrow)]
    pub(crate) method: Option<&'a str>,
    #[serde(default, borrow)]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(default)]
    pub(crate) result: Option<Box<RawValue>>,
    #[serde(default, borrow)]
    pub(crate) error: Option<&'a RawValue>,
}

/// An outbound request (with an id) or notification.
#[derive(Serialize)]
pub(crate) struct Outbound<'a, P: Serialize> {
    pub(crate) jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<u64>,
    pub(crate) method: &'a str,
    pub(crate) params: P,
}

#[derive(Serialize)]
struct Reply<R: Serialize> {
    jsonrpc: &'static str,
    id: u64,
    result: R,
}

#[derive(Serialize, Deserialize)]
struct TextContent<T> {
    #[serde(rename = "type")]
    kind: T,
    text: T,
}

#[derive(Serialize)]
struct ToolResultOut<'a> {
    content: [TextContent<&'a str>; 1],
    #[serde(rename = "isError")]
    is_error: bool,
}

#[derive(Deserialize)]
struct ToolResultIn {
    content: Vec<TextContent<String>>,
}

/// `tools/call` parameters, borrowing from the frame.
#[derive(Deserialize)]
pub(crate) struct CallParams<'a> {
    #[serde(borrow)]
    pub(crate) name: &'a str,
    #[serde(default)]
    pub(crate) arguments: Args,
    #[serde(default, rename = "_meta")]
    pub(crate) meta: Option<MetaIn>,
}

/// The tools' arguments.
#[derive(Deserialize, Default)]
pub(crate) struct Args {
    #[serde(default)]
    pub(crate) text: String,
    #[serde(default)]
    pub(crate) count: u64,
    #[serde(default)]
    pub(crate) bytes: usize,
}

/// `_meta` of a request.
#[derive(Deserialize)]
pub(crate) struct MetaIn {
    #[serde(rename = "progressToken")]
    pub(crate) progress_token: serde_json::Value,
}

#[derive(Serialize)]
struct ProgressOut<'a> {
    #[serde(rename = "progressToken")]
    progress_token: &'a serde_json::Value,
    progress: u64,
    total: u64,
}

/// `notifications/progress` parameters, as the client reads them.
#[derive(Deserialize)]
pub(crate) struct ProgressIn {
    pub(crate) progress: f64,
}

/// Serialize one message.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A `tools/call` response with one text block.
pub(crate) fn tool_reply(id: u64, text: &str) -> Vec<u8> {
    encode(&Reply {
        jsonrpc: "2.0",
        id,
        result: ToolResultOut {
            content: [TextContent { kind: "text", text }],
            is_error: false,
        },
    })
}

/// The response to `initialize`.
pub(crate) fn initialize_reply(id: u64) -> Vec<u8> {
    encode(&Reply {
        jsonrpc: "2.0",
        id,
        result: serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "baseline", "version": "1.0.0"}
        }),
    })
}

/// An empty result, for requests other than `initialize` and `tools/call`.
pub(crate) fn empty_reply(id: u64) -> Vec<u8> {
    encode(&Reply {
        jsonrpc: "2.0",
        id,
        result: serde_json::json!({}),
    })
}

/// One `notifications/progress`.
pub(crate) fn progress_note(token: &serde_json::Value, progress: u64, total: u64) -> Vec<u8> {
    encode(&Outbound {
        jsonrpc: "2.0",
        id: None,
        method: "notifications/progress",
        params: ProgressOut {
            progress_token: token,
            progress,
            total,
        },
    })
}

/// The first text block of a raw `tools/call` result.
pub(crate) fn first_text(raw: &RawValue) -> Result<String, String> {
    let result: ToolResultIn = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    result
        .content
        .into_iter()
        .next()
        .map(|c| c.text)
        .ok_or_else(|| "empty result".to_owned())
}

/// Stdin and stdout as non-blocking pipes driven by the runtime's I/O driver, stdout's
/// pipe grown to 1 MiB where Linux allows it: the no-SDK limit for stdio, as fast as
/// the SDKs' own pipe transports can be.
pub fn stdio_pipes() -> std::io::Result<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::{AsFd, AsRawFd};
    let stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned()?;
    #[cfg(target_os = "linux")]
    {
        #[allow(unsafe_code)]
        // SAFETY: fcntl(F_SETPIPE_SZ) with an integer argument on a descriptor this
        // process owns touches no memory of ours; a refusal leaves the pipe as it was.
        let _ = unsafe { libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, 1024 * 1024) };
    }
    Ok((
        tokio::net::unix::pipe::Receiver::from_owned_fd(stdin)?,
        tokio::net::unix::pipe::Sender::from_owned_fd(stdout)?,
    ))
}

/// Serve `echo`, `progress` and `big` until the input ends.
pub async fn serve<R, W>(r: R, w: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Vec<u8>>(QUEUE);
    let writer = tokio::spawn(write_loop(w, rx));
    let mut reader = BufReader::with_capacity(64 * 1024, r);
    let mut line = Vec::with_capacity(64 * 1024);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(msg) = serde_json::from_slice::<Inbound<'_>>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.id, msg.method) else {
            continue; // a notification (`notifications/initialized`) or a response
        };
        let frame = match method {
            "initialize" => initialize_reply(id),
            "tools/call" => {
                let Some(params) = msg
                    .params
                    .and_then(|p| serde_json::from_str::<CallParams<'_>>(p.get()).ok())
                else {
                    continue;
                };
                match params.name {
                    "echo" => tool_reply(id, &params.arguments.text),
                    "progress" => {
                        if let Some(meta) = &params.meta {
                            for i in 1..=params.arguments.count {
                                let note =
                                    progress_note(&meta.progress_token, i, params.arguments.count);
                                if tx.send(note).await.is_err() {
                                    break;
                                }
                            }
                        }
                        tool_reply(id, "done")
                    }
                    "big" => tool_reply(id, big_text(params.arguments.bytes)),
                    _ => continue,
                }
            }
            _ => empty_reply(id),
        };
        if tx.send(frame).await.is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Box<RawValue>, String>>>>>;

/// The baseline client.
pub struct Client {
    tx: mpsc::Sender<Vec<u8>>,
    pending: Pending,
    layout: Layout,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Client {
    /// Start the reader and writer, then run `initialize` and `notifications/initialized`,
    /// every request written as `layout` writes it.
    pub async fn connect<R, W>(
        r: R,
        w: W,
        log: Arc<ProgressLog>,
        layout: Layout,
    ) -> Result<Client, String>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::channel::<Vec<u8>>(QUEUE);
        let writer = tokio::spawn(write_loop(w, rx));
        let pending: Pending = Arc::default();
        let reader = tokio::spawn(read_loop(r, pending.clone(), log));
        let client = Client {
            tx,
            pending,
            layout,
            next_id: AtomicU64::new(1),
            reader,
            writer,
        };
        client
            .request(
                "initialize",
                serde_json::json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "baseline", "version": "1.0.0"}
                }),
            )
            .await?;
        let note = notification_frame(layout, "notifications/initialized");
        client
            .tx
            .send(note)
            .await
            .map_err(|_| "connection closed".to_owned())?;
        Ok(client)
    }

    async fn request<P: Serialize>(
        &self,
        method: &str,
        params: P,
    ) -> Result<Box<RawValue>, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.exchange(id, request_frame(self.layout, id, method, params))
            .await
    }

    /// Send request `id`'s frame and wait for its result.
    async fn exchange(&self, id: u64, frame: Vec<u8>) -> Result<Box<RawValue>, String> {
        let (otx, orx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, otx);
        self.tx
            .send(frame)
            .await
            .map_err(|_| "connection closed".to_owned())?;
        orx.await
            .map_err(|_| "connection closed before the response".to_owned())?
    }

    /// Call a tool and return its first text block.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
        progress_token: Option<u64>,
    ) -> Result<String, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = tool_call_frame(self.layout, id, name, arguments, progress_token);
        first_text(&self.exchange(id, frame).await?)
    }

    /// End the connection: close the outbound stream and stop the reader.
    pub async fn close(self) {
        drop(self.tx);
        let _ = self.writer.await;
        self.reader.abort();
    }
}

async fn read_loop<R: AsyncRead + Unpin>(r: R, pending: Pending, log: Arc<ProgressLog>) {
    let mut reader = BufReader::with_capacity(64 * 1024, r);
    let mut line = Vec::with_capacity(64 * 1024);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(msg) = serde_json::from_slice::<Inbound<'_>>(&line) else {
            continue;
        };
        if let Some(method) = msg.method {
            if method == "notifications/progress"
                && let Some(p) = msg
                    .params
                    .and_then(|p| serde_json::from_str::<ProgressIn>(p.get()).ok())
            {
                log.record(p.progress);
            }
            continue;
        }
        let Some(id) = msg.id else { continue };
        let waiter = pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        if let Some(waiter) = waiter {
            let outcome = match (msg.result, msg.error) {
                (Some(result), _) => Ok(result),
                (None, Some(error)) => Err(error.get().to_owned()),
                (None, None) => Err("response without result".to_owned()),
            };
            let _ = waiter.send(outcome);
        }
    }
    pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}
