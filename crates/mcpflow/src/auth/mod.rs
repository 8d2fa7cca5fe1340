//! OAuth client building blocks for MCP authorization (feature `http-client`).
//!
//! Apart from [`discover`], pure and network-free: each piece takes what the peer sent
//! and returns what to do next, so the HTTP flow that fetches, redirects and stores
//! tokens can be tested apart from them.
//!
//! - [`challenge`]: `WWW-Authenticate` parsing (RFC 6750, RFC 9728 `resource_metadata`).
//! - [`discovery`]: the metadata URLs to try, in the order the MCP spec prescribes.
//! - [`discover`]: fetching and checking both documents over HTTP ([`Discoverer`]).
//! - [`metadata`]: protected-resource (RFC 9728) and authorization-server (RFC 8414,
//!   OpenID Connect Discovery) metadata, with the checks required before use.
//! - [`pkce`]: PKCE S256 and `state`.
//! - [`scope`]: scope selection, step-up, `offline_access`, and the RFC 9207 `iss` check.
//! - [`oauth`]: the whole flow ([`OAuthConfig`]), run by the HTTP client transport on a
//!   401 or a 403 `insufficient_scope`.
//! - [`store`]: tokens and registrations ([`TokenStore`]; secrets are [`Secret`]s,
//!   redacted in `Debug`).
//! - [`token`]: the token and registration endpoints.
//! - [`user`]: the user step ([`UserAuthorization`]): [`LoopbackRedirect`], [`HeadlessRedirect`].
//!
//! The order of use: parse the 401's challenge; [`Discoverer::discover`] does the next
//! two steps over HTTP: try
//! [`protected_resource_metadata_urls`] and check the document with
//! [`ProtectedResourceMetadata::check_resource`]; try
//! [`authorization_server_metadata_urls`] for its first authorization server and check
//! with [`AuthorizationServerMetadata::check_for_authorization_code`]; then
//! [`select_scope`], [`Pkce::generate`] and [`State::generate`] for the authorization
//! request.

pub(crate) mod body;
pub mod challenge;
pub mod config;
pub mod discover;
pub mod discovery;
mod dpop;
mod enterprise;
#[cfg(feature = "oauth-jwt")]
mod jwt;
pub mod metadata;
pub mod oauth;
pub mod pkce;
pub mod scope;
pub mod store;
pub mod token;
pub mod user;

pub use challenge::{
    BearerChallenge, Challenge, ChallengeError, bearer_challenge, parse_www_authenticate,
    resource_challenge,
};
pub use config::{OAuthConfig, WorkloadIdentity};
pub use discover::{Attempt, Attempts, DiscoverError, Discoverer, Discovery, FetchFailure};
pub use discovery::{
    DiscoveryError, LegacyEndpoints, authorization_server_metadata_urls, canonical_resource,
    protected_resource_metadata_urls,
};
pub use enterprise::EnterpriseIdp;
pub use metadata::{AuthorizationServerMetadata, MetadataError, ProtectedResourceMetadata};
pub use oauth::OAuthError;
pub use pkce::{Pkce, PkceError, State};
pub use scope::{IssError, check_response_iss, select_scope, step_up_scope, with_offline_access};
pub use store::{
    ClientRegistration, FileTokenStore, MemoryTokenStore, Secret, StoreError, TokenStore, Tokens,
};
pub use token::EndpointError;
pub use user::{HeadlessRedirect, LoopbackRedirect, UserAuthorization, UserStepError};
