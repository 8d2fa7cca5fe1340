//! The lists a client keeps fresh ([`ClientHandle::tools`](super::ClientHandle::tools)
//! and the like): one self-refreshing cache per list, marked stale by `list_changed`
//! (from either era) and by the list's `ttlMs`.

use std::sync::Arc;

use mcpflow_protocol::Tool;
use mcpflow_protocol::methods::method;
use mcpflow_protocol::prompts::Prompt;
use mcpflow_protocol::resources::{Resource, ResourceTemplate};

use super::cache::{self, ListCache};
use super::headers::ToolHeaders;
use super::pages::{all_pages_fetch_ttl, all_pages_ttl};
use crate::session::Peer;

/// The lists that refresh themselves on `list_changed` ([`ClientHandle::tools`](super::ClientHandle::tools) and the like).
pub(crate) struct Caches {
    pub(crate) tools: Arc<ListCache<Tool>>,
    pub(crate) prompts: Arc<ListCache<Prompt>>,
    pub(crate) resources: Arc<ListCache<Resource>>,
    pub(crate) templates: Arc<ListCache<ResourceTemplate>>,
}

impl Caches {
    pub(super) fn new(peer: &Peer, tool_headers: &Arc<ToolHeaders>) -> Caches {
        fn list<T>(peer: &Peer, method: &'static str, field: &'static str) -> Arc<ListCache<T>>
        where
            T: serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
        {
            let ttl = cache::TtlCell::default();
            ListCache::with_ttl(all_pages_fetch_ttl(peer, method, field, ttl.clone()), ttl)
        }
        let tool_ttl = cache::TtlCell::default();
        Caches {
            tools: ListCache::with_ttl(
                tool_pages_fetch(peer, tool_headers, tool_ttl.clone()),
                tool_ttl,
            ),
            prompts: list(peer, method::PROMPTS_LIST, "prompts"),
            resources: list(peer, method::RESOURCES_LIST, "resources"),
            templates: list(peer, method::RESOURCES_TEMPLATES_LIST, "resourceTemplates"),
        }
    }

    pub(super) fn abort(&self) {
        self.tools.abort();
        self.prompts.abort();
        self.resources.abort();
        self.templates.abort();
    }

    /// Every list is stale (changes may have gone unannounced).
    pub(super) fn mark_all_dirty(&self) {
        self.tools.mark_dirty();
        self.prompts.mark_dirty();
        self.resources.mark_dirty();
        self.templates.mark_dirty();
    }
}

/// Every page of `tools/list`, without tools whose `x-mcp-header` is invalid (the
/// others' annotations noted in `tool_headers`).
fn tool_pages_fetch(
    peer: &Peer,
    tool_headers: &Arc<ToolHeaders>,
    ttl: cache::TtlCell,
) -> cache::Fetch<Tool> {
    let peer = peer.clone();
    let tool_headers = tool_headers.clone();
    Arc::new(move || {
        let peer = peer.clone();
        let tool_headers = tool_headers.clone();
        let ttl = ttl.clone();
        Box::pin(async move {
            let mut tools = all_pages_ttl(&peer, method::TOOLS_LIST, "tools", Some(&ttl)).await?;
            tool_headers.keep_valid(&mut tools);
            Ok(tools)
        })
    })
}
