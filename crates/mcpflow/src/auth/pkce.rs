//! PKCE with S256 (RFC 7636) and the `state` parameter, both from the OS random number
//! generator.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use thiserror::Error;

/// Why a PKCE verifier or `state` could not be made.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PkceError {
    /// The operating system's random number generator failed.
    #[error("the OS random number generator failed: {0}")]
    Random(getrandom::Error),
    /// A verifier outside RFC 7636 §4.1: 43 to 128 characters of `[A-Za-z0-9-._~]`.
    #[error("a PKCE code verifier must be 43 to 128 unreserved characters")]
    InvalidVerifier,
}

/// The only PKCE method the MCP spec allows.
pub const S256: &str = "S256";

/// 32 random bytes, base64url without padding: 43 characters, 256 bits of entropy.
fn random_token() -> Result<String, PkceError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(PkceError::Random)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The S256 challenge of `verifier`: `BASE64URL(SHA256(verifier))`.
#[must_use]
pub fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A PKCE verifier and its S256 challenge. The verifier is a secret until the token
/// request, so `Debug` leaves it out.
#[derive(Clone)]
pub struct Pkce {
    verifier: String,
    challenge: String,
}

impl Pkce {
    /// A fresh verifier from the OS random number generator.
    ///
    /// # Errors
    /// [`PkceError::Random`] when the generator fails.
    pub fn generate() -> Result<Self, PkceError> {
        Self::from_verifier(random_token()?)
    }

    /// Wraps a given verifier, checking it against RFC 7636 §4.1.
    ///
    /// # Errors
    /// [`PkceError::InvalidVerifier`].
    pub fn from_verifier(verifier: impl Into<String>) -> Result<Self, PkceError> {
        let verifier = verifier.into();
        let unreserved = |b: u8| b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        if !(43..=128).contains(&verifier.len()) || !verifier.bytes().all(unreserved) {
            return Err(PkceError::InvalidVerifier);
        }
        let challenge = s256_challenge(&verifier);
        Ok(Self {
            verifier,
            challenge,
        })
    }

    /// The verifier, for the token request.
    #[must_use]
    pub fn verifier(&self) -> &str {
        &self.verifier
    }

    /// The challenge, for the authorization request (`code_challenge`).
    #[must_use]
    pub fn challenge(&self) -> &str {
        &self.challenge
    }

    /// The method, for the authorization request (`code_challenge_method`).
    #[must_use]
    pub fn method(&self) -> &'static str {
        S256
    }
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("verifier", &"<redacted>")
            .field("challenge", &self.challenge)
            .finish()
    }
}

/// The `state` of one authorization request: unguessable, checked on the redirect.
#[derive(Clone, PartialEq, Eq)]
pub struct State(String);

impl State {
    /// A fresh state from the OS random number generator.
    ///
    /// # Errors
    /// [`PkceError::Random`] when the generator fails.
    pub fn generate() -> Result<Self, PkceError> {
        random_token().map(Self)
    }

    /// The value to send.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `received` (from the redirect) is this state, in time independent of
    /// where they first differ.
    #[must_use]
    pub fn matches(&self, received: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), received.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("State(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b_vector() {
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk").expect("valid");
        assert_eq!(p.challenge(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert_eq!(p.method(), "S256");
    }

    #[test]
    fn generated_verifiers_are_fresh_and_valid() {
        let a = Pkce::generate().expect("rng");
        let b = Pkce::generate().expect("rng");
        assert_eq!(a.verifier().len(), 43);
        assert_ne!(a.verifier(), b.verifier());
        assert_eq!(a.challenge(), s256_challenge(a.verifier()));
        assert!(Pkce::from_verifier(a.verifier()).is_ok());
        assert!(!format!("{a:?}").contains(a.verifier()));
    }

    #[test]
    fn verifiers_outside_rfc7636_are_refused() {
        for bad in [
            "short".to_owned(),
            "a".repeat(129),
            format!("{}+", "a".repeat(43)),
            format!("{}é", "a".repeat(42)),
        ] {
            assert!(matches!(
                Pkce::from_verifier(bad),
                Err(PkceError::InvalidVerifier)
            ));
        }
        assert!(Pkce::from_verifier("a".repeat(128)).is_ok());
    }

    #[test]
    fn state_matches_only_itself() {
        let s = State::generate().expect("rng");
        assert!(s.matches(s.as_str()));
        assert!(!s.matches(""));
        assert!(!s.matches(&format!("{}x", s.as_str())));
        assert!(!s.matches(&s.as_str().replace(|_: char| true, "A")));
        assert_ne!(s, State::generate().expect("rng"));
        assert!(!format!("{s:?}").contains(s.as_str()));
    }
}
