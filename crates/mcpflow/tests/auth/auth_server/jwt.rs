//! JWT access tokens (feature `jwt`): signature, expiry, issuer and audience checks,
//! and key rotation with a bounded refetch of the JWKS.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcpflow::http::server::auth::JwtVerifier;

use super::*;

/// Two P-256 keys made for these tests: PKCS#8 DER, and the public point.
const KEYS: [(&str, &str, &str); 2] = [
    (
        "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg7oAqmpvkIs4GvOft6VxgVzM97U0hT+7k8Ezt1iZN39qhRANCAAR7eLWFgubQNoghZcaFGuKGVAz0kqcr2DZraNg5AxSriGKhyRbyr0s0sXyVUfJKoBqdFM16mZScbX5lvHhfBvsn",
        "e3i1hYLm0DaIIWXGhRrihlQM9JKnK9g2a2jYOQMUq4g",
        "YqHJFvKvSzSxfJVR8kqgGp0UzXqZlJxtfmW8eF8G-yc",
    ),
    (
        "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgN0YoQ5q/weC0GeT8vyKHOe8TiVKRc7FX77wZieg7ycChRANCAARX3DJEERA8/v1FeN9c/2RHDESZVhotvWL6Jmz6TR1GjyLpCjnFC/DJnlcrgPL3Uk2T0MM5aPC+u90MjRP4d9vm",
        "V9wyRBEQPP79RXjfXP9kRwxEmVYaLb1i-iZs-k0dRo8",
        "IukKOcUL8MmeVyuA8vdSTZPQwzlo8L673QyNE_h32-Y",
    ),
];

fn jwk(key: usize, kid: &str) -> Value {
    json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
        "x": KEYS[key].1, "y": KEYS[key].2})
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

fn sign(key: usize, kid: &str, claims: &Value) -> String {
    let der = STANDARD.decode(KEYS[key].0).expect("base64");
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&der)).expect("sign")
}

fn claims(issuer: &str, audience: &str, exp: u64) -> Value {
    json!({"iss": issuer, "aud": audience, "sub": "jwt-user", "exp": exp,
        "scope": "mcp:read mcp:admin", "client_id": "jwt-client"})
}

#[tokio::test]
async fn jwt_tokens_are_checked_for_signature_expiry_issuer_and_audience() {
    let authz = AuthServer::start().await;
    authz.set_jwks(json!({"keys": [jwk(0, "k1")]}));
    let verifier = JwtVerifier::new(authz.issuer.clone(), authz.url("/jwks"), RESOURCE);
    let router = router(auth(verifier));
    let good = sign(0, "k1", &claims(&authz.issuer, RESOURCE, now() + 600));
    let session = open(&router, &good).await;
    let response = post(&router, Some(&good), Some(&session), call(2, "whoami")).await;
    let who = whoami_answer(response).await;
    assert_eq!(who["subject"], "jwt-user");
    assert_eq!(who["client_id"], "jwt-client");
    assert_eq!(who["scopes"], json!(["mcp:admin", "mcp:read"]));

    let refused = [
        (
            "expired",
            sign(0, "k1", &claims(&authz.issuer, RESOURCE, now() - 600)),
        ),
        (
            "foreign audience",
            sign(
                0,
                "k1",
                &claims(&authz.issuer, "http://localhost/other", now() + 600),
            ),
        ),
        (
            "foreign issuer",
            sign(0, "k1", &claims("http://evil", RESOURCE, now() + 600)),
        ),
        (
            "signed by an unpublished key",
            sign(1, "k1", &claims(&authz.issuer, RESOURCE, now() + 600)),
        ),
        ("not a JWT", "a.b.c".to_owned()),
    ];
    for (what, token) in refused {
        let response = initialize_as(&router, &token).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}");
        assert_eq!(
            challenge(&response).error.as_deref(),
            Some("invalid_token"),
            "{what}"
        );
    }
    assert_eq!(authz.jwks_fetches(), 1, "the key set is kept");
}

#[tokio::test]
async fn a_rotated_key_set_is_fetched_again_for_an_unknown_key_id() {
    let authz = AuthServer::start().await;
    authz.set_jwks(json!({"keys": [jwk(0, "k1")]}));
    let verifier = JwtVerifier::new(authz.issuer.clone(), authz.url("/jwks"), RESOURCE)
        .refetch_interval(Duration::ZERO);
    let router = router(auth(verifier));
    let old = sign(0, "k1", &claims(&authz.issuer, RESOURCE, now() + 600));
    open(&router, &old).await;
    assert_eq!(authz.jwks_fetches(), 1);

    authz.set_jwks(json!({"keys": [jwk(1, "k2")]}));
    let new = sign(1, "k2", &claims(&authz.issuer, RESOURCE, now() + 600));
    open(&router, &new).await;
    assert_eq!(
        authz.jwks_fetches(),
        2,
        "an unknown kid fetched the set again"
    );
    let response = initialize_as(&router, &old).await;
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "the withdrawn key is gone"
    );
}

#[tokio::test]
async fn unknown_key_ids_do_not_refetch_more_than_once_per_interval() {
    let authz = AuthServer::start().await;
    authz.set_jwks(json!({"keys": [jwk(0, "k1")]}));
    let verifier = JwtVerifier::new(authz.issuer.clone(), authz.url("/jwks"), RESOURCE)
        .refetch_interval(Duration::from_secs(3600));
    let router = router(auth(verifier));
    open(
        &router,
        &sign(0, "k1", &claims(&authz.issuer, RESOURCE, now() + 600)),
    )
    .await;
    for n in 0..5 {
        let forged = sign(
            1,
            &format!("forged-{n}"),
            &claims(&authz.issuer, RESOURCE, now() + 600),
        );
        let response = initialize_as(&router, &forged).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    assert_eq!(
        authz.jwks_fetches(),
        1,
        "forged key ids cannot make it hammer the issuer"
    );
}
