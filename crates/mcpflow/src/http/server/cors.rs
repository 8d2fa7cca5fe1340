//! Browser pages on other origins (CORS). A page from an allowed origin
//! ([`HttpServer::allowed_origins`](super::HttpServer::allowed_origins), or one served
//! from an allowed host) gets its preflight answered and may read the answers and the
//! headers a client needs (`Mcp-Session-Id`, `WWW-Authenticate`); any other origin gets
//! no CORS headers, and its requests are refused by the `Origin` check.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    ACCESS_CONTROL_REQUEST_METHOD, ALLOW, ORIGIN, VARY,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mcpflow_protocol::ErrorCode;

use super::guard::HostGuard;
use super::handlers::refuse;
use super::table::AppState;

const METHODS: &str = "GET, POST, DELETE, OPTIONS";

/// Request headers a page may send: what MCP clients send (the 2026-07-28 ones and
/// `Mcp-Param-*` included), authorization and its DPoP proof, and resumption.
const REQUEST_HEADERS: [&str; 10] = [
    "accept",
    "authorization",
    "content-type",
    "dpop",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "x-requested-with",
];

/// Response headers a page may read.
const EXPOSED: &str = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, DPoP-Nonce";

/// Middleware for the endpoint: answers preflights, and marks the answers to a page
/// from an allowed origin as readable by it.
pub(super) async fn cors(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let guard = &state.config.guard;
    let origin = request
        .headers()
        .get(ORIGIN)
        .and_then(|o| o.to_str().ok())
        .map(str::to_owned);
    if request.method() == Method::OPTIONS {
        return preflight(guard, origin.as_deref(), request.headers());
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.append(VARY, HeaderValue::from_static("origin"));
    if let Some(origin) = origin.filter(|o| guard.allows_page(o))
        && let Ok(value) = HeaderValue::from_str(&origin)
    {
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, value);
        headers.insert(
            ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED),
        );
    }
    response
}

/// `OPTIONS`: a preflight from an allowed origin gets 204 with what it may send; one
/// from any other origin gets 403; without `Origin`, the methods served.
fn preflight(guard: &HostGuard, origin: Option<&str>, headers: &HeaderMap) -> Response {
    let Some(origin) = origin else {
        return (StatusCode::NO_CONTENT, [(ALLOW, METHODS)]).into_response();
    };
    if !guard.allows_page(origin) {
        return refuse(
            StatusCode::FORBIDDEN,
            ErrorCode::INVALID_REQUEST,
            None,
            format!(
                "Origin `{origin}` is not allowed to use this server from a browser; allow it with HttpServer::allowed_origins (`mcpflow serve --allow-origin`)"
            ),
        )
        .into_response();
    }
    if headers.get(ACCESS_CONTROL_REQUEST_METHOD).is_none() {
        return (StatusCode::NO_CONTENT, [(ALLOW, METHODS)]).into_response();
    }
    // The headers asked for that a page may send: the fixed set and any
    // `Mcp-Param-*` (2026-07-28 tool arguments mirrored into headers).
    let asked = headers
        .get(ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let mut allowed: Vec<String> = REQUEST_HEADERS.iter().map(|h| (*h).to_owned()).collect();
    for name in asked.split(',').map(|h| h.trim().to_ascii_lowercase()) {
        if name.starts_with("mcp-param-") && !allowed.contains(&name) {
            allowed.push(name);
        }
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    let out = response.headers_mut();
    if let Ok(origin) = HeaderValue::from_str(origin) {
        out.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
    out.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(METHODS),
    );
    if let Ok(value) = HeaderValue::from_str(&allowed.join(", ")) {
        out.insert(ACCESS_CONTROL_ALLOW_HEADERS, value);
    }
    out.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    out.insert(VARY, HeaderValue::from_static("origin"));
    response
}
