//! Self-refreshing lists of what the server offers (tools, prompts, resources).
//!
//! A `*/list_changed` notification marks the list dirty on the reader (no waiting) and
//! starts one refresh task if none runs. The task fetches every page and replaces the
//! list in one step, then loops while the list was marked dirty again meanwhile. So a
//! burst of notifications costs at most two fetches (the running one and one more), the
//! initial load goes through the same single flight, and readers always see a whole
//! list, never a half-updated one. A read of a stale list waits for the first fetch
//! that starts after the list was marked, and no longer: it ends with that fetch, or as
//! soon as no fetch runs any more (one failed, or the client closed).
//!
//! A 2026-07-28 server also says how long a list stays fresh (`ttlMs`): past that, the
//! next read fetches it again. Lists from servers that send no `ttlMs` stay fresh until a
//! `list_changed`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::SessionError;
use crate::session::BoxFuture;

/// Fetches every page of one list.
pub(crate) type Fetch<T> =
    Arc<dyn Fn() -> BoxFuture<'static, Result<Vec<T>, SessionError>> + Send + Sync>;

/// Where a fetch leaves the `ttlMs` of the list it fetched (the shortest of its pages),
/// when the server sent one.
pub(crate) type TtlCell = Arc<Mutex<Option<Duration>>>;

pub(crate) struct ListCache<T> {
    state: Mutex<CacheState<T>>,
    changed: watch::Sender<u64>,
    fetch: Fetch<T>,
    ttl: TtlCell,
}

struct CacheState<T> {
    items: Option<Arc<Vec<T>>>,
    dirty: bool,
    /// Someone asked for the list: keep it fresh from now on.
    wanted: bool,
    task: Option<JoinHandle<()>>,
    /// Fetches completed (with a list or an error), and started: the fetch numbered
    /// `fetches` is the last one started, and it has completed once `generation`
    /// reaches that number.
    generation: u64,
    last_error: Option<SessionError>,
    fetches: u64,
    /// The client closed: no fetch will run again.
    closed: bool,
    /// When the list goes stale by its `ttlMs`.
    expires: Option<tokio::time::Instant>,
}

impl<T> CacheState<T> {
    /// What `get` reports once the list is as fresh as the client can make it.
    fn outcome(&self) -> Result<Arc<Vec<T>>, SessionError> {
        match (&self.items, &self.last_error) {
            (_, Some(e)) => Err(e.clone()),
            (Some(items), None) => Ok(items.clone()),
            (None, None) if self.closed => Err(closed()),
            (None, None) => Ok(Arc::new(Vec::new())),
        }
    }
}

fn closed() -> SessionError {
    SessionError::Closed {
        method: "list".into(),
        reason: crate::error::CloseReason::ClosedLocally,
    }
}

impl<T: Clone + Send + Sync + 'static> ListCache<T> {
    #[cfg(test)]
    pub(crate) fn new(fetch: Fetch<T>) -> Arc<Self> {
        Self::with_ttl(fetch, TtlCell::default())
    }

    /// A cache whose fetch reports the list's `ttlMs` in `ttl`.
    pub(crate) fn with_ttl(fetch: Fetch<T>, ttl: TtlCell) -> Arc<Self> {
        Arc::new(ListCache {
            state: Mutex::new(CacheState {
                items: None,
                dirty: true,
                wanted: false,
                task: None,
                generation: 0,
                last_error: None,
                fetches: 0,
                closed: false,
                expires: None,
            }),
            changed: watch::channel(0).0,
            fetch,
            ttl,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current list, fetching it first if it is missing or stale.
    ///
    /// Waits for the first fetch that starts after the list was last marked stale: the
    /// one running now if the list has not been marked since it started, else the next.
    /// It ends at that fetch's result, or when no fetch runs any more without having
    /// reached it (the last one failed, or the client closed).
    pub(crate) async fn get(self: &Arc<Self>) -> Result<Arc<Vec<T>>, SessionError> {
        let mut changes = self.changed.subscribe();
        let wanted = {
            let mut state = self.lock();
            state.wanted = true;
            if state
                .expires
                .is_some_and(|at| tokio::time::Instant::now() >= at)
            {
                state.expires = None;
                state.dirty = true;
            }
            if !state.dirty && state.task.is_none() {
                return state.outcome();
            }
            // Dirty: a fetch that starts from now on; else the one running.
            let wanted = state.fetches + u64::from(state.dirty);
            self.ensure_refreshing(&mut state);
            wanted
        };
        loop {
            {
                let state = self.lock();
                if state.generation >= wanted || state.task.is_none() {
                    return state.outcome();
                }
            }
            if changes.changed().await.is_err() {
                return Err(closed());
            }
        }
    }

    /// Start fetching the list in the background if it was never fetched and no fetch
    /// failed, so that a later [`get`](Self::get) finds it sooner.
    pub(crate) fn prefetch(self: &Arc<Self>) {
        let mut state = self.lock();
        if state.items.is_none() && state.last_error.is_none() {
            state.wanted = true;
            self.ensure_refreshing(&mut state);
        }
    }

    /// Whether the last fetch failed.
    pub(crate) fn failed(&self) -> bool {
        self.lock().last_error.is_some()
    }

    /// The list as last fetched, without fetching.
    pub(crate) fn snapshot(&self) -> Option<Arc<Vec<T>>> {
        self.lock().items.clone()
    }

    /// The error of the last fetch, when it failed.
    pub(crate) fn last_error(&self) -> Option<SessionError> {
        self.lock().last_error.clone()
    }

    /// A receiver that sees a change each time a fetch completes (with a list or an
    /// error) or a refresh ends: the catalog of a tool host follows the list with it.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
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
        if state.task.is_some() || state.closed {
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
            let ttl = self
                .ttl
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            let mut state = self.lock();
            state.expires = ttl.map(|ttl| tokio::time::Instant::now() + ttl);
            state.generation += 1;
            let failed = match fetched {
                Ok(items) => {
                    state.items = Some(Arc::new(items));
                    state.last_error = None;
                    false
                }
                Err(e) => {
                    // The next reader gets the error; a fetch for an output check only
                    // leaves that output unchecked.
                    tracing::debug!(error = %e, "refreshing a server list failed");
                    // Leave it to the next reader or notification to retry, unless the
                    // connection is gone.
                    state.dirty = !e.is_closed();
                    state.last_error = Some(e);
                    state.task = None;
                    true
                }
            };
            drop(state);
            // Readers waiting for this fetch need not wait for the next.
            self.changed.send_modify(|g| *g += 1);
            if failed {
                return;
            }
        }
    }

    /// Stop a running refresh (the client is closing).
    pub(crate) fn abort(&self) {
        let task = {
            let mut state = self.lock();
            state.closed = true;
            state.task.take()
        };
        if let Some(task) = task {
            task.abort();
        }
        self.changed.send_modify(|g| *g += 1);
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::time::Duration;

    use tokio::sync::mpsc;

    use super::*;

    type Results = mpsc::UnboundedSender<Result<Vec<u32>, SessionError>>;

    /// A cache whose fetches each take the next result the test sends.
    fn cache() -> (Arc<ListCache<u32>>, Results) {
        let (tx, rx) = mpsc::unbounded_channel();
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let fetch: Fetch<u32> = Arc::new(move || {
            let rx = rx.clone();
            Box::pin(async move {
                match rx.lock().await.recv().await {
                    Some(result) => result,
                    None => std::future::pending().await,
                }
            })
        });
        (ListCache::new(fetch), tx)
    }

    /// A read of the list on a task of its own.
    fn spawn_read(
        cache: &Arc<ListCache<u32>>,
    ) -> tokio::task::JoinHandle<Result<Arc<Vec<u32>>, SessionError>> {
        let cache = cache.clone();
        tokio::spawn(async move { cache.get().await })
    }

    async fn bounded<F: Future>(what: &str, fut: F) -> F::Output {
        match tokio::time::timeout(Duration::from_secs(10), fut).await {
            Ok(value) => value,
            Err(_) => panic!("timed out (10 s) waiting for: {what}"),
        }
    }

    fn list(result: Result<Arc<Vec<u32>>, SessionError>) -> Vec<u32> {
        result.expect("a list").to_vec()
    }

    #[tokio::test]
    async fn a_read_while_a_refresh_ends_returns_its_list() {
        // The refresh task between storing its list and leaving: the fetch is done,
        // the task not yet gone.
        let (cache, _results) = cache();
        let running = tokio::spawn(std::future::pending::<()>());
        {
            let mut state = cache.lock();
            state.items = Some(Arc::new(vec![1]));
            state.dirty = false;
            state.wanted = true;
            state.fetches = 1;
            state.generation = 1;
            state.task = Some(running);
        }
        let got = bounded("get() at the end of a refresh", cache.get()).await;
        assert_eq!(list(got), [1]);
        cache.abort();
    }

    #[tokio::test]
    async fn reads_during_a_fetch_share_it_and_a_mark_waits_for_the_next() {
        let (cache, results) = cache();
        let first = spawn_read(&cache);
        tokio::task::yield_now().await;
        let same = spawn_read(&cache);
        tokio::task::yield_now().await;
        // Marked stale while the first fetch runs: a read from now on needs the next.
        cache.mark_dirty();
        let next = spawn_read(&cache);
        tokio::task::yield_now().await;
        results.send(Ok(vec![1])).unwrap();
        assert_eq!(list(bounded("the first read", first).await.unwrap()), [1]);
        assert_eq!(list(bounded("the shared read", same).await.unwrap()), [1]);
        assert!(
            !next.is_finished(),
            "a read after the mark got the older list"
        );
        results.send(Ok(vec![2])).unwrap();
        assert_eq!(
            list(bounded("the read after the mark", next).await.unwrap()),
            [2]
        );
        assert_eq!(cache.fetches(), 2);
    }

    #[tokio::test]
    async fn after_the_connection_closed_reads_report_it() {
        let (cache, results) = cache();
        results.send(Err(closed())).unwrap();
        for what in ["the read that fetched", "a read after it"] {
            let got = bounded(what, cache.get()).await;
            assert!(got.is_err_and(|e| e.is_closed()), "{what}");
        }
        assert_eq!(cache.fetches(), 1);
    }

    #[tokio::test]
    async fn closing_ends_a_read_that_waits_for_a_fetch() {
        let (cache, _results) = cache();
        let read = spawn_read(&cache);
        tokio::task::yield_now().await;
        cache.abort();
        let got = bounded("a read when the client closes", read)
            .await
            .unwrap();
        assert!(got.is_err_and(|e| e.is_closed()));
        let after = bounded("a read after close", cache.get()).await;
        assert!(after.is_err_and(|e| e.is_closed()));
    }
}
