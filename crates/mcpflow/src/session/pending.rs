//! Requests this side sent and is waiting on: the pending table and each request's
//! queue of events.
//!
//! Each pending request owns an event queue. The reader pushes that request's progress
//! and then its outcome into it, in receive order, without ever waiting; the caller
//! ([`PendingRequest`](super::PendingRequest)) drains it. So progress is delivered, in
//! order, before the response is returned, and a slow caller never slows the reader.
//! The queue holds at most [`UNREAD_PROGRESS_BYTES`] of reports: a caller that far
//! behind (or a peer flooding it) loses the oldest unread ones, with a warning, and
//! still gets the latest.
//!
//! Timeouts are kept by the table too: each entry holds its request's [`Deadline`], and
//! one timer task per session ([`run_sweeper`](super::deadline::run_sweeper)) sleeps
//! until the earliest of them and fails the requests whose time is up. A call that is
//! answered in time arms no timer of its own.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use mcpflow_protocol::{ErrorObject, RequestId};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::deadline::Deadline;
use super::options::ProgressUpdate;
use super::writer::Sequential;
use crate::config::DEFAULT_MAX_FRAME_BYTES;
use crate::error::{CloseReason, TransportError};

/// Unread progress one request may hold, counting each report's size and its message:
/// what one frame may carry (32 MiB). A caller reading as reports come never nears it
/// (10,000 reports with 1 KiB messages are 11 MiB); a peer flooding a caller that does
/// not read would otherwise grow it without bound.
const UNREAD_PROGRESS_BYTES: usize = DEFAULT_MAX_FRAME_BYTES;

/// What a queued progress report costs.
fn weight(update: &Option<ProgressUpdate>) -> usize {
    let message = update.as_ref().and_then(|u| u.message.as_ref());
    size_of::<Option<ProgressUpdate>>() + message.map_or(0, String::capacity)
}

/// What the peer said about one pending request.
#[derive(Debug)]
pub(crate) enum PendingEvent {
    /// A progress report, read once by the reader (`None`: its fields were malformed).
    Progress(Option<ProgressUpdate>),
    /// The result's JSON text (a part of the frame it came in), or why there is none.
    Outcome(Result<Bytes, Failure>),
}

#[derive(Debug)]
pub(crate) enum Failure {
    Rejected(ErrorObject),
    Closed(CloseReason),
    Transport(TransportError),
    /// The response came but could not be read; why.
    Unreadable(String),
    /// The request's clock ran out; its deadline says which limit it hit.
    Expired(Deadline),
}

/// One pending request's events: its progress reports in receive order, then its
/// outcome. The reader pushes without waiting; the caller takes them.
#[derive(Default)]
pub(crate) struct Events {
    state: Mutex<EventsState>,
}

#[derive(Default)]
struct EventsState {
    progress: VecDeque<Option<ProgressUpdate>>,
    /// What `progress` holds, by [`weight`].
    progress_bytes: usize,
    /// Unread reports dropped for the budget.
    dropped: u64,
    outcome: Option<Result<Bytes, Failure>>,
    waker: Option<Waker>,
}

impl Events {
    fn lock(&self) -> std::sync::MutexGuard<'_, EventsState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue an event (the first outcome wins) and wake the caller, now or, with
    /// `deferred`, when the reader wakes them together.
    fn push(&self, event: PendingEvent, deferred: Option<&mut DeferredWakes>) {
        let mut first_drop = false;
        let waker = {
            let mut state = self.lock();
            match event {
                PendingEvent::Progress(update) => {
                    state.progress_bytes += weight(&update);
                    state.progress.push_back(update);
                    // The newest report stays, however large.
                    while state.progress_bytes > UNREAD_PROGRESS_BYTES && state.progress.len() > 1 {
                        if let Some(oldest) = state.progress.pop_front() {
                            state.progress_bytes -= weight(&oldest);
                        }
                        first_drop |= state.dropped == 0;
                        state.dropped += 1;
                    }
                }
                PendingEvent::Outcome(outcome) => {
                    if state.outcome.is_none() {
                        state.outcome = Some(outcome);
                    }
                }
            }
            state.waker.take()
        };
        if first_drop {
            tracing::warn!(
                limit = UNREAD_PROGRESS_BYTES,
                "a request's caller has not read its progress reports as they came; the oldest unread ones are dropped"
            );
        }
        match (waker, deferred) {
            (Some(waker), Some(deferred)) => deferred.0.push(waker),
            (Some(waker), None) => waker.wake(),
            (None, _) => {}
        }
    }

    /// The next event: progress first, in order, then the outcome. Cancel-safe.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<PendingEvent> {
        let mut state = self.lock();
        if let Some(update) = state.progress.pop_front() {
            state.progress_bytes -= weight(&update);
            return Poll::Ready(PendingEvent::Progress(update));
        }
        if let Some(outcome) = state.outcome.take() {
            return Poll::Ready(PendingEvent::Outcome(outcome));
        }
        match &mut state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            waker => *waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

/// Callers with new progress, woken together once the reader has handled every frame it
/// had buffered (or a bounded number of them), instead of one wake-up per progress
/// report. Dropping it wakes whoever is left, so no exit path loses a wake-up.
#[derive(Default)]
pub(crate) struct DeferredWakes(Vec<Waker>);

impl DeferredWakes {
    /// How many callers wait to be woken.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Wake them all now.
    pub(crate) fn wake_all(&mut self) {
        for waker in self.0.drain(..) {
            waker.wake();
        }
    }
}

impl Drop for DeferredWakes {
    fn drop(&mut self) {
        self.wake_all();
    }
}

struct Slot {
    events: Arc<Events>,
    token_alias: Option<String>,
    deadline: Deadline,
    /// Where the entry sits in [`TableState::due`]: its deadline when it was last
    /// filed, which progress may since have moved later (never earlier).
    due_at: Instant,
}

#[derive(Default)]
struct TableState {
    /// Our own ids: a fast hasher, no defence against chosen keys needed.
    slots: HashMap<i64, Slot, foldhash::fast::RandomState>,
    /// Progress tokens chosen by the caller (JSON text) -> request id.
    aliases: HashMap<String, i64>,
    /// Every entry of `slots` by the deadline it was filed under, earliest first.
    due: BTreeSet<(Instant, i64)>,
    /// What the sweeper sleeps until (`None`: until it is woken).
    armed: Option<Instant>,
    closed: Option<CloseReason>,
}

/// Outbound requests awaiting their answer, keyed by our (integer) request id.
#[derive(Default)]
pub(crate) struct PendingTable {
    state: Mutex<TableState>,
    /// Wakes the sweeper when a request is due before what it sleeps until.
    pub(super) sweeper: Notify,
    /// Whether the caller looks sequential (read under the state's lock, so requests
    /// are seen in the order they are filed).
    sequential: Sequential,
}

impl PendingTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, TableState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Register a request, due by `deadline`; fails when the connection has ended. Also
    /// says whether the caller looks sequential: this request is the only one pending,
    /// and so was the one filed before it. (The first request of a burst is alone too,
    /// but follows one that was not.)
    pub(crate) fn insert(
        &self,
        id: i64,
        token_alias: Option<String>,
        deadline: Deadline,
    ) -> Result<(Arc<Events>, bool), CloseReason> {
        let due_at = deadline.at();
        let mut state = self.lock();
        if let Some(reason) = &state.closed {
            return Err(reason.clone());
        }
        let events = Arc::new(Events::default());
        if let Some(alias) = &token_alias {
            state.aliases.insert(alias.clone(), id);
        }
        state.slots.insert(
            id,
            Slot {
                events: events.clone(),
                token_alias,
                deadline,
                due_at,
            },
        );
        state.due.insert((due_at, id));
        // Most requests are due after the earliest one: the sweeper sleeps on.
        let earlier = state.armed.is_none_or(|armed| due_at < armed);
        if earlier {
            state.armed = Some(due_at);
        }
        let sequential = self.sequential.next(state.slots.len() == 1);
        drop(state);
        if earlier {
            self.sweeper.notify_one();
        }
        Ok((events, sequential))
    }

    pub(crate) fn remove(&self, id: i64) {
        // The entry is dropped after the lock is released.
        let slot = self.lock().take(id);
        drop(slot);
    }

    /// Deliver an outcome and wake its caller at once: the caller is done waiting, and
    /// another worker can take it up while the reader goes on. Returns false for an
    /// unknown (or late) id.
    pub(crate) fn complete(&self, id: &RequestId, outcome: Result<Bytes, Failure>) -> bool {
        let Some(n) = id.correlation_number() else {
            return false;
        };
        let mut state = self.lock();
        let Some(slot) = state.take(n) else {
            return false;
        };
        drop(state);
        slot.events.push(PendingEvent::Outcome(outcome), None);
        true
    }

    /// Route a progress notification by its token (raw JSON text). Returns false when
    /// no pending request has that token.
    pub(crate) fn progress(
        &self,
        token: &str,
        update: Option<ProgressUpdate>,
        wakes: &mut DeferredWakes,
    ) -> bool {
        let mut state = self.lock();
        let id = match state.aliases.get(token) {
            Some(id) => Some(*id),
            None => token.trim_matches('"').parse::<i64>().ok(),
        };
        match id.and_then(|id| state.slots.get_mut(&id)) {
            Some(slot) => {
                // The clock restarts when the report is read, not when the caller gets
                // to it; the sweeper files the entry under its new deadline when the
                // old one comes.
                if slot.deadline.reset_on_progress {
                    slot.deadline.last_activity = Instant::now();
                }
                slot.events
                    .push(PendingEvent::Progress(update), Some(wakes));
                true
            }
            None => false,
        }
    }

    /// Fail every request whose deadline is at or before `now`, and refile those whose
    /// deadline moved on. Returns when the next one is due.
    pub(super) fn sweep(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let next = {
            let mut guard = self.lock();
            let state = &mut *guard;
            while let Some(&(at, id)) = state.due.first()
                && at <= now
            {
                state.due.pop_first();
                let Some(slot) = state.slots.get_mut(&id) else {
                    continue;
                };
                let actual = slot.deadline.at();
                if actual > now {
                    slot.due_at = actual;
                    state.due.insert((actual, id));
                } else if let Some(slot) = state.take(id) {
                    expired.push(slot);
                }
            }
            state.armed = state.due.first().map(|&(at, _)| at);
            state.armed
        };
        for slot in expired {
            slot.events.push(
                PendingEvent::Outcome(Err(Failure::Expired(slot.deadline))),
                None,
            );
        }
        next
    }

    /// Fail every pending request with `reason` and refuse new ones.
    pub(crate) fn close(&self, reason: &CloseReason) {
        let slots = {
            let mut state = self.lock();
            if state.closed.is_none() {
                state.closed = Some(reason.clone());
            }
            state.aliases.clear();
            state.due.clear();
            std::mem::take(&mut state.slots)
        };
        for (_, slot) in slots {
            slot.events.push(
                PendingEvent::Outcome(Err(Failure::Closed(reason.clone()))),
                None,
            );
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().slots.len()
    }
}

impl TableState {
    /// Take a request's entry out of the table.
    fn take(&mut self, id: i64) -> Option<Slot> {
        let slot = self.slots.remove(&id)?;
        self.due.remove(&(slot.due_at, id));
        // A caller may give two requests the same progress token: the alias then names
        // the later one, and stays while that one is pending.
        if let Some(alias) = &slot.token_alias
            && self.aliases.get(alias) == Some(&id)
        {
            self.aliases.remove(alias);
        }
        Some(slot)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::error::SessionError;
    use crate::session::deadline::run_sweeper;

    fn deadline(start: Instant, timeout_secs: u64) -> Deadline {
        Deadline {
            started: start,
            last_activity: start,
            timeout: Duration::from_secs(timeout_secs),
            max_total: Duration::from_secs(3600),
            reset_on_progress: true,
        }
    }

    /// The event an entry's caller would read next, if any.
    fn next_event(events: &Events) -> Option<PendingEvent> {
        let mut cx = Context::from_waker(Waker::noop());
        match events.poll_next(&mut cx) {
            Poll::Ready(event) => Some(event),
            Poll::Pending => None,
        }
    }

    /// Every pending entry is filed in `due` under its `due_at`, and nothing else is.
    fn assert_consistent(table: &PendingTable) {
        let state = table.lock();
        assert_eq!(state.due.len(), state.slots.len(), "due and slots differ");
        for (id, slot) in &state.slots {
            assert!(state.due.contains(&(slot.due_at, *id)), "{id} is not filed");
        }
        for (alias, id) in &state.aliases {
            assert!(
                state.slots.contains_key(id),
                "alias {alias} names a gone request"
            );
        }
    }

    fn expired(events: &Events) -> bool {
        matches!(
            next_event(events),
            Some(PendingEvent::Outcome(Err(Failure::Expired(_))))
        )
    }

    #[tokio::test(start_paused = true)]
    async fn the_sweep_fails_what_is_due_refiles_what_progress_moved_and_says_what_is_next() {
        let table = PendingTable::default();
        let t0 = Instant::now();
        let secs = |n: u64| t0 + Duration::from_secs(n);
        let (first, sequential) = table.insert(9, None, deadline(t0, 5)).unwrap();
        assert!(!sequential, "the first request follows none that was alone");
        table.remove(9);
        drop(first);
        let (slow, sequential) = table.insert(1, None, deadline(t0, 5)).unwrap();
        assert!(sequential, "alone, after one that was alone");
        let (quick, sequential) = table.insert(2, None, deadline(t0, 1)).unwrap();
        assert!(!sequential, "a second request in flight is not sequential");
        let (ticking, _) = table.insert(3, None, deadline(t0, 3)).unwrap();
        let (answered, _) = table.insert(4, None, deadline(t0, 2)).unwrap();

        assert_consistent(&table);
        assert_eq!(table.sweep(t0), Some(secs(1)));
        assert!(next_event(&quick).is_none());

        assert_eq!(table.sweep(secs(1)), Some(secs(2)));
        assert!(expired(&quick), "due at 1 s");
        assert!(next_event(&slow).is_none() && next_event(&ticking).is_none());
        assert_consistent(&table);

        // Answered before its time: it never fires.
        table.remove(4);
        assert_consistent(&table);
        tokio::time::advance(Duration::from_secs(2)).await;
        let mut wakes = DeferredWakes::default();
        assert!(table.progress("3", None, &mut wakes));
        assert!(matches!(
            next_event(&ticking),
            Some(PendingEvent::Progress(None))
        ));

        // Due at 3 s as filed, but progress at 2 s moved it to 5 s.
        assert_eq!(table.sweep(secs(3)), Some(secs(5)));
        assert!(next_event(&ticking).is_none(), "refiled, not failed");
        assert!(next_event(&answered).is_none());
        assert_consistent(&table);

        assert_eq!(table.sweep(secs(5)), None);
        assert!(expired(&slow) && expired(&ticking));
        assert_eq!(table.len(), 0);
        assert_consistent(&table);
        assert!(!table.progress("3", None, &mut wakes), "gone once expired");
    }

    /// A flood of progress the caller does not read is held up to the budget: the
    /// oldest reports go, the rest stay in order, the latest and the outcome come.
    #[test]
    fn unread_progress_is_bounded_in_bytes_and_keeps_the_latest() {
        let events = Events::default();
        let report = |n: u32, message: Option<String>| {
            PendingEvent::Progress(Some(ProgressUpdate {
                progress: f64::from(n),
                total: None,
                message,
            }))
        };
        let big = "x".repeat(64 * 1024);
        for n in 0..600 {
            events.push(report(n, Some(big.clone())), None);
        }
        events.push(report(600, None), None);
        events.push(PendingEvent::Outcome(Ok(Bytes::from_static(b"{}"))), None);
        assert!(events.lock().progress_bytes <= UNREAD_PROGRESS_BYTES);
        let mut seen = Vec::new();
        loop {
            match next_event(&events) {
                Some(PendingEvent::Progress(Some(update))) => seen.push(update.progress),
                Some(PendingEvent::Outcome(Ok(_))) => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        // 600 reports of 64 KiB are 37.5 MiB, over the 32 MiB budget.
        assert!((400..600).contains(&seen.len()), "{} kept", seen.len());
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order: {seen:?}");
        assert_eq!(seen.last(), Some(&600.0), "the latest is kept");
        assert_eq!(events.lock().dropped, 601 - seen.len() as u64);
        assert_eq!(events.lock().progress_bytes, 0);

        // One report over the budget on its own is still delivered.
        let lone = Events::default();
        lone.push(report(1, Some("y".repeat(UNREAD_PROGRESS_BYTES + 1))), None);
        assert!(matches!(
            next_event(&lone),
            Some(PendingEvent::Progress(Some(_)))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_limit_too_large_for_the_clock_means_no_limit() {
        let now = Instant::now();
        let unlimited = Deadline {
            started: now,
            last_activity: now,
            timeout: Duration::MAX,
            max_total: Duration::MAX,
            reset_on_progress: true,
        };
        assert!(unlimited.at() > now + Duration::from_secs(10 * 365 * 24 * 3600));
        let capped = Deadline {
            max_total: Duration::from_secs(5),
            ..unlimited
        };
        assert_eq!(capped.at(), now + Duration::from_secs(5));
        assert!(matches!(
            capped.expired_error("m"),
            SessionError::MaxTotalExceeded { .. }
        ));
        let table = PendingTable::default();
        let (events, _) = table.insert(1, None, unlimited).unwrap();
        assert_eq!(
            table.sweep(now + Duration::from_secs(3600)),
            Some(unlimited.at())
        );
        assert!(next_event(&events).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_progress_token_routes_to_the_later_request_until_it_ends() {
        let table = PendingTable::default();
        let t0 = Instant::now();
        let mut wakes = DeferredWakes::default();
        let token = r#""job""#.to_owned();
        let (first, _) = table
            .insert(1, Some(token.clone()), deadline(t0, 1))
            .unwrap();
        let (second, _) = table
            .insert(2, Some(token.clone()), deadline(t0, 9))
            .unwrap();
        // The first ends (here: its time is up); the token still reaches the second.
        assert_eq!(
            table.sweep(t0 + Duration::from_secs(1)),
            Some(t0 + Duration::from_secs(9))
        );
        assert!(expired(&first));
        assert_consistent(&table);
        assert!(table.progress(&token, None, &mut wakes));
        assert!(matches!(
            next_event(&second),
            Some(PendingEvent::Progress(None))
        ));
        // Once the second ends, nothing answers to the token.
        table.remove(2);
        assert_consistent(&table);
        assert!(!table.progress(&token, None, &mut wakes));
    }

    #[tokio::test(start_paused = true)]
    async fn the_sweeper_wakes_for_an_earlier_deadline_and_ends_with_the_session() {
        let table = Arc::new(PendingTable::default());
        let ended = CancellationToken::new();
        let sweeper = tokio::spawn(run_sweeper(table.clone(), ended.clone()));
        let t0 = Instant::now();
        let (long, _) = table.insert(1, None, deadline(t0, 60)).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Filed after the sweeper went to sleep until 60 s: it must wake for this one.
        let (short, _) = table.insert(2, None, deadline(Instant::now(), 2)).unwrap();
        let woken = std::future::poll_fn(|cx| short.poll_next(cx));
        let event = tokio::time::timeout(Duration::from_secs(5), woken)
            .await
            .expect("the short request expires on time");
        assert!(matches!(
            event,
            PendingEvent::Outcome(Err(Failure::Expired(_)))
        ));
        assert_eq!(Instant::now() - t0, Duration::from_secs(3));
        assert!(next_event(&long).is_none());
        ended.cancel();
        tokio::time::timeout(Duration::from_secs(1), sweeper)
            .await
            .expect("the sweeper ends with the session")
            .unwrap();
    }
}
