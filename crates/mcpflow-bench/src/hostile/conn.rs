//! One HTTP/1.1 keep-alive connection per client, written by hand on a `TcpStream`.
//!
//! reqwest's pool opens a second connection whenever a request starts before the previous
//! answer's connection is back in the pool, which the MCP handshake (initialize, then
//! notifications/initialized at once) does every time; so `load` and `soak` use this
//! instead and really hold one connection per client. A connection that fails, times out
//! or is closed by the server is dropped and the next request opens a new one; a request
//! that finds its reused connection already closed (no byte of answer) is sent once more
//! on a fresh one. Both are counted.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::mcp::{ACCEPT, PROTOCOL, Reply};

/// The longest one request may take, answer read in full.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer body read.
const MAX_BODY: usize = 32 * 1024 * 1024;
/// The largest status line plus headers read.
const MAX_HEAD: usize = 64 * 1024;

/// A client's connection to `http://HOST:PORT/PATH`.
pub struct Conn {
    addr: String,
    path: String,
    stream: Option<BufReader<TcpStream>>,
    /// Connections opened so far.
    pub connects: usize,
    /// Requests sent again because a reused connection was found closed.
    pub retries: usize,
    /// Headers sent with every request, as `Name: value\r\n` lines.
    extra: String,
}

impl Conn {
    /// A client for `url` (`http://127.0.0.1:PORT/path`); connects on first use.
    pub fn new(url: &str) -> Result<Conn, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("not an http:// URL: {url}"))?;
        let (addr, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        Ok(Conn {
            addr: addr.to_owned(),
            path: path.to_owned(),
            stream: None,
            connects: 0,
            retries: 0,
            extra: String::new(),
        })
    }

    /// Send `headers` with every request.
    pub fn with_headers(mut self, headers: &[(&str, &str)]) -> Conn {
        for (name, value) in headers {
            self.extra.push_str(&format!("{name}: {value}\r\n"));
        }
        self
    }

    /// Send one request and read its whole answer, within [`REQUEST_TIMEOUT`].
    pub async fn send(
        &mut self,
        method: &str,
        session: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Reply, String> {
        let request = self.request(method, session, body);
        let attempt = async {
            let reused = self.stream.is_some();
            match self.exchange(&request).await {
                Err((false, _)) if reused => {
                    self.stream = None;
                    self.retries += 1;
                    self.exchange(&request).await
                }
                other => other,
            }
        };
        let outcome = tokio::time::timeout(REQUEST_TIMEOUT, attempt).await;
        match outcome {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err((_, e))) => {
                self.stream = None;
                Err(e)
            }
            Err(_) => {
                self.stream = None;
                Err(format!("no answer in {} s", REQUEST_TIMEOUT.as_secs()))
            }
        }
    }

    /// The request's bytes.
    fn request(&self, method: &str, session: Option<&str>, body: Option<&Value>) -> Vec<u8> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut head = format!(
            "{method} {} HTTP/1.1\r\nHost: {}\r\nAccept: {ACCEPT}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n",
            self.path,
            self.addr,
            body.len()
        );
        if let Some(session) = session {
            head.push_str(&format!(
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n"
            ));
        }
        head.push_str(&self.extra);
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        bytes
    }

    /// Write `request` and read the answer. The error's flag says whether any byte of an
    /// answer arrived (when not, the request may be sent again on a fresh connection).
    async fn exchange(&mut self, request: &[u8]) -> Result<Reply, (bool, String)> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(&self.addr)
                .await
                .map_err(|e| (true, format!("connect failed: {:?}", e.kind())))?;
            let _ = stream.set_nodelay(true);
            self.connects += 1;
            self.stream = Some(BufReader::new(stream));
        }
        let Some(stream) = self.stream.as_mut() else {
            return Err((true, "no connection".to_owned()));
        };
        let io = |e: std::io::Error| format!("{:?}", e.kind());
        stream
            .get_mut()
            .write_all(request)
            .await
            .map_err(|e| (false, format!("write failed: {}", io(e))))?;

        // Status line and headers.
        let mut status = None;
        let (mut length, mut chunked, mut close) = (None, false, false);
        let mut session = None;
        let mut head_bytes = 0;
        let mut line = String::new();
        loop {
            line.clear();
            let n = stream
                .read_line(&mut line)
                .await
                .map_err(|e| (status.is_some(), format!("read failed: {}", io(e))))?;
            head_bytes += n;
            if n == 0 {
                return Err((status.is_some(), "closed without answer".to_owned()));
            }
            if head_bytes > MAX_HEAD {
                return Err((true, "answer head too long".to_owned()));
            }
            let text = line.trim_end();
            if status.is_none() {
                let code = text.split(' ').nth(1).and_then(|c| c.parse::<u16>().ok());
                status = Some(code.ok_or_else(|| (true, format!("bad status line {text:?}")))?);
                continue;
            }
            if text.is_empty() {
                break;
            }
            let Some((name, value)) = text.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => close = value.eq_ignore_ascii_case("close"),
                "mcp-session-id" => session = Some(value.to_owned()),
                _ => {}
            }
        }
        let status = status.unwrap_or_default();

        // Body.
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                stream
                    .read_line(&mut line)
                    .await
                    .map_err(|e| (true, format!("chunk read failed: {}", io(e))))?;
                let size = line.trim_end().split(';').next().unwrap_or_default();
                let size = usize::from_str_radix(size.trim(), 16)
                    .map_err(|_| (true, format!("bad chunk size {:?}", line.trim_end())))?;
                if size == 0 {
                    // Trailers, up to the empty line.
                    loop {
                        line.clear();
                        let n = stream
                            .read_line(&mut line)
                            .await
                            .map_err(|e| (true, io(e)))?;
                        if n == 0 || line.trim_end().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                if body.len() + size > MAX_BODY {
                    return Err((true, "answer body too large".to_owned()));
                }
                let at = body.len();
                body.resize(at + size + 2, 0);
                stream
                    .read_exact(&mut body[at..])
                    .await
                    .map_err(|e| (true, format!("chunk read failed: {}", io(e))))?;
                body.truncate(at + size);
            }
        } else if let Some(length) = length {
            if length > MAX_BODY {
                return Err((true, "answer body too large".to_owned()));
            }
            body.resize(length, 0);
            stream
                .read_exact(&mut body)
                .await
                .map_err(|e| (true, format!("body read failed: {}", io(e))))?;
        } else if !(status == 204 || status == 304 || (100..200).contains(&status)) {
            // Delimited by the end of the connection.
            close = true;
            (&mut *stream)
                .take(MAX_BODY as u64)
                .read_to_end(&mut body)
                .await
                .map_err(|e| (true, format!("body read failed: {}", io(e))))?;
        }
        if close {
            self.stream = None;
        }
        Ok(Reply {
            status,
            session,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}
