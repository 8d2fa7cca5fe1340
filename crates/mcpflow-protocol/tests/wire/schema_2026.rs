//! Messages built from the 2026-07-28 types validate against that version's official
//! `schema.json` (the handshake versions are checked in `schema.rs`).
//!
//! The schema lives in the shared spec folder next to the repository; without it the
//! test prints `skipping: ../shared/spec not found` and passes.

use std::path::PathBuf;

use mcpflow_protocol::capabilities::{ElicitationCapability, ToolsCapability};
use mcpflow_protocol::elicitation_schema::{
    BooleanSchema, MultiSelectEnumSchema, NumberSchema, PrimitiveSchema, SchemaText, StringSchema,
    TitledOption, TitledSingleSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
use mcpflow_protocol::meta2026::set_subscription_id;
use mcpflow_protocol::methods::*;
use mcpflow_protocol::*;
use serde::Serialize;
use serde_json::{Value, json};

fn schema_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/spec/2026-07-28/schema.json"
    ))
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("expected an object, got {other}"),
    }
}

fn to_value(v: &impl Serialize) -> Value {
    serde_json::to_value(v).expect("our types serialize")
}

struct Spec {
    validators: jsonschema::ValidatorMap,
    checked: usize,
}

impl Spec {
    fn check(&mut self, def: &str, instance: &Value) {
        let pointer = format!("#/$defs/{def}");
        let validator = self
            .validators
            .get(&pointer)
            .unwrap_or_else(|| panic!("no definition {def}"));
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{instance:#} is not a valid {def}:\n{}",
            errors.join("\n")
        );
        self.checked += 1;
    }

    fn rejects(&self, def: &str, instance: &Value) {
        let validator = self
            .validators
            .get(&format!("#/$defs/{def}"))
            .expect("definition exists");
        assert!(!validator.is_valid(instance), "{def} accepted {instance}");
    }

    fn request<M: RequestMethod>(&mut self, def: &str, id: &str, params: &M::Params) {
        let msg =
            json!({"jsonrpc": "2.0", "id": id, "method": M::METHOD, "params": to_value(params)});
        self.check("JSONRPCRequest", &msg);
        self.check(def, &msg);
    }

    fn result(&mut self, def: &str, id: &str, result: &impl Serialize) {
        let result = to_value(result);
        self.check(def, &result);
        self.check(
            "JSONRPCResultResponse",
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
    }

    fn notification<M: NotificationMethod>(&mut self, def: &str, params: &M::Params) {
        let msg = json!({"jsonrpc": "2.0", "method": M::METHOD, "params": to_value(params)});
        self.check("JSONRPCNotification", &msg);
        self.check(def, &msg);
    }

    fn error(&mut self, def: &str, error: ErrorObject) {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "error": to_value(&error)});
        self.check("JSONRPCErrorResponse", &msg);
        self.check(def, &msg);
    }
}

fn request_meta() -> Meta {
    let caps = ClientCapabilities {
        elicitation: Some(ElicitationCapability::default()),
        ..Default::default()
    };
    RequestMeta::new(ProtocolVersion::V2026_07_28, caps)
        .with_client_info(Implementation::new("client", "1.0.0"))
        .with_log_level(LoggingLevel::Info)
        .to_meta()
}

fn server_meta() -> Meta {
    ResultMeta {
        server_info: Some(Implementation::new("server", "1.0.0")),
        ..Default::default()
    }
    .to_meta()
}

fn discover_and_lists(spec: &mut Spec) {
    spec.check("RequestMetaObject", &Value::Object(request_meta()));
    let params = EmptyParams {
        meta: Some(request_meta()),
        ..Default::default()
    };
    spec.request::<Discover>("DiscoverRequest", "d-1", &params);
    let caps = ServerCapabilities {
        tools: Some(ToolsCapability {
            list_changed: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    let discover = DiscoverResult {
        instructions: Some("Use the tools.".into()),
        ttl_ms: Some(60_000),
        cache_scope: Some(CacheScope::Public),
        meta: Some(server_meta()),
        ..DiscoverResult::new(vec![ProtocolVersion::V2026_07_28], caps)
    };
    spec.result("DiscoverResult", "d-1", &discover);

    let tool = Tool::new("echo", "Echoes", obj(json!({"type": "object"})));
    let list = ListToolsResult {
        result_type: Some(ResultType::Complete),
        ttl_ms: Some(0),
        cache_scope: Some(CacheScope::Private),
        meta: Some(server_meta()),
        ..ListToolsResult::new(vec![tool])
    };
    spec.result("ListToolsResult", "l-1", &list);
    let mut no_hints = to_value(&list);
    no_hints.as_object_mut().map(|o| o.remove("ttlMs"));
    spec.rejects("ListToolsResult", &no_hints);

    let read = ReadResourceResult {
        result_type: Some(ResultType::Complete),
        ttl_ms: Some(5),
        cache_scope: Some(CacheScope::Public),
        ..ReadResourceResult::new(vec![ResourceContents::text("file:///a", "a")])
    };
    spec.result("ReadResourceResult", "r-1", &read);
    let prompts = ListPromptsResult {
        result_type: Some(ResultType::Complete),
        ttl_ms: Some(5),
        cache_scope: Some(CacheScope::Public),
        ..Default::default()
    };
    spec.result("ListPromptsResult", "p-1", &prompts);
}

fn subscriptions(spec: &mut Spec) {
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["file:///a".into()]),
        ..Default::default()
    };
    let listen = SubscriptionsListenRequestParams {
        notifications: filter.clone(),
        meta: Some(request_meta()),
        ..Default::default()
    };
    spec.request::<SubscriptionsListen>("SubscriptionsListenRequest", "listen-1", &listen);
    let mut meta = None;
    set_subscription_id(&mut meta, &RequestId::from("listen-1"));
    let ack = SubscriptionsAcknowledgedNotificationParams {
        notifications: filter,
        meta: meta.clone(),
        ..Default::default()
    };
    spec.notification::<SubscriptionsAcknowledged>("SubscriptionsAcknowledgedNotification", &ack);
    let updated = ResourceUpdatedNotificationParams {
        meta: meta.clone(),
        ..ResourceUpdatedNotificationParams::new("file:///a")
    };
    spec.notification::<ResourceUpdated>("ResourceUpdatedNotification", &updated);
    let closed = SubscriptionsListenResult {
        result_type: Some(ResultType::Complete),
        meta,
        ..Default::default()
    };
    spec.result("SubscriptionsListenResult", "listen-1", &closed);
    spec.rejects(
        "SubscriptionsListenResult",
        &json!({"resultType": "complete"}),
    );
}

fn mrtr(spec: &mut Spec) {
    let mut requests = InputRequests::new();
    requests.insert(
        "name".into(),
        InputRequest::Elicit(ElicitRequestParams::form(
            "Your name?",
            obj(json!({"type": "object", "properties": {"name": {"type": "string"}}})),
        )),
    );
    requests.insert(
        "capital".into(),
        InputRequest::CreateMessage(Box::new(CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text("Capital of France?")],
            50,
        ))),
    );
    requests.insert("roots".into(), InputRequest::ListRoots(None));
    let input = InputRequiredResult::new(requests, Some("opaque".into()));
    spec.check("InputRequests", &to_value(&input.input_requests));
    spec.result("InputRequiredResult", "c-1", &input);

    let mut responses = InputResponses::new();
    responses.insert(
        "name".into(),
        InputResponse::Elicit(ElicitResult::accept(obj(json!({"name": "Ada"})))),
    );
    responses.insert(
        "capital".into(),
        InputResponse::CreateMessage(Box::new(CreateMessageResult::assistant_text("m", "Paris"))),
    );
    responses.insert(
        "roots".into(),
        InputResponse::ListRoots(ListRootsResult::new(vec![Root::new("file:///", "root")])),
    );
    spec.check("InputResponses", &to_value(&responses));
    let retry = CallToolRequestParams {
        input_responses: Some(responses.clone()),
        request_state: Some("opaque".into()),
        meta: Some(request_meta()),
        ..CallToolRequestParams::new("greet")
    };
    spec.request::<CallTool>("CallToolRequest", "c-2", &retry);
    let prompt = GetPromptRequestParams {
        input_responses: Some(responses),
        meta: Some(request_meta()),
        ..GetPromptRequestParams::new("p")
    };
    spec.request::<GetPrompt>("GetPromptRequest", "g-2", &prompt);
    let done = CallToolResult {
        result_type: Some(ResultType::Complete),
        ..CallToolResult::text("Hello Ada")
    };
    spec.result("CallToolResult", "c-2", &done);
}

fn errors_and_schemas(spec: &mut Spec) {
    spec.error(
        "UnsupportedProtocolVersionError",
        ErrorObject::unsupported_protocol_version("1900-01-01", vec![ProtocolVersion::V2026_07_28]),
    );
    spec.error(
        "MissingRequiredClientCapabilityError",
        ErrorObject::missing_required_client_capability(ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..Default::default()
        }),
    );
    spec.error(
        "HeaderMismatchError",
        ErrorObject::header_mismatch("Mcp-Method does not match the body"),
    );

    let text = |t: &str| SchemaText {
        title: Some(t.into()),
        description: Some(format!("{t} help")),
    };
    let schemas = [
        (
            "StringSchema",
            PrimitiveSchema::String(StringSchema {
                text: text("Email"),
                format: Some("email".into()),
                min_length: Some(3),
                ..Default::default()
            }),
        ),
        (
            "NumberSchema",
            PrimitiveSchema::Number(NumberSchema {
                integer: true,
                minimum: Some(1.into()),
                ..Default::default()
            }),
        ),
        (
            "BooleanSchema",
            PrimitiveSchema::Boolean(BooleanSchema {
                default: Some(false),
                ..Default::default()
            }),
        ),
        (
            "UntitledSingleSelectEnumSchema",
            PrimitiveSchema::SingleSelect(UntitledSingleSelectEnumSchema {
                values: vec!["a".into(), "b".into()],
                default: Some("a".into()),
                ..Default::default()
            }),
        ),
        (
            "TitledSingleSelectEnumSchema",
            PrimitiveSchema::TitledSingleSelect(TitledSingleSelectEnumSchema {
                one_of: vec![TitledOption {
                    value: "#f00".into(),
                    title: "Red".into(),
                }],
                ..Default::default()
            }),
        ),
        (
            "UntitledMultiSelectEnumSchema",
            PrimitiveSchema::MultiSelect(MultiSelectEnumSchema {
                items: obj(json!({"type": "string", "enum": ["a", "b"]})),
                max_items: Some(2),
                ..Default::default()
            }),
        ),
        (
            "TitledMultiSelectEnumSchema",
            PrimitiveSchema::TitledMultiSelect(MultiSelectEnumSchema {
                items: obj(json!({"anyOf": [{"const": "a", "title": "A"}]})),
                default: Some(vec!["a".into()]),
                ..Default::default()
            }),
        ),
    ];
    for (def, schema) in schemas {
        let v = to_value(&schema);
        spec.check(def, &v);
        spec.check("PrimitiveSchemaDefinition", &v);
        let back: PrimitiveSchema = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, schema);
    }
}

#[test]
fn messages_validate_against_the_2026_schema() {
    let path = schema_path();
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!(
            "skipping: ../shared/spec not found (looked for {})",
            path.display()
        );
        return;
    };
    let schema: Value = serde_json::from_str(&text).expect("schema.json is JSON");
    let mut spec = Spec {
        validators: jsonschema::validator_map_for(&schema).expect("schema compiles"),
        checked: 0,
    };
    discover_and_lists(&mut spec);
    subscriptions(&mut spec);
    mrtr(&mut spec);
    errors_and_schemas(&mut spec);
    eprintln!("2026-07-28: {} checks passed", spec.checked);
    assert!(spec.checked > 40);
}
