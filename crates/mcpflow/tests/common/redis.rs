//! A real `redis-server` on a free loopback port, for the tests of a fleet: started with
//! persistence off (or on, in a directory of its own), stopped when dropped, and killed
//! and restarted on the same port when a test needs Redis to go away.

#![allow(dead_code)] // each test binary uses part of it

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `redis-server`.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    /// Where it keeps its append-only file, with persistence on.
    dir: Option<PathBuf>,
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
}

impl RedisServer {
    /// Start one without persistence and wait until it accepts connections (10 s at most).
    pub async fn start() -> RedisServer {
        RedisServer::launch(free_port(), None).await
    }

    /// Start one that keeps an append-only file (`appendfsync always`), so that what it
    /// acknowledged survives a restart.
    pub async fn start_persistent() -> RedisServer {
        let dir = std::env::temp_dir().join(format!(
            "mcpflow-redis-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).expect("a directory for redis-server's files");
        RedisServer::launch(free_port(), Some(dir)).await
    }

    async fn launch(port: u16, dir: Option<PathBuf>) -> RedisServer {
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", ""]);
        match &dir {
            Some(dir) => {
                command
                    .args(["--appendonly", "yes", "--appendfsync", "always", "--dir"])
                    .arg(dir);
            }
            None => {
                command.args(["--appendonly", "no"]);
            }
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "redis-server did not start ({e}): install Debian's redis-server \
                     (`apt-get install redis-server`; scripts/install-peers.sh does)"
                )
            });
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let ready = async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("Ready to accept connections") {
                    return true;
                }
            }
            false
        };
        let ready = tokio::time::timeout(Duration::from_secs(10), ready).await;
        assert!(
            matches!(ready, Ok(true)),
            "redis-server on port {port} did not become ready in 10 s"
        );
        // Its later log lines are read and dropped, so it never writes into a closed pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        RedisServer {
            child: Some(child),
            port,
            dir,
            url: format!("redis://127.0.0.1:{port}"),
        }
    }

    /// Send one command over a connection of its own (raw RESP, as the tests need no
    /// Redis client): an integer or a bulk string reply, as text; 5 s at most.
    pub async fn command(&self, args: &[&str]) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let exchange = async {
            let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .expect("connect to redis-server");
            let mut request = format!("*{}\r\n", args.len());
            for arg in args {
                request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
            }
            stream
                .write_all(request.as_bytes())
                .await
                .expect("write to redis-server");
            let mut reply = Vec::new();
            let mut buf = [0u8; 16 * 1024];
            loop {
                let n = stream.read(&mut buf).await.expect("read from redis-server");
                assert!(n > 0, "redis-server closed the connection");
                reply.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&reply).into_owned();
                let Some((head, rest)) = text.split_once("\r\n") else {
                    continue;
                };
                match head.as_bytes().first() {
                    Some(b':' | b'+') => return head[1..].to_owned(),
                    Some(b'$') => {
                        let len: usize = head[1..].parse().expect("a bulk length");
                        if rest.len() >= len {
                            return rest[..len].to_owned();
                        }
                    }
                    _ => panic!("unexpected reply from redis-server: {text}"),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), exchange)
            .await
            .expect("redis-server answers within 5 s")
    }

    /// Kill it (SIGKILL) and wait until it is gone.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Start it again on the same port (and with the same files, with persistence).
    pub async fn restart(&mut self) {
        self.kill().await;
        let again = RedisServer::launch(self.port, self.dir.take()).await;
        *self = again;
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}
