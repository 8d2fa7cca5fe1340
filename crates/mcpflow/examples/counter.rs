//! A stateful counter server: typed tools sharing state through an `Arc`.
//!
//! Run it over stdio and call it with the `mcpflow` command:
//! `mcpflow call --json increment '{"by": 2}' -- cargo run -q -p mcpflow --example counter`

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use mcpflow::server::{Server, Structured};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `increment`.
#[derive(Deserialize, JsonSchema)]
pub struct Increment {
    /// How much to add (default 1).
    #[serde(default = "one")]
    pub by: i64,
}

fn one() -> i64 {
    1
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
pub struct Nothing {}

/// The counter's value.
#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
pub struct Count {
    /// The value after the operation.
    pub value: i64,
}

/// The server: `increment`, `get` and `reset` over one shared counter.
pub fn server() -> Server {
    let counter = Arc::new(AtomicI64::new(0));
    let (c1, c2, c3) = (counter.clone(), counter.clone(), counter);
    Server::builder("counter", "1.0.0")
        .typed_tool(
            "increment",
            "Add to the counter",
            move |args: Increment, _cx| {
                let counter = c1.clone();
                async move {
                    let value = counter.fetch_add(args.by, Ordering::SeqCst) + args.by;
                    Ok::<_, String>(Structured(Count { value }))
                }
            },
        )
        .typed_tool("get", "Read the counter", move |_args: Nothing, _cx| {
            let counter = c2.clone();
            async move {
                Ok::<_, String>(Structured(Count {
                    value: counter.load(Ordering::SeqCst),
                }))
            }
        })
        .typed_tool(
            "reset",
            "Set the counter to zero",
            move |_args: Nothing, _cx| {
                let counter = c3.clone();
                async move {
                    counter.store(0, Ordering::SeqCst);
                    Ok::<_, String>("reset")
                }
            },
        )
        .build()
}

#[allow(dead_code)]
#[tokio::main]
async fn main() {
    server()
        .serve(mcpflow::transport::stdio::stdio())
        .wait()
        .await;
}
