//! The short verbs: `list`, `read`, `prompt`, `complete` and `ping`. Each connects,
//! sends one request (or pages through one list) and prints text or `--json`.

use std::path::PathBuf;
use std::time::Duration;

use std::collections::BTreeMap;

use mcpflow::RequestOptions;
use mcpflow::client::Client;
use mcpflow::protocol::methods;
use mcpflow::protocol::resources::{Resource, ResourceTemplate};
use mcpflow::protocol::{
    GetPromptRequestParams, MirroredParams, Prompt, ReadResourceRequestParams, RequestMethod, Tool,
};
use serde_json::{Map, Value, json};

use crate::args::ServerArgs;
use crate::connect::{Connection, connect};
use crate::failure::{Failure, cut};
use crate::inspect::{first_line, item_line};
use crate::render::{Saver, print_blocks, print_contents, text, write_contents};
use crate::signals::Interrupt;

/// Most pages followed before giving up on a server that never stops returning cursors.
const MAX_PAGES: usize = 1000;

/// `resources/read`, its result kept as the server sent it, to print.
struct ReadResource;

impl RequestMethod for ReadResource {
    const METHOD: &'static str = methods::ReadResource::METHOD;
    type Params = ReadResourceRequestParams;
    type Result = Value;

    fn mirrored(params: &Self::Params) -> MirroredParams<'_> {
        methods::ReadResource::mirrored(params)
    }
}

/// `prompts/get`, its result kept as the server sent it, to print.
struct GetPrompt;

impl RequestMethod for GetPrompt {
    const METHOD: &'static str = methods::GetPrompt::METHOD;
    type Params = GetPromptRequestParams;
    type Result = Value;

    fn mirrored(params: &Self::Params) -> MirroredParams<'_> {
        methods::GetPrompt::mirrored(params)
    }
}

/// What `list` lists.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ListWhat {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
}

impl ListWhat {
    /// The method, the result's list field, and the JSON key under `inspect --json`.
    pub fn method(self) -> (&'static str, &'static str) {
        match self {
            ListWhat::Tools => ("tools/list", "tools"),
            ListWhat::Prompts => ("prompts/list", "prompts"),
            ListWhat::Resources => ("resources/list", "resources"),
            ListWhat::Templates => ("resources/templates/list", "resourceTemplates"),
        }
    }
}

/// A list, with the entries that could not be read.
#[derive(Debug, Default)]
pub struct Listed {
    /// Entries that are well-formed.
    pub items: Vec<Value>,
    /// One line per entry skipped.
    pub skipped: Vec<String>,
}

fn options(timeout: f64) -> RequestOptions {
    RequestOptions::new().timeout(Duration::from_secs_f64(timeout))
}

/// Every page of `method`; a malformed entry is skipped and reported, not fatal.
pub async fn list_all(
    conn: &Connection,
    method: &str,
    field: &str,
    timeout: f64,
) -> Result<Listed, Failure> {
    let mut listed = Listed::default();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page: Value = conn
            .client
            .peer()
            .request(method, &params, options(timeout))
            .await
            .map_err(|e| conn.failure(&e))?;
        for item in array_of(&page, method, field)? {
            match check(field, item) {
                Ok(()) => listed.items.push(item.clone()),
                Err(e) => listed.skipped.push(format!(
                    "skipped {field} entry {} ({}): {e}",
                    listed.items.len() + listed.skipped.len() + 1,
                    cut(
                        &item
                            .get("name")
                            .map_or_else(|| item.to_string(), |n| n.to_string()),
                        60
                    )
                )),
            }
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if cursor.as_deref() != Some(next) => cursor = Some(next.to_owned()),
            Some(_) => {
                return Err(Failure::connection(format!(
                    "`{method}`: the server returned the same cursor twice"
                )));
            }
            None => return Ok(listed),
        }
    }
    Err(Failure::connection(format!(
        "`{method}`: more than {MAX_PAGES} pages"
    )))
}

/// Whether `item` reads as an entry of `field`.
/// `result[field]`, which the schema makes an array: anything else, or nothing, is no
/// valid answer, not an empty one.
fn array_of<'a>(result: &'a Value, method: &str, field: &str) -> Result<&'a [Value], Failure> {
    match result.get(field) {
        Some(Value::Array(items)) => Ok(items),
        other => Err(Failure::connection(format!(
            "`{method}`: the answer is not valid MCP: `{field}` must be an array, not {}",
            other.map_or_else(|| "missing".to_owned(), |v| cut(&v.to_string(), 60))
        ))),
    }
}

fn check(field: &str, item: &Value) -> Result<(), String> {
    let result = match field {
        "tools" => serde_json::from_value::<Tool>(item.clone()).map(drop),
        "prompts" => serde_json::from_value::<Prompt>(item.clone()).map(drop),
        "resources" => serde_json::from_value::<Resource>(item.clone()).map(drop),
        "resourceTemplates" => serde_json::from_value::<ResourceTemplate>(item.clone()).map(drop),
        _ => Ok(()),
    };
    result.map_err(|e| e.to_string())
}

fn client(verb: &str) -> mcpflow::client::ClientBuilder {
    Client::builder(format!("mcpflow-{verb}"), env!("CARGO_PKG_VERSION"))
}

/// Run a verb body on a fresh connection; closes it and reports failures.
async fn with_connection<F, Fut>(
    verb: &str,
    server: &ServerArgs,
    interrupt: &Interrupt,
    body: F,
) -> u8
where
    F: FnOnce(Connection) -> Fut,
    Fut: std::future::Future<Output = (Connection, Result<u8, Failure>)>,
{
    let conn = match connect(server, client(verb), interrupt).await {
        Ok(conn) => conn,
        Err(failure) => return failure.report(server.json),
    };
    let outcome = tokio::select! {
        outcome = body(conn) => Some(outcome),
        () = interrupt.pressed() => None,
    };
    match outcome {
        // The connection went with the dropped body.
        None => {
            crate::signals::signal_child(libc::SIGKILL);
            Failure::interrupted().report(server.json)
        }
        Some((conn, Ok(code))) => {
            conn.close().await;
            code
        }
        Some((conn, Err(failure))) => {
            conn.close_hurried().await;
            failure.report(server.json)
        }
    }
}

/// `mcpflow list`.
pub async fn list(what: ListWhat, server: &ServerArgs, interrupt: &Interrupt) -> u8 {
    let json_out = server.json;
    let timeout = server.timeout;
    with_connection("list", server, interrupt, |conn| async move {
        let (method, field) = what.method();
        let result = list_all(&conn, method, field, timeout).await.map(|listed| {
            for skipped in &listed.skipped {
                errln!("mcpflow: warning: {skipped}");
            }
            if json_out {
                println!("{}", json!({ field: listed.items }));
            } else {
                for item in &listed.items {
                    outln!("{}", item_line(field, item, false));
                }
            }
            0
        });
        (conn, result)
    })
    .await
}

/// `mcpflow read URI`.
pub async fn read(
    uri: String,
    out: Option<PathBuf>,
    server: &ServerArgs,
    interrupt: &Interrupt,
) -> u8 {
    let json_out = server.json;
    let timeout = server.timeout;
    with_connection("read", server, interrupt, |conn| async move {
        let params = ReadResourceRequestParams::new(uri);
        let answer = conn
            .client
            .request::<ReadResource>(&params, options(timeout))
            .await;
        let result = match answer {
            Err(e) => Err(conn.failure(&e)),
            Ok(result) => match array_of(&result, "resources/read", "contents") {
                Err(e) => Err(e),
                Ok(contents) => match &out {
                    Some(path) => write_contents(contents, path).map(|n| {
                        if json_out {
                            println!("{}", json!({ "written": path, "bytes": n }));
                        } else {
                            errln!("mcpflow: wrote {n} bytes to {}", path.display());
                        }
                        0
                    }),
                    None if json_out => {
                        println!("{result}");
                        Ok(0)
                    }
                    None => {
                        let hint = Some("save it with --out FILE");
                        print_contents(contents, &mut Saver::describing(hint));
                        Ok(0)
                    }
                },
            },
        };
        (conn, result)
    })
    .await
}

/// `mcpflow prompt NAME key=value...`.
pub async fn prompt(
    name: String,
    pairs: Vec<String>,
    server: &ServerArgs,
    interrupt: &Interrupt,
) -> u8 {
    let mut arguments = BTreeMap::new();
    for pair in &pairs {
        match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                arguments.insert(k.to_owned(), v.to_owned());
            }
            _ => {
                return Failure::usage(format!("prompt arguments are key=value, not `{pair}`"))
                    .report(server.json);
            }
        }
    }
    let json_out = server.json;
    let timeout = server.timeout;
    with_connection("prompt", server, interrupt, |conn| async move {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        let answer = conn
            .client
            .request::<GetPrompt>(&params, options(timeout))
            .await;
        let result = answer.map_err(|e| conn.failure(&e)).and_then(|result| {
            let messages = array_of(&result, "prompts/get", "messages")?;
            if json_out {
                println!("{result}");
            } else {
                if let Some(d) = result.get("description").and_then(Value::as_str) {
                    outln!("# {}", first_line(d));
                }
                for message in messages {
                    outln!("[{}]", text(message, "role"));
                    print_blocks(
                        std::slice::from_ref(&message["content"]),
                        &mut Saver::describing(None),
                    );
                }
            }
            Ok(0)
        });
        (conn, result)
    })
    .await
}

/// `mcpflow complete REF ARG=VALUE`.
pub async fn complete(
    reference: String,
    argument: String,
    context: Vec<String>,
    server: &ServerArgs,
    interrupt: &Interrupt,
) -> u8 {
    let reference = match reference.split_once(':') {
        Some(("prompt", name)) => json!({ "type": "ref/prompt", "name": name }),
        Some(("resource", uri)) => json!({ "type": "ref/resource", "uri": uri }),
        _ => {
            return Failure::usage(format!(
                "REF is `prompt:NAME` or `resource:URI_TEMPLATE`, not `{reference}`"
            ))
            .report(server.json);
        }
    };
    let Some((name, value)) = argument.split_once('=') else {
        return Failure::usage(format!("ARG is NAME=PARTIAL_VALUE, not `{argument}`"))
            .report(server.json);
    };
    let mut arguments = Map::new();
    for pair in &context {
        match pair.split_once('=') {
            Some((k, v)) => {
                arguments.insert(k.to_owned(), Value::String(v.to_owned()));
            }
            None => {
                return Failure::usage(format!("--context takes key=value, not `{pair}`"))
                    .report(server.json);
            }
        }
    }
    let mut params = json!({ "ref": reference, "argument": { "name": name, "value": value } });
    if !arguments.is_empty() {
        params["context"] = json!({ "arguments": arguments });
    }
    let json_out = server.json;
    let timeout = server.timeout;
    with_connection("complete", server, interrupt, |conn| async move {
        let answer: Result<Value, _> = conn
            .client
            .peer()
            .request("completion/complete", &params, options(timeout))
            .await;
        let result = answer.map_err(|e| conn.failure(&e)).map(|result| {
            if json_out {
                println!("{result}");
            } else {
                for v in result["completion"]["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    outln!(
                        "{}",
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                    );
                }
            }
            0
        });
        (conn, result)
    })
    .await
}

/// `mcpflow ping`.
pub async fn ping(server: &ServerArgs, interrupt: &Interrupt) -> u8 {
    let json_out = server.json;
    let timeout = server.timeout;
    with_connection("ping", server, interrupt, |conn| async move {
        let started = std::time::Instant::now();
        let answer: Result<Value, _> = conn
            .client
            .peer()
            .request("ping", &json!({}), options(timeout))
            .await;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let result = answer.map_err(|e| conn.failure(&e)).map(|_| {
            if json_out {
                println!(
                    "{}",
                    json!({ "ok": true, "ms": (ms * 1000.0).round() / 1000.0 })
                );
            } else {
                outln!("pong from {} in {ms:.1} ms", conn.target);
            }
            0
        });
        (conn, result)
    })
    .await
}
