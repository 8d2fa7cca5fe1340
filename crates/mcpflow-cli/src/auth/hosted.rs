//! OAuth for the HTTP servers of an `mcpServers` file (`mcpflow host`, `mcpflow call
//! --config FILE NAME`): the same flow and token cache as `--url`, one configuration per
//! server. Without anyone to sign in (no terminal and no `$BROWSER`), cached tokens and
//! their refresh still serve, and a server that needs the browser says how to sign in.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;

use mcpflow::auth::{
    ClientRegistration, MemoryTokenStore, OAuthConfig, StoreError, TokenStore, Tokens,
    UserAuthorization, UserStepError,
};
use mcpflow::host::{ServerConfig, ServersConfig};
use mcpflow::session::BoxFuture;
use reqwest::Url;

use super::{AuthArgs, Grant, configured, loopback, store_for, with_entry};
use crate::failure::Failure;

/// The OAuth configuration of each HTTP server of a file, by name.
pub struct HostedOAuth {
    /// By server name.
    pub configs: HashMap<String, OAuthConfig>,
    /// Whether a user may be asked to sign in (the browser step can take its bound).
    pub interactive: bool,
}

/// Whether someone can sign in: a terminal to show the URL on, or a `$BROWSER`.
fn interactive() -> bool {
    std::io::stderr().is_terminal() || std::env::var_os("BROWSER").is_some_and(|b| !b.is_empty())
}

/// An OAuth configuration for each enabled HTTP server of `config` whose headers do not
/// carry a token. Entries that do not expand are left to the host to report.
pub async fn for_servers(config: &ServersConfig, args: &AuthArgs) -> Result<HostedOAuth, Failure> {
    let interactive = interactive();
    let mut configs = HashMap::new();
    for name in config.names() {
        let Ok(server) = config
            .server(name)
            .and_then(|s| s.expanded_for(name, |var| std::env::var(var).ok()))
        else {
            continue;
        };
        let ServerConfig::Remote(remote) = server else {
            continue;
        };
        if crate::connect::has_authorization(&remote) || Url::parse(&remote.url).is_err() {
            continue;
        }
        let args = &with_entry(args, remote.oauth.as_ref())?;
        if matches!(
            args.grant,
            Some(Grant::ClientCredentials | Grant::WorkloadIdentity)
        ) {
            // No one signs in: the same configuration as `--url` with the flags.
            if let Some(oauth) = super::config(args, None, &remote.url).await? {
                configs.insert(name.to_owned(), oauth);
            }
            continue;
        }
        let store = store_for(&remote.url)?;
        let oauth = if interactive {
            OAuthConfig::authorization_code(loopback(args).await?).store(store)
        } else {
            let user = Unattended {
                url: remote.url.clone(),
                redirect_uri: Url::parse("http://127.0.0.1/callback")
                    .map_err(|e| Failure::connection(e.to_string()))?,
            };
            OAuthConfig::authorization_code(user).store(Arc::new(KeepRegistrations::new(store)))
        };
        configs.insert(name.to_owned(), configured(args, oauth)?);
    }
    Ok(HostedOAuth {
        configs,
        interactive,
    })
}

/// The user step when no one can sign in: it fails, saying how to.
struct Unattended {
    url: String,
    /// Never visited; registered only if the authorization server is asked.
    redirect_uri: Url,
}

impl UserAuthorization for Unattended {
    fn redirect_uri(&self) -> Url {
        self.redirect_uri.clone()
    }

    fn authorize(&self, _authorization_url: Url) -> BoxFuture<'_, Result<Url, UserStepError>> {
        let advice = format!(
            "{NEEDS_LOGIN} {}` (no terminal or $BROWSER to sign in here)",
            self.url
        );
        Box::pin(async move { Err(UserStepError::Io(advice)) })
    }
}

/// How the unattended user step's failure begins.
const NEEDS_LOGIN: &str = "needs authorization: run `mcpflow auth login";

/// The advice of the unattended user step, when `cause` (a connection failure, which
/// names every layer it crossed first) ends with it.
pub fn needs_login(cause: &str) -> Option<&str> {
    cause.find(NEEDS_LOGIN).map(|at| &cause[at..])
}

/// The token cache, except that a client registration made without a user is kept in
/// memory: its redirect URI is not the one a later `auth login` listens on.
struct KeepRegistrations {
    cache: Arc<dyn TokenStore>,
    made: MemoryTokenStore,
}

impl KeepRegistrations {
    fn new(cache: Arc<dyn TokenStore>) -> Self {
        Self {
            cache,
            made: MemoryTokenStore::new(),
        }
    }
}

impl TokenStore for KeepRegistrations {
    fn tokens(&self, resource: &str) -> Result<Option<Tokens>, StoreError> {
        self.cache.tokens(resource)
    }

    fn save_tokens(&self, resource: &str, tokens: Tokens) -> Result<(), StoreError> {
        self.cache.save_tokens(resource, tokens)
    }

    fn registration(&self, issuer: &str) -> Result<Option<ClientRegistration>, StoreError> {
        match self.made.registration(issuer)? {
            Some(made) => Ok(Some(made)),
            None => self.cache.registration(issuer),
        }
    }

    fn save_registration(
        &self,
        issuer: &str,
        registration: ClientRegistration,
    ) -> Result<(), StoreError> {
        self.made.save_registration(issuer, registration)
    }

    fn forget(&self, resource: &str) -> Result<(), StoreError> {
        self.cache.forget(resource)
    }
}
