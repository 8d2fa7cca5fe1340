//! `completion/complete`.

use mcpflow_protocol::{CompleteRequestParams, CompleteResult, ErrorObject};

use super::required;
use crate::server::ServerContext;
use crate::session::Reply;

/// Candidates sent at most; the rest are counted in `total`.
const MAX_VALUES: usize = 100;

/// Ask the server's completion handler, or else the route registered for the argument
/// (no route completes to nothing).
pub(crate) async fn complete(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let server = cx.server();
    let p: CompleteRequestParams = required(&cx)?;
    if let Some(handler) = server.inner.completion.clone() {
        let complete = handler(p, cx.clone()).await?;
        return cx.reply(complete);
    }
    let route = server
        .registry()
        .completions
        .iter()
        .find(|r| r.matches(&p))
        .cloned();
    let mut values = match route {
        Some(route) => {
            let context = p.context.and_then(|c| c.arguments).unwrap_or_default();
            (route.completer)(p.argument.value, context, cx.clone()).await
        }
        None => Vec::new(),
    };
    let total = values.len();
    values.truncate(MAX_VALUES);
    let mut complete = CompleteResult::new(values);
    if total > MAX_VALUES {
        complete.completion.total = u64::try_from(total).ok();
        complete.completion.has_more = Some(true);
    }
    cx.reply(complete)
}
