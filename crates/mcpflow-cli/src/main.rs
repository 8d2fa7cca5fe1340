//! `mcpflow`: inspect and call any MCP server (a command, a URL, or an entry of an
//! `mcpServers` file), serve the built-in servers, and demo the SDK.
//!
//! Logs go to stderr only (stdout carries the protocol under `serve`). Set `RUST_LOG`
//! (e.g. `RUST_LOG=debug`) for more.
//!
//! Layout: `args` (shared flags), `connect` (reaching a server), `noise` (non-JSON
//! stdout), `signals` (Ctrl-C), `failure` (exit codes and error text), `input` (tool
//! arguments), `live` (progress and logs), `render` (content), one module per verb
//! family (`inspect`, `call`, `verbs`, `serve`, `host`), and the built-in servers
//! (`demo`, `everything`, with `features`).

#[macro_use]
mod terminal;

mod args;
mod auth;
mod call;
mod connect;
mod demo;
mod everything;
mod everything_2026;
mod everything_tasks;
mod failure;
mod features;
mod host;
mod input;
mod inspect;
mod live;
mod noise;
mod render;
mod serve;
mod serve_auth;
mod signals;
mod task;
mod telemetry;
mod verbs;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use args::{EXIT_CODES_HELP, ServerArgs};
use failure::{EXIT_CONNECTION, EXIT_USAGE, Failure};
use serve::HttpOptions;
use signals::Interrupt;
use verbs::ListWhat;

/// How a server is named, for the usage lines.
const SERVER_USAGE: &str = "(-- CMD... | --url URL | --config FILE --server NAME)";

#[derive(Debug, Parser)]
#[command(
    name = "mcpflow",
    version,
    about = "Model Context Protocol tools built on the mcpflow SDK",
    after_help = EXIT_CODES_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an in-process server and client and narrate progress, list_changed,
    /// sampling and cancellation.
    Demo,
    /// Serve a built-in server over stdio, or over streamable HTTP with `--http`.
    Serve {
        #[command(subcommand)]
        server: ServeWhat,
        /// Serve streamable HTTP on this address (e.g. `127.0.0.1:3000`; the endpoint is
        /// `/mcp`) instead of stdio.
        #[arg(long, global = true, value_name = "ADDR")]
        http: Option<String>,
        #[command(flatten)]
        options: HttpOptions,
    },
    /// Describe a server: its tools, prompts, resources and templates.
    #[command(
        override_usage = format!("mcpflow inspect [OPTIONS] {SERVER_USAGE}"),
        after_help = EXIT_CODES_HELP
    )]
    Inspect {
        /// Show descriptions in full (otherwise their first line).
        #[arg(long, short)]
        verbose: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Call one tool, showing its progress and log messages as they arrive.
    #[command(
        override_usage = format!("mcpflow call [OPTIONS] TOOL [ARGS]... {SERVER_USAGE}"),
        after_help = format!("ARGS is one JSON object, @file.json, - (read stdin), or key=value pairs typed by the tool's input schema.\n\n{EXIT_CODES_HELP}")
    )]
    Call {
        /// The tool to call.
        tool: String,
        /// The arguments (default `{}`).
        #[arg(value_name = "ARGS")]
        args: Vec<String>,
        /// Save images, audio and blobs into this directory.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List the server's tools, prompts, resources or resource templates.
    #[command(
        override_usage = format!("mcpflow list [OPTIONS] <tools|prompts|resources|templates> {SERVER_USAGE}"),
        after_help = EXIT_CODES_HELP
    )]
    List {
        /// What to list.
        what: ListWhat,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Read a resource (`resources/read`).
    #[command(
        override_usage = format!("mcpflow read [OPTIONS] URI {SERVER_USAGE}"),
        after_help = EXIT_CODES_HELP
    )]
    Read {
        /// The resource's URI.
        uri: String,
        /// Write the text, or the decoded blob, to this file.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Get a prompt (`prompts/get`) with its arguments.
    #[command(
        override_usage = format!("mcpflow prompt [OPTIONS] NAME [KEY=VALUE]... {SERVER_USAGE}"),
        after_help = EXIT_CODES_HELP
    )]
    Prompt {
        /// The prompt's name.
        name: String,
        /// Its arguments.
        #[arg(value_name = "KEY=VALUE")]
        arguments: Vec<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Ask the server to complete an argument (`completion/complete`).
    #[command(
        override_usage = format!("mcpflow complete [OPTIONS] REF ARG=PARTIAL {SERVER_USAGE}"),
        after_help = EXIT_CODES_HELP
    )]
    Complete {
        /// `prompt:NAME` or `resource:URI_TEMPLATE`.
        reference: String,
        /// The argument and what is typed so far, e.g. `city=Par`.
        argument: String,
        /// An argument already chosen (repeatable).
        #[arg(long, value_name = "KEY=VALUE")]
        context: Vec<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Connect to every server of an `mcpServers` file at once and print the merged
    /// catalog (names `server__tool`) with each server's health; exit 0 when every
    /// server is ready, 3 otherwise. `--watch` follows changes until Ctrl-C. HTTP servers
    /// that answer 401 get the OAuth flow and token cache of `--url` (see `mcpflow auth`).
    #[command(after_help = EXIT_CODES_HELP)]
    Host(host::HostArgs),
    /// OAuth tokens cached for HTTP servers (`--url`, `--config`, `host`): `login URL`
    /// authorizes, `logout URL` forgets, `list` shows which servers have tokens.
    #[command(after_help = EXIT_CODES_HELP)]
    Auth {
        #[command(subcommand)]
        command: auth::AuthCommand,
    },
    /// Check that the server answers (`ping`).
    #[command(
        override_usage = format!("mcpflow ping [OPTIONS] {SERVER_USAGE}"),
        after_help = EXIT_CODES_HELP
    )]
    Ping {
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(Debug, Subcommand)]
enum ServeWhat {
    /// The conformance suite's "everything" server.
    Everything,
    /// The demo's server: progress with logs, a tool that adds a tool mid-call
    /// (`tools/list_changed`), sampling during a call, a slow tool to cancel.
    Demo,
}

/// Parse the command line; a usage error is one line (or JSON under `--json`), exit 2.
fn parse() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let argv: Vec<String> = std::env::args().collect();
            let before_cmd = argv.iter().take_while(|a| *a != "--");
            let json_out = before_cmd.clone().any(|a| a == "--json");
            let verb = argv
                .get(1)
                .filter(|v| !v.starts_with('-'))
                .map_or(String::new(), |v| format!(" {v}"));
            std::process::exit(i32::from(
                Failure::usage(usage_message(&e, &verb)).report(json_out),
            ));
        }
    }
}

fn usage_message(e: &clap::Error, verb: &str) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::InvalidSubcommand
        && let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidSubcommand)
    {
        let suggestion = match e.get(ContextKind::SuggestedSubcommand) {
            Some(ContextValue::Strings(s)) if !s.is_empty() => {
                format!("; did you mean `{}`?", s.join("` or `"))
            }
            Some(ContextValue::String(s)) => format!("; did you mean `{s}`?"),
            _ => String::new(),
        };
        return format!("unknown command `{typed}`{suggestion}; see `mcpflow --help`");
    }
    let help = format!("see `mcpflow{verb} --help`");
    if e.kind() == ErrorKind::UnknownArgument
        && let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg)
    {
        // clap's tip to pass the flag after `--` is wrong here: `--` starts the server command.
        let suggestion = match e.get(ContextKind::SuggestedArg) {
            Some(ContextValue::String(s)) => format!("; did you mean `{s}`?"),
            _ => String::new(),
        };
        return format!("unknown flag `{arg}` for `mcpflow{verb}`{suggestion}; {help}");
    }
    // clap's message runs to the first blank line (the usage and tips follow).
    let text = e.to_string();
    let message: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().trim_start_matches("error: "))
        .collect();
    format!("{}; {help}", message.join(" ").trim_end_matches(':'))
}

fn main() -> ExitCode {
    let cli = parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("mcpflow: could not start the async runtime: {e}");
            return ExitCode::from(EXIT_CONNECTION);
        }
    };
    let telemetry = {
        let _entered = runtime.enter();
        telemetry::init(matches!(cli.command, Command::Serve { .. } | Command::Demo))
    };
    let code: u8 = runtime.block_on(run(cli.command));
    telemetry.shutdown();
    let _ = std::io::stdout().flush();
    // The runtime may be kept alive by a blocking stdin read; leave at once.
    std::process::exit(i32::from(code));
}

async fn run(command: Command) -> u8 {
    let interrupt = |server: &ServerArgs| Interrupt::install(server.json);
    match command {
        Command::Demo => match demo::run().await {
            Ok(()) => 0,
            Err(e) => {
                errln!("mcpflow demo failed: {e}");
                1
            }
        },
        Command::Serve {
            server,
            http,
            options,
        } => {
            if http.is_none() && options.is_set() {
                errln!(
                    "mcpflow: the HTTP options (limits, --allow-host, --allow-origin, --stateless, --state-key-env, --redis, --auth-*) apply only with --http"
                );
                return EXIT_USAGE;
            }
            let state_key = match options.state_key() {
                Ok(key) => key,
                Err(e) => {
                    errln!("mcpflow: {e}");
                    return EXIT_USAGE;
                }
            };
            let bus = match options.bus().await {
                Ok(bus) => bus,
                Err(e) => {
                    errln!("mcpflow: {e}");
                    return EXIT_CONNECTION;
                }
            };
            let sessions = match options.session_store().await {
                Ok(store) => store,
                Err(e) => {
                    errln!("mcpflow: {e}");
                    return EXIT_CONNECTION;
                }
            };
            let subscribing = bus.clone();
            let shared_tasks = sessions.clone();
            let configure = |mut builder: mcpflow::server::ServerBuilder| {
                if let Some(key) = state_key {
                    builder = builder.state_key(key);
                }
                if let Some(bus) = bus {
                    builder = builder.bus(bus);
                }
                if let Some(store) = shared_tasks {
                    builder = builder.shared_tasks(store.clone()).consumed_states(store);
                }
                builder
            };
            let server = match server {
                ServeWhat::Everything => everything::everything_server(configure),
                ServeWhat::Demo => demo::stdio_demo_server(configure),
            };
            if let Some(bus) = subscribing {
                serve::await_subscription(&bus).await;
            }
            match http {
                None => {
                    server
                        .serve(mcpflow::transport::stdio::stdio())
                        .wait()
                        .await;
                    0
                }
                Some(addr) => serve::serve_http(server, &addr, &options, sessions).await,
            }
        }
        Command::Inspect { verbose, server } => {
            inspect::run(&server, verbose, &interrupt(&server)).await
        }
        Command::Call {
            tool,
            args,
            out,
            server,
        } => {
            let request = call::CallRequest {
                tool,
                args,
                out,
                catalog_of: None,
            };
            if server.config.is_some() && server.server.is_none() {
                return host::call(request, &server, &interrupt(&server)).await;
            }
            call::run(request, &server, &interrupt(&server)).await
        }
        Command::List { what, server } => verbs::list(what, &server, &interrupt(&server)).await,
        Command::Read { uri, out, server } => {
            verbs::read(uri, out, &server, &interrupt(&server)).await
        }
        Command::Prompt {
            name,
            arguments,
            server,
        } => verbs::prompt(name, arguments, &server, &interrupt(&server)).await,
        Command::Complete {
            reference,
            argument,
            context,
            server,
        } => verbs::complete(reference, argument, context, &server, &interrupt(&server)).await,
        Command::Ping { server } => verbs::ping(&server, &interrupt(&server)).await,
        Command::Auth { command } => auth::run(command).await,
        Command::Host(args) => host::run(&args, &Interrupt::install(args.json)).await,
    }
}
