//! Single-use `requestState` (2026-07-28): a state a handler marked single-use carries a
//! random token, consumed when a request comes back with it; a second request with the
//! same state is refused. The tokens consumed are remembered for as long as a state is
//! valid: in this process by default, or in the
//! [`ConsumedStates`](crate::server::fleet::ConsumedStates) store the instances
//! of a fleet share.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Mutex, PoisonError};

use mcpflow_protocol::ErrorObject;
use tokio::time::Instant;

use super::state::STATE_TTL;
use crate::server::Server;

/// A new single-use token (128 random bits, hex); `None` without entropy, when the
/// state is then issued without one (and its handler's flow is refused on return).
pub(crate) fn token() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().fold(String::with_capacity(32), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// The tokens this process consumed, each until its state expires.
#[derive(Debug, Default)]
pub(crate) struct Consumed(Mutex<HashMap<String, Instant>>);

impl Consumed {
    /// Consume `token`: false when it was consumed before.
    fn consume(&self, token: &str) -> bool {
        let now = Instant::now();
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Expired tokens go now and then, so the set stays as large as an hour of states.
        if held.len() % 1024 == 1023 {
            held.retain(|_, until| *until > now);
        }
        match held.get(token) {
            Some(until) if *until > now => false,
            _ => {
                held.insert(token.to_owned(), now + STATE_TTL);
                true
            }
        }
    }
}

fn replayed() -> ErrorObject {
    ErrorObject::invalid_params(
        "invalid requestState: it was single-use and has been used; start the request again without it",
    )
}

impl Server {
    /// Consume the single-use `token` of a state a request came back with: -32602 when
    /// it was consumed before, an internal error while the shared store is unavailable
    /// (a state is never accepted twice for want of the store).
    pub(crate) async fn consume_state(&self, token: &str) -> Result<(), ErrorObject> {
        let first = match &self.inner.consumed_states {
            Some(store) => store
                .consume(token, STATE_TTL)
                .await
                .map_err(|e| ErrorObject::internal(format!("{e}; retry shortly")))?,
            None => self.inner.consumed.consume(token),
        };
        if first { Ok(()) } else { Err(replayed()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_token_is_consumed_once() {
        let consumed = Consumed::default();
        let first = token().expect("entropy");
        assert!(consumed.consume(&first));
        assert!(!consumed.consume(&first), "a replay is refused");
        assert!(consumed.consume(&token().expect("entropy")));
    }
}
