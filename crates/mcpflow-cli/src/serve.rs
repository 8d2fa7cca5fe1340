//! `mcpflow serve`: the built-in servers over stdio, or over streamable HTTP with
//! `--http` and the HTTP server's limits, access rules and OAuth protection
//! (`serve_auth`).

use std::time::Duration;

use mcpflow::http::server::HttpServer;

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
            || self.auth.is_set()
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

/// Serve over streamable HTTP until the process is stopped, with the open-file limit
/// raised first (each connection is a file).
pub async fn serve_http(server: mcpflow::server::Server, addr: &str, options: &HttpOptions) -> u8 {
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
