//! Request deadlines: each request's clock ([`Deadline`]) and the session's one timer
//! ([`run_sweeper`]), which fails the requests whose time is up.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::pending::PendingTable;
use crate::error::SessionError;

/// The session's one timer: sleeps until the earliest pending request is due, fails
/// the requests whose time is up, and ends with the connection.
pub(crate) async fn run_sweeper(table: Arc<PendingTable>, ended: CancellationToken) {
    let mut next = None;
    loop {
        let due = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = ended.cancelled() => return,
            () = table.sweeper.notified() => {}
            () = due => {}
        }
        next = table.sweep(Instant::now());
    }
}

/// `after` past `from`. A limit past tokio's own far future (30 years; `Duration::MAX`
/// meaning "no limit") is that far future, so the sum fits the clock.
fn later(from: Instant, after: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);
    // A monotonic clock is nowhere near overflowing by 30 years; were it, the request
    // would time out rather than the engine panic.
    from.checked_add(after.min(FAR)).unwrap_or(from)
}

/// The clock of one request: its timeout, reset by progress, and its total cap.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    pub(crate) started: Instant,
    pub(crate) last_activity: Instant,
    pub(crate) timeout: Duration,
    pub(crate) max_total: Duration,
    pub(crate) reset_on_progress: bool,
}

impl Deadline {
    pub(crate) fn at(&self) -> Instant {
        self.idle_limit().min(self.total_limit())
    }

    /// When the request has gone `timeout` without an answer or progress.
    fn idle_limit(&self) -> Instant {
        later(self.last_activity, self.timeout)
    }

    /// When the request has run `max_total`.
    fn total_limit(&self) -> Instant {
        later(self.started, self.max_total)
    }

    pub(crate) fn expired_error(&self, method: &str) -> SessionError {
        if self.idle_limit() <= self.total_limit() {
            SessionError::Timeout {
                method: method.into(),
                after: self.timeout,
            }
        } else {
            SessionError::MaxTotalExceeded {
                method: method.into(),
                after: self.max_total,
            }
        }
    }
}
