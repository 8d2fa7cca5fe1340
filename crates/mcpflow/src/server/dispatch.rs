//! Answering one connection's requests: the engine's [`Service`] for a server. It
//! checks the method against the declared capabilities and hands the request to that
//! method's function in [`methods`](super::methods).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcpflow_protocol::jsonrpc::{Notification, Request};
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{ErrorCode, ErrorObject};

use super::methods::{completion, lifecycle, logging, prompts, resources, tools};
use super::tasks::methods as tasks;
use super::{Connection, ServerContext};
use crate::session::{BoxFuture, Peer, Reply, RequestContext, Service};

/// The engine's [`Service`] for one server connection.
pub(crate) struct ServerService {
    pub(crate) connection: Arc<Connection>,
}

/// Each method's future boxed on its own, so a request holds only what its method needs.
fn boxed(
    answer: impl Future<Output = Result<Reply, ErrorObject>> + Send + 'static,
) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
    Box::pin(answer)
}

impl Service for ServerService {
    fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Reply, ErrorObject>> {
        let server = &self.connection.server;
        if server.inner.per_request
            && (self.connection.per_request_only.load(Ordering::Acquire)
                || super::per_request::carries_envelope(&request.method, request.params.as_deref()))
        {
            self.connection
                .saw_per_request
                .store(true, Ordering::Release);
            return super::per_request::handle(
                &self.connection,
                request.method,
                request.params,
                cx,
            );
        }
        if self.connection.server.lacks_capability_for(&request.method) {
            return boxed(std::future::ready(Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "method not found: {} (this server declares no such capability)",
                    request.method
                ),
            ))));
        }
        let cx = ServerContext::new(cx, self.connection.clone());
        let params = request.params;
        match request.method.as_str() {
            method::INITIALIZE => boxed(lifecycle::initialize(params, cx)),
            method::PING => boxed(lifecycle::ping(params, cx)),
            method::TOOLS_LIST => boxed(tools::list(params, cx)),
            method::TOOLS_CALL => boxed(tools::call(params, cx)),
            method::RESOURCES_LIST => boxed(resources::list(params, cx)),
            method::RESOURCES_TEMPLATES_LIST => boxed(resources::templates_list(params, cx)),
            method::RESOURCES_READ => boxed(resources::read(params, cx)),
            method::RESOURCES_SUBSCRIBE => boxed(resources::subscribe(params, cx)),
            method::RESOURCES_UNSUBSCRIBE => boxed(resources::unsubscribe(params, cx)),
            method::PROMPTS_LIST => boxed(prompts::list(params, cx)),
            method::PROMPTS_GET => boxed(prompts::get(params, cx)),
            method::COMPLETION_COMPLETE => boxed(completion::complete(params, cx)),
            method::LOGGING_SET_LEVEL => boxed(logging::set_level(params, cx)),
            method::TASKS_GET => boxed(tasks::get(params, cx)),
            method::TASKS_RESULT => boxed(tasks::result(params, cx)),
            method::TASKS_LIST => boxed(tasks::list(params, cx)),
            method::TASKS_CANCEL => boxed(tasks::cancel(params, cx)),
            other => boxed(std::future::ready(Err(ErrorObject::method_not_found(
                other,
            )))),
        }
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
