//! Connectors for the entries of an `mcpServers` file: a child process for a command,
//! the streamable HTTP client (or its legacy SSE fallback) for a URL.

use std::sync::Arc;

use std::future::Future;
use std::sync::{Mutex, PoisonError};

use super::config::{RemoteTransport, ServerConfig};
use super::supervisor::{ConnectFailure, Connector};
use crate::client::{Client, ClientBuilder};
use crate::server::{RunningServer, Server};
use crate::transport::MemoryTransport;

/// A [`Connector`] from a closure.
pub fn connector<F, Fut>(connect: F) -> Connector
where
    F: Fn(ClientBuilder) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Client, ConnectFailure>> + Send + 'static,
{
    Arc::new(move |builder| Box::pin(connect(builder)))
}

/// A connector to an in-process [`Server`] over a [`MemoryTransport`]: each connection
/// is served anew; the connector keeps the latest one running until it is dropped
/// with the host.
pub fn memory_connector(server: Server) -> Connector {
    let running: Arc<Mutex<Option<RunningServer>>> = Arc::default();
    connector(move |builder| {
        let (client_side, server_side) = MemoryTransport::pair(64);
        let served = server.serve(server_side);
        // The connection it replaces has ended; dropping it only frees it.
        *running.lock().unwrap_or_else(PoisonError::into_inner) = Some(served);
        async move {
            builder
                .connect(client_side)
                .await
                .map_err(ConnectFailure::new)
        }
    })
}

/// A connector that reaches the server `config` describes (variables already
/// expanded, see [`ServerConfig::expanded`]). Each call starts a new child process or
/// HTTP session.
pub fn connector_for(config: &ServerConfig) -> Connector {
    connector_with(config, None)
}

/// As [`connector_for`], with `oauth` run by an HTTP server's transport when the server
/// answers 401 (ignored for a command). Every reconnect shares its token store and user
/// step, so tokens obtained once serve each new session.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use mcpflow::auth::{LoopbackRedirect, OAuthConfig};
/// use mcpflow::host::{ServerConfig, ServerOptions, ServersConfig, ToolHost, connector_with_oauth};
///
/// let file = ServersConfig::from_json(r#"{"mcpServers": {"remote": {"url": "https://mcp.example.com/mcp"}}}"#)?;
/// let user = LoopbackRedirect::bind(0, Duration::from_secs(300), |url| {
///     eprintln!("open {url} to sign in");
///     Ok(())
/// })
/// .await?;
/// let remote = file.server("remote")?;
/// let connector = connector_with_oauth(remote, OAuthConfig::authorization_code(user));
/// let host = ToolHost::builder().server(ServerOptions::new("remote", connector)).start();
/// # Ok(()) }
/// ```
#[cfg(feature = "http-client")]
pub fn connector_with_oauth(config: &ServerConfig, oauth: crate::auth::OAuthConfig) -> Connector {
    connector_with(config, Some(oauth))
}

#[cfg(feature = "http-client")]
type OAuth = Option<crate::auth::OAuthConfig>;
#[cfg(not(feature = "http-client"))]
type OAuth = Option<std::convert::Infallible>;

fn connector_with(config: &ServerConfig, oauth: OAuth) -> Connector {
    match config {
        ServerConfig::Stdio(stdio) => {
            let stdio = stdio.clone();
            Arc::new(move |builder| {
                let stdio = stdio.clone();
                Box::pin(async move {
                    let child = stdio.child_process().spawn().map_err(ConnectFailure::new)?;
                    builder.connect(child).await.map_err(ConnectFailure::new)
                })
            })
        }
        ServerConfig::Remote(remote) => remote_connector(remote.clone(), oauth),
    }
}

#[cfg(feature = "http-client")]
fn remote_connector(remote: super::config::RemoteServer, oauth: OAuth) -> Connector {
    use crate::http::client::HttpClientTransport;
    Arc::new(move |builder| {
        let remote = remote.clone();
        let oauth = oauth.clone();
        Box::pin(async move {
            let mut http = HttpClientTransport::builder(&remote.url)
                .legacy_sse_fallback(remote.transport == RemoteTransport::Sse);
            for (name, value) in &remote.headers {
                http = http.header(name, value);
            }
            if let Some(oauth) = oauth {
                http = http.oauth(oauth);
            }
            let transport = http.build().map_err(ConnectFailure::new)?;
            builder
                .connect(transport)
                .await
                .map_err(ConnectFailure::new)
        })
    })
}

#[cfg(not(feature = "http-client"))]
fn remote_connector(remote: super::config::RemoteServer, _oauth: OAuth) -> Connector {
    let _ = RemoteTransport::Sse;
    Arc::new(move |_builder| {
        let url = remote.url.clone();
        Box::pin(async move {
            Err(ConnectFailure::new(format!(
                "`{url}` needs the `http-client` feature of mcpflow"
            )))
        })
    })
}
