//! Protected-resource metadata (RFC 9728) and authorization-server metadata (RFC 8414,
//! OpenID Connect Discovery 1.0), with the checks the MCP authorization spec requires
//! before a client may act on them.

use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// Why a metadata document cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// A field that must hold a URL does not hold an acceptable one.
    #[error("metadata field `{field}` is not a usable URL: {reason}")]
    BadUrl {
        /// The field.
        field: &'static str,
        /// Why not.
        reason: &'static str,
    },
    /// The protected resource's `resource` does not cover the MCP server URL.
    #[error("protected-resource metadata is for `{resource}`, not for `{server}`")]
    ResourceMismatch {
        /// The `resource` of the document.
        resource: String,
        /// The MCP server URL the client connects to.
        server: String,
    },
    /// The protected resource names no authorization server.
    #[error("protected-resource metadata lists no authorization server")]
    NoAuthorizationServer,
    /// The authorization server's `issuer` is not the one the document was fetched for.
    #[error("authorization-server metadata has issuer `{found}`, expected `{expected}`")]
    IssuerMismatch {
        /// The issuer the discovery URL was built from.
        expected: String,
        /// The document's `issuer`.
        found: String,
    },
    /// A field the authorization-code flow needs is missing.
    #[error("authorization-server metadata lacks `{0}`")]
    Missing(&'static str),
    /// The server does not advertise PKCE, so the client must not proceed (MCP spec).
    #[error("authorization server does not advertise `code_challenge_methods_supported`")]
    PkceNotAdvertised,
    /// The server advertises PKCE but not the S256 method.
    #[error("authorization server does not support the PKCE method S256")]
    PkceS256Unsupported,
}

/// Protected-resource metadata (RFC 9728 §2). Unknown fields are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource identifier: the URL this document describes.
    pub resource: String,
    /// Issuer identifiers of the authorization servers that issue tokens for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource understands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How the token may be sent (`header`, `body`, `query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// The DPoP proof algorithms the resource accepts (RFC 9728 §2): it takes
    /// DPoP-bound tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether the resource takes DPoP-bound tokens only (RFC 9728 §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_bound_access_tokens_required: Option<bool>,
    /// Every other member, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProtectedResourceMetadata {
    /// A document for `resource` served by `authorization_servers`; set the other
    /// fields after.
    #[must_use]
    pub fn new(resource: impl Into<String>, authorization_servers: Vec<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers,
            scopes_supported: None,
            bearer_methods_supported: None,
            resource_name: None,
            dpop_signing_alg_values_supported: None,
            dpop_bound_access_tokens_required: None,
            extra: Map::new(),
        }
    }

    /// Whether the resource takes DPoP-bound tokens (it names DPoP algorithms, or
    /// requires such tokens).
    #[must_use]
    pub fn takes_dpop(&self) -> bool {
        self.dpop_bound_access_tokens_required == Some(true)
            || self
                .dpop_signing_alg_values_supported
                .as_ref()
                .is_some_and(|algs| !algs.is_empty())
    }

    /// Checks that `resource` covers `server_url` and returns it parsed, for the RFC 8707
    /// `resource` parameter.
    ///
    /// RFC 9728 §3.3 wants the identifier the document was looked up for. MCP servers
    /// name either their endpoint or their origin (a root well-known document), so, as
    /// the official SDKs do, `resource` is accepted when it has the server URL's origin
    /// and its path is the server's path or a whole-segment prefix of it.
    ///
    /// # Errors
    /// [`MetadataError::BadUrl`] for an unparsable `resource` or one with a fragment;
    /// [`MetadataError::ResourceMismatch`] when it covers another URL.
    pub fn check_resource(&self, server_url: &Url) -> Result<Url, MetadataError> {
        let resource = Url::parse(&self.resource).map_err(|_| MetadataError::BadUrl {
            field: "resource",
            reason: "not an absolute URL",
        })?;
        if resource.fragment().is_some() {
            return Err(MetadataError::BadUrl {
                field: "resource",
                reason: "has a fragment",
            });
        }
        if resource_covers(&resource, server_url) {
            Ok(resource)
        } else {
            Err(MetadataError::ResourceMismatch {
                resource: self.resource.clone(),
                server: server_url.to_string(),
            })
        }
    }

    /// The authorization server to use: the first listed.
    ///
    /// # Errors
    /// [`MetadataError::NoAuthorizationServer`] when the list is empty.
    pub fn authorization_server(&self) -> Result<&str, MetadataError> {
        self.authorization_servers
            .first()
            .map(String::as_str)
            .ok_or(MetadataError::NoAuthorizationServer)
    }
}

/// Whether `resource` names `server` or a path above it on the same origin.
fn resource_covers(resource: &Url, server: &Url) -> bool {
    if resource.origin() != server.origin() {
        return false;
    }
    let base = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Authorization-server metadata (RFC 8414 §2; OpenID Connect Discovery uses the same
/// names). Unknown fields are kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier; must equal the one the document was fetched for.
    pub issuer: String,
    /// Where the user authorizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where codes, refresh tokens and client credentials become tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// The server's signing keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Scopes the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// `response_type` values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_types_supported: Option<Vec<String>>,
    /// Grant types, e.g. `authorization_code`, `refresh_token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Signing algorithms for `private_key_jwt` and `client_secret_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// PKCE methods; absent means the client must not proceed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the server puts `iss` in authorization responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// The server accepts Client ID Metadata Document URLs as `client_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// The DPoP proof algorithms the server accepts (RFC 9449 §5.1): it binds tokens
    /// to a client's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Token revocation (RFC 7009).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// Every other member, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AuthorizationServerMetadata {
    /// A document for `issuer` with nothing else; set the other fields after.
    #[must_use]
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            ..Self::default()
        }
    }

    /// Checks that `issuer` is exactly the issuer the discovery URL was built from
    /// (RFC 8414 §3.3; simple string equality, no normalisation).
    ///
    /// # Errors
    /// [`MetadataError::IssuerMismatch`].
    pub fn check_issuer(&self, expected: &str) -> Result<(), MetadataError> {
        if self.issuer == expected {
            Ok(())
        } else {
            Err(MetadataError::IssuerMismatch {
                expected: expected.to_owned(),
                found: self.issuer.clone(),
            })
        }
    }

    /// Checks that PKCE S256 is advertised; the MCP spec forbids proceeding otherwise.
    ///
    /// # Errors
    /// [`MetadataError::PkceNotAdvertised`] or [`MetadataError::PkceS256Unsupported`].
    pub fn check_pkce_s256(&self) -> Result<(), MetadataError> {
        match &self.code_challenge_methods_supported {
            None => Err(MetadataError::PkceNotAdvertised),
            Some(methods) if methods.iter().any(|m| m == "S256") => Ok(()),
            Some(_) => Err(MetadataError::PkceS256Unsupported),
        }
    }

    /// Every check the authorization-code flow needs: the issuer, PKCE S256, and usable
    /// authorization and token endpoints, returned parsed.
    ///
    /// # Errors
    /// The first [`MetadataError`] found.
    pub fn check_for_authorization_code(
        &self,
        expected_issuer: &str,
    ) -> Result<(Url, Url), MetadataError> {
        self.check_issuer(expected_issuer)?;
        self.check_pkce_s256()?;
        let authorize = endpoint(
            "authorization_endpoint",
            self.authorization_endpoint.as_deref(),
        )?;
        let token = endpoint("token_endpoint", self.token_endpoint.as_deref())?;
        Ok((authorize, token))
    }

    /// Whether `scope` (e.g. `offline_access`) is in `scopes_supported`.
    #[must_use]
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }
}

/// Parses an endpoint the client will send a user or a secret to: `https`, or `http` on
/// a loopback host only, so that `javascript:`, `data:` or a plain-text remote endpoint
/// never reach a browser or a token request.
///
/// # Errors
/// [`MetadataError::Missing`] when absent, [`MetadataError::BadUrl`] when unusable.
pub fn endpoint(field: &'static str, value: Option<&str>) -> Result<Url, MetadataError> {
    let value = value.ok_or(MetadataError::Missing(field))?;
    let url = Url::parse(value).map_err(|_| MetadataError::BadUrl {
        field,
        reason: "not an absolute URL",
    })?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => {
            return Err(MetadataError::BadUrl {
                field,
                reason: "plain http on a host that is not loopback",
            });
        }
        _ => {
            return Err(MetadataError::BadUrl {
                field,
                reason: "neither https nor http",
            });
        }
    }
    if url.fragment().is_some() {
        return Err(MetadataError::BadUrl {
            field,
            reason: "has a fragment",
        });
    }
    Ok(url)
}

/// Whether `url`'s host is `localhost` or a loopback address.
#[must_use]
pub fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some(h) if h.eq_ignore_ascii_case("localhost") => true,
        Some(h) => h
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    fn prm(resource: &str) -> ProtectedResourceMetadata {
        serde_json::from_value(
            json!({"resource": resource, "authorization_servers": ["https://as"]}),
        )
        .expect("prm")
    }

    #[test]
    fn protected_resource_metadata_keeps_unknown_fields() {
        let doc = json!({
            "resource": "https://mcp.example.com/mcp",
            "authorization_servers": ["https://as.example.com/tenant1"],
            "scopes_supported": ["mcp:basic"],
            "resource_documentation": "https://docs",
            "x-vendor": {"a": 1}
        });
        let m: ProtectedResourceMetadata = serde_json::from_value(doc.clone()).expect("parses");
        assert_eq!(
            m.authorization_server(),
            Ok("https://as.example.com/tenant1")
        );
        assert_eq!(m.extra.len(), 2);
        assert_eq!(serde_json::to_value(&m).expect("serializes"), doc);
        let mut built = ProtectedResourceMetadata::new("https://r/mcp", vec!["https://as".into()]);
        built.scopes_supported = Some(vec!["mcp".into()]);
        assert_eq!(
            serde_json::to_value(&built).expect("serializes"),
            json!({"resource": "https://r/mcp", "authorization_servers": ["https://as"], "scopes_supported": ["mcp"]})
        );
        assert_eq!(
            serde_json::to_value(AuthorizationServerMetadata::new("https://as"))
                .expect("serializes"),
            json!({"issuer": "https://as"})
        );
        let bad: Result<ProtectedResourceMetadata, _> =
            serde_json::from_value(json!({"authorization_servers": [1]}));
        assert!(bad.is_err());
    }

    #[test]
    fn resource_must_cover_the_server_url() {
        let server = url("https://mcp.example.com/api/mcp");
        for ok in [
            "https://mcp.example.com/api/mcp",
            "https://mcp.example.com/api/mcp/",
            "https://MCP.example.com:443/api",
            "https://mcp.example.com",
            "https://mcp.example.com/",
        ] {
            assert!(prm(ok).check_resource(&server).is_ok(), "{ok}");
        }
        for bad in [
            "https://evil.example.com/api/mcp",
            "http://mcp.example.com/api/mcp",
            "https://mcp.example.com:8443/api/mcp",
            "https://mcp.example.com/ap",
            "https://mcp.example.com/api/mcp/deeper",
            "https://mcp.example.com/other",
        ] {
            assert!(
                matches!(
                    prm(bad).check_resource(&server),
                    Err(MetadataError::ResourceMismatch { .. })
                ),
                "{bad}"
            );
        }
        for (bad, reason) in [
            ("/api/mcp", "not an absolute URL"),
            ("https://mcp.example.com/api#x", "has a fragment"),
        ] {
            assert_eq!(
                prm(bad).check_resource(&server),
                Err(MetadataError::BadUrl {
                    field: "resource",
                    reason
                })
            );
        }
        // The conformance suite's root document names the origin, its server `/mcp`.
        assert!(
            prm("http://localhost:3001")
                .check_resource(&url("http://localhost:3001/mcp"))
                .is_ok()
        );
        let none: ProtectedResourceMetadata =
            serde_json::from_value(json!({"resource": "https://a"})).expect("parses");
        assert_eq!(
            none.authorization_server(),
            Err(MetadataError::NoAuthorizationServer)
        );
    }

    fn asm(extra: Value) -> AuthorizationServerMetadata {
        let mut doc = json!({
            "issuer": "https://as.example.com/tenant1",
            "authorization_endpoint": "https://as.example.com/tenant1/authorize",
            "token_endpoint": "https://as.example.com/tenant1/token",
            "code_challenge_methods_supported": ["plain", "S256"],
        });
        if let (Some(d), Value::Object(e)) = (doc.as_object_mut(), extra) {
            d.extend(e);
        }
        serde_json::from_value(doc).expect("metadata")
    }

    #[test]
    fn authorization_server_checks() {
        let m = asm(
            json!({"registration_endpoint": "https://as/register", "subject_types_supported": ["public"]}),
        );
        assert_eq!(m.extra.len(), 1);
        let (a, t) = m
            .check_for_authorization_code("https://as.example.com/tenant1")
            .expect("usable");
        assert_eq!(a.path(), "/tenant1/authorize");
        assert_eq!(t.path(), "/tenant1/token");
        // Simple string equality: a trailing slash is another issuer.
        assert!(matches!(
            m.check_issuer("https://as.example.com/tenant1/"),
            Err(MetadataError::IssuerMismatch { .. })
        ));
        let none = asm(json!({"code_challenge_methods_supported": null}));
        assert_eq!(
            none.check_pkce_s256(),
            Err(MetadataError::PkceNotAdvertised)
        );
        let plain = asm(json!({"code_challenge_methods_supported": ["plain"]}));
        assert_eq!(
            plain.check_pkce_s256(),
            Err(MetadataError::PkceS256Unsupported)
        );
        let no_token = asm(json!({"token_endpoint": null}));
        assert_eq!(
            no_token.check_for_authorization_code("https://as.example.com/tenant1"),
            Err(MetadataError::Missing("token_endpoint"))
        );
    }

    #[test]
    fn endpoints_must_be_https_or_loopback_http() {
        for ok in [
            "https://as/authorize",
            "http://localhost:9/a",
            "http://127.0.0.1/a",
            "http://[::1]/a",
        ] {
            assert!(endpoint("authorization_endpoint", Some(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,x",
            "file:///etc/passwd",
            "http://as.example.com/authorize",
            "https://as/authorize#frag",
            "/authorize",
        ] {
            assert!(
                matches!(
                    endpoint("authorization_endpoint", Some(bad)),
                    Err(MetadataError::BadUrl { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn scope_support() {
        let m = asm(json!({"scopes_supported": ["openid", "offline_access"]}));
        assert!(m.supports_scope("offline_access"));
        assert!(!asm(json!({})).supports_scope("offline_access"));
    }
}
