//! The HTTP server as an OAuth 2.1 protected resource (MCP authorization, RFC 9728).
//!
//! With [`HttpServer::auth`](super::HttpServer::auth), every request to the MCP
//! endpoint needs `Authorization: Bearer <token>`; a [`TokenVerifier`] says whom the
//! token stands for. The server then:
//!
//! - serves its protected-resource metadata at `/.well-known/oauth-protected-resource`
//!   and at that path followed by the endpoint's path (`…/oauth-protected-resource/mcp`),
//!   so clients find the authorization server;
//! - answers a missing or refused token with 401 and `WWW-Authenticate: Bearer
//!   resource_metadata="…", scope="…"`; a token lacking a scope the request needs
//!   (for every request, per method, or per tool) with 403 and
//!   `error="insufficient_scope"` naming every scope it needs;
//! - accepts only tokens whose audience is this resource (RFC 8707) and that have not
//!   expired, whatever the verifier did: tokens meant for others are never accepted;
//! - binds each HTTP session to the principal that created it: another principal
//!   naming that session gets 404, as if it did not exist;
//! - shows handlers the verified [`Principal`] ([`ServerContext::auth`]).
//!
//! Verifiers: [`StaticTokens`] (tests), [`IntrospectionVerifier`] (RFC 7662) and, with
//! the `jwt` feature, `JwtVerifier` (signed JWTs with keys from a JWKS).
//!
//! ```
//! use mcpflow::http::server::HttpServer;
//! use mcpflow::http::server::auth::{ResourceAuth, StaticTokens};
//! use mcpflow::server::{Principal, Server};
//!
//! let mut alice = Principal::new("alice").with_scopes(["mcp:read"]);
//! alice.audiences = vec!["http://127.0.0.1:3000/mcp".into()];
//! let auth = ResourceAuth::new(
//!     "http://127.0.0.1:3000/mcp",
//!     "http://127.0.0.1:9000",
//!     StaticTokens::new().token("secret", alice),
//! )
//! .scopes_supported(["mcp:read", "mcp:write"])
//! .required_scopes(["mcp:read"])
//! .tool_scopes("delete_everything", ["mcp:write"]);
//! let http = HttpServer::new(Server::builder("demo", "1.0.0").build()).auth(auth);
//! # let _ = http;
//! ```
//!
//! [`ServerContext::auth`]: crate::server::ServerContext::auth

#[cfg(feature = "jwt")]
mod dpop;
mod introspect;
#[cfg(feature = "jwt")]
mod jwt;
mod layer;
mod verify;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

#[cfg(feature = "jwt")]
pub use dpop::DpopPolicy;
pub use introspect::IntrospectionVerifier;
#[cfg(feature = "jwt")]
pub use jwt::JwtVerifier;
pub(crate) use layer::{authorize, metadata_paths, serve_metadata};
use reqwest::Url;
pub use verify::{StaticTokens, TokenVerifier, VerifyError};

use crate::auth::ProtectedResourceMetadata;
use crate::server::Principal;

/// How the HTTP server authorizes requests: its protected-resource metadata, the token
/// verifier, and the scopes each request needs. See the [module documentation](self).
///
/// ```
/// use mcpflow::http::server::HttpServer;
/// use mcpflow::http::server::auth::{IntrospectionVerifier, ResourceAuth};
/// use mcpflow::server::Server;
///
/// // Tokens checked by the authorization server's introspection endpoint (RFC 7662).
/// let verifier = IntrospectionVerifier::new("https://auth.example.com/introspect".parse()?)
///     .client_credentials("mcp-server", "introspection-secret")
///     .issuer("https://auth.example.com");
/// let auth = ResourceAuth::new("https://mcp.example.com/mcp", "https://auth.example.com", verifier)
///     .required_scopes(["mcp:read"])
///     .method_scopes("resources/read", ["mcp:files"]);
/// assert_eq!(
///     auth.metadata_url(),
///     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// let http = HttpServer::new(Server::builder("files", "1.0.0").build()).auth(auth);
/// # drop(http);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ResourceAuth {
    metadata: ProtectedResourceMetadata,
    verifier: Arc<dyn TokenVerifier>,
    required: Vec<String>,
    per_method: HashMap<String, Vec<String>>,
    per_tool: HashMap<String, Vec<String>>,
    /// DPoP-bound tokens, when taken.
    #[cfg(feature = "jwt")]
    dpop: Option<Arc<dpop::DpopCheck>>,
}

impl fmt::Debug for ResourceAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceAuth")
            .field("metadata", &self.metadata)
            .field("required", &self.required)
            .field("per_method", &self.per_method)
            .field("per_tool", &self.per_tool)
            .finish_non_exhaustive()
    }
}

impl ResourceAuth {
    /// Protect the MCP endpoint whose canonical URL is `resource` (e.g.
    /// `https://mcp.example.com/mcp`: what clients connect to, and the audience tokens
    /// must name), with tokens from `authorization_server` (its issuer URL), checked by
    /// `verifier`. The metadata advertises `bearer_methods_supported: ["header"]`.
    pub fn new(
        resource: impl Into<String>,
        authorization_server: impl Into<String>,
        verifier: impl TokenVerifier,
    ) -> Self {
        let mut metadata =
            ProtectedResourceMetadata::new(resource, vec![authorization_server.into()]);
        metadata.bearer_methods_supported = Some(vec!["header".to_owned()]);
        ResourceAuth {
            metadata,
            verifier: Arc::new(verifier),
            required: Vec::new(),
            per_method: HashMap::new(),
            per_tool: HashMap::new(),
            #[cfg(feature = "jwt")]
            dpop: None,
        }
    }

    /// Take DPoP-bound tokens (RFC 9449) as `policy` says, checking each request's
    /// proof and the token's binding to its key; the metadata advertises the proof
    /// algorithms (and whether bound tokens are required), so clients bind their
    /// tokens. Feature `jwt`.
    ///
    /// ```
    /// use mcpflow::http::server::auth::{DpopPolicy, ResourceAuth, StaticTokens};
    ///
    /// let auth = ResourceAuth::new("https://mcp.example.com/mcp", "https://auth.example.com", StaticTokens::new())
    ///     .dpop(DpopPolicy::required().with_nonces());
    /// assert_eq!(auth.metadata().dpop_bound_access_tokens_required, Some(true));
    /// ```
    #[cfg(feature = "jwt")]
    #[must_use]
    pub fn dpop(mut self, policy: DpopPolicy) -> Self {
        self.metadata.dpop_signing_alg_values_supported = Some(DpopPolicy::algorithms());
        self.metadata.dpop_bound_access_tokens_required = Some(policy.is_required());
        self.dpop = Some(Arc::new(dpop::DpopCheck::new(policy)));
        self
    }

    /// Also trust tokens from this authorization server (listed in the metadata).
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.metadata.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes the metadata advertises (`scopes_supported`).
    #[must_use]
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.metadata.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// A human-readable name for the metadata (`resource_name`).
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.metadata.resource_name = Some(name.into());
        self
    }

    /// Scopes every request needs; the 401 challenge names them.
    #[must_use]
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes a JSON-RPC method needs besides the required ones (e.g. `resources/read`).
    #[must_use]
    pub fn method_scopes<I, S>(mut self, method: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let scopes = scopes.into_iter().map(Into::into).collect();
        self.per_method.insert(method.into(), scopes);
        self
    }

    /// Scopes a call of the tool `name` (`tools/call`) needs besides the others.
    #[must_use]
    pub fn tool_scopes<I, S>(mut self, name: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let scopes = scopes.into_iter().map(Into::into).collect();
        self.per_tool.insert(name.into(), scopes);
        self
    }

    /// The protected-resource metadata document served at the well-known paths.
    pub fn metadata(&self) -> &ProtectedResourceMetadata {
        &self.metadata
    }

    /// The URL of the metadata document named in challenges: the well-known path
    /// followed by the resource's path (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> String {
        match Url::parse(&self.metadata.resource) {
            Ok(url) => {
                let path = url.path().trim_end_matches('/');
                format!(
                    "{}/.well-known/oauth-protected-resource{path}",
                    url.origin().ascii_serialization()
                )
            }
            Err(_) => self.metadata.resource.clone(),
        }
    }

    /// Whether `principal` may use this resource now: its audience names the resource
    /// and it has not expired.
    fn admit(&self, principal: &Principal, now: u64) -> Result<(), VerifyError> {
        if principal.expires_at.is_some_and(|exp| exp <= now) {
            return Err(VerifyError::Expired);
        }
        let resource = self.metadata.resource.trim_end_matches('/');
        if !principal
            .audiences
            .iter()
            .any(|aud| aud.trim_end_matches('/') == resource)
        {
            return Err(VerifyError::WrongAudience);
        }
        Ok(())
    }

    /// Every scope a request made of `calls` (method, tool name) needs.
    fn needed<'a>(&'a self, calls: &[(String, Option<String>)]) -> BTreeSet<&'a str> {
        let mut needed: BTreeSet<&str> = self.required.iter().map(String::as_str).collect();
        for (method, tool) in calls {
            if let Some(scopes) = self.per_method.get(method) {
                needed.extend(scopes.iter().map(String::as_str));
            }
            if let Some(scopes) = tool.as_ref().and_then(|t| self.per_tool.get(t)) {
                needed.extend(scopes.iter().map(String::as_str));
            }
        }
        needed
    }

    /// Whether any method or tool has scopes of its own (the body must then be read).
    fn scopes_by_request(&self) -> bool {
        !self.per_method.is_empty() || !self.per_tool.is_empty()
    }
}
