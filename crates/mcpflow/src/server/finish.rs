//! Results as an era finishes them. The handshake era sends a method's result as it is;
//! the per-request era (2026-07-28) sets `resultType`, the cache hints (`ttlMs`,
//! `cacheScope`) of a cacheable method and `_meta.serverInfo` in the result's typed
//! fields, each only where the method left it unset. The result is then written once,
//! by its own encoder.

use mcpflow_protocol::meta2026::{CacheScope, ResultType, SERVER_INFO_KEY};
use mcpflow_protocol::prompts::{GetPromptResult, ListPromptsResult};
use mcpflow_protocol::resources::{ListResourceTemplatesResult, ListResourcesResult};
use mcpflow_protocol::subscriptions::SubscriptionsListenResult;
use mcpflow_protocol::tasks::{ListTasksResult, Task};
use mcpflow_protocol::tasks2026::{CreateTaskResult, DetailedTask};
use mcpflow_protocol::{
    CallToolResult, CompleteResult, DiscoverResult, EmptyResult, ErrorObject, InitializeResult,
    InputRequiredResult, ListToolsResult, Meta, ReadResourceResult,
};
use serde::Serialize;
use serde_json::Value;

use super::CacheHints;
use crate::session::Reply;

/// What a per-request result gets.
pub(crate) struct Finishing<'a> {
    /// The cache hints, for a cacheable method's complete result.
    pub(crate) cache: Option<CacheHints>,
    /// `_meta.serverInfo`, when the server has one.
    pub(crate) server_info: Option<&'a Value>,
}

impl Finishing<'_> {
    fn meta(&self, meta: &mut Option<Meta>) {
        if let Some(info) = self.server_info {
            meta.get_or_insert_default()
                .entry(SERVER_INFO_KEY)
                .or_insert_with(|| info.clone());
        }
    }

    /// `resultType`, and the cache hints when the result is complete.
    fn fields(
        &self,
        result_type: &mut Option<ResultType>,
        ttl_ms: &mut Option<u64>,
        cache_scope: &mut Option<CacheScope>,
    ) {
        let result_type = result_type.get_or_insert(ResultType::Complete);
        if let (Some(hints), ResultType::Complete) = (self.cache, result_type) {
            ttl_ms.get_or_insert(hints.ttl_ms);
            cache_scope.get_or_insert(if hints.private {
                CacheScope::Private
            } else {
                CacheScope::Public
            });
        }
    }
}

/// A method's typed result.
pub(crate) trait Finish: Serialize + Sized {
    /// Set the per-request fields this result has.
    fn finish(&mut self, how: &Finishing<'_>);

    /// The reply carrying it.
    fn into_reply(self) -> Result<Reply, ErrorObject> {
        Reply::json(&self).map_err(ErrorObject::internal)
    }
}

/// Results with `resultType`, the cache hints and `_meta`.
macro_rules! cacheable {
    ($($result:ty),*) => {$(
        impl Finish for $result {
            fn finish(&mut self, how: &Finishing<'_>) {
                how.fields(&mut self.result_type, &mut self.ttl_ms, &mut self.cache_scope);
                how.meta(&mut self.meta);
            }
        }
    )*};
}

cacheable!(
    DiscoverResult,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult
);

/// Results with `resultType` and `_meta`.
macro_rules! typed {
    ($($result:ty),*) => {$(
        impl Finish for $result {
            fn finish(&mut self, how: &Finishing<'_>) {
                self.result_type.get_or_insert(ResultType::Complete);
                how.meta(&mut self.meta);
            }
        }
    )*};
}

typed!(
    GetPromptResult,
    CompleteResult,
    EmptyResult,
    SubscriptionsListenResult
);

/// Results of the handshake era only: sent as they are.
macro_rules! handshake_only {
    ($($result:ty),*) => {$(
        impl Finish for $result {
            fn finish(&mut self, _: &Finishing<'_>) {}
        }
    )*};
}

handshake_only!(
    InitializeResult,
    ListTasksResult,
    Task,
    mcpflow_protocol::tasks::CreateTaskResult
);

impl Finish for CallToolResult {
    fn finish(&mut self, how: &Finishing<'_>) {
        self.result_type.get_or_insert(ResultType::Complete);
        how.meta(&mut self.meta);
    }

    /// Written by the result's own writer; a large one consuming it (one text block is
    /// escaped inside its own buffer), so its peak is not twice its size.
    fn into_reply(self) -> Result<Reply, ErrorObject> {
        let len = self.payload_len();
        if len < crate::config::LARGE_MESSAGE_BYTES {
            return Reply::written(len + 64, |out| self.write_json(out))
                .map_err(ErrorObject::internal);
        }
        let out = self.into_json().map_err(ErrorObject::internal)?;
        let text = String::from_utf8(out).map_err(ErrorObject::internal)?;
        serde_json::value::RawValue::from_string(text)
            .map(Reply::from)
            .map_err(ErrorObject::internal)
    }
}

impl Finish for ReadResourceResult {
    fn finish(&mut self, how: &Finishing<'_>) {
        how.fields(
            &mut self.result_type,
            &mut self.ttl_ms,
            &mut self.cache_scope,
        );
        how.meta(&mut self.meta);
    }

    /// As raw JSON: contents may run to megabytes, and a large result then goes out after
    /// its response's head, its buffer taken by transports that keep whole messages.
    fn into_reply(self) -> Result<Reply, ErrorObject> {
        serde_json::value::to_raw_value(&self)
            .map(Reply::from)
            .map_err(ErrorObject::internal)
    }
}

impl Finish for InputRequiredResult {
    fn finish(&mut self, how: &Finishing<'_>) {
        how.meta(&mut self.meta);
    }
}

impl Finish for CreateTaskResult {
    fn finish(&mut self, how: &Finishing<'_>) {
        how.meta(&mut self.task.meta);
    }
}

impl Finish for DetailedTask {
    fn finish(&mut self, how: &Finishing<'_>) {
        self.result_type.get_or_insert(ResultType::Complete);
        how.meta(&mut self.task.meta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn finished<R: Finish>(mut result: R, cache: Option<CacheHints>) -> Value {
        let info = json!({"name": "s", "version": "1"});
        result.finish(&Finishing {
            cache,
            server_info: Some(&info),
        });
        let reply = result.into_reply().expect("reply");
        serde_json::from_str(reply.get()).expect("JSON")
    }

    #[test]
    fn per_request_fields_are_set_where_the_method_left_them_unset() {
        let hints = CacheHints {
            ttl_ms: 5,
            private: false,
        };
        assert_eq!(
            finished(ListToolsResult::new(vec![]), Some(hints)),
            json!({"tools": [], "resultType": "complete", "ttlMs": 5, "cacheScope": "public",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}})
        );
        let mut own = ListToolsResult::new(vec![]);
        own.ttl_ms = Some(1);
        own.meta = Some(
            json!({"io.modelcontextprotocol/serverInfo": 1, "k": 2})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        let own = finished(own, Some(hints));
        assert_eq!(
            (&own["ttlMs"], &own["_meta"]),
            (
                &json!(1),
                &json!({"io.modelcontextprotocol/serverInfo": 1, "k": 2})
            )
        );
        let call = finished(CallToolResult::text("hi"), None);
        assert_eq!(call["resultType"], "complete");
        assert_eq!(call["content"][0]["text"], "hi");
        assert_eq!(
            finished(EmptyResult::default(), None)["resultType"],
            "complete"
        );
        let asked = finished(
            InputRequiredResult::new(Default::default(), None),
            Some(hints),
        );
        assert_eq!(asked["resultType"], "input_required");
        assert!(asked.get("ttlMs").is_none(), "{asked}");
    }
}
