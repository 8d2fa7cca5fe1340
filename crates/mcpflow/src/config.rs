//! [`SessionConfig`]: every limit and timeout of a connection, with documented defaults.

use std::num::NonZeroUsize;
use std::time::Duration;

/// Default largest inbound frame of the newline-framed transports: 32 MiB. A longer
/// frame is skipped and, when its request id can be read from its first bytes,
/// answered with `-32600`. Set per transport with `max_frame_bytes`.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 32 * 1024 * 1024;

/// A message at least this large (64 KiB) is moved, never copied: a response's result
/// is written after its head as a part of its own, and a result read from a frame at
/// least this large is copied out only when it is less than half of the frame (so a
/// small result does not keep a large frame alive). Smaller messages take whichever
/// way is cheaper.
pub const LARGE_MESSAGE_BYTES: usize = 64 * 1024;

/// Limits and timeouts of one connection. Build with [`SessionConfig::builder`] or use
/// [`SessionConfig::default`].
///
/// ```
/// use std::time::Duration;
/// use mcpflow::SessionConfig;
/// let config = SessionConfig::builder()
///     .request_timeout(Duration::from_secs(30))
///     .build();
/// assert_eq!(config.request_timeout(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub(crate) max_concurrent_requests: NonZeroUsize,
    pub(crate) request_queue_capacity: usize,
    pub(crate) notification_lane_capacity: NonZeroUsize,
    pub(crate) writer_queue_capacity: NonZeroUsize,
    pub(crate) request_timeout: Duration,
    pub(crate) max_request_timeout: Duration,
    pub(crate) close_grace: Duration,
    /// The id of this side's first request (a fleet's instances start theirs apart).
    pub(crate) first_request_id: i64,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_concurrent_requests: NonZeroUsize::new(64).unwrap_or(NonZeroUsize::MIN),
            request_queue_capacity: 256,
            notification_lane_capacity: NonZeroUsize::new(1024).unwrap_or(NonZeroUsize::MIN),
            writer_queue_capacity: NonZeroUsize::new(256).unwrap_or(NonZeroUsize::MIN),
            request_timeout: Duration::from_secs(60),
            max_request_timeout: Duration::from_secs(30 * 60),
            close_grace: Duration::from_secs(2),
            first_request_id: 1,
        }
    }
}

impl SessionConfig {
    /// Start from the defaults.
    pub fn builder() -> SessionConfigBuilder {
        SessionConfigBuilder {
            config: SessionConfig::default(),
        }
    }

    /// See [`SessionConfigBuilder::max_concurrent_requests`].
    pub fn max_concurrent_requests(&self) -> usize {
        self.max_concurrent_requests.get()
    }
    /// See [`SessionConfigBuilder::request_queue_capacity`].
    pub fn request_queue_capacity(&self) -> usize {
        self.request_queue_capacity
    }
    /// See [`SessionConfigBuilder::notification_lane_capacity`].
    pub fn notification_lane_capacity(&self) -> usize {
        self.notification_lane_capacity.get()
    }
    /// See [`SessionConfigBuilder::writer_queue_capacity`].
    pub fn writer_queue_capacity(&self) -> usize {
        self.writer_queue_capacity.get()
    }
    /// See [`SessionConfigBuilder::request_timeout`].
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }
    /// See [`SessionConfigBuilder::max_request_timeout`].
    pub fn max_request_timeout(&self) -> Duration {
        self.max_request_timeout
    }
    /// See [`SessionConfigBuilder::close_grace`].
    pub fn close_grace(&self) -> Duration {
        self.close_grace
    }
}

/// Builds a [`SessionConfig`].
#[derive(Debug, Clone)]
#[must_use]
pub struct SessionConfigBuilder {
    config: SessionConfig,
}

impl SessionConfigBuilder {
    /// Most peer requests handled at once. Beyond it requests wait in a queue of
    /// [`request_queue_capacity`](Self::request_queue_capacity); beyond that the peer
    /// gets a busy error (`-32603`, `data.reason = "busy"`) at once. Default: 64.
    pub fn max_concurrent_requests(mut self, n: NonZeroUsize) -> Self {
        self.config.max_concurrent_requests = n;
        self
    }

    /// Peer requests waiting for a handler slot. Default: 256.
    pub fn request_queue_capacity(mut self, n: usize) -> Self {
        self.config.request_queue_capacity = n;
        self
    }

    /// Notifications waiting for the notification lane. `list_changed` notifications
    /// coalesce (a queued one absorbs the next), so they are never lost; past this bound
    /// other notifications are dropped with a warning. Default: 1024.
    pub fn notification_lane_capacity(mut self, n: NonZeroUsize) -> Self {
        self.config.notification_lane_capacity = n;
        self
    }

    /// Outbound messages waiting for the writer. When full, senders wait: a slow peer
    /// slows the code that sends to it, never the reader. Default: 256.
    pub fn writer_queue_capacity(mut self, n: NonZeroUsize) -> Self {
        self.config.writer_queue_capacity = n;
        self
    }

    /// How long a request waits for its answer; progress restarts the clock unless a
    /// request opts out. Default: 60 s.
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.config.request_timeout = d;
        self
    }

    /// The longest a request may run however much progress it reports. Default: 30 min.
    pub fn max_request_timeout(mut self, d: Duration) -> Self {
        self.config.max_request_timeout = d;
        self
    }

    /// How long `close` lets in-flight handlers, the writer and the transport finish
    /// before it stops them. Default: 2 s.
    pub fn close_grace(mut self, d: Duration) -> Self {
        self.config.close_grace = d;
        self
    }

    /// The finished configuration.
    pub fn build(self) -> SessionConfig {
        self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documentation() {
        let c = SessionConfig::default();
        assert_eq!(c.max_concurrent_requests(), 64);
        assert_eq!(c.request_queue_capacity(), 256);
        assert_eq!(c.notification_lane_capacity(), 1024);
        assert_eq!(c.writer_queue_capacity(), 256);
        assert_eq!(c.request_timeout(), Duration::from_secs(60));
        assert_eq!(c.max_request_timeout(), Duration::from_secs(1800));
        assert_eq!(c.close_grace(), Duration::from_secs(2));
    }
}
