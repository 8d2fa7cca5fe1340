//! A sequential caller's request (alone in flight, after one that was alone too) is
//! written by its caller when the writer is idle (`FrameWriter::try_write_now`), and
//! never ahead of a frame queued before it.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use common::{Kind, RawPeer, Written, bounded, pair};
use mcpflow::RequestOptions;
use mcpflow::protocol::jsonrpc::Notification;
use mcpflow::protocol::{ErrorCode, ErrorObject};
use mcpflow::session::{BoxFuture, Peer, Reply, RequestContext, Service, Session};
use mcpflow::transport::stream::LineWriter;
use mcpflow::transport::{Frame, FrameKind, FrameMeta, FrameWriter, WriteNow};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

/// Answers nothing: these tests only look at what this side sends.
struct NoHandlers;

impl Service for NoHandlers {
    fn handle_request(
        &self,
        _method: &str,
        _cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
        Box::pin(async { Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "none")) })
    }
    fn handle_notification(&self, _n: Notification, _peer: Peer) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// Poll `fut` once.
async fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *fut).poll(cx))).await
}

/// On one thread the writer task cannot run between a queued notification and the
/// request after it: the request finds the writer idle but a frame still queued, so it
/// is queued behind it instead of written first.
#[tokio::test(flavor = "current_thread")]
async fn a_lone_request_never_overtakes_a_frame_queued_before_it() {
    let (ours, theirs) = pair(Kind::Stdio);
    let session = Session::start(ours, Arc::new(NoHandlers), Default::default());
    let mut raw = RawPeer::new(theirs);
    let peer = session.peer().clone();
    // A lone request first, so that the next one counts as sequential.
    let warm_up = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.request_raw("test/warm-up", None, RequestOptions::new())
                .await
        }
    });
    let request = bounded("the warm-up request", raw.recv())
        .await
        .expect("a frame");
    raw.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
        .await;
    bounded("the warm-up answer", warm_up)
        .await
        .unwrap()
        .expect("answered");
    peer.notify_raw("test/first", None::<&Value>)
        .await
        .expect("queue the notification");
    let mut call = Box::pin(peer.request_raw("test/second", None, RequestOptions::new()));
    assert!(
        poll_once(&mut call).await.is_pending(),
        "the request waits for its answer"
    );
    let first = bounded("the first frame", raw.recv())
        .await
        .expect("a frame");
    let second = bounded("the second frame", raw.recv())
        .await
        .expect("a frame");
    assert_eq!(
        (first["method"].as_str(), second["method"].as_str()),
        (Some("test/first"), Some("test/second")),
        "frames in the order they were sent"
    );
    raw.send(json!({"jsonrpc": "2.0", "id": second["id"], "result": {}}))
        .await;
    bounded("the answer", call).await.expect("answered");
    bounded("close", session.close()).await;
}

/// Only a sequential caller's request goes out from its caller: the first request of
/// the connection and the first of a burst are queued (the writer batches a burst), and
/// so is one sent while another is pending.
#[tokio::test]
async fn only_a_sequential_request_is_written_by_its_caller() {
    let (transport, theirs, log) = common::recording_socket_pair();
    let session = Session::start(transport, Arc::new(NoHandlers), Default::default());
    let mut raw = RawPeer::new(theirs);
    let call = |method: &'static str| {
        let peer = session.peer().clone();
        tokio::spawn(async move { peer.request_raw(method, None, RequestOptions::new()).await })
    };
    let answer = |id: &Value| json!({"jsonrpc": "2.0", "id": id, "result": {}});

    // One at a time: the first is queued, the second written directly.
    for method in ["test/first", "test/after-first"] {
        let call = call(method);
        let request = bounded(method, raw.recv()).await.expect("a frame");
        assert_eq!(request["method"], method);
        raw.send(answer(&request["id"])).await;
        bounded("its answer", call)
            .await
            .unwrap()
            .expect("answered");
    }
    // Two in flight: the first was alone after a lone one, the second is not alone.
    let one = call("test/one");
    let first = bounded("the first request", raw.recv())
        .await
        .expect("a frame");
    let two = call("test/two");
    let second = bounded("the second request", raw.recv())
        .await
        .expect("a frame");
    assert_eq!(second["method"], "test/two");
    raw.send(answer(&first["id"])).await;
    raw.send(answer(&second["id"])).await;
    bounded("the first answer", one)
        .await
        .unwrap()
        .expect("answered");
    bounded("the second answer", two)
        .await
        .unwrap()
        .expect("answered");
    // Alone again, after one that was not: the start of a burst, for all this side
    // knows; the next one alone is sequential again.
    for method in ["test/after-two", "test/last"] {
        let call = call(method);
        let request = bounded(method, raw.recv()).await.expect("a frame");
        raw.send(answer(&request["id"])).await;
        bounded("its answer", call)
            .await
            .unwrap()
            .expect("answered");
    }

    // Which path each frame took.
    let log: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .filter_map(|written| match written {
            Written::Frame {
                direct, message, ..
            } => {
                let path = if *direct { "direct" } else { "queued" };
                let what = message["method"].as_str().unwrap_or("answer");
                Some(format!("{path} {what}"))
            }
            Written::Apart => None,
        })
        .collect();
    let requests: Vec<_> = log.iter().filter(|e| e.contains("test/")).collect();
    assert_eq!(
        requests,
        [
            "queued test/first",
            "direct test/after-first",
            "direct test/one",
            "queued test/two",
            "queued test/after-two",
            "direct test/last",
        ],
        "{log:?}"
    );
    bounded("close", session.close()).await;
}

/// A frame the sink cannot take at once stays whole in the buffer, and the next flush
/// delivers it after what came before.
#[tokio::test]
async fn a_frame_the_sink_cannot_take_at_once_is_delivered_by_the_next_flush() {
    let (ours, mut theirs) = tokio::io::duplex(16);
    let mut writer = LineWriter::new(ours);
    let meta = FrameMeta::new(FrameKind::Request);
    let first = br#"{"jsonrpc":"2.0","id":1,"method":"test/first"}"#;
    let second = br#"{"jsonrpc":"2.0","id":2,"method":"test/second"}"#;
    assert_eq!(
        writer.try_write_now(&Frame::new(&first[..]), &meta),
        WriteNow::Buffered
    );
    assert_eq!(
        writer.try_write_now(&Frame::new(&second[..]), &meta),
        WriteNow::Buffered
    );
    let reading = tokio::spawn(async move {
        let mut all = Vec::new();
        theirs.read_to_end(&mut all).await.map(|_| all)
    });
    bounded("the flush", writer.flush()).await.expect("flushed");
    bounded("the close", writer.close()).await;
    let all = bounded("the read", reading).await.unwrap().expect("read");
    assert_eq!(all, [&first[..], b"\n", &second[..], b"\n"].concat());
}

/// A frame larger than the buffer's room is not taken: it goes through the writer.
#[tokio::test]
async fn a_frame_larger_than_the_buffer_is_declined() {
    let (ours, _theirs) = tokio::io::duplex(1 << 20);
    let mut writer = LineWriter::new(ours);
    let meta = FrameMeta::new(FrameKind::Request);
    let large = vec![b' '; 64 * 1024];
    assert_eq!(
        writer.try_write_now(&Frame::new(large), &meta),
        WriteNow::Declined
    );
    assert_eq!(
        writer.try_write_now(&Frame::new(&b"{}"[..]), &meta),
        WriteNow::Sent
    );
}

/// Dropping the session ends its stream even while a peer handle lives on: the writer
/// lends the transport out between batches, and must not leave it behind.
#[tokio::test]
async fn dropping_the_session_ends_the_stream_while_a_peer_handle_lives() {
    let (ours, theirs) = pair(Kind::Stdio);
    let session = Session::start(ours, Arc::new(NoHandlers), Default::default());
    let mut raw = RawPeer::new(theirs);
    let peer = session.peer().clone();
    drop(session);
    assert!(
        bounded("the end of the stream", raw.recv()).await.is_none(),
        "no frame, then the end"
    );
    drop(peer);
}
