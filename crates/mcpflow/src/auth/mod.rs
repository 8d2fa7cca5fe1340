//! OAuth client building blocks for MCP authorization (feature `http-client`).
//!
//! Pure and network-free: each piece takes what the peer sent and returns what to do
//! next, so the HTTP flow that fetches, redirects and stores tokens can be tested
//! apart from them.
//!
//! - [`challenge`]: `WWW-Authenticate` parsing (RFC 6750, RFC 9728 `resource_metadata`).

pub mod challenge;

pub use challenge::{
    BearerChallenge, Challenge, ChallengeError, bearer_challenge, parse_www_authenticate,
};
