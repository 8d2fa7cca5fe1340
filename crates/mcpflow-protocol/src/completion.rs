//! Argument completion: `completion/complete`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::meta::{JsonObject, Meta};
use crate::meta2026::ResultType;

/// Params of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteRequestParams {
    /// What is being completed: a prompt or a resource template.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument being completed.
    pub argument: CompletionArgument,
    /// Already-resolved arguments (2025-06-18+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CompleteRequestParams {
    /// Params completing argument `name` (typed so far: `value`) of `reference`.
    pub fn new(
        reference: CompletionReference,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        CompleteRequestParams {
            reference,
            argument: CompletionArgument {
                name: name.into(),
                value: value.into(),
            },
            context: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// What a completion is for, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionReference {
    /// `ref/prompt`: an argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `ref/resource`: a variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource(ResourceTemplateReference),
}

impl CompletionReference {
    /// A prompt reference.
    pub fn prompt(name: impl Into<String>) -> Self {
        CompletionReference::Prompt(PromptReference {
            name: name.into(),
            ..Default::default()
        })
    }

    /// A resource template reference.
    pub fn resource(uri: impl Into<String>) -> Self {
        CompletionReference::Resource(ResourceTemplateReference {
            uri: uri.into(),
            ..Default::default()
        })
    }
}

/// Reference to a prompt.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptReference {
    /// Prompt name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Reference to a resource template (`ResourceReference` before 2025-06-18).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplateReference {
    /// The URI template.
    pub uri: String,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Argument name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
}

/// Context for a completion (2025-06-18+).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Arguments already resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// Result of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `resultType` (2026-07-28): `complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CompleteResult {
    /// A result with these values (at most 100 should be sent).
    pub fn new(values: Vec<String>) -> Self {
        CompleteResult {
            completion: Completion {
                values,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

/// Completion suggestions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values, at most 100.
    pub values: Vec<String>,
    /// Total number of matches, which may exceed `values.len()`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// More matches exist beyond `values`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}
