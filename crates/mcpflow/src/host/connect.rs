//! Connectors for the entries of an `mcpServers` file: a child process for a command,
//! the streamable HTTP client (or its legacy SSE fallback) for a URL.

use std::sync::Arc;

use std::future::Future;
use std::sync::{Mutex, PoisonError};

use super::config::{RemoteTransport, ServerConfig};
use super::supervisor::{ConnectFailure, Connector};
use crate::client::{Client, ClientBuilder};
use crate::server::{RunningServer, Server};
use crate::transport::{ChildProcess, MemoryTransport};

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
    match config {
        ServerConfig::Stdio(stdio) => {
            let stdio = stdio.clone();
            Arc::new(move |builder| {
                let stdio = stdio.clone();
                Box::pin(async move {
                    let mut command = ChildProcess::builder(&stdio.command).args(&stdio.args);
                    for (key, value) in &stdio.env {
                        command = command.env(key, value);
                    }
                    if let Some(cwd) = &stdio.cwd {
                        command = command.current_dir(cwd);
                    }
                    let child = command.spawn().map_err(ConnectFailure::new)?;
                    builder.connect(child).await.map_err(ConnectFailure::new)
                })
            })
        }
        ServerConfig::Remote(remote) => remote_connector(remote.clone()),
    }
}

#[cfg(feature = "http-client")]
fn remote_connector(remote: super::config::RemoteServer) -> Connector {
    use crate::http::client::HttpClientTransport;
    Arc::new(move |builder| {
        let remote = remote.clone();
        Box::pin(async move {
            let mut http = HttpClientTransport::builder(&remote.url)
                .legacy_sse_fallback(remote.transport == RemoteTransport::Sse);
            for (name, value) in &remote.headers {
                http = http.header(name, value);
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
fn remote_connector(remote: super::config::RemoteServer) -> Connector {
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
