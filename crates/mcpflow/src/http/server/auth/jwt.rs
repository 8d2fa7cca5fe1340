//! [`JwtVerifier`]: signed JWT access tokens (RFC 9068) checked against the
//! authorization server's key set (JWKS).

use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::Url;
use serde_json::{Map, Value};
use tokio::sync::{Mutex, RwLock};
use tokio::time::Instant;

use super::verify::principal_from_claims;
use super::{TokenVerifier, VerifyError};
use crate::auth::body::{CappedBody, read_capped};
use crate::server::Principal;
use crate::session::BoxFuture;

/// Public-key algorithms only: an HMAC key in a JWKS would let anyone who can read
/// the key set sign tokens.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The most of a key set that is read.
const MAX_JWKS_BYTES: usize = 256 * 1024;

/// Checks JWT access tokens: the signature with a key of the issuer's JWKS, `exp`
/// (and `nbf`), `iss` equal to the issuer, and `aud` naming the audience.
///
/// The key set is fetched on first use and kept; a token signed with a key it does
/// not hold (the issuer rotated its keys) makes it fetch the set again, at most once
/// per [`refetch_interval`](Self::refetch_interval), so forged key ids cannot make it
/// hammer the issuer. The set is also fetched again once it is older than
/// [`max_age`](Self::max_age), so withdrawn keys stop being accepted.
///
/// ```no_run
/// use mcpflow::http::server::auth::JwtVerifier;
///
/// let verifier = JwtVerifier::new(
///     "https://auth.example.com",
///     "https://auth.example.com/jwks".parse().expect("a URL"),
///     "https://mcp.example.com/mcp",
/// );
/// # let _ = verifier;
/// ```
#[derive(Debug)]
pub struct JwtVerifier {
    issuer: String,
    jwks_uri: Url,
    audience: String,
    http: reqwest::Client,
    timeout: Duration,
    refetch_interval: Duration,
    max_age: Duration,
    leeway: u64,
    keys: RwLock<Option<Keys>>,
    fetching: Mutex<()>,
}

#[derive(Debug)]
struct Keys {
    set: JwkSet,
    fetched: Instant,
}

impl JwtVerifier {
    /// Accept tokens from `issuer` signed with a key of `jwks_uri`, for `audience` (the
    /// resource's canonical URL).
    pub fn new(issuer: impl Into<String>, jwks_uri: Url, audience: impl Into<String>) -> Self {
        JwtVerifier {
            issuer: issuer.into(),
            jwks_uri,
            audience: audience.into(),
            http: crate::http::client::tls::client(),
            timeout: Duration::from_secs(10),
            refetch_interval: Duration::from_secs(30),
            max_age: Duration::from_secs(3600),
            leeway: 30,
            keys: RwLock::new(None),
            fetching: Mutex::new(()),
        }
    }

    /// The shortest time between two fetches caused by unknown key ids (default 30 s).
    #[must_use]
    pub fn refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch_interval = interval;
        self
    }

    /// Fetch the key set again once it is this old (default 1 h).
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// The longest one key-set fetch may take (default 10 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Clock skew allowed on `exp` and `nbf`, in seconds (default 30).
    #[must_use]
    pub fn leeway(mut self, seconds: u64) -> Self {
        self.leeway = seconds;
        self
    }

    /// The decoding key for `kid`: from the kept set, else from a fresh one when
    /// allowed. `None` when neither has it.
    async fn key(&self, kid: Option<&str>) -> Result<Option<DecodingKey>, VerifyError> {
        {
            let keys = self.keys.read().await;
            if let Some(keys) = keys.as_ref()
                && keys.fetched.elapsed() < self.max_age
                && let Some(key) = find(&keys.set, kid)?
            {
                return Ok(Some(key));
            }
        }
        let _one_fetch = self.fetching.lock().await;
        {
            // Another request may have fetched while this one waited.
            let keys = self.keys.read().await;
            if let Some(keys) = keys.as_ref() {
                let fresh = keys.fetched.elapsed() < self.max_age;
                if fresh && let Some(key) = find(&keys.set, kid)? {
                    return Ok(Some(key));
                }
                if fresh && keys.fetched.elapsed() < self.refetch_interval {
                    return Ok(None);
                }
            }
        }
        let set = self.fetch().await?;
        let key = find(&set, kid)?;
        *self.keys.write().await = Some(Keys {
            set,
            fetched: Instant::now(),
        });
        Ok(key)
    }

    async fn fetch(&self) -> Result<JwkSet, VerifyError> {
        let get = async {
            let unavailable =
                |e: reqwest::Error| VerifyError::Unavailable(e.without_url().to_string());
            let response = self
                .http
                .get(self.jwks_uri.clone())
                .send()
                .await
                .map_err(unavailable)?;
            if !response.status().is_success() {
                return Err(VerifyError::Unavailable(format!(
                    "the key set answered {}",
                    response.status()
                )));
            }
            let body = read_capped(response, MAX_JWKS_BYTES)
                .await
                .map_err(|e| match e {
                    CappedBody::TooLarge => {
                        VerifyError::Unavailable("the key set is too large".into())
                    }
                    CappedBody::Network(e) => unavailable(e),
                })?;
            serde_json::from_slice::<JwkSet>(&body)
                .map_err(|e| VerifyError::Unavailable(format!("the key set is malformed: {e}")))
        };
        tracing::debug!(jwks_uri = %self.jwks_uri, "fetching the key set");
        tokio::time::timeout(self.timeout, get).await.map_err(|_| {
            VerifyError::Unavailable(format!("no key set within {:?}", self.timeout))
        })?
    }
}

/// The key named `kid`, or the only key when the token names none.
fn find(set: &JwkSet, kid: Option<&str>) -> Result<Option<DecodingKey>, VerifyError> {
    let jwk = match kid {
        Some(kid) => set.find(kid),
        None if set.keys.len() == 1 => set.keys.first(),
        None => None,
    };
    jwk.map(DecodingKey::from_jwk)
        .transpose()
        .map_err(|e| VerifyError::Unavailable(format!("a key of the key set is unusable: {e}")))
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        Box::pin(async move {
            let header = jsonwebtoken::decode_header(token)
                .map_err(|e| VerifyError::Invalid(format!("not a JWT: {e}")))?;
            if !ALGORITHMS.contains(&header.alg) {
                return Err(VerifyError::Invalid(format!(
                    "algorithm {:?} is not accepted",
                    header.alg
                )));
            }
            let Some(key) = self.key(header.kid.as_deref()).await? else {
                return Err(VerifyError::Invalid(
                    "signed with a key the issuer does not publish".into(),
                ));
            };
            let mut validation = Validation::new(header.alg);
            validation.leeway = self.leeway;
            validation.set_audience(&[&self.audience]);
            validation.set_issuer(&[&self.issuer]);
            validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
            let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
                .map_err(|e| match e.kind() {
                    ErrorKind::ExpiredSignature => VerifyError::Expired,
                    ErrorKind::InvalidAudience => VerifyError::WrongAudience,
                    ErrorKind::InvalidIssuer => VerifyError::WrongIssuer,
                    _ => VerifyError::Invalid(e.to_string()),
                })?;
            Ok(principal_from_claims(data.claims))
        })
    }
}
