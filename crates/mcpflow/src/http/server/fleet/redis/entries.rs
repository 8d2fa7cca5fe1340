//! A stream log's entries as Redis stream entries: entry `1-{seq}` for event `seq`.

use std::collections::HashMap;

use bytes::Bytes;
use mcpflow_protocol::RequestId;

use super::corrupt;
use crate::http::server::fleet::{Entries, StoreError, StoredEvent};

/// An entry's fields: `o` (the ids a stream owes, JSON) for its opening; `m` (the
/// message) and `a` (the id it answers, JSON) for a message.
pub(super) fn fields(event: &StoredEvent) -> Result<Vec<(&'static str, Vec<u8>)>, StoreError> {
    Ok(match event {
        StoredEvent::Opened { owes } => vec![("o", serde_json::to_vec(owes).map_err(corrupt)?)],
        StoredEvent::Message { message, answers } => {
            let mut fields = vec![("m", message.to_vec())];
            if let Some(id) = answers {
                fields.push(("a", serde_json::to_vec(id).map_err(corrupt)?));
            }
            fields
        }
    })
}

pub(super) type Entry = (String, HashMap<String, Vec<u8>>);

fn entry(entry: Entry) -> Result<(u64, StoredEvent), StoreError> {
    let (id, mut map) = entry;
    let seq = id
        .strip_prefix("1-")
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| corrupt(format!("stream entry id `{id}`")))?;
    if let Some(owes) = map.remove("o") {
        let owes: Vec<RequestId> = serde_json::from_slice(&owes).map_err(corrupt)?;
        return Ok((seq, StoredEvent::Opened { owes }));
    }
    let message = map
        .remove("m")
        .ok_or_else(|| corrupt(format!("stream entry `{id}` has no message")))?;
    let answers = match map.remove("a") {
        Some(a) => Some(serde_json::from_slice::<RequestId>(&a).map_err(corrupt)?),
        None => None,
    };
    Ok((
        seq,
        StoredEvent::Message {
            message: Bytes::from(message),
            answers,
        },
    ))
}

/// Entries read after `after`: `None` when some between were dropped from the log.
pub(super) fn contiguous(
    entries: Vec<Entry>,
    after: Option<u64>,
) -> Result<Option<Entries>, StoreError> {
    let entries: Vec<(u64, StoredEvent)> =
        entries.into_iter().map(entry).collect::<Result<_, _>>()?;
    let first = after.map_or(0, |a| a + 1);
    match entries.first() {
        Some((seq, _)) if *seq != first => Ok(None),
        None if after.is_none() => Ok(None),
        _ => Ok(Some(entries)),
    }
}
