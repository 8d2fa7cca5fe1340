//! Where to look for metadata, in the order the MCP authorization spec (2025-11-25 and
//! 2026-07-28) prescribes. The caller fetches the candidates in order and stops at the
//! first document it gets; a document that fails its checks ends discovery, it is not a
//! reason to try the next candidate.

use reqwest::Url;
use thiserror::Error;

use super::challenge::BearerChallenge;

/// Why no candidate URL could be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The URL is not absolute, or not `http`/`https`.
    #[error("{what} is not an http(s) URL")]
    NotHttp {
        /// Which URL.
        what: &'static str,
    },
    /// An issuer with a query or fragment, which RFC 8414 §2 forbids.
    #[error("issuer `{0}` has a query or a fragment")]
    IssuerWithQuery(String),
}

const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";
const AUTHORIZATION_SERVER: &str = "/.well-known/oauth-authorization-server";
const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";

fn http_url(value: &str, base: Option<&Url>, what: &'static str) -> Result<Url, DiscoveryError> {
    let parsed = match base {
        Some(base) => base.join(value),
        None => Url::parse(value),
    };
    parsed
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or(DiscoveryError::NotHttp { what })
}

/// `url`'s origin with `path`, no query, fragment or credentials.
fn at_path(url: &Url, path: &str) -> Url {
    let mut out = url.clone();
    out.set_path(path);
    out.set_query(None);
    out.set_fragment(None);
    // Neither can fail on an http(s) URL with a host, which callers guarantee.
    let _ = out.set_username("");
    let _ = out.set_password(None);
    out
}

/// `url`'s path without a trailing slash; empty for the root.
fn trimmed_path(url: &Url) -> &str {
    url.path().trim_end_matches('/')
}

/// Protected-resource metadata URLs for the MCP server at `server_url` (RFC 9728 §3.1).
///
/// The challenge's `resource_metadata`, when present, is the only candidate (resolved
/// against the server URL, should it be relative). Otherwise the path-suffixed
/// well-known URL, then the root one; for a server at the root, only the root one.
///
/// # Errors
/// [`DiscoveryError::NotHttp`] when the server URL or `resource_metadata` is not http(s).
pub fn protected_resource_metadata_urls(
    server_url: &Url,
    challenge: Option<&BearerChallenge>,
) -> Result<Vec<Url>, DiscoveryError> {
    let server = http_url(server_url.as_str(), None, "the MCP server URL")?;
    if let Some(header) = challenge.and_then(|c| c.resource_metadata.as_deref()) {
        return Ok(vec![http_url(header, Some(&server), "resource_metadata")?]);
    }
    let path = trimmed_path(&server);
    let mut out = Vec::with_capacity(2);
    if !path.is_empty() {
        out.push(at_path(&server, &format!("{PROTECTED_RESOURCE}{path}")));
    }
    out.push(at_path(&server, PROTECTED_RESOURCE));
    Ok(out)
}

/// Authorization-server metadata URLs for `issuer` (RFC 8414 §3.1, OpenID Connect
/// Discovery §4, and the MCP order for issuers with a path):
///
/// - `https://as/tenant1`: `/.well-known/oauth-authorization-server/tenant1`,
///   `/.well-known/openid-configuration/tenant1`, `/tenant1/.well-known/openid-configuration`;
/// - `https://as`: `/.well-known/oauth-authorization-server`, `/.well-known/openid-configuration`.
///
/// Check the document with
/// [`AuthorizationServerMetadata::check_issuer`](super::AuthorizationServerMetadata::check_issuer)
/// against this same `issuer` string.
///
/// # Errors
/// [`DiscoveryError::NotHttp`] or [`DiscoveryError::IssuerWithQuery`].
pub fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<Url>, DiscoveryError> {
    let url = http_url(issuer, None, "the issuer")?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(DiscoveryError::IssuerWithQuery(issuer.to_owned()));
    }
    let path = trimmed_path(&url);
    Ok(if path.is_empty() {
        vec![
            at_path(&url, AUTHORIZATION_SERVER),
            at_path(&url, OPENID_CONFIGURATION),
        ]
    } else {
        vec![
            at_path(&url, &format!("{AUTHORIZATION_SERVER}{path}")),
            at_path(&url, &format!("{OPENID_CONFIGURATION}{path}")),
            at_path(&url, &format!("{path}{OPENID_CONFIGURATION}")),
        ]
    })
}

/// The endpoints a 2025-03-26 server implies when it serves no protected-resource
/// metadata: the server URL with its path discarded is the authorization base, whose
/// RFC 8414 document is looked up first and whose default endpoints apply without one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LegacyEndpoints {
    /// `{base}/.well-known/oauth-authorization-server`.
    pub metadata: Url,
    /// `{base}/authorize`.
    pub authorization: Url,
    /// `{base}/token`.
    pub token: Url,
    /// `{base}/register`.
    pub registration: Url,
}

impl LegacyEndpoints {
    /// The 2025-03-26 endpoints for the MCP server at `server_url`.
    ///
    /// # Errors
    /// [`DiscoveryError::NotHttp`].
    pub fn for_server(server_url: &Url) -> Result<Self, DiscoveryError> {
        let server = http_url(server_url.as_str(), None, "the MCP server URL")?;
        Ok(Self {
            metadata: at_path(&server, AUTHORIZATION_SERVER),
            authorization: at_path(&server, "/authorize"),
            token: at_path(&server, "/token"),
            registration: at_path(&server, "/register"),
        })
    }
}

/// The canonical URI of an MCP server for the RFC 8707 `resource` parameter when no
/// protected-resource metadata names one: no fragment, and no trailing slash on a bare
/// origin (the MCP spec's examples write `https://mcp.example.com`).
#[must_use]
pub fn canonical_resource(server_url: &Url) -> String {
    let mut url = server_url.clone();
    url.set_fragment(None);
    let mut out = url.to_string();
    if url.path() == "/" && url.query().is_none() {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn protected_resource_candidates() {
        let server = url("http://localhost:3000/mcp?x=1#f");
        assert_eq!(
            strings(protected_resource_metadata_urls(&server, None).expect("builds")),
            [
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource",
            ]
        );
        let nested = url("https://u:p@example.com/api/v1/mcp/");
        assert_eq!(
            strings(protected_resource_metadata_urls(&nested, None).expect("builds")),
            [
                "https://example.com/.well-known/oauth-protected-resource/api/v1/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        let root = url("https://example.com/");
        assert_eq!(
            strings(protected_resource_metadata_urls(&root, None).expect("builds")),
            ["https://example.com/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn the_header_url_wins() {
        let server = url("http://localhost:3000/mcp");
        let mut challenge = BearerChallenge {
            resource_metadata: Some("http://localhost:3000/custom/metadata/location.json".into()),
            ..BearerChallenge::default()
        };
        assert_eq!(
            strings(protected_resource_metadata_urls(&server, Some(&challenge)).expect("builds")),
            ["http://localhost:3000/custom/metadata/location.json"]
        );
        challenge.resource_metadata = Some("/relative.json".into());
        assert_eq!(
            strings(protected_resource_metadata_urls(&server, Some(&challenge)).expect("builds")),
            ["http://localhost:3000/relative.json"]
        );
        challenge.resource_metadata = Some("javascript:alert(1)".into());
        assert_eq!(
            protected_resource_metadata_urls(&server, Some(&challenge)),
            Err(DiscoveryError::NotHttp {
                what: "resource_metadata"
            })
        );
        // A challenge without the parameter leaves the well-known URLs.
        let bare = BearerChallenge::default();
        assert_eq!(
            protected_resource_metadata_urls(&server, Some(&bare)).map(|v| v.len()),
            Ok(2)
        );
    }

    #[test]
    fn authorization_server_candidates() {
        assert_eq!(
            strings(
                authorization_server_metadata_urls("http://localhost:4000/tenant1")
                    .expect("builds")
            ),
            [
                "http://localhost:4000/.well-known/oauth-authorization-server/tenant1",
                "http://localhost:4000/.well-known/openid-configuration/tenant1",
                "http://localhost:4000/tenant1/.well-known/openid-configuration",
            ]
        );
        for issuer in ["https://as.example.com", "https://as.example.com/"] {
            assert_eq!(
                strings(authorization_server_metadata_urls(issuer).expect("builds")),
                [
                    "https://as.example.com/.well-known/oauth-authorization-server",
                    "https://as.example.com/.well-known/openid-configuration",
                ]
            );
        }
        assert!(matches!(
            authorization_server_metadata_urls("https://as/?tenant=1"),
            Err(DiscoveryError::IssuerWithQuery(_))
        ));
        assert_eq!(
            authorization_server_metadata_urls("as.example.com"),
            Err(DiscoveryError::NotHttp { what: "the issuer" })
        );
    }

    #[test]
    fn legacy_endpoints_drop_the_path() {
        let e = LegacyEndpoints::for_server(&url("http://localhost:5000/mcp")).expect("builds");
        assert_eq!(
            e.metadata.as_str(),
            "http://localhost:5000/.well-known/oauth-authorization-server"
        );
        assert_eq!(e.authorization.as_str(), "http://localhost:5000/authorize");
        assert_eq!(e.token.as_str(), "http://localhost:5000/token");
        assert_eq!(e.registration.as_str(), "http://localhost:5000/register");
    }

    #[test]
    fn canonical_resources() {
        assert_eq!(
            canonical_resource(&url("HTTPS://MCP.Example.com/")),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical_resource(&url("https://mcp.example.com/mcp#x")),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical_resource(&url("https://mcp.example.com:8443/mcp/")),
            "https://mcp.example.com:8443/mcp/"
        );
    }
}
