//! A real `redis-server` on a free loopback port, for the tests of a fleet: started with
//! persistence off, stopped when dropped.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `redis-server`.
pub struct RedisServer {
    _child: Child,
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
}

impl RedisServer {
    /// Start one and wait until it accepts connections (10 s at most).
    pub async fn start() -> RedisServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
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
            _child: child,
            url: format!("redis://127.0.0.1:{port}"),
        }
    }
}
