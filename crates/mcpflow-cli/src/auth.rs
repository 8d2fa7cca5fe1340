//! OAuth for servers reached by `--url`: the flags, the browser step, the token cache
//! (one [`FileTokenStore`] file per server), and `mcpflow auth login|logout|list`.
//!
//! Tokens and client secrets stay in the store and the library's [`mcpflow::auth::Secret`]s:
//! nothing here prints them; `auth list` shows only what the tokens are for.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcpflow::auth::{
    ClientRegistration, FileTokenStore, LoopbackRedirect, MemoryTokenStore, OAuthConfig,
    TokenStore, WorkloadIdentity, canonical_resource,
};
use mcpflow::client::Client;
use mcpflow::host::OAuthSettings;
use reqwest::Url;
use serde_json::json;

use crate::args::{ServerArgs, parse_secs};
use crate::failure::Failure;
use crate::signals::Interrupt;

pub mod hosted;

/// The user's default bound on the browser step.
const AUTH_TIMEOUT: Duration = Duration::from_secs(300);

/// Overrides the directory of cached tokens (tests, several profiles).
const AUTH_DIR_VAR: &str = "MCPFLOW_AUTH_DIR";

/// Longest file name written for a server (most file systems allow 255 bytes).
const MAX_NAME: usize = 240;

/// How `--url` authorizes when the server answers 401 with a challenge.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Authorization (OAuth, --url)")]
pub struct AuthArgs {
    /// An OAuth client ID registered beforehand at the server's authorization server
    /// (otherwise mcpflow registers itself, or uses `--client-metadata-url`).
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// Read the client secret of `--client-id` from this environment variable.
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub client_secret_env: Option<String>,
    /// The https URL of this client's Client ID Metadata Document, used as its client
    /// ID where the authorization server supports them.
    #[arg(long, value_name = "URL")]
    pub client_metadata_url: Option<String>,
    /// The scope to ask for (space-separated; default: what the server names).
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,
    /// Print the authorization URL on stderr without opening a browser (`$BROWSER`,
    /// else `open`/`xdg-open`).
    #[arg(long)]
    pub no_browser: bool,
    /// Seconds to wait for the browser to come back to the loopback redirect (default
    /// 300); past it the command exits 3.
    #[arg(long, value_parser = parse_secs, value_name = "SECS")]
    pub auth_timeout: Option<f64>,
    /// The port of the loopback redirect `http://127.0.0.1:PORT/callback` (default: any
    /// free port), for a client ID registered with a fixed redirect URI.
    #[arg(long, value_name = "PORT")]
    pub callback_port: Option<u16>,
    /// How to obtain tokens: `authorization-code` (a sign-in in the browser; the
    /// default) or `client-credentials` (a machine client: needs `--client-id` and
    /// `--client-secret-env` or `--client-key-file`; no browser).
    #[arg(long, value_enum, value_name = "GRANT")]
    pub grant: Option<Grant>,
    /// A PKCS#8 PEM file with the P-256 key of `--client-id`, which then authenticates
    /// with a signed JWT (`private_key_jwt`) instead of a secret.
    #[arg(
        long,
        value_name = "PEM",
        requires = "client_id",
        conflicts_with = "client_secret_env"
    )]
    pub client_key_file: Option<PathBuf>,
    /// The file holding this workload's identity token from its platform (a
    /// Kubernetes service account token), for `--grant workload-identity`; read anew
    /// for each grant.
    #[arg(long, value_name = "FILE")]
    pub identity_token_file: Option<PathBuf>,
    /// The client secret an `mcpServers` entry gives (`oauth.clientSecret`).
    #[arg(skip)]
    pub entry_secret: Option<String>,
}

/// How tokens are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Grant {
    /// A sign-in in the browser, with PKCE.
    AuthorizationCode,
    /// The client's own credentials, without a user.
    ClientCredentials,
    /// The workload's identity token (`--identity-token-file`) as a JWT bearer grant.
    WorkloadIdentity,
}

impl AuthArgs {
    /// Whether any OAuth flag is given.
    pub fn is_set(&self) -> bool {
        self.client_id.is_some()
            || self.client_secret_env.is_some()
            || self.client_metadata_url.is_some()
            || self.scope.is_some()
            || self.no_browser
            || self.auth_timeout.is_some()
            || self.callback_port.is_some()
            || self.grant.is_some()
            || self.client_key_file.is_some()
            || self.identity_token_file.is_some()
    }

    /// The bound on the browser step.
    pub fn timeout(&self) -> Duration {
        self.auth_timeout
            .map_or(AUTH_TIMEOUT, Duration::from_secs_f64)
    }
}

/// Where tokens are cached: `$MCPFLOW_AUTH_DIR`, else `mcpflow/auth` under
/// `$XDG_CONFIG_HOME` or `~/.config`.
fn auth_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(AUTH_DIR_VAR) {
        return Some(PathBuf::from(dir));
    }
    let config = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("mcpflow").join("auth"))
}

/// `key` as a file name: bytes outside `[A-Za-z0-9._-]` as `%XX`, so it reads back.
fn file_name(key: &str) -> String {
    let mut name = String::with_capacity(key.len() + 5);
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            name.push(char::from(b));
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    name.push_str(".json");
    name
}

/// The key a [`file_name`] was made from.
fn key_of(name: &str) -> Option<String> {
    let stem = name.strip_suffix(".json")?.as_bytes();
    let mut out = Vec::with_capacity(stem.len());
    let mut i = 0;
    while i < stem.len() {
        if stem[i] == b'%' {
            let hex = std::str::from_utf8(stem.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(stem[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The server's store key (its canonical resource URL) and cache file.
fn cache_of(url: &str) -> Result<(String, Option<PathBuf>), Failure> {
    let parsed =
        Url::parse(url).map_err(|e| Failure::usage(format!("`{url}` is not a server URL: {e}")))?;
    let key = canonical_resource(&parsed);
    let name = file_name(&key);
    let file = auth_dir()
        .filter(|_| name.len() <= MAX_NAME)
        .map(|dir| dir.join(name));
    Ok((key, file))
}

/// The token store for `url`'s tokens: its file, or memory when there is no config
/// directory (or the URL is too long for a file name).
fn store_for(url: &str) -> Result<Arc<dyn TokenStore>, Failure> {
    let (_, file) = cache_of(url)?;
    let Some(file) = file else {
        tracing::warn!("no directory for cached OAuth tokens; they last this run only");
        return Ok(Arc::new(MemoryTokenStore::new()));
    };
    if let Some(dir) = file.parent() {
        private_dir(dir)?;
    }
    Ok(Arc::new(FileTokenStore::new(file)))
}

/// Creates `dir` readable by its owner only (the files are 0600 too).
fn private_dir(dir: &Path) -> Result<(), Failure> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| Failure::connection(format!("token cache {}: {e}", dir.display())))
}

/// The OAuth configuration for `url`, from the flags and what the server's
/// `mcpServers` entry says (`entry`; the flags win), or `None` when the URL does not
/// parse (the transport reports that).
pub async fn config(
    args: &AuthArgs,
    entry: Option<&OAuthSettings>,
    url: &str,
) -> Result<Option<OAuthConfig>, Failure> {
    if Url::parse(url).is_err() {
        return Ok(None);
    }
    let args = &with_entry(args, entry)?;
    let config = match args.grant {
        Some(Grant::ClientCredentials) => OAuthConfig::client_credentials(client(args)?.ok_or_else(|| {
            Failure::usage(
                "--grant client-credentials needs --client-id, with --client-secret-env or --client-key-file",
            )
        })?),
        Some(Grant::WorkloadIdentity) => {
            let file = args.identity_token_file.as_ref().ok_or_else(|| {
                Failure::usage("--grant workload-identity needs --identity-token-file FILE")
            })?;
            let mut identity = WorkloadIdentity::file(file);
            if let Some(id) = &args.client_id {
                identity = identity.client_id(id);
            }
            // The grant authenticates no client: no registration to add.
            let config = OAuthConfig::workload_identity(identity).store(store_for(url)?);
            let config = config.client_name("mcpflow").timeout(args.timeout());
            return Ok(Some(match &args.scope {
                Some(scope) => config.scope(scope),
                None => config,
            }));
        }
        _ => OAuthConfig::authorization_code(loopback(args).await?),
    };
    configured(args, config.store(store_for(url)?)).map(Some)
}

/// `args`, with what `entry` sets where the flags set nothing.
pub fn with_entry(args: &AuthArgs, entry: Option<&OAuthSettings>) -> Result<AuthArgs, Failure> {
    let mut args = args.clone();
    let Some(entry) = entry else {
        return Ok(args);
    };
    if args.grant.is_none() {
        args.grant = match entry.grant.as_deref() {
            None => None,
            Some("client_credentials" | "client-credentials") => Some(Grant::ClientCredentials),
            Some("authorization_code" | "authorization-code") => Some(Grant::AuthorizationCode),
            Some("workload_identity" | "workload-identity") => Some(Grant::WorkloadIdentity),
            Some(other) => {
                return Err(Failure::usage(format!(
                    "`oauth.grant` is `{other}`; expected `client_credentials`, `workload_identity` or `authorization_code`"
                )));
            }
        };
    }
    if args.client_id.is_none() {
        args.client_id.clone_from(&entry.client_id);
        args.client_key_file.clone_from(&entry.client_key_file);
        args.entry_secret.clone_from(&entry.client_secret);
    }
    if args.identity_token_file.is_none() {
        args.identity_token_file
            .clone_from(&entry.identity_token_file);
    }
    if args.scope.is_none() {
        args.scope.clone_from(&entry.scope);
    }
    Ok(args)
}

/// The client registration the flags name, if any.
fn client(args: &AuthArgs) -> Result<Option<ClientRegistration>, Failure> {
    let Some(id) = &args.client_id else {
        return Ok(None);
    };
    if let Some(path) = &args.client_key_file {
        let pem = std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("--client-key-file {}: {e}", path.display())))?;
        return Ok(Some(ClientRegistration::private_key_jwt(id, pem)));
    }
    let secret = match (&args.client_secret_env, &args.entry_secret) {
        (Some(var), _) => Some(std::env::var(var).ok().filter(|s| !s.is_empty()).ok_or_else(|| {
            Failure::usage(format!(
                "--client-secret-env {var}: the environment variable `{var}` is not set or empty"
            ))
        })?),
        (None, secret) => secret.clone(),
    };
    Ok(Some(match secret {
        Some(secret) => ClientRegistration::confidential(id, secret),
        None => ClientRegistration::public(id),
    }))
}

/// The browser step: a loopback listener, the URL shown (and opened unless told not to).
async fn loopback(args: &AuthArgs) -> Result<LoopbackRedirect, Failure> {
    let no_browser = args.no_browser;
    LoopbackRedirect::bind(args.callback_port.unwrap_or(0), args.timeout(), {
        move |url| show(url, no_browser)
    })
    .await
    .map_err(|e| match args.callback_port {
        Some(port) => Failure::usage(format!("--callback-port {port}: {e}")),
        None => Failure::connection(e.to_string()),
    })
}

/// `config` with what the flags say: the client registration, scope and bound.
fn configured(args: &AuthArgs, mut config: OAuthConfig) -> Result<OAuthConfig, Failure> {
    config = config.client_name("mcpflow").timeout(args.timeout());
    if let Some(client) = client(args)? {
        config = config.pre_registered(None, client);
    }
    if let Some(cimd) = &args.client_metadata_url {
        config = config.client_metadata_url(cimd);
    }
    if let Some(scope) = &args.scope {
        config = config.scope(scope);
    }
    Ok(config)
}

/// When this process first showed an authorization URL: from then on the first
/// request of a connection may also wait for the user in the browser.
static SHOWN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// When an authorization URL was first shown, if one was.
pub fn authorization_shown() -> Option<std::time::Instant> {
    SHOWN.get().copied()
}

/// Shows the authorization URL on stderr (it works over ssh) and, unless told not to,
/// opens it in a browser. When no browser could be opened and nobody is at a terminal
/// to open the URL, there is no one to sign in: that fails at once, naming what works.
fn show(url: &Url, no_browser: bool) -> std::io::Result<()> {
    let _ = SHOWN.set(std::time::Instant::now());
    eprintln!("mcpflow: the server asks for authorization; open this URL to sign in:\n  {url}");
    if no_browser {
        return Ok(());
    }
    let Err(e) = open_browser(url.as_str()) else {
        return Ok(());
    };
    use std::io::IsTerminal;
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(std::io::Error::other(format!(
            "no browser could be opened ({e}) and no one is at a terminal to sign in; run `mcpflow auth login URL` where a browser can be opened, or use --grant client-credentials with a client of its own"
        )));
    }
    eprintln!("mcpflow: could not open a browser ({e}); open the URL above");
    Ok(())
}

/// Starts `$BROWSER` (its first `:`-separated entry; `%s` is the URL, else the URL is
/// the last argument), else the platform's opener, without waiting for it.
fn open_browser(url: &str) -> std::io::Result<()> {
    let configured = std::env::var("BROWSER").ok().and_then(|b| {
        b.split(':')
            .map(str::trim)
            .find(|e| !e.is_empty())
            .map(str::to_owned)
    });
    let mut words: Vec<String> = match configured {
        Some(command) => command.split_whitespace().map(str::to_owned).collect(),
        None if cfg!(target_os = "macos") => vec!["open".to_owned()],
        None => vec!["xdg-open".to_owned()],
    };
    if words.iter().any(|w| w.contains("%s")) {
        for w in &mut words {
            *w = w.replace("%s", url);
        }
    } else {
        words.push(url.to_owned());
    }
    let (program, rest) = words
        .split_first()
        .ok_or_else(|| std::io::Error::other("empty $BROWSER"))?;
    // Its output would mix with ours (stdout carries --json).
    let mut child = std::process::Command::new(program)
        .args(rest)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// `mcpflow auth ...`.
#[derive(Debug, clap::Subcommand)]
pub enum AuthCommand {
    /// Run the OAuth flow for a server and cache its tokens, calling nothing else.
    Login {
        /// The server's URL.
        url: String,
        #[command(flatten)]
        auth: AuthArgs,
        /// Seconds to wait for each answer of the server.
        #[arg(long, default_value_t = 60.0, value_parser = parse_secs, value_name = "SECS")]
        timeout: f64,
    },
    /// Forget the cached tokens and client registration for a server.
    Logout {
        /// The server's URL.
        url: String,
    },
    /// The servers with cached tokens (never the tokens themselves).
    List {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// Runs an `auth` subcommand; returns the exit code.
pub async fn run(command: AuthCommand) -> u8 {
    let outcome = match command {
        AuthCommand::Login { url, auth, timeout } => login(url, auth, timeout).await,
        AuthCommand::Logout { url } => logout(&url),
        AuthCommand::List { json } => list(json),
    };
    outcome.unwrap_or_else(|failure| failure.report(false))
}

/// Signs in to `url`, or checks the cached tokens by using them: the server accepts
/// them (refreshed if need be), or refuses them and a new sign-in replaces them.
async fn login(url: String, auth: AuthArgs, timeout: f64) -> Result<u8, Failure> {
    let before = cached_access(&url)?;
    let server = ServerArgs {
        url: Some(url.clone()),
        auth,
        timeout,
        ..ServerArgs::default()
    };
    let interrupt = Interrupt::install(false);
    let builder = Client::builder("mcpflow-auth", env!("CARGO_PKG_VERSION"));
    let conn = crate::connect::connect(&server, builder, &interrupt).await?;
    conn.close().await;
    let after = cached_access(&url)?;
    match (before, after) {
        (_, None) => println!("{url} did not ask for authorization; nothing cached"),
        (Some(before), Some(after)) if before == after => {
            println!("authorized at {url}: the cached tokens are accepted");
        }
        (Some(_), Some(_)) => println!("authorized at {url}; the cached tokens were renewed"),
        (None, Some(_)) => println!("authorized at {url}; tokens cached"),
    }
    Ok(0)
}

/// The cached access token for `url`, to tell whether a run changed it.
fn cached_access(url: &str) -> Result<Option<String>, Failure> {
    let (key, file) = cache_of(url)?;
    let Some(file) = file else {
        return Ok(None);
    };
    let tokens = FileTokenStore::new(file)
        .tokens(&key)
        .map_err(|e| Failure::connection(e.to_string()))?;
    Ok(tokens.map(|t| t.access_token.expose().to_owned()))
}

fn logout(url: &str) -> Result<u8, Failure> {
    let (_, file) = cache_of(url)?;
    match file.map(|f| (std::fs::remove_file(&f), f)) {
        Some((Ok(()), _)) => println!("forgot the tokens for {url}"),
        Some((Err(e), _)) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("no cached tokens for {url}");
        }
        Some((Err(e), f)) => {
            return Err(Failure::connection(format!("{}: {e}", f.display())));
        }
        None => println!("no cached tokens for {url}"),
    }
    Ok(0)
}

fn list(json_out: bool) -> Result<u8, Failure> {
    let mut servers = Vec::new();
    let dir = auth_dir();
    let entries = match dir.as_deref().map(std::fs::read_dir) {
        Some(Ok(entries)) => entries.flatten().collect(),
        Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => {
            let shown = dir
                .as_deref()
                .unwrap_or(Path::new(""))
                .display()
                .to_string();
            return Err(Failure::connection(format!("{shown}: {e}")));
        }
        _ => Vec::new(),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(key) = key_of(&name) else { continue };
        let store = FileTokenStore::new(entry.path());
        let Ok(Some(tokens)) = store.tokens(&key) else {
            continue;
        };
        let expires_in = tokens.expires_at.map(|at| at.saturating_sub(now));
        servers.push(json!({
            "server": key,
            "issuer": tokens.issuer,
            "scope": tokens.scope,
            "expiresIn": expires_in,
            "refreshable": tokens.refresh_token.is_some(),
        }));
    }
    servers.sort_by(|a, b| a["server"].as_str().cmp(&b["server"].as_str()));
    if json_out {
        println!("{}", json!({ "servers": servers }));
        return Ok(0);
    }
    if servers.is_empty() {
        println!("no cached tokens");
    }
    for s in &servers {
        let expiry = match s["expiresIn"].as_u64() {
            Some(0) => "expired".to_owned(),
            Some(secs) => format!("expires in {}m", secs.div_ceil(60)),
            None => "no expiry given".to_owned(),
        };
        let refresh = if s["refreshable"] == true {
            ", refreshable"
        } else {
            ""
        };
        let scope = s["scope"]
            .as_str()
            .map_or(String::new(), |sc| format!(", scope `{sc}`"));
        println!(
            "{}  (issuer {}{scope}, {expiry}{refresh})",
            s["server"].as_str().unwrap_or_default(),
            s["issuer"].as_str().unwrap_or_default()
        );
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_read_back_as_their_url() {
        for url in [
            "https://mcp.example.com/mcp",
            "http://127.0.0.1:8080/a b/%x?q=1",
        ] {
            let name = file_name(url);
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-%".contains(&b)),
                "{name}"
            );
            assert_eq!(key_of(&name).as_deref(), Some(url));
        }
        assert_eq!(key_of("tokens.json.tmp"), None);
        assert_eq!(key_of("bad%zz.json"), None);
    }
}
