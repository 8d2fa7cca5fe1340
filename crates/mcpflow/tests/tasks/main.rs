//! Tasks: the 2025-11-25 experimental tasks between mcpflow's client and server
//! (`tasks`), and the 2026-07-28 tasks extension at the wire (`tasks_2026`). Every wait is
//! bounded.

#[path = "../common/mod.rs"]
mod common;

mod tasks;
mod tasks_2026;
