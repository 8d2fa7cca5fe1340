//! A 2026-07-28 `tools/call` over HTTP, without a session and with authorization (scopes
//! per tool), decodes its arguments into the handler's type once: the routing, the
//! header checks and the scope check read the request's head and never decode the
//! arguments again, and a refused call does not decode them at all.

use std::sync::atomic::{AtomicUsize, Ordering};

use mcpflow::schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use super::*;

/// How many times a `Counted` was deserialized.
static DECODES: AtomicUsize = AtomicUsize::new(0);

/// The arguments of `count`, counting each time serde decodes them.
#[derive(JsonSchema)]
struct Counted {
    /// Echoed back.
    text: String,
}

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            text: String,
        }
        DECODES.fetch_add(1, Ordering::SeqCst);
        Wire::deserialize(deserializer).map(|w| Counted { text: w.text })
    }
}

fn counting_router() -> Router {
    let server = Server::builder("counted", "1.0.0")
        .typed_tool(
            "count",
            "Echo, counting decodes",
            |args: Counted, _cx| async move { Ok::<_, String>(args.text) },
        )
        .build();
    let auth = ResourceAuth::new(RESOURCE, AS, tokens())
        .scopes_supported(["mcp:read", "mcp:admin"])
        .required_scopes(["mcp:read"])
        .tool_scopes("count", ["mcp:admin"]);
    HttpServer::new(server).auth(auth).router()
}

/// A 2026-07-28 `tools/call` of `count`, its headers mirroring its body.
async fn call_count(router: &Router, token: &str, id: u64) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "count",
        "arguments": {"text": "once"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}
        }
    }});
    let request = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "count")
        .body(Body::from(body.to_string()))
        .expect("request");
    bounded(
        "a 2026-07-28 tools/call with a bearer token",
        router.clone().oneshot(request),
    )
    .await
    .expect("infallible")
}

#[tokio::test]
async fn a_2026_call_with_authorization_decodes_its_arguments_once() {
    let router = counting_router();

    let refused = call_count(&router, "alice", 1).await;
    assert_eq!(
        refused.status(),
        StatusCode::FORBIDDEN,
        "count needs mcp:admin"
    );
    assert_eq!(
        DECODES.load(Ordering::SeqCst),
        0,
        "a call refused for its scopes is not decoded"
    );

    let answered = call_count(&router, "alice-admin", 2).await;
    assert_eq!(answered.status(), StatusCode::OK);
    let answer = json_body(answered).await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "once", "{answer}");
    assert_eq!(
        DECODES.load(Ordering::SeqCst),
        1,
        "the arguments are decoded once, into the handler's type"
    );
}
