//! Every official 2026-07-28 example reads into its type and writes back unchanged; an
//! example whose type this crate does not model fails the test. Skips when the shared
//! spec folder is absent.

use std::path::PathBuf;

use mcpflow_protocol::content::{TextContent, ToolResultContent, ToolUseContent};
use mcpflow_protocol::elicitation_schema::PrimitiveSchema;
use mcpflow_protocol::jsonrpc::{
    MissingRequiredClientCapabilityData, UnsupportedProtocolVersionData,
};
use mcpflow_protocol::methods::*;
use mcpflow_protocol::resources::{BlobResourceContents, TextResourceContents};
use mcpflow_protocol::sampling::ModelPreferences;
use mcpflow_protocol::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn examples_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/spec/2026-07-28/examples"
    ))
}

fn round_trip<T: Serialize + DeserializeOwned>(input: &Value) -> Result<(), String> {
    let parsed: T = serde_json::from_value(input.clone()).map_err(|e| format!("rejected: {e}"))?;
    let output = serde_json::to_value(&parsed).map_err(|e| format!("serialize: {e}"))?;
    if &output == input {
        Ok(())
    } else {
        Err(format!("changed to {output:#}"))
    }
}

/// Params of a request or notification envelope, by method name.
fn params_by_method(method: &str, params: &Value) -> Option<Result<(), String>> {
    fn req<M: RequestMethod>(p: &Value) -> Result<(), String> {
        round_trip::<M::Params>(p)
    }
    fn note<M: NotificationMethod>(p: &Value) -> Result<(), String> {
        round_trip::<M::Params>(p)
    }
    if let Some(meta) = params.get("_meta")
        && meta
            .get("io.modelcontextprotocol/protocolVersion")
            .is_some()
    {
        let typed: RequestMeta = match serde_json::from_value(meta.clone()) {
            Ok(m) => m,
            Err(e) => return Some(Err(format!("request _meta rejected: {e}"))),
        };
        if !typed.is_per_request() {
            return Some(Err("request _meta lacks a required key".into()));
        }
        if let Err(e) = round_trip::<RequestMeta>(meta) {
            return Some(Err(format!("request _meta: {e}")));
        }
    }
    Some(match method {
        m if m == Discover::METHOD => req::<Discover>(params),
        m if m == SubscriptionsListen::METHOD => req::<SubscriptionsListen>(params),
        m if m == SubscriptionsAcknowledged::METHOD => note::<SubscriptionsAcknowledged>(params),
        m if m == CallTool::METHOD => req::<CallTool>(params),
        m if m == ListTools::METHOD => req::<ListTools>(params),
        m if m == ListPrompts::METHOD => req::<ListPrompts>(params),
        m if m == ListResources::METHOD => req::<ListResources>(params),
        m if m == ListResourceTemplates::METHOD => req::<ListResourceTemplates>(params),
        m if m == ReadResource::METHOD => req::<ReadResource>(params),
        m if m == GetPrompt::METHOD => req::<GetPrompt>(params),
        m if m == Complete::METHOD => req::<Complete>(params),
        m if m == CreateMessage::METHOD => req::<CreateMessage>(params),
        m if m == Elicit::METHOD => req::<Elicit>(params),
        m if m == ListRoots::METHOD => req::<ListRoots>(params),
        m if m == Progress::METHOD => note::<Progress>(params),
        m if m == Cancelled::METHOD => note::<Cancelled>(params),
        m if m == LoggingMessage::METHOD => note::<LoggingMessage>(params),
        m if m == ToolListChanged::METHOD => note::<ToolListChanged>(params),
        m if m == PromptListChanged::METHOD => note::<PromptListChanged>(params),
        m if m == ResourceListChanged::METHOD => note::<ResourceListChanged>(params),
        m if m == ResourceUpdated::METHOD => note::<ResourceUpdated>(params),
        _ => return None,
    })
}

/// Round-trips one example of type `name`; `None` when the type is not modelled here.
fn check(name: &str, v: &Value) -> Option<Result<(), String>> {
    Some(match name {
        "Tool" => round_trip::<Tool>(v),
        "CallToolRequestParams" => round_trip::<CallToolRequestParams>(v),
        "CallToolResult" => round_trip::<CallToolResult>(v),
        "TextContent" | "ImageContent" | "AudioContent" | "ResourceLink" | "EmbeddedResource"
        | "ToolUseContent" | "ToolResultContent" => {
            let block: ContentBlock = match serde_json::from_value(v.clone()) {
                Ok(b) => b,
                Err(e) => return Some(Err(format!("rejected: {e}"))),
            };
            if matches!(block, ContentBlock::Unknown(_)) {
                return Some(Err("read as an unknown content block".into()));
            }
            round_trip::<ContentBlock>(v).and_then(|()| {
                let mut inner = v.clone();
                inner.as_object_mut().map(|o| o.remove("type"));
                match name {
                    "TextContent" => round_trip::<TextContent>(&inner),
                    "ToolUseContent" => round_trip::<ToolUseContent>(&inner),
                    "ToolResultContent" => round_trip::<ToolResultContent>(&inner),
                    _ => Ok(()),
                }
            })
        }
        "TextResourceContents" => {
            round_trip::<TextResourceContents>(v).and_then(|()| round_trip::<ResourceContents>(v))
        }
        "BlobResourceContents" => {
            round_trip::<BlobResourceContents>(v).and_then(|()| round_trip::<ResourceContents>(v))
        }
        "Resource" => round_trip::<Resource>(v),
        "Root" => round_trip::<Root>(v),
        "ListRootsResult" => round_trip::<ListRootsResult>(v),
        "ProgressNotificationParams" => round_trip::<ProgressNotificationParams>(v),
        "CancelledNotificationParams" => round_trip::<CancelledNotificationParams>(v),
        "LoggingMessageNotificationParams" => round_trip::<LoggingMessageNotificationParams>(v),
        "ResourceUpdatedNotificationParams" => round_trip::<ResourceUpdatedNotificationParams>(v),
        "CompleteRequestParams" => round_trip::<CompleteRequestParams>(v),
        "CompleteResult" => round_trip::<CompleteResult>(v),
        "CreateMessageRequestParams" => round_trip::<CreateMessageRequestParams>(v),
        "CreateMessageResult" => round_trip::<CreateMessageResult>(v),
        "SamplingMessage" => round_trip::<SamplingMessage>(v),
        "ModelPreferences" => round_trip::<ModelPreferences>(v),
        "ElicitRequestFormParams" | "ElicitRequestURLParams" => {
            round_trip::<ElicitRequestParams>(v)
        }
        "ElicitResult" => round_trip::<ElicitResult>(v),
        "GetPromptRequestParams" => round_trip::<GetPromptRequestParams>(v),
        "GetPromptResult" => round_trip::<GetPromptResult>(v),
        "ListPromptsResult" => round_trip::<ListPromptsResult>(v),
        "ListResourcesResult" => round_trip::<ListResourcesResult>(v),
        "ListResourceTemplatesResult" => round_trip::<ListResourceTemplatesResult>(v),
        "ListToolsResult" => round_trip::<ListToolsResult>(v),
        "ReadResourceResult" => round_trip::<ReadResourceResult>(v),
        "PaginatedRequestParams" => round_trip::<PaginatedRequestParams>(v),
        "ClientCapabilities" => round_trip::<ClientCapabilities>(v),
        "DiscoverResult" => round_trip::<DiscoverResult>(v).and_then(|()| result_meta(v)),
        "SubscriptionsListenResult" => {
            round_trip::<SubscriptionsListenResult>(v).and_then(|()| result_meta(v))
        }
        "InputRequiredResult" => round_trip::<InputRequiredResult>(v)
            .and_then(|()| round_trip::<MaybeInputRequired<CallToolResult>>(v)),
        "InputRequests" => round_trip::<InputRequests>(v).and_then(|()| {
            let reqs: InputRequests =
                serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            match reqs
                .values()
                .find(|r| matches!(r, InputRequest::Other { .. }))
            {
                Some(r) => Err(format!("{} read as an unknown input request", r.method())),
                None => Ok(()),
            }
        }),
        "InputResponses" => round_trip::<InputResponses>(v).and_then(|()| {
            let resps: InputResponses =
                serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            match resps.values().any(|r| matches!(r, InputResponse::Other(_))) {
                true => Err("an input response read as unknown".into()),
                false => Ok(()),
            }
        }),
        "BooleanSchema"
        | "NumberSchema"
        | "StringSchema"
        | "UntitledSingleSelectEnumSchema"
        | "TitledSingleSelectEnumSchema"
        | "UntitledMultiSelectEnumSchema"
        | "TitledMultiSelectEnumSchema" => round_trip::<PrimitiveSchema>(v).and_then(|()| {
            let schema: PrimitiveSchema =
                serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            let kind_ok = match name {
                "BooleanSchema" => matches!(schema, PrimitiveSchema::Boolean(_)),
                "NumberSchema" => matches!(schema, PrimitiveSchema::Number(_)),
                "StringSchema" => matches!(schema, PrimitiveSchema::String(_)),
                "UntitledSingleSelectEnumSchema" => {
                    matches!(schema, PrimitiveSchema::SingleSelect(_))
                }
                "TitledSingleSelectEnumSchema" => {
                    matches!(schema, PrimitiveSchema::TitledSingleSelect(_))
                }
                "UntitledMultiSelectEnumSchema" => {
                    matches!(schema, PrimitiveSchema::MultiSelect(_))
                }
                _ => matches!(schema, PrimitiveSchema::TitledMultiSelect(_)),
            };
            if kind_ok {
                Ok(())
            } else {
                Err(format!("read as {schema:?}"))
            }
        }),
        "InternalError" | "InvalidParamsError" | "MethodNotFoundError" | "ParseError" => {
            round_trip::<ErrorObject>(v)
        }
        "HeaderMismatchError"
        | "MissingRequiredClientCapabilityError"
        | "UnsupportedProtocolVersionError" => envelope_round_trip(v).and_then(|()| {
            let error = v.get("error").cloned().unwrap_or_default();
            round_trip::<ErrorObject>(&error)?;
            let data = error.get("data").cloned().unwrap_or_default();
            match name {
                "MissingRequiredClientCapabilityError" => {
                    round_trip::<MissingRequiredClientCapabilityData>(&data)
                }
                "UnsupportedProtocolVersionError" => {
                    round_trip::<UnsupportedProtocolVersionData>(&data)
                }
                _ => Ok(()),
            }
        }),
        "ServerCapabilities" => round_trip::<ServerCapabilities>(v),
        envelope if envelope.ends_with("ResultResponse") => {
            let result = v.get("result")?;
            if let Err(e) = envelope_round_trip(v) {
                return Some(Err(format!("envelope: {e}")));
            }
            if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
                return check("InputRequiredResult", result);
            }
            return check(envelope.trim_end_matches("Response"), result);
        }
        envelope if envelope.ends_with("Request") || envelope.ends_with("Notification") => {
            let method = v.get("method")?.as_str()?;
            let params = v.get("params").cloned().unwrap_or(Value::Null);
            if params.is_null() {
                // Absent params must read as the empty/default params.
                return params_by_method(method, &params).map(|r| {
                    r.or_else(|e| {
                        if e.starts_with("changed") {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    })
                });
            }
            return params_by_method(method, &params);
        }
        _ => return None,
    })
}

/// A whole JSON-RPC message through the crate's decoder and writer.
fn envelope_round_trip(v: &Value) -> Result<(), String> {
    let bytes = serde_json::to_vec(v).map_err(|e| e.to_string())?;
    let message = mcpflow_protocol::jsonrpc::decode_message(&bytes)
        .map_err(|e| format!("envelope rejected: {e}"))?;
    let output: Value = serde_json::from_str(&message.to_json_string())
        .map_err(|e| format!("written message is not JSON: {e}"))?;
    if &output == v {
        Ok(())
    } else {
        Err(format!("envelope changed to {output:#}"))
    }
}

/// A result `_meta`, when present, reads as [`ResultMeta`] and writes back unchanged.
fn result_meta(v: &Value) -> Result<(), String> {
    match v.get("_meta") {
        Some(meta) => round_trip::<ResultMeta>(meta).map_err(|e| format!("result _meta: {e}")),
        None => Ok(()),
    }
}

#[test]
fn official_2026_examples_round_trip() {
    let dir = examples_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "skipping: ../shared/spec not found (looked in {})",
            dir.display()
        );
        return;
    };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    let (mut passed, mut failures) = (0, Vec::new());
    for type_dir in dirs.iter().filter(|p| p.is_dir()) {
        let name = type_dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let mut files: Vec<PathBuf> = std::fs::read_dir(type_dir)
            .expect("example folder is readable")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "json"))
        {
            let text = std::fs::read_to_string(file).expect("example is readable");
            let value: Value = serde_json::from_str(&text).expect("example is JSON");
            match check(name, &value) {
                Some(Ok(())) => passed += 1,
                Some(Err(e)) => failures.push(format!("{}: {e}", file.display())),
                None => failures.push(format!("{}: not modelled", file.display())),
            }
        }
    }
    eprintln!("2026-07-28 examples: {passed} round-tripped");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(passed >= 129, "only {passed} examples were checked");
}
