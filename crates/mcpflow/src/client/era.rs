//! Which protocol era a server speaks, found the way 2026-07-28 describes: probe with
//! `server/discover` carrying the per-request `_meta`; a `DiscoverResult` or a
//! recognised 2026-07-28 error (`-32022` with `supported`) means 2026-07-28, any other
//! error or a timeout means the `initialize` handshake. [`classify`] reads an answer,
//! [`probe`] sends; what a connection found can be kept for the next ([`EraMemory`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcpflow_protocol::discover::DiscoverResult;
use mcpflow_protocol::jsonrpc::UnsupportedProtocolVersionData;
use mcpflow_protocol::meta2026::RequestMeta;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::{
    ClientCapabilities, EmptyParams, ErrorCode, Implementation, InitializeResult, JsonObject,
    LoggingLevel, PER_REQUEST_VERSIONS, ProtocolVersion,
};

use crate::error::SessionError;
use crate::session::{Peer, RequestEnvelope, RequestOptions};
use crate::transport::Mirrored;

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

/// What connections learnt of one server's era, for the next connection to it: a server
/// found to speak only the handshake era is not probed again ([`Era::Auto`]), as
/// 2026-07-28 recommends (cache the era per server process or HTTP origin, and probe
/// again when the assumption fails). Give the same memory to every builder that connects
/// to that server ([`ClientBuilder::era_memory`](super::ClientBuilder::era_memory));
/// clones share it. Without one, every connection in [`Era::Auto`] probes.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use mcpflow::client::{Client, Era, EraMemory};
/// use mcpflow::server::Server;
/// use mcpflow::transport::MemoryTransport;
///
/// // A server that speaks only the handshake era.
/// let server = Server::builder("old", "1.0.0").per_request_era(false).build();
/// let memory = EraMemory::new();
/// let connect = |transport| {
///     Client::builder("my-agent", "0.1.0")
///         .era(Era::Auto)
///         .era_memory(memory.clone())
///         .connect(transport)
/// };
/// let (client_side, server_side) = MemoryTransport::pair(0);
/// let _running = server.serve(server_side);
/// let first = connect(client_side).await?; // probed, then ran `initialize`
/// assert!(memory.knows_handshake_only());
/// first.close().await;
///
/// let (client_side, server_side) = MemoryTransport::pair(0);
/// let _running = server.serve(server_side);
/// let second = connect(client_side).await?; // `initialize` at once
/// assert!(!second.is_per_request());
/// second.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct EraMemory(Arc<AtomicBool>);

impl EraMemory {
    /// A memory that knows nothing yet.
    pub fn new() -> EraMemory {
        EraMemory::default()
    }

    /// Whether a connection found the server to speak only the handshake era, and no
    /// `initialize` failed since.
    pub fn knows_handshake_only(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Remember that the server speaks only the handshake era, or forget it.
    pub(crate) fn remember_handshake_only(&self, handshake_only: bool) {
        self.0.store(handshake_only, Ordering::Relaxed);
    }
}

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
    Handshake(SessionError),
    /// The server speaks 2026-07-28 but shares no version with this client, or the
    /// connection ended.
    Failed(SessionError),
}

/// What one answer to `server/discover` says.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The probe is over.
    Found(Probe),
    /// The server speaks 2026-07-28 and refused the version asked for: ask again with
    /// this one, which both sides speak.
    AskWith(ProtocolVersion),
}

/// Classify the answer to a `server/discover` probe, by 2026-07-28's rules for a client
/// of both eras: a `DiscoverResult`, or a per-request error the client recognises (such
/// as `UnsupportedProtocolVersionError`, then pick from `supported`), means the
/// per-request era, with no fall back; any other error, or a timeout, means the
/// handshake (`initialize`). The fall back is never keyed to one error code.
/// The schema says how to pick: "The client should choose a version from this list for
/// use in subsequent requests" (`supportedVersions`), and "choose a mutually supported
/// version from this list and retry" (the error's `supported`).
///
/// Two answers say nothing of the era: a connection that ended, and a refused
/// authorization (`initialize` would be refused the same way, after running the
/// authorization flow a second time).
pub(crate) fn classify(answer: Result<DiscoverResult, SessionError>) -> Verdict {
    let found = match answer {
        Ok(discovered) => {
            let shared = PER_REQUEST_VERSIONS
                .iter()
                .find(|v| discovered.supported_versions.contains(v));
            match shared {
                Some(version) => Probe::PerRequest {
                    version: version.clone(),
                    discovered: Box::new(discovered),
                },
                None if discovered
                    .supported_versions
                    .iter()
                    .any(ProtocolVersion::is_handshake) =>
                {
                    Probe::Handshake(discover_failed("it lists only handshake versions"))
                }
                None => Probe::Failed(no_common_version(
                    "`supportedVersions`",
                    &discovered.supported_versions,
                )),
            }
        }
        Err(SessionError::Rejected { error, .. })
            if error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
        {
            let supported = error
                .data_as::<UnsupportedProtocolVersionData>()
                .map(|d| d.supported)
                .unwrap_or_default();
            match PER_REQUEST_VERSIONS.iter().find(|v| supported.contains(v)) {
                Some(version) => return Verdict::AskWith(version.clone()),
                None if supported.iter().any(ProtocolVersion::is_handshake) => Probe::Handshake(
                    discover_failed("the server refused 2026-07-28 and names handshake versions"),
                ),
                None => Probe::Failed(no_common_version("the refusal's `supported`", &supported)),
            }
        }
        Err(e @ SessionError::Closed { .. }) => Probe::Failed(e),
        Err(e) if refused_authorization(&e) => Probe::Failed(e),
        Err(other) => Probe::Handshake(other),
    };
    Verdict::Found(found)
}

/// Probe with `server/discover` carrying `identity`'s envelope, asking once more with a
/// version the server names in a `-32022` refusal.
pub(crate) async fn probe(
    peer: &Peer,
    identity: &Identity,
    log_level: Option<LoggingLevel>,
    timeout: Duration,
) -> Probe {
    let mut version = identity.version.clone();
    for _ in 0..2 {
        let asking = Identity {
            version: version.clone(),
            ..identity.clone()
        };
        let options = RequestOptions::new()
            .timeout(timeout)
            .max_total(timeout)
            .meta(asking.meta(log_level))
            .mirrored(Arc::new(Mirrored::version(version.clone())));
        let answer = peer
            .request(method::SERVER_DISCOVER, &EmptyParams::default(), options)
            .await;
        match classify(answer) {
            Verdict::Found(found) => return found,
            Verdict::AskWith(other) => version = other,
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

fn discover_failed(detail: &str) -> SessionError {
    SessionError::Codec {
        method: method::SERVER_DISCOVER.into(),
        detail: detail.to_owned(),
    }
}

/// The failure for a server whose versions, listed in `list`, share none with this
/// client's.
fn no_common_version(list: &str, supported: &[ProtocolVersion]) -> SessionError {
    let detail = if supported.is_empty() {
        format!("the server names no protocol version it speaks ({list} is empty)")
    } else {
        let versions: Vec<_> = supported.iter().map(ProtocolVersion::as_str).collect();
        format!(
            "the server speaks {} and this client only 2026-07-28 or a handshake version",
            versions.join(", ")
        )
    };
    discover_failed(&detail)
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

/// What the per-request `_meta` envelope is built from: the version spoken, the
/// capabilities the callbacks declare, and the client's info.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub(crate) version: ProtocolVersion,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) info: Implementation,
}

impl Identity {
    /// The `_meta` entries of the envelope, asking for logs at `log_level`.
    pub(crate) fn meta(&self, log_level: Option<LoggingLevel>) -> JsonObject {
        let mut meta = RequestMeta::new(self.version.clone(), self.capabilities.clone())
            .with_client_info(self.info.clone());
        meta.log_level = log_level;
        meta.to_meta()
    }

    /// The envelope every request carries, with the version its HTTP headers mirror.
    pub(crate) fn envelope(&self, log_level: Option<LoggingLevel>) -> RequestEnvelope {
        RequestEnvelope {
            meta: self.meta(log_level),
            mirrored: Some(Arc::new(Mirrored::version(self.version.clone()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use mcpflow_protocol::ErrorObject;

    use super::*;
    use crate::error::{CloseReason, TransportError};

    fn discovered(versions: &[&str]) -> Result<DiscoverResult, SessionError> {
        let value = serde_json::json!({"supportedVersions": versions, "capabilities": {}});
        Ok(serde_json::from_value(value).expect("a discover result"))
    }

    fn refused(code: ErrorCode, supported: &[&str]) -> Result<DiscoverResult, SessionError> {
        let error = ErrorObject::new(code, "refused")
            .with_data(serde_json::json!({"supported": supported, "requested": "2026-07-28"}));
        Err(SessionError::Rejected {
            method: method::SERVER_DISCOVER.into(),
            error,
        })
    }

    fn found(answer: Result<DiscoverResult, SessionError>) -> Probe {
        match classify(answer) {
            Verdict::Found(probe) => probe,
            Verdict::AskWith(v) => panic!("asked again with {v:?}"),
        }
    }

    #[test]
    fn a_discover_result_with_a_shared_version_means_per_request() {
        let probe = found(discovered(&["2025-11-25", "2026-07-28"]));
        assert!(
            matches!(probe, Probe::PerRequest { version, .. } if version == ProtocolVersion::V2026_07_28)
        );
        assert!(matches!(
            found(discovered(&["2025-11-25"])),
            Probe::Handshake(_)
        ));
        assert!(
            matches!(found(discovered(&["2099-01-01"])), Probe::Failed(_)),
            "a per-request server with no version in common: no fallback"
        );
    }

    #[test]
    fn a_server_listing_no_version_is_told_so() {
        let code = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION;
        for (answer, list) in [
            (discovered(&[]), "(`supportedVersions` is empty)"),
            (refused(code, &[]), "(the refusal's `supported` is empty)"),
        ] {
            let Probe::Failed(error) = found(answer) else {
                panic!("an empty list has no version in common");
            };
            let message = error.to_string();
            assert!(
                message.contains("names no protocol version it speaks") && message.contains(list),
                "{message}"
            );
        }
    }

    #[test]
    fn an_unsupported_version_error_asks_again_or_decides() {
        let code = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION;
        assert!(matches!(
            classify(refused(code, &["2026-07-28"])),
            Verdict::AskWith(v) if v == ProtocolVersion::V2026_07_28
        ));
        assert!(matches!(
            found(refused(code, &["2025-06-18"])),
            Probe::Handshake(_)
        ));
        assert!(matches!(
            found(refused(code, &["2099-01-01"])),
            Probe::Failed(_)
        ));
    }

    #[test]
    fn any_other_error_means_the_handshake_but_not_a_closed_or_unauthorized_one() {
        assert!(matches!(
            found(refused(ErrorCode::METHOD_NOT_FOUND, &[])),
            Probe::Handshake(_)
        ));
        let timeout = SessionError::Timeout {
            method: method::SERVER_DISCOVER.into(),
            after: Duration::from_secs(5),
        };
        assert!(matches!(found(Err(timeout)), Probe::Handshake(_)));
        let closed = SessionError::Closed {
            method: method::SERVER_DISCOVER.into(),
            reason: CloseReason::ClosedLocally,
        };
        assert!(matches!(found(Err(closed)), Probe::Failed(_)));
        let unauthorized = SessionError::Transport {
            method: method::SERVER_DISCOVER.into(),
            error: TransportError::Http {
                context: "POST",
                status: Some(401),
                detail: "no token".to_owned(),
            },
        };
        assert!(matches!(found(Err(unauthorized)), Probe::Failed(_)));
    }
}
