//! Read JSON, write it back: the value must not change, unknown fields included.

use mcpflow_protocol::methods::{NotificationMethod, RequestMethod};
use mcpflow_protocol::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

#[track_caller]
fn round_trip<T: Serialize + DeserializeOwned>(input: Value) -> T {
    let parsed: T = serde_json::from_value(input.clone())
        .unwrap_or_else(|e| panic!("{} rejected {input:#}: {e}", std::any::type_name::<T>()));
    let output = serde_json::to_value(&parsed).expect("serializes");
    assert_eq!(
        output,
        input,
        "{} changed the value",
        std::any::type_name::<T>()
    );
    parsed
}

#[track_caller]
fn request_params<M: RequestMethod>(input: Value) -> M::Params {
    round_trip::<M::Params>(input)
}

#[track_caller]
fn request_result<M: RequestMethod>(input: Value) -> M::Result {
    round_trip::<M::Result>(input)
}

#[track_caller]
fn notification_params<M: NotificationMethod>(input: Value) -> M::Params {
    round_trip::<M::Params>(input)
}

#[test]
fn unknown_fields_and_vendor_meta_survive() {
    let tool = round_trip::<Tool>(json!({
        "name": "search",
        "inputSchema": {"type": "object", "$defs": {"q": {"type": "string"}},
                        "properties": {"q": {"$ref": "#/$defs/q"}}, "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "x-vendor-hint": 3},
        "_meta": {"com.example/owner": "search-team", "io.modelcontextprotocol/ui": {"a": 1}},
        "x-future-field": [1, 2, 3]
    }));
    assert_eq!(tool.extra["x-future-field"], json!([1, 2, 3]));
    assert_eq!(
        tool.annotations.expect("annotations").extra["x-vendor-hint"],
        json!(3)
    );

    let result = request_result::<methods::CallTool>(json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": "ok", "_meta": {"com.example/lang": "en"}}],
        "structuredContent": [1, "two", {"three": 3}],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    }));
    assert_eq!(result.result_type, Some(ResultType::Complete));
    assert!(!result.extra.contains_key("resultType"));
    assert_eq!(
        result.structured_content,
        Some(json!([1, "two", {"three": 3}]))
    );

    round_trip::<Implementation>(json!({"name": "c", "version": "1", "x-build": "abc"}));
    round_trip::<ServerCapabilities>(json!({
        "tools": {"listChanged": true, "x-paged": true},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
        "x-custom": {}
    }));
    round_trip::<ClientCapabilities>(json!({
        "roots": {"listChanged": true},
        "elicitation": {},
        "tasks": {"requests": {"elicitation": {"create": {}}}}
    }));
    round_trip::<Resource>(json!({"uri": "file:///a", "name": "a", "size": 12, "x-etag": "e"}));
    round_trip::<ResourceTemplate>(json!({"uriTemplate": "db://{table}", "name": "t", "x": 1}));
    round_trip::<Prompt>(
        json!({"name": "p", "arguments": [{"name": "a", "required": true}], "x": null}),
    );
}

#[test]
fn every_content_kind_including_unknown() {
    let result = request_result::<methods::CallTool>(json!({
        "content": [
            {"type": "text", "text": "t", "annotations": {"audience": ["user"], "priority": 0.7,
                                                         "lastModified": "2025-01-01T00:00:00Z"}},
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///r", "name": "r", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "file:///t", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "image/png", "blob": "AA=="}},
            {"type": "hologram", "frames": 3, "data": {"x": [1.5, 2]}},
            {"no_type_at_all": true}
        ],
        "isError": false
    }));
    let kinds: Vec<&str> = result.content.iter().map(ContentBlock::kind).collect();
    assert_eq!(
        kinds,
        [
            "text",
            "image",
            "audio",
            "resource_link",
            "resource",
            "resource",
            "hologram",
            ""
        ]
    );
    assert!(matches!(result.content[6], ContentBlock::Unknown(_)));
}

#[test]
fn progress_tokens_string_and_integer() {
    let p = request_params::<methods::CallTool>(json!({
        "name": "slow",
        "arguments": {"n": 1},
        "_meta": {"progressToken": "abc", "com.example/trace": "t-1"}
    }));
    assert_eq!(
        meta::progress_token_of(p.meta.as_ref()),
        Some(ProgressToken::from("abc"))
    );
    let p = request_params::<methods::ListTools>(json!({"_meta": {"progressToken": 7}}));
    assert_eq!(
        meta::progress_token_of(p.meta.as_ref()),
        Some(ProgressToken::Integer(7))
    );

    let n = notification_params::<methods::Progress>(
        json!({"progressToken": "abc", "progress": 50, "total": 100, "message": "half"}),
    );
    assert_eq!(n.progress, 50.0);
    notification_params::<methods::Progress>(json!({"progressToken": 9, "progress": 0.25}));
}

#[test]
fn bool_float_and_null_progress_tokens_are_rejected() {
    for token in [json!(true), json!(false), json!(1.5), json!(null)] {
        let input = json!({"progressToken": token, "progress": 1});
        assert!(
            serde_json::from_value::<ProgressNotificationParams>(input).is_err(),
            "accepted token {token}"
        );
    }
}

#[test]
fn empty_params_and_results() {
    notification_params::<methods::Initialized>(json!({}));
    notification_params::<methods::ToolListChanged>(json!({"_meta": {"k": "v"}}));
    request_params::<methods::Ping>(json!({}));
    let absent: EmptyParams = serde_json::from_value(Value::Null).expect("absent params");
    assert_eq!(absent, EmptyParams::default());
    let absent: PaginatedRequestParams = serde_json::from_value(Value::Null).expect("absent");
    assert_eq!(absent.cursor, None);
    request_result::<methods::Ping>(json!({}));
    request_result::<methods::Subscribe>(json!({"_meta": {"com.example/x": 1}}));
    request_params::<methods::ListPrompts>(json!({"cursor": "c2"}));
}

#[test]
fn handshake_messages() {
    let init = request_params::<methods::Initialize>(json!({
        "protocolVersion": "2099-01-01",
        "capabilities": {"sampling": {"tools": {}}, "experimental": {"x": {}}},
        "clientInfo": {"name": "c", "title": "C", "version": "1", "websiteUrl": "https://c.example",
                       "icons": [{"src": "https://c.example/i.png", "sizes": ["any"], "theme": "dark"}]}
    }));
    assert!(!init.protocol_version.is_known());
    request_result::<methods::Initialize>(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"logging": {}, "completions": {}, "resources": {"subscribe": true}},
        "serverInfo": {"name": "s", "version": "2"},
        "instructions": "hi"
    }));
}

#[test]
fn other_methods() {
    request_result::<methods::ReadResource>(json!({"contents": [
        {"uri": "a://1", "text": "x", "_meta": {"k": 1}},
        {"uri": "a://2", "blob": "AA==", "mimeType": "application/pdf"}
    ]}));
    assert!(
        serde_json::from_value::<ReadResourceResult>(json!({"contents": [{"uri": "a"}]})).is_err()
    );
    request_result::<methods::GetPrompt>(json!({"messages": [
        {"role": "user", "content": {"type": "text", "text": "hi"}},
        {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "a://1", "text": "x"}}}
    ]}));
    request_params::<methods::GetPrompt>(json!({"name": "p", "arguments": {"a": "1", "b": "2"}}));
    request_params::<methods::Complete>(json!({
        "ref": {"type": "ref/resource", "uri": "db://{t}"},
        "argument": {"name": "t", "value": "us"},
        "context": {"arguments": {"db": "main"}}
    }));
    request_result::<methods::Complete>(
        json!({"completion": {"values": ["users"], "total": 1, "hasMore": false}}),
    );
    request_params::<methods::SetLevel>(json!({"level": "emergency"}));
    notification_params::<methods::LoggingMessage>(
        json!({"level": "debug", "data": "plain string"}),
    );
    notification_params::<methods::Cancelled>(json!({"requestId": 3, "reason": "timeout"}));
    notification_params::<methods::Cancelled>(json!({"requestId": "r-1"}));
    notification_params::<methods::Cancelled>(json!({"reason": "task-only (2025-11-25)"}));
    notification_params::<methods::ResourceUpdated>(json!({"uri": "file:///a"}));
    notification_params::<methods::ElicitationComplete>(json!({"elicitationId": "e1"}));
    request_result::<methods::ListRoots>(
        json!({"roots": [{"uri": "file:///p", "name": "P", "_meta": {"k": 1}}]}),
    );
    request_params::<methods::CreateMessage>(json!({
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]}],
        "maxTokens": 10, "temperature": 0.2, "includeContext": "allServers",
        "toolChoice": {"mode": "required"}, "task": {"ttl": 1000}
    }));
    request_result::<methods::CreateMessage>(json!({
        "role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m", "stopReason": "vendorReason"
    }));
    request_params::<methods::Elicit>(
        json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}}),
    );
    request_params::<methods::Elicit>(
        json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}),
    );
    request_result::<methods::Elicit>(
        json!({"action": "accept", "content": {"tags": ["a", "b"], "n": 1}}),
    );
    request_result::<methods::GetTask>(json!({
        "taskId": "t", "status": "input_required", "createdAt": "2025-11-25T00:00:00Z",
        "lastUpdatedAt": "2025-11-25T00:00:01Z", "ttl": null
    }));
}
