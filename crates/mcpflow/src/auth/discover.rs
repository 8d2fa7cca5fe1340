//! Metadata discovery over HTTP: from an MCP server URL and the challenge of its 401 to
//! a checked protected-resource document and a checked authorization-server document.
//!
//! Candidates come from [`protected_resource_metadata_urls`] and
//! [`authorization_server_metadata_urls`], fetched in order. A fetch that fails (network
//! error, timeout, non-2xx, a body too large, not JSON, not shaped like the document)
//! moves on to the next candidate; a document that arrives but fails a check ends
//! discovery, because a later candidate must not overrule what the server did publish.

use std::fmt;
use std::time::Duration;

use reqwest::{Url, header};
use serde::de::DeserializeOwned;
use thiserror::Error;

use super::body::{CappedBody, read_capped};
use super::challenge::BearerChallenge;
use super::discovery::{
    DiscoveryError, authorization_server_metadata_urls, protected_resource_metadata_urls,
};
use super::metadata::{AuthorizationServerMetadata, MetadataError, ProtectedResourceMetadata};

/// Why one candidate URL gave no document.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FetchFailure {
    /// The request could not be made or its body could not be read.
    #[error("request failed: {0}")]
    Network(String),
    /// No whole response within the per-fetch timeout.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// A status other than 2xx.
    #[error("HTTP {0}")]
    Status(u16),
    /// The body exceeds the size cap.
    #[error("body exceeds {0} bytes")]
    TooLarge(usize),
    /// The body is not JSON.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// JSON, but not the metadata document (a required member is missing or mistyped).
    #[error("not a metadata document: {0}")]
    NotMetadata(String),
}

/// One candidate URL and why it gave no document.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Attempt {
    /// The URL fetched.
    pub url: Url,
    /// Why it gave no document.
    pub failure: FetchFailure,
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.url, self.failure)
    }
}

/// The attempts, one per line, for error messages that name every URL tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempts(pub Vec<Attempt>);

impl fmt::Display for Attempts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for attempt in &self.0 {
            write!(f, "\n  {attempt}")?;
        }
        Ok(())
    }
}

/// Why discovery ended without both documents.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DiscoverError {
    /// No candidate URL could be built from the server URL, challenge or issuer.
    #[error(transparent)]
    Url(#[from] DiscoveryError),
    /// No candidate gave a protected-resource metadata document.
    #[error("no protected-resource metadata for `{server}`; tried:{attempts}")]
    NoProtectedResource {
        /// The MCP server URL.
        server: String,
        /// Every URL tried, in order, and why it gave nothing.
        attempts: Attempts,
    },
    /// The protected-resource document at `url` failed a check.
    #[error("protected-resource metadata at {url} is unusable: {error}")]
    ProtectedResource {
        /// Where the document came from.
        url: Url,
        /// The failed check.
        error: MetadataError,
    },
    /// No candidate gave an authorization-server metadata document.
    #[error("no authorization-server metadata for issuer `{issuer}`; tried:{attempts}")]
    NoAuthorizationServer {
        /// The issuer named by the protected-resource metadata.
        issuer: String,
        /// Every URL tried, in order, and why it gave nothing.
        attempts: Attempts,
    },
    /// The authorization-server document at `url` failed a check.
    #[error("authorization-server metadata at {url} is unusable: {error}")]
    AuthorizationServer {
        /// Where the document came from.
        url: Url,
        /// The failed check.
        error: MetadataError,
    },
}

/// Both documents, checked, and what the authorization-code flow needs from them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Discovery {
    /// Where the protected-resource document came from.
    pub protected_resource_url: Url,
    /// The protected-resource document.
    pub protected_resource: ProtectedResourceMetadata,
    /// Its `resource`, checked against the server URL: the RFC 8707 `resource` parameter.
    pub resource: Url,
    /// The issuer used (the first of `authorization_servers`).
    pub issuer: String,
    /// Where the authorization-server document came from.
    pub authorization_server_url: Url,
    /// The authorization-server document, its issuer and PKCE S256 checked.
    pub authorization_server: AuthorizationServerMetadata,
    /// Its `authorization_endpoint`, parsed and checked.
    pub authorization_endpoint: Url,
    /// Its `token_endpoint`, parsed and checked.
    pub token_endpoint: Url,
}

/// Fetches and checks metadata, each fetch bounded in time and size.
#[derive(Debug, Clone)]
pub struct Discoverer {
    http: reqwest::Client,
    timeout: Duration,
    max_body_bytes: usize,
}

/// Per-fetch timeout by default: a metadata document is one small response.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Body cap by default: real documents are a few KiB; the cap keeps a hostile or
/// misconfigured server from filling memory.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;

impl Discoverer {
    /// A discoverer on `http` (share the MCP transport's client so TLS roots and proxies
    /// agree), with the default timeout and body cap.
    #[must_use]
    pub fn new(http: reqwest::Client) -> Self {
        Self {
            http,
            timeout: DEFAULT_FETCH_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// The limit on each fetch, from sending the request to the end of the body.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest body accepted.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Discovers and checks both documents for the MCP server at `server_url`, given the
    /// Bearer challenge of its 401 (or none).
    ///
    /// # Errors
    /// [`DiscoverError`]; the variants that found nothing list every URL tried.
    pub async fn discover(
        &self,
        server_url: &Url,
        challenge: Option<&BearerChallenge>,
    ) -> Result<Discovery, DiscoverError> {
        let (protected_resource_url, protected_resource, resource, issuer) =
            self.protected_resource(server_url, challenge).await?;
        let (authorization_server_url, authorization_server) =
            self.authorization_server(&issuer).await?;
        let (authorization_endpoint, token_endpoint) = authorization_server
            .check_for_authorization_code(&issuer)
            .map_err(|error| DiscoverError::AuthorizationServer {
                url: authorization_server_url.clone(),
                error,
            })?;
        Ok(Discovery {
            protected_resource_url,
            protected_resource,
            resource,
            issuer,
            authorization_server_url,
            authorization_server,
            authorization_endpoint,
            token_endpoint,
        })
    }

    /// The protected-resource document for `server_url`, where it came from, its checked
    /// `resource`, and the issuer of its first authorization server.
    ///
    /// # Errors
    /// [`DiscoverError`].
    pub async fn protected_resource(
        &self,
        server_url: &Url,
        challenge: Option<&BearerChallenge>,
    ) -> Result<(Url, ProtectedResourceMetadata, Url, String), DiscoverError> {
        let candidates = protected_resource_metadata_urls(server_url, challenge)?;
        let (url, document) = self
            .first_document::<ProtectedResourceMetadata>(candidates)
            .await
            .map_err(|attempts| DiscoverError::NoProtectedResource {
                server: server_url.to_string(),
                attempts,
            })?;
        let prm_error = |error| DiscoverError::ProtectedResource {
            url: url.clone(),
            error,
        };
        let resource = document.check_resource(server_url).map_err(prm_error)?;
        let issuer = document
            .authorization_server()
            .map_err(prm_error)?
            .to_owned();
        Ok((url, document, resource, issuer))
    }

    /// The authorization-server document of `issuer`, with its `issuer` checked, and
    /// where it came from.
    ///
    /// # Errors
    /// [`DiscoverError`].
    pub async fn authorization_server(
        &self,
        issuer: &str,
    ) -> Result<(Url, AuthorizationServerMetadata), DiscoverError> {
        let (url, document) = self.authorization_server_unchecked(issuer).await?;
        document
            .check_issuer(issuer)
            .map_err(|error| DiscoverError::AuthorizationServer {
                url: url.clone(),
                error,
            })?;
        Ok((url, document))
    }

    /// The authorization-server document found from `issuer`, its `issuer` unchecked:
    /// for 2025-03-26 servers, whose authorization base is not an issuer.
    ///
    /// # Errors
    /// [`DiscoverError::NoAuthorizationServer`] or [`DiscoverError::Url`].
    pub async fn authorization_server_unchecked(
        &self,
        issuer: &str,
    ) -> Result<(Url, AuthorizationServerMetadata), DiscoverError> {
        let candidates = authorization_server_metadata_urls(issuer)?;
        self.first_document::<AuthorizationServerMetadata>(candidates)
            .await
            .map_err(|attempts| DiscoverError::NoAuthorizationServer {
                issuer: issuer.to_owned(),
                attempts,
            })
    }

    /// The first candidate that yields a `T`, or every attempt when none does.
    async fn first_document<T: DeserializeOwned>(
        &self,
        candidates: Vec<Url>,
    ) -> Result<(Url, T), Attempts> {
        let mut attempts = Vec::with_capacity(candidates.len());
        for url in candidates {
            match self.fetch(&url).await {
                Ok(doc) => return Ok((url, doc)),
                Err(failure) => attempts.push(Attempt { url, failure }),
            }
        }
        Err(Attempts(attempts))
    }

    /// One bounded GET of `url`, parsed as `T`.
    async fn fetch<T: DeserializeOwned>(&self, url: &Url) -> Result<T, FetchFailure> {
        let body = tokio::time::timeout(self.timeout, self.fetch_body(url))
            .await
            .map_err(|_| FetchFailure::Timeout(self.timeout))??;
        let value: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| FetchFailure::NotJson(e.to_string()))?;
        serde_json::from_value(value).map_err(|e| FetchFailure::NotMetadata(e.to_string()))
    }

    async fn fetch_body(&self, url: &Url) -> Result<Vec<u8>, FetchFailure> {
        let response = self
            .http
            .get(url.clone())
            .header(header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| FetchFailure::Network(describe(&e.without_url())))?;
        let status = response.status();
        if !status.is_success() {
            return Err(FetchFailure::Status(status.as_u16()));
        }
        let limit = self.max_body_bytes;
        read_capped(response, limit).await.map_err(|e| match e {
            CappedBody::TooLarge => FetchFailure::TooLarge(limit),
            CappedBody::Network(e) => FetchFailure::Network(describe(&e.without_url())),
        })
    }
}

/// The error and its causes on one line, since reqwest's own message alone says only
/// "error sending request" (the URL is left out: the attempt names it).
fn describe(error: &reqwest::Error) -> String {
    let mut out = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
