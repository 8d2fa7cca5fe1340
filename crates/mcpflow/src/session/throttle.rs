//! A warning that can repeat under a flood (a refused request, a skipped frame) is
//! logged the first time, then at most once per interval with how many times it
//! happened since, and once more when the connection ends if any went unreported.

use std::time::Duration;

use tokio::time::Instant;

/// How often a repeated warning is logged at most.
const INTERVAL: Duration = Duration::from_secs(10);

/// One repeated warning's count.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    /// When it was last logged.
    logged: Option<Instant>,
    /// Times since then that were not logged.
    unreported: u64,
}

impl Throttle {
    /// It happened again: `Some(n)` when it is to be logged now, `n` being the times
    /// it happened since it last was (this one included).
    pub(crate) fn hit(&mut self) -> Option<u64> {
        let now = Instant::now();
        self.unreported += 1;
        if self.logged.is_some_and(|at| now < at + INTERVAL) {
            return None;
        }
        self.logged = Some(now);
        Some(std::mem::take(&mut self.unreported))
    }

    /// The times it happened that were not logged yet.
    pub(crate) fn take_unreported(&mut self) -> u64 {
        std::mem::take(&mut self.unreported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_first_then_a_count_per_interval() {
        let mut throttle = Throttle::default();
        assert_eq!(throttle.hit(), Some(1));
        for _ in 0..99 {
            assert_eq!(throttle.hit(), None);
        }
        tokio::time::advance(INTERVAL).await;
        assert_eq!(throttle.hit(), Some(100));
        assert_eq!(throttle.hit(), None);
        assert_eq!(throttle.take_unreported(), 1);
        assert_eq!(throttle.take_unreported(), 0);
    }
}
