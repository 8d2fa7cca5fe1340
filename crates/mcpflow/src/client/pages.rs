//! Following `nextCursor` through every page of a list.

use std::sync::Arc;

use mcpflow_protocol::PaginatedRequestParams;

use super::MAX_PAGES;
use super::cache;
use crate::error::SessionError;
use crate::session::{Peer, RequestOptions};

/// Fetches every page of a list for a cache, noting the list's `ttlMs` in `ttl`.
pub(super) fn all_pages_fetch_ttl<T>(
    peer: &Peer,
    method: &'static str,
    field: &'static str,
    ttl: cache::TtlCell,
) -> cache::Fetch<T>
where
    T: serde::de::DeserializeOwned + Send + 'static,
{
    let peer = peer.clone();
    Arc::new(move || {
        let peer = peer.clone();
        let ttl = ttl.clone();
        Box::pin(async move { all_pages_ttl(&peer, method, field, Some(&ttl)).await })
    })
}

pub(super) async fn all_pages<T: serde::de::DeserializeOwned>(
    peer: &Peer,
    method: &str,
    field: &str,
) -> Result<Vec<T>, SessionError> {
    all_pages_ttl(peer, method, field, None).await
}

/// Every page, noting in `ttl` the shortest `ttlMs` of the pages (2026-07-28; a negative
/// one counts as 0) when the server sent any.
pub(super) async fn all_pages_ttl<T: serde::de::DeserializeOwned>(
    peer: &Peer,
    method: &str,
    field: &str,
    ttl: Option<&cache::TtlCell>,
) -> Result<Vec<T>, SessionError> {
    #[derive(serde::Deserialize)]
    struct Page {
        #[serde(rename = "nextCursor")]
        next_cursor: Option<String>,
        #[serde(rename = "ttlMs", default)]
        ttl_ms: Option<f64>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut shortest: Option<std::time::Duration> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => PaginatedRequestParams::with_cursor(c.clone()),
            None => PaginatedRequestParams::default(),
        };
        let mut page: Page = peer.request(method, &params, RequestOptions::new()).await?;
        let list = page
            .rest
            .remove(field)
            .unwrap_or(serde_json::Value::Array(Vec::new()));
        let list: Vec<T> = serde_json::from_value(list).map_err(|e| SessionError::Codec {
            method: method.into(),
            detail: format!("unexpected `{field}` entries: {e}"),
        })?;
        items.extend(list);
        if let Some(ms) = page.ttl_ms {
            let this = std::time::Duration::from_millis(ms.max(0.0) as u64);
            shortest = Some(shortest.map_or(this, |s| s.min(this)));
        }
        match page.next_cursor {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            Some(_) => {
                return Err(SessionError::Codec {
                    method: method.into(),
                    detail: "the server returned the same cursor twice".to_owned(),
                });
            }
            None => {
                if let (Some(cell), Some(shortest)) = (ttl, shortest) {
                    *cell
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(shortest);
                }
                return Ok(items);
            }
        }
    }
    Err(SessionError::Codec {
        method: method.into(),
        detail: format!("more than {MAX_PAGES} pages"),
    })
}
