//! The token verifier trait, its error, and the fixed-table verifier for tests.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::server::Principal;
use crate::session::BoxFuture;

/// Checks an access token and says whom it stands for.
///
/// A verifier checks the signature or asks the authorization server, the expiry, the
/// issuer and the audience it was built with. [`ResourceAuth`](super::ResourceAuth)
/// checks again that the token names this resource (RFC 8707) and has not expired,
/// so a verifier that forgets cannot let another resource's token through.
///
/// ```
/// use mcpflow::http::server::auth::{TokenVerifier, VerifyError};
/// use mcpflow::server::Principal;
/// use mcpflow::session::BoxFuture;
///
/// struct OneToken;
/// impl TokenVerifier for OneToken {
///     fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>> {
///         Box::pin(async move {
///             if token == "let-me-in" {
///                 let mut who = Principal::new("alice").with_scopes(["mcp"]);
///                 who.audiences = vec!["https://mcp.example.com/mcp".into()];
///                 Ok(who)
///             } else {
///                 Err(VerifyError::Invalid("unknown token".into()))
///             }
///         })
///     }
/// }
/// ```
pub trait TokenVerifier: Send + Sync + 'static {
    /// The principal `token` stands for, or why it is refused.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>>;
}

/// Why a token was refused. All but [`Unavailable`](Self::Unavailable) are answered
/// with 401 and `error="invalid_token"`; the message goes to the client as
/// `error_description`, so it never holds the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// Malformed, badly signed, unknown or revoked.
    #[error("the access token is not valid: {0}")]
    Invalid(String),
    /// Past its expiry.
    #[error("the access token has expired")]
    Expired,
    /// Issued for another resource (RFC 8707 audience).
    #[error("the access token was not issued for this resource")]
    WrongAudience,
    /// Not issued by the trusted authorization server.
    #[error("the access token was not issued by a trusted authorization server")]
    WrongIssuer,
    /// The token could not be checked now (the key set or the introspection endpoint
    /// is unreachable): answered with 503, since the client's token may be fine.
    #[error("the access token could not be checked: {0}")]
    Unavailable(String),
}

/// A fixed table of tokens, for tests and local development.
///
/// ```
/// use mcpflow::http::server::auth::StaticTokens;
/// use mcpflow::server::Principal;
///
/// let tokens = StaticTokens::new()
///     .token("alice-token", Principal::new("alice").with_scopes(["mcp:read"]));
/// # let _ = tokens;
/// ```
///
/// The principals are given as they are: set their
/// [`audiences`](Principal::audiences) to the resource, or they are refused.
#[derive(Clone, Debug, Default)]
pub struct StaticTokens {
    tokens: HashMap<String, Principal>,
}

impl StaticTokens {
    /// No tokens.
    pub fn new() -> Self {
        StaticTokens::default()
    }

    /// Accept `token` as `principal`.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>, principal: Principal) -> Self {
        self.tokens.insert(token.into(), principal);
        self
    }
}

impl TokenVerifier for StaticTokens {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        let found = self
            .tokens
            .get(token)
            .cloned()
            .ok_or_else(|| VerifyError::Invalid("unknown token".into()));
        Box::pin(async move { found })
    }
}

/// The principal described by a JWT's claims or an introspection answer (RFC 7662
/// names the same members): `sub`, `iss`, `client_id` or `azp`, `scope` (a string) or
/// `scp` (a list), `exp`, `aud` (a string or a list).
pub(crate) fn principal_from_claims(claims: Map<String, Value>) -> Principal {
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let mut principal = Principal::new(text("sub").unwrap_or_default());
    principal.issuer = text("iss");
    principal.client_id = text("client_id").or_else(|| text("azp"));
    principal.scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => s.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Default::default(),
    };
    principal.expires_at = claims.get("exp").and_then(Value::as_u64);
    principal.audiences = match claims.get("aud") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    principal.claims = claims;
    principal
}
