//! The session table: what the handlers share, creating sessions under the cap (by
//! evicting idle ones when it is reached), and ending idle sessions.
//!
//! A session is idle when no request of its is in flight and no stream of its is
//! connected. Sessions that never served more than their `initialize` are the first to
//! go: they expire after a short timeout of their own, and at the cap they are evicted
//! before any other idle session, each group oldest first. A session that is not idle
//! is never evicted; when every session is busy, a new one is refused with 503.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::Config;
use super::body::BodyBudget;
use super::events::QueueBudget;
use super::handlers::{self, Refusal};
use super::session::{HttpSession, SessionSettings};
use super::slots::SessionlessSlots;
use crate::server::Server;

/// State shared by the handlers.
pub(crate) struct AppState {
    pub(super) server: Server,
    pub(super) config: Config,
    pub(super) sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    pub(super) reaper: Mutex<Option<JoinHandle<()>>>,
    pub(super) body_budget: BodyBudget,
    pub(super) queue_budget: Arc<QueueBudget>,
    pub(super) evicted: AtomicU64,
    pub(super) expired: AtomicU64,
    /// Open connections, when served by `bind`.
    pub(super) connections: Arc<AtomicUsize>,
    /// Which sessions to evict next, kept so that evicting is not a scan of the table
    /// each time (a flood of abandoned sessions evicts once per new session).
    pub(super) evictable: Mutex<Evictable>,
    /// Cancelled when the server ends its sessions: ends the sessionless 2026-07-28
    /// exchanges still open (a `subscriptions/listen` stream would otherwise hold its
    /// connection, and the socket, through the shutdown grace).
    pub(super) stopping: tokio_util::sync::CancellationToken,
    /// Sessionless 2026-07-28 exchanges whose engine is still running.
    pub(super) exchanges: InFlight,
    /// Slots for requests served without a session (both kinds).
    pub(super) slots: SessionlessSlots,
}

/// A count of things in flight, each held by the guard [`InFlight::start`] returns.
#[derive(Default)]
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    /// Count one more until the guard is dropped.
    pub(super) fn start(&self) -> InFlightGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        InFlightGuard(self.0.clone())
    }

    pub(super) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One of an [`InFlight`] count.
pub(crate) struct InFlightGuard(Arc<AtomicUsize>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for AppState {
    fn drop(&mut self) {
        self.end_all_sessions();
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    pub(super) fn new(server: Server, config: Config) -> Self {
        let slots = SessionlessSlots::new(
            config.max_sessionless_requests,
            config.sessionless_queue_capacity,
        );
        AppState {
            server,
            body_budget: BodyBudget::new(config.max_buffered_body_bytes),
            queue_budget: QueueBudget::new(config.max_queued_event_bytes),
            config,
            sessions: Mutex::new(HashMap::new()),
            reaper: Mutex::new(None),
            evicted: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            connections: Arc::default(),
            evictable: Mutex::default(),
            stopping: tokio_util::sync::CancellationToken::new(),
            exchanges: InFlight::default(),
            slots,
        }
    }

    /// What every session of this server shares.
    pub(super) fn session_settings(&self, resumable: bool) -> SessionSettings {
        let shared = self.config.sessions.clone().filter(|_| resumable);
        SessionSettings {
            store: if resumable && shared.is_none() {
                self.config.store.clone()
            } else {
                None
            },
            retry: if resumable { self.config.retry } else { None },
            budget: self.queue_budget.clone(),
            shared,
            idle: self.config.idle_timeout,
        }
    }

    pub(super) fn end_all_sessions(&self) {
        self.stopping.cancel();
        if let Some(reaper) = lock(&self.reaper).take() {
            reaper.abort();
        }
        let sessions: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.terminate();
        }
    }

    pub(super) fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        lock(&self.sessions).get(id).cloned()
    }

    pub(super) fn remove_session(&self, id: &str) {
        let removed = lock(&self.sessions).remove(id);
        if let Some(session) = removed {
            tracing::debug!(session = id, "session ended");
            session.terminate();
        }
    }

    /// A new session, or (`copy`) this instance's copy of a fleet's session, held
    /// until [`HttpSession::set_ready`]; a copy another request made first is returned
    /// as it is, with `false`.
    pub(super) fn create_session(
        self: &Arc<Self>,
        id: String,
        copy: bool,
    ) -> Result<(Arc<HttpSession>, bool), Refusal> {
        let (session, transport, evicted) = {
            let mut sessions = lock(&self.sessions);
            if copy && let Some(session) = sessions.get(&id) {
                return Ok((session.clone(), false));
            }
            let mut evicted = None;
            if sessions.len() >= self.config.max_sessions {
                let Some(victim) = lock(&self.evictable).next(&sessions) else {
                    drop(sessions);
                    return Err(handlers::refuse(
                        StatusCode::SERVICE_UNAVAILABLE,
                        mcpflow_protocol::ErrorCode::INTERNAL_ERROR,
                        None,
                        format!(
                            "the server already serves {} sessions (max_sessions), none of them idle; try again later",
                            self.config.max_sessions
                        ),
                    )
                    .retry_after(1));
                };
                evicted = sessions.remove(&victim);
            }
            let (session, transport) = HttpSession::new(id.clone(), self.session_settings(true));
            if copy {
                session.set_starting();
                session.mark_used();
            }
            sessions.insert(id.clone(), session.clone());
            lock(&self.evictable).created(&session, self.config.max_sessions);
            (session, transport, evicted)
        };
        if let Some(evicted) = evicted {
            self.evicted.fetch_add(1, Ordering::Relaxed);
            tracing::info!(
                session = %evicted.id,
                used = evicted.is_used(),
                max_sessions = self.config.max_sessions,
                "evicted an idle session to make room for a new one"
            );
            evicted.terminate();
        }
        // A fleet's server-to-client request ids carry the instance's number, so that
        // an answer landing on another instance finds its way back.
        let first_id = self.config.sessions.as_ref().map_or(1, |shared| {
            i64::try_from(super::fleet::node_base(shared.node()) + 1).unwrap_or(1)
        });
        let running = self
            .server
            .serve_as_from(transport, session.principal.clone(), first_id);
        let _ = running.peer().facts().session_id.set(id.clone());
        let state = Arc::downgrade(self);
        tokio::spawn(async move {
            running.wait().await;
            if let Some(state) = state.upgrade() {
                state.remove_session(&id);
            }
        });
        self.start_reaper();
        tracing::debug!(session = %session.id, copy, "session started");
        Ok((session, true))
    }

    /// How often the reaper runs: a quarter of the shortest idle timeout.
    pub(super) fn reaper_every(&self) -> Duration {
        let unused_idle = self
            .config
            .unused_idle_timeout
            .min(self.config.idle_timeout);
        (unused_idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60))
    }

    /// End idle sessions now and then; started with the first session, inside the runtime.
    fn start_reaper(self: &Arc<Self>) {
        let mut reaper = lock(&self.reaper);
        if reaper.is_some() {
            return;
        }
        let state: Weak<AppState> = Arc::downgrade(self);
        let idle = self.config.idle_timeout;
        let unused_idle = self.config.unused_idle_timeout.min(idle);
        let every = self.reaper_every();
        *reaper = Some(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            loop {
                ticks.tick().await;
                let Some(state) = state.upgrade() else { return };
                let expired: Vec<(String, bool)> = lock(&state.sessions)
                    .iter()
                    .filter(|(_, s)| s.is_idle(if s.is_used() { idle } else { unused_idle }))
                    .map(|(id, s)| (id.clone(), s.is_used()))
                    .collect();
                for (id, used) in expired {
                    tracing::info!(session = %id, used, "ending an idle session");
                    state.expired.fetch_add(1, Ordering::Relaxed);
                    state.remove_session(&id);
                }
                if state.config.sessions.is_some() {
                    state.touch_busy().await;
                }
            }
        }));
    }
}

impl AppState {
    /// In a fleet: forget expired sessions from the fleet's count, restart the idle
    /// timers of the sessions busy here (a long call, an open stream), and end the
    /// copies of sessions ended elsewhere.
    async fn touch_busy(&self) {
        let Some(shared) = &self.config.sessions else {
            return;
        };
        if let Err(e) = shared.prune(self.config.idle_timeout).await {
            tracing::warn!(error = %e, "could not prune the fleet's count of sessions");
        }
        let busy: Vec<String> = lock(&self.sessions)
            .iter()
            .filter(|(_, s)| !s.is_idle(Duration::ZERO))
            .map(|(id, _)| id.clone())
            .collect();
        if busy.is_empty() {
            return;
        }
        let ids: Vec<&str> = busy.iter().map(String::as_str).collect();
        match shared.touch(&ids, self.config.idle_timeout).await {
            Ok(alive) => {
                for (id, alive) in busy.iter().zip(alive) {
                    if !alive {
                        tracing::debug!(session = %id, "the session ended on another instance");
                        self.remove_session(id);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not restart sessions' idle timers"),
        }
    }
}

/// The order in which idle sessions are evicted: sessions that never served more than
/// `initialize` first, oldest first (kept in creation order as they are created), then
/// the least recently used (found by a scan of the table, which keeps the oldest
/// [`SCANNED`] for the evictions after). Every candidate is checked again when its turn
/// comes: still in the table, idle, and (for a used one) not used since the scan.
#[derive(Default)]
pub(super) struct Evictable {
    unused: VecDeque<Weak<HttpSession>>,
    used: Vec<(Weak<HttpSession>, Instant)>,
}

/// Used sessions remembered from one scan of the table.
const SCANNED: usize = 64;

impl Evictable {
    fn created(&mut self, session: &Arc<HttpSession>, max_sessions: usize) {
        self.unused.push_back(Arc::downgrade(session));
        // Sessions that ended on their own leave entries behind: drop them now and then.
        if self.unused.len() > 2 * max_sessions + SCANNED {
            self.unused
                .retain(|s| s.upgrade().is_some_and(|s| !s.is_used()));
        }
    }

    /// The id of the session to evict, if any is idle.
    fn next(&mut self, sessions: &HashMap<String, Arc<HttpSession>>) -> Option<String> {
        let mut busy = Vec::new();
        let mut found = None;
        while let Some(weak) = self.unused.pop_front() {
            let Some(session) = weak.upgrade() else {
                continue;
            };
            if session.is_used() || !is_listed(sessions, &session) {
                continue;
            }
            if session.is_idle(Duration::ZERO) {
                found = Some(session.id.clone());
                break;
            }
            busy.push(weak);
            if busy.len() >= SCANNED {
                break;
            }
        }
        for weak in busy.into_iter().rev() {
            self.unused.push_front(weak);
        }
        if found.is_some() {
            return found;
        }
        if let Some(id) = self.take_scanned(sessions) {
            return Some(id);
        }
        // Oldest last, as `take_scanned` takes from the end.
        let mut idle: Vec<_> = sessions
            .values()
            .filter(|s| s.is_idle(Duration::ZERO))
            .map(|s| (Arc::downgrade(s), s.last_seen()))
            .collect();
        idle.sort_unstable_by_key(|(_, seen)| std::cmp::Reverse(*seen));
        let keep = idle.len().saturating_sub(SCANNED);
        self.used = idle.split_off(keep);
        self.take_scanned(sessions)
    }

    /// The oldest session kept from the last scan that is still listed, idle and not
    /// used since.
    fn take_scanned(&mut self, sessions: &HashMap<String, Arc<HttpSession>>) -> Option<String> {
        while let Some((weak, seen)) = self.used.pop() {
            if let Some(session) = weak.upgrade()
                && is_listed(sessions, &session)
                && session.last_seen() == seen
                && session.is_idle(Duration::ZERO)
            {
                return Some(session.id.clone());
            }
        }
        None
    }
}

/// Whether `session` is the one the table lists under its id (not one already ended).
fn is_listed(sessions: &HashMap<String, Arc<HttpSession>>, session: &Arc<HttpSession>) -> bool {
    sessions
        .get(&session.id)
        .is_some_and(|listed| Arc::ptr_eq(listed, session))
}
