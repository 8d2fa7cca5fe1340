//! Reaching the server a verb names: a command after `--`, `--url`, or an entry of an
//! `mcpServers` file; the client capabilities the flags ask for; and closing in bounded
//! time.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcpflow::SessionConfig;
use mcpflow::client::{Client, ClientBuilder, Era};
use mcpflow::host::{RemoteServer, ServerConfig, ServersConfig, StdioServer};
use mcpflow::http::client::HttpClientTransport;
use mcpflow::protocol::{CreateMessageResult, ElicitResult, JsonObject, LoggingLevel, Root};
use serde_json::Value;

use crate::args::ServerArgs;
use crate::failure::Failure;
use crate::noise::{Noise, Watched};
use crate::signals::{self, Interrupt};

/// Longest wait for an orderly close after a timeout or Ctrl-C: the cancellation and
/// the HTTP `DELETE` go out, a child that does not exit by then is killed.
const HURRIED_CLOSE: Duration = Duration::from_millis(350);

/// The engine's close grace (handlers in flight, a write the server stopped reading):
/// shorter than [`HURRIED_CLOSE`], so the engine gives up a stuck write by itself.
const ENGINE_CLOSE_GRACE: Duration = Duration::from_millis(200);

/// How long a child server gets at each step of closing: after its stdin closes, then
/// after `SIGTERM`, before `SIGKILL`. Servers that exit on end of input (Node takes
/// about 0.4 s) are not hurried; one that keeps running costs at most three of these.
const CHILD_CLOSE_GRACE: Duration = Duration::from_millis(500);

/// A connected server.
pub struct Connection {
    /// The client.
    pub client: Client,
    /// What the server wrote to stdout that was not JSON-RPC (stdio only).
    pub noise: Arc<Noise>,
    /// The server as named in messages.
    pub target: String,
}

impl Connection {
    /// Close in order (a child gets its grace to exit) and return `code`.
    pub async fn close(self) {
        self.client.close().await;
        signals::set_child(None);
    }

    /// Close within [`HURRIED_CLOSE`] (after a timeout or Ctrl-C: the server may be
    /// stuck), then terminate a child server that is still running.
    pub async fn close_hurried(self) {
        if tokio::time::timeout(HURRIED_CLOSE, self.client.close())
            .await
            .is_err()
        {
            signals::signal_child(libc::SIGKILL);
        }
        signals::set_child(None);
    }

    /// A failed request as a [`Failure`], naming non-JSON stdout as a likely cause.
    pub fn failure(&self, error: &mcpflow::SessionError) -> Failure {
        let failure = Failure::from_session(error);
        if failure.exit == crate::failure::EXIT_RPC_ERROR {
            failure
        } else {
            failure.with_cause(self.noise.cause())
        }
    }
}

/// Where the server is, resolved from the flags.
enum Where {
    Stdio(StdioServer),
    Remote(RemoteServer),
}

fn resolve(args: &ServerArgs) -> Result<Where, Failure> {
    let given = [
        args.url.is_some(),
        args.config.is_some(),
        !args.command.is_empty(),
    ];
    match given.iter().filter(|g| **g).count() {
        0 => {
            return Err(Failure::usage(
                "name the server: a command after `--` (e.g. `-- npx -y @modelcontextprotocol/server-everything`), `--url URL`, or `--config FILE --server NAME`",
            ));
        }
        1 => {}
        _ => {
            return Err(Failure::usage(
                "name the server once: a command after `--`, `--url`, or `--config` with `--server`",
            ));
        }
    }
    let mut place = if let Some(url) = &args.url {
        let mut server = RemoteServer::default();
        server.url = url.clone();
        Where::Remote(server)
    } else if let Some(path) = &args.config {
        let Some(name) = args.server.as_deref() else {
            return Err(Failure::usage(
                "--config needs --server NAME here (only `call` can go through every server of the file by a tool's catalog name; `mcpflow host --config FILE` shows them)",
            ));
        };
        from_config(path, name)?
    } else {
        let (program, rest) = args
            .command
            .split_first()
            .ok_or_else(|| Failure::usage("no server command after `--`"))?;
        let mut server = StdioServer::default();
        server.command = program.clone();
        server.args = rest.to_vec();
        Where::Stdio(server)
    };
    match &mut place {
        Where::Stdio(server) => {
            for pair in &args.env {
                let (k, v) = pair.split_once('=').ok_or_else(|| {
                    Failure::usage(format!("-e/--env takes KEY=VALUE, not `{pair}`"))
                })?;
                server.env.insert(k.to_owned(), v.to_owned());
            }
            server.env_clear |= args.env_clear;
            if let Some(dir) = &args.cwd {
                server.cwd = Some(dir.clone());
            }
            if !args.headers.is_empty() || args.bearer_env.is_some() {
                return Err(Failure::usage(
                    "--header and --bearer-env apply to a server reached by --url (or an HTTP entry of --config)",
                ));
            }
            if args.auth.is_set() {
                return Err(Failure::usage(
                    "the OAuth flags (--client-id, --scope, --auth-timeout, ...) apply to a server reached by --url (or an HTTP entry of --config)",
                ));
            }
        }
        Where::Remote(server) => {
            if !args.env.is_empty() || args.env_clear || args.cwd.is_some() {
                return Err(Failure::usage(
                    "-e/--env, --env-clear and --cwd apply to a server command, not to --url",
                ));
            }
            for header in &args.headers {
                let (name, value) = header
                    .split_once(':')
                    .filter(|(n, _)| !n.trim().is_empty())
                    .ok_or_else(|| {
                        Failure::usage(format!("--header takes 'Name: value', not `{header}`"))
                    })?;
                server
                    .headers
                    .insert(name.trim().to_owned(), value.trim().to_owned());
            }
            if let Some(var) = &args.bearer_env {
                let token = std::env::var(var).ok().filter(|t| !t.is_empty()).ok_or_else(|| {
                    Failure::usage(format!(
                        "--bearer-env {var}: the environment variable `{var}` is not set or empty"
                    ))
                })?;
                server
                    .headers
                    .insert("Authorization".to_owned(), format!("Bearer {token}"));
            }
            if args.auth.is_set() && has_authorization(server) {
                return Err(Failure::usage(
                    "the OAuth flags (--client-id, --scope, --auth-timeout, ...) do not apply when --bearer-env or an Authorization header gives the token",
                ));
            }
        }
    }
    Ok(place)
}

fn from_config(path: &Path, name: &str) -> Result<Where, Failure> {
    let config = ServersConfig::from_file(path)
        .map_err(|e| Failure::usage(format!("--config {}: {e}", path.display())))?;
    let server = config
        .server(name)
        .and_then(|s| s.expanded_for(name, |var| std::env::var(var).ok()))
        .map_err(|e| Failure::usage(format!("--config {}: {e}", path.display())))?;
    Ok(match server {
        ServerConfig::Stdio(s) => Where::Stdio(s),
        ServerConfig::Remote(r) => Where::Remote(r),
        _ => {
            return Err(Failure::usage(format!(
                "--config {}: server `{name}` uses a transport this command does not know",
                path.display()
            )));
        }
    })
}

/// The client capabilities the flags ask for.
pub fn capabilities(
    mut builder: ClientBuilder,
    args: &ServerArgs,
) -> Result<ClientBuilder, Failure> {
    // With 2026-07-28, log messages come only when asked for: ask for all, as the
    // handshake era sends them.
    builder = builder
        .era(match args.era.as_str() {
            "per-request" => Era::PerRequest,
            "auto" => Era::Auto,
            _ => Era::Handshake,
        })
        .log_level(LoggingLevel::Debug);
    if let Some(answer) = args.sampling_response.clone() {
        builder = builder.on_sampling(move |_params, _client| {
            let answer = answer.clone();
            async move { Ok(CreateMessageResult::assistant_text("mcpflow-cli", answer)) }
        });
    }
    if let Some(answer) = &args.elicitation_response {
        let result = if answer.trim() == "decline" {
            ElicitResult::decline()
        } else {
            match serde_json::from_str::<Value>(answer) {
                Ok(Value::Object(content)) => ElicitResult::accept(content as JsonObject),
                _ => {
                    return Err(Failure::usage(format!(
                        "--elicitation-response takes a JSON object or `decline`, not `{answer}`"
                    )));
                }
            }
        };
        builder = builder.on_elicitation(false, move |_params, _client| {
            let result = result.clone();
            async move { Ok(result) }
        });
    }
    if !args.roots.is_empty() {
        let mut roots = Vec::new();
        for dir in &args.roots {
            let path = std::fs::canonicalize(dir)
                .map_err(|e| Failure::usage(format!("--root {}: {e}", dir.display())))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string());
            roots.push(Root::new(format!("file://{}", path.display()), name));
        }
        builder = builder.roots(roots);
    }
    Ok(builder)
}

/// Start or reach the server and run the handshake, giving up on Ctrl-C.
pub async fn connect(
    args: &ServerArgs,
    builder: ClientBuilder,
    interrupt: &Interrupt,
) -> Result<Connection, Failure> {
    let place = resolve(args)?;
    let builder = capabilities(builder, args)?;
    let mut oauth = match &place {
        Where::Remote(server) if !has_authorization(server) => {
            crate::auth::config(&args.auth, server.oauth.as_ref(), &server.url).await?
        }
        _ => None,
    };
    let oauth_on = oauth.is_some();
    let timeout = Duration::from_secs_f64(args.timeout);
    // The first request may wait for the user in the browser as well.
    let first_wait = if oauth.is_some() {
        timeout + args.auth.timeout()
    } else {
        timeout
    };
    let config = SessionConfig::builder()
        .request_timeout(first_wait)
        .close_grace(ENGINE_CLOSE_GRACE)
        .build();
    let builder = builder.session_config(config);
    let noise = Arc::new(Noise::default());
    let (target, mut handshake) = match place {
        Where::Stdio(server) => {
            let target = format!(
                "`{}`",
                std::iter::once(&server.command)
                    .chain(&server.args)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let child = server
                .child_process()
                .close_grace(CHILD_CLOSE_GRACE)
                .spawn()
                .map_err(|e| Failure::connection(crate::failure::one_line(&e.to_string())))?;
            signals::set_child(child.pid());
            let watched = Watched::new(child, noise.clone());
            (target, Box::pin(builder.connect(watched)) as Handshake)
        }
        Where::Remote(server) => {
            let mut http = HttpClientTransport::builder(server.url.clone());
            for (name, value) in &server.headers {
                http = http.header(name, value);
            }
            if let Some(oauth) = oauth.take() {
                http = http.oauth(oauth);
            }
            let transport = http.build().map_err(|e| bad_url(&server.url, &e))?;
            (
                server.url.clone(),
                Box::pin(builder.connect(transport)) as Handshake,
            )
        }
    };
    // The first request is bounded by the request timeout; this is a second, outer bound.
    // With OAuth on, that request's timeout leaves room for the user to sign in, but
    // the handshake gets that room only once the flow has shown them the URL: a
    // server that never answers fails at --timeout.
    let started = tokio::time::Instant::now();
    let grace = Duration::from_secs(5);
    let deadline = || match (oauth_on, crate::auth::authorization_shown().is_some()) {
        (true, true) => started + first_wait + grace,
        (true, false) => started + timeout,
        (false, _) => started + timeout + grace,
    };
    let outcome = loop {
        let at = deadline();
        tokio::select! {
            r = &mut handshake => break Ok(r),
            // Shown while this waited: the later deadline holds.
            () = tokio::time::sleep_until(at) => if deadline() == at {
                break Err(());
            },
            () = noise.fatal() => {
                signals::set_child(None);
                return Err(Failure::connection(format!("{target} is not an MCP server over stdio")).with_cause(noise.cause()));
            }
            () = interrupt.pressed() => {
                signals::signal_child(libc::SIGKILL);
                return Err(Failure::interrupted());
            }
        }
    };
    match outcome {
        Ok(Ok(client)) => Ok(Connection {
            client,
            noise,
            target,
        }),
        Ok(Err(e)) => {
            signals::set_child(None);
            let hint = (oauth_on && refused(&e))
                .then(|| oauth_hint(&e.to_string()))
                .flatten();
            Err(Failure::from_connect(&e, &target)
                .with_cause(noise.cause())
                .with_cause(hint))
        }
        Err(_) => {
            signals::signal_child(libc::SIGKILL);
            Err(Failure::connection(format!(
                "{target} did not finish the handshake in {}s; raise --timeout",
                args.timeout
            ))
            .with_cause(noise.cause()))
        }
    }
}

/// What to try after an authorization that failed as `error` says, where something
/// would help.
fn oauth_hint(error: &str) -> Option<String> {
    let hint = if error.contains("no authorization redirect within") {
        "--auth-timeout waits longer for the browser; `mcpflow auth login URL` signs in without calling anything"
    } else if error.contains("registration endpoint") || error.contains("no way to register") {
        "the authorization server does not let mcpflow register itself: register a client there and pass --client-id (with --client-secret-env for a confidential one)"
    } else if error.contains("still refused after") {
        "`mcpflow auth logout URL` forgets the cached tokens and registration; `mcpflow auth login URL` signs in again"
    } else if error.contains("token endpoint") {
        "check --client-id and its secret or key"
    } else {
        return None;
    };
    Some(hint.to_owned())
}

/// Whether the handshake failed on a 401 (with OAuth on: the authorization failed).
fn refused(error: &mcpflow::client::ConnectError) -> bool {
    use mcpflow::client::ConnectError;
    use mcpflow::{CloseReason, SessionError, TransportError};
    let transport = match error {
        ConnectError::Initialize(SessionError::Transport { error, .. }) => error,
        ConnectError::Initialize(SessionError::Closed {
            reason: CloseReason::Transport(error),
            ..
        }) => error,
        _ => return false,
    };
    matches!(
        transport,
        TransportError::Http {
            status: Some(401),
            ..
        }
    )
}

/// Whether the server's headers carry the token already (OAuth is then off).
pub fn has_authorization(server: &RemoteServer) -> bool {
    server
        .headers
        .keys()
        .any(|name| name.eq_ignore_ascii_case("authorization"))
}

type Handshake = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Client, mcpflow::client::ConnectError>> + Send>,
>;

fn bad_url(url: &str, error: &mcpflow::http::client::BuildError) -> Failure {
    let hint = if !url.contains("://") {
        format!("; did you mean `http://{url}`?")
    } else {
        String::new()
    };
    let detail = match error {
        mcpflow::http::client::BuildError::InvalidUrl { reason, .. } => reason.clone(),
        mcpflow::http::client::BuildError::InvalidHeader { name, reason } => {
            return Failure::usage(format!("--header `{name}`: {reason}"));
        }
        other => other.to_string(),
    };
    Failure::usage(format!("--url `{url}` is not a server URL: {detail}{hint}"))
}
