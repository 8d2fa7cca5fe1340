//! Requests this side sent and is waiting on: the pending table, per-request options,
//! and [`PendingRequest`], the caller's end.
//!
//! Each pending request owns an unbounded event queue. The reader pushes that request's
//! progress and then its outcome into it, in receive order, without ever waiting; the
//! caller drains it. So progress is always delivered, in order, before the response is
//! returned, and a slow caller never slows the reader.
//!
//! Timeouts are kept by the table too: each entry holds its request's [`Deadline`], and
//! one sweeper task per session ([`run_sweeper`]) sleeps until the earliest of them and
//! fails the requests whose time is up. A call that is answered in time arms no timer
//! of its own.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use mcpflow_protocol::{ErrorObject, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::writer::Sequential;
use crate::error::{CloseReason, SessionError, TransportError};

/// One progress report for a request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ProgressUpdate {
    /// Progress so far; increases with each report.
    pub progress: f64,
    /// The total, when known.
    #[serde(default)]
    pub total: Option<f64>,
    /// A human-readable message.
    #[serde(default)]
    pub message: Option<String>,
}

/// A progress callback. It runs in the caller's task, in order, before the response is
/// returned.
pub type ProgressCallback = Arc<dyn Fn(ProgressUpdate) + Send + Sync>;

/// Per-request options. The defaults come from the session's
/// [`SessionConfig`](crate::SessionConfig).
///
/// ```
/// use std::time::Duration;
/// use mcpflow::RequestOptions;
/// let options = RequestOptions::new()
///     .timeout(Duration::from_secs(5))
///     .on_progress(|p| eprintln!("{}/{:?}", p.progress, p.total));
/// # drop(options);
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct RequestOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_total: Option<Duration>,
    pub(crate) reset_on_progress: Option<bool>,
    pub(crate) want_progress: bool,
    pub(crate) on_progress: Option<ProgressCallback>,
    pub(crate) meta: Option<serde_json::Map<String, serde_json::Value>>,
    pub(crate) never_cancel: bool,
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("max_total", &self.max_total)
            .field("reset_on_progress", &self.reset_on_progress)
            .field("want_progress", &self.want_progress)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl RequestOptions {
    /// The session's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wait at most this long without an answer or progress (default: the session's
    /// `request_timeout`, 60 s).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Wait at most this long in total, however much progress arrives (default: the
    /// session's `max_request_timeout`, 30 min).
    pub fn max_total(mut self, d: Duration) -> Self {
        self.max_total = Some(d);
        self
    }

    /// Whether progress restarts the timeout clock (default: yes).
    pub fn reset_on_progress(mut self, yes: bool) -> Self {
        self.reset_on_progress = Some(yes);
        self
    }

    /// Ask the peer for progress (sends a `progressToken`) even without a callback;
    /// read it with [`PendingRequest::next_event`](super::PendingRequest::next_event).
    pub fn with_progress_token(mut self) -> Self {
        self.want_progress = true;
        self
    }

    /// Ask for progress and call `f` with each report, in order, before the response is
    /// returned.
    pub fn on_progress(mut self, f: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        self.want_progress = true;
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Entries to merge into the request's `params._meta`.
    pub fn meta(mut self, meta: serde_json::Map<String, serde_json::Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Never send `notifications/cancelled` for this request (the spec forbids
    /// cancelling `initialize`).
    pub fn never_cancel(mut self) -> Self {
        self.never_cancel = true;
        self
    }
}

/// What the peer said about one pending request.
#[derive(Debug)]
pub(crate) enum PendingEvent {
    /// A progress report, read once by the reader (`None`: its fields were malformed).
    Progress(Option<ProgressUpdate>),
    Outcome(Result<ResultJson, Failure>),
}

/// A frame at least this large is not kept whole for a result that is less than half
/// of it; spare capacity beyond this and the frame's own size is given back.
const LARGE_FRAME_BYTES: usize = 64 * 1024;

/// A response's result as JSON text: read in place in the frame it came in (so a large
/// result is never copied before the caller decodes it), or a value of its own.
#[derive(Debug)]
pub(crate) enum ResultJson {
    /// The frame's text and where the result lies in it. The text there may not have
    /// been checked yet (see `session::head`): whoever reads it parses all of it, with
    /// `serde_json::from_str` or alike, which rejects anything after one value.
    InFrame {
        frame: String,
        range: std::ops::Range<usize>,
    },
    Owned(Box<RawValue>),
}

impl ResultJson {
    /// The result that lies at `range` in the response `frame`; the frame back when
    /// `range` is not within it. A waiting caller keeps what this holds alive, so a
    /// buffer much larger than its frame is shrunk, and a result that is a small part
    /// of a large frame (the rest being other members) is copied out of it.
    pub(crate) fn in_frame(
        mut frame: String,
        range: std::ops::Range<usize>,
    ) -> Result<ResultJson, String> {
        let Some(result) = frame.get(range.clone()) else {
            return Err(frame);
        };
        if frame.len() >= LARGE_FRAME_BYTES && result.len() < frame.len() / 2 {
            return match serde_json::from_str(result) {
                Ok(raw) => Ok(ResultJson::Owned(raw)),
                Err(_) => Err(frame),
            };
        }
        // (Spare capacity up to the frame's own size is kept: a buffer of the same size
        // is what the reader asks for next, so the allocator can hand this one back.)
        if frame.capacity() - frame.len() > frame.len().max(LARGE_FRAME_BYTES) {
            frame.shrink_to_fit();
        }
        Ok(ResultJson::InFrame { frame, range })
    }

    /// The result's JSON text.
    pub(crate) fn get(&self) -> &str {
        match self {
            // In range by construction; an empty text would fail to decode, not panic.
            ResultJson::InFrame { frame, range } => frame.get(range.clone()).unwrap_or_default(),
            ResultJson::Owned(raw) => raw.get(),
        }
    }

    /// The result as a value of its own (a copy, for a result read in place).
    pub(crate) fn into_raw(self) -> Result<Box<RawValue>, serde_json::Error> {
        match self {
            ResultJson::InFrame { .. } => serde_json::from_str(self.get()),
            ResultJson::Owned(raw) => Ok(raw),
        }
    }
}

#[derive(Debug)]
pub(crate) enum Failure {
    Rejected(ErrorObject),
    Closed(CloseReason),
    Transport(TransportError),
    /// The request's clock ran out; its deadline says which limit it hit.
    Expired(Deadline),
}

/// An event of a pending request, as [`PendingRequest::next_event`](super::PendingRequest::next_event) yields them.
#[derive(Debug)]
#[non_exhaustive]
pub enum RequestEvent {
    /// A progress report (always before [`RequestEvent::Done`]).
    Progress(ProgressUpdate),
    /// The outcome; no event follows it.
    Done(Result<Box<RawValue>, SessionError>),
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
    outcome: Option<Result<ResultJson, Failure>>,
    waker: Option<Waker>,
}

impl Events {
    fn lock(&self) -> std::sync::MutexGuard<'_, EventsState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue an event (the first outcome wins) and wake the caller, now or, with
    /// `deferred`, when the reader wakes them together.
    fn push(&self, event: PendingEvent, deferred: Option<&mut DeferredWakes>) {
        let waker = {
            let mut state = self.lock();
            match event {
                PendingEvent::Progress(update) => state.progress.push_back(update),
                PendingEvent::Outcome(outcome) => {
                    if state.outcome.is_none() {
                        state.outcome = Some(outcome);
                    }
                }
            }
            state.waker.take()
        };
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

/// Callers with new events, woken together once the reader has handled every frame it
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
    sweeper: Notify,
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

    /// Deliver an outcome. Returns false for an unknown (or late) id.
    pub(crate) fn complete(
        &self,
        id: &RequestId,
        outcome: Result<ResultJson, Failure>,
        wakes: &mut DeferredWakes,
    ) -> bool {
        let Some(n) = id.correlation_number() else {
            return false;
        };
        let mut state = self.lock();
        let Some(slot) = state.take(n) else {
            return false;
        };
        drop(state);
        slot.events
            .push(PendingEvent::Outcome(outcome), Some(wakes));
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
    fn sweep(&self, now: Instant) -> Option<Instant> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use super::*;

    fn at(frame: &str, result: &str) -> std::ops::Range<usize> {
        let start = frame.find(result).unwrap();
        start..start + result.len()
    }

    #[test]
    fn a_result_is_read_in_its_frame() {
        let frame = r#"{"jsonrpc":"2.0","id":1,"result":{"a":[1,"x"]}}"#.to_owned();
        let range = at(&frame, r#"{"a":[1,"x"]}"#);
        let result = ResultJson::in_frame(frame, range).unwrap();
        assert!(matches!(result, ResultJson::InFrame { .. }));
        assert_eq!(result.get(), r#"{"a":[1,"x"]}"#);
        assert_eq!(result.into_raw().unwrap().get(), r#"{"a":[1,"x"]}"#);
    }

    #[test]
    fn a_range_outside_the_frame_gives_the_frame_back() {
        let frame = r#"{"result":1}"#.to_owned();
        let back = ResultJson::in_frame(frame.clone(), 5..99).unwrap_err();
        assert_eq!(back, frame);
    }

    #[test]
    fn a_small_result_in_a_large_frame_is_copied_out() {
        let padding = "p".repeat(2 * LARGE_FRAME_BYTES);
        let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"ok":true}},"x":"{padding}"}}"#);
        let range = at(&frame, r#"{"ok":true}"#);
        let result = ResultJson::in_frame(frame, range).unwrap();
        assert!(matches!(result, ResultJson::Owned(_)));
        assert_eq!(result.get(), r#"{"ok":true}"#);
    }

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

    #[test]
    fn spare_capacity_is_given_back() {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":"{}"}}"#,
            "t".repeat(1000)
        );
        let mut frame = String::with_capacity(4 * LARGE_FRAME_BYTES);
        frame.push_str(&text);
        let range = at(&frame, &format!("\"{}\"", "t".repeat(1000)));
        let ResultJson::InFrame { frame, .. } = ResultJson::in_frame(frame, range).unwrap() else {
            panic!("a result that is most of its frame stays in it");
        };
        assert!(frame.capacity() < LARGE_FRAME_BYTES, "{}", frame.capacity());
    }
}
