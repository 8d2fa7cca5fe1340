//! Messages a transport routes from the task they arrived in (`FrameRouter`, as the HTTP
//! transports do): a request that answers at once is answered in that task, one that
//! waits goes on as a task of its own, the session's own replies still reach the
//! writer, and a router gives the message back once the session stopped reading.
#![allow(clippy::unwrap_used)] // panics are how tests fail

use crate::common;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use common::{AnyTransport, RawPeer};
use mcpflow::protocol::jsonrpc::Notification;
use mcpflow::protocol::{ErrorCode, ErrorObject};
use mcpflow::session::{BoxFuture, Peer, Reply, RequestContext, Service, Session};
use mcpflow::transport::memory::MemoryTransport;
use mcpflow::transport::{FrameReader, FrameRouter, InboundFrame, Transport};
use serde_json::{Value, json};
use tokio::sync::Notify;

const LIMIT: Duration = Duration::from_secs(5);

tokio::task_local! {
    /// Set in the task that routes, to tell where a handler runs.
    static ROUTING_TASK: ();
}

/// `here`: answers whether it runs in the routing task. `wait`: answers once released.
struct Handlers {
    release: Arc<Notify>,
}

impl Service for Handlers {
    fn handle_request(
        &self,
        method: &str,
        _cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
        let release = self.release.clone();
        match method {
            "here" => Box::pin(async move {
                let here = ROUTING_TASK.try_with(|_| ()).is_ok();
                where_it_ran(here)
            }),
            "wait" => Box::pin(async move {
                release.notified().await;
                let here = ROUTING_TASK.try_with(|_| ()).is_ok();
                where_it_ran(here)
            }),
            _ => Box::pin(async { Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "none")) }),
        }
    }
    fn handle_notification(&self, _n: Notification, _peer: Peer) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

fn where_it_ran(in_routing_task: bool) -> Result<Reply, ErrorObject> {
    Reply::json(&json!({ "inRoutingTask": in_routing_task }))
        .map_err(|e| ErrorObject::internal(e.to_string()))
}

/// A memory transport whose reader hands the router out.
struct Routed {
    inner: MemoryTransport,
    router: Arc<OnceLock<FrameRouter>>,
}

struct RoutedReader {
    inner: <MemoryTransport as Transport>::Reader,
    router: Arc<OnceLock<FrameRouter>>,
}

impl Transport for Routed {
    type Reader = RoutedReader;
    type Writer = <MemoryTransport as Transport>::Writer;
    fn split(self) -> (RoutedReader, Self::Writer) {
        let (reader, writer) = self.inner.split();
        let reader = RoutedReader {
            inner: reader,
            router: self.router,
        };
        (reader, writer)
    }
}

impl FrameReader for RoutedReader {
    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, mcpflow::TransportError> {
        self.inner.read_frame().await
    }
    fn set_router(&mut self, router: FrameRouter) {
        assert!(self.router.set(router).is_ok(), "the router is set once");
    }
}

struct Fixture {
    session: Session,
    router: FrameRouter,
    peer: RawPeer,
    release: Arc<Notify>,
}

fn start() -> Fixture {
    let (ours, theirs) = MemoryTransport::pair(16);
    let router = Arc::new(OnceLock::new());
    let transport = Routed {
        inner: ours,
        router: router.clone(),
    };
    let release = Arc::new(Notify::new());
    let service = Arc::new(Handlers {
        release: release.clone(),
    });
    let session = Session::start(transport, service, Default::default());
    let router = router.get().expect("set before the session reads").clone();
    Fixture {
        session,
        router,
        peer: RawPeer::new(AnyTransport::Memory(theirs)),
        release,
    }
}

fn message(value: Value) -> InboundFrame {
    InboundFrame::Message(serde_json::to_vec(&value).unwrap().into())
}

async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no outcome within {LIMIT:?}"))
}

#[tokio::test]
async fn a_routed_request_that_does_not_wait_is_answered_in_the_routing_task() {
    let mut f = start();
    let frame = message(json!({"jsonrpc": "2.0", "id": 1, "method": "here"}));
    let routed = ROUTING_TASK.scope((), f.router.route(frame));
    bounded("routing a quick request", routed).await.unwrap();
    let answer = bounded("the answer", f.peer.recv()).await.unwrap();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["inRoutingTask"], true, "{answer}");
    bounded("close", f.session.close()).await;
}

#[tokio::test]
async fn a_routed_request_that_waits_goes_on_as_a_task_of_its_own() {
    let mut f = start();
    let frame = message(json!({"jsonrpc": "2.0", "id": 2, "method": "wait"}));
    let routed = ROUTING_TASK.scope((), f.router.route(frame));
    // Routing does not wait for the handler.
    bounded("routing a request that waits", routed)
        .await
        .unwrap();
    f.release.notify_one();
    let answer = bounded("the answer once released", f.peer.recv())
        .await
        .unwrap();
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["inRoutingTask"], false, "{answer}");
    bounded("close", f.session.close()).await;
}

#[tokio::test]
async fn the_sessions_own_replies_to_a_routed_frame_reach_the_peer() {
    let mut f = start();
    let ping = message(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    bounded("routing a ping", f.router.route(ping))
        .await
        .unwrap();
    let pong = bounded("the ping's answer", f.peer.recv()).await.unwrap();
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));

    let garbage = InboundFrame::Message(b"{not json".to_vec().into());
    bounded("routing garbage", f.router.route(garbage))
        .await
        .unwrap();
    let error = bounded("the parse error", f.peer.recv()).await.unwrap();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    bounded("close", f.session.close()).await;
}

#[tokio::test]
async fn a_router_gives_the_frame_back_once_the_session_stopped_reading() {
    let f = start();
    bounded("close", f.session.close()).await;
    let frame = message(json!({"jsonrpc": "2.0", "id": 4, "method": "here"}));
    match bounded("routing after close", f.router.route(frame)).await {
        Err(InboundFrame::Message(bytes)) => {
            let back: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(back["id"], 4);
        }
        other => panic!("expected the frame back, got {other:?}"),
    }
}
