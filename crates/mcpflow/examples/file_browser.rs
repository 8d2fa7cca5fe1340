//! A file-browsing server: a resource template over a directory, completion of file
//! names, and a tool that lists the directory.
//!
//! `mcpflow inspect -- cargo run -q -p mcpflow --example file_browser -- /some/dir`

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcpflow::protocol::resources::{Resource, ResourceTemplate};
use mcpflow::protocol::{
    CompletionReference, ErrorCode, ErrorObject, ReadResourceResult, ResourceContents,
};
use mcpflow::server::Server;
use schemars::JsonSchema;
use serde::Deserialize;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
pub struct Nothing {}

fn names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The server for files directly under `root`: `file:///{name}` reads one, completion
/// suggests names, `list_files` lists them.
pub fn server(root: PathBuf) -> Server {
    let root = Arc::new(root);
    let (r1, r2, r3, r4) = (root.clone(), root.clone(), root.clone(), root);
    Server::builder("file-browser", "1.0.0")
        .resource(
            Resource::new("file:///", "directory").with_mime_type("text/plain"),
            move |uri, _cx| {
                let root = r1.clone();
                async move {
                    Ok(ReadResourceResult::new(vec![ResourceContents::text(
                        uri,
                        names(&root).join("\n"),
                    )]))
                }
            },
        )
        .resource_template(
            ResourceTemplate::new("file:///{name}", "file"),
            move |uri, vars, _cx| {
                let root = r2.clone();
                async move {
                    let name = &vars["name"];
                    // Only plain names under the root: no traversal out of it.
                    if name.contains('/') || name.contains('\\') || name.starts_with('.') {
                        return Err(ErrorObject::invalid_params(format!(
                            "not a file name: {name}"
                        )));
                    }
                    let path = root.join(name);
                    let read =
                        tokio::task::spawn_blocking(move || std::fs::read_to_string(path)).await;
                    match read.unwrap_or_else(|e| Err(std::io::Error::other(e))) {
                        Ok(text) => Ok(ReadResourceResult::new(vec![
                            ResourceContents::text(uri, text).with_mime_type("text/plain"),
                        ])),
                        Err(e) => Err(ErrorObject::new(
                            ErrorCode::RESOURCE_NOT_FOUND,
                            format!("{name}: {e}"),
                        )),
                    }
                }
            },
        )
        .typed_tool(
            "list_files",
            "List the files in the directory",
            move |_args: Nothing, _cx| {
                let root = r4.clone();
                async move { Ok::<_, String>(names(&root).join("\n")) }
            },
        )
        .complete_argument(
            CompletionReference::resource("file:///{name}"),
            "name",
            move |prefix, _resolved, _cx| {
                let root = r3.clone();
                async move {
                    names(&root)
                        .into_iter()
                        .filter(|n| n.starts_with(&prefix))
                        .collect()
                }
            },
        )
        .build()
}

#[allow(dead_code)]
#[tokio::main]
async fn main() {
    let root = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    server(root)
        .serve(mcpflow::transport::stdio::stdio())
        .wait()
        .await;
}
