//! Enterprise-managed authorization (SEP-990, "cross-app access"): the user's identity
//! provider trades its ID token for an identity assertion grant (ID-JAG, RFC 8693 token
//! exchange), which the MCP server's authorization server takes as a JWT bearer grant
//! (RFC 7523) in place of a browser step.

use reqwest::Url;
use reqwest::header;
use serde::Deserialize;

use super::store::Secret;
use super::token::{EndpointError, Endpoints, MalformedReason, form};

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The grant the authorization server is asked for with the ID-JAG (RFC 7523).
pub(crate) const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The identity provider side of enterprise-managed authorization
/// ([`OAuthConfig::enterprise`](super::OAuthConfig::enterprise)): where to exchange the
/// user's ID token, and the ID token itself.
///
/// ```
/// use mcpflow::auth::{EnterpriseIdp, Secret};
///
/// let idp = EnterpriseIdp::new(
///     "https://idp.example.com/token".parse().expect("a URL"),
///     Secret::new("eyJhbGciOi..."),
/// )
/// .client_id("mcp-agent-at-the-idp");
/// assert_eq!(idp.token_endpoint().as_str(), "https://idp.example.com/token");
/// ```
#[derive(Clone)]
pub struct EnterpriseIdp {
    token_endpoint: Url,
    id_token: Secret,
    client_id: Option<String>,
}

impl std::fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("token_endpoint", &self.token_endpoint.as_str())
            .field("id_token", &self.id_token)
            .field("client_id", &self.client_id)
            .finish()
    }
}

impl EnterpriseIdp {
    /// The identity provider's token endpoint and the user's ID token from it.
    pub fn new(token_endpoint: Url, id_token: Secret) -> Self {
        Self {
            token_endpoint,
            id_token,
            client_id: None,
        }
    }

    /// This client's id at the identity provider, sent with the exchange.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The identity provider's token endpoint.
    pub fn token_endpoint(&self) -> &Url {
        &self.token_endpoint
    }
}

#[derive(Deserialize)]
struct ExchangeResponse {
    access_token: String,
    #[serde(default)]
    issued_token_type: Option<String>,
}

impl Endpoints<'_> {
    /// Trades the ID token for an ID-JAG naming `audience` (the authorization server's
    /// issuer) and `resource` (the MCP server).
    pub(crate) async fn identity_assertion(
        &self,
        idp: &EnterpriseIdp,
        audience: &str,
        resource: Option<&str>,
        scope: Option<&str>,
    ) -> Result<Secret, EndpointError> {
        const NAME: &str = "identity provider token endpoint";
        let mut pairs = vec![
            ("grant_type", TOKEN_EXCHANGE),
            ("subject_token", idp.id_token.expose()),
            ("subject_token_type", ID_TOKEN),
            ("requested_token_type", ID_JAG),
            ("audience", audience),
        ];
        if let Some(resource) = resource {
            pairs.push(("resource", resource));
        }
        if let Some(scope) = scope {
            pairs.push(("scope", scope));
        }
        if let Some(client_id) = &idp.client_id {
            pairs.push(("client_id", client_id));
        }
        let request = self
            .http
            .post(idp.token_endpoint.clone())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(form(&pairs));
        let body = self.send(NAME, request, None).await?;
        let malformed = |reason: &str| EndpointError::Malformed {
            endpoint: NAME,
            reason: MalformedReason(reason.to_owned()),
        };
        let parsed: ExchangeResponse = serde_json::from_slice(&body)
            .map_err(|_| malformed("not a token exchange response"))?;
        match parsed.issued_token_type.as_deref() {
            Some(ID_JAG) | None => Ok(Secret::new(parsed.access_token)),
            Some(_) => Err(malformed("issued_token_type is not an ID-JAG")),
        }
    }
}
