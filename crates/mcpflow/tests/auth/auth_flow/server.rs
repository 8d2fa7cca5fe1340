//! The resource server and authorization server of the OAuth flow tests, on one
//! loopback origin, configurable per test and recording what they saw.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use reqwest::Url;
use serde_json::{Value, json};

use crate::common::bounded;

/// Marks every token and secret the server issues, so the redaction test can look for it.
pub const MARK: &str = "SeCrEt";

/// How the servers behave; tests change it, also between requests.
#[derive(Clone)]
pub struct Setup {
    /// The path of the issuer (`""`: the origin itself).
    pub issuer_path: String,
    pub auth_methods: Vec<&'static str>,
    pub registration: bool,
    pub cimd: bool,
    pub pkce: bool,
    pub iss_advertised: bool,
    /// `Some("")`: the right issuer; `Some(x)`: `x`; `None`: no `iss`.
    pub iss: Option<String>,
    pub prm_resource: Option<String>,
    pub challenge_scope: Option<&'static str>,
    /// The scope `tools/call` needs.
    pub call_scope: Option<&'static str>,
    pub refresh_tokens: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            issuer_path: String::new(),
            auth_methods: vec!["none"],
            registration: true,
            cimd: false,
            pkce: true,
            iss_advertised: false,
            iss: None,
            prm_resource: None,
            challenge_scope: None,
            call_scope: None,
            refresh_tokens: false,
        }
    }
}

/// What the servers saw.
#[derive(Default)]
pub struct Seen {
    pub authorize: Vec<HashMap<String, String>>,
    pub token: Vec<(HashMap<String, String>, Option<String>)>,
    pub register: Vec<Value>,
    /// Access token → scope, for tokens still valid.
    pub tokens: HashMap<String, String>,
    pub refresh: HashMap<String, String>,
    pub bearer_methods: Vec<String>,
    pub counter: u32,
    /// Token exchanges at the identity provider (`/idp/token`).
    pub idp: Vec<HashMap<String, String>>,
}

pub struct Servers {
    pub base: String,
    pub setup: Arc<Mutex<Setup>>,
    pub seen: Arc<Mutex<Seen>>,
    pub task: tokio::task::JoinHandle<()>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.task.abort();
    }
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
    pub async fn start(setup: Setup) -> Self {
        let listener = bounded("bind", tokio::net::TcpListener::bind("127.0.0.1:0"))
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let setup = Arc::new(Mutex::new(setup));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (s, k, b) = (setup.clone(), seen.clone(), base.clone());
        let app = Router::new().fallback(move |request: Request| {
            let (setup, seen, base) = (s.clone(), k.clone(), b.clone());
            async move { handle(request, &setup, &seen, &base).await }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            base,
            setup,
            seen,
            task,
        }
    }

    pub fn issuer(&self) -> String {
        format!(
            "{}{}",
            self.base,
            self.setup.lock().expect("setup").issuer_path
        )
    }

    pub fn mcp(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut Seen) -> T) -> T {
        f(&mut self.seen.lock().expect("seen"))
    }
}

async fn handle(
    request: Request,
    setup: &Mutex<Setup>,
    seen: &Mutex<Seen>,
    base: &str,
) -> Response {
    let setup = setup.lock().expect("setup").clone();
    let issuer = format!("{base}{}", setup.issuer_path);
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
    let ip = &setup.issuer_path;
    let mut seen = seen.lock().expect("seen");
    if path == "/.well-known/oauth-protected-resource/mcp" {
        let resource = setup.prm_resource.clone().unwrap_or(format!("{base}/mcp"));
        let doc = json!({"resource": resource, "authorization_servers": [issuer]});
        return reply(200, &[], doc.to_string());
    }
    if path == format!("/.well-known/oauth-authorization-server{ip}") {
        let mut doc = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "response_types_supported": ["code"],
            "token_endpoint_auth_methods_supported": setup.auth_methods,
            "scopes_supported": ["read", "write"],
        });
        if setup.registration {
            doc["registration_endpoint"] = json!(format!("{issuer}/register"));
        }
        if setup.refresh_tokens {
            doc["scopes_supported"] = json!(["read", "write", "offline_access"]);
        }
        if setup.pkce {
            doc["code_challenge_methods_supported"] = json!(["S256"]);
        }
        if setup.cimd {
            doc["client_id_metadata_document_supported"] = json!(true);
        }
        if setup.iss_advertised {
            doc["authorization_response_iss_parameter_supported"] = json!(true);
        }
        return reply(200, &[], doc.to_string());
    }
    if path == format!("{ip}/authorize") {
        let query = pairs(uri.query().unwrap_or_default());
        let mut to = Url::parse(&query["redirect_uri"]).expect("redirect_uri");
        to.query_pairs_mut()
            .append_pair("code", "the-code")
            .append_pair("state", &query["state"]);
        match setup.iss.as_deref() {
            Some("") => drop(to.query_pairs_mut().append_pair("iss", &issuer)),
            Some(other) => drop(to.query_pairs_mut().append_pair("iss", other)),
            None => {}
        }
        seen.authorize.push(query);
        return reply(302, &[("location", to.to_string())], String::new());
    }
    if path == "/idp/token" {
        seen.idp.push(pairs(&body));
        let doc = json!({
            "access_token": format!("jag-{MARK}"),
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "token_type": "N_A",
        });
        return reply(200, &[], doc.to_string());
    }
    if path == format!("{ip}/token") {
        let form = pairs(&body);
        let auth = headers
            .get("authorization")
            .map(|v| v.to_str().expect("ascii").to_owned());
        seen.token.push((form.clone(), auth));
        seen.counter += 1;
        let scope = match form["grant_type"].as_str() {
            "refresh_token" => match seen.refresh.get(&form["refresh_token"]) {
                Some(scope) => scope.clone(),
                None => return reply(400, &[], json!({"error": "invalid_grant"}).to_string()),
            },
            "authorization_code" => {
                let asked = seen.authorize.last().expect("authorized first");
                asked.get("scope").cloned().unwrap_or_default()
            }
            _ => form.get("scope").cloned().unwrap_or_default(),
        };
        // `never` is never granted, for the step-up limit.
        let scope = scope
            .split(' ')
            .filter(|s| *s != "never")
            .collect::<Vec<_>>()
            .join(" ");
        let access = format!("at-{MARK}-{}", seen.counter);
        seen.tokens.insert(access.clone(), scope.clone());
        let mut doc = json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": scope});
        if setup.refresh_tokens {
            let refresh = format!("rt-{MARK}-{}", seen.counter);
            seen.refresh.insert(refresh.clone(), scope);
            doc["refresh_token"] = json!(refresh);
        }
        return reply(200, &[], doc.to_string());
    }
    if path == format!("{ip}/register") && setup.registration {
        let metadata: Value = serde_json::from_str(&body).expect("registration JSON");
        let method = metadata["token_endpoint_auth_method"].clone();
        seen.register.push(metadata);
        let doc = json!({"client_id": format!("dcr{ip}"), "client_secret": format!("cs-{MARK}"), "token_endpoint_auth_method": method});
        return reply(201, &[], doc.to_string());
    }
    if path != "/mcp" {
        return reply(404, &[], String::new());
    }
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    seen.bearer_methods
        .push(format!("{method} {}", token.is_some()));
    let granted = token.as_ref().and_then(|t| seen.tokens.get(t).cloned());
    let Some(granted) = granted else {
        let scope = setup
            .challenge_scope
            .map(|s| format!(", scope=\"{s}\""))
            .unwrap_or_default();
        let challenge = format!("Bearer resource_metadata=\"{prm_url}\"{scope}");
        return reply(401, &[("www-authenticate", challenge)], String::new());
    };
    if method != axum::http::Method::POST {
        return reply(
            if method == "DELETE" { 200 } else { 405 },
            &[],
            String::new(),
        );
    }
    let message: Value = serde_json::from_str(&body).expect("JSON-RPC");
    let Some(id) = message.get("id").cloned() else {
        return reply(202, &[], String::new());
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "rs", "version": "1"},
        }),
        "tools/list" => json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        "tools/call" => {
            if let Some(need) = setup.call_scope
                && !granted.split(' ').any(|s| s == need)
            {
                let challenge = format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{need}\", resource_metadata=\"{prm_url}\""
                );
                return reply(403, &[("www-authenticate", challenge)], String::new());
            }
            json!({"content": [{"type": "text", "text": "ok"}]})
        }
        _ => json!({}),
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
    reply(
        200,
        &[("mcp-session-id", "s1".to_owned())],
        answer.to_string(),
    )
}
