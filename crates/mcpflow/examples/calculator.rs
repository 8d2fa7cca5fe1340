//! The smallest complete server: one typed tool over stdio.
//!
//! `mcpflow call --json add '{"a": 2, "b": 3}' -- cargo run -q -p mcpflow --example calculator`

use mcpflow::server::Server;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::main]
async fn main() {
    Server::builder("calculator", "1.0.0")
        .typed_tool("add", "Add two numbers", |args: Add, _cx| async move {
            Ok::<_, String>((args.a + args.b).to_string())
        })
        .build()
        .serve(mcpflow::transport::stdio::stdio())
        .wait()
        .await;
}
