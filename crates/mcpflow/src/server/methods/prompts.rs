//! `prompts/list` and `prompts/get`.

use mcpflow_protocol::prompts::ListPromptsResult;
use std::collections::BTreeMap;

use mcpflow_protocol::ErrorObject;

use super::{cursor, page};
use crate::server::ServerContext;
use crate::session::Reply;

pub(crate) async fn list(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let server = cx.server();
    let (prompts, next_cursor) = page(
        &server.registry().prompts,
        cursor(&cx)?,
        server.inner.page_size,
        |e| e.prompt.clone(),
    )?;
    cx.reply(ListPromptsResult {
        prompts,
        next_cursor,
        ..Default::default()
    })
}

/// Render a prompt, once every argument it marks required is there.
pub(crate) async fn get(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let head = cx.request().head();
    let name = head.name.required("name")?;
    let entry = cx
        .server()
        .registry()
        .prompts
        .iter()
        .find(|e| e.prompt.name == *name)
        .cloned()
        .ok_or_else(|| ErrorObject::invalid_params(format!("unknown prompt: {name}")))?;
    let args: BTreeMap<String, String> = match head.arguments.optional("arguments")? {
        Some(arguments) => arguments.decode().map_err(ErrorObject::invalid_params)?,
        None => BTreeMap::new(),
    };
    for arg in entry.prompt.arguments.iter().flatten() {
        if arg.required == Some(true) && !args.contains_key(&arg.name) {
            return Err(ErrorObject::invalid_params(format!(
                "prompt `{name}` needs the argument `{}`",
                arg.name
            )));
        }
    }
    let prompt = (entry.handler)(args, cx.clone()).await?;
    cx.reply(prompt)
}
