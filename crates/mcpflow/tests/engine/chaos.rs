//! Randomized schedules: the seed scenarios and the re-entrant ones over transports
//! that split every write at random points, yield at random, and use a random pipe
//! size, all driven by a seeded generator on a single-threaded runtime, so a failing
//! seed replays exactly.
//!
//! CI runs `MCPFLOW_CHAOS_SEEDS` seeds (default 300). To run thousands:
//! `MCPFLOW_CHAOS_SEEDS=5000 cargo test --release -p mcpflow --test engine chaos:: --
//! --nocapture`; to replay one: `MCPFLOW_CHAOS_SEED=1234 cargo test -p mcpflow --test
//! engine chaos::`.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use common::{Rng, tool};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use mcpflow::RequestOptions;
use mcpflow::client::Client;
use mcpflow::protocol::{
    CallToolRequestParams, CallToolResult, CreateMessageRequestParams, CreateMessageResult,
    SamplingMessage,
};
use mcpflow::server::{Server, ToolError};
use mcpflow::transport::StreamTransport;
use serde_json::json;
use tokio::io::{AsyncWrite, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::Notify;

/// Splits writes at random points and sometimes yields before writing.
struct ChaosWriter<W> {
    inner: W,
    rng: Rng,
    yielded: bool,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for ChaosWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if !self.yielded && self.rng.below(4) == 0 {
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.yielded = false;
        let cut = 1 + self.rng.below(buf.len() as u64) as usize;
        let cut = if self.rng.below(3) == 0 {
            buf.len()
        } else {
            cut
        };
        Pin::new(&mut self.inner).poll_write(cx, &buf[..cut])
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

type Chaotic = StreamTransport<ReadHalf<DuplexStream>, ChaosWriter<WriteHalf<DuplexStream>>>;

fn chaotic_pair(rng: &mut Rng) -> (Chaotic, Chaotic) {
    let size = [1, 7, 64, 4096][rng.below(4) as usize];
    let (a, b) = tokio::io::duplex(size);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let wrap = |w, seed| ChaosWriter {
        inner: w,
        rng: Rng::new(seed),
        yielded: false,
    };
    (
        StreamTransport::new(ar, wrap(aw, rng.next())),
        StreamTransport::new(br, wrap(bw, rng.next())),
    )
}

fn server() -> Server {
    Server::builder("chaos", "1")
        .tool(tool("progress"), |_a, cx| async move {
            for i in 0..5 {
                let _ = cx.progress(f64::from(i), Some(5.0), None).await;
            }
            Ok(CallToolResult::text("done"))
        })
        .tool(tool("mutate"), |_a, cx| async move {
            cx.server().notify_tool_list_changed().await;
            Ok(CallToolResult::text("mutated"))
        })
        .tool(tool("ask"), |_a, cx| async move {
            let reply = cx
                .create_message(CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text("q")],
                    5,
                ))
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            Ok(CallToolResult::text(
                reply.content.blocks()[0]
                    .as_text()
                    .unwrap_or_default()
                    .to_owned(),
            ))
        })
        .build()
}

/// One seed: seed-000 (progress before the response), a list_changed handler that
/// reloads the tool list during a call, and sampling whose callback lists tools.
async fn scenario(seed: u64) {
    let mut rng = Rng::new(seed);
    let (c, s) = chaotic_pair(&mut rng);
    let _running = server().serve(s);
    let reloaded = Arc::new(Notify::new());
    let signal = reloaded.clone();
    let client = Client::builder("t", "1")
        .on_notification(move |n, client| {
            let signal = signal.clone();
            async move {
                if n.method == "notifications/tools/list_changed" {
                    client.list_all_tools().await.expect("reload from the lane");
                    signal.notify_one();
                }
            }
        })
        .on_sampling(|_p, cx| async move {
            let n = cx
                .client()
                .list_all_tools()
                .await
                .map_err(mcpflow::protocol::ErrorObject::internal)?
                .len();
            Ok(CreateMessageResult::assistant_text(
                "m",
                format!("{n} tools"),
            ))
        })
        .connect(c)
        .await
        .expect("connect");

    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| log.lock().unwrap().push(p.progress));
    let r = client
        .call_tool_with(&CallToolRequestParams::new("progress"), options)
        .await
        .expect("progress call");
    assert_eq!(r.content[0].as_text(), Some("done"));
    assert_eq!(*seen.lock().unwrap(), [0.0, 1.0, 2.0, 3.0, 4.0]);

    let wait = reloaded.notified();
    let r = client
        .call_tool("mutate", json!({}))
        .await
        .expect("mutate call");
    assert_eq!(r.content[0].as_text(), Some("mutated"));
    wait.await;

    let r = client
        .call_tool("ask", json!({}))
        .await
        .expect("sampling call");
    assert_eq!(r.content[0].as_text(), Some("3 tools"));
    client.close().await;
}

fn run_seed(seed: u64) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), scenario(seed)).await })
    }));
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(format!("seed {seed}: timed out (10 s): a hang")),
        Err(_) => Err(format!("seed {seed}: panicked (see above)")),
    }
}

#[test]
fn seed_and_reentrancy_scenarios_pass_under_randomized_schedules() {
    if let Some(seed) = std::env::var("MCPFLOW_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        run_seed(seed).unwrap();
        return;
    }
    let seeds: u64 = std::env::var("MCPFLOW_CHAOS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let failures: Vec<String> = (0..seeds).filter_map(|seed| run_seed(seed).err()).collect();
    println!("{} of {seeds} seeds passed", seeds - failures.len() as u64);
    assert!(
        failures.is_empty(),
        "failing seeds (replay with MCPFLOW_CHAOS_SEED=N):\n{}",
        failures.join("\n")
    );
}
