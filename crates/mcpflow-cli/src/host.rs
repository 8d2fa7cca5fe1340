//! `mcpflow host`: every server of an `mcpServers` file behind one tool host, its merged
//! catalog and each server's health; `--watch` follows changes. `mcpflow call --config
//! FILE NAME` (without `--server`) calls a tool by its catalog name through the host.

use std::path::Path;
use std::time::{Duration, Instant};

use mcpflow::host::{CatalogSnapshot, Health, HostEvent, ReconnectPolicy, ServersConfig, ToolHost};
use serde_json::{Value, json};

use mcpflow::SessionConfig;

use crate::args::ServerArgs;
use crate::auth::AuthArgs;
use crate::call::CallRequest;
use crate::failure::{EXIT_CONNECTION, EXIT_INTERRUPTED, Failure, one_line};
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
/// HTTP servers that answer 401 run the OAuth flow of `--url` with `auth`. With
/// `keep_trying` (`--watch`), a server that keeps failing is retried, at most every
/// 30 s, for as long as the host runs.
async fn start(
    path: &Path,
    timeout: f64,
    auth: &AuthArgs,
    keep_trying: bool,
) -> Result<ToolHost, Failure> {
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
    let mut reconnect = ReconnectPolicy::default().connect_timeout(wait);
    if keep_trying {
        reconnect = reconnect.max_failures(u32::MAX);
    }
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
    let host = match start(&args.config, args.timeout, &AuthArgs::default(), args.watch).await {
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
                errln!(
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
    // What each server's health was last shown as: an event that repeats it (a
    // transition that ended where the catalog above already shows it) is not printed.
    let mut shown: std::collections::HashMap<String, String> = health
        .iter()
        .map(|(name, h)| (name.clone(), health_text(h)))
        .collect();
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(HostEvent::Health { server, health }) => {
                    let text = health_text(&health);
                    if shown.get(&*server) != Some(&text) {
                        shown.insert(server.to_string(), text);
                        print_event(&HostEvent::Health { server, health }, args.json);
                    }
                }
                Ok(event) => print_event(&event, args.json),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    errln!("mcpflow: {n} events were missed; the catalog is now:");
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

/// A health's state as one word, for `--json`.
fn state_name(health: &Health) -> &'static str {
    match health {
        Health::Ready => "ready",
        Health::Connecting => "connecting",
        Health::Degraded { .. } => "degraded",
        Health::Reconnecting { .. } => "reconnecting",
        Health::Failed { .. } => "failed",
        _ => "closed",
    }
}

fn print_catalog(snapshot: &CatalogSnapshot, health: &[(String, Health)], ready_after: Duration) {
    outln!(
        "servers ({}, first attempts done in {:.0} ms):",
        health.len(),
        ready_after.as_secs_f64() * 1000.0
    );
    for (name, health) in health {
        outln!("  {name}: {}", health_text(health));
    }
    let tools: Vec<_> = snapshot.tools().collect();
    outln!("tools ({}):", tools.len());
    for tool in tools {
        let description = tool.remote().description.as_deref().unwrap_or("");
        let first = description.lines().next().unwrap_or("");
        outln!("  {} [{}] {first}", tool.name(), tool.server());
    }
    let prompts: Vec<_> = snapshot.prompts().collect();
    outln!("prompts ({}):", prompts.len());
    for prompt in prompts {
        outln!("  {} [{}]", prompt.name(), prompt.server());
    }
    outln!("resources ({}):", snapshot.resources().len());
    for served in snapshot.resources() {
        outln!("  {} [{}]", served.item.uri, served.server);
    }
    outln!("templates ({}):", snapshot.templates().len());
    for served in snapshot.templates() {
        outln!("  {} [{}]", served.item.uri_template, served.server);
    }
    for collision in snapshot.collisions() {
        outln!(
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
            (
                name.clone(),
                json!({"state": state_name(h), "detail": health_text(h)}),
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
                    outln!("catalog {sign} {item}");
                }
            }
        }
        HostEvent::Health { server, health } if json_out => {
            outln!(
                "{}",
                json!({"health": {"server": &**server, "state": state_name(health), "detail": health_text(health)}})
            );
        }
        HostEvent::Health { server, health } => {
            outln!("health {server}: {}", health_text(health))
        }
        HostEvent::NameCollision(c) if json_out => println!(
            "{}",
            json!({"collision": {"name": c.name, "servers": c.servers.iter().map(|s| &**s).collect::<Vec<_>>()}})
        ),
        HostEvent::NameCollision(c) => {
            outln!(
                "collision: `{}` offered by {}",
                c.name,
                c.servers.join(", ")
            );
        }
        _ => {}
    }
}

/// `mcpflow call --config FILE NAME ARGS`: the tool the host's catalog would offer as
/// `NAME` (`server__tool`), called on that one server as `--server` would (the other
/// servers of the file are not started, and a variable only they use need not be set).
pub async fn call(request: CallRequest, server: &ServerArgs, interrupt: &Interrupt) -> u8 {
    let Some(path) = server.config.clone() else {
        return Failure::usage("--config FILE is needed to call through the host")
            .report(server.json);
    };
    match server_of(&path, &request.tool) {
        Ok(name) => {
            let mut one = server.clone();
            one.server = Some(name.clone());
            let request = CallRequest {
                catalog_of: Some(name),
                ..request
            };
            crate::call::run(request, &one, interrupt).await
        }
        Err(failure) => {
            let failure = match suggestion(&path, &request.tool, server).await {
                Some(hint) => Failure::usage(format!("{}; {hint}", failure.message)),
                None => failure,
            };
            failure.report(server.json)
        }
    }
}

/// The server of `path` whose catalog names `name` starts with (the longest such name,
/// should one server's name begin another's).
fn server_of(path: &Path, name: &str) -> Result<String, Failure> {
    let config = ServersConfig::from_file(path)
        .map_err(|e| Failure::usage(format!("--config {}: {e}", path.display())))?;
    let policy = mcpflow::host::NamePolicy::Prefixed;
    let enabled: Vec<&str> = config.names().filter(|n| !config.is_disabled(n)).collect();
    enabled
        .iter()
        .filter(|server| {
            name.strip_prefix(&policy.catalog_name(server, ""))
                .is_some_and(|rest| !rest.is_empty())
        })
        .max_by_key(|server| server.len())
        .map(|server| (*server).to_owned())
        .ok_or_else(|| {
            Failure::usage(format!(
                "`{name}` is not a catalog name of {}: catalog names are SERVER__TOOL, with the servers {}",
                path.display(),
                enabled.join(", ")
            ))
        })
}

/// For a name that is no catalog name: the catalog names it may have meant (a remote
/// tool name given alone), found by starting every server of the file.
async fn suggestion(path: &Path, name: &str, server: &ServerArgs) -> Option<String> {
    let host = start(path, server.timeout, &server.auth, false)
        .await
        .ok()?;
    host.wait_ready().await;
    let suffix = format!("__{name}");
    let names: Vec<String> = host
        .snapshot()
        .tool_names()
        .into_iter()
        .filter(|a| a.ends_with(&suffix))
        .map(|a| format!("`{a}`"))
        .collect();
    host.close().await;
    (!names.is_empty()).then(|| {
        format!(
            "did you mean {}? `mcpflow host --config FILE` lists the catalog",
            names.join(" or ")
        )
    })
}
