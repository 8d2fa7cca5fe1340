//! One served connection, as [`Server::serve`](super::Server::serve) hands it back.

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
