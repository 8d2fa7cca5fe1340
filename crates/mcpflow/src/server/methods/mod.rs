//! One function per MCP method a server answers, grouped by family as the spec groups
//! them. Each decodes its own params, does its work and returns the reply; the
//! dispatcher only picks the function.

pub(super) mod completion;
pub(super) mod lifecycle;
pub(super) mod logging;
pub(super) mod prompts;
pub(super) mod resources;
pub(super) mod tools;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use mcpflow_protocol::ErrorObject;

use crate::session::Reply;

/// A request's params as they arrived, decoded by the method that reads them.
pub(in crate::server) type Params = Option<Box<RawValue>>;

/// Params a method may omit: absent params mean the defaults.
fn optional<T: for<'a> Deserialize<'a> + Default>(params: &Params) -> Result<T, ErrorObject> {
    match params {
        None => Ok(T::default()),
        Some(raw) => serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params),
    }
}

/// Params a method needs.
pub(in crate::server) fn required<'a, T: Deserialize<'a>>(
    params: &'a Params,
) -> Result<T, ErrorObject> {
    let raw = params
        .as_deref()
        .ok_or_else(|| ErrorObject::invalid_params("missing params"))?;
    serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)
}

pub(in crate::server) fn result<T: Serialize>(value: &T) -> Result<Reply, ErrorObject> {
    Reply::json(value).map_err(ErrorObject::internal)
}

/// The page of `items` that `cursor` (an index this server handed out) starts, at most
/// `size` long, each made by `item`, and the cursor of the next page if there is one.
fn page<E, T>(
    items: &[E],
    cursor: Option<&str>,
    size: usize,
    item: impl Fn(&E) -> T,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= items.len())
            .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor {c:?}")))?,
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].iter().map(item).collect(), next))
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn pages_and_rejects_bad_cursors() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, None, 2, |n| *n).expect("first page");
        assert_eq!((first, next.as_deref()), (vec![0, 1], Some("2")));
        let (last, next) = page(&items, Some("4"), 2, |n| *n).expect("last page");
        assert_eq!((last, next), (vec![4], None));
        assert!(page(&items, Some("x"), 2, |n| *n).is_err());
        assert!(page(&items, Some("9"), 2, |n| *n).is_err());
    }
}
