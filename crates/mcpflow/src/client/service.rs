//! The engine's [`Service`] for a client: answers what a server may ask (sampling,
//! elicitation, roots) with the configured callbacks, marks lists stale on
//! `list_changed` (on the reader), and runs notification callbacks on the lane.

use std::sync::Arc;

use mcpflow_protocol::jsonrpc::Notification;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{
    CreateMessageRequestParams, ElicitRequestParams, ElicitationCompleteNotificationParams,
    ErrorCode, ErrorObject, ListRootsResult, LoggingMessageNotificationParams,
};

use super::{ClientContext, ClientHandle, ClientShared};
use crate::session::{BoxFuture, JsonText, Peer, Reply, RequestContext, Service};

/// The engine's [`Service`] for a client connection.
pub(super) struct ClientService {
    pub(super) shared: Arc<ClientShared>,
}

impl ClientService {
    fn handle(&self, peer: &Peer) -> ClientHandle {
        ClientHandle {
            peer: peer.clone(),
            shared: self.shared.clone(),
        }
    }
}

fn not_supported(what: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("this client does not support {what} (no handler configured)"),
    )
}

impl Service for ClientService {
    fn handle_request(
        &self,
        method: &str,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
        if let Some(refusal) = self.shared.era().refuse_server_request(method) {
            return Box::pin(std::future::ready(Err(refusal)));
        }
        let handlers = self.shared.handlers.clone();
        let method = method.to_owned();
        let params = cx.params().cloned();
        let context = ClientContext::for_request(self.handle(cx.peer()), cx);
        Box::pin(async move {
            // Absent params read as `{}`.
            let text = params.as_ref().map_or("{}", JsonText::get);
            let encode = |v: &dyn erased::Encode| v.encode();
            match method.as_str() {
                method::SAMPLING_CREATE_MESSAGE => {
                    let handler = handlers.sampling.ok_or_else(|| not_supported("sampling"))?;
                    let params: CreateMessageRequestParams =
                        serde_json::from_str(text).map_err(ErrorObject::invalid_params)?;
                    if (params.tools.is_some() || params.tool_choice.is_some())
                        && !handlers.sampling_tools
                    {
                        return Err(ErrorObject::invalid_params(
                            "sampling with tools was requested but this client did not declare sampling.tools",
                        ));
                    }
                    encode(&handler(params, context).await?)
                }
                method::ELICITATION_CREATE => {
                    let handler = handlers
                        .elicitation
                        .ok_or_else(|| not_supported("elicitation"))?;
                    let params: ElicitRequestParams =
                        serde_json::from_str(text).map_err(ErrorObject::invalid_params)?;
                    if matches!(params, ElicitRequestParams::Url(_)) && !handlers.url_elicitation {
                        return Err(ErrorObject::invalid_params(
                            "URL-mode elicitation was not declared by this client",
                        ));
                    }
                    encode(&handler(params, context).await?)
                }
                method::ROOTS_LIST => {
                    let handler = handlers.roots.ok_or_else(|| not_supported("roots"))?;
                    encode(&ListRootsResult::new(handler(context).await?))
                }
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    }

    fn observe_notification(&self, notification: &Notification, _peer: &Peer) {
        let Some(caches) = self.shared.caches.get() else {
            return;
        };
        match notification.method.as_str() {
            method::SUBSCRIPTIONS_ACKNOWLEDGED => {
                let params = notification.params.as_deref();
                if self.shared.era().listen_acknowledged(params) {
                    // A listen stream opened again: changes in the gap went unannounced.
                    caches.mark_all_dirty();
                }
            }
            method::TOOL_LIST_CHANGED => caches.tools.mark_dirty(),
            method::PROMPT_LIST_CHANGED => caches.prompts.mark_dirty(),
            method::RESOURCE_LIST_CHANGED => {
                caches.resources.mark_dirty();
                caches.templates.mark_dirty();
            }
            _ => {}
        }
    }

    fn handle_notification(
        &self,
        notification: Notification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        let handlers = self.shared.handlers.clone();
        let handle = self.handle(&peer);
        Box::pin(async move {
            if notification.method == method::SUBSCRIPTIONS_ACKNOWLEDGED {
                // The client's own listen stream, confirmed (seen on the reader).
                return;
            }
            if notification.method == method::LOGGING_MESSAGE
                && let Some(log) = &handlers.log
            {
                match notification
                    .params
                    .as_deref()
                    .map(|p| serde_json::from_str::<LoggingMessageNotificationParams>(p.get()))
                {
                    Some(Ok(params)) => log(params, handle.clone()).await,
                    _ => tracing::debug!("ignored a malformed log notification"),
                }
            }
            if notification.method == method::ELICITATION_COMPLETE
                && let Some(complete) = &handlers.elicitation_complete
            {
                match notification
                    .params
                    .as_deref()
                    .map(|p| serde_json::from_str::<ElicitationCompleteNotificationParams>(p.get()))
                {
                    Some(Ok(params)) => complete(params, handle.clone()).await,
                    _ => tracing::debug!("ignored a malformed elicitation/complete notification"),
                }
            }
            if let Some(on_notification) = &handlers.notification {
                on_notification(notification, handle).await;
            }
        })
    }
}

mod erased {
    use mcpflow_protocol::ErrorObject;

    use crate::session::Reply;

    /// Serialize a handler's result into the response.
    pub(super) trait Encode {
        fn encode(&self) -> Result<Reply, ErrorObject>;
    }

    impl<T: serde::Serialize> Encode for T {
        fn encode(&self) -> Result<Reply, ErrorObject> {
            Reply::json(self).map_err(ErrorObject::internal)
        }
    }
}
