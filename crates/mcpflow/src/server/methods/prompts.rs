//! `prompts/list` and `prompts/get`.

use mcpflow_protocol::prompts::ListPromptsResult;
use mcpflow_protocol::{ErrorObject, GetPromptRequestParams, PaginatedRequestParams};

use super::{Params, optional, page, required, result};
use crate::server::ServerContext;
use crate::session::Reply;

pub(crate) async fn list(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: PaginatedRequestParams = optional(&params)?;
    let server = cx.server();
    let (prompts, next_cursor) = page(
        &server.registry().prompts,
        p.cursor.as_deref(),
        server.inner.page_size,
        |e| e.prompt.clone(),
    )?;
    result(&ListPromptsResult {
        prompts,
        next_cursor,
        ..Default::default()
    })
}

/// Render a prompt, once every argument it marks required is there.
pub(crate) async fn get(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: GetPromptRequestParams = required(&params)?;
    let entry = cx
        .server()
        .registry()
        .prompts
        .iter()
        .find(|e| e.prompt.name == p.name)
        .cloned()
        .ok_or_else(|| ErrorObject::invalid_params(format!("unknown prompt: {}", p.name)))?;
    let args = p.arguments.unwrap_or_default();
    for arg in entry.prompt.arguments.iter().flatten() {
        if arg.required == Some(true) && !args.contains_key(&arg.name) {
            return Err(ErrorObject::invalid_params(format!(
                "prompt `{}` needs the argument `{}`",
                p.name, arg.name
            )));
        }
    }
    result(&(entry.handler)(args, cx).await?)
}
