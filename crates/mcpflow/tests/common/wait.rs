//! Bounded waits: a deadlock fails with the scenario's name instead of hanging the run.

use std::future::Future;
use std::time::Duration;

/// Every wait in a test goes through here: a deadlock fails with the scenario's name.
pub async fn bounded<F: Future>(what: &str, fut: F) -> F::Output {
    bounded_for(Duration::from_secs(10), what, fut).await
}

/// A bounded wait with its own limit (paused-clock tests advance virtual time).
pub async fn bounded_for<F: Future>(limit: Duration, what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out ({limit:?}) waiting for: {what}"),
    }
}

/// Wait, bounded, until `condition` holds: for state a test can only read (a server's
/// statistics), checked every 10 ms.
pub async fn until(what: &str, condition: impl Fn() -> bool) {
    bounded(what, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}
