//! What every request's headers must satisfy before it is served: the Host/Origin
//! guard, MCP headers given once, a known `MCP-Protocol-Version` (and, in a session,
//! the negotiated one), and what `Accept` allows.

use axum::http::header::ACCEPT;
use axum::http::{HeaderMap, StatusCode};
use mcpflow_protocol::{ErrorCode, HANDSHAKE_VERSIONS, PER_REQUEST_VERSIONS, ProtocolVersion};

use super::handlers::{Refusal, bad_request, refuse};
use super::session::HttpSession;
use super::table::AppState;
use crate::http::{LAST_EVENT_ID_HEADER, PROTOCOL_VERSION_HEADER, SESSION_ID_HEADER};

pub(super) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// What the `Accept` header allows: (JSON, event stream).
pub(super) fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let Some(accept) = header(headers, ACCEPT.as_str()) else {
        return (true, true);
    };
    let mut json = false;
    let mut sse = false;
    for item in accept.split(',') {
        let media = item.split(';').next().unwrap_or("").trim();
        let is = |name: &str| media.eq_ignore_ascii_case(name);
        if is("*/*") {
            (json, sse) = (true, true);
        } else if is("application/json") || is("application/*") {
            json = true;
        } else if is("text/event-stream") || is("text/*") {
            sse = true;
        }
    }
    (json, sse)
}

/// Common checks: Host/Origin, then `MCP-Protocol-Version` when present.
pub(super) fn precheck(state: &AppState, headers: &HeaderMap) -> Result<(), Refusal> {
    state.config.guard.check(headers).map_err(|reason| {
        refuse(
            StatusCode::FORBIDDEN,
            ErrorCode::INVALID_REQUEST,
            None,
            reason,
        )
    })?;
    if let Some(name) = repeated_header(headers) {
        return Err(bad_request(format!(
            "header `{name}` is given more than once; send it once"
        )));
    }
    // Without a session an unknown version may be a 2026-07-28 request's, refused
    // with the error that names the versions served (-32022).
    let in_session = headers.contains_key(SESSION_ID_HEADER) || state.config.stateless;
    if let Some(version) = header(headers, PROTOCOL_VERSION_HEADER).filter(|_| in_session) {
        let version = ProtocolVersion::from(version.to_owned());
        if !version.is_known() {
            return Err(bad_request(format!(
                "unsupported MCP-Protocol-Version `{version}`; supported: {}",
                known_versions()
            )));
        }
    }
    Ok(())
}

/// An MCP header (`Mcp-*`, `MCP-Protocol-Version`, `Last-Event-ID`) given twice: refused
/// rather than read by its first value, which a proxy in front may not read alike.
fn repeated_header(headers: &HeaderMap) -> Option<&str> {
    // Most requests repeat no header at all: nothing to look up.
    if headers.len() == headers.keys_len() {
        return None;
    }
    headers.keys().map(|name| name.as_str()).find(|name| {
        (name.starts_with("mcp-") || *name == LAST_EVENT_ID_HEADER)
            && headers.get_all(*name).iter().nth(1).is_some()
    })
}

fn known_versions() -> String {
    let known: Vec<&str> = PER_REQUEST_VERSIONS
        .iter()
        .chain(HANDSHAKE_VERSIONS)
        .map(ProtocolVersion::as_str)
        .collect();
    known.join(", ")
}

/// A request in a session must carry the version that session negotiated, when it
/// names one (clients before 2025-06-18 send no header). A header naming 2025-03-26,
/// the version a missing header implies, counts as no header: the official
/// conformance suite (0.1.x) sends it inside later sessions.
pub(super) fn check_session_version(
    session: &HttpSession,
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    let (Some(sent), Some(negotiated)) =
        (header(headers, PROTOCOL_VERSION_HEADER), session.version())
    else {
        return Ok(());
    };
    if sent == negotiated.as_str() || sent == ProtocolVersion::V2025_03_26.as_str() {
        return Ok(());
    }
    Err(bad_request(format!(
        "MCP-Protocol-Version `{sent}` does not match the version this session negotiated in `initialize`, `{negotiated}`; send `{negotiated}` (versions this server knows: {})",
        known_versions()
    )))
}

/// The version a request without a session states in `MCP-Protocol-Version`:
/// 2025-03-26 without the header, as the transport says.
pub(super) fn stated_version(headers: &HeaderMap) -> ProtocolVersion {
    header(headers, PROTOCOL_VERSION_HEADER).map_or(ProtocolVersion::V2025_03_26, |v| {
        ProtocolVersion::from(v.to_owned())
    })
}
