//! The OAuth 2.1 client flow an HTTP transport runs when the server answers 401, or 403
//! `insufficient_scope`: discovery, registration, authorization code with PKCE (or client
//! credentials, enterprise-managed or workload identity), token exchange, refresh,
//! step-up, and DPoP-bound tokens where the authorization server supports them.
//!
//! Turn it on with [`HttpClientBuilder::oauth`](crate::http::client::HttpClientBuilder::oauth).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::Url;
use thiserror::Error;

use super::challenge::{BearerChallenge, ChallengeError, resource_challenge};
use super::config::{Grant, OAuthConfig};
use super::discover::{DiscoverError, Discoverer};
use super::discovery::{DiscoveryError, LegacyEndpoints, canonical_resource};
use super::dpop::Dpop;
use super::metadata::{AuthorizationServerMetadata, MetadataError, ProtectedResourceMetadata};
use super::pkce::PkceError;
use super::scope::{IssError, select_scope, step_up_scope, with_offline_access};
use super::store::{StoreError, Tokens};
use super::token::{EndpointError, Endpoints};
use super::user::UserStepError;

mod grants;

/// Why the client could not obtain a token. Never carries a token or a secret.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The `WWW-Authenticate` header is malformed.
    #[error("unusable WWW-Authenticate: {0}")]
    Challenge(#[from] ChallengeError),
    /// Metadata discovery failed.
    #[error(transparent)]
    Discover(Box<DiscoverError>),
    /// The authorization server's metadata is unusable for this grant.
    #[error("authorization server metadata: {0}")]
    Metadata(#[from] MetadataError),
    /// No way to register: no pre-registered client, no Client ID Metadata Document, and
    /// no registration endpoint.
    #[error("no client registration for issuer `{0}` and no way to register")]
    NoRegistration(String),
    /// The token or registration endpoint failed.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The user step failed.
    #[error(transparent)]
    UserStep(#[from] UserStepError),
    /// The authorization response's `iss` cannot be trusted (RFC 9207); its `error`, if
    /// any, is not shown.
    #[error(transparent)]
    Iss(#[from] IssError),
    /// The authorization response's `state` is not the one sent.
    #[error("the authorization response's state does not match the request's")]
    StateMismatch,
    /// The authorization server refused.
    #[error("authorization refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth `error` code.
        error: String,
        /// The `error_description`.
        description: Option<String>,
    },
    /// The authorization response has no `code`.
    #[error("the authorization response has no code")]
    NoCode,
    /// A 403 that is not `insufficient_scope`: more authorization would not help.
    #[error("the server refuses this token (403 without insufficient_scope)")]
    Forbidden,
    /// The retry limit was reached.
    #[error("gave up after {0} authorization attempts in a row")]
    TooManyAttempts(u32),
    /// The grant needs a token endpoint authentication method not implemented here.
    #[error("token endpoint authentication method `{0}` is not supported")]
    UnsupportedAuthMethod(String),
    /// PKCE or state could not be generated.
    #[error(transparent)]
    Random(#[from] PkceError),
    /// The token store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The workload identity token could not be read.
    #[error("the workload identity token could not be read: {0}")]
    WorkloadToken(String),
}

/// What discovery found, as the flow needs it.
#[derive(Debug, Clone)]
struct Found {
    prm: Option<ProtectedResourceMetadata>,
    /// The RFC 8707 `resource`, exactly as the metadata wrote it (checked against the
    /// server URL); `None` for a 2025-03-26 server without metadata.
    resource: Option<String>,
    issuer: String,
    server: AuthorizationServerMetadata,
    token_endpoint: Url,
}

/// The OAuth state of one HTTP connection.
pub(crate) struct OAuthClient {
    config: OAuthConfig,
    http: reqwest::Client,
    server_url: Url,
    key: String,
    tokens: Mutex<Option<Option<Tokens>>>,
    generation: AtomicU64,
    attempts: AtomicU32,
    found: Mutex<Option<Found>>,
    flow: tokio::sync::Mutex<()>,
    /// The DPoP key the tokens are bound to, once there is one.
    dpop: Mutex<Option<Arc<Dpop>>>,
    /// The resource challenged with the `DPoP` scheme: bind tokens even when the
    /// authorization server does not advertise DPoP.
    dpop_challenged: AtomicBool,
}

/// Refresh this long before the access token expires.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

impl OAuthClient {
    pub(crate) fn new(config: OAuthConfig, http: reqwest::Client, server_url: Url) -> Self {
        Self {
            key: canonical_resource(&server_url),
            config,
            http,
            server_url,
            tokens: Mutex::new(None),
            generation: AtomicU64::new(0),
            attempts: AtomicU32::new(0),
            found: Mutex::new(None),
            flow: tokio::sync::Mutex::new(()),
            dpop: Mutex::new(None),
            dpop_challenged: AtomicBool::new(false),
        }
    }

    /// The DPoP key of the tokens held, if they are bound to one.
    fn dpop_key(&self) -> Option<Arc<Dpop>> {
        let mut held = self.dpop.lock().unwrap_or_else(PoisonError::into_inner);
        if held.is_none()
            && let Some(stored) = self.current().and_then(|t| t.dpop_key)
        {
            match Dpop::from_stored(&stored) {
                Ok(dpop) => *held = Some(Arc::new(dpop)),
                Err(e) => tracing::warn!(error = %e, "the stored DPoP key is unusable"),
            }
        }
        held.clone()
    }

    /// The DPoP key a new grant at `found` binds its tokens to: when DPoP is on and the
    /// resource takes DPoP-bound tokens (its challenge uses the `DPoP` scheme, or its
    /// metadata names DPoP). An authorization server that does not bind tokens ignores
    /// the proof; a resource that takes only bearer tokens gets them, whatever the
    /// authorization server could do.
    fn dpop_for(&self, found: &Found) -> Option<Arc<Dpop>> {
        let wanted = self.dpop_challenged.load(Ordering::Acquire)
            || found
                .prm
                .as_ref()
                .is_some_and(ProtectedResourceMetadata::takes_dpop);
        if !self.config.dpop || !wanted {
            return None;
        }
        if let Some(dpop) = self.dpop_key() {
            return Some(dpop);
        }
        match Dpop::generate() {
            Ok(dpop) => {
                let dpop = Arc::new(dpop);
                *self.dpop.lock().unwrap_or_else(PoisonError::into_inner) = Some(dpop.clone());
                Some(dpop)
            }
            Err(e) => {
                tracing::debug!(error = %e, "tokens stay bearer tokens");
                None
            }
        }
    }

    /// The `Authorization` value for a `method` request to `url`, and the DPoP proof to
    /// send with it when the token is bound to a key; `None` without a token.
    pub(crate) async fn authorization(
        &self,
        method: &str,
        url: &Url,
    ) -> Option<(String, Option<String>)> {
        let tokens = self.bearer().await?;
        let token = tokens.access_token.expose();
        if !tokens.is_dpop() {
            return Some((format!("Bearer {token}"), None));
        }
        let proof = self
            .dpop_key()
            .and_then(|dpop| match dpop.proof(method, url, Some(token)) {
                Ok(proof) => Some(proof),
                Err(e) => {
                    tracing::warn!(error = %e, "no DPoP proof for the request");
                    None
                }
            });
        Some((format!("DPoP {token}"), proof))
    }

    /// `url`'s server sent `nonce` (`DPoP-Nonce`); whether it is new to the proofs.
    pub(crate) fn learn_nonce(&self, url: &Url, nonce: &str) -> bool {
        self.dpop_key()
            .is_some_and(|dpop| dpop.learn_nonce(url, nonce))
    }

    fn endpoints(&self) -> Endpoints<'_> {
        Endpoints {
            http: &self.http,
            timeout: self.config.timeout,
            dpop: None,
        }
    }

    /// Bumped whenever the tokens change, so a request that failed with an older token
    /// is simply sent again.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn current(&self) -> Option<Tokens> {
        let mut cached = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.is_none() {
            let loaded = self.config.store.tokens(&self.key).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "OAuth token store unreadable");
                None
            });
            *cached = Some(loaded);
        }
        cached.clone().flatten()
    }

    fn save(&self, tokens: Option<Tokens>) -> Result<(), OAuthError> {
        match &tokens {
            Some(t) => self.config.store.save_tokens(&self.key, t.clone())?,
            None => self.config.store.forget(&self.key)?,
        }
        *self.tokens.lock().unwrap_or_else(PoisonError::into_inner) = Some(tokens);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// The tokens for the next request, refreshed first when the access token is about
    /// to expire and a refresh token and the token endpoint are known.
    async fn bearer(&self) -> Option<Tokens> {
        let tokens = self.current()?;
        if tokens.expires_within(tokens.refresh_margin(EXPIRY_MARGIN))
            && tokens.refresh_token.is_some()
        {
            let _flow = self.flow.lock().await;
            let found = self
                .found
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(found) = found
                && let Some(current) = self.current()
                && current.expires_within(current.refresh_margin(EXPIRY_MARGIN))
            {
                match self.refresh(&found, &current).await {
                    Ok(()) => return self.current(),
                    Err(e) => tracing::debug!(error = %e, "OAuth refresh failed"),
                }
            }
        }
        Some(tokens)
    }

    /// Authorization attempts allowed in a row.
    pub(crate) fn max_attempts(&self) -> u32 {
        self.config.max_attempts
    }

    /// A request was authorized: the retry budget starts over.
    pub(crate) fn succeeded(&self) {
        self.attempts.store(0, Ordering::Release);
    }

    /// The server answered `status` (401 or 403) with `www_authenticate` to a request sent
    /// at token `generation`. `Ok` when it is worth sending again.
    ///
    /// # Errors
    /// [`OAuthError`]: no token could be had.
    pub(crate) async fn challenged(
        &self,
        status: u16,
        www_authenticate: &[&str],
        generation: u64,
    ) -> Result<(), OAuthError> {
        let challenge = match resource_challenge(www_authenticate.iter().copied())? {
            Some((challenge, dpop)) => {
                if dpop {
                    self.dpop_challenged.store(true, Ordering::Release);
                }
                Some(challenge)
            }
            None => None,
        };
        if status == 403
            && !challenge
                .as_ref()
                .is_some_and(|c| c.is_insufficient_scope())
        {
            return Err(OAuthError::Forbidden);
        }
        let _flow = self.flow.lock().await;
        if self.generation() != generation {
            return Ok(());
        }
        let attempt = self.attempts.fetch_add(1, Ordering::AcqRel) + 1;
        if attempt > self.config.max_attempts {
            return Err(OAuthError::TooManyAttempts(self.config.max_attempts));
        }
        let found = self.discover(challenge.as_ref()).await?;
        *self.found.lock().unwrap_or_else(PoisonError::into_inner) = Some(found.clone());
        let mut previous = self.current();
        if previous.as_ref().is_some_and(|t| t.issuer != found.issuer) {
            // Tokens of an authorization server the resource no longer names.
            self.save(None)?;
            previous = None;
        }
        if status == 401
            && let Some(old) = &previous
            && old.refresh_token.is_some()
        {
            match self.refresh(&found, old).await {
                Ok(()) => return Ok(()),
                Err(e) => tracing::debug!(error = %e, "OAuth refresh failed; authorizing anew"),
            }
        }
        let scope = if status == 403 {
            challenge
                .as_ref()
                .and_then(|c| step_up_scope(previous.as_ref().and_then(|t| t.scope.as_deref()), c))
        } else if let Some(scope) = &self.config.scope {
            Some(scope.clone())
        } else {
            select_scope(challenge.as_ref(), found.prm.as_ref())
        };
        let tokens = match &self.config.grant {
            Grant::AuthorizationCode(user) => {
                let scope = with_offline_access(scope, &found.server);
                self.authorization_code(user.as_ref(), &found, scope)
                    .await?
            }
            Grant::ClientCredentials(client) => {
                self.client_credentials(client, &found, scope).await?
            }
            Grant::Enterprise(client, idp) => self.enterprise(client, idp, &found, scope).await?,
            Grant::WorkloadIdentity(identity) => self.workload(identity, &found, scope).await?,
        };
        self.save(Some(tokens))
    }

    async fn discover(&self, challenge: Option<&BearerChallenge>) -> Result<Found, OAuthError> {
        let discoverer = Discoverer::new(self.http.clone()).timeout(self.config.timeout);
        match discoverer
            .protected_resource(&self.server_url, challenge)
            .await
        {
            Ok((_, prm, _, issuer)) => {
                let (_, server) = discoverer.authorization_server(&issuer).await?;
                let token_endpoint =
                    super::metadata::endpoint("token_endpoint", server.token_endpoint.as_deref())?;
                Ok(Found {
                    resource: Some(prm.resource.clone()),
                    prm: Some(prm),
                    issuer,
                    server,
                    token_endpoint,
                })
            }
            // A 2025-03-26 server: the authorization base is the server's origin.
            Err(DiscoverError::NoProtectedResource { .. }) => self.legacy(&discoverer).await,
            Err(e) => Err(e.into()),
        }
    }

    async fn legacy(&self, discoverer: &Discoverer) -> Result<Found, OAuthError> {
        let defaults =
            LegacyEndpoints::for_server(&self.server_url).map_err(DiscoverError::from)?;
        let mut origin = self.server_url.clone();
        origin.set_path("/");
        origin.set_query(None);
        origin.set_fragment(None);
        let base = canonical_resource(&origin);
        // 2025-03-26 has no issuer rule: the document's own issuer is used (for `iss`).
        let (issuer, server) = match discoverer.authorization_server_unchecked(&base).await {
            Ok((_, server)) => (server.issuer.clone(), server),
            Err(DiscoverError::NoAuthorizationServer { .. }) => {
                let mut server = AuthorizationServerMetadata::new(base.clone());
                server.authorization_endpoint = Some(defaults.authorization.to_string());
                server.token_endpoint = Some(defaults.token.to_string());
                server.registration_endpoint = Some(defaults.registration.to_string());
                // Without metadata there is nothing to refuse on; 2025-03-26 requires S256.
                server.code_challenge_methods_supported = Some(vec!["S256".to_owned()]);
                (base, server)
            }
            Err(e) => return Err(e.into()),
        };
        let token_endpoint =
            super::metadata::endpoint("token_endpoint", server.token_endpoint.as_deref())?;
        Ok(Found {
            prm: None,
            resource: None,
            issuer,
            server,
            token_endpoint,
        })
    }
}

fn check_method(method: &str) -> Result<(), OAuthError> {
    match method {
        "none" | "client_secret_basic" | "client_secret_post" | "private_key_jwt" => Ok(()),
        other => Err(OAuthError::UnsupportedAuthMethod(other.to_owned())),
    }
}

impl From<DiscoverError> for OAuthError {
    fn from(e: DiscoverError) -> Self {
        Self::Discover(Box::new(e))
    }
}

impl From<DiscoveryError> for OAuthError {
    fn from(e: DiscoveryError) -> Self {
        Self::Discover(Box::new(DiscoverError::from(e)))
    }
}
