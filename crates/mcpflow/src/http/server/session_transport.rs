//! The transport the engine runs one HTTP session on: a reader of the frames POST
//! handlers queued (most route theirs themselves, with the [`FrameRouter`] it hands
//! them), and a writer that routes each outbound frame to the stream that carries it.

use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use mcpflow_protocol::{ProtocolVersion, RequestId};
use tokio::sync::mpsc;

use super::routes::{Routes, Sent};
use super::session::{Outbox, drain, lock};
use crate::error::TransportError;
use crate::transport::{
    Frame, FrameKind, FrameMeta, FrameReader, FrameRouter, FrameWriter, InboundFrame, Transport,
    WriteNow,
};

/// The transport the engine runs one HTTP session on.
pub(crate) struct SessionTransport {
    pub(super) inbound: mpsc::Receiver<InboundFrame>,
    pub(super) routes: Arc<Mutex<Routes>>,
    pub(super) outbox: Option<Arc<Outbox>>,
    pub(super) router: Arc<OnceLock<FrameRouter>>,
}

impl Transport for SessionTransport {
    type Reader = SessionReader;
    type Writer = SessionWriter;

    fn carrier(&self) -> crate::transport::Carrier {
        crate::transport::Carrier::Http
    }

    fn split(self) -> (SessionReader, SessionWriter) {
        (
            SessionReader {
                inbound: self.inbound,
                router: self.router,
            },
            SessionWriter {
                routes: self.routes,
                outbox: self.outbox,
            },
        )
    }
}

/// Frames the POST handlers queued.
pub(crate) struct SessionReader {
    inbound: mpsc::Receiver<InboundFrame>,
    router: Arc<OnceLock<FrameRouter>>,
}

impl FrameReader for SessionReader {
    async fn read_frame(&mut self) -> Result<Option<InboundFrame>, TransportError> {
        Ok(self.inbound.recv().await)
    }

    /// Each response goes to the stream of the POST that carried its request, which
    /// writes a batch's array itself.
    fn answers_batches_whole(&self) -> bool {
        false
    }

    fn set_router(&mut self, router: FrameRouter) {
        let _ = self.router.set(router);
    }
}

/// Routes each outbound frame to its stream.
pub(crate) struct SessionWriter {
    routes: Arc<Mutex<Routes>>,
    outbox: Option<Arc<Outbox>>,
}

impl SessionWriter {
    /// Route one whole frame to its stream.
    fn route(&self, frame: Bytes, meta: &FrameMeta) {
        let mut routes = lock(&self.routes);
        let (target, sent, answers) = match &meta.kind {
            FrameKind::Response(Some(id)) => {
                // Once: a later request may reuse the id `initialize` had.
                if routes.init_id.as_ref() == Some(id) {
                    routes.init_id = None;
                    routes.version = negotiated_version(&frame);
                }
                (
                    routes.by_request.remove(id),
                    Sent::Response(meta.error_code()),
                    Some(id),
                )
            }
            _ => {
                let related = meta
                    .related
                    .as_ref()
                    .and_then(|id| routes.by_request.get(id).copied());
                (
                    related.or_else(|| routes.unrelated_target()),
                    Sent::Other,
                    None,
                )
            }
        };
        match target {
            Some(stream) => routes.deliver(stream, frame, sent, answers),
            None => tracing::debug!(
                session = %routes.session,
                kind = ?meta.kind,
                "no stream is open for this message; it was dropped"
            ),
        }
    }
}

impl FrameWriter for SessionWriter {
    /// A large response comes in parts: they are joined in the result's own buffer, and
    /// that one buffer is what a JSON body or the event store keeps.
    async fn write_frame(&mut self, frame: Frame, meta: &FrameMeta) -> Result<(), TransportError> {
        self.route(frame.into_bytes(), meta);
        drain(&self.routes, self.outbox.as_deref()).await;
        Ok(())
    }

    /// Declined in a fleet, whose session stores each event before sending it (which
    /// waits), and for a large response, which the writer joins without a copy.
    fn try_write_now(&mut self, frame: &Frame, meta: &FrameMeta) -> WriteNow {
        if self.outbox.is_some() || frame.is_parted() {
            return WriteNow::Declined;
        }
        self.route(frame.clone().into_bytes(), meta);
        WriteNow::Sent
    }

    async fn end_stream(&mut self, request: &RequestId) {
        {
            let mut routes = lock(&self.routes);
            let Some(stream) = routes.by_request.get(request).copied() else {
                return;
            };
            // Undecided: an event stream, so that there is one to end and resume.
            if routes.can_prime() {
                routes.decide_stream(stream);
            }
            if let Some(state) = routes.streams.get_mut(&stream)
                && state.resumable
            {
                state.conn = None;
            }
        }
        drain(&self.routes, self.outbox.as_deref()).await;
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }

    async fn close(&mut self) {
        lock(&self.routes).close_all();
    }
}

/// `result.protocolVersion` of an `initialize` response.
fn negotiated_version(frame: &[u8]) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    struct Response {
        result: Result,
    }
    #[derive(serde::Deserialize)]
    struct Result {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let response: Response = serde_json::from_slice(frame).ok()?;
    Some(ProtocolVersion::from(response.result.protocol_version))
}
