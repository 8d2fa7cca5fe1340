//! [`ClientContext`]: what the client's callbacks get besides the server's request.

use tokio_util::sync::CancellationToken;

use super::ClientHandle;
use crate::error::SessionError;
use crate::session::RequestContext;

/// Given to the client's callbacks (sampling, elicitation, roots): the client, to call
/// the server back; the server's request, to report progress on it and to see it
/// cancelled.
///
/// A URL elicitation the client found in a `-32042` error reaches the elicitation
/// callback too; it answers no request, so it has no [`request`](Self::request) and is
/// never cancelled.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use mcpflow::client::Client;
/// use mcpflow::protocol::CreateMessageResult;
/// use mcpflow::protocol::ErrorObject;
///
/// let builder = Client::builder("agent", "1.0.0").on_sampling(|params, cx| async move {
///     cx.progress(0.0, Some(1.0), Some("asking the model")).await.ok();
///     if cx.is_cancelled() {
///         return Err(ErrorObject::internal("cancelled"));
///     }
///     Ok(CreateMessageResult::assistant_text("my-model", format!("{} messages", params.messages.len())))
/// });
/// # drop(builder); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ClientContext {
    client: ClientHandle,
    request: Option<RequestContext>,
    cancellation: CancellationToken,
}

impl ClientContext {
    pub(super) fn for_request(client: ClientHandle, request: RequestContext) -> ClientContext {
        let cancellation = request.cancellation().clone();
        ClientContext {
            client,
            request: Some(request),
            cancellation,
        }
    }

    pub(super) fn without_request(client: ClientHandle) -> ClientContext {
        ClientContext {
            client,
            request: None,
            cancellation: CancellationToken::new(),
        }
    }

    /// The client, to call the server back.
    pub fn client(&self) -> &ClientHandle {
        &self.client
    }

    /// The server's request this callback answers (id, `_meta`, progress token).
    pub fn request(&self) -> Option<&RequestContext> {
        self.request.as_ref()
    }

    /// Tripped when the server cancels its request or the connection closes.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// Whether the server cancelled its request.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Report progress on the server's request (sent only when the server asked for
    /// progress with a token).
    ///
    /// # Errors
    /// [`SessionError::Closed`] when the connection has ended.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), SessionError> {
        match &self.request {
            Some(request) => request.report_progress(progress, total, message).await,
            None => Ok(()),
        }
    }
}
