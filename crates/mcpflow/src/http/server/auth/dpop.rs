//! DPoP-bound access tokens at the resource (RFC 9449): `Authorization: DPoP` with a
//! proof of possession of the key the token is bound to (its `cnf.jkt`).
//!
//! Each proof is checked as §4.3 says: one `DPoP` header, a JWS typed `dpop+jwt` signed
//! with an asymmetric algorithm by the public key it carries, `htm` and `htu` naming
//! this request, `iat` within [`DpopPolicy::max_age`], `ath` the hash of the token sent,
//! a `jti` not seen before within that age (replay), and, with nonces on, the nonce
//! this server handed out. The token's `cnf.jkt` must be the proof key's thumbprint
//! (RFC 7638), and a bound token is never accepted as a bearer token.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{AlgorithmParameters, ThumbprintHash};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::Url;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

/// The proof algorithms accepted, as the metadata names them.
const ALGORITHMS: [(Algorithm, &str); 8] = [
    (Algorithm::ES256, "ES256"),
    (Algorithm::ES384, "ES384"),
    (Algorithm::RS256, "RS256"),
    (Algorithm::RS384, "RS384"),
    (Algorithm::RS512, "RS512"),
    (Algorithm::PS256, "PS256"),
    (Algorithm::PS384, "PS384"),
    (Algorithm::EdDSA, "EdDSA"),
];

/// At most this many proof ids are remembered for replay checks; past it the oldest
/// half of the window is dropped (a flood of proofs cannot grow memory without bound).
const MAX_SEEN: usize = 100_000;

/// How the resource treats DPoP (see
/// [`ResourceAuth::dpop`](super::ResourceAuth::dpop)).
///
/// ```
/// use std::time::Duration;
/// use mcpflow::http::server::auth::DpopPolicy;
///
/// let policy = DpopPolicy::required().with_nonces().max_age(Duration::from_secs(120));
/// # drop(policy);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct DpopPolicy {
    required: bool,
    nonces: bool,
    max_age: Duration,
}

impl DpopPolicy {
    /// DPoP-bound tokens are taken with their proofs; bearer tokens too (a bound token
    /// presented as a bearer token is refused).
    pub fn accepted() -> Self {
        DpopPolicy {
            required: false,
            nonces: false,
            max_age: Duration::from_secs(300),
        }
    }

    /// Only DPoP-bound tokens are taken: a bearer token gets a `DPoP` challenge.
    pub fn required() -> Self {
        DpopPolicy {
            required: true,
            ..DpopPolicy::accepted()
        }
    }

    /// Proofs must carry a nonce this server handed out (`DPoP-Nonce`, answered with
    /// `use_dpop_nonce` until they do, §9); it changes every [`max_age`](Self::max_age),
    /// the one before staying good for as long again. Default: off.
    pub fn with_nonces(mut self) -> Self {
        self.nonces = true;
        self
    }

    /// How old a proof may be (`iat`, either way), and how long its `jti` is
    /// remembered against replay. Default: 300 s.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// Whether only DPoP-bound tokens are taken.
    pub(crate) fn is_required(&self) -> bool {
        self.required
    }

    /// The algorithms proofs may be signed with, as the metadata names them.
    pub(crate) fn algorithms() -> Vec<String> {
        ALGORITHMS
            .iter()
            .map(|(_, name)| (*name).to_owned())
            .collect()
    }
}

/// Why a proof was not accepted.
#[derive(Debug)]
pub(crate) enum ProofError {
    /// Answered 401 with `error="invalid_dpop_proof"`.
    Invalid(String),
    /// The proof lacks the current nonce: answered 401 `use_dpop_nonce` with it.
    NeedsNonce,
}

/// The checks of one resource, with what they remember.
#[derive(Debug)]
pub(crate) struct DpopCheck {
    pub(crate) policy: DpopPolicy,
    /// Proof ids seen, with when they may be forgotten.
    seen: Mutex<HashMap<String, Instant>>,
    nonces: Mutex<Nonces>,
}

#[derive(Debug)]
struct Nonces {
    current: String,
    previous: Option<String>,
    since: Instant,
}

impl DpopCheck {
    pub(crate) fn new(policy: DpopPolicy) -> DpopCheck {
        DpopCheck {
            policy,
            seen: Mutex::default(),
            nonces: Mutex::new(Nonces {
                current: fresh_nonce(),
                previous: None,
                since: Instant::now(),
            }),
        }
    }

    /// The nonce proofs must carry now.
    pub(crate) fn nonce(&self) -> String {
        let mut nonces = self.nonces.lock().unwrap_or_else(PoisonError::into_inner);
        if nonces.since.elapsed() >= self.policy.max_age {
            let old = std::mem::replace(&mut nonces.current, fresh_nonce());
            nonces.previous = Some(old);
            nonces.since = Instant::now();
        }
        nonces.current.clone()
    }

    fn nonce_is_good(&self, nonce: &str) -> bool {
        let current = self.nonce();
        let nonces = self.nonces.lock().unwrap_or_else(PoisonError::into_inner);
        nonce == current || nonces.previous.as_deref() == Some(nonce)
    }

    /// Checks `proof` for a `method` request to `resource` carrying `token`; the
    /// thumbprint of the key it proves possession of.
    pub(crate) fn verify(
        &self,
        proof: &str,
        method: &str,
        resource: &str,
        token: &str,
    ) -> Result<String, ProofError> {
        let invalid = |why: &str| ProofError::Invalid(why.to_owned());
        let header = jsonwebtoken::decode_header(proof)
            .map_err(|_| invalid("the DPoP proof is not a JWT"))?;
        if header.typ.as_deref() != Some("dpop+jwt") {
            return Err(invalid("the DPoP proof's typ is not dpop+jwt"));
        }
        if !ALGORITHMS.iter().any(|(alg, _)| *alg == header.alg) {
            return Err(invalid("the DPoP proof's algorithm is not accepted"));
        }
        let jwk = header
            .jwk
            .ok_or_else(|| invalid("the DPoP proof carries no jwk"))?;
        if has_private_part(proof) || matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
            return Err(invalid("the DPoP proof's jwk is not a public key"));
        }
        let key =
            DecodingKey::from_jwk(&jwk).map_err(|_| invalid("the DPoP proof's jwk is unusable"))?;
        let mut validation = Validation::new(header.alg);
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.set_required_spec_claims::<&str>(&[]);
        let claims = jsonwebtoken::decode::<Map<String, Value>>(proof, &key, &validation)
            .map_err(|_| invalid("the DPoP proof's signature does not verify"))?
            .claims;
        let text = |name: &str| claims.get(name).and_then(Value::as_str);
        if text("htm") != Some(method) {
            return Err(invalid("the DPoP proof's htm is not this request's method"));
        }
        if !text("htu").is_some_and(|htu| same_target(htu, resource)) {
            return Err(invalid("the DPoP proof's htu is not this resource"));
        }
        let now = unix_now();
        let age = self.policy.max_age.as_secs();
        let iat = claims.get("iat").and_then(Value::as_u64).unwrap_or(0);
        if iat.abs_diff(now) > age {
            return Err(invalid(
                "the DPoP proof is too old or from the future (iat)",
            ));
        }
        let ath = URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()));
        if text("ath") != Some(ath.as_str()) {
            return Err(invalid(
                "the DPoP proof's ath is not the hash of this token",
            ));
        }
        let jti = text("jti")
            .filter(|j| !j.is_empty())
            .ok_or_else(|| invalid("the DPoP proof has no jti"))?;
        if self.policy.nonces && !text("nonce").is_some_and(|n| self.nonce_is_good(n)) {
            return Err(ProofError::NeedsNonce);
        }
        self.remember(jti)?;
        jwk.thumbprint(ThumbprintHash::SHA256)
            .map_err(|_| invalid("the DPoP proof's jwk has no thumbprint"))
    }

    /// Record `jti`; an error when it was seen within the proof age.
    fn remember(&self, jti: &str) -> Result<(), ProofError> {
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.get(jti).is_some_and(|until| now < *until) {
            return Err(ProofError::Invalid(
                "the DPoP proof was used before (jti)".to_owned(),
            ));
        }
        if seen.len() >= MAX_SEEN {
            seen.retain(|_, until| now < *until);
            if seen.len() >= MAX_SEEN {
                let horizon = now + self.policy.max_age / 2;
                seen.retain(|_, until| *until > horizon);
            }
        }
        seen.insert(jti.to_owned(), now + self.policy.max_age * 2);
        Ok(())
    }
}

/// Whether the proof's header `jwk` has a private member (`d`, or the RSA primes).
fn has_private_part(proof: &str) -> bool {
    let header = proof
        .split('.')
        .next()
        .and_then(|h| URL_SAFE_NO_PAD.decode(h).ok())
        .and_then(|h| serde_json::from_slice::<Value>(&h).ok());
    header.is_some_and(|h| {
        ["d", "p", "q", "dp", "dq", "qi", "k"]
            .iter()
            .any(|member| h["jwk"].get(member).is_some())
    })
}

/// Whether `htu` names `resource`: the same scheme, host, port and path, compared as
/// RFC 3986 normalises them (case of scheme and host, default port, a trailing slash);
/// a query or fragment in `htu` never matches.
fn same_target(htu: &str, resource: &str) -> bool {
    let (Ok(a), Ok(b)) = (Url::parse(htu), Url::parse(resource)) else {
        return false;
    };
    a.query().is_none()
        && a.fragment().is_none()
        && a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
        && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
}

fn fresh_nonce() -> String {
    let mut bytes = [0u8; 16];
    // The time makes a nonce new even if the system has no randomness to give.
    if getrandom::fill(&mut bytes).is_err() {
        bytes[..8].copy_from_slice(&unix_now().to_le_bytes());
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The RFC 7638 thumbprint of `jwk`, as the checks compute it.
#[cfg(test)]
fn thumbprint(jwk: &Value) -> String {
    serde_json::from_value::<jsonwebtoken::jwk::Jwk>(jwk.clone())
        .ok()
        .and_then(|j| j.thumbprint(ThumbprintHash::SHA256).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_compare_as_rfc_3986_normalises_them() {
        let r = "https://mcp.example.com/mcp";
        assert!(same_target("https://MCP.example.com:443/mcp", r));
        assert!(same_target("https://mcp.example.com/mcp/", r));
        assert!(!same_target("https://mcp.example.com/mcp?x=1", r));
        assert!(!same_target("http://mcp.example.com/mcp", r));
        assert!(!same_target("https://mcp.example.com/other", r));
    }

    #[test]
    fn the_thumbprint_is_rfc_7638s() {
        // RFC 7638 §3.1's example key and thumbprint.
        let jwk = serde_json::json!({
            "kty": "RSA",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e": "AQAB",
        });
        assert_eq!(
            thumbprint(&jwk),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }
}
