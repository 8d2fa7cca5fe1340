//! `initialize`, the handshake, and `ping`.

use mcpflow_protocol::{
    EmptyResult, ErrorObject, InitializeRequestParams, InitializeResult, ProtocolVersion,
};

use super::{Params, required, result};
use crate::server::ServerContext;
use crate::session::Reply;

/// Negotiate the version and record what the client said about itself, then let the
/// server's hook run before the result goes out.
pub(crate) async fn initialize(params: Params, cx: ServerContext) -> Result<Reply, ErrorObject> {
    let params: InitializeRequestParams = required(&params)?;
    let version = ProtocolVersion::negotiate(params.protocol_version.as_str());
    cx.peer().set_accept_batches(version.supports_batches());
    let connection = cx.connection();
    let _ = connection.protocol_version.set(version.clone());
    let _ = connection.client_info.set(params.client_info.clone());
    let _ = connection
        .client_capabilities
        .set(params.capabilities.clone());
    let server = cx.server().clone();
    if let Some(hook) = server.inner.on_initialize.clone() {
        hook(params, cx).await?;
    }
    let mut init = InitializeResult::new(version, server.capabilities(), server.inner.info.clone());
    init.instructions = server.inner.instructions.clone();
    result(&init)
}

/// Answer `ping` with an empty result.
pub(crate) async fn ping(_params: Params, _cx: ServerContext) -> Result<Reply, ErrorObject> {
    result(&EmptyResult::default())
}
