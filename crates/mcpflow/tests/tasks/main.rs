//! Tasks: the 2025-11-25 experimental tasks between mcpflow's client and server
//! (`tasks`), and the 2026-07-28 tasks extension at the wire (`tasks_2026`). Every wait is
//! bounded. `tasks` installs the binary's global allocator, which counts the bytes each
//! thread holds; every test here runs on it.

#[path = "../common/mod.rs"]
mod common;

mod tasks;
mod tasks_2026;
