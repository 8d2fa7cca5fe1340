//! Defects of the `mcpflow` command found by running it against real servers, real
//! clients and a real authorization server (`defects`, `field`), each reproduced as it
//! was reported. Every run is bounded by `common::LIMIT`.

#[path = "../common/mod.rs"]
mod common;

mod defects;
mod field;
