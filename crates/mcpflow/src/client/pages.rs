//! Following `nextCursor` through every page of a list.

use std::sync::Arc;

use mcpflow_protocol::PaginatedRequestParams;

use super::MAX_PAGES;
use super::cache;
use crate::error::SessionError;
use crate::session::{Peer, RequestOptions};

pub(super) fn all_pages_fetch<T>(
    peer: &Peer,
    method: &'static str,
    field: &'static str,
) -> cache::Fetch<T>
where
    T: serde::de::DeserializeOwned + Send + 'static,
{
    let peer = peer.clone();
    Arc::new(move || {
        let peer = peer.clone();
        Box::pin(async move { all_pages(&peer, method, field).await })
    })
}

pub(super) async fn all_pages<T: serde::de::DeserializeOwned>(
    peer: &Peer,
    method: &str,
    field: &str,
) -> Result<Vec<T>, SessionError> {
    #[derive(serde::Deserialize)]
    struct Page {
        #[serde(rename = "nextCursor")]
        next_cursor: Option<String>,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
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
        match page.next_cursor {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            Some(_) => {
                return Err(SessionError::Codec {
                    method: method.into(),
                    detail: "the server returned the same cursor twice".to_owned(),
                });
            }
            None => return Ok(items),
        }
    }
    Err(SessionError::Codec {
        method: method.into(),
        detail: format!("more than {MAX_PAGES} pages"),
    })
}
