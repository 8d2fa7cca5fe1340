//! Following `nextCursor` through every page of a list.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use mcpflow_protocol::PaginatedRequestParams;
use serde::Deserializer as _;
use serde::de::{IgnoredAny, MapAccess, Visitor};

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
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut shortest: Option<std::time::Duration> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => PaginatedRequestParams::with_cursor(c.clone()),
            None => PaginatedRequestParams::default(),
        };
        let params = serde_json::value::to_raw_value(&params).map_err(|e| SessionError::Codec {
            method: method.into(),
            detail: format!("params: {e}"),
        })?;
        let result = peer
            .request_raw(method, Some(params), RequestOptions::new())
            .await?;
        let page = Page::read(result.get(), field).map_err(|e| SessionError::Codec {
            method: method.into(),
            detail: format!("unexpected result shape: {e}"),
        })?;
        items.extend(page.items);
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

/// One page of a list, read in one pass: its items (under a field that depends on the
/// list), `nextCursor` and `ttlMs`; other members are skipped.
#[derive(Debug)]
struct Page<T> {
    items: Vec<T>,
    next_cursor: Option<String>,
    ttl_ms: Option<f64>,
}

impl<T: serde::de::DeserializeOwned> Page<T> {
    fn read(json: &str, field: &str) -> serde_json::Result<Page<T>> {
        let mut de = serde_json::Deserializer::from_str(json);
        let page = de.deserialize_map(PageVisitor {
            field,
            items: PhantomData,
        })?;
        de.end()?;
        Ok(page)
    }
}

struct PageVisitor<'f, T> {
    field: &'f str,
    items: PhantomData<T>,
}

impl<'de, T: serde::de::DeserializeOwned> Visitor<'de> for PageVisitor<'_, T> {
    type Value = Page<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a page of `{}`", self.field)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Page<T>, A::Error> {
        let mut page = Page {
            items: Vec::new(),
            next_cursor: None,
            ttl_ms: None,
        };
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "nextCursor" => page.next_cursor = map.next_value()?,
                "ttlMs" => page.ttl_ms = map.next_value()?,
                key if key == self.field => page.items = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // panics are how tests fail

    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Item {
        name: String,
    }

    #[test]
    fn a_page_reads_its_items_cursor_and_ttl_in_any_order_and_skips_the_rest() {
        let json = r#"{"_meta":{"k":[1,{"tools":2}]},"ttlMs":1500,"tools":[{"name":"a","x":{}},{"name":"b"}],"nextCursor":"c2","extra":null}"#;
        let page: Page<Item> = Page::read(json, "tools").unwrap();
        let names: Vec<_> = page.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(page.next_cursor.as_deref(), Some("c2"));
        assert_eq!(page.ttl_ms, Some(1500.0));

        let last: Page<Item> = Page::read(r#"{"nextCursor":null}"#, "tools").unwrap();
        assert!(last.items.is_empty() && last.next_cursor.is_none() && last.ttl_ms.is_none());
    }

    #[test]
    fn a_page_that_does_not_read_says_why() {
        let bad_entry = Page::<Item>::read(r#"{"tools":[{"name":1}]}"#, "tools");
        assert!(bad_entry.unwrap_err().to_string().contains("invalid type"));
        let not_a_page = Page::<Item>::read("[]", "prompts");
        assert!(
            not_a_page
                .unwrap_err()
                .to_string()
                .contains("a page of `prompts`")
        );
        assert!(Page::<Item>::read(r#"{"tools":[]} x"#, "tools").is_err());
    }
}
