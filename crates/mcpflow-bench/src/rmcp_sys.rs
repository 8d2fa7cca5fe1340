//! rmcp's side: a `#[tool_router]` server and a `ClientHandler`, as its README shows.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ProgressNotificationParam,
    RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, RoleServer, ServerHandler};
use rmcp::{tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::common::{ProgressLog, big_text};

/// `echo` arguments.
#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// `progress` arguments.
#[derive(Deserialize, JsonSchema)]
pub struct ProgressArgs {
    /// How many notifications to send.
    pub count: u64,
}

/// `big` arguments.
#[derive(Deserialize, JsonSchema)]
pub struct BigArgs {
    /// Length of the returned text.
    pub bytes: usize,
}

/// The benchmark server.
#[derive(Clone)]
pub struct RmcpServer {
    #[allow(dead_code, reason = "read by the code #[tool_handler] generates")]
    tool_router: ToolRouter<Self>,
}

impl Default for RmcpServer {
    fn default() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl RmcpServer {
    /// Echo the text back.
    #[tool(description = "Echo the text back")]
    async fn echo(
        &self,
        Parameters(args): Parameters<EchoArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text(args.text)]))
    }

    /// Report progress `count` times, then return.
    #[tool(description = "Report progress `count` times")]
    async fn progress(
        &self,
        Parameters(args): Parameters<ProgressArgs>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let token = meta
            .get_progress_token()
            .ok_or_else(|| ErrorData::invalid_params("a progress token is required", None))?;
        for i in 1..=args.count {
            peer.notify_progress(
                ProgressNotificationParam::new(token.clone(), i as f64)
                    .with_total(args.count as f64),
            )
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("done")]))
    }

    /// Return `bytes` bytes of text.
    #[tool(description = "Return `bytes` bytes of text")]
    async fn big(
        &self,
        Parameters(args): Parameters<BigArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text(big_text(
            args.bytes,
        ))]))
    }
}

#[tool_handler]
impl ServerHandler for RmcpServer {}

/// The client handler: counts progress.
pub struct RmcpClient {
    /// Where progress goes.
    pub log: Arc<ProgressLog>,
}

impl ClientHandler for RmcpClient {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.log.record(params.progress);
    }
}

/// A connected rmcp client.
pub type RmcpConn = RunningService<RoleClient, RmcpClient>;

/// `tools/call` through `RunningService::call_tool`.
pub async fn call(
    client: &RmcpConn,
    name: &'static str,
    arguments: Value,
) -> Result<String, String> {
    let Value::Object(arguments) = arguments else {
        return Err("arguments must be an object".to_owned());
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name).with_arguments(arguments))
        .await
        .map_err(|e| e.to_string())?;
    // The first block's text, moved out of the result (as the other systems do).
    match result.content.into_iter().next() {
        Some(ContentBlock::Text(text)) => Ok(text.text),
        _ => Err("no text in the result".to_owned()),
    }
}
