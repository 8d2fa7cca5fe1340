//! `private_key_jwt` client assertions (RFC 7523 §2.2): a short-lived ES256 JWT naming
//! the client as issuer and subject and the authorization server as audience.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;

use super::pkce::State;
use super::token::EndpointError;

/// How long an assertion is valid: one token request.
const LIFETIME_SECS: u64 = 300;

/// The assertion for `client_id` at the authorization server `audience` (its issuer),
/// signed with the PKCS#8 PEM P-256 key `pem`.
pub(crate) fn client_assertion(
    client_id: &str,
    audience: &str,
    pem: &str,
) -> Result<String, EndpointError> {
    let fail = |what: &str| EndpointError::Assertion(what.to_owned());
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
        .collect();
    if !pem.contains("BEGIN PRIVATE KEY") {
        return Err(fail("the key is not a PKCS#8 PEM (BEGIN PRIVATE KEY)"));
    }
    let der = STANDARD
        .decode(body)
        .map_err(|_| fail("the PEM body is not base64"))?;
    let rng = SystemRandom::new();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der)
        .map_err(|e| fail(&format!("not a P-256 key: {e}")))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let jti = State::generate().map_err(|e| fail(&e.to_string()))?;
    let header = json!({"alg": "ES256", "typ": "JWT"});
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME_SECS,
        "jti": jti.as_str(),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key
        .sign(&rng, signing_input.as_bytes())
        .map_err(|_| fail("signing failed"))?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature.as_ref())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, KeyPair, UnparsedPublicKey};

    #[test]
    fn signs_a_verifiable_es256_assertion() {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("generate");
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        let jwt = client_assertion("client-1", "https://as.example", &pem).expect("assertion");
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
            .expect("key");
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key().as_ref());
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("b64");
        public
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies");
        assert!(client_assertion("c", "a", "-----BEGIN EC PRIVATE KEY-----\nAAAA\n").is_err());
    }
}
