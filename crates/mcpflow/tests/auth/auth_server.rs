//! The HTTP server as an OAuth protected resource, driven in process through
//! [`HttpServer::router`]: the metadata at each well-known path, the 401 and 403
//! challenges, scopes per tool and per method, audience and expiry checks, session
//! binding, the principal in handlers, a 2026-07-28 call's arguments decoded once; and
//! the introspection and JWT verifiers against a local authorization server (loopback
//! only). Every wait is bounded.
#![cfg(all(feature = "http-server", feature = "http-client"))]

use crate::common;
use crate::oauth_as;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use common::bounded;
use mcpflow::auth::{BearerChallenge, bearer_challenge};
use mcpflow::http::server::HttpServer;
use mcpflow::http::server::auth::{IntrospectionVerifier, ResourceAuth, StaticTokens};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::{Principal, Server};
use oauth_as::AuthServer;
use serde_json::{Value, json};
use tower::ServiceExt;

const RESOURCE: &str = "http://localhost/mcp";
const AS: &str = "http://127.0.0.1:9";

/// `whoami` answers with the principal its context holds; `admin` needs `mcp:admin`.
fn server() -> Server {
    Server::builder("protected", "1.0.0")
        .tool(
            Tool::new("whoami", "The caller", Tool::empty_input_schema()),
            |_args, cx| async move {
                let who = cx.auth().map(|p| {
                    json!({
                        "subject": p.subject,
                        "scopes": p.scopes,
                        "client_id": p.client_id,
                        "issuer": p.issuer,
                    })
                });
                Ok(CallToolResult::text(json!(who).to_string()))
            },
        )
        .tool(
            Tool::new("admin", "Needs mcp:admin", Tool::empty_input_schema()),
            |_args, _cx| async { Ok(CallToolResult::text("done")) },
        )
        .build()
}

fn principal(subject: &str, scopes: &[&str]) -> Principal {
    let mut p = Principal::new(subject)
        .with_scopes(scopes.iter().copied())
        .with_client_id("test-client");
    p.audiences = vec![RESOURCE.to_owned()];
    p
}

fn tokens() -> StaticTokens {
    let mut other = principal("alice", &["mcp:read"]);
    other.audiences = vec!["http://localhost/other-mcp".into()];
    let mut no_audience = principal("alice", &["mcp:read"]);
    no_audience.audiences.clear();
    let mut expired = principal("alice", &["mcp:read"]);
    expired.expires_at = Some(1);
    StaticTokens::new()
        .token("alice", principal("alice", &["mcp:read"]))
        .token(
            "alice-admin",
            principal("alice", &["mcp:read", "mcp:admin"]),
        )
        .token("bob", principal("bob", &["mcp:read", "mcp:admin"]))
        .token("no-scope", principal("carol", &[]))
        .token("other-audience", other)
        .token("no-audience", no_audience)
        .token("stale-token", expired)
}

fn auth(verifier: impl mcpflow::http::server::auth::TokenVerifier) -> ResourceAuth {
    ResourceAuth::new(RESOURCE, AS, verifier)
        .scopes_supported(["mcp:read", "mcp:admin", "mcp:resources"])
        .required_scopes(["mcp:read"])
        .tool_scopes("admin", ["mcp:admin"])
        .method_scopes("resources/list", ["mcp:resources"])
}

fn router(auth: ResourceAuth) -> Router {
    HttpServer::new(server())
        .json_response(true)
        .auth(auth)
        .router()
}

async fn send(
    router: &Router,
    method: &str,
    path: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: Option<Value>,
) -> Response<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let request = request.body(body).expect("request");
    bounded(&format!("{method} {path}"), router.clone().oneshot(request))
        .await
        .expect("infallible")
}

/// POST `body` to `/mcp`, with a bearer token and a session when given.
async fn post(
    router: &Router,
    token: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> Response<Body> {
    send(router, "POST", "/mcp", token, session, Some(body)).await
}

/// An `initialize` with `token` and no session: the answer, for its status.
async fn initialize_as(router: &Router, token: &str) -> Response<Body> {
    post(router, Some(token), None, initialize()).await
}

async fn json_body(response: Response<Body>) -> Value {
    let bytes = bounded(
        "response body",
        axum::body::to_bytes(response.into_body(), 1 << 20),
    )
    .await
    .expect("body");
    serde_json::from_slice(&bytes).expect("a JSON body")
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
}

fn call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}})
}

/// Initialize with `token`; the session id.
async fn open(router: &Router, token: &str) -> String {
    let response = initialize_as(router, token).await;
    assert_eq!(response.status(), StatusCode::OK, "initialize with {token}");
    let id = response
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .expect("ascii")
        .to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = post(router, Some(token), Some(&id), note).await;
    assert_eq!(done.status(), StatusCode::ACCEPTED);
    id
}

fn challenge(response: &Response<Body>) -> BearerChallenge {
    let header = response
        .headers()
        .get("www-authenticate")
        .expect("a WWW-Authenticate header")
        .to_str()
        .expect("ascii");
    bearer_challenge([header])
        .expect("well-formed")
        .expect("a Bearer challenge")
}

/// The text of a tools/call result.
async fn result_text(response: Response<Body>) -> String {
    assert_eq!(response.status(), StatusCode::OK);
    let body = json_body(response).await;
    body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {body}"))
        .to_owned()
}

/// The principal a `whoami` call answered with.
async fn whoami_answer(response: Response<Body>) -> Value {
    serde_json::from_str(&result_text(response).await).expect("whoami answers JSON")
}

#[tokio::test]
async fn metadata_is_served_at_the_root_and_the_path_suffixed_well_known_paths() {
    let router = router(auth(tokens()).resource_name("Protected test server"));
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = send(&router, "GET", path, None, None, None).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(
            response
                .headers()
                .get("access-control-allow-origin")
                .map(|v| v.as_bytes()),
            Some(&b"*"[..])
        );
        let doc = json_body(response).await;
        assert_eq!(doc["resource"], RESOURCE, "{path}");
        assert_eq!(doc["authorization_servers"], json!([AS]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["mcp:read", "mcp:admin", "mcp:resources"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(doc["resource_name"], "Protected test server");
    }
    let other = send(
        &router,
        "GET",
        "/.well-known/oauth-protected-resource/elsewhere",
        None,
        None,
        None,
    )
    .await;
    assert_eq!(other.status(), StatusCode::NOT_FOUND);

    let open = HttpServer::new(server()).router();
    let none = send(
        &open,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        None,
        None,
        None,
    )
    .await;
    assert_eq!(
        none.status(),
        StatusCode::NOT_FOUND,
        "no metadata without auth"
    );
    let unprotected = post(&open, None, None, initialize()).await;
    assert_eq!(
        unprotected.status(),
        StatusCode::OK,
        "no auth configured: open"
    );
}

#[tokio::test]
async fn a_missing_token_is_challenged_with_the_metadata_url_and_scope() {
    let router = router(auth(tokens()));
    for method in ["POST", "GET", "DELETE"] {
        let response = send(&router, method, "/mcp", None, None, Some(initialize())).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{method}");
        let c = challenge(&response);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://localhost/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("mcp:read"));
        assert_eq!(
            c.error, None,
            "no error code without a token (RFC 6750 §3.1)"
        );
    }
    let basic = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "localhost")
        .header("authorization", "Basic YWxpY2U6c2VjcmV0")
        .body(Body::from(initialize().to_string()))
        .expect("request");
    let response = bounded("basic auth", router.clone().oneshot(basic))
        .await
        .expect("infallible");
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "not a bearer token"
    );
    // A page served from an allowed host can read the challenge, to start its flow.
    let from_page = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "localhost")
        .header("origin", "http://localhost:5173")
        .body(Body::from(initialize().to_string()))
        .expect("request");
    let response = bounded("a page's request", router.clone().oneshot(from_page))
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );
    let exposed = response.headers()["access-control-expose-headers"]
        .to_str()
        .expect("text");
    assert!(exposed.contains("WWW-Authenticate"), "{exposed}");
}

#[tokio::test]
async fn without_required_scopes_the_challenge_names_the_supported_ones_but_offline_access() {
    let auth = ResourceAuth::new(RESOURCE, AS, tokens()).scopes_supported([
        "mcp:read",
        "offline_access",
        "mcp:admin",
    ]);
    let router = router(auth);
    let response = post(&router, None, None, initialize()).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&response).scope.as_deref(),
        Some("mcp:read mcp:admin")
    );
    let ok = initialize_as(&router, "no-scope").await;
    assert_eq!(ok.status(), StatusCode::OK, "no scope is required");
}

#[tokio::test]
async fn unknown_expired_and_foreign_audience_tokens_get_invalid_token() {
    let router = router(auth(tokens()));
    for token in ["nobody", "stale-token", "other-audience", "no-audience"] {
        let response = initialize_as(&router, token).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{token}");
        let c = challenge(&response);
        assert_eq!(c.error.as_deref(), Some("invalid_token"), "{token}");
        assert!(c.resource_metadata.is_some());
        let description = c.error_description.unwrap_or_default();
        assert!(
            !description.contains(token),
            "the token is never echoed: {description}"
        );
    }
}

#[tokio::test]
async fn scopes_are_required_per_tool_and_per_method_with_a_step_up_challenge() {
    let router = router(auth(tokens()));
    let no_scope = initialize_as(&router, "no-scope").await;
    assert_eq!(no_scope.status(), StatusCode::FORBIDDEN);
    assert_eq!(challenge(&no_scope).scope.as_deref(), Some("mcp:read"));

    let session = open(&router, "alice").await;
    let allowed = post(&router, Some("alice"), Some(&session), call(2, "whoami")).await;
    assert!(result_text(allowed).await.contains("alice"));

    let refused = post(&router, Some("alice"), Some(&session), call(3, "admin")).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let c = challenge(&refused);
    assert!(c.is_insufficient_scope());
    assert_eq!(
        c.scope.as_deref(),
        Some("mcp:admin mcp:read"),
        "every scope it needs"
    );
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("http://localhost/.well-known/oauth-protected-resource/mcp")
    );

    // The stepped-up token of the same subject works in the same session.
    let stepped = post(
        &router,
        Some("alice-admin"),
        Some(&session),
        call(4, "admin"),
    )
    .await;
    assert_eq!(result_text(stepped).await, "done");

    let list = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/list"});
    let method = post(&router, Some("alice-admin"), Some(&session), list).await;
    assert_eq!(method.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        challenge(&method).scope.as_deref(),
        Some("mcp:read mcp:resources")
    );

    // A batch needs the scopes of all its calls.
    let batch = json!([call(6, "whoami"), call(7, "admin")]);
    let session_2025 = {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}});
        let r = post(&router, Some("alice"), None, init).await;
        r.headers()["mcp-session-id"]
            .to_str()
            .expect("ascii")
            .to_owned()
    };
    let refused = post(&router, Some("alice"), Some(&session_2025), batch).await;
    assert_eq!(
        refused.status(),
        StatusCode::FORBIDDEN,
        "a batch with admin in it"
    );
}

#[tokio::test]
async fn the_handler_sees_the_verified_principal() {
    let router = router(auth(tokens()));
    let session = open(&router, "alice").await;
    let response = post(&router, Some("alice"), Some(&session), call(2, "whoami")).await;
    let who = whoami_answer(response).await;
    assert_eq!(who["subject"], "alice");
    assert_eq!(who["scopes"], json!(["mcp:read"]));
    assert_eq!(who["client_id"], "test-client");

    let stateless = HttpServer::new(server())
        .json_response(true)
        .stateless(true)
        .auth(auth(tokens()))
        .router();
    let response = post(&stateless, Some("bob"), None, call(9, "whoami")).await;
    let who = whoami_answer(response).await;
    assert_eq!(
        who["subject"], "bob",
        "stateless sessions see the principal too"
    );

    let open_server = HttpServer::new(server())
        .json_response(true)
        .stateless(true)
        .router();
    let response = post(&open_server, None, None, call(9, "whoami")).await;
    assert_eq!(
        result_text(response).await,
        "null",
        "no principal without auth"
    );
}

#[tokio::test]
async fn a_session_is_bound_to_the_principal_that_created_it() {
    let router = router(auth(tokens()));
    let session = open(&router, "alice").await;
    for (method, body) in [
        ("POST", Some(call(2, "whoami"))),
        ("GET", None),
        ("DELETE", None),
    ] {
        let response = send(&router, method, "/mcp", Some("bob"), Some(&session), body).await;
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "bob {method} on alice's session"
        );
    }
    let response = post(&router, Some("alice"), Some(&session), call(3, "whoami")).await;
    let who = whoami_answer(response).await;
    assert_eq!(
        who["subject"], "alice",
        "bob's attempt did not change the session's principal"
    );
    let gone = send(
        &router,
        "DELETE",
        "/mcp",
        Some("alice"),
        Some(&session),
        None,
    )
    .await;
    assert_eq!(gone.status(), StatusCode::OK, "the owner may end it");
}

#[tokio::test]
async fn introspection_accepts_only_active_tokens_issued_for_this_resource() {
    let authz = AuthServer::start().await;
    let verifier = IntrospectionVerifier::new(authz.url("/introspect"))
        .client_credentials("mcp-server", "secret")
        .issuer(authz.issuer.clone());
    let router = router(auth(verifier));
    let good = authz.issue("mcp:read", Some(RESOURCE));
    let session = open(&router, &good).await;
    let response = post(&router, Some(&good), Some(&session), call(2, "whoami")).await;
    let who = whoami_answer(response).await;
    assert_eq!(who["subject"], oauth_as::SUBJECT);
    assert_eq!(who["issuer"], authz.issuer.as_str());

    let foreign = authz.issue("mcp:read", Some("http://localhost/other-mcp"));
    let unbound = authz.issue("mcp:read", None);
    for token in [foreign.as_str(), unbound.as_str(), "never-issued"] {
        let response = initialize_as(&router, token).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{token}");
        assert_eq!(challenge(&response).error.as_deref(), Some("invalid_token"));
    }
    assert!(authz.introspections() >= 5);

    let wrong_issuer =
        IntrospectionVerifier::new(authz.url("/introspect")).issuer("http://elsewhere");
    let router2 = self::router(auth(wrong_issuer));
    let response = initialize_as(&router2, &good).await;
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "issuer checked"
    );

    drop(authz);
    let response = initialize_as(&router, &good).await;
    assert_eq!(
        response.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "an unreachable introspection endpoint is not the client's fault"
    );
}

#[cfg(feature = "jwt")]
#[path = "auth_server/jwt.rs"]
mod jwt;

#[path = "auth_server/decode_once.rs"]
mod decode_once;

/// Read one HTTP/1.1 response head from `stream`: the status line and the headers,
/// lower-cased.
async fn read_head(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = bounded("a response head", stream.read(&mut byte))
            .await
            .expect("read");
        assert_eq!(
            n,
            1,
            "the connection closed mid-head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).to_lowercase()
}

/// A 401 answered before the request's body arrived closes the connection and says
/// so (`Connection: close`): a client that reused it would race the close and lose its
/// next request ("Server disconnected without sending a response"). A request whose
/// body was read keeps its connection.
#[tokio::test]
async fn an_answer_before_the_body_was_read_says_connection_close() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let running = common::http::serve(HttpServer::new(server()).auth(auth(tokens()))).await;
    let addr = running.local_addr();
    let body = initialize().to_string();
    let head = |token: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{token}Content-Length: {}\r\n\r\n",
            body.len()
        )
    };
    let mut stream = bounded("connect", tokio::net::TcpStream::connect(addr))
        .await
        .expect("connect");
    // The headers alone: the body follows only once the answer is in.
    stream.write_all(head("").as_bytes()).await.expect("write");
    let answer = read_head(&mut stream).await;
    assert!(answer.starts_with("http/1.1 401"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    let _ = stream.write_all(body.as_bytes()).await;
    let mut rest = Vec::new();
    let _ = bounded(
        "the server to close the connection",
        stream.read_to_end(&mut rest),
    )
    .await;

    // With a token, the body is read and the connection stays open for the next request.
    let mut stream = bounded("connect", tokio::net::TcpStream::connect(addr))
        .await
        .expect("connect");
    let request = format!("{}{body}", head("Authorization: Bearer alice\r\n"));
    stream.write_all(request.as_bytes()).await.expect("write");
    let answer = read_head(&mut stream).await;
    assert!(answer.starts_with("http/1.1 200"), "{answer}");
    assert!(!answer.contains("connection: close"), "{answer}");
    bounded("shutdown", running.shutdown()).await;
}

/// DPoP (RFC 9449) end to end: mcpflow's client, told by the resource's `DPoP`
/// challenge to bind its tokens, gets a DPoP token and answers the resource's nonce;
/// then, at the wire, a bearer token, a missing proof, a proof replayed and a proof
/// for another key are each refused.
#[cfg(all(feature = "jwt", feature = "oauth-jwt"))]
#[tokio::test]
async fn dpop_bound_tokens_go_with_a_fresh_proof_carrying_the_nonce() {
    use mcpflow::auth::{HeadlessRedirect, OAuthConfig};
    use mcpflow::client::{Client, Era};
    use mcpflow::http::client::HttpClientTransport;
    use mcpflow::http::server::auth::DpopPolicy;

    let authz = AuthServer::start().await;
    let listener = bounded("bind", tokio::net::TcpListener::bind("127.0.0.1:0"))
        .await
        .expect("bind");
    let resource = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let verifier =
        IntrospectionVerifier::new(authz.url("/introspect")).issuer(authz.issuer.clone());
    let auth = ResourceAuth::new(&resource, &authz.issuer, verifier)
        .dpop(DpopPolicy::required().with_nonces());
    assert_eq!(
        auth.metadata().dpop_bound_access_tokens_required,
        Some(true)
    );
    let running = HttpServer::new(server())
        .auth(auth)
        .serve_listener(listener)
        .expect("serve");

    let user =
        HeadlessRedirect::new("http://127.0.0.1:9/callback".parse().expect("a URL")).expect("user");
    let transport = HttpClientTransport::builder(&resource)
        .oauth(OAuthConfig::authorization_code(user))
        .build()
        .expect("transport");
    let client = bounded(
        "connect with DPoP",
        Client::builder("dpop", "1")
            .era(Era::Handshake)
            .connect(transport),
    )
    .await
    .expect("connected with a DPoP-bound token");
    let result = bounded("a call", client.call_tool("whoami", json!({})))
        .await
        .expect("call");
    assert!(
        result.content[0]
            .as_text()
            .is_some_and(|t| t.contains(oauth_as::SUBJECT))
    );
    bounded("close", client.close()).await;

    let http = reqwest::Client::new();
    let init = initialize().to_string();
    let post = |authorization: String, proof: Option<String>| {
        let mut request = http
            .post(&resource)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", authorization)
            .body(init.clone());
        if let Some(proof) = proof {
            request = request.header("dpop", proof);
        }
        request.send()
    };
    let www = |response: &reqwest::Response| {
        response.headers()["www-authenticate"]
            .to_str()
            .expect("text")
            .to_owned()
    };
    let bearer = authz.issue("mcp:read", Some(&resource));
    let refused = bounded("a bearer token", post(format!("Bearer {bearer}"), None))
        .await
        .expect("answered");
    assert_eq!(refused.status(), 401);
    assert!(www(&refused).starts_with("DPoP algs="), "{}", www(&refused));

    let key = proof_key::Key::generate();
    let bound = authz.issue_bound("mcp:read", Some(&resource), Some(&key.thumbprint()));
    let missing = bounded("no proof", post(format!("DPoP {bound}"), None))
        .await
        .expect("answered");
    assert!(
        www(&missing).contains("invalid_dpop_proof"),
        "{}",
        www(&missing)
    );
    let first = key.proof("POST", &resource, &bound, None);
    let asked = bounded("no nonce", post(format!("DPoP {bound}"), Some(first)))
        .await
        .expect("answered");
    assert!(www(&asked).contains("use_dpop_nonce"), "{}", www(&asked));
    let nonce = asked.headers()["dpop-nonce"]
        .to_str()
        .expect("text")
        .to_owned();
    let good = key.proof("POST", &resource, &bound, Some(&nonce));
    let accepted = bounded(
        "a good proof",
        post(format!("DPoP {bound}"), Some(good.clone())),
    )
    .await
    .expect("answered");
    assert_eq!(
        accepted.status(),
        200,
        "{}",
        accepted.text().await.unwrap_or_default()
    );
    let replayed = bounded("a replay", post(format!("DPoP {bound}"), Some(good)))
        .await
        .expect("answered");
    assert!(
        www(&replayed).contains("invalid_dpop_proof"),
        "{}",
        www(&replayed)
    );
    let other = proof_key::Key::generate();
    let stolen = other.proof("POST", &resource, &bound, Some(&nonce));
    let refused = bounded("another key", post(format!("DPoP {bound}"), Some(stolen)))
        .await
        .expect("answered");
    assert_eq!(refused.status(), 401);
    assert!(www(&refused).contains("invalid_token"), "{}", www(&refused));
    bounded("shutdown", running.shutdown()).await;
}

/// A DPoP key of the test's own, to make proofs the client would not.
#[cfg(all(feature = "jwt", feature = "oauth-jwt"))]
mod proof_key {
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use serde_json::{Value, json};
    use sha2::Digest as _;

    pub struct Key {
        pair: EcdsaKeyPair,
        jwk: Value,
    }

    impl Key {
        pub fn generate() -> Key {
            let rng = SystemRandom::new();
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                .expect("generate");
            let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
                .expect("key");
            let point = pair.public_key().as_ref().to_vec();
            let jwk = json!({"kty": "EC", "crv": "P-256",
                "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65])});
            Key { pair, jwk }
        }

        pub fn thumbprint(&self) -> String {
            let j = &self.jwk;
            let canonical = format!(
                r#"{{"crv":"{}","kty":"{}","x":"{}","y":"{}"}}"#,
                j["crv"].as_str().expect("crv"),
                j["kty"].as_str().expect("kty"),
                j["x"].as_str().expect("x"),
                j["y"].as_str().expect("y")
            );
            URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes()))
        }

        pub fn proof(&self, method: &str, url: &str, token: &str, nonce: Option<&str>) -> String {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let mut jti = [0u8; 16];
            getrandom::fill(&mut jti).expect("random");
            let mut claims = json!({"jti": URL_SAFE_NO_PAD.encode(jti), "htm": method, "htu": url,
                "iat": now, "ath": URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(token.as_bytes()))});
            if let Some(nonce) = nonce {
                claims["nonce"] = json!(nonce);
            }
            let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk});
            let input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(claims.to_string())
            );
            let signature = self
                .pair
                .sign(&SystemRandom::new(), input.as_bytes())
                .expect("sign");
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
        }
    }
}
