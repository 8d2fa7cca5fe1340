//! DPoP (RFC 9449) on the client: a P-256 key the tokens are bound to, a fresh proof for
//! every request (`typ: dpop+jwt` with the public `jwk`; `jti`, `htm`, `htu`, `iat`, and
//! `ath` when a token goes with it), and the nonce each server asked for (`DPoP-Nonce`),
//! kept per origin: an authorization server and a resource server have their own.
//!
//! Proofs need ES256 signing, from the `oauth-jwt` feature; without it
//! [`Dpop::generate`] says so and tokens stay bearer tokens.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use reqwest::Url;

use super::store::Secret;

/// A DPoP key and the nonces servers gave for it.
pub(crate) struct Dpop {
    key: imp::Key,
    /// The latest `DPoP-Nonce` of each origin.
    nonces: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for Dpop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dpop").finish_non_exhaustive()
    }
}

impl Dpop {
    /// A new key.
    ///
    /// # Errors
    /// Without the `oauth-jwt` feature, or when the system has no randomness.
    pub(crate) fn generate() -> Result<Dpop, String> {
        Ok(Dpop::with(imp::Key::generate()?))
    }

    /// The key `stored` holds (from [`stored`](Self::stored)).
    ///
    /// # Errors
    /// When it is not such a key, or without the `oauth-jwt` feature.
    pub(crate) fn from_stored(stored: &Secret) -> Result<Dpop, String> {
        Ok(Dpop::with(imp::Key::from_stored(stored.expose())?))
    }

    fn with(key: imp::Key) -> Dpop {
        Dpop {
            key,
            nonces: Mutex::default(),
        }
    }

    /// The key, to keep with the tokens bound to it (a refresh token of a public client
    /// is bound too, so the next run must sign with the same key).
    pub(crate) fn stored(&self) -> Secret {
        Secret::new(self.key.stored())
    }

    /// A proof for one `method` request to `url`, with the hash of `access_token` when
    /// one is sent, and the nonce `url`'s server asked for, if any.
    ///
    /// # Errors
    /// When signing fails.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Url,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let nonce = self
            .nonces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&origin(url))
            .cloned();
        self.key
            .proof(method, &htu(url), access_token, nonce.as_deref())
    }

    /// `url`'s server gave `nonce` (a `DPoP-Nonce` header): proofs to it carry it from
    /// now on. Whether it is new (a request refused for want of it is worth sending
    /// again).
    pub(crate) fn learn_nonce(&self, url: &Url, nonce: &str) -> bool {
        let mut nonces = self.nonces.lock().unwrap_or_else(PoisonError::into_inner);
        nonces.insert(origin(url), nonce.to_owned()).as_deref() != Some(nonce)
    }
}

/// `scheme://host:port` of `url`.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The proof's `htu`: `url` without its query and fragment.
fn htu(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

#[cfg(feature = "oauth-jwt")]
mod imp {
    use std::time::{SystemTime, UNIX_EPOCH};

    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use serde_json::{Value, json};
    use sha2::{Digest, Sha256};

    use crate::auth::pkce::State;

    pub(super) struct Key {
        pair: EcdsaKeyPair,
        pkcs8: Vec<u8>,
        jwk: Value,
        rng: SystemRandom,
    }

    impl Key {
        pub(super) fn generate() -> Result<Key, String> {
            let rng = SystemRandom::new();
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                .map_err(|e| format!("no DPoP key: {e}"))?;
            Key::from_pkcs8(pkcs8.as_ref().to_vec(), rng)
        }

        pub(super) fn from_stored(stored: &str) -> Result<Key, String> {
            let der = STANDARD
                .decode(stored)
                .map_err(|_| "the stored DPoP key is not base64".to_owned())?;
            Key::from_pkcs8(der, SystemRandom::new())
        }

        fn from_pkcs8(pkcs8: Vec<u8>, rng: SystemRandom) -> Result<Key, String> {
            let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8)
                .map_err(|e| format!("not a P-256 DPoP key: {e}"))?;
            // The uncompressed point: 0x04, then x and y, 32 bytes each.
            let point = pair.public_key().as_ref();
            let (x, y) = point
                .get(1..33)
                .zip(point.get(33..65))
                .ok_or_else(|| "unexpected public key length".to_owned())?;
            let jwk = json!({
                "kty": "EC",
                "crv": "P-256",
                "x": URL_SAFE_NO_PAD.encode(x),
                "y": URL_SAFE_NO_PAD.encode(y),
            });
            Ok(Key {
                pair,
                pkcs8,
                jwk,
                rng,
            })
        }

        pub(super) fn stored(&self) -> String {
            STANDARD.encode(&self.pkcs8)
        }

        pub(super) fn proof(
            &self,
            method: &str,
            htu: &str,
            access_token: Option<&str>,
            nonce: Option<&str>,
        ) -> Result<String, String> {
            let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk});
            let jti = State::generate().map_err(|e| e.to_string())?;
            let iat = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            let mut claims = json!({"jti": jti.as_str(), "htm": method, "htu": htu, "iat": iat});
            if let Some(token) = access_token {
                claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
            }
            if let Some(nonce) = nonce {
                claims["nonce"] = json!(nonce);
            }
            let input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(claims.to_string())
            );
            let signature = self
                .pair
                .sign(&self.rng, input.as_bytes())
                .map_err(|_| "DPoP signing failed".to_owned())?;
            Ok(format!(
                "{input}.{}",
                URL_SAFE_NO_PAD.encode(signature.as_ref())
            ))
        }
    }
}

#[cfg(not(feature = "oauth-jwt"))]
mod imp {
    const OFF: &str = "DPoP needs the `oauth-jwt` feature of mcpflow";

    /// Never made: both constructors say the feature is off.
    #[allow(dead_code)]
    pub(super) struct Key;

    impl Key {
        pub(super) fn generate() -> Result<Key, String> {
            Err(OFF.to_owned())
        }

        pub(super) fn from_stored(_: &str) -> Result<Key, String> {
            Err(OFF.to_owned())
        }

        pub(super) fn stored(&self) -> String {
            String::new()
        }

        pub(super) fn proof(
            &self,
            _: &str,
            _: &str,
            _: Option<&str>,
            _: Option<&str>,
        ) -> Result<String, String> {
            Err(OFF.to_owned())
        }
    }
}

#[cfg(all(test, feature = "oauth-jwt"))]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use serde_json::Value;
    use sha2::{Digest, Sha256};

    fn decode(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("b64")).expect("json")
    }

    #[test]
    fn a_proof_is_a_signed_dpop_jwt_for_the_request_and_its_token() {
        let dpop = Dpop::generate().expect("key");
        let url = Url::parse("https://MCP.example.com:443/mcp?x=1#f").expect("url");
        let first = dpop.proof("POST", &url, Some("the-token")).expect("proof");
        let parts: Vec<&str> = first.split('.').collect();
        let (header, claims) = (decode(parts[0]), decode(parts[1]));
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"the-token"))
        );
        assert!(claims.get("nonce").is_none());
        let x = URL_SAFE_NO_PAD
            .decode(header["jwk"]["x"].as_str().expect("x"))
            .expect("x");
        let y = URL_SAFE_NO_PAD
            .decode(header["jwk"]["y"].as_str().expect("y"))
            .expect("y");
        let point: Vec<u8> = [&[4u8][..], &x, &y].concat();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(
                format!("{}.{}", parts[0], parts[1]).as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).expect("b64"),
            )
            .expect("the proof verifies with its own jwk");

        assert!(dpop.learn_nonce(&url, "n-1"));
        assert!(!dpop.learn_nonce(&url, "n-1"), "not new");
        let second = dpop.proof("GET", &url, None).expect("proof");
        let claims = decode(second.split('.').nth(1).expect("claims"));
        assert_eq!(claims["nonce"], "n-1");
        assert_ne!(
            claims["jti"],
            decode(parts[1])["jti"],
            "a new jti each time"
        );
        let other = Url::parse("https://as.example.com/token").expect("url");
        let claims = decode(
            dpop.proof("POST", &other, None)
                .expect("p")
                .split('.')
                .nth(1)
                .expect("c"),
        );
        assert!(claims.get("nonce").is_none(), "nonces are per origin");

        let again = Dpop::from_stored(&dpop.stored()).expect("stored key");
        let header = decode(
            again
                .proof("POST", &url, None)
                .expect("p")
                .split('.')
                .next()
                .expect("h"),
        );
        assert_eq!(header["jwk"], decode(parts[0])["jwk"], "the same key");
    }
}
