//! A small OAuth 2.1 authorization server for the tests, on a loopback port: RFC 8414
//! metadata, dynamic registration, an authorization endpoint that approves at once and
//! redirects with a code (and `iss`), a token endpoint that checks PKCE S256 and issues
//! opaque tokens for the requested `resource`, refresh, RFC 7662 introspection, and a
//! JWKS whose keys a test can swap. No network beyond 127.0.0.1.

#![allow(dead_code)] // each test binary uses a part

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use reqwest::Url;
use serde_json::{Value, json};

/// The subject every token of this server is issued to.
pub const SUBJECT: &str = "user-1";

#[derive(Default)]
struct Inner {
    codes: HashMap<String, Grant>,
    tokens: HashMap<String, Grant>,
    refresh: HashMap<String, Grant>,
    jwks: Value,
    next: u64,
    /// Every token request's `resource`, in order.
    resources: Vec<Option<String>>,
    /// How many authorization requests arrived.
    authorizations: u64,
    introspections: u64,
    jwks_fetches: u64,
}

#[derive(Clone, Debug)]
struct Grant {
    client_id: String,
    scope: String,
    resource: Option<String>,
    challenge: String,
    redirect_uri: String,
    /// The thumbprint of the DPoP key the tokens are bound to.
    jkt: Option<String>,
}

#[derive(Clone)]
struct Shared {
    issuer: String,
    inner: Arc<Mutex<Inner>>,
}

/// A running authorization server; stops when dropped.
pub struct AuthServer {
    pub issuer: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AuthServer {
    pub async fn start() -> AuthServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the authorization server");
        let issuer = format!("http://{}", listener.local_addr().expect("address"));
        let shared = Shared {
            issuer: issuer.clone(),
            inner: Arc::new(Mutex::new(Inner {
                jwks: json!({"keys": []}),
                ..Inner::default()
            })),
        };
        let app = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/introspect", post(introspect))
            .route("/jwks", get(jwks))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        AuthServer {
            issuer,
            shared,
            task,
        }
    }

    pub fn url(&self, path: &str) -> Url {
        format!("{}{path}", self.issuer).parse().expect("a URL")
    }

    /// Issue a token directly (as if a client had completed a flow).
    pub fn issue(&self, scope: &str, resource: Option<&str>) -> String {
        self.issue_bound(scope, resource, None)
    }

    /// [`issue`](Self::issue), bound to the DPoP key of thumbprint `jkt`.
    pub fn issue_bound(&self, scope: &str, resource: Option<&str>, jkt: Option<&str>) -> String {
        let mut inner = lock(&self.shared.inner);
        inner.next += 1;
        let token = format!("at-{}", inner.next);
        let grant = Grant {
            client_id: "direct".into(),
            scope: scope.into(),
            resource: resource.map(str::to_owned),
            challenge: String::new(),
            redirect_uri: String::new(),
            jkt: jkt.map(str::to_owned),
        };
        inner.tokens.insert(token.clone(), grant);
        token
    }

    pub fn set_jwks(&self, jwks: Value) {
        lock(&self.shared.inner).jwks = jwks;
    }

    pub fn jwks_fetches(&self) -> u64 {
        lock(&self.shared.inner).jwks_fetches
    }

    pub fn introspections(&self) -> u64 {
        lock(&self.shared.inner).introspections
    }

    pub fn authorizations(&self) -> u64 {
        lock(&self.shared.inner).authorizations
    }

    /// The `resource` of every token request so far.
    pub fn token_resources(&self) -> Vec<Option<String>> {
        lock(&self.shared.inner).resources.clone()
    }
}

fn form(text: &str) -> HashMap<String, String> {
    Url::parse(&format!("form:?{text}"))
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

fn json_reply(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn oauth_error(code: &str, description: &str) -> Response {
    let body = json!({"error": code, "error_description": description});
    json_reply(StatusCode::BAD_REQUEST, &body)
}

async fn metadata(State(s): State<Shared>) -> Response {
    let i = &s.issuer;
    json_reply(
        StatusCode::OK,
        &json!({
            "issuer": i,
            "authorization_endpoint": format!("{i}/authorize"),
            "token_endpoint": format!("{i}/token"),
            "registration_endpoint": format!("{i}/register"),
            "introspection_endpoint": format!("{i}/introspect"),
            "jwks_uri": format!("{i}/jwks"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": true,
        }),
    )
}

async fn register(State(s): State<Shared>, body: Bytes) -> Response {
    let Ok(Value::Object(mut client)) = serde_json::from_slice::<Value>(&body) else {
        return oauth_error("invalid_client_metadata", "not a JSON object");
    };
    let n = {
        let mut inner = lock(&s.inner);
        inner.next += 1;
        inner.next
    };
    client.insert("client_id".into(), json!(format!("client-{n}")));
    client.insert("client_secret".into(), json!(format!("secret-{n}")));
    client.insert("client_id_issued_at".into(), json!(0));
    json_reply(StatusCode::CREATED, &Value::Object(client))
}

/// Approves at once: 302 to the redirect URI with the code, `state` and `iss`.
async fn authorize(State(s): State<Shared>, RawQuery(query): RawQuery) -> Response {
    let q = form(query.as_deref().unwrap_or(""));
    let (Some(client_id), Some(redirect_uri), Some(challenge)) = (
        q.get("client_id"),
        q.get("redirect_uri"),
        q.get("code_challenge"),
    ) else {
        return oauth_error(
            "invalid_request",
            "client_id, redirect_uri and code_challenge are required",
        );
    };
    if q.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return oauth_error("invalid_request", "PKCE S256 is required");
    }
    let mut inner = lock(&s.inner);
    inner.authorizations += 1;
    inner.next += 1;
    let code = format!("code-{}", inner.next);
    inner.codes.insert(
        code.clone(),
        Grant {
            client_id: client_id.clone(),
            scope: q.get("scope").cloned().unwrap_or_default(),
            resource: q.get("resource").cloned(),
            challenge: challenge.clone(),
            redirect_uri: redirect_uri.clone(),
            jkt: None,
        },
    );
    let Ok(mut target) = Url::parse(redirect_uri) else {
        return oauth_error("invalid_request", "redirect_uri is not a URL");
    };
    target
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("iss", &s.issuer);
    if let Some(state) = q.get("state") {
        target.query_pairs_mut().append_pair("state", state);
    }
    (StatusCode::FOUND, [("location", target.to_string())]).into_response()
}

/// The RFC 7638 thumbprint of the P-256 key in a DPoP proof's header (the proof is
/// not checked here: the resource server is the judge in these tests).
pub fn proof_thumbprint(proof: &str) -> Option<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(proof.split('.').next()?).ok()?).ok()?;
    let jwk = &header["jwk"];
    let canonical = format!(
        r#"{{"crv":"{}","kty":"{}","x":"{}","y":"{}"}}"#,
        jwk["crv"].as_str()?,
        jwk["kty"].as_str()?,
        jwk["x"].as_str()?,
        jwk["y"].as_str()?
    );
    // base64url(SHA-256(text)), as PKCE's S256 challenge is.
    Some(mcpflow::auth::pkce::s256_challenge(&canonical))
}

async fn token(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let f = form(&String::from_utf8_lossy(&body));
    let jkt = headers
        .get("dpop")
        .and_then(|v| v.to_str().ok())
        .and_then(proof_thumbprint);
    let mut inner = lock(&s.inner);
    inner.resources.push(f.get("resource").cloned());
    let grant = match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some(grant) = f.get("code").and_then(|c| inner.codes.remove(c)) else {
                return oauth_error("invalid_grant", "unknown code");
            };
            let verifier = f.get("code_verifier").map(String::as_str).unwrap_or("");
            if mcpflow::auth::pkce::s256_challenge(verifier) != grant.challenge {
                return oauth_error("invalid_grant", "PKCE verifier mismatch");
            }
            if f.get("redirect_uri") != Some(&grant.redirect_uri) {
                return oauth_error("invalid_grant", "redirect_uri mismatch");
            }
            grant
        }
        Some("refresh_token") => {
            let Some(grant) = f.get("refresh_token").and_then(|r| inner.refresh.remove(r)) else {
                return oauth_error("invalid_grant", "unknown refresh token");
            };
            grant
        }
        _ => {
            return oauth_error(
                "unsupported_grant_type",
                "authorization_code or refresh_token",
            );
        }
    };
    let mut grant = grant;
    // RFC 8707: the token is for the resource named in the token request, else the
    // one named when authorizing.
    if let Some(resource) = f.get("resource") {
        grant.resource = Some(resource.clone());
    }
    if jkt.is_some() {
        grant.jkt = jkt;
    }
    inner.next += 1;
    let access = format!("at-{}", inner.next);
    let refresh = format!("rt-{}", inner.next);
    inner.tokens.insert(access.clone(), grant.clone());
    inner.refresh.insert(refresh.clone(), grant.clone());
    json_reply(
        StatusCode::OK,
        &json!({
            "access_token": access,
            "token_type": if grant.jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": 3600,
            "scope": grant.scope,
            "refresh_token": refresh,
        }),
    )
}

async fn introspect(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let _ = headers;
    let f = form(&String::from_utf8_lossy(&body));
    let mut inner = lock(&s.inner);
    inner.introspections += 1;
    let Some(grant) = f.get("token").and_then(|t| inner.tokens.get(t)).cloned() else {
        return json_reply(StatusCode::OK, &json!({"active": false}));
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut answer = json!({
        "active": true,
        "sub": SUBJECT,
        "iss": s.issuer,
        "client_id": grant.client_id,
        "scope": grant.scope,
        "exp": now + 3600,
    });
    if let Some(resource) = grant.resource {
        answer["aud"] = json!(resource);
    }
    if let Some(jkt) = grant.jkt {
        answer["token_type"] = json!("DPoP");
        answer["cnf"] = json!({"jkt": jkt});
    }
    json_reply(StatusCode::OK, &answer)
}

async fn jwks(State(s): State<Shared>) -> Response {
    let mut inner = lock(&s.inner);
    inner.jwks_fetches += 1;
    json_reply(StatusCode::OK, &inner.jwks.clone())
}
