//! The protocol eras: handshake-era features between mcpflow's client and server
//! (`handshake_era`); the 2026-07-28 per-request era at the wire (`era_2026`), the client
//! against scripted 2026-07-28 peers (`client_2026`, `client_2026_gaps`), and the seed
//! guarantees in that era (`seeds_2026`); rounds of one request on different
//! instances (`instances_2026`). Every wait is bounded.

#[path = "../common/mod.rs"]
mod common;

mod client_2026;
mod client_2026_gaps;
mod era_2026;
mod handshake_era;
mod instances_2026;
mod seeds_2026;
