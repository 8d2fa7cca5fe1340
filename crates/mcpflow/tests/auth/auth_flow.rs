//! The OAuth client flow end to end against a local resource server and authorization
//! server written for these tests (one loopback origin, no network): each token endpoint
//! authentication method, each kind of registration, PKCE and resource indicators,
//! step-up and its limit, refresh, a resource mismatch, the RFC 9207 `iss` checks, an
//! authorization-server change, client credentials, and that no token or secret ever
//! reaches a log line, an error message or `Debug` output.

use crate::common;
#[path = "auth_flow/server.rs"]
mod server;

use common::bounded;
use mcpflow::auth::{
    ClientRegistration, EnterpriseIdp, HeadlessRedirect, LoopbackRedirect, OAuthConfig, Secret,
    UserAuthorization,
};
use mcpflow::client::Client;
use mcpflow::http::client::HttpClientTransport;
use serde_json::json;
use server::{MARK, Servers, Setup};

/// The error of a result that must be one.
trait Refused {
    fn refused(self, what: &str) -> String;
}

impl<T, E: std::fmt::Display> Refused for Result<T, E> {
    fn refused(self, what: &str) -> String {
        match self {
            Ok(_) => panic!("{what}: expected an error"),
            Err(e) => e.to_string(),
        }
    }
}

fn code_flow() -> OAuthConfig {
    let user = HeadlessRedirect::new("http://127.0.0.1:9/callback".parse().expect("url"))
        .expect("headless");
    OAuthConfig::authorization_code(user).client_name("auth-flow-test")
}

async fn connect(servers: &Servers, config: OAuthConfig) -> Result<Client, String> {
    let transport = HttpClientTransport::builder(servers.mcp())
        .oauth(config)
        .build()
        .expect("transport");
    bounded(
        "connect",
        Client::builder("auth-flow", "1").connect(transport),
    )
    .await
    .map_err(|e| e.to_string())
}

async fn list_and_call(client: &Client) -> Result<(), String> {
    bounded("tools/list", client.list_all_tools())
        .await
        .map_err(|e| e.to_string())?;
    let result = bounded("tools/call", client.call_tool("t", json!({})))
        .await
        .map_err(|e| e.to_string())?;
    assert!(!result.is_error());
    Ok(())
}

#[tokio::test]
async fn public_client_registers_and_uses_pkce_resource_and_state() {
    let servers = Servers::start(Setup::default()).await;
    let client = connect(&servers, code_flow()).await.expect("connect");
    list_and_call(&client).await.expect("authorized calls");
    bounded("close", client.close()).await;
    servers.with(|seen| {
        assert_eq!(seen.register.len(), 1);
        assert_eq!(seen.register[0]["token_endpoint_auth_method"], "none");
        let asked = &seen.authorize[0];
        assert_eq!(asked["code_challenge_method"], "S256");
        assert_eq!(asked["resource"], format!("{}/mcp", servers.base));
        assert_eq!(asked["client_id"], "dcr");
        assert!(
            !asked.contains_key("scope"),
            "no challenge scope, none in the PRM"
        );
        let (form, auth) = &seen.token[0];
        assert_eq!(form["grant_type"], "authorization_code");
        assert_eq!(form["resource"], format!("{}/mcp", servers.base));
        assert_eq!(form["client_id"], "dcr");
        assert!(form["code_verifier"].len() >= 43);
        assert!(!form.contains_key("client_secret") && auth.is_none());
        assert!(
            seen.bearer_methods.iter().any(|m| m == "DELETE true"),
            "DELETE carries the token: {:?}",
            seen.bearer_methods
        );
    });
}

#[tokio::test]
async fn secret_methods_basic_and_post() {
    for (method, basic) in [("client_secret_basic", true), ("client_secret_post", false)] {
        let servers = Servers::start(Setup {
            auth_methods: vec![method],
            ..Setup::default()
        })
        .await;
        let client = connect(&servers, code_flow()).await.expect(method);
        list_and_call(&client).await.expect(method);
        servers.with(|seen| {
            assert_eq!(seen.register[0]["token_endpoint_auth_method"], method);
            let (form, auth) = &seen.token[0];
            if basic {
                use base64::Engine as _;
                let expected =
                    base64::engine::general_purpose::STANDARD.encode(format!("dcr:cs-{MARK}"));
                assert_eq!(auth.as_deref(), Some(format!("Basic {expected}").as_str()));
                assert!(!form.contains_key("client_secret"));
            } else {
                assert!(auth.is_none());
                assert_eq!(form["client_secret"], format!("cs-{MARK}"));
            }
        });
    }
}

#[tokio::test]
async fn pre_registered_and_metadata_document_clients_do_not_register() {
    let servers = Servers::start(Setup {
        registration: false,
        auth_methods: vec!["client_secret_basic"],
        ..Setup::default()
    })
    .await;
    let config = code_flow().pre_registered(
        Some(&servers.issuer()),
        ClientRegistration::confidential("pre", "pre-secret"),
    );
    let client = connect(&servers, config).await.expect("pre-registered");
    list_and_call(&client).await.expect("calls");
    servers.with(|seen| {
        assert_eq!(seen.authorize[0]["client_id"], "pre");
        assert!(
            seen.token[0]
                .1
                .as_deref()
                .is_some_and(|a| a.starts_with("Basic "))
        );
    });

    let servers = Servers::start(Setup {
        cimd: true,
        ..Setup::default()
    })
    .await;
    let url = "https://client.example/metadata.json";
    let client = connect(&servers, code_flow().client_metadata_url(url))
        .await
        .expect("cimd");
    list_and_call(&client).await.expect("calls");
    servers.with(|seen| {
        assert!(seen.register.is_empty());
        assert_eq!(seen.authorize[0]["client_id"], url);
        assert_eq!(seen.token[0].0["client_id"], url);
    });
}

#[tokio::test]
async fn refuses_without_s256_and_on_resource_mismatch() {
    let servers = Servers::start(Setup {
        pkce: false,
        ..Setup::default()
    })
    .await;
    let error = connect(&servers, code_flow()).await.refused("refused");
    assert!(
        error.contains("code_challenge_methods_supported") || error.contains("PKCE"),
        "{error}"
    );
    servers.with(|seen| assert!(seen.authorize.is_empty()));

    let servers = Servers::start(Setup {
        prm_resource: Some("https://evil.example.com/mcp".into()),
        ..Setup::default()
    })
    .await;
    let error = connect(&servers, code_flow()).await.refused("refused");
    assert!(error.contains("evil.example.com"), "{error}");
    servers.with(|seen| assert!(seen.authorize.is_empty() && seen.token.is_empty()));
}

#[tokio::test]
async fn iss_is_checked_before_the_code_is_used() {
    let cases = [
        (true, Some(""), true),
        (false, None, true),
        (true, None, false),
        (true, Some("https://attacker.example"), false),
        (false, Some("https://attacker.example"), false),
    ];
    for (advertised, iss, works) in cases {
        let servers = Servers::start(Setup {
            iss_advertised: advertised,
            iss: iss.map(str::to_owned),
            ..Setup::default()
        })
        .await;
        let result = connect(&servers, code_flow()).await;
        assert_eq!(
            result.is_ok(),
            works,
            "advertised {advertised}, iss {iss:?}"
        );
        servers.with(|seen| {
            assert_eq!(seen.authorize.len(), 1);
            assert_eq!(seen.token.len(), usize::from(works));
        });
    }
}

#[tokio::test]
async fn a_configured_scope_replaces_the_challenges_and_step_up_adds_to_it() {
    let servers = Servers::start(Setup {
        challenge_scope: Some("read"),
        call_scope: Some("write"),
        ..Setup::default()
    })
    .await;
    let config = code_flow().scope("profile");
    let client = connect(&servers, config).await.expect("connect");
    list_and_call(&client).await.expect("step-up");
    servers.with(|seen| {
        let scopes: Vec<_> = seen.authorize.iter().map(|q| q["scope"].clone()).collect();
        assert_eq!(scopes, ["profile", "profile write"]);
    });
}

#[tokio::test]
async fn step_up_asks_for_the_union_and_stops_at_the_limit() {
    let servers = Servers::start(Setup {
        challenge_scope: Some("read"),
        call_scope: Some("write"),
        ..Setup::default()
    })
    .await;
    let client = connect(&servers, code_flow()).await.expect("connect");
    list_and_call(&client).await.expect("step-up");
    servers.with(|seen| {
        let scopes: Vec<_> = seen.authorize.iter().map(|q| q["scope"].clone()).collect();
        assert_eq!(scopes, ["read", "read write"]);
    });

    // `never` is never granted, so every call is refused: bounded attempts, then an error.
    let servers = Servers::start(Setup {
        challenge_scope: Some("read"),
        call_scope: Some("never"),
        ..Setup::default()
    })
    .await;
    let client = connect(&servers, code_flow().max_attempts(3))
        .await
        .expect("connect");
    bounded("tools/list", client.list_all_tools())
        .await
        .expect("list");
    let error = bounded("tools/call", client.call_tool("t", json!({})))
        .await
        .refused("refused at the limit");
    let authorizations = servers.with(|seen| {
        format!(
            "{:?} {:?}",
            seen.authorize
                .iter()
                .map(|q| q.get("scope").cloned())
                .collect::<Vec<_>>(),
            seen.bearer_methods
        )
    });
    assert!(
        error.to_string().contains("attempts")
            && error
                .to_string()
                .contains("the server said: insufficient_scope"),
        "the limit, and the server's reason: {error} after {authorizations}"
    );
    // One authorization for the first 401, then three step-ups for the call.
    servers.with(|seen| assert_eq!(seen.authorize.len(), 4, "{authorizations}"));
}

#[tokio::test]
async fn refreshes_instead_of_authorizing_again() {
    let servers = Servers::start(Setup {
        refresh_tokens: true,
        ..Setup::default()
    })
    .await;
    let client = connect(&servers, code_flow()).await.expect("connect");
    // Every access token is revoked: the next request is refused and refreshed.
    servers.with(|seen| seen.tokens.clear());
    list_and_call(&client).await.expect("after refresh");
    servers.with(|seen| {
        assert_eq!(seen.authorize.len(), 1, "no second authorization");
        let asked = &seen.authorize[0];
        assert!(
            asked["scope"].split(' ').any(|s| s == "offline_access"),
            "{asked:?}"
        );
        assert_eq!(
            asked.get("prompt").map(String::as_str),
            Some("consent"),
            "offline_access is asked with consent (OIDC Core §11)"
        );
        let grants: Vec<_> = seen
            .token
            .iter()
            .map(|(f, _)| f["grant_type"].clone())
            .collect();
        assert_eq!(grants, ["authorization_code", "refresh_token"]);
        assert_eq!(seen.token[1].0["resource"], format!("{}/mcp", servers.base));
    });
}

#[tokio::test]
async fn a_new_authorization_server_means_a_new_registration() {
    let servers = Servers::start(Setup::default()).await;
    let client = connect(&servers, code_flow()).await.expect("connect");
    servers.setup.lock().expect("setup").issuer_path = "/as2".into();
    servers.with(|seen| seen.tokens.clear());
    list_and_call(&client).await.expect("after the move");
    servers.with(|seen| {
        assert_eq!(seen.register.len(), 2, "registered again at the new issuer");
        assert_eq!(seen.authorize[1]["client_id"], "dcr/as2");
        assert!(
            seen.token
                .iter()
                .all(|(f, _)| f["grant_type"] != "refresh_token")
        );
    });
}

#[tokio::test]
async fn client_credentials_grant() {
    let servers = Servers::start(Setup {
        auth_methods: vec!["client_secret_basic"],
        challenge_scope: Some("read"),
        ..Setup::default()
    })
    .await;
    let config = OAuthConfig::client_credentials(ClientRegistration::confidential("m2m", "x"));
    let client = connect(&servers, config).await.expect("connect");
    list_and_call(&client).await.expect("calls");
    servers.with(|seen| {
        assert!(seen.authorize.is_empty() && seen.register.is_empty());
        let (form, auth) = &seen.token[0];
        assert_eq!(form["grant_type"], "client_credentials");
        assert_eq!(form["scope"], "read");
        assert_eq!(form["resource"], format!("{}/mcp", servers.base));
        assert!(auth.as_deref().is_some_and(|a| a.starts_with("Basic ")));
    });
}

#[tokio::test]
async fn enterprise_managed_authorization_trades_the_id_token_for_a_jwt_bearer_grant() {
    let servers = Servers::start(Setup {
        auth_methods: vec!["client_secret_basic"],
        challenge_scope: Some("read"),
        ..Setup::default()
    })
    .await;
    let idp = EnterpriseIdp::new(
        format!("{}/idp/token", servers.base).parse().expect("URL"),
        Secret::new(format!("id-token-{MARK}")),
    )
    .client_id("agent-at-idp");
    let config = OAuthConfig::enterprise(ClientRegistration::confidential("agent", "x"), idp);
    let client = connect(&servers, config).await.expect("connect");
    list_and_call(&client).await.expect("calls");
    servers.with(|seen| {
        assert!(
            seen.authorize.is_empty() && seen.register.is_empty(),
            "no browser step, no registration"
        );
        let exchange = &seen.idp[0];
        assert_eq!(
            exchange["grant_type"],
            "urn:ietf:params:oauth:grant-type:token-exchange"
        );
        assert_eq!(exchange["subject_token"], format!("id-token-{MARK}"));
        assert_eq!(
            exchange["subject_token_type"],
            "urn:ietf:params:oauth:token-type:id_token"
        );
        assert_eq!(
            exchange["requested_token_type"],
            "urn:ietf:params:oauth:token-type:id-jag"
        );
        assert_eq!(exchange["audience"], servers.issuer());
        assert_eq!(exchange["resource"], format!("{}/mcp", servers.base));
        assert_eq!(exchange["client_id"], "agent-at-idp");
        let (form, auth) = &seen.token[0];
        assert_eq!(
            form["grant_type"],
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        );
        assert_eq!(form["assertion"], format!("jag-{MARK}"));
        assert_eq!(form["resource"], format!("{}/mcp", servers.base));
        assert!(auth.as_deref().is_some_and(|a| a.starts_with("Basic ")));
    });
}

/// Every log line at every level (this test's runtime is single-threaded, so the
/// thread-local subscriber sees every task), every error and every `Debug` output of a
/// run with registration, refresh, step-up and a refused `iss`: no token or secret.
#[tokio::test]
async fn tokens_and_secrets_never_reach_logs_errors_or_debug() {
    let (captured, _guard) = common::logs::capture();
    let mut shown = Vec::new();

    let servers = Servers::start(Setup {
        auth_methods: vec!["client_secret_basic"],
        refresh_tokens: true,
        challenge_scope: Some("read"),
        call_scope: Some("write"),
        ..Setup::default()
    })
    .await;
    let config = code_flow().pre_registered(
        Some(&servers.issuer()),
        ClientRegistration::confidential("pre", format!("pre-{MARK}")),
    );
    shown.push(format!("{config:?}"));
    let builder = HttpClientTransport::builder(servers.mcp()).oauth(config);
    shown.push(format!("{builder:?}"));
    let transport = builder.build().expect("transport");
    shown.push(format!("{transport:?}"));
    let client = bounded(
        "connect",
        Client::builder("redaction", "1").connect(transport),
    )
    .await
    .expect("connect");
    servers.with(|seen| seen.tokens.clear());
    list_and_call(&client).await.expect("refresh and step-up");
    servers.with(|seen| {
        assert!(
            seen.token.len() >= 3,
            "code, refresh and step-up token requests"
        );
        assert!(
            seen.token
                .iter()
                .any(|(f, _)| f["grant_type"] == "refresh_token")
        );
    });
    // Every secret was used on the wire: the checks below can fail.
    bounded("close", client.close()).await;

    // A refused `iss`, and a token endpoint that rejects the refresh token.
    let servers = Servers::start(Setup {
        iss_advertised: true,
        ..Setup::default()
    })
    .await;
    shown.push(connect(&servers, code_flow()).await.refused("iss refused"));

    let text = captured.text();
    assert!(text.contains("OAuth"), "the capture works: {text}");
    shown.push(text);
    for output in &shown {
        assert!(!output.contains(MARK), "a secret leaked into: {output}");
    }
}

/// The browser flow: the "browser" follows the authorization URL with redirects, and the
/// one-shot loopback listener receives the code.
#[tokio::test]
async fn loopback_redirect_receives_the_code() {
    let servers = Servers::start(Setup::default()).await;
    let user = LoopbackRedirect::bind(0, std::time::Duration::from_secs(10), |url| {
        let url = url.clone();
        tokio::spawn(async move {
            let _ = reqwest::get(url).await;
        });
        Ok(())
    })
    .await
    .expect("bind the loopback listener");
    let redirect = user.redirect_uri();
    assert_eq!(redirect.host_str(), Some("127.0.0.1"));
    let client = connect(&servers, OAuthConfig::authorization_code(user))
        .await
        .expect("connect");
    list_and_call(&client).await.expect("calls");
    servers.with(|seen| {
        assert_eq!(seen.authorize[0]["redirect_uri"], redirect.as_str());
        assert_eq!(seen.token[0].0["redirect_uri"], redirect.as_str());
    });
}

/// `private_key_jwt`: the token request carries a signed assertion and no secret.
#[cfg(feature = "oauth-jwt")]
#[tokio::test]
async fn private_key_jwt_sends_an_assertion() {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    use base64::Engine as _;
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
    );
    let servers = Servers::start(Setup {
        auth_methods: vec!["private_key_jwt"],
        ..Setup::default()
    })
    .await;
    let config =
        OAuthConfig::client_credentials(ClientRegistration::private_key_jwt("m2m", pem.clone()));
    assert!(!format!("{config:?}").contains(pem.lines().nth(1).expect("body")));
    let client = connect(&servers, config).await.expect("connect");
    list_and_call(&client).await.expect("calls");
    servers.with(|seen| {
        let (form, auth) = &seen.token[0];
        assert_eq!(
            form["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        );
        assert_eq!(form["client_assertion"].split('.').count(), 3);
        assert!(auth.is_none() && !form.contains_key("client_secret"));
    });
}
