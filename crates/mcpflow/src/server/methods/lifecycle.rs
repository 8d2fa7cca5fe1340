//! `initialize`, the handshake, and `ping`.

use mcpflow_protocol::{
    EmptyResult, ErrorCode, ErrorObject, Implementation, InitializeRequestParams, InitializeResult,
    ProtocolVersion,
};

use super::required;
use crate::server::{Handshake, ServerContext};
use crate::session::Reply;

/// Negotiate the version and record what the client said about itself, then let the
/// server's hook run before the result goes out.
pub(crate) async fn initialize(cx: ServerContext) -> Result<Reply, ErrorObject> {
    let params: InitializeRequestParams = required(&cx)?;
    let version = ProtocolVersion::negotiate(params.protocol_version.as_str());
    let handshake = Handshake {
        version: version.clone(),
        client_info: params.client_info.clone(),
        capabilities: params.capabilities.clone(),
    };
    if !cx.connection().record_handshake(handshake) {
        return Err(ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            "invalid request: this connection is already initialized; `initialize` is sent once per connection",
        ));
    }
    cx.peer().set_accept_batches(version.supports_batches());
    cx.peer().note_version(version.as_str());
    cx.request().operation().set_version(version.as_str());
    let server = cx.server().clone();
    if let Some(hook) = server.inner.on_initialize.clone() {
        hook(params, cx.clone()).await?;
    }
    let mut capabilities = server.capabilities();
    if !version.at_least(&ProtocolVersion::V2025_03_26) {
        // `completions` is a 2025-03-26 capability.
        capabilities.completions = None;
    }
    let info = info_for(&server.inner.info, &version);
    let mut init = InitializeResult::new(version, capabilities, info);
    init.instructions = server.inner.instructions.clone();
    cx.reply(init)
}

/// Answer `ping` with an empty result.
pub(crate) async fn ping(cx: ServerContext) -> Result<Reply, ErrorObject> {
    cx.reply(EmptyResult::default())
}

/// `info` without the fields `version` does not define: `title` is 2025-06-18,
/// `description`, `icons` and `websiteUrl` are 2025-11-25.
fn info_for(info: &Implementation, version: &ProtocolVersion) -> Implementation {
    let mut info = info.clone();
    if !version.at_least(&ProtocolVersion::V2025_06_18) {
        info.title = None;
    }
    if !version.at_least(&ProtocolVersion::V2025_11_25) {
        info.description = None;
        info.icons = None;
        info.website_url = None;
    }
    info
}
