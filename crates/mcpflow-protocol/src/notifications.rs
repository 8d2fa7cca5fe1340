//! Params of the protocol's own notifications: progress, cancellation, and the
//! no-field ones (`initialized`, `*/list_changed`).

use serde::{Deserialize, Serialize};

use crate::empty::EmptyParams;
use crate::jsonrpc::RequestId;
use crate::meta::{JsonObject, Meta, ProgressToken};

/// Params of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; must increase with each notification.
    #[serde(serialize_with = "crate::number::f64")]
    pub progress: f64,
    /// Total, when known.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::opt_f64"
    )]
    pub total: Option<f64>,
    /// Human-readable progress message (2025-03-26+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ProgressNotificationParams {
    /// Progress for `token`.
    pub fn new(token: ProgressToken, progress: f64, total: Option<f64>) -> Self {
        ProgressNotificationParams {
            progress_token: token,
            progress,
            total,
            message: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// Sets the message.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Params of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The request to cancel. Optional only in 2025-11-25 (task cancellation goes through
    /// `tasks/cancel`); required in every other version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CancelledNotificationParams {
    /// Cancels `request_id`, with an optional reason.
    pub fn new(request_id: RequestId, reason: Option<String>) -> Self {
        CancelledNotificationParams {
            request_id: Some(request_id),
            reason,
            ..Default::default()
        }
    }
}

/// Params of `notifications/initialized`.
pub type InitializedNotificationParams = EmptyParams;
/// Params of `notifications/tools/list_changed`.
pub type ToolListChangedNotificationParams = EmptyParams;
/// Params of `notifications/prompts/list_changed`.
pub type PromptListChangedNotificationParams = EmptyParams;
/// Params of `notifications/resources/list_changed`.
pub type ResourceListChangedNotificationParams = EmptyParams;
/// Params of `notifications/roots/list_changed`.
pub type RootsListChangedNotificationParams = EmptyParams;
