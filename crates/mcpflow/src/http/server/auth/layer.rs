//! The authorization layer in front of the MCP endpoint, and the metadata route.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_ORIGIN, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mcpflow_protocol::{ErrorCode, ErrorObject, Message};

use super::{ResourceAuth, VerifyError};
use crate::http::SESSION_ID_HEADER;
use crate::http::server::body::read_body;
use crate::http::server::posted::{Posted, ReadAhead};
use crate::http::server::table::AppState;
use crate::server::Principal;

/// The paths the metadata document is served at: the root well-known path and the one
/// followed by the resource's path.
pub(crate) fn metadata_paths(auth: &ResourceAuth) -> Vec<String> {
    let root = "/.well-known/oauth-protected-resource".to_owned();
    let mut paths = vec![root.clone()];
    if let Ok(url) = reqwest::Url::parse(&auth.metadata.resource) {
        let path = url.path().trim_end_matches('/');
        if !path.is_empty() {
            paths.push(format!("{root}{path}"));
        }
    }
    paths
}

/// `GET /.well-known/oauth-protected-resource[/path]`: public, and readable from a
/// browser page on any origin (RFC 9728 clients may run there).
pub(crate) async fn serve_metadata(State(state): State<Arc<AppState>>) -> Response {
    let Some(auth) = &state.config.auth else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Ok(body) = serde_json::to_string(&auth.metadata) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let headers = [
        (CONTENT_TYPE, "application/json"),
        (ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
    ];
    (headers, body).into_response()
}

/// Middleware: verify the bearer token (401), check the session's owner (404) and the
/// scopes the request needs (403), then hand the principal to the handlers.
pub(crate) async fn authorize(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(auth) = state.config.auth.clone() else {
        return next.run(request).await;
    };
    let Some((scheme, token)) = credentials(request.headers()) else {
        return challenge(&auth, StatusCode::UNAUTHORIZED, None, &auth.needed(&[]));
    };
    // The key a DPoP proof proves possession of, checked before the token is.
    let proved = match proof(&auth, scheme, &request, token) {
        Ok(proved) => proved,
        Err(refusal) => return *refusal,
    };
    let verified = match auth.verifier.verify(token).await {
        Ok(principal) => auth
            .admit(&principal, now())
            .and_then(|()| bound(&principal, proved.as_deref()))
            .map(|()| principal),
        Err(e) => Err(e),
    };
    let principal = match verified {
        Ok(principal) => Arc::new(principal),
        Err(VerifyError::Unavailable(why)) => {
            tracing::warn!(error = %why, "could not verify an access token");
            let mut response = json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the access token could not be checked now; try again".into(),
            );
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(1));
            return response;
        }
        Err(e) => {
            tracing::debug!(error = %e, "refused an access token");
            let error = ("invalid_token", e.to_string());
            return challenge(
                &auth,
                StatusCode::UNAUTHORIZED,
                Some(error),
                &auth.needed(&[]),
            );
        }
    };
    if let Some(id) = request
        .headers()
        .get(SESSION_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        && let Some(session) = state.session(id)
        && !session.bind(principal.clone())
    {
        tracing::warn!(subject = %principal.subject, "a principal named a session it does not own");
        let message = format!(
            "session `{id}` is unknown or has been terminated; start a new session with `initialize`"
        );
        return json_error(StatusCode::NOT_FOUND, message);
    }
    let calls = if request.method() == Method::POST && auth.scopes_by_request() {
        let (mut parts, body) = request.into_parts();
        let bytes =
            match read_body(body, &parts.headers, state.config.body, &state.body_budget).await {
                Ok(bytes) => bytes,
                Err(refusal) => return refusal.into_response(),
            };
        // Read once, here, and handed on; a body that does not read goes on as it
        // came, for the endpoint to refuse.
        match Posted::read(bytes.clone()) {
            Ok(mut posted) => {
                let calls = posted.calls();
                parts.extensions.insert(ReadAhead::new(posted));
                request = Request::from_parts(parts, Body::empty());
                calls
            }
            Err(_) => {
                request = Request::from_parts(parts, Body::from(bytes));
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    let needed = auth.needed(&calls);
    if needed.iter().any(|scope| !principal.has_scope(scope)) {
        let error = (
            "insufficient_scope",
            "the access token lacks a scope this request needs".to_owned(),
        );
        return challenge(&auth, StatusCode::FORBIDDEN, Some(error), &needed);
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// How a token is presented.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Bearer,
    /// With a proof of possession (RFC 9449).
    Dpop,
}

/// The scheme and token of an `Authorization: Bearer` or `DPoP` header (the scheme is
/// case-insensitive).
fn credentials(headers: &HeaderMap) -> Option<(Scheme, &str)> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    if token.is_empty() {
        return None;
    }
    if scheme.eq_ignore_ascii_case("bearer") {
        Some((Scheme::Bearer, token))
    } else if scheme.eq_ignore_ascii_case("dpop") {
        Some((Scheme::Dpop, token))
    } else {
        None
    }
}

/// For a DPoP token, the thumbprint of the key its proof proves possession of; `None`
/// for a bearer token where those are taken; else the refusal to answer with.
#[cfg(feature = "jwt")]
fn proof(
    auth: &ResourceAuth,
    scheme: Scheme,
    request: &Request,
    token: &str,
) -> Result<Option<String>, Box<Response>> {
    use super::dpop::ProofError;
    let Some(check) = &auth.dpop else {
        return match scheme {
            Scheme::Bearer => Ok(None),
            Scheme::Dpop => Err(Box::new(refused(
                auth,
                "this resource takes bearer tokens only",
            ))),
        };
    };
    if scheme == Scheme::Bearer {
        if check.policy.is_required() {
            return Err(Box::new(refused(
                auth,
                "this resource takes DPoP-bound tokens only (Authorization: DPoP with a proof)",
            )));
        }
        return Ok(None);
    }
    let mut proofs = request.headers().get_all("dpop").iter();
    let (Some(proof), None) = (proofs.next(), proofs.next()) else {
        return Err(Box::new(dpop_refusal(
            auth,
            "invalid_dpop_proof",
            "one DPoP proof header is needed",
            None,
        )));
    };
    let proof = proof.to_str().unwrap_or_default();
    let resource = &auth.metadata.resource;
    match check.verify(proof, request.method().as_str(), resource, token) {
        Ok(thumbprint) => Ok(Some(thumbprint)),
        Err(ProofError::Invalid(why)) => Err(Box::new(dpop_refusal(
            auth,
            "invalid_dpop_proof",
            &why,
            None,
        ))),
        Err(ProofError::NeedsNonce) => Err(Box::new(dpop_refusal(
            auth,
            "use_dpop_nonce",
            "the DPoP proof must carry the nonce this server gives (DPoP-Nonce)",
            Some(check.nonce()),
        ))),
    }
}

#[cfg(not(feature = "jwt"))]
fn proof(
    auth: &ResourceAuth,
    scheme: Scheme,
    _request: &Request,
    _token: &str,
) -> Result<Option<String>, Box<Response>> {
    match scheme {
        Scheme::Bearer => Ok(None),
        Scheme::Dpop => Err(Box::new(refused(
            auth,
            "this resource takes bearer tokens only",
        ))),
    }
}

/// Whether `principal`'s token may be used with the key `proved` (the thumbprint a
/// proof proved, `None` for a bearer token): a bound token only with its own key, an
/// unbound one only as a bearer token.
fn bound(principal: &Principal, proved: Option<&str>) -> Result<(), VerifyError> {
    let key = principal
        .claims
        .get("cnf")
        .and_then(|c| c.get("jkt"))
        .and_then(|k| k.as_str());
    match (key, proved) {
        (None, None) => Ok(()),
        (Some(key), Some(proved)) if key == proved => Ok(()),
        (Some(_), Some(_)) => Err(VerifyError::Invalid(
            "the token is bound to another key than the proof's".into(),
        )),
        (Some(_), None) => Err(VerifyError::Invalid(
            "a DPoP-bound token must be sent as Authorization: DPoP with its proof".into(),
        )),
        (None, Some(_)) => Err(VerifyError::Invalid(
            "the token is not bound to the proof's key (no cnf.jkt)".into(),
        )),
    }
}

/// 401 `invalid_token` with `why`.
fn refused(auth: &ResourceAuth, why: &str) -> Response {
    challenge(
        auth,
        StatusCode::UNAUTHORIZED,
        Some(("invalid_token", why.to_owned())),
        &auth.needed(&[]),
    )
}

/// 401 with a `DPoP` challenge naming `error` (`invalid_dpop_proof`, `use_dpop_nonce`),
/// and the nonce to use when there is one.
#[cfg(feature = "jwt")]
fn dpop_refusal(auth: &ResourceAuth, error: &str, why: &str, nonce: Option<String>) -> Response {
    let value = format!(
        "DPoP algs=\"{}\", error=\"{error}\", error_description=\"{}\", resource_metadata=\"{}\"",
        super::DpopPolicy::algorithms().join(" "),
        quoted(why),
        quoted(&auth.metadata_url())
    );
    let mut response = json_error(StatusCode::UNAUTHORIZED, why.to_owned());
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    if let Some(nonce) = nonce.and_then(|n| HeaderValue::from_str(&n).ok()) {
        response.headers_mut().insert("dpop-nonce", nonce);
    }
    response
}

/// A 401 or 403 with its `WWW-Authenticate: Bearer` challenge (RFC 6750 §3, RFC 9728
/// §5.1): the metadata URL, the scopes needed, and the error when there is one.
fn challenge(
    auth: &ResourceAuth,
    status: StatusCode,
    error: Option<(&str, String)>,
    needed: &BTreeSet<&str>,
) -> Response {
    let mut params = Vec::new();
    if let Some((code, _)) = &error {
        params.push(format!("error=\"{code}\""));
    }
    let scope_list: Vec<&str> = if needed.is_empty() && status == StatusCode::UNAUTHORIZED {
        auth.metadata
            .scopes_supported
            .iter()
            .flatten()
            .map(String::as_str)
            // A challenge never asks for refresh tokens (MCP authorization, scope selection).
            .filter(|scope| *scope != "offline_access")
            .collect()
    } else {
        needed.iter().copied().collect()
    };
    if !scope_list.is_empty() {
        params.push(format!("scope=\"{}\"", quoted(&scope_list.join(" "))));
    }
    params.push(format!(
        "resource_metadata=\"{}\"",
        quoted(&auth.metadata_url())
    ));
    if let Some((_, description)) = &error {
        params.push(format!("error_description=\"{}\"", quoted(description)));
    }
    let message = match &error {
        Some((_, description)) => description.clone(),
        None => "this endpoint needs an access token (Authorization: Bearer, or DPoP where bound tokens are taken)".to_owned(),
    };
    let mut response = json_error(status, message);
    for challenge in schemes(auth, &params.join(", ")) {
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().append(WWW_AUTHENTICATE, value);
        }
    }
    response
}

/// The challenges with `params`: `Bearer`, and a `DPoP` one naming the proof
/// algorithms where bound tokens are taken (the only one where they are required).
#[cfg(feature = "jwt")]
fn schemes(auth: &ResourceAuth, params: &str) -> Vec<String> {
    let Some(check) = &auth.dpop else {
        return vec![format!("Bearer {params}")];
    };
    let algs = super::DpopPolicy::algorithms().join(" ");
    if check.policy.is_required() {
        vec![format!("DPoP algs=\"{algs}\", {params}")]
    } else {
        vec![format!("Bearer {params}"), format!("DPoP algs=\"{algs}\"")]
    }
}

#[cfg(not(feature = "jwt"))]
fn schemes(_auth: &ResourceAuth, params: &str) -> Vec<String> {
    vec![format!("Bearer {params}")]
}

/// A quoted-string's content: `"` and `\` escaped, and characters a header value
/// cannot hold replaced.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => format!("\\{c}"),
            c if c.is_ascii_graphic() || c == ' ' => c.to_string(),
            _ => "?".to_owned(),
        })
        .collect()
}

fn json_error(status: StatusCode, message: String) -> Response {
    let body = Message::error(None, ErrorObject::new(ErrorCode::INVALID_REQUEST, message))
        .to_json_string();
    (status, [(CONTENT_TYPE, "application/json")], body).into_response()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
