//! Tokens and client registrations, and where they are kept between requests and runs.
//!
//! Secrets are [`Secret`]s: their `Debug` prints `[redacted]` and they have no `Display`,
//! so a token cannot reach a log line or an error message by formatting.

use std::collections::HashMap;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A token or client secret. `Debug` shows `[redacted]`; read it with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that sends it.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The tokens of one grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tokens {
    /// The access token sent as `Authorization: Bearer`.
    pub access_token: Secret,
    /// The refresh token, when the authorization server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the access token was issued, in seconds since the Unix epoch (for how
    /// early to refresh it: a short-lived token is refreshed late in its life, not at
    /// once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// The scope granted (or, when the server did not say, the scope requested).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The issuer that granted them: tokens of another issuer are never sent.
    pub issuer: String,
    /// `DPoP` when the access token is bound to [`dpop_key`](Self::dpop_key) (RFC 9449):
    /// it is then sent as `Authorization: DPoP` with a proof; otherwise a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// The DPoP key the tokens are bound to (its PKCS#8, base64), kept with them so a
    /// later run signs with the same key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
}

impl Tokens {
    /// Tokens from `issuer` with only an access token.
    #[must_use]
    pub fn new(issuer: impl Into<String>, access_token: Secret) -> Self {
        Self {
            access_token,
            refresh_token: None,
            expires_at: None,
            issued_at: None,
            scope: None,
            issuer: issuer.into(),
            token_type: None,
            dpop_key: None,
        }
    }

    /// Whether the access token expires within `margin` from now.
    #[must_use]
    pub fn expires_within(&self, margin: Duration) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        self.expires_at
            .is_some_and(|at| Duration::from_secs(at) <= now + margin)
    }

    /// Whether the access token is DPoP-bound.
    #[must_use]
    pub fn is_dpop(&self) -> bool {
        self.token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
    }

    /// How long before its expiry the access token is refreshed: `margin`, but at most
    /// a quarter of the token's lifetime when that is known (a 5 s token is refreshed
    /// in its last second, not before every request).
    #[must_use]
    pub fn refresh_margin(&self, margin: Duration) -> Duration {
        match self.expires_at.zip(self.issued_at) {
            Some((expires, issued)) => {
                margin.min(Duration::from_secs(expires.saturating_sub(issued)) / 4)
            }
            None => margin,
        }
    }
}

/// The credentials of this client at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The `client_id` (an https URL for a Client ID Metadata Document).
    pub client_id: String,
    /// The secret of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// `none`, `client_secret_basic` or `client_secret_post`; chosen from the server's
    /// metadata when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// The PKCS#8 PEM of a P-256 key, for `private_key_jwt` (feature `oauth-jwt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_pem: Option<Secret>,
}

impl ClientRegistration {
    /// A public client (no secret).
    #[must_use]
    pub fn public(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            private_key_pem: None,
        }
    }

    /// A client that authenticates with a JWT signed by its key (`private_key_jwt`,
    /// ES256; needs the `oauth-jwt` feature): `pem` is the PKCS#8 PEM of a P-256 key.
    #[must_use]
    pub fn private_key_jwt(client_id: impl Into<String>, pem: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: Some("private_key_jwt".to_owned()),
            private_key_pem: Some(Secret::new(pem)),
        }
    }

    /// A confidential client.
    #[must_use]
    pub fn confidential(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: Some(Secret::new(client_secret)),
            token_endpoint_auth_method: None,
            private_key_pem: None,
        }
    }

    /// Forces the token endpoint authentication method.
    #[must_use]
    pub fn auth_method(mut self, method: impl Into<String>) -> Self {
        self.token_endpoint_auth_method = Some(method.into());
        self
    }
}

/// A store could not be read or written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file could not be read or written.
    #[error("token store {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a token store.
    #[error("token store {path} is unreadable: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong (serde's message, which never quotes values).
        reason: String,
    },
}

/// Where tokens (keyed by the protected resource) and registrations (keyed by the
/// authorization server's issuer) are kept. Calls are short and synchronous.
pub trait TokenStore: Send + Sync {
    /// The tokens for `resource`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn tokens(&self, resource: &str) -> Result<Option<Tokens>, StoreError>;
    /// Replaces the tokens for `resource`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn save_tokens(&self, resource: &str, tokens: Tokens) -> Result<(), StoreError>;
    /// The registration at `issuer`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn registration(&self, issuer: &str) -> Result<Option<ClientRegistration>, StoreError>;
    /// Replaces the registration at `issuer`.
    ///
    /// # Errors
    /// [`StoreError`].
    fn save_registration(
        &self,
        issuer: &str,
        registration: ClientRegistration,
    ) -> Result<(), StoreError>;
    /// Forgets the tokens for `resource` (a logout).
    ///
    /// # Errors
    /// [`StoreError`].
    fn forget(&self, resource: &str) -> Result<(), StoreError>;
}

/// What a store holds.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    tokens: HashMap<String, Tokens>,
    #[serde(default)]
    registrations: HashMap<String, ClientRegistration>,
}

/// A store in memory, for one process (the default).
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    contents: Mutex<Contents>,
}

impl MemoryTokenStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Contents) -> T) -> T {
        f(&mut self.contents.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl TokenStore for MemoryTokenStore {
    fn tokens(&self, resource: &str) -> Result<Option<Tokens>, StoreError> {
        Ok(self.with(|c| c.tokens.get(resource).cloned()))
    }
    fn save_tokens(&self, resource: &str, tokens: Tokens) -> Result<(), StoreError> {
        self.with(|c| c.tokens.insert(resource.to_owned(), tokens));
        Ok(())
    }
    fn registration(&self, issuer: &str) -> Result<Option<ClientRegistration>, StoreError> {
        Ok(self.with(|c| c.registrations.get(issuer).cloned()))
    }
    fn save_registration(
        &self,
        issuer: &str,
        registration: ClientRegistration,
    ) -> Result<(), StoreError> {
        self.with(|c| c.registrations.insert(issuer.to_owned(), registration));
        Ok(())
    }
    fn forget(&self, resource: &str) -> Result<(), StoreError> {
        self.with(|c| c.tokens.remove(resource));
        Ok(())
    }
}

/// A store in one JSON file, readable by its owner only (mode 0600 on Unix), written
/// whole to a temporary file and renamed over the old one so a crash leaves either.
///
/// ```no_run
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use mcpflow::auth::{FileTokenStore, HeadlessRedirect, OAuthConfig};
///
/// let store = Arc::new(FileTokenStore::new("/home/me/.config/mcpflow/tokens.json"));
/// let user = HeadlessRedirect::new("http://127.0.0.1:3000/callback".parse()?)?;
/// let config = OAuthConfig::authorization_code(user).store(store);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileTokenStore {
    /// A store in `path` (created on the first write).
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn read(&self) -> Result<Contents, StoreError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                path: self.path.clone(),
                // Position only: serde's message could quote part of a token.
                reason: format!("not JSON of the expected shape at line {}", e.line()),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Contents::default()),
            Err(e) => Err(self.io(e)),
        }
    }

    fn write(&self, contents: &Contents) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(contents).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp).map_err(|e| self.io(e))?;
        file.write_all(&bytes).map_err(|e| self.io(e))?;
        file.sync_all().map_err(|e| self.io(e))?;
        drop(file);
        std::fs::rename(&tmp, &self.path).map_err(|e| self.io(e))
    }

    fn update<T>(&self, f: impl FnOnce(&mut Contents) -> T) -> Result<T, StoreError> {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut contents = self.read()?;
        let out = f(&mut contents);
        self.write(&contents)?;
        Ok(out)
    }
}

impl TokenStore for FileTokenStore {
    fn tokens(&self, resource: &str) -> Result<Option<Tokens>, StoreError> {
        Ok(self.read()?.tokens.remove(resource))
    }
    fn save_tokens(&self, resource: &str, tokens: Tokens) -> Result<(), StoreError> {
        self.update(|c| c.tokens.insert(resource.to_owned(), tokens))
            .map(drop)
    }
    fn registration(&self, issuer: &str) -> Result<Option<ClientRegistration>, StoreError> {
        Ok(self.read()?.registrations.remove(issuer))
    }
    fn save_registration(
        &self,
        issuer: &str,
        registration: ClientRegistration,
    ) -> Result<(), StoreError> {
        self.update(|c| c.registrations.insert(issuer.to_owned(), registration))
            .map(drop)
    }
    fn forget(&self, resource: &str) -> Result<(), StoreError> {
        self.update(|c| c.tokens.remove(resource)).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lived_tokens_are_refreshed_late_in_their_life() {
        let mut tokens = Tokens::new("https://as", Secret::new("t"));
        let margin = Duration::from_secs(30);
        assert_eq!(tokens.refresh_margin(margin), margin, "lifetime unknown");
        tokens.issued_at = Some(1_000);
        tokens.expires_at = Some(1_005);
        assert_eq!(tokens.refresh_margin(margin), Duration::from_millis(1250));
        tokens.expires_at = Some(1_000 + 3_600);
        assert_eq!(tokens.refresh_margin(margin), margin);
    }

    #[test]
    fn debug_never_shows_secrets() {
        let mut tokens = Tokens::new("https://as", Secret::new("at-SECRET-1"));
        tokens.refresh_token = Some(Secret::new("rt-SECRET-2"));
        let reg = ClientRegistration::confidential("id", "cs-SECRET-3");
        let shown = format!("{tokens:?} {tokens:#?} {reg:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("[redacted]"));
    }

    #[test]
    fn file_store_round_trips_with_owner_only_mode() {
        let dir = std::env::temp_dir().join(format!("mcpflow-store-{}", std::process::id()));
        let path = dir.join("tokens.json");
        let store = FileTokenStore::new(&path);
        assert!(store.tokens("r").expect("read").is_none());
        let tokens = Tokens::new("https://as", Secret::new("t"));
        store.save_tokens("r", tokens.clone()).expect("save");
        store
            .save_registration("https://as", ClientRegistration::public("c"))
            .expect("save");
        let again = FileTokenStore::new(&path);
        assert_eq!(again.tokens("r").expect("read"), Some(tokens));
        assert_eq!(
            again.registration("https://as").expect("read"),
            Some(ClientRegistration::public("c"))
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        again.forget("r").expect("forget");
        assert!(store.tokens("r").expect("read").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
