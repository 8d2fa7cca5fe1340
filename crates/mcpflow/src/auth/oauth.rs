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
use super::config::{Grant, OAuthConfig, WorkloadIdentity};
use super::discover::{DiscoverError, Discoverer};
use super::discovery::{DiscoveryError, LegacyEndpoints, canonical_resource};
use super::dpop::Dpop;
use super::metadata::{AuthorizationServerMetadata, MetadataError, ProtectedResourceMetadata};
use super::pkce::{Pkce, PkceError, State};
use super::scope::{
    IssError, check_response_iss, select_scope, step_up_scope, with_offline_access,
};
use super::store::{ClientRegistration, StoreError, Tokens};
use super::token::{EndpointError, Endpoints, auth_method};
use super::user::{UserAuthorization, UserStepError};

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

    /// The registration at `found`'s issuer: pre-registered, stored, a Client ID Metadata
    /// Document, or a new dynamic registration (stored under the issuer).
    async fn registration(
        &self,
        found: &Found,
        redirect_uri: &Url,
        scope: Option<&str>,
    ) -> Result<ClientRegistration, OAuthError> {
        let issuer = found.issuer.as_str();
        let pre = |at: Option<&str>| {
            self.config
                .pre_registered
                .iter()
                .find(|(i, _)| i.as_deref() == at)
                .map(|(_, c)| c.clone())
        };
        if let Some(client) = pre(Some(issuer)) {
            return Ok(client);
        }
        if let Some(client) = self.config.store.registration(issuer)? {
            return Ok(client);
        }
        if let Some(client) = pre(None) {
            return Ok(client);
        }
        if found.server.client_id_metadata_document_supported == Some(true)
            && let Some(url) = &self.config.client_metadata_url
        {
            return Ok(ClientRegistration::public(url.clone()).auth_method("none"));
        }
        let Some(endpoint) = found.server.registration_endpoint.as_deref() else {
            return Err(OAuthError::NoRegistration(issuer.to_owned()));
        };
        let endpoint = super::metadata::endpoint("registration_endpoint", Some(endpoint))?;
        let offered = found
            .server
            .token_endpoint_auth_methods_supported
            .as_deref();
        let method = match offered {
            None => "none",
            Some(m) if m.iter().any(|x| x == "none") => "none",
            Some(m) if m.iter().any(|x| x == "client_secret_basic") => "client_secret_basic",
            Some(m) if m.iter().any(|x| x == "client_secret_post") => "client_secret_post",
            Some(_) => "none",
        };
        let client = self
            .endpoints()
            .register(
                &endpoint,
                &self.config.client_name,
                redirect_uri,
                method,
                scope,
            )
            .await?;
        self.config
            .store
            .save_registration(issuer, client.clone())?;
        Ok(client)
    }

    async fn authorization_code(
        &self,
        user: &dyn UserAuthorization,
        found: &Found,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let (authorization_endpoint, _) =
            found.server.check_for_authorization_code(&found.issuer)?;
        let redirect_uri = user.redirect_uri();
        let client = self
            .registration(found, &redirect_uri, scope.as_deref())
            .await?;
        let pkce = Pkce::generate()?;
        let state = State::generate()?;
        let mut url = authorization_endpoint;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", redirect_uri.as_str())
                .append_pair("code_challenge", pkce.challenge())
                .append_pair("code_challenge_method", pkce.method())
                .append_pair("state", state.as_str());
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
                // OpenID Connect grants offline_access (a refresh token) only with
                // consent asked for (OIDC Core §11); servers drop it otherwise.
                if scope.split(' ').any(|s| s == "offline_access") {
                    query.append_pair("prompt", "consent");
                }
            }
            if let Some(resource) = &found.resource {
                query.append_pair("resource", resource);
            }
        }
        let redirect = tokio::time::timeout(self.config.timeout, user.authorize(url))
            .await
            .map_err(|_| UserStepError::Timeout(self.config.timeout))??;
        let param = |name: &str| {
            redirect
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        // RFC 9207: an untrusted response is dropped before its error or code is read.
        check_response_iss(&found.server, &found.issuer, param("iss").as_deref())?;
        if !param("state").is_some_and(|s| state.matches(&s)) {
            return Err(OAuthError::StateMismatch);
        }
        if let Some(error) = param("error") {
            return Err(OAuthError::Denied {
                error,
                description: param("error_description"),
            });
        }
        let code = param("code").ok_or(OAuthError::NoCode)?;
        let method = auth_method(&client, &found.server)?;
        check_method(&method)?;
        let mut params = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("code_verifier", pkce.verifier()),
        ];
        if let Some(resource) = &found.resource {
            params.push(("resource", resource));
        }
        let dpop = self.dpop_for(found);
        Ok(Endpoints {
            dpop: dpop.as_deref(),
            ..self.endpoints()
        }
        .token(
            &found.token_endpoint,
            &found.issuer,
            &client,
            &method,
            &params,
            scope.as_deref(),
        )
        .await?)
    }

    async fn client_credentials(
        &self,
        client: &ClientRegistration,
        found: &Found,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        self.machine_grant(
            client,
            found,
            scope,
            &[("grant_type", "client_credentials")],
        )
        .await
    }

    /// Enterprise-managed authorization: an ID-JAG from the identity provider, then the
    /// JWT bearer grant with it at the authorization server.
    async fn enterprise(
        &self,
        client: &ClientRegistration,
        idp: &super::EnterpriseIdp,
        found: &Found,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let assertion = self
            .endpoints()
            .identity_assertion(
                idp,
                &found.issuer,
                found.resource.as_deref(),
                scope.as_deref(),
            )
            .await?;
        let grant = [
            ("grant_type", super::enterprise::JWT_BEARER_GRANT),
            ("assertion", assertion.expose()),
        ];
        self.machine_grant(client, found, scope, &grant).await
    }

    /// A grant without a user step: `grant` plus the scope and the resource, with the
    /// client's own authentication.
    async fn machine_grant(
        &self,
        client: &ClientRegistration,
        found: &Found,
        scope: Option<String>,
        grant: &[(&str, &str)],
    ) -> Result<Tokens, OAuthError> {
        let method = auth_method(client, &found.server)?;
        check_method(&method)?;
        let mut params = grant.to_vec();
        if let Some(scope) = &scope {
            params.push(("scope", scope));
        }
        if let Some(resource) = &found.resource {
            params.push(("resource", resource));
        }
        let dpop = self.dpop_for(found);
        Ok(Endpoints {
            dpop: dpop.as_deref(),
            ..self.endpoints()
        }
        .token(
            &found.token_endpoint,
            &found.issuer,
            client,
            &method,
            &params,
            scope.as_deref(),
        )
        .await?)
    }

    /// Workload identity: the platform's identity token as a JWT bearer grant, with no
    /// client authentication.
    async fn workload(
        &self,
        identity: &WorkloadIdentity,
        found: &Found,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let token = identity
            .current()
            .map_err(|e| OAuthError::WorkloadToken(e.to_string()))?;
        let client = ClientRegistration::public(identity.client_id.clone().unwrap_or_default())
            .auth_method("none");
        let grant = [
            ("grant_type", super::enterprise::JWT_BEARER_GRANT),
            ("assertion", token.expose()),
        ];
        self.machine_grant(&client, found, scope, &grant).await
    }

    /// The refresh-token grant; keeps the old refresh token when no new one is issued.
    async fn refresh(&self, found: &Found, old: &Tokens) -> Result<(), OAuthError> {
        let Some(refresh_token) = &old.refresh_token else {
            return Ok(());
        };
        let client = match &self.config.grant {
            Grant::ClientCredentials(client) | Grant::Enterprise(client, _) => client.clone(),
            Grant::AuthorizationCode(user) => {
                self.registration(found, &user.redirect_uri(), old.scope.as_deref())
                    .await?
            }
            Grant::WorkloadIdentity(identity) => {
                ClientRegistration::public(identity.client_id.clone().unwrap_or_default())
                    .auth_method("none")
            }
        };
        let method = auth_method(&client, &found.server)?;
        check_method(&method)?;
        let mut params = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.expose()),
        ];
        if let Some(resource) = &found.resource {
            params.push(("resource", resource));
        }
        // A refresh token bound to a key is refreshed with that key.
        let dpop = match &old.dpop_key {
            Some(_) => self.dpop_key(),
            None => self.dpop_for(found),
        };
        let mut tokens = Endpoints {
            dpop: dpop.as_deref(),
            ..self.endpoints()
        }
        .token(
            &found.token_endpoint,
            &found.issuer,
            &client,
            &method,
            &params,
            old.scope.as_deref(),
        )
        .await?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(refresh_token.clone());
        }
        self.save(Some(tokens))
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
