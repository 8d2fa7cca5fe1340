//! Answering one connection's requests: the engine's [`Service`] for a server. It
//! picks the request's era (a per-request envelope, or the connection's handshake),
//! finds the method in the [method table](super::methods) and hands the request to it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcpflow_protocol::jsonrpc::Notification;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{ErrorCode, ErrorObject};

use super::era::Era;
use super::{Connection, ServerContext, methods};
use crate::session::{BoxFuture, Peer, Reply, RequestContext, Service};

/// The engine's [`Service`] for one server connection.
pub(crate) struct ServerService {
    pub(crate) connection: Arc<Connection>,
}

impl Service for ServerService {
    fn handle_request(
        &self,
        name: &str,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
        let connection = &self.connection;
        if connection.server.inner.per_request
            && (connection.per_request_only.load(Ordering::Acquire)
                || super::is_per_request(name, cx.head()))
        {
            connection.saw_per_request.store(true, Ordering::Release);
            return super::per_request::serve(connection, name, cx);
        }
        let Some(method) = methods::find(name, false) else {
            return Box::pin(std::future::ready(Err(ErrorObject::method_not_found(name))));
        };
        if !connection.server.offers(method.offer) {
            return Box::pin(std::future::ready(Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {name} (this server declares no such capability)"),
            ))));
        }
        (method.answer)(ServerContext::new(
            cx,
            connection.clone(),
            Era::Handshake,
            method,
        ))
    }

    fn handle_notification(
        &self,
        notification: Notification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        if notification.method == method::INITIALIZED {
            self.connection.initialized.store(true, Ordering::Release);
        }
        let hook = self.connection.server.inner.on_notification.clone();
        Box::pin(async move {
            if let Some(hook) = hook {
                hook(notification, peer).await;
            }
        })
    }
}
