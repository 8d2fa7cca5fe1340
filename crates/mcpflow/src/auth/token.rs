//! Requests to the token and registration endpoints: client authentication
//! (`none`, `client_secret_basic`, `client_secret_post`), the token response, and
//! dynamic client registration (RFC 7591).
//!
//! Error messages carry the server's `error` code and `error_description`, never a
//! request body, a token or a secret.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use reqwest::{Url, header};
use serde::Deserialize;
use serde_json::json;
use thiserror::Error;

use super::dpop::Dpop;
use super::metadata::AuthorizationServerMetadata;
use super::store::{ClientRegistration, Secret, Tokens};

const TOKEN_ENDPOINT: &str = "token endpoint";

/// A token or registration request failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// The request could not be made, or timed out.
    #[error("{endpoint}: request failed: {reason}")]
    Network {
        /// Which endpoint.
        endpoint: &'static str,
        /// The cause (without the URL's query).
        reason: String,
    },
    /// The server answered with an OAuth error (RFC 6749 §5.2) or another non-2xx status.
    #[error("{endpoint}: HTTP {status}: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Rejected {
        /// Which endpoint.
        endpoint: &'static str,
        /// The status.
        status: u16,
        /// The OAuth `error` code, or `unknown`.
        error: String,
        /// The `error_description`.
        description: Option<String>,
    },
    /// A 2xx answer that is not the expected document.
    #[error("{endpoint}: unusable answer: {reason}")]
    Malformed {
        /// Which endpoint.
        endpoint: &'static str,
        /// What is wrong.
        #[source]
        reason: MalformedReason,
    },
    /// The `private_key_jwt` assertion could not be made (an unusable key, or the
    /// `oauth-jwt` feature is off).
    #[error("could not sign the client assertion: {0}")]
    Assertion(String),
    /// No token endpoint authentication method both sides support.
    #[error("no token endpoint authentication method in common (server offers {0:?})")]
    NoAuthMethod(Vec<String>),
}

/// Why a 2xx answer was unusable (a type of its own so its message never quotes a value).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct MalformedReason(pub(crate) String);

/// `application/x-www-form-urlencoded` encoding of one value.
pub(crate) fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// A form body from name/value pairs.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The token endpoint authentication method for `client` at `server`: the registration's
/// own, else `none` for a public client, else `client_secret_basic` when offered (or when
/// the server lists nothing, RFC 8414's default), else `client_secret_post`.
///
/// # Errors
/// [`EndpointError::NoAuthMethod`] when the server lists neither secret method.
pub fn auth_method(
    client: &ClientRegistration,
    server: &AuthorizationServerMetadata,
) -> Result<String, EndpointError> {
    if let Some(method) = &client.token_endpoint_auth_method {
        return Ok(method.clone());
    }
    if client.private_key_pem.is_some() {
        return Ok("private_key_jwt".to_owned());
    }
    if client.client_secret.is_none() {
        return Ok("none".to_owned());
    }
    let Some(offered) = &server.token_endpoint_auth_methods_supported else {
        return Ok("client_secret_basic".to_owned());
    };
    for method in ["client_secret_basic", "client_secret_post"] {
        if offered.iter().any(|m| m == method) {
            return Ok(method.to_owned());
        }
    }
    Err(EndpointError::NoAuthMethod(offered.clone()))
}

/// `client_assertion_type` of `private_key_jwt` (RFC 7523 §2.2).
const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

#[cfg(feature = "oauth-jwt")]
use super::jwt::client_assertion;

#[cfg(not(feature = "oauth-jwt"))]
fn client_assertion(_: &str, _: &str, _: &str) -> Result<String, EndpointError> {
    Err(EndpointError::Assertion(
        "private_key_jwt needs the `oauth-jwt` feature of mcpflow".into(),
    ))
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorResponse {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// Talks to one authorization server's token and registration endpoints.
#[derive(Debug, Clone)]
pub(crate) struct Endpoints<'a> {
    pub(crate) http: &'a reqwest::Client,
    pub(crate) timeout: Duration,
    /// With a key, token requests carry a DPoP proof and DPoP-bound tokens are taken.
    pub(crate) dpop: Option<&'a Dpop>,
}

impl Endpoints<'_> {
    /// POSTs a token request (`params` without client authentication) and parses the
    /// tokens; `requested_scope` stands in when the answer names no scope. With a DPoP
    /// key, the request carries a proof (sent again once with a fresh one when the server
    /// asks for its nonce), and DPoP-bound tokens are accepted.
    pub(crate) async fn token(
        &self,
        token_endpoint: &Url,
        issuer: &str,
        client: &ClientRegistration,
        method: &str,
        params: &[(&str, &str)],
        requested_scope: Option<&str>,
    ) -> Result<Tokens, EndpointError> {
        let dpop = self.dpop;
        let mut nonce_retry = dpop.is_some();
        let body = loop {
            let request =
                self.token_request(token_endpoint, issuer, client, method, params, dpop)?;
            match self
                .send(TOKEN_ENDPOINT, request, dpop.map(|d| (d, token_endpoint)))
                .await
            {
                Err(EndpointError::Rejected { error, .. })
                    if nonce_retry && error == "use_dpop_nonce" =>
                {
                    nonce_retry = false;
                }
                other => break other?,
            }
        };
        let parsed: TokenResponse =
            serde_json::from_slice(&body).map_err(|e| EndpointError::Malformed {
                endpoint: TOKEN_ENDPOINT,
                reason: MalformedReason(format!(
                    "not a token response (line {}, column {})",
                    e.line(),
                    e.column()
                )),
            })?;
        let token_type = parsed.token_type.as_deref().unwrap_or("Bearer");
        let bound = token_type.eq_ignore_ascii_case("dpop");
        if !(token_type.eq_ignore_ascii_case("bearer") || bound && dpop.is_some()) {
            return Err(EndpointError::Malformed {
                endpoint: TOKEN_ENDPOINT,
                reason: MalformedReason(format!(
                    "token_type is `{token_type}`; expected Bearer{}",
                    if dpop.is_some() { " or DPoP" } else { "" }
                )),
            });
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        Ok(Tokens {
            access_token: Secret::new(parsed.access_token),
            refresh_token: parsed.refresh_token.map(Secret::new),
            expires_at: parsed.expires_in.map(|s| now.saturating_add(s)),
            issued_at: Some(now),
            scope: parsed.scope.or_else(|| requested_scope.map(str::to_owned)),
            issuer: issuer.to_owned(),
            // A proof went with the request: the refresh token of a public client is
            // bound to the key even when the access token is a bearer token.
            dpop_key: dpop.map(Dpop::stored),
            token_type: bound.then(|| "DPoP".to_owned()),
        })
    }

    /// One token request: `params` with the client's authentication and, with `dpop`, a
    /// fresh proof.
    fn token_request(
        &self,
        token_endpoint: &Url,
        issuer: &str,
        client: &ClientRegistration,
        method: &str,
        params: &[(&str, &str)],
        dpop: Option<&Dpop>,
    ) -> Result<reqwest::RequestBuilder, EndpointError> {
        let assertion;
        let mut pairs: Vec<(&str, &str)> = params.to_vec();
        let mut request = self.http.post(token_endpoint.clone());
        let secret = client.client_secret.as_ref().map(Secret::expose);
        match method {
            "client_secret_basic" => {
                let credentials = format!(
                    "{}:{}",
                    form_encode(&client.client_id),
                    form_encode(secret.unwrap_or_default())
                );
                let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
                request = request.header(header::AUTHORIZATION, format!("Basic {encoded}"));
            }
            "client_secret_post" => {
                pairs.push(("client_id", &client.client_id));
                pairs.push(("client_secret", secret.unwrap_or_default()));
            }
            "private_key_jwt" => {
                let pem = client.private_key_pem.as_ref().ok_or_else(|| {
                    EndpointError::Assertion("the registration has no private key".into())
                })?;
                assertion = client_assertion(&client.client_id, issuer, pem.expose())?;
                pairs.push(("client_assertion_type", JWT_BEARER_ASSERTION));
                pairs.push(("client_assertion", &assertion));
            }
            _ if client.client_id.is_empty() => {}
            _ => pairs.push(("client_id", &client.client_id)),
        }
        if let Some(dpop) = dpop {
            let proof = dpop
                .proof("POST", token_endpoint, None)
                .map_err(EndpointError::Assertion)?;
            request = request.header("DPoP", proof);
        }
        Ok(request
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(form(&pairs)))
    }

    /// Registers a native client with redirect URI `redirect_uri` (RFC 7591), asking for
    /// `method` (and `refresh_token` among the grant types when `refresh`).
    pub(crate) async fn register(
        &self,
        registration_endpoint: &Url,
        client_name: &str,
        redirect_uri: &Url,
        method: &str,
        scope: Option<&str>,
    ) -> Result<ClientRegistration, EndpointError> {
        const NAME: &str = "registration endpoint";
        let mut metadata = json!({
            "client_name": client_name,
            "redirect_uris": [redirect_uri.as_str()],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native",
        });
        if let Some(scope) = scope {
            metadata["scope"] = json!(scope);
        }
        let body = self
            .send(
                NAME,
                self.http
                    .post(registration_endpoint.clone())
                    .header(header::CONTENT_TYPE, "application/json")
                    .header(header::ACCEPT, "application/json")
                    .body(metadata.to_string()),
                None,
            )
            .await?;
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            #[serde(default)]
            client_secret: Option<String>,
            #[serde(default)]
            token_endpoint_auth_method: Option<String>,
        }
        let parsed: Registered =
            serde_json::from_slice(&body).map_err(|e| EndpointError::Malformed {
                endpoint: NAME,
                reason: MalformedReason(format!(
                    "not a registration response (line {}, column {})",
                    e.line(),
                    e.column()
                )),
            })?;
        let method = parsed
            .token_endpoint_auth_method
            .unwrap_or_else(|| method.to_owned());
        Ok(ClientRegistration {
            client_id: parsed.client_id,
            // A secret issued to a client registered as public is never sent.
            client_secret: parsed
                .client_secret
                .filter(|_| method != "none")
                .map(Secret::new),
            token_endpoint_auth_method: Some(method),
            private_key_pem: None,
        })
    }

    /// Sends `request` within the timeout; the body of a 2xx answer, else the OAuth error.
    /// With `dpop`, a `DPoP-Nonce` the answer carries is learnt for the URL given.
    pub(crate) async fn send(
        &self,
        endpoint: &'static str,
        request: reqwest::RequestBuilder,
        dpop: Option<(&Dpop, &Url)>,
    ) -> Result<Vec<u8>, EndpointError> {
        let network = |reason: String| EndpointError::Network { endpoint, reason };
        let exchange = async {
            let response = request
                .send()
                .await
                .map_err(|e| network(e.without_url().to_string()))?;
            if let Some((dpop, url)) = dpop
                && let Some(nonce) = response
                    .headers()
                    .get("dpop-nonce")
                    .and_then(|v| v.to_str().ok())
            {
                dpop.learn_nonce(url, nonce);
            }
            let status = response.status();
            let body = response
                .bytes()
                .await
                .map_err(|e| network(e.without_url().to_string()))?;
            Ok::<_, EndpointError>((status, body))
        };
        let (status, body) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| network(format!("no answer within {:?}", self.timeout)))??;
        if status.is_success() {
            return Ok(body.to_vec());
        }
        let error: Option<ErrorResponse> = serde_json::from_slice(&body).ok();
        Err(EndpointError::Rejected {
            endpoint,
            status: status.as_u16(),
            error: error
                .as_ref()
                .and_then(|e| e.error.clone())
                .unwrap_or_else(|| "unknown".to_owned()),
            description: error.and_then(|e| e.error_description),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding() {
        assert_eq!(form_encode("a b+c/d:é"), "a+b%2Bc%2Fd%3A%C3%A9");
        assert_eq!(form(&[("x", "1"), ("y z", "&")]), "x=1&y+z=%26");
    }

    #[test]
    fn method_choice() {
        let mut server = AuthorizationServerMetadata::new("https://as");
        let public = ClientRegistration::public("c");
        let confidential = ClientRegistration::confidential("c", "s");
        assert_eq!(auth_method(&public, &server).expect("none"), "none");
        assert_eq!(
            auth_method(&confidential, &server).expect("default"),
            "client_secret_basic"
        );
        server.token_endpoint_auth_methods_supported = Some(vec!["client_secret_post".into()]);
        assert_eq!(
            auth_method(&confidential, &server).expect("post"),
            "client_secret_post"
        );
        server.token_endpoint_auth_methods_supported = Some(vec!["private_key_jwt".into()]);
        assert!(auth_method(&confidential, &server).is_err());
    }
}
