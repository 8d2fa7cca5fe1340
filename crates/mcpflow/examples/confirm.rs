//! A server whose tool asks the user to confirm before it acts (typed elicitation).
//!
//! `mcpflow call delete_everything -- cargo run -q -p mcpflow --example confirm`
//! (the `mcpflow` command declines elicitation, so the tool reports it did nothing).

use mcpflow::server::Server;
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `delete_everything`.
#[derive(Deserialize, JsonSchema)]
pub struct Target {
    /// What to delete.
    #[serde(default)]
    pub what: Option<String>,
}

/// The user's answer.
#[derive(Deserialize, JsonSchema)]
pub struct Confirmation {
    /// Whether to go ahead.
    pub confirm: bool,
}

/// The server: `delete_everything` asks first and only "deletes" on a yes.
pub fn server() -> Server {
    Server::builder("confirm", "1.0.0")
        .typed_tool(
            "delete_everything",
            "Delete everything, after asking",
            |args: Target, cx| async move {
                let what = args.what.unwrap_or_else(|| "everything".to_owned());
                let answer = cx
                    .elicit_as::<Confirmation>(&format!("Really delete {what}?"))
                    .await
                    .map_err(|e| format!("could not ask the user: {e}"))?;
                Ok::<_, String>(match answer {
                    Some(Confirmation { confirm: true }) => format!("deleted {what} (not really)"),
                    _ => "kept everything: the user did not confirm".to_owned(),
                })
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
