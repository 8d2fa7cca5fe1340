//! Authorization: metadata discovery (`auth_discovery`), the OAuth client flow end to end
//! (`auth_flow`), the HTTP server as a protected resource with its token verifiers
//! (`auth_server`; the JWT verifier and DPoP under `--features jwt,oauth-jwt`), and the
//! official SDK clients' flows against it (`auth_peers`, ignored unless
//! `interop/run-matrix.sh` runs them). A local authorization server (`oauth_as`) serves
//! them on loopback. Every wait is bounded.

#[path = "../common/mod.rs"]
mod common;
#[cfg(all(feature = "http-server", feature = "http-client"))]
#[path = "../common/oauth_as.rs"]
mod oauth_as;

mod auth_discovery;
mod auth_flow;
mod auth_peers;
mod auth_server;
