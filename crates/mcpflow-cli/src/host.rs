//! `mcpflow host`: every server of an `mcpServers` file behind one tool host, its merged
//! catalog and each server's health; `--watch` follows changes. `mcpflow call --config
//! FILE NAME` (without `--server`) calls a tool by its catalog name through the host.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpflow::host::{
    CallOptions, CatalogSnapshot, Health, HostError, HostEvent, ReconnectPolicy, ServersConfig,
    ToolHost,
};
use serde_json::{Value, json};

use mcpflow::SessionConfig;

use crate::args::ServerArgs;
use crate::auth::AuthArgs;
use crate::call::CallRequest;
use crate::failure::{
    EXIT_CONNECTION, EXIT_INTERRUPTED, EXIT_RPC_ERROR, EXIT_TOOL_ERROR, Failure, one_line,
};
use crate::input::{ArgsInput, read_args, typed_pairs};
use crate::live::Live;
use crate::render::{Saver, print_blocks};
use crate::signals::Interrupt;

/// The flags of `mcpflow host`.
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// The `mcpServers` file (Claude Desktop, Cursor, VS Code `mcp.json`).
    #[arg(long, value_name = "FILE")]
    pub config: std::path::PathBuf,
    /// Keep running: print catalog changes and health transitions as they happen,
    /// until Ctrl-C.
    #[arg(long)]
    pub watch: bool,
    /// Seconds each server may take to connect and list what it offers.
    #[arg(long, default_value_t = 30.0, value_parser = crate::args::parse_secs, value_name = "SECS")]
    pub timeout: f64,
    /// Print JSON (one object; with `--watch`, one object per line).
    #[arg(long)]
    pub json: bool,
}

/// Start a host over every enabled server of `path`, each with `timeout` to connect;
/// HTTP servers that answer 401 run the OAuth flow of `--url` with `auth`.
async fn start(path: &Path, timeout: f64, auth: &AuthArgs) -> Result<ToolHost, Failure> {
    let config = ServersConfig::from_file(path)
        .map_err(|e| Failure::usage(format!("--config {}: {e}", path.display())))?;
    let mut oauth = crate::auth::hosted::for_servers(&config, auth).await?;
    let mut wait = Duration::from_secs_f64(timeout);
    let mut builder = ToolHost::builder().client_info("mcpflow-host", env!("CARGO_PKG_VERSION"));
    if oauth.interactive && !oauth.configs.is_empty() {
        // The handshake may wait for the user in the browser as well.
        wait += auth.timeout();
        builder = builder.session_config(SessionConfig::builder().request_timeout(wait).build());
    }
    let reconnect = ReconnectPolicy::default().connect_timeout(wait);
    let builder = builder
        .reconnect(reconnect)
        .servers_config_with_oauth(
            &config,
            |name| std::env::var(name).ok(),
            |name, _| oauth.configs.remove(name),
        )
        .map_err(|e| Failure::usage(format!("--config {}: {e}", path.display())))?;
    Ok(builder.start())
}

/// `mcpflow host`: exit 0 when every server is ready, 3 otherwise (each failure named).
pub async fn run(args: &HostArgs, interrupt: &Interrupt) -> u8 {
    let host = match start(&args.config, args.timeout, &AuthArgs::default()).await {
        Ok(host) => host,
        Err(failure) => return failure.report(args.json),
    };
    let began = Instant::now();
    let health = tokio::select! {
        health = host.wait_ready() => health,
        () = interrupt.pressed() => {
            host.close().await;
            return EXIT_INTERRUPTED;
        }
    };
    let ready_after = began.elapsed();
    let snapshot = host.snapshot();
    if args.json {
        println!("{}", catalog_json(&snapshot, &health, ready_after));
    } else {
        print_catalog(&snapshot, &health, ready_after);
    }
    let failed: Vec<&(String, Health)> =
        health.iter().filter(|(_, h)| *h != Health::Ready).collect();
    if !args.watch {
        host.close().await;
        for (name, health) in &failed {
            if !args.json {
                eprintln!(
                    "mcpflow: server `{name}` is not ready: {}",
                    health_text(health)
                );
            }
        }
        return if failed.is_empty() {
            0
        } else {
            EXIT_CONNECTION
        };
    }
    let mut events = host.events();
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => print_event(&event, args.json),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    eprintln!("mcpflow: {n} events were missed; the catalog is now:");
                    print_catalog(&host.snapshot(), &host.health_all(), ready_after);
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            },
            () = interrupt.pressed() => break,
        }
    }
    host.close().await;
    EXIT_INTERRUPTED
}

/// A server's health as one short phrase; a cause that is a missing sign-in says only
/// how to sign in (the layers it crossed would push that past what is shown).
fn health_text(health: &Health) -> String {
    let one_line = |cause: &str| one_line(crate::auth::hosted::needs_login(cause).unwrap_or(cause));
    match health {
        Health::Connecting => "connecting".to_owned(),
        Health::Ready => "ready".to_owned(),
        Health::Degraded { cause } => format!("degraded: {}", one_line(cause)),
        Health::Reconnecting {
            cause,
            attempt,
            retry_at,
        } => format!(
            "reconnecting (attempt {attempt}, next in {:.1}s): {}",
            retry_at
                .saturating_duration_since(tokio::time::Instant::now())
                .as_secs_f64(),
            one_line(cause)
        ),
        Health::Failed { cause } => format!("failed: {}", one_line(cause)),
        Health::Closed => "closed".to_owned(),
        _ => format!("{health:?}"),
    }
}

fn print_catalog(snapshot: &CatalogSnapshot, health: &[(String, Health)], ready_after: Duration) {
    println!(
        "servers ({}, first attempts done in {:.0} ms):",
        health.len(),
        ready_after.as_secs_f64() * 1000.0
    );
    for (name, health) in health {
        println!("  {name}: {}", health_text(health));
    }
    let tools: Vec<_> = snapshot.tools().collect();
    println!("tools ({}):", tools.len());
    for tool in tools {
        let description = tool.remote().description.as_deref().unwrap_or("");
        let first = description.lines().next().unwrap_or("");
        println!("  {} [{}] {first}", tool.name(), tool.server());
    }
    let prompts: Vec<_> = snapshot.prompts().collect();
    println!("prompts ({}):", prompts.len());
    for prompt in prompts {
        println!("  {} [{}]", prompt.name(), prompt.server());
    }
    println!("resources ({}):", snapshot.resources().len());
    for served in snapshot.resources() {
        println!("  {} [{}]", served.item.uri, served.server);
    }
    println!("templates ({}):", snapshot.templates().len());
    for served in snapshot.templates() {
        println!("  {} [{}]", served.item.uri_template, served.server);
    }
    for collision in snapshot.collisions() {
        println!(
            "collision: `{}` offered by {}",
            collision.name,
            collision.servers.join(", ")
        );
    }
}

fn catalog_json(
    snapshot: &CatalogSnapshot,
    health: &[(String, Health)],
    ready_after: Duration,
) -> Value {
    let servers: serde_json::Map<String, Value> = health
        .iter()
        .map(|(name, h)| {
            let state = match h {
                Health::Ready => "ready",
                Health::Connecting => "connecting",
                Health::Degraded { .. } => "degraded",
                Health::Reconnecting { .. } => "reconnecting",
                Health::Failed { .. } => "failed",
                _ => "closed",
            };
            (
                name.clone(),
                json!({"state": state, "detail": health_text(h)}),
            )
        })
        .collect();
    json!({
        "servers": servers,
        "readyMs": (ready_after.as_secs_f64() * 1000.0).round(),
        "tools": snapshot.tools().map(|t| json!({
            "name": t.name(), "server": t.server(), "tool": t.remote(),
        })).collect::<Vec<_>>(),
        "prompts": snapshot.prompts().map(|p| json!({
            "name": p.name(), "server": p.server(), "prompt": p.remote(),
        })).collect::<Vec<_>>(),
        "resources": snapshot.resources().iter().map(|r| json!({
            "server": &*r.server, "resource": &r.item,
        })).collect::<Vec<_>>(),
        "templates": snapshot.templates().iter().map(|t| json!({
            "server": &*t.server, "template": &t.item,
        })).collect::<Vec<_>>(),
        "collisions": snapshot.collisions().iter().map(|c| json!({
            "name": c.name, "servers": c.servers.iter().map(|s| &**s).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn print_event(event: &HostEvent, json_out: bool) {
    let names = |items: &[mcpflow::host::ItemRef]| {
        items
            .iter()
            .map(|i| format!("{} ({:?} on {})", i.name, i.kind, i.server))
            .collect::<Vec<_>>()
    };
    match event {
        HostEvent::CatalogChanged(change) if json_out => println!(
            "{}",
            json!({"catalog": {"generation": change.generation, "added": names(&change.added),
                "removed": names(&change.removed), "changed": names(&change.changed)}})
        ),
        HostEvent::CatalogChanged(change) => {
            for (sign, items) in [
                ("+", &change.added),
                ("-", &change.removed),
                ("~", &change.changed),
            ] {
                for item in names(items) {
                    println!("catalog {sign} {item}");
                }
            }
        }
        HostEvent::Health { server, health } if json_out => {
            println!(
                "{}",
                json!({"health": {"server": &**server, "detail": health_text(health)}})
            );
        }
        HostEvent::Health { server, health } => {
            println!("health {server}: {}", health_text(health))
        }
        HostEvent::NameCollision(c) if json_out => println!(
            "{}",
            json!({"collision": {"name": c.name, "servers": c.servers.iter().map(|s| &**s).collect::<Vec<_>>()}})
        ),
        HostEvent::NameCollision(c) => {
            println!(
                "collision: `{}` offered by {}",
                c.name,
                c.servers.join(", ")
            );
        }
        _ => {}
    }
}

/// `mcpflow call --config FILE NAME ARGS`: the tool the host's catalog offers as `NAME`.
pub async fn call(request: CallRequest, server: &ServerArgs, interrupt: &Interrupt) -> u8 {
    match call_through_host(request, server, interrupt).await {
        Ok(code) => code,
        Err(failure) => failure.report(server.json),
    }
}

async fn call_through_host(
    request: CallRequest,
    server: &ServerArgs,
    interrupt: &Interrupt,
) -> Result<u8, Failure> {
    let Some(path) = &server.config else {
        return Err(Failure::usage(
            "--config FILE is needed to call through the host",
        ));
    };
    let input = read_args(&request.args)?;
    let mut saver = Saver::new(request.out.clone())?;
    let host = start(path, server.timeout, &server.auth).await?;
    let outcome = tokio::select! {
        outcome = call_tool(&host, &request.tool, input, server) => Some(outcome),
        () = interrupt.pressed() => None,
    };
    host.close().await;
    let (result, live) = match outcome {
        None => return Err(Failure::interrupted()),
        Some(outcome) => outcome?,
    };
    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
    if server.json {
        let (_, progress, _) = live.to_json();
        println!("{}", json!({ "result": value, "progress": progress }));
    } else {
        let blocks = value["content"].as_array().cloned().unwrap_or_default();
        print_blocks(&blocks, &mut saver);
        if let Some(structured) = &result.structured_content {
            println!("structured: {structured}");
        }
    }
    Ok(if result.is_error() {
        EXIT_TOOL_ERROR
    } else {
        0
    })
}

async fn call_tool(
    host: &ToolHost,
    name: &str,
    input: ArgsInput,
    server: &ServerArgs,
) -> Result<(mcpflow::protocol::CallToolResult, Arc<Live>), Failure> {
    host.wait_ready().await;
    let arguments = match input {
        ArgsInput::Object(map) => map,
        ArgsInput::Pairs(pairs) => {
            let snapshot = host.snapshot();
            let schema = snapshot
                .tool(name)
                .map(|t| Value::Object(t.remote().input_schema.clone()));
            typed_pairs(&pairs, schema.as_ref())?
        }
    };
    let live = Arc::new(Live::new(server.json));
    let on_progress = live.clone();
    let options = CallOptions::new()
        .timeout(Duration::from_secs_f64(server.timeout))
        .on_progress(move |update| on_progress.progress(&update));
    let outcome = host
        .call_with(name, Value::Object(arguments), options)
        .await;
    live.finish();
    match outcome {
        Ok(result) => Ok((result, live)),
        // The tool ran and failed: its content is the answer, exit 1.
        Err(HostError::ToolFailed { result, .. }) => Ok((*result, live)),
        Err(error) => Err(host_failure(&error)),
    }
}

/// The exit code of a host error: 4 for what the catalog or the server refused, 3 for
/// a server that could not answer, 130 for a cancelled call.
fn host_failure(error: &HostError) -> Failure {
    let message = match error {
        // The whole list may be long: name the likely one, and where the list is.
        HostError::ToolNotFound { name, available } => {
            let suffix = format!("__{name}");
            let hint = available
                .iter()
                .filter(|a| a.ends_with(&suffix))
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>();
            let hint = if hint.is_empty() {
                String::new()
            } else {
                format!("; did you mean {}?", hint.join(" or "))
            };
            format!(
                "no tool named `{name}` in the catalog ({} tools){hint} `mcpflow host --config FILE` lists them",
                available.len()
            )
        }
        other => one_line(&other.to_string()),
    };
    let mut failure = Failure::connection(message);
    failure.exit = match error {
        HostError::ToolNotFound { .. }
        | HostError::Ambiguous { .. }
        | HostError::InvalidArguments { .. }
        | HostError::Denied { .. }
        | HostError::Protocol { .. } => EXIT_RPC_ERROR,
        HostError::Cancelled { .. } => EXIT_INTERRUPTED,
        _ => EXIT_CONNECTION,
    };
    failure
}
