//! [`IntrospectionVerifier`]: opaque tokens checked by the authorization server
//! (RFC 7662).

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Map, Value};

use super::verify::principal_from_claims;
use super::{TokenVerifier, VerifyError};
use crate::auth::body::{CappedBody, read_capped};
use crate::server::Principal;
use crate::session::BoxFuture;

/// The most of an introspection answer that is read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Asks the authorization server's introspection endpoint (RFC 7662) about each token.
///
/// An inactive token is refused; an active one becomes a [`Principal`] from the answer's
/// `sub`, `scope`, `client_id`, `exp`, `aud` and `iss`. When built with
/// [`issuer`](Self::issuer), the answer must name it. The resource checks the
/// audience, so the authorization server must return `aud`.
///
/// ```no_run
/// use mcpflow::http::server::auth::IntrospectionVerifier;
///
/// let endpoint = "https://auth.example.com/introspect".parse().expect("a URL");
/// let verifier = IntrospectionVerifier::new(endpoint)
///     .client_credentials("mcp-server", "its-secret");
/// # let _ = verifier;
/// ```
#[derive(Clone)]
pub struct IntrospectionVerifier {
    endpoint: Url,
    credentials: Option<(String, String)>,
    issuer: Option<String>,
    http: reqwest::Client,
    timeout: Duration,
}

// By hand: the client secret is never shown.
impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint.as_str())
            .field("client_id", &self.credentials.as_ref().map(|(id, _)| id))
            .field("issuer", &self.issuer)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Introspect at `endpoint`, with a 10 s timeout per call.
    pub fn new(endpoint: Url) -> Self {
        IntrospectionVerifier {
            endpoint,
            credentials: None,
            issuer: None,
            http: crate::http::client::tls::client(),
            timeout: Duration::from_secs(10),
        }
    }

    /// Authenticate to the endpoint with HTTP Basic (`client_secret_basic`).
    #[must_use]
    pub fn client_credentials(mut self, id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.credentials = Some((id.into(), secret.into()));
        self
    }

    /// Require the answer's `iss` to be `issuer`.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The longest one introspection call may take (default 10 s); past it the request
    /// is answered 503.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn introspect(&self, token: &str) -> Result<Map<String, Value>, VerifyError> {
        let mut form = Url::parse("form:").map_err(|e| VerifyError::Unavailable(e.to_string()))?;
        form.query_pairs_mut()
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token");
        let mut request = self
            .http
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "application/json")
            .body(form.query().unwrap_or_default().to_owned());
        if let Some((id, secret)) = &self.credentials {
            request = request.basic_auth(id, Some(secret));
        }
        let unavailable = |e: reqwest::Error| VerifyError::Unavailable(e.without_url().to_string());
        let response = request.send().await.map_err(unavailable)?;
        if !response.status().is_success() {
            return Err(VerifyError::Unavailable(format!(
                "the introspection endpoint answered {}",
                response.status()
            )));
        }
        let body = read_capped(response, MAX_ANSWER_BYTES)
            .await
            .map_err(|e| match e {
                CappedBody::TooLarge => {
                    VerifyError::Unavailable("the introspection answer is too large".into())
                }
                CappedBody::Network(e) => unavailable(e),
            })?;
        serde_json::from_slice(&body).map_err(|e| {
            VerifyError::Unavailable(format!("the introspection answer is not JSON: {e}"))
        })
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        Box::pin(async move {
            let answer = tokio::time::timeout(self.timeout, self.introspect(token))
                .await
                .map_err(|_| {
                    VerifyError::Unavailable(format!(
                        "no introspection answer within {:?}",
                        self.timeout
                    ))
                })??;
            if answer.get("active").and_then(Value::as_bool) != Some(true) {
                return Err(VerifyError::Invalid("the token is not active".into()));
            }
            let principal = principal_from_claims(answer);
            if let Some(issuer) = &self.issuer
                && principal.issuer.as_ref() != Some(issuer)
            {
                return Err(VerifyError::WrongIssuer);
            }
            Ok(principal)
        })
    }
}
