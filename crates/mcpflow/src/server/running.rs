//! One served connection, as [`Server::serve`](super::Server::serve) hands it back, and
//! how the server starts its engine.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One served connection. Dropping it aborts the connection; prefer
/// [`RunningServer::close`] or [`RunningServer::wait`].
#[derive(Debug)]
pub struct RunningServer {
    pub(super) session: Session,
    pub(super) connection: Arc<Connection>,
}

impl RunningServer {
    /// The connection to the client.
    pub fn peer(&self) -> &Peer {
        self.session.peer()
    }

    /// Whether the client finished the handshake (`notifications/initialized`).
    pub fn is_initialized(&self) -> bool {
        self.connection.initialized.load(Ordering::Acquire)
    }

    /// Wait for the client to end the connection, then close in order (in-flight
    /// handlers get the close grace to finish).
    pub async fn wait(self) {
        self.session.run_to_end().await;
    }

    /// Close now, in order.
    pub async fn close(self) {
        self.session.close().await;
    }
}

impl Server {
    /// Serve a connection that only carries 2026-07-28 requests (an HTTP request
    /// without a session): every request is checked for its envelope.
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn serve_per_request<T: Transport>(
        &self,
        transport: T,
        principal: PrincipalSlot,
    ) -> RunningServer {
        let connection = Connection::new(self.clone(), principal);
        connection.per_request_only.store(true, Ordering::Release);
        self.serve_connection(transport, connection, 1)
    }

    pub(super) fn serve_connection<T: Transport>(
        &self,
        transport: T,
        connection: Connection,
        first_id: i64,
    ) -> RunningServer {
        let connection = Arc::new(connection);
        let service = Arc::new(dispatch::ServerService {
            connection: connection.clone(),
        });
        let mut config = self.inner.config.clone();
        config.first_request_id = first_id;
        // A connection of 2026-07-28 requests only carries one exchange, run to its
        // end by its owner: one task for the engine instead of four. It takes no
        // broadcast: announcements reach those clients through their listen streams.
        let per_request = connection.per_request_only.load(Ordering::Acquire);
        let session = if per_request {
            Session::joined(transport, service, config)
        } else {
            Session::start(transport, service, config)
        };
        session.peer().note_side(crate::telemetry::Side::Server);
        if !per_request {
            self.inner
                .connections
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(session.peer().clone(), Arc::downgrade(&connection));
        }
        RunningServer {
            session,
            connection,
        }
    }
}
