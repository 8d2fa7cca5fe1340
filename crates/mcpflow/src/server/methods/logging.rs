//! `logging/setLevel`.

use std::sync::atomic::Ordering;

use mcpflow_protocol::methods::method;
use mcpflow_protocol::{EmptyResult, ErrorObject, SetLevelRequestParams};

use super::{Params, required, result};
use crate::server::{LEVELS, ServerContext};
use crate::session::Reply;

/// Set the least severe level [`ServerContext::log`] sends on this connection.
pub(crate) async fn set_level(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    if !cx.server().inner.logging {
        return Err(ErrorObject::method_not_found(method::LOGGING_SET_LEVEL));
    }
    let p: SetLevelRequestParams = required(&params)?;
    let index = LEVELS.iter().position(|l| *l == p.level).unwrap_or(0);
    cx.connection()
        .log_level
        .store(u8::try_from(index).unwrap_or(0), Ordering::Relaxed);
    result(&EmptyResult::default())
}
