//! The user's part of the authorization-code flow: visit the authorization URL, and hand
//! back the redirect the authorization server sent the user agent to.
//!
//! [`LoopbackRedirect`] opens a browser (through a callback) and receives the redirect
//! on a one-shot listener on 127.0.0.1; [`HeadlessRedirect`] follows the authorization
//! URL by HTTP GET and reads the redirect's `Location`, for authorization servers that
//! approve without a user (test servers, the conformance suite).

use std::sync::Arc;
use std::time::Duration;

use reqwest::{StatusCode, Url, header};
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use crate::session::BoxFuture;

/// The user step failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum UserStepError {
    /// The browser could not be opened, or the listener failed.
    #[error("the authorization step failed: {0}")]
    Io(String),
    /// No redirect arrived in time.
    #[error("no authorization redirect within {0:?}")]
    Timeout(Duration),
    /// The authorization server answered without redirecting to the redirect URI.
    #[error("the authorization server did not redirect back: {0}")]
    NoRedirect(String),
}

/// Visits the authorization URL and returns the redirect URI as the authorization
/// server called it (with `code`, `state`, maybe `iss`, or `error`).
pub trait UserAuthorization: Send + Sync {
    /// Where the authorization server must send the user agent back.
    fn redirect_uri(&self) -> Url;
    /// Runs the step for `authorization_url`.
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, UserStepError>>;
}

/// Follows the authorization URL by HTTP GET, without a user: the authorization server
/// must redirect (3xx) to the redirect URI at once, maybe after redirects of its own.
#[derive(Debug, Clone)]
pub struct HeadlessRedirect {
    http: reqwest::Client,
    redirect_uri: Url,
    timeout: Duration,
}

/// Redirects of the authorization server's own followed before giving up.
const MAX_HOPS: usize = 5;

impl HeadlessRedirect {
    /// Expects redirects to `redirect_uri` (never fetched).
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(redirect_uri: Url) -> Result<Self, UserStepError> {
        let http = crate::http::client::tls::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| UserStepError::Io(e.to_string()))?;
        Ok(Self {
            http,
            redirect_uri,
            timeout: Duration::from_secs(30),
        })
    }

    fn is_redirect_uri(&self, url: &Url) -> bool {
        url.scheme() == self.redirect_uri.scheme()
            && url.host_str() == self.redirect_uri.host_str()
            && url.port_or_known_default() == self.redirect_uri.port_or_known_default()
            && url.path() == self.redirect_uri.path()
    }

    async fn follow(&self, mut url: Url) -> Result<Url, UserStepError> {
        for _ in 0..MAX_HOPS {
            let response = self
                .http
                .get(url.clone())
                .send()
                .await
                .map_err(|e| UserStepError::Io(e.without_url().to_string()))?;
            let status = response.status();
            if !status.is_redirection() {
                return Err(UserStepError::NoRedirect(format!("answered {status}")));
            }
            let location = response
                .headers()
                .get(header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| UserStepError::NoRedirect(format!("{status} without Location")))?;
            let next = url
                .join(location)
                .map_err(|_| UserStepError::NoRedirect("a Location that is no URL".into()))?;
            if self.is_redirect_uri(&next) {
                return Ok(next);
            }
            url = next;
        }
        Err(UserStepError::NoRedirect(format!(
            "more than {MAX_HOPS} redirects"
        )))
    }
}

impl UserAuthorization for HeadlessRedirect {
    fn redirect_uri(&self) -> Url {
        self.redirect_uri.clone()
    }

    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, UserStepError>> {
        Box::pin(async move {
            tokio::time::timeout(self.timeout, self.follow(authorization_url))
                .await
                .map_err(|_| UserStepError::Timeout(self.timeout))?
        })
    }
}

/// Shows a URL to the user.
type OpenUrl = dyn Fn(&Url) -> std::io::Result<()> + Send + Sync;

/// Opens the authorization URL (in a browser, through the callback) and receives the
/// redirect on `http://127.0.0.1:PORT/callback`, one request per authorization.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use mcpflow::auth::{LoopbackRedirect, OAuthConfig};
///
/// let user = LoopbackRedirect::bind(0, Duration::from_secs(300), |url| {
///     eprintln!("open this URL to authorize: {url}");
///     Ok(())
/// })
/// .await?;
/// let config = OAuthConfig::authorization_code(user);
/// # Ok(()) }
/// ```
pub struct LoopbackRedirect {
    listener: Mutex<TcpListener>,
    redirect_uri: Url,
    open: Arc<OpenUrl>,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("redirect_uri", &self.redirect_uri.as_str())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Longest request line and headers read from the browser.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

impl LoopbackRedirect {
    /// Listens on 127.0.0.1 (`port` 0: any free port); `open` shows the URL to the user
    /// (e.g. starts a browser). The user has `timeout` to finish.
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn bind(
        port: u16,
        timeout: Duration,
        open: impl Fn(&Url) -> std::io::Result<()> + Send + Sync + 'static,
    ) -> Result<Self, UserStepError> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| UserStepError::Io(e.to_string()))?;
        let port = listener
            .local_addr()
            .map_err(|e| UserStepError::Io(e.to_string()))?
            .port();
        let redirect_uri = Url::parse(&format!("http://127.0.0.1:{port}/callback"))
            .map_err(|e| UserStepError::Io(e.to_string()))?;
        Ok(Self {
            listener: Mutex::new(listener),
            redirect_uri,
            open: Arc::new(open),
            timeout,
        })
    }

    /// Accepts connections until one asks for the callback path; answers it with a short
    /// page and returns its URL.
    async fn receive(&self) -> Result<Url, UserStepError> {
        let listener = self.listener.lock().await;
        loop {
            let (mut stream, _) = listener
                .accept()
                .await
                .map_err(|e| UserStepError::Io(e.to_string()))?;
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST_BYTES {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let line = String::from_utf8_lossy(&buf);
            let target = line
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split(' ').next())
                .and_then(|t| self.redirect_uri.join(t).ok());
            match target {
                Some(url) if url.path() == self.redirect_uri.path() => {
                    let body = "Authorization received; you may close this window.";
                    let _ = stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                    return Ok(url);
                }
                _ => {
                    let status = StatusCode::NOT_FOUND;
                    let _ = stream
                        .write_all(
                            format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                                .as_bytes(),
                        )
                        .await;
                }
            }
        }
    }
}

impl UserAuthorization for LoopbackRedirect {
    fn redirect_uri(&self) -> Url {
        self.redirect_uri.clone()
    }

    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, UserStepError>> {
        Box::pin(async move {
            (self.open)(&authorization_url).map_err(|e| UserStepError::Io(e.to_string()))?;
            tokio::time::timeout(self.timeout, self.receive())
                .await
                .map_err(|_| UserStepError::Timeout(self.timeout))?
        })
    }
}
