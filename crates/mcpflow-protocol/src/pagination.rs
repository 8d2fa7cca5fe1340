//! Cursor-based pagination of the `*/list` methods.

use serde::{Deserialize, Deserializer, Serialize};

use crate::meta::{JsonObject, Meta};

/// An opaque page cursor. Clients must not parse or persist it.
pub type Cursor = String;

/// Params of the paginated list methods (`tools/list`, `prompts/list`, ...).
///
/// Absent or `null` params deserialize as the default (first page).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedRequestParams {
    /// Cursor from the previous page's `nextCursor`; absent for the first page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl PaginatedRequestParams {
    /// Params asking for the page after `cursor`.
    pub fn with_cursor(cursor: impl Into<Cursor>) -> Self {
        PaginatedRequestParams {
            cursor: Some(cursor.into()),
            ..Default::default()
        }
    }
}

impl<'de> Deserialize<'de> for PaginatedRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            cursor: Option<Cursor>,
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
            #[serde(flatten)]
            extra: JsonObject,
        }
        Ok(Option::<Raw>::deserialize(deserializer)?
            .map(|r| PaginatedRequestParams {
                cursor: r.cursor,
                meta: r.meta,
                extra: r.extra,
            })
            .unwrap_or_default())
    }
}
