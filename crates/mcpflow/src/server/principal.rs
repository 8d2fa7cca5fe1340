//! [`Principal`]: who an authorized request acts for, as its access token says.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

/// The verified identity behind a request: what a token verifier learned from the
/// access token. Handlers see it with [`ServerContext::auth`](super::ServerContext::auth)
/// when the HTTP server has authorization configured.
///
/// ```
/// use mcpflow::server::Principal;
///
/// let who = Principal::new("alice").with_scopes(["mcp:read", "mcp:write"]);
/// assert!(who.has_scope("mcp:read"));
/// assert_eq!(who.owner_key(), "alice");
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Principal {
    /// The token's subject (`sub`): the user or machine it was issued to.
    pub subject: String,
    /// The issuer (`iss`), when the token names one.
    pub issuer: Option<String>,
    /// The OAuth client the token was issued to (`client_id` or `azp`).
    pub client_id: Option<String>,
    /// The granted scopes.
    pub scopes: BTreeSet<String>,
    /// The resources the token was issued for (`aud`, RFC 8707).
    pub audiences: Vec<String>,
    /// Expiry, in seconds since the Unix epoch (`exp`), when known.
    pub expires_at: Option<u64>,
    /// Every claim of the token (JWT) or of the introspection answer.
    pub claims: Map<String, Value>,
}

impl Principal {
    /// A principal for `subject`, with no scopes.
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: subject.into(),
            ..Principal::default()
        }
    }

    /// The same principal with these scopes granted.
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The same principal, issued by `issuer`.
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The same principal, for the OAuth client `client_id`.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The key that HTTP sessions (and anything else a principal owns, such as tasks)
    /// are bound to: the issuer and the subject, since two issuers may reuse a subject.
    pub fn owner_key(&self) -> String {
        match &self.issuer {
            Some(issuer) => format!("{issuer}#{}", self.subject),
            None => self.subject.clone(),
        }
    }
}

/// The principal of a served connection, replaced by each authorized HTTP request so
/// handlers see the scopes of the newest token (a refreshed or stepped-up one).
#[derive(Clone, Debug, Default)]
pub(crate) struct PrincipalSlot(Arc<Mutex<Option<Arc<Principal>>>>);

impl PrincipalSlot {
    pub(crate) fn get(&self) -> Option<Arc<Principal>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn set(&self, principal: Arc<Principal>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(principal);
    }
}
