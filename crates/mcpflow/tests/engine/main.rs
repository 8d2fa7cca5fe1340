//! The engine: each guarantee of the architecture notes as a named test (`engine`), the
//! seed hangs and their re-entrant relatives over every transport (`seeds`) and under
//! randomized schedules (`chaos`), bursts, message layouts, the direct write path and
//! messages routed from the task they arrived in (`routed`),
//! the transports themselves, hostile peers and inputs (`adversarial`, `bad_input`,
//! `hostile_messages`, `hostile_server`), and the requirement manifest that cites them.
//! Every wait is bounded.

#[path = "../common/mod.rs"]
mod common;

mod adversarial;
mod bad_input;
mod bursts;
mod chaos;
mod direct_write;
mod engine;
mod hostile_messages;
mod hostile_server;
mod layouts;
mod requirements;
mod routed;
mod seeds;
mod transport;
