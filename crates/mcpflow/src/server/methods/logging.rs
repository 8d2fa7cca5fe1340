//! `logging/setLevel`.

use std::sync::atomic::Ordering;

use mcpflow_protocol::{EmptyResult, ErrorObject, LoggingLevel, SetLevelRequestParams};

use super::required;
use crate::server::ServerContext;
use crate::session::Reply;

/// Set the least severe level [`ServerContext::log`] sends on this connection.
pub(crate) async fn set_level(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let p: SetLevelRequestParams = required(&cx)?;
    let index = LoggingLevel::ALL
        .iter()
        .position(|l| *l == p.level)
        .unwrap_or(0);
    cx.connection()
        .log_level
        .store(u8::try_from(index).unwrap_or(0), Ordering::Relaxed);
    cx.reply(EmptyResult::default())
}
