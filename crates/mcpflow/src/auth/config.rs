//! What the OAuth client flow is configured with ([`OAuthConfig`]).

use std::sync::Arc;
use std::time::Duration;

use super::enterprise::EnterpriseIdp;
use super::store::{ClientRegistration, MemoryTokenStore, Secret, TokenStore};
use super::user::UserAuthorization;

/// How tokens are obtained.
#[derive(Clone)]
pub(crate) enum Grant {
    AuthorizationCode(Arc<dyn UserAuthorization>),
    ClientCredentials(ClientRegistration),
    Enterprise(ClientRegistration, EnterpriseIdp),
    WorkloadIdentity(WorkloadIdentity),
}

/// The identity token a workload's platform gives it (a Kubernetes service account
/// token, a cloud workload identity), presented as an RFC 7523 JWT bearer grant: no
/// user and no client secret. See [`OAuthConfig::workload_identity`].
#[derive(Clone)]
pub struct WorkloadIdentity {
    pub(crate) token: WorkloadToken,
    pub(crate) client_id: Option<String>,
}

#[derive(Clone)]
pub(crate) enum WorkloadToken {
    Inline(Secret),
    /// Read anew for each grant: platforms rotate these files.
    File(std::path::PathBuf),
}

impl WorkloadIdentity {
    /// The identity token itself.
    #[must_use]
    pub fn token(token: Secret) -> Self {
        WorkloadIdentity {
            token: WorkloadToken::Inline(token),
            client_id: None,
        }
    }

    /// The file the platform keeps the current identity token in, read for each grant.
    #[must_use]
    pub fn file(path: impl Into<std::path::PathBuf>) -> Self {
        WorkloadIdentity {
            token: WorkloadToken::File(path.into()),
            client_id: None,
        }
    }

    /// The `client_id` to send with the grant, when the authorization server knows the
    /// workload by one.
    #[must_use]
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The identity token now.
    pub(crate) fn current(&self) -> std::io::Result<Secret> {
        match &self.token {
            WorkloadToken::Inline(token) => Ok(token.clone()),
            WorkloadToken::File(path) => Ok(Secret::new(
                std::fs::read_to_string(path)?.trim().to_owned(),
            )),
        }
    }
}

/// OAuth configuration for an HTTP client transport.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use mcpflow::auth::{HeadlessRedirect, OAuthConfig};
/// use mcpflow::http::client::HttpClientTransport;
///
/// let user = HeadlessRedirect::new("http://127.0.0.1:3000/callback".parse()?)?;
/// let transport = HttpClientTransport::builder("https://mcp.example.com/mcp")
///     .oauth(OAuthConfig::authorization_code(user).client_name("my-agent"))
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) grant: Grant,
    pub(crate) client_name: String,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) pre_registered: Vec<(Option<String>, ClientRegistration)>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) max_attempts: u32,
    pub(crate) timeout: Duration,
    pub(crate) dpop: bool,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scope", &self.scope)
            .field("pre_registered", &self.pre_registered)
            .field("max_attempts", &self.max_attempts)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    fn with_grant(grant: Grant) -> Self {
        Self {
            grant,
            client_name: "mcpflow".to_owned(),
            client_metadata_url: None,
            scope: None,
            pre_registered: Vec::new(),
            store: Arc::new(MemoryTokenStore::new()),
            max_attempts: 3,
            timeout: Duration::from_secs(30),
            dpop: true,
        }
    }

    /// Authorization code with PKCE; `user` visits the authorization URL.
    #[must_use]
    pub fn authorization_code(user: impl UserAuthorization + 'static) -> Self {
        Self::with_grant(Grant::AuthorizationCode(Arc::new(user)))
    }

    /// Client credentials, for a machine client registered as `client`.
    #[must_use]
    pub fn client_credentials(client: ClientRegistration) -> Self {
        Self::with_grant(Grant::ClientCredentials(client))
    }

    /// Enterprise-managed authorization (SEP-990): the identity provider exchanges the
    /// user's ID token for an identity assertion that `client` (registered at the MCP
    /// server's authorization server) presents as a JWT bearer grant; no browser step.
    ///
    /// ```
    /// use mcpflow::auth::{ClientRegistration, EnterpriseIdp, OAuthConfig, Secret};
    ///
    /// let idp = EnterpriseIdp::new("https://idp.example.com/token".parse().expect("a URL"), Secret::new("id-token"));
    /// let config = OAuthConfig::enterprise(ClientRegistration::confidential("agent", "secret"), idp);
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn enterprise(client: ClientRegistration, idp: EnterpriseIdp) -> Self {
        Self::with_grant(Grant::Enterprise(client, idp))
    }

    /// Workload identity federation: the workload's identity token from its platform,
    /// exchanged with the RFC 7523 JWT bearer grant. A refused grant is not tried again
    /// with the same token.
    ///
    /// ```
    /// use mcpflow::auth::{OAuthConfig, WorkloadIdentity};
    ///
    /// let identity = WorkloadIdentity::file("/var/run/secrets/tokens/mcp").client_id("reporter");
    /// let config = OAuthConfig::workload_identity(identity);
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn workload_identity(identity: WorkloadIdentity) -> Self {
        Self::with_grant(Grant::WorkloadIdentity(identity)).max_attempts(1)
    }

    /// Whether tokens are bound to a key of this client with DPoP (RFC 9449) when the
    /// resource takes such tokens (a `DPoP` challenge, or DPoP in its metadata): a
    /// stolen token is then useless without the key, and every request carries a proof.
    /// Needs the `oauth-jwt` feature; without it tokens are bearer tokens. Default: on.
    #[must_use]
    pub fn dpop(mut self, on: bool) -> Self {
        self.dpop = on;
        self
    }

    /// The `client_name` for dynamic registration. Default: `mcpflow`.
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The https URL of this client's Client ID Metadata Document, used as `client_id` at
    /// servers that advertise `client_id_metadata_document_supported`.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The scope to ask for on a 401, in place of the challenge's `scope` or the
    /// metadata's `scopes_supported` (a 403 `insufficient_scope` still adds the scope it
    /// names).
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Credentials registered beforehand at `issuer` (`None`: at any issuer without
    /// credentials of its own).
    #[must_use]
    pub fn pre_registered(mut self, issuer: Option<&str>, client: ClientRegistration) -> Self {
        self.pre_registered
            .push((issuer.map(str::to_owned), client));
        self
    }

    /// Where tokens and registrations are kept. Default: a [`MemoryTokenStore`].
    #[must_use]
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// Authorization attempts in a row (without a request succeeding between them)
    /// before giving up. Default: 3.
    #[must_use]
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// The limit on each request to the authorization server and on the user step.
    /// Default: 30 s.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}
