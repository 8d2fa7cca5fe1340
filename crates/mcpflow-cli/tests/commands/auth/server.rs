//! A protected MCP endpoint and its authorization server on one loopback origin, run on
//! a runtime of their own while the test drives the `mcpflow` binary, and recording
//! what they saw.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use reqwest::Url;
use serde_json::{Value, json};

/// Marks every token the server issues, so the tests can look for it in the output.
pub const MARK: &str = "SeCrEt";

/// The machine client the token endpoint knows, `id:secret` (the secret marked too).
pub const M2M_CREDENTIALS: &str = "m2m:m2m-SeCrEt";

/// The workload identity token the token endpoint takes as a JWT bearer assertion.
pub const WORKLOAD_TOKEN: &str = "wif-SeCrEt-token";

/// What the servers saw.
#[derive(Default)]
pub struct Seen {
    /// Requests to the authorization endpoint (each one a user step).
    pub authorize: u32,
    /// The `scope` of the last authorization request.
    pub scope: Option<String>,
    /// The `grant_type` of each token request.
    pub grants: Vec<String>,
    /// Access tokens the endpoint accepts.
    pub tokens: HashSet<String>,
    /// Refresh tokens the token endpoint accepts.
    pub refresh: HashSet<String>,
    counter: u32,
}

pub struct Servers {
    pub base: String,
    seen: Arc<Mutex<Seen>>,
    // Dropped last: stops the server.
    _runtime: tokio::runtime::Runtime,
}

fn pairs(text: &str) -> HashMap<String, String> {
    Url::parse(&format!("http://x/?{text}"))
        .expect("query")
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn reply(status: u16, headers: &[(&str, String)], body: String) -> Response {
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(*name, value);
    }
    builder.body(Body::from(body)).expect("response")
}

impl Servers {
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(10),
                    tokio::net::TcpListener::bind("127.0.0.1:0"),
                )
                .await
            })
            .expect("bind in time")
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (k, b) = (seen.clone(), base.clone());
        let app = Router::new().fallback(move |request: Request| {
            let (seen, base) = (k.clone(), b.clone());
            async move { handle(request, &seen, &base).await }
        });
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            base,
            seen,
            _runtime: runtime,
        }
    }

    pub fn mcp(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut Seen) -> T) -> T {
        f(&mut self.seen.lock().expect("seen"))
    }
}

fn issue(seen: &mut Seen) -> Response {
    seen.counter += 1;
    let access = format!("at-{MARK}-{}", seen.counter);
    let refresh = format!("rt-{MARK}-{}", seen.counter);
    seen.tokens.insert(access.clone());
    seen.refresh.insert(refresh.clone());
    let doc = json!({"access_token": access, "refresh_token": refresh, "token_type": "Bearer", "expires_in": 3600, "scope": "read"});
    reply(200, &[], doc.to_string())
}

async fn handle(request: Request, seen: &Mutex<Seen>, base: &str) -> Response {
    let (method, uri, headers) = (
        request.method().clone(),
        request.uri().clone(),
        request.headers().clone(),
    );
    let body = axum::body::to_bytes(request.into_body(), 1 << 20)
        .await
        .expect("body");
    let body = String::from_utf8_lossy(&body).into_owned();
    let path = uri.path();
    let prm_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    let mut seen = seen.lock().expect("seen");
    match path {
        "/.well-known/oauth-protected-resource/mcp" => {
            let doc = json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]});
            return reply(200, &[], doc.to_string());
        }
        "/.well-known/oauth-authorization-server" => {
            let doc = json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                "code_challenge_methods_supported": ["S256"],
                "scopes_supported": ["read"],
            });
            return reply(200, &[], doc.to_string());
        }
        "/authorize" => {
            let query = pairs(uri.query().unwrap_or_default());
            assert_eq!(query["code_challenge_method"], "S256");
            let mut to = Url::parse(&query["redirect_uri"]).expect("redirect_uri");
            to.query_pairs_mut()
                .append_pair("code", "the-code")
                .append_pair("state", &query["state"]);
            seen.authorize += 1;
            seen.scope = query.get("scope").cloned();
            return reply(302, &[("location", to.to_string())], String::new());
        }
        "/token" => {
            let form = pairs(&body);
            seen.grants.push(form["grant_type"].clone());
            let good = match form["grant_type"].as_str() {
                "authorization_code" => {
                    form.get("code").map(String::as_str) == Some("the-code")
                        && form.contains_key("code_verifier")
                }
                "refresh_token" => seen.refresh.remove(&form["refresh_token"]),
                "client_credentials" => {
                    let basic = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Basic "))
                        .and_then(|b| {
                            use base64::Engine as _;
                            base64::engine::general_purpose::STANDARD.decode(b).ok()
                        })
                        .map(|b| String::from_utf8_lossy(&b).into_owned());
                    let posted = form
                        .get("client_id")
                        .zip(form.get("client_secret"))
                        .map(|(id, secret)| format!("{id}:{secret}"));
                    basic.or(posted).as_deref() == Some(M2M_CREDENTIALS)
                }
                "urn:ietf:params:oauth:grant-type:jwt-bearer" => {
                    form.get("assertion").map(String::as_str) == Some(WORKLOAD_TOKEN)
                }
                _ => false,
            };
            if !good {
                return reply(400, &[], json!({"error": "invalid_grant"}).to_string());
            }
            return issue(&mut seen);
        }
        "/register" => {
            let doc = json!({"client_id": "dcr-client", "token_endpoint_auth_method": "none"});
            return reply(201, &[], doc.to_string());
        }
        "/mcp" => {}
        _ => return reply(404, &[], String::new()),
    }
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !token.is_some_and(|t| seen.tokens.contains(t)) {
        let challenge = format!("Bearer resource_metadata=\"{prm_url}\"");
        return reply(401, &[("www-authenticate", challenge)], String::new());
    }
    if method != axum::http::Method::POST {
        let status = if method == "DELETE" { 200 } else { 405 };
        return reply(status, &[], String::new());
    }
    let message: Value = serde_json::from_str(&body).expect("JSON-RPC");
    let Some(id) = message.get("id").cloned() else {
        return reply(202, &[], String::new());
    };
    let answer = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "protected", "version": "1"},
        }}),
        "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": {
            "tools": [{"name": "guarded_tool", "inputSchema": {"type": "object"}}]
        }}),
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        "tools/call" => json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": "guarded result"}]
        }}),
        _ => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}})
        }
    };
    reply(
        200,
        &[("mcp-session-id", "s1".to_owned())],
        answer.to_string(),
    )
}
