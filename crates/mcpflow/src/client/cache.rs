//! Self-refreshing lists of what the server offers (tools, prompts, resources).
//!
//! A `*/list_changed` notification marks the list dirty on the reader (no waiting) and
//! starts one refresh task if none runs. The task fetches every page and replaces the
//! list in one step, then loops while the list was marked dirty again meanwhile. So a
//! burst of notifications costs at most two fetches (the running one and one more), the
//! initial load goes through the same single flight, and readers always see a whole
//! list, never a half-updated one.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::SessionError;
use crate::session::BoxFuture;

/// Fetches every page of one list.
pub(crate) type Fetch<T> =
    Arc<dyn Fn() -> BoxFuture<'static, Result<Vec<T>, SessionError>> + Send + Sync>;

pub(crate) struct ListCache<T> {
    state: Mutex<CacheState<T>>,
    changed: watch::Sender<u64>,
    fetch: Fetch<T>,
}

struct CacheState<T> {
    items: Option<Arc<Vec<T>>>,
    dirty: bool,
    /// Someone asked for the list: keep it fresh from now on.
    wanted: bool,
    task: Option<JoinHandle<()>>,
    /// Bumped when a fetch completes (with a list or an error).
    generation: u64,
    last_error: Option<SessionError>,
    fetches: u64,
}

impl<T: Clone + Send + Sync + 'static> ListCache<T> {
    pub(crate) fn new(fetch: Fetch<T>) -> Arc<Self> {
        Arc::new(ListCache {
            state: Mutex::new(CacheState {
                items: None,
                dirty: true,
                wanted: false,
                task: None,
                generation: 0,
                last_error: None,
                fetches: 0,
            }),
            changed: watch::channel(0).0,
            fetch,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current list, fetching it first if it is missing or stale.
    pub(crate) async fn get(self: &Arc<Self>) -> Result<Arc<Vec<T>>, SessionError> {
        let mut changes = self.changed.subscribe();
        let start = {
            let mut state = self.lock();
            state.wanted = true;
            // A refresh in flight means the list is known to be stale (a `list_changed`
            // started it): wait for it rather than return the old list.
            if let (Some(items), false, None) = (&state.items, state.dirty, &state.task) {
                return Ok(items.clone());
            }
            let start = state.generation;
            self.ensure_refreshing(&mut state);
            start
        };
        loop {
            {
                let state = self.lock();
                if state.generation > start && state.task.is_none() {
                    return match (&state.items, &state.last_error) {
                        (_, Some(e)) => Err(e.clone()),
                        (Some(items), None) => Ok(items.clone()),
                        (None, None) => Ok(Arc::new(Vec::new())),
                    };
                }
            }
            if changes.changed().await.is_err() {
                return Err(SessionError::Closed {
                    method: "list".into(),
                    reason: crate::error::CloseReason::ClosedLocally,
                });
            }
        }
    }

    /// The list as last fetched, without fetching.
    pub(crate) fn snapshot(&self) -> Option<Arc<Vec<T>>> {
        self.lock().items.clone()
    }

    /// How many fetches ran (for tests and diagnostics).
    pub(crate) fn fetches(&self) -> u64 {
        self.lock().fetches
    }

    /// Mark stale (from the reader: must not wait). Refreshes at once if the list is in use.
    pub(crate) fn mark_dirty(self: &Arc<Self>) {
        let mut state = self.lock();
        state.dirty = true;
        if state.wanted {
            self.ensure_refreshing(&mut state);
        }
    }

    fn ensure_refreshing(self: &Arc<Self>, state: &mut CacheState<T>) {
        if state.task.is_some() {
            return;
        }
        let this = self.clone();
        state.task = Some(tokio::spawn(async move { this.refresh_loop().await }));
    }

    async fn refresh_loop(self: Arc<Self>) {
        loop {
            {
                let mut state = self.lock();
                if !state.dirty {
                    state.task = None;
                    drop(state);
                    self.changed.send_modify(|g| *g += 1);
                    return;
                }
                state.dirty = false;
                state.fetches += 1;
            }
            let fetched = (self.fetch)().await;
            let mut state = self.lock();
            state.generation += 1;
            match fetched {
                Ok(items) => {
                    state.items = Some(Arc::new(items));
                    state.last_error = None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "refreshing a server list failed");
                    let closed = e.is_closed();
                    state.last_error = Some(e);
                    // Retry on the next read unless the connection is gone.
                    state.dirty = !closed;
                    // Leave it to the next reader or notification to retry.
                    state.task = None;
                    drop(state);
                    self.changed.send_modify(|g| *g += 1);
                    return;
                }
            }
        }
    }

    /// Stop a running refresh (the client is closing).
    pub(crate) fn abort(&self) {
        if let Some(task) = self.lock().task.take() {
            task.abort();
        }
        self.changed.send_modify(|g| *g += 1);
    }
}
