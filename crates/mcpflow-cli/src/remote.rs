//! `mcpflow inspect` and `mcpflow call`: talk to a server started as a child process.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpflow::client::{Client, ClientBuilder};
use mcpflow::http::client::HttpClientTransport;
use mcpflow::protocol::content::ContentBlock;
use mcpflow::protocol::{
    CallToolRequestParams, CallToolResult, CreateMessageResult, ResourceContents,
};
use mcpflow::transport::ChildProcess;
use mcpflow::{RequestOptions, SessionConfig};
use serde_json::{Value, json};

use crate::{EXIT_CONNECTION, EXIT_TOOL_ERROR, EXIT_USAGE};

/// Options of `mcpflow call`.
#[derive(Debug)]
pub struct CallOptions {
    /// Print JSON.
    pub json: bool,
    /// Request timeout in seconds.
    pub timeout: f64,
    /// Fixed answer to sampling requests.
    pub sampling_response: Option<String>,
}

/// Counts of notifications by method.
type Counts = Arc<Mutex<BTreeMap<String, u64>>>;

fn bump(counts: &Counts, method: &str) {
    *counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(method.to_owned())
        .or_default() += 1;
}

fn snapshot(counts: &Counts) -> BTreeMap<String, u64> {
    counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

fn fail(code: u8, message: impl std::fmt::Display) -> u8 {
    eprintln!("mcpflow: {message}");
    code
}

fn config(timeout: Duration) -> SessionConfig {
    SessionConfig::builder().request_timeout(timeout).build()
}

/// The server to talk to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command to start as a child process (stdio).
    Command(Vec<String>),
    /// The URL of a streamable HTTP endpoint (legacy HTTP+SSE servers are detected).
    Url(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Command(command) => write!(f, "`{}`", command.join(" ")),
            Target::Url(url) => write!(f, "{url}"),
        }
    }
}

/// Start or reach the server and run the handshake.
async fn connect(
    builder: ClientBuilder,
    target: &Target,
    timeout: Duration,
) -> Result<Client, String> {
    let builder = builder.session_config(config(timeout));
    // `initialize` is bounded by the request timeout; this is a second, outer bound.
    let outer = timeout + Duration::from_secs(5);
    let connected = match target {
        Target::Command(command) => {
            let (program, args) = command
                .split_first()
                .ok_or("no server command given after `--`")?;
            let child = ChildProcess::builder(program)
                .args(args)
                .spawn()
                .map_err(|e| e.to_string())?;
            tokio::time::timeout(outer, builder.connect(child)).await
        }
        Target::Url(url) => {
            let transport = HttpClientTransport::new(url.clone())
                .map_err(|e| format!("invalid server URL `{url}`: {e}"))?;
            tokio::time::timeout(outer, builder.connect(transport)).await
        }
    };
    match connected {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(format!("could not connect to {target}: {e}")),
        Err(_) => Err(format!(
            "{target} did not finish the handshake in {timeout:?}"
        )),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// `mcpflow inspect`: print what the server offers. Returns the exit code.
pub async fn inspect(target: &Target, json_out: bool, timeout_secs: f64) -> u8 {
    let timeout = Duration::from_secs_f64(timeout_secs);
    let client = match connect(
        Client::builder("mcpflow-inspect", env!("CARGO_PKG_VERSION")),
        target,
        timeout,
    )
    .await
    {
        Ok(c) => c,
        Err(e) => return fail(EXIT_CONNECTION, e),
    };
    let outcome = tokio::time::timeout(timeout * 4, describe(&client)).await;
    client.close().await;
    let report = match outcome {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => return fail(EXIT_CONNECTION, e),
        Err(_) => return fail(EXIT_CONNECTION, "listing the server's offerings timed out"),
    };
    if json_out {
        println!("{report}");
    } else {
        print_report(&report);
    }
    0
}

/// Everything `inspect` shows, as JSON.
async fn describe(client: &Client) -> Result<Value, mcpflow::SessionError> {
    let init = client.server_info();
    let caps = &init.capabilities;
    let mut report = json!({
        "serverInfo": to_json(&init.server_info),
        "protocolVersion": init.protocol_version.as_str(),
        "capabilities": to_json(caps),
    });
    if let Some(instructions) = &init.instructions {
        report["instructions"] = json!(instructions);
    }
    if caps.tools.is_some() {
        report["tools"] = to_json(&client.list_all_tools().await?);
    }
    if caps.prompts.is_some() {
        report["prompts"] = to_json(&client.list_all_prompts().await?);
    }
    if caps.resources.is_some() {
        report["resources"] = to_json(&client.list_all_resources().await?);
        report["resourceTemplates"] = to_json(&client.list_all_resource_templates().await?);
    }
    Ok(report)
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn print_report(report: &Value) {
    let info = &report["serverInfo"];
    println!("server: {} {}", text(info, "name"), text(info, "version"));
    println!("protocol version: {}", text(report, "protocolVersion"));
    let caps: Vec<String> = report["capabilities"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    if v.as_object().is_some_and(|o| !o.is_empty()) {
                        format!("{k} {v}")
                    } else {
                        k.clone()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    println!(
        "capabilities: {}",
        if caps.is_empty() {
            "(none)".to_owned()
        } else {
            caps.join(", ")
        }
    );
    if let Some(instructions) = report.get("instructions").and_then(Value::as_str) {
        println!("instructions: {instructions}");
    }
    let section = |key: &str, title: &str, line: &dyn Fn(&Value) -> String| {
        if let Some(items) = report.get(key).and_then(Value::as_array) {
            println!("{title} ({}):", items.len());
            for item in items {
                println!("  {}", line(item));
            }
        }
    };
    let described =
        |head: String, item: &Value| match item.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{head} - {d}"),
            _ => head,
        };
    section("tools", "tools", &|t| {
        let params: Vec<String> = t["inputSchema"]["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        described(format!("{}({})", text(t, "name"), params.join(", ")), t)
    });
    section("prompts", "prompts", &|p| {
        let args: Vec<String> = p["arguments"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|arg| {
                        let required = if arg["required"].as_bool() == Some(true) {
                            ""
                        } else {
                            "?"
                        };
                        format!("{}{required}", text(arg, "name"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        described(format!("{}({})", text(p, "name"), args.join(", ")), p)
    });
    section("resources", "resources", &|r| {
        let mime = text(r, "mimeType");
        let head = format!(
            "{} [{}]{}",
            text(r, "uri"),
            text(r, "name"),
            if mime.is_empty() {
                String::new()
            } else {
                format!(" {mime}")
            }
        );
        described(head, r)
    });
    section("resourceTemplates", "resource templates", &|r| {
        described(
            format!("{} [{}]", text(r, "uriTemplate"), text(r, "name")),
            r,
        )
    });
}

/// `mcpflow call`: call one tool and report the result and the notifications that
/// arrived before it. Returns the exit code.
pub async fn call(
    tool: &str,
    args_json: Option<&str>,
    target: &Target,
    options: CallOptions,
) -> u8 {
    let arguments = match args_json.map(serde_json::from_str::<Value>) {
        None => serde_json::Map::new(),
        Some(Ok(Value::Object(map))) => map,
        Some(Ok(other)) => {
            return fail(
                EXIT_USAGE,
                format!("ARGS_JSON must be a JSON object, not `{other}`"),
            );
        }
        Some(Err(e)) => return fail(EXIT_USAGE, format!("ARGS_JSON is not valid JSON: {e}")),
    };
    let timeout = Duration::from_secs_f64(options.timeout);
    let counts: Counts = Arc::default();
    let seen = counts.clone();
    let mut builder = Client::builder("mcpflow-call", env!("CARGO_PKG_VERSION")).on_notification(
        move |n, _client| {
            bump(&seen, &n.method);
            async {}
        },
    );
    if let Some(answer) = options.sampling_response {
        builder = builder.on_sampling(move |_params, _client| {
            let answer = answer.clone();
            async move { Ok(CreateMessageResult::assistant_text("mcpflow-cli", answer)) }
        });
    }
    let client = match connect(builder, target, timeout).await {
        Ok(c) => c,
        Err(e) => return fail(EXIT_CONNECTION, e),
    };
    let progress = counts.clone();
    let request = RequestOptions::new()
        .timeout(timeout)
        .on_progress(move |_| bump(&progress, "notifications/progress"));
    let params = CallToolRequestParams::new(tool).with_arguments(arguments);
    let outcome = client.call_tool_with(&params, request).await;
    // Notifications that arrived before the result may still be on the notification
    // lane: wait until their handlers (which only count) have run.
    client.notifications_handled().await;
    client.close().await;
    let result = match outcome {
        Ok(result) => result,
        Err(e) => return fail(EXIT_CONNECTION, e),
    };
    let notifications = snapshot(&counts);
    if options.json {
        println!(
            "{}",
            json!({ "result": to_json(&result), "notifications": notifications })
        );
    } else {
        print_result(&result, &notifications);
    }
    if result.is_error() {
        EXIT_TOOL_ERROR
    } else {
        0
    }
}

fn print_result(result: &CallToolResult, notifications: &BTreeMap<String, u64>) {
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => println!("{}", t.text),
            ContentBlock::Image(i) => {
                println!("[image {}, {} base64 bytes]", i.mime_type, i.data.len())
            }
            ContentBlock::Audio(a) => {
                println!("[audio {}, {} base64 bytes]", a.mime_type, a.data.len())
            }
            ContentBlock::ResourceLink(r) => println!("[link {} ({})]", r.uri, r.name),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::Text(t) => {
                    println!(
                        "[resource {} {}]",
                        t.uri,
                        t.mime_type.as_deref().unwrap_or("")
                    );
                    println!("{}", t.text);
                }
                ResourceContents::Blob(b) => println!(
                    "[resource {} {}, {} base64 bytes]",
                    b.uri,
                    b.mime_type.as_deref().unwrap_or(""),
                    b.blob.len()
                ),
                other => println!("{}", to_json(other)),
            },
            other => println!("{}", to_json(other)),
        }
    }
    if let Some(structured) = &result.structured_content {
        println!("structured: {structured}");
    }
    let counts = if notifications.is_empty() {
        "none".to_owned()
    } else {
        notifications
            .iter()
            .map(|(m, n)| format!("{m}={n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let status = if result.is_error() {
        "tool error (isError: true)"
    } else {
        "ok"
    };
    println!(
        "-- {status}; {} content block(s); notifications: {counts}",
        result.content.len()
    );
}
