//! One served connection's state: what its `initialize` settled, its log level and
//! its resource subscriptions.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use mcpflow_protocol::methods::method;
use mcpflow_protocol::resources::ResourceUpdatedNotificationParams;
use mcpflow_protocol::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};

use super::{PrincipalSlot, Server};
use crate::error::SessionError;
use crate::session::Peer;

/// Per-connection state learned from the client, with the server it is served by
/// (so a request's context holds one handle for both).
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) server: Server,
    /// Unique in the process: the owner of the tasks this connection creates.
    pub(crate) id: u64,
    /// Set once, by the first `initialize`; a second one is refused, so the version
    /// and what the client declared can never disagree.
    handshake: OnceLock<Handshake>,
    pub(super) log_level: AtomicU8,
    pub(super) initialized: AtomicBool,
    pub(super) subscriptions: Mutex<HashSet<String>>,
    /// Every request is a 2026-07-28 one (an HTTP request without a session).
    pub(crate) per_request_only: AtomicBool,
    /// A 2026-07-28 request came in: without a handshake, the connection gets no
    /// untagged server-wide notifications.
    pub(crate) saw_per_request: AtomicBool,
    /// Who the requests act for, when the transport authorizes them (HTTP with auth).
    pub(super) principal: PrincipalSlot,
}

impl Connection {
    pub(super) fn new(server: Server, principal: PrincipalSlot) -> Connection {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Connection {
            server,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            handshake: OnceLock::new(),
            log_level: AtomicU8::new(0),
            initialized: AtomicBool::new(false),
            subscriptions: Mutex::default(),
            per_request_only: AtomicBool::new(false),
            saw_per_request: AtomicBool::new(false),
            principal,
        }
    }

    /// Record the handshake; `false` when the connection already had one.
    pub(crate) fn record_handshake(&self, handshake: Handshake) -> bool {
        self.handshake.set(handshake).is_ok()
    }

    /// Whether the connection takes untagged server-wide notifications (list changes):
    /// only a handshake-era one does.
    pub(crate) fn takes_broadcasts(&self) -> bool {
        self.handshake.get().is_some()
            || !(self.per_request_only.load(Ordering::Acquire)
                || self.saw_per_request.load(Ordering::Acquire))
    }

    pub(crate) fn client_capabilities(&self) -> ClientCapabilities {
        self.handshake
            .get()
            .map(|h| h.capabilities.clone())
            .unwrap_or_default()
    }

    pub(crate) fn client_info(&self) -> Option<Implementation> {
        self.handshake.get().map(|h| h.client_info.clone())
    }

    pub(crate) fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.handshake.get().map(|h| h.version.clone())
    }

    pub(crate) fn log_level(&self) -> LoggingLevel {
        LoggingLevel::ALL
            [usize::from(self.log_level.load(Ordering::Relaxed)).min(LoggingLevel::ALL.len() - 1)]
    }

    pub(crate) async fn notify_resource_updated(
        &self,
        peer: &Peer,
        uri: &str,
    ) -> Result<(), SessionError> {
        let subscribed = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(uri);
        if !subscribed {
            return Ok(());
        }
        let params = ResourceUpdatedNotificationParams::new(uri);
        peer.notify_raw(method::RESOURCE_UPDATED, Some(&params))
            .await
    }
}

/// What one connection's `initialize` settled.
#[derive(Debug)]
pub(crate) struct Handshake {
    pub(crate) version: ProtocolVersion,
    pub(crate) client_info: Implementation,
    pub(crate) capabilities: ClientCapabilities,
}
