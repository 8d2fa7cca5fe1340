//! [`ServerOptions`]: one server of a host, how to reach it and its own limits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::call::Deadlines;
use super::names::ToolFilter;
use super::supervisor::{Connector, ReconnectPolicy};

/// One server of a host: how to reach it and its own limits.
#[must_use]
pub struct ServerOptions {
    pub(super) name: Arc<str>,
    pub(super) connector: Connector,
    pub(super) filter: ToolFilter,
    pub(super) deadlines: Deadlines,
    pub(super) max_in_flight: Option<usize>,
    pub(super) reconnect: Option<ReconnectPolicy>,
}

impl fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerOptions")
            .field("name", &self.name)
            .field("filter", &self.filter)
            .field("deadlines", &self.deadlines)
            .field("max_in_flight", &self.max_in_flight)
            .finish_non_exhaustive()
    }
}

impl ServerOptions {
    /// The server `name`, reached through `connector`.
    pub fn new(name: impl Into<Arc<str>>, connector: Connector) -> ServerOptions {
        ServerOptions {
            name: name.into(),
            connector,
            filter: ToolFilter::all(),
            deadlines: Deadlines::default(),
            max_in_flight: None,
            reconnect: None,
        }
    }

    /// Which of its tools are offered (default: all).
    pub fn filter(mut self, filter: ToolFilter) -> Self {
        self.filter = filter;
        self
    }

    /// The deadline of its calls without answer or progress (default: the host's).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.deadlines.timeout = Some(d);
        self
    }

    /// The deadline of one of its tools, by remote name (wins over [`timeout`](Self::timeout)).
    pub fn tool_timeout(mut self, tool: impl Into<String>, d: Duration) -> Self {
        self.deadlines.per_tool.insert(tool.into(), d);
        self
    }

    /// The cap on a call's total time, however much progress arrives (default: the host's).
    pub fn max_total(mut self, d: Duration) -> Self {
        self.deadlines.max_total = Some(d);
        self
    }

    /// At most `n` calls in flight to it at once; more wait (within their deadline) for
    /// a free slot. Default: no limit.
    pub fn max_in_flight(mut self, n: std::num::NonZeroUsize) -> Self {
        self.max_in_flight = Some(n.get());
        self
    }

    /// Its own reconnect policy (default: the host's).
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = Some(policy);
        self
    }
}
