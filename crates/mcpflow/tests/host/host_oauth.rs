//! The tool host in front of an OAuth-protected HTTP server: an `mcpServers` entry gets
//! its OAuth configuration from the factory of `servers_config_with_oauth`, runs the
//! flow against a local authorization server (loopback only), and calls with the
//! principal the server verified; tokens in a shared store serve a second host without
//! a new authorization; without OAuth the entry's health names the refusal.
#![cfg(all(feature = "http-server", feature = "http-client"))]

use crate::common;
#[path = "../common/oauth_as.rs"]
mod oauth_as;

use std::sync::Arc;

use common::bounded;
use mcpflow::auth::{HeadlessRedirect, MemoryTokenStore, OAuthConfig, TokenStore};
use mcpflow::host::{Health, ReconnectPolicy, ServersConfig, ToolHost};
use mcpflow::http::server::auth::{IntrospectionVerifier, ResourceAuth};
use mcpflow::http::server::{HttpServer, RunningHttpServer};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::Server;
use oauth_as::{AuthServer, SUBJECT};
use serde_json::json;

/// `whoami` answers with the subject of the verified token; every request needs
/// `notes:read`.
async fn protected(issuer: &AuthServer) -> RunningHttpServer {
    let server = Server::builder("notes", "1.0.0")
        .tool(
            Tool::new("whoami", "The caller", Tool::empty_input_schema()),
            |_args, cx| async move {
                let who = cx.auth().map(|p| p.subject.clone()).unwrap_or_default();
                Ok(CallToolResult::text(who))
            },
        )
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the resource server");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let verifier = IntrospectionVerifier::new(issuer.url("/introspect")).issuer(&issuer.issuer);
    let auth = ResourceAuth::new(url, &issuer.issuer, verifier)
        .scopes_supported(["notes:read"])
        .required_scopes(["notes:read"]);
    HttpServer::new(server)
        .auth(auth)
        .serve_listener(listener)
        .expect("serve")
}

fn file(url: &str) -> ServersConfig {
    let text = json!({"mcpServers": {"notes": {"url": url}}}).to_string();
    ServersConfig::from_json(&text).expect("an mcpServers file")
}

fn oauth(store: &Arc<dyn TokenStore>) -> OAuthConfig {
    let user = HeadlessRedirect::new("http://127.0.0.1:9/callback".parse().expect("url"))
        .expect("headless");
    OAuthConfig::authorization_code(user)
        .client_name("host-oauth-test")
        .store(store.clone())
}

fn host(config: &ServersConfig, store: Option<&Arc<dyn TokenStore>>) -> ToolHost {
    let builder = ToolHost::builder().reconnect(ReconnectPolicy::default().max_failures(0));
    let builder = match store {
        Some(store) => builder.servers_config_with_oauth(
            config,
            |_| None,
            |name, remote| {
                assert_eq!(name, "notes");
                assert!(remote.url.ends_with("/mcp"));
                Some(oauth(store))
            },
        ),
        None => builder.servers_config(config, |_| None),
    };
    builder.expect("the file's servers").start()
}

#[tokio::test]
async fn a_host_entry_runs_the_flow_and_a_shared_store_serves_the_next_host() {
    let issuer = AuthServer::start().await;
    let running = protected(&issuer).await;
    let config = file(&running.url());
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());

    let first = host(&config, Some(&store));
    let health = bounded("the first host is ready", first.wait_ready()).await;
    assert_eq!(health, [("notes".to_owned(), Health::Ready)]);
    let result = bounded("whoami", first.call("notes__whoami", json!({})))
        .await
        .expect("the call is authorized");
    assert_eq!(
        serde_json::to_value(&result).expect("JSON")["content"][0]["text"],
        SUBJECT
    );
    assert_eq!(issuer.authorizations(), 1);
    assert_eq!(issuer.token_resources(), [Some(running.url())]);
    bounded("close", first.close()).await;

    let second = host(&config, Some(&store));
    let health = bounded("the second host is ready", second.wait_ready()).await;
    assert_eq!(health, [("notes".to_owned(), Health::Ready)]);
    assert_eq!(issuer.authorizations(), 1, "the stored tokens serve");
    bounded("close", second.close()).await;
}

#[tokio::test]
async fn without_oauth_the_entry_is_refused_and_its_health_says_so() {
    let issuer = AuthServer::start().await;
    let running = protected(&issuer).await;
    let plain = host(&file(&running.url()), None);
    let health = bounded("the first attempt", plain.wait_ready()).await;
    let [(name, Health::Failed { cause })] = &health[..] else {
        panic!("one failed server expected: {health:?}");
    };
    assert_eq!(name, "notes");
    assert!(cause.contains("401"), "{cause}");
    assert_eq!(issuer.authorizations(), 0);
    bounded("close", plain.close()).await;
}
