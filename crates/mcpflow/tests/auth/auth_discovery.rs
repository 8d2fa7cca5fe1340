//! Metadata discovery against a local HTTP server that serves each variant the MCP
//! authorization spec allows: the challenge's `resource_metadata`, the path-suffixed and
//! root well-known documents, the three forms of an issuer with a path, and the
//! documents that must stop discovery.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use common::bounded;
use mcpflow::auth::{
    BearerChallenge, DiscoverError, Discoverer, Discovery, FetchFailure, MetadataError,
    bearer_challenge,
};
use reqwest::Url;
use serde_json::{Value, json};

/// What a path answers.
#[derive(Clone)]
enum Reply {
    Json(Value),
    Raw(u16, String),
    /// Headers never come, for the per-fetch timeout.
    Stall,
}

/// A loopback server answering by path from a table, recording the paths asked.
struct Server {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Binds first so `routes` can put the server's own origin in its documents.
    async fn start(routes: impl FnOnce(&str) -> Vec<(&'static str, Reply)>) -> Self {
        let listener = bounded("bind", tokio::net::TcpListener::bind("127.0.0.1:0"))
            .await
            .expect("bind a loopback port");
        let base = format!("http://{}", listener.local_addr().expect("local address"));
        let table: HashMap<String, Reply> = routes(&base)
            .into_iter()
            .map(|(path, reply)| (path.to_owned(), reply))
            .collect();
        let table = Arc::new(table);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let app = Router::new().fallback(move |uri: Uri| {
            let table = table.clone();
            let log = log.clone();
            async move {
                log.lock().expect("log").push(uri.path().to_owned());
                match table.get(uri.path()).cloned() {
                    Some(Reply::Json(doc)) => response(200, doc.to_string()),
                    Some(Reply::Raw(status, body)) => response(status, body),
                    Some(Reply::Stall) => std::future::pending().await,
                    None => response(404, String::new()),
                }
            }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, seen, task }
    }

    fn url(&self, path: &str) -> Url {
        Url::parse(&format!("{}{path}", self.base)).expect("URL")
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("log").clone()
    }
}

fn response(status: u16, body: String) -> Response {
    let mut out = Response::new(Body::from(body));
    *out.status_mut() = StatusCode::from_u16(status).expect("status");
    out
}

fn raw(status: u16, body: &str) -> Reply {
    Reply::Raw(status, body.to_owned())
}

fn prm(resource: &str, issuer: &str) -> Reply {
    Reply::Json(json!({"resource": resource, "authorization_servers": [issuer]}))
}

fn asm(issuer: &str) -> Reply {
    Reply::Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "code_challenge_methods_supported": ["S256"],
    }))
}

/// The Bearer challenge of a 401 whose `resource_metadata` is `path` on `server`.
fn challenge_to(server: &Server, path: &str) -> BearerChallenge {
    let header = format!(
        r#"Bearer realm="mcp", resource_metadata="{}", scope="mcp""#,
        server.url(path)
    );
    bearer_challenge([header.as_str()])
        .expect("parses")
        .expect("a Bearer challenge")
}

fn discoverer() -> Discoverer {
    Discoverer::new(reqwest::Client::new()).timeout(Duration::from_secs(5))
}

async fn discover(
    server: &Server,
    challenge: Option<&BearerChallenge>,
) -> Result<Discovery, DiscoverError> {
    bounded(
        "discovery",
        discoverer().discover(&server.url("/mcp"), challenge),
    )
    .await
}

const PRM_MCP: &str = "/.well-known/oauth-protected-resource/mcp";
const PRM_ROOT: &str = "/.well-known/oauth-protected-resource";
const AS_ROOT: &str = "/.well-known/oauth-authorization-server";

#[tokio::test]
async fn the_challenge_url_is_the_only_candidate() {
    let server = Server::start(|base| {
        vec![
            ("/custom/prm.json", prm(&format!("{base}/mcp"), base)),
            // Served but never asked for: the challenge names the document.
            (PRM_MCP, prm("https://elsewhere/mcp", base)),
            (AS_ROOT, asm(base)),
        ]
    })
    .await;
    let challenge = challenge_to(&server, "/custom/prm.json");
    let found = discover(&server, Some(&challenge))
        .await
        .expect("discovers");
    assert_eq!(found.protected_resource_url, server.url("/custom/prm.json"));
    assert_eq!(found.resource, server.url("/mcp"));
    assert_eq!(found.issuer, server.base);
    assert_eq!(found.token_endpoint, server.url("/token"));
    assert_eq!(server.seen(), ["/custom/prm.json", AS_ROOT]);

    // A challenge URL that fails leaves nothing else to try.
    let challenge = challenge_to(&server, "/missing.json");
    let err = discover(&server, Some(&challenge))
        .await
        .expect_err("no document");
    let DiscoverError::NoProtectedResource { attempts, .. } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(attempts.0.len(), 1);
    assert_eq!(attempts.0[0].failure, FetchFailure::Status(404));
}

#[tokio::test]
async fn the_path_suffixed_document_comes_first() {
    let server = Server::start(|base| {
        vec![
            (PRM_MCP, prm(&format!("{base}/mcp"), base)),
            (PRM_ROOT, prm("https://elsewhere", base)),
            (AS_ROOT, asm(base)),
        ]
    })
    .await;
    let found = discover(&server, None).await.expect("discovers");
    assert_eq!(found.protected_resource_url, server.url(PRM_MCP));
    assert_eq!(server.seen(), [PRM_MCP, AS_ROOT]);
}

#[tokio::test]
async fn the_root_document_after_a_failed_fetch() {
    // Each way a fetch can fail moves on to the root document.
    for reply in [
        raw(404, ""),
        raw(500, "{}"),
        raw(200, "<html>not json</html>"),
        Reply::Json(json!({"authorization_servers": ["x"]})),
    ] {
        let server = Server::start(|base| {
            vec![
                (PRM_MCP, reply.clone()),
                // The root document names the origin, as the conformance suite's does.
                (PRM_ROOT, prm(base, base)),
                (AS_ROOT, asm(base)),
            ]
        })
        .await;
        let found = discover(&server, None).await.expect("discovers");
        assert_eq!(found.protected_resource_url, server.url(PRM_ROOT));
        assert_eq!(found.resource.as_str(), format!("{}/", server.base));
        assert_eq!(server.seen(), [PRM_MCP, PRM_ROOT, AS_ROOT]);
    }
}

#[tokio::test]
async fn each_form_of_an_issuer_with_a_path() {
    let forms = [
        "/.well-known/oauth-authorization-server/tenant1",
        "/.well-known/openid-configuration/tenant1",
        "/tenant1/.well-known/openid-configuration",
    ];
    for (served, path) in forms.iter().enumerate() {
        let server = Server::start(|base| {
            let issuer = format!("{base}/tenant1");
            vec![
                (PRM_MCP, prm(&format!("{base}/mcp"), &issuer)),
                (*path, asm(&issuer)),
            ]
        })
        .await;
        let found = discover(&server, None).await.expect("discovers");
        assert_eq!(found.issuer, format!("{}/tenant1", server.base));
        assert_eq!(found.authorization_server_url, server.url(path));
        assert_eq!(
            found.authorization_endpoint,
            server.url("/tenant1/authorize")
        );
        let mut expected = vec![PRM_MCP];
        expected.extend(&forms[..=served]);
        assert_eq!(server.seen(), expected);
    }
}

#[tokio::test]
async fn a_resource_mismatch_stops_discovery() {
    let server = Server::start(|base| {
        vec![
            (PRM_MCP, prm("https://evil.example.com/mcp", base)),
            // Valid, but a later candidate must not overrule the document served.
            (PRM_ROOT, prm(base, base)),
            (AS_ROOT, asm(base)),
        ]
    })
    .await;
    let err = discover(&server, None).await.expect_err("mismatch");
    assert!(
        matches!(
            &err,
            DiscoverError::ProtectedResource { url, error: MetadataError::ResourceMismatch { .. } }
                if *url == server.url(PRM_MCP)
        ),
        "{err:?}"
    );
    assert_eq!(server.seen(), [PRM_MCP]);
}

#[tokio::test]
async fn an_issuer_mismatch_stops_discovery() {
    let server = Server::start(|base| {
        vec![
            (PRM_MCP, prm(&format!("{base}/mcp"), base)),
            (AS_ROOT, asm("https://impostor.example.com")),
            ("/.well-known/openid-configuration", asm(base)),
        ]
    })
    .await;
    let err = discover(&server, None).await.expect_err("mismatch");
    assert!(
        matches!(
            &err,
            DiscoverError::AuthorizationServer { error: MetadataError::IssuerMismatch { expected, .. }, .. }
                if *expected == server.base
        ),
        "{err:?}"
    );
    assert_eq!(server.seen(), [PRM_MCP, AS_ROOT]);
}

#[tokio::test]
async fn an_authorization_server_without_s256_stops_discovery() {
    for (methods, expected) in [
        (json!(["plain"]), MetadataError::PkceS256Unsupported),
        (Value::Null, MetadataError::PkceNotAdvertised),
    ] {
        let server = Server::start(|base| {
            let Reply::Json(mut doc) = asm(base) else {
                unreachable!("asm is JSON")
            };
            doc["code_challenge_methods_supported"] = methods.clone();
            vec![
                (PRM_MCP, prm(&format!("{base}/mcp"), base)),
                (AS_ROOT, Reply::Json(doc)),
                ("/.well-known/openid-configuration", asm(base)),
            ]
        })
        .await;
        let err = discover(&server, None).await.expect_err("no S256");
        assert!(
            matches!(&err, DiscoverError::AuthorizationServer { error, .. } if *error == expected),
            "{err:?}"
        );
        assert_eq!(server.seen(), [PRM_MCP, AS_ROOT]);
    }
}

#[tokio::test]
async fn the_error_names_every_url_tried_and_why() {
    let server = Server::start(|base| {
        vec![
            (PRM_MCP, prm(&format!("{base}/mcp"), &format!("{base}/t"))),
            ("/.well-known/oauth-authorization-server/t", raw(503, "")),
            ("/.well-known/openid-configuration/t", raw(200, "{")),
        ]
    })
    .await;
    let err = discover(&server, None).await.expect_err("no AS metadata");
    let DiscoverError::NoAuthorizationServer { issuer, attempts } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(*issuer, format!("{}/t", server.base));
    let failures: Vec<_> = attempts.0.iter().map(|a| &a.failure).collect();
    assert!(matches!(
        failures[..],
        [
            FetchFailure::Status(503),
            FetchFailure::NotJson(_),
            FetchFailure::Status(404)
        ]
    ));
    let text = err.to_string();
    for attempt in &attempts.0 {
        assert!(text.contains(attempt.url.as_str()), "{text}");
    }
    assert!(
        text.contains("HTTP 503") && text.contains("not JSON"),
        "{text}"
    );
}

#[tokio::test]
async fn fetches_are_bounded_in_size_and_time() {
    let server = Server::start(|base| {
        vec![
            (PRM_MCP, Reply::Raw(200, "x".repeat(4096))),
            (PRM_ROOT, Reply::Stall),
            (AS_ROOT, asm(base)),
        ]
    })
    .await;
    let discoverer = Discoverer::new(reqwest::Client::new())
        .max_body_bytes(1024)
        .timeout(Duration::from_millis(300));
    let err = bounded(
        "bounded discovery",
        discoverer.discover(&server.url("/mcp"), None),
    )
    .await
    .expect_err("nothing usable");
    let DiscoverError::NoProtectedResource { attempts, .. } = &err else {
        panic!("unexpected {err:?}");
    };
    let failures: Vec<_> = attempts.0.iter().map(|a| a.failure.clone()).collect();
    assert_eq!(
        failures,
        [
            FetchFailure::TooLarge(1024),
            FetchFailure::Timeout(Duration::from_millis(300))
        ]
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_network_failure() {
    // Bind and drop to get a loopback port with nothing behind it.
    let listener = bounded("bind", tokio::net::TcpListener::bind("127.0.0.1:0"))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("local address");
    drop(listener);
    let url = Url::parse(&format!("http://{addr}/")).expect("URL");
    let err = bounded("discovery", discoverer().discover(&url, None))
        .await
        .expect_err("refused");
    let DiscoverError::NoProtectedResource { attempts, .. } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(attempts.0.len(), 1, "a root server has one candidate");
    assert!(matches!(attempts.0[0].failure, FetchFailure::Network(_)));
}
