//! Routing a message in the task it arrived in.
//!
//! Some transports receive messages in tasks of their own, not in
//! [`FrameReader::read_frame`]: the HTTP server gets each in the task of the POST that
//! carried it, the HTTP client in the task reading a POST's response. Handing such a
//! message to the reader costs a wake-up of the reader's task, and a request then costs
//! another of its own task. A [`FrameRouter`] routes it where it arrived, as the reader
//! would: responses complete their pending entry, progress goes to its request,
//! notifications go to the lane, requests are admitted under the same limit and polled
//! once in the routing task, continuing as tasks of their own if they wait. The reader
//! itself is unchanged: its only wait is still the transport read.
//!
//! [`FrameReader::read_frame`]: crate::transport::FrameReader::read_frame

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::reader::Router;
use super::throttle::Throttle;
use super::{Peer, Service, Shared};
use crate::transport::InboundFrame;

/// What every router of one connection shares: the reader's and those of the tasks a
/// transport routes from.
pub(crate) struct Routing {
    /// Whether a batch's answers go out as one array (see [`super::batch::BatchAnswers`]).
    pub(super) whole_batches: bool,
    pub(super) shared: Arc<Shared>,
    pub(super) service: Arc<dyn Service>,
    pub(super) peer: Peer,
    /// Requests refused as busy, for the log.
    pub(super) busy: Mutex<Throttle>,
}

impl Routing {
    pub(super) fn new(
        whole_batches: bool,
        shared: Arc<Shared>,
        service: Arc<dyn Service>,
        peer: Peer,
    ) -> Arc<Routing> {
        Arc::new(Routing {
            whole_batches,
            shared,
            service,
            peer,
            busy: Mutex::default(),
        })
    }
}

/// Routes messages a transport receives outside its reader, from the task that
/// received them. The session hands one to [`FrameReader::set_router`] before it
/// reads; it works while the session reads, and gives each message back once the
/// session has stopped reading.
///
/// A transport built on one stream has no use for it: every message comes through
/// [`FrameReader::read_frame`]. One that receives messages in many tasks at once, one
/// per request it serves, saves the hand-off to the reader (and, for a quick request,
/// the hand-off to its own task) by routing each where it arrived.
///
/// ```
/// use mcpflow::transport::{FrameReader, FrameRouter, InboundFrame};
/// use mcpflow::TransportError;
/// use std::sync::{Arc, OnceLock};
/// use tokio::sync::mpsc;
///
/// /// Receives each message in the task of the connection that carried it.
/// struct PerConnection {
///     queued: mpsc::Receiver<InboundFrame>,
///     router: Arc<OnceLock<FrameRouter>>,
/// }
///
/// impl FrameReader for PerConnection {
///     async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
///         Ok(self.queued.recv().await)
///     }
///
///     fn set_router(&mut self, router: FrameRouter) {
///         let _ = self.router.set(router);
///     }
/// }
///
/// /// In a connection's task: route there, or queue for the reader until the router is set.
/// async fn received(
///     router: &OnceLock<FrameRouter>,
///     queue: &mpsc::Sender<InboundFrame>,
///     frame: InboundFrame,
/// ) {
///     let frame = match router.get() {
///         Some(router) => match router.route(frame).await {
///             Ok(()) => return,
///             Err(frame) => frame, // the session stopped reading
///         },
///         None => frame,
///     };
///     let _ = queue.send(frame).await;
/// }
/// ```
///
/// [`FrameReader::set_router`]: crate::transport::FrameReader::set_router
/// [`FrameReader::read_frame`]: crate::transport::FrameReader::read_frame
#[derive(Clone)]
pub struct FrameRouter {
    /// The reader holds the routing; a router outliving it routes nothing.
    routing: Weak<Routing>,
}

impl fmt::Debug for FrameRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameRouter")
            .field("reading", &self.routing.strong_count().gt(&0))
            .finish()
    }
}

impl FrameRouter {
    pub(super) fn new(routing: &Arc<Routing>) -> FrameRouter {
        FrameRouter {
            routing: Arc::downgrade(routing),
        }
    }

    /// Route `frame` as the reader would, from this task. The requests it carries are
    /// polled here once each; the replies the session makes itself (errors, `ping`
    /// answers) are queued for the writer, waiting for room if need be. `Err` gives the
    /// frame back, unrouted, once the session has stopped reading.
    pub async fn route(&self, frame: InboundFrame) -> Result<(), InboundFrame> {
        let Some(routing) = self.routing.upgrade() else {
            return Err(frame);
        };
        if routing.shared.reader_stop.is_stopped() {
            return Err(frame);
        }
        let mut router = Router::new(routing.clone());
        let mut replies = Vec::new();
        router.dispatch(frame, &mut replies);
        router.wakes.wake_all();
        router.new_requests.start_here().await;
        for reply in replies {
            if routing.shared.control.send(reply).await.is_err() {
                break;
            }
        }
        Ok(())
    }

    /// [`route`](Self::route) with the router in `slot`, once the session set it;
    /// `Err` gives the frame back for the reader's queue.
    #[cfg_attr(
        not(any(feature = "http-server", feature = "http-client")),
        allow(dead_code)
    )]
    pub(crate) async fn route_if_set(
        slot: &OnceLock<FrameRouter>,
        frame: InboundFrame,
    ) -> Result<(), InboundFrame> {
        match slot.get() {
            Some(router) => router.route(frame).await,
            None => Err(frame),
        }
    }
}
