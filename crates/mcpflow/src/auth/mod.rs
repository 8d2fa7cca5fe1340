//! OAuth client building blocks for MCP authorization (feature `http-client`).
//!
//! Pure and network-free: each piece takes what the peer sent and returns what to do
//! next, so the HTTP flow that fetches, redirects and stores tokens can be tested
//! apart from them.
//!
//! - [`challenge`]: `WWW-Authenticate` parsing (RFC 6750, RFC 9728 `resource_metadata`).
//! - [`metadata`]: protected-resource (RFC 9728) and authorization-server (RFC 8414,
//!   OpenID Connect Discovery) metadata, with the checks required before use.

pub mod challenge;
pub mod metadata;

pub use challenge::{
    BearerChallenge, Challenge, ChallengeError, bearer_challenge, parse_www_authenticate,
};
pub use metadata::{AuthorizationServerMetadata, MetadataError, ProtectedResourceMetadata};
