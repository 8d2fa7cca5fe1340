//! Which protocol era a server speaks, found the way 2026-07-28 describes: probe with
//! `server/discover` carrying the per-request `_meta`; a `DiscoverResult` or a
//! recognised 2026-07-28 error (`-32022` with `supported`) means 2026-07-28, any other
//! error or a timeout means the `initialize` handshake.

use std::time::Duration;

use mcpflow_protocol::discover::DiscoverResult;
use mcpflow_protocol::jsonrpc::UnsupportedProtocolVersionData;
use mcpflow_protocol::meta2026::RequestMeta;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{
    ClientCapabilities, EmptyParams, ErrorCode, Implementation, InitializeResult, JsonObject,
    LoggingLevel, ProtocolVersion,
};

use crate::error::SessionError;
use crate::session::{Peer, RequestOptions};

/// Which protocol era a client speaks ([`ClientBuilder::era`](super::ClientBuilder::era)).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use mcpflow::client::{Client, Era};
/// use mcpflow::server::Server;
/// use mcpflow::transport::MemoryTransport;
///
/// let (client_side, server_side) = MemoryTransport::pair(0);
/// let _running = Server::builder("demo", "1.0.0").build().serve(server_side);
/// let client = Client::builder("my-agent", "0.1.0")
///     .era(Era::Auto)
///     .connect(client_side)
///     .await?;
/// // The server answered `server/discover`, so the client speaks 2026-07-28.
/// assert!(client.is_per_request());
/// client.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Era {
    /// Probe with `server/discover` and speak 2026-07-28 when the server does, else run
    /// the `initialize` handshake.
    Auto,
    /// Only the `initialize` handshake (2025-11-25 and older); no probe (the default, as
    /// in the official TypeScript client: a probe costs a round trip, and some stdio
    /// servers exit on any request before `initialize`).
    #[default]
    Handshake,
    /// Only 2026-07-28: connecting fails when the server does not speak it.
    PerRequest,
}

/// Servers (by [`Transport::server_key`](crate::transport::Transport::server_key)) found
/// to speak only the handshake era in this process: later connections skip the probe.
static HANDSHAKE_ONLY: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Most servers remembered in [`HANDSHAKE_ONLY`].
const REMEMBERED: usize = 256;

/// Whether the server at `key` was found to speak only the handshake era.
pub(crate) fn known_handshake_only(key: Option<&str>) -> bool {
    key.is_some_and(|key| {
        HANDSHAKE_ONLY
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|k| k == key)
    })
}

/// Remember that the server at `key` speaks only the handshake era (or forget it, when
/// it turned out to speak 2026-07-28).
pub(crate) fn remember(key: Option<&str>, handshake_only: bool) {
    let Some(key) = key else {
        return;
    };
    let mut known = HANDSHAKE_ONLY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    known.retain(|k| k != key);
    if handshake_only {
        if known.len() >= REMEMBERED {
            known.remove(0);
        }
        known.push(key.to_owned());
    }
}

/// The 2026-07-28 versions this client speaks, preferred first.
pub(crate) const PER_REQUEST_VERSIONS: &[ProtocolVersion] = &[ProtocolVersion::V2026_07_28];

/// Errors that only a 2026-07-28 server sends: seeing one means the server speaks
/// 2026-07-28 even though it refused the request.
#[cfg(feature = "http-client")]
pub(crate) fn is_per_request_error(code: ErrorCode) -> bool {
    code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        || code == ErrorCode::HEADER_MISMATCH
        || code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
}

/// What the probe found.
#[derive(Debug)]
pub(crate) enum Probe {
    /// The server speaks 2026-07-28 at `version`.
    PerRequest {
        version: ProtocolVersion,
        discovered: Box<DiscoverResult>,
    },
    /// Fall back to `initialize`, for this reason (logged).
    Handshake(String),
    /// The server speaks 2026-07-28 but shares no version with this client, or the connection
    /// ended.
    Failed(SessionError),
}

/// The per-request `_meta` envelope of 2026-07-28.
pub(crate) fn envelope(
    version: &ProtocolVersion,
    capabilities: &ClientCapabilities,
    info: &Implementation,
    log_level: Option<LoggingLevel>,
) -> JsonObject {
    let mut meta =
        RequestMeta::new(version.clone(), capabilities.clone()).with_client_info(info.clone());
    meta.log_level = log_level;
    meta.to_meta()
}

/// Probe with `server/discover`, retrying once with a version the server names in a
/// `-32022` refusal.
pub(crate) async fn probe(
    peer: &Peer,
    capabilities: &ClientCapabilities,
    info: &Implementation,
    log_level: Option<LoggingLevel>,
    timeout: Duration,
) -> Probe {
    let mut version = PER_REQUEST_VERSIONS[0].clone();
    for _ in 0..2 {
        let options = RequestOptions::new()
            .timeout(timeout)
            .max_total(timeout)
            .meta(envelope(&version, capabilities, info, log_level));
        let answer: Result<DiscoverResult, SessionError> = peer
            .request(method::SERVER_DISCOVER, &EmptyParams::default(), options)
            .await;
        match answer {
            Ok(discovered) => {
                if let Some(v) = PER_REQUEST_VERSIONS
                    .iter()
                    .find(|v| discovered.supported_versions.contains(v))
                {
                    return Probe::PerRequest {
                        version: v.clone(),
                        discovered: Box::new(discovered),
                    };
                }
                if discovered
                    .supported_versions
                    .iter()
                    .any(ProtocolVersion::is_handshake)
                {
                    return Probe::Handshake(
                        "server/discover lists only handshake versions".to_owned(),
                    );
                }
                return Probe::Failed(no_common_version(&discovered.supported_versions));
            }
            Err(SessionError::Rejected { error, .. })
                if error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
            {
                let supported = error
                    .data_as::<UnsupportedProtocolVersionData>()
                    .map(|d| d.supported)
                    .unwrap_or_default();
                match PER_REQUEST_VERSIONS.iter().find(|v| supported.contains(v)) {
                    Some(v) => version = v.clone(),
                    None if supported.iter().any(ProtocolVersion::is_handshake) => {
                        return Probe::Handshake(
                            "the server refused 2026-07-28 and names handshake versions".to_owned(),
                        );
                    }
                    None => return Probe::Failed(no_common_version(&supported)),
                }
            }
            Err(e @ SessionError::Closed { .. }) => return Probe::Failed(e),
            // Authorization failed: `initialize` would be refused the same way, after
            // running the authorization flow a second time.
            Err(e) if refused_authorization(&e) => return Probe::Failed(e),
            Err(other) => return Probe::Handshake(other.to_string()),
        }
    }
    Probe::Failed(SessionError::Codec {
        method: method::SERVER_DISCOVER.into(),
        detail: "the server refused the protocol version it named as supported".to_owned(),
    })
}

/// Whether `error` is an HTTP 401 or 403 (what is left when authorization failed).
pub(crate) fn refused_authorization(error: &SessionError) -> bool {
    matches!(
        error,
        SessionError::Transport {
            error: crate::error::TransportError::Http {
                status: Some(401 | 403),
                ..
            },
            ..
        }
    )
}

fn no_common_version(supported: &[ProtocolVersion]) -> SessionError {
    SessionError::Codec {
        method: method::SERVER_DISCOVER.into(),
        detail: format!(
            "the server speaks {} and this client only 2026-07-28 or a handshake version",
            supported
                .iter()
                .map(ProtocolVersion::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The discover result as an `initialize` result, so [`Client::server_info`](super::Client::server_info)
/// answers in both eras.
pub(crate) fn as_initialize(
    version: ProtocolVersion,
    discovered: &DiscoverResult,
) -> InitializeResult {
    let server_info = discovered
        .meta
        .as_ref()
        .and_then(|m| mcpflow_protocol::ResultMeta::from_meta(m).ok())
        .and_then(|m| m.server_info)
        .or_else(|| {
            // Some servers put `serverInfo` at the top level of the result.
            discovered
                .extra
                .get("serverInfo")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
        })
        .unwrap_or_else(|| Implementation::new("unknown", "0"));
    let mut init = InitializeResult::new(version, discovered.capabilities.clone(), server_info);
    init.instructions.clone_from(&discovered.instructions);
    init
}

/// What the per-request `_meta` envelope is built from, kept so that
/// [`set_logging_level`](super::ClientHandle::set_logging_level) can change its
/// `logLevel`.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub(crate) version: ProtocolVersion,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) info: Implementation,
}

impl Identity {
    pub(crate) fn envelope(&self, log_level: Option<LoggingLevel>) -> JsonObject {
        envelope(&self.version, &self.capabilities, &self.info, log_level)
    }
}
