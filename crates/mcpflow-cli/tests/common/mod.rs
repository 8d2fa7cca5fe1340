//! Helpers shared by the end-to-end tests: run the binary with a bound, serve over
//! HTTP, and script small stdio servers in `sh`.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_mcpflow");
/// Longest any one run may take; past it the test fails as a hang.
pub const LIMIT: Duration = Duration::from_secs(20);

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn describe(&self) -> String {
        format!(
            "exit {} after {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.elapsed, self.stdout, self.stderr
        )
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.describe()))
    }
}

/// A fresh directory under the system's temp dir, removed with what is in it when
/// dropped (a failing test included).
pub struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    /// `mcpflow-NAME-PID`, emptied if a previous run left it.
    pub fn new(name: &str) -> ScratchDir {
        let dir = std::env::temp_dir().join(format!("mcpflow-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a scratch directory");
        ScratchDir(dir)
    }

    pub fn join(&self, file: &str) -> std::path::PathBuf {
        self.0.join(file)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run `mcpflow ARGS` with stdin closed, killing it after [`LIMIT`].
pub fn mcpflow(args: &[&str]) -> Run {
    mcpflow_with(args, None, &[])
}

/// Run `mcpflow ARGS` with `stdin` as its input (or closed) and extra environment.
pub fn mcpflow_with(args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_vec();
        thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let out = read_all(child.stdout.take().unwrap());
    let err = read_all(child.stderr.take().unwrap());
    let status = wait_bounded(&mut child, &format!("`mcpflow {}`", args.join(" ")));
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed: started.elapsed(),
    }
}

pub fn read_all(mut from: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Wait for `child` to exit, killing it and failing the test after [`LIMIT`].
pub fn wait_bounded(child: &mut Child, what: &str) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// `mcpflow serve everything --http 127.0.0.1:0 EXTRA`, killed when dropped.
pub struct HttpServe {
    child: Child,
    pub url: String,
    /// What it wrote to stderr so far.
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpServe {
    pub fn start(extra: &[&str]) -> HttpServe {
        HttpServe::start_with(extra, &[])
    }

    /// As [`start`](Self::start), with extra environment.
    pub fn start_with(extra: &[&str], env: &[(&str, &str)]) -> HttpServe {
        HttpServe::start_at("127.0.0.1:0", extra, env)
    }

    /// As [`start_with`](Self::start_with), on `addr`.
    pub fn start_at(addr: &str, extra: &[&str], env: &[(&str, &str)]) -> HttpServe {
        let mut child = Command::new(BIN)
            .args(["serve", "everything", "--http", addr])
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let log = stderr.clone();
        thread::spawn(move || {
            let mut seen = Vec::new();
            let mut byte = [0u8; 1];
            while err.read(&mut byte).unwrap_or(0) == 1 {
                seen.push(byte[0]);
                if byte[0] == b'\n' {
                    let line = String::from_utf8_lossy(&seen).into_owned();
                    seen.clear();
                    log.lock().unwrap().push_str(&line);
                    if let Some(url) = line.trim().strip_prefix("mcpflow: serving MCP at ") {
                        let _ = tx.send(url.to_owned());
                    }
                }
            }
        });
        let url = rx
            .recv_timeout(LIMIT)
            .expect("`serve --http` prints the URL it serves");
        HttpServe { child, url, stderr }
    }
}

impl HttpServe {
    /// Kill it with SIGKILL: no shutdown of its own.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stdio server in `sh`: it answers each request whose method is a key of `answers`
/// with that reply (`"result": ...` or `"error": ...`, spliced after the id), every
/// other request with -32601, and ignores notifications. `initialize` gets a
/// 2025-11-25 answer with `capabilities` unless `answers` has its own.
pub fn scripted_server(capabilities: &str, answers: &[(&str, &str)]) -> Vec<String> {
    let mut cases = String::new();
    let init = format!(
        r#""result":{{"protocolVersion":"2025-11-25","capabilities":{capabilities},"serverInfo":{{"name":"scripted","version":"1"}}}}"#
    );
    let mut all: Vec<(String, String)> = answers
        .iter()
        .map(|(m, r)| ((*m).to_owned(), (*r).to_owned()))
        .collect();
    if !answers.iter().any(|(m, _)| *m == "initialize") {
        all.push(("initialize".to_owned(), init));
    }
    for (method, reply) in &all {
        let reply = reply.replace('\'', r"'\''");
        cases.push_str(&format!(
            "    {method}) printf '%s\\n' \"{{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":$id,\"'{reply}}}' ;;\n"
        ));
    }
    let script = format!(
        r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  method=$(printf '%s' "$line" | sed -n 's/.*"method":"\([^"]*\)".*/\1/p')
  [ -z "$id" ] && continue
  case "$method" in
{cases}    *) printf '%s\n' "{{\"jsonrpc\":\"2.0\",\"id\":$id,\"error\":{{\"code\":-32601,\"message\":\"Method not found\"}}}}" ;;
  esac
done
"#
    );
    vec!["sh".to_owned(), "-c".to_owned(), script]
}

/// `mcpflow VERB... -- sh -c SCRIPT` as arguments.
pub fn with_server<'a>(verb: &[&'a str], server: &'a [String]) -> Vec<&'a str> {
    let mut args = verb.to_vec();
    args.push("--");
    args.extend(server.iter().map(String::as_str));
    args
}

/// A TCP server that answers every request with `response` and records each request's
/// head; stops when dropped (the listener thread ends with the process).
pub struct RawHttp {
    pub url: String,
    pub heads: std::sync::mpsc::Receiver<String>,
}

impl RawHttp {
    pub fn start(response: &'static str) -> RawHttp {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (tx, heads) = std::sync::mpsc::channel();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let _ = stream.set_read_timeout(Some(LIMIT));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let _ = tx.send(String::from_utf8_lossy(&head).into_owned());
                let _ = stream.write_all(response.as_bytes());
            }
        });
        RawHttp { url, heads }
    }
}
