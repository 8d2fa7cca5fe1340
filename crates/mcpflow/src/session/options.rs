//! What a caller may set for one request ([`RequestOptions`]) and what it may read of
//! one in flight ([`ProgressUpdate`], [`RequestEvent`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::SessionError;

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
    /// The connection's entries for every request's `_meta`, under [`meta`](Self::meta)'s;
    /// shared, not copied, per request.
    pub(crate) envelope: Option<Arc<super::RequestEnvelope>>,
    pub(crate) never_cancel: bool,
    /// What the request's HTTP headers mirror (2026-07-28), when the caller knows more
    /// than the envelope says.
    pub(crate) mirrored: Option<Arc<crate::transport::Mirrored>>,
    /// What the request names (a tool, a prompt, a resource), for its span; set only
    /// while telemetry records.
    pub(crate) subject: Option<String>,
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
    /// read it with [`PendingRequest::next_event`](super::PendingRequest::next_event)
    /// (the same 32 MiB of unread reports as [`on_progress`](Self::on_progress) are held).
    pub fn with_progress_token(mut self) -> Self {
        self.want_progress = true;
        self
    }

    /// Ask for progress and call `f` with each report, in order, before the response is
    /// returned. Reports wait for `f` in a queue of up to 32 MiB; past it the oldest
    /// unread ones are dropped (with a warning), so a flooding peer cannot exhaust memory.
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

    /// What the request's HTTP headers mirror of it (2026-07-28), in place of the
    /// envelope's.
    pub(crate) fn mirrored(mut self, mirrored: Arc<crate::transport::Mirrored>) -> Self {
        self.mirrored = Some(mirrored);
        self
    }

    /// Name the tool, prompt or resource the request is about, for its span.
    pub(crate) fn subject(mut self, name: Option<&str>) -> Self {
        if let Some(name) = name
            && crate::telemetry::enabled()
        {
            self.subject = Some(name.to_owned());
        }
        self
    }
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
