//! `mcpflow serve`: the built-in servers over stdio, or over streamable HTTP with
//! `--http` and the HTTP server's limits, access rules and OAuth protection
//! (`serve_auth`).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mcpflow::http::server::HttpServer;
use mcpflow::http::server::fleet::RedisSessionStore;
use mcpflow::server::StateKey;
use mcpflow::server::bus::RedisBus;

use crate::args::{parse_bytes, parse_secs};
use crate::failure::{EXIT_CONNECTION, EXIT_USAGE};

/// The options of `serve --http` (the defaults are `HttpServer`'s, see
/// `docs/deployment.md`).
#[derive(Debug, Default, clap::Args)]
pub struct HttpOptions {
    /// At most this many sessions; at the cap, idle sessions are evicted (default 10000).
    #[arg(long, global = true, value_name = "N")]
    max_sessions: Option<usize>,
    /// End a session idle for this many seconds (default 1800).
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_secs)]
    session_idle_timeout: Option<f64>,
    /// Refuse request bodies over this size: bytes, or with K, M or G (default 16M).
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_bytes)]
    max_body_bytes: Option<usize>,
    /// Serve at most this many connections at once (default: 7/8 of the open-file
    /// limit, at most 10000).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: Option<u32>,
    /// Close a connection whose request headers take longer than this (default 20).
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_secs)]
    header_timeout: Option<f64>,
    /// Refuse a request whose body takes longer than this to arrive (default 30).
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_secs)]
    body_timeout: Option<f64>,
    /// Close a connection whose client takes no data for this long (default 30).
    #[arg(long, global = true, value_name = "SECS", value_parser = parse_secs)]
    write_timeout: Option<f64>,
    /// Accept this `Host` (`name` for any port, or `name:port`) besides the loopback
    /// names; repeatable. `*` accepts any host (no DNS-rebinding protection).
    #[arg(long = "allow-host", global = true, value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Accept browser requests from this origin (e.g. `https://app.example.com`, or `*`
    /// for any) and let its pages read the answers (CORS); repeatable.
    #[arg(long = "allow-origin", global = true, value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Keep no sessions: each request stands alone (no server-to-client requests, no
    /// `DELETE`).
    #[arg(long, global = true)]
    stateless: bool,
    /// Seal 2026-07-28 `requestState` with the secrets in this environment variable
    /// (base64, comma-separated: the first seals, every one opens), so that every
    /// instance behind one endpoint opens the others' (default: a random key per process).
    #[arg(long, global = true, value_name = "VAR")]
    state_key_env: Option<String>,
    /// Share sessions, event streams, list changes and resource updates with every
    /// instance that names the same Redis (`redis://HOST:PORT[/DB]`), so that any of
    /// them serves any request behind a plain load balancer.
    #[arg(long, global = true, value_name = "URL")]
    redis: Option<String>,
    #[command(flatten)]
    auth: crate::serve_auth::ResourceAuthArgs,
}

impl HttpOptions {
    /// Whether any option of `--http` was given.
    pub fn is_set(&self) -> bool {
        self.max_sessions.is_some()
            || self.session_idle_timeout.is_some()
            || self.max_body_bytes.is_some()
            || self.max_connections.is_some()
            || self.header_timeout.is_some()
            || self.body_timeout.is_some()
            || self.write_timeout.is_some()
            || !self.allow_hosts.is_empty()
            || !self.allow_origins.is_empty()
            || self.stateless
            || self.state_key_env.is_some()
            || self.redis.is_some()
            || self.auth.is_set()
    }

    /// The `requestState` key ring of `--state-key-env`, if given.
    ///
    /// # Errors
    /// When the variable is unset or empty, or a secret is not base64 (the message
    /// names the flag and the variable).
    pub fn state_key(&self) -> Result<Option<StateKey>, String> {
        let Some(var) = &self.state_key_env else {
            return Ok(None);
        };
        let value = std::env::var(var)
            .map_err(|_| format!("--state-key-env {var}: the variable is not set"))?;
        state_key_ring(&value)
            .map(Some)
            .map_err(|why| format!("--state-key-env {var}: {why}"))
    }

    /// The Redis notification bus of `--redis`, connected, if given.
    ///
    /// # Errors
    /// When Redis cannot be reached (the message names the flag and the URL).
    pub async fn bus(&self) -> Result<Option<Arc<RedisBus>>, String> {
        let Some(url) = &self.redis else {
            return Ok(None);
        };
        match RedisBus::connect(url).await {
            Ok(bus) => Ok(Some(Arc::new(bus))),
            Err(e) => Err(format!("--redis {url}: {e}")),
        }
    }

    /// The Redis store of `--redis` for sessions and tasks, connected, if given (none
    /// for a `--stateless` server, which keeps no sessions).
    ///
    /// # Errors
    /// When Redis cannot be reached (the message names the flag and the URL).
    pub async fn session_store(&self) -> Result<Option<Arc<RedisSessionStore>>, String> {
        let Some(url) = self.redis.as_deref().filter(|_| !self.stateless) else {
            return Ok(None);
        };
        match RedisSessionStore::connect(url).await {
            Ok(store) => Ok(Some(Arc::new(store))),
            Err(e) => Err(format!("--redis {url}: {e}")),
        }
    }

    fn apply(&self, mut server: HttpServer) -> HttpServer {
        let secs = Duration::from_secs_f64;
        if let Some(n) = self.max_sessions {
            server = server.max_sessions(n);
        }
        if let Some(t) = self.session_idle_timeout {
            server = server.session_idle_timeout(secs(t));
        }
        if let Some(n) = self.max_body_bytes {
            server = server.max_body_bytes(n);
        }
        if let Some(n) = self.max_connections {
            server = server.max_connections(n as usize);
        }
        if let Some(t) = self.header_timeout {
            server = server.header_timeout(secs(t));
        }
        if let Some(t) = self.body_timeout {
            server = server.body_timeout(secs(t));
        }
        if let Some(t) = self.write_timeout {
            server = server.write_timeout(secs(t));
        }
        if self.allow_hosts.iter().any(|h| h == "*") {
            server = server.allow_any_host();
        } else {
            if !self.allow_hosts.is_empty() {
                // The loopback names stay allowed: local clients keep working.
                let hosts = ["localhost", "127.0.0.1", "[::1]"]
                    .into_iter()
                    .map(str::to_owned)
                    .chain(self.allow_hosts.iter().cloned());
                server = server.allowed_hosts(hosts);
            }
            if !self.allow_origins.is_empty() {
                server = server.allowed_origins(self.allow_origins.iter().cloned());
            }
        }
        if self.stateless {
            server = server.stateless(true);
        }
        server
    }
}

/// How long `serve --redis` waits for its subscription before it serves anyway.
const SUBSCRIBE_WAIT: Duration = Duration::from_secs(5);

/// Wait until the bus delivers to this instance, so that once it serves it misses no
/// announcement; after [`SUBSCRIBE_WAIT`], say so and go on (the bus keeps trying).
pub async fn await_subscription(bus: &RedisBus) {
    if tokio::time::timeout(SUBSCRIBE_WAIT, bus.subscribed())
        .await
        .is_err()
    {
        eprintln!(
            "mcpflow: --redis: not subscribed after {}s; serving, and announcements from other instances arrive once it is",
            SUBSCRIBE_WAIT.as_secs()
        );
    }
}

/// A key ring from base64 secrets, comma-separated: the first seals, every one opens.
fn state_key_ring(value: &str) -> Result<StateKey, String> {
    let mut ring: Option<StateKey> = None;
    for (i, part) in value.split(',').map(str::trim).enumerate() {
        let secret = STANDARD
            .decode(part)
            .map_err(|e| format!("secret {} is not base64 ({e})", i + 1))?;
        if secret.len() < 16 {
            return Err(format!(
                "secret {} has {} bytes; use at least 16 random bytes",
                i + 1,
                secret.len()
            ));
        }
        ring = Some(match ring {
            None => StateKey::from_bytes(&secret),
            Some(ring) => ring.accepting(&secret),
        });
    }
    ring.ok_or_else(|| "no secret given".to_owned())
}

/// Serve over streamable HTTP until the process is stopped, with the open-file limit
/// raised first (each connection is a file).
pub async fn serve_http(
    server: mcpflow::server::Server,
    addr: &str,
    options: &HttpOptions,
    sessions: Option<Arc<RedisSessionStore>>,
) -> u8 {
    #[cfg(unix)]
    match mcpflow::http::server::raise_open_file_limit() {
        Ok(n) => tracing::debug!(open_files = n, "raised the open-file limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit"),
    }
    let protection = match options.auth.check() {
        Ok(protection) => protection,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return EXIT_USAGE;
        }
    };
    // Bound first: the URL served is the audience tokens must name.
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("mcpflow: could not listen on {addr}: {e}");
            return EXIT_CONNECTION;
        }
    };
    let mut http = options.apply(HttpServer::new(server));
    if let Some(store) = sessions {
        http = http.session_store(store);
    }
    if let Some(protection) = protection {
        let served = match listener.local_addr() {
            Ok(local) => format!("http://{local}/mcp"),
            Err(e) => {
                eprintln!("mcpflow: could not listen on {addr}: {e}");
                return EXIT_CONNECTION;
            }
        };
        let auth = protection.resource_auth(&served);
        eprintln!(
            "mcpflow: requests need a token from {} for {} with scope `{}`",
            auth.metadata().authorization_servers.join(", "),
            auth.metadata().resource,
            auth.metadata()
                .scopes_supported
                .as_deref()
                .unwrap_or_default()
                .join(" ")
        );
        http = http.auth(auth);
    }
    match http.serve_listener(listener) {
        Ok(running) => {
            eprintln!("mcpflow: serving MCP at {}", running.url());
            running.wait().await;
            0
        }
        Err(e) => {
            eprintln!("mcpflow: could not listen on {addr}: {e}");
            EXIT_CONNECTION
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_key_ring_is_read_from_base64_secrets() {
        let one = STANDARD.encode([7u8; 32]);
        let two = STANDARD.encode([9u8; 16]);
        let ring = state_key_ring(&format!("{one}, {two}")).expect("two secrets");
        assert_eq!(ring.len(), 2);
        assert_eq!(state_key_ring(&one).map(|r| r.len()), Ok(1));
        let short = state_key_ring(&STANDARD.encode([1u8; 8])).unwrap_err();
        assert!(short.contains("at least 16"), "{short}");
        let bad = state_key_ring("not base64!").unwrap_err();
        assert!(bad.contains("secret 1 is not base64"), "{bad}");
        assert!(state_key_ring("").is_err(), "an empty value is no secret");
    }
}
