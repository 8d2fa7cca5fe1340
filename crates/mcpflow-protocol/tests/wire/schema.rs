//! Messages built from our types validate against each version's official `schema.json`.
//!
//! The schemas live in the shared spec folder next to the repository; without it the test
//! prints `skipping: ../shared/spec not found` and passes.

use std::path::{Path, PathBuf};

use mcpflow_protocol::capabilities::{ElicitationCapability, SamplingCapability, TasksCapability};
use mcpflow_protocol::completion::CompletionContext;
use mcpflow_protocol::content::{Annotations, ToolUseContent};
use mcpflow_protocol::elicitation::ElicitationCompleteNotificationParams;
use mcpflow_protocol::implementation::Icon;
use mcpflow_protocol::methods::*;
use mcpflow_protocol::prompts::PromptArgument;
use mcpflow_protocol::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ResourceTemplate,
    ResourceUpdatedNotificationParams, SubscribeRequestParams,
};
use mcpflow_protocol::sampling::{ModelHint, ModelPreferences, SamplingContent, ToolChoice};
use mcpflow_protocol::tasks::{CreateTaskResult, Task, TaskMetadata, TaskStatus};
use mcpflow_protocol::tools::{TaskSupport, ToolAnnotations, ToolExecution};
use mcpflow_protocol::*;
use serde::Serialize;
use serde_json::{Value, json};

fn spec_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/spec"))
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

/// One version's schema, compiled once.
struct Spec {
    version: ProtocolVersion,
    defs: &'static str,
    validators: jsonschema::ValidatorMap,
    checked: usize,
}

impl Spec {
    fn load(dir: &Path, version: ProtocolVersion) -> Spec {
        let path = dir.join(version.as_str()).join("schema.json");
        let text = std::fs::read_to_string(&path).expect("schema.json is readable");
        let schema: Value = serde_json::from_str(&text).expect("schema.json is JSON");
        let defs = if schema.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        let validators = jsonschema::validator_map_for(&schema).expect("schema compiles");
        Spec {
            version,
            defs,
            validators,
            checked: 0,
        }
    }

    fn at_least(&self, v: ProtocolVersion) -> bool {
        self.version >= v
    }

    fn check(&mut self, def: &str, instance: &Value) {
        let pointer = format!("#/{}/{def}", self.defs);
        let validator = self
            .validators
            .get(&pointer)
            .unwrap_or_else(|| panic!("{}: no definition {def}", self.version));
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{}: {instance:#} is not a valid {def}:\n{}",
            self.version,
            errors.join("\n")
        );
        self.checked += 1;
    }

    fn rejects(&self, def: &str, instance: &Value) {
        let pointer = format!("#/{}/{def}", self.defs);
        let validator = self.validators.get(&pointer).expect("definition exists");
        assert!(
            !validator.is_valid(instance),
            "{}: {def} accepted {instance}",
            self.version
        );
    }

    /// A request envelope checked against `def` and the generic request type.
    fn request<M: RequestMethod>(&mut self, def: &str, id: i64, params: &M::Params) {
        let msg =
            json!({"jsonrpc": "2.0", "id": id, "method": M::METHOD, "params": to_value(params)});
        self.check("JSONRPCRequest", &msg);
        self.check(def, &msg);
    }

    /// A result envelope; the result is also checked against `def`.
    fn result<M: RequestMethod>(&mut self, def: &str, id: i64, result: &M::Result) {
        let result = to_value(result);
        self.check(def, &result);
        let envelope = if self.defs == "$defs" {
            "JSONRPCResultResponse"
        } else {
            "JSONRPCResponse"
        };
        self.check(
            envelope,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
    }

    fn notification<M: NotificationMethod>(&mut self, def: &str, params: &M::Params) {
        let msg = json!({"jsonrpc": "2.0", "method": M::METHOD, "params": to_value(params)});
        self.check("JSONRPCNotification", &msg);
        self.check(def, &msg);
    }
}

fn implementation(spec: &Spec, name: &str) -> Implementation {
    let mut imp = Implementation::new(name, "1.2.3");
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        imp.title = Some(format!("{name} (display)"));
    }
    if spec.at_least(ProtocolVersion::V2025_11_25) {
        imp.description = Some("an implementation".into());
        imp.website_url = Some("https://example.com".into());
        imp.icons = Some(vec![Icon {
            mime_type: Some("image/png".into()),
            sizes: Some(vec!["48x48".into()]),
            ..Icon::new("https://example.com/icon.png")
        }]);
    }
    imp
}

fn annotations(spec: &Spec) -> Annotations {
    Annotations {
        audience: Some(vec![Role::User, Role::Assistant]),
        priority: Some(0.5),
        last_modified: spec
            .at_least(ProtocolVersion::V2025_06_18)
            .then(|| "2025-01-12T15:00:58Z".into()),
        ..Default::default()
    }
}

fn lifecycle(spec: &mut Spec) {
    let mut client_caps = ClientCapabilities::default()
        .with_roots(true)
        .with_sampling();
    client_caps.experimental = Some(obj(json!({"x-feature": {"on": true}})));
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        client_caps = client_caps.with_elicitation();
    }
    if spec.at_least(ProtocolVersion::V2025_11_25) {
        client_caps.sampling = Some(SamplingCapability {
            tools: Some(JsonObject::new()),
            context: Some(JsonObject::new()),
            ..Default::default()
        });
        client_caps.elicitation = Some(ElicitationCapability {
            form: Some(JsonObject::new()),
            url: Some(JsonObject::new()),
            ..Default::default()
        });
        client_caps.tasks = Some(TasksCapability {
            list: Some(JsonObject::new()),
            cancel: Some(JsonObject::new()),
            requests: Some(obj(json!({"sampling": {"createMessage": {}}}))),
            ..Default::default()
        });
    }
    let params = InitializeRequestParams::new(
        spec.version.clone(),
        client_caps,
        implementation(spec, "client"),
    );
    spec.request::<Initialize>("InitializeRequest", 1, &params);

    let mut server_caps = ServerCapabilities::default()
        .with_tools(true)
        .with_prompts(true)
        .with_resources(true, true)
        .with_logging();
    if spec.at_least(ProtocolVersion::V2025_03_26) {
        server_caps = server_caps.with_completions();
    }
    if spec.at_least(ProtocolVersion::V2025_11_25) {
        server_caps.tasks = Some(TasksCapability {
            requests: Some(obj(json!({"tools": {"call": {}}}))),
            ..Default::default()
        });
    }
    let result = InitializeResult::new(
        ProtocolVersion::negotiate(spec.version.as_str()),
        server_caps,
        implementation(spec, "server"),
    )
    .with_instructions("Use the tools.");
    spec.result::<Initialize>("InitializeResult", 1, &result);
    spec.notification::<Initialized>("InitializedNotification", &EmptyParams::default());

    spec.request::<Ping>("PingRequest", 2, &EmptyParams::default());
    spec.result::<Ping>("EmptyResult", 2, &EmptyResult::default());
}

fn tools(spec: &mut Spec) {
    let schema = obj(json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"]
    }));
    let mut tool = Tool::new("get_weather", "Weather for a city", schema);
    if spec.at_least(ProtocolVersion::V2025_03_26) {
        tool.annotations = Some(ToolAnnotations {
            title: Some("Weather".into()),
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(true),
            ..Default::default()
        });
    }
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        tool.title = Some("Weather lookup".into());
        tool.output_schema = Some(obj(json!({
            "type": "object",
            "properties": {"celsius": {"type": "number"}},
            "required": ["celsius"]
        })));
        tool.meta = Some(obj(json!({"com.example/owner": "weather-team"})));
    }
    if spec.at_least(ProtocolVersion::V2025_11_25) {
        tool.execution = Some(ToolExecution {
            task_support: Some(TaskSupport::Optional),
            ..Default::default()
        });
        tool.icons = Some(vec![Icon::new("data:image/png;base64,AA==")]);
    }
    let empty = Tool::new("now", "Current time", Tool::empty_input_schema());
    let list = ListToolsResult {
        next_cursor: Some("page-2".into()),
        ..ListToolsResult::new(vec![tool, empty])
    };
    spec.request::<ListTools>("ListToolsRequest", 3, &PaginatedRequestParams::default());
    spec.request::<ListTools>(
        "ListToolsRequest",
        4,
        &PaginatedRequestParams::with_cursor("page-2"),
    );
    spec.result::<ListTools>("ListToolsResult", 3, &list);

    // Both token kinds: string in one request, integer in the other.
    let mut call =
        CallToolRequestParams::new("get_weather").with_arguments(obj(json!({"city": "Paris"})));
    meta::set_progress_token(&mut call.meta, ProgressToken::from("tok-1"));
    spec.request::<CallTool>("CallToolRequest", 5, &call);
    meta::set_progress_token(&mut call.meta, ProgressToken::Integer(42));
    if spec.at_least(ProtocolVersion::V2025_11_25) {
        call.task = Some(TaskMetadata {
            ttl: Some(60_000),
            ..Default::default()
        });
    }
    spec.request::<CallTool>("CallToolRequest", 6, &call);

    let mut content = vec![
        ContentBlock::text("18°C"),
        ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ContentBlock::embedded_text("file:///w.txt", "text/plain", "sunny"),
        ContentBlock::embedded_blob("file:///w.bin", "application/octet-stream", "AAEC"),
    ];
    if let ContentBlock::Text(t) = &mut content[0] {
        t.annotations = Some(annotations(spec));
    }
    if spec.at_least(ProtocolVersion::V2025_03_26) {
        content.push(ContentBlock::audio("UklGRg==", "audio/wav"));
    }
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        content.push(ContentBlock::resource_link(
            Resource::new("file:///report.md", "report").with_mime_type("text/markdown"),
        ));
    }
    let mut result = CallToolResult::success(content);
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        result.structured_content = Some(json!({"celsius": 18}));
    }
    spec.result::<CallTool>("CallToolResult", 5, &result);
    spec.result::<CallTool>(
        "CallToolResult",
        6,
        &CallToolResult::error("city not found"),
    );
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        spec.result::<CallTool>(
            "CallToolResult",
            7,
            &CallToolResult::structured(json!({"celsius": 3.5})),
        );
    }
    if spec.at_least(ProtocolVersion::V2025_11_25) {
        let task = Task {
            task_id: "t-1".into(),
            status: TaskStatus::Working,
            created_at: "2025-11-25T10:00:00Z".into(),
            last_updated_at: "2025-11-25T10:00:00Z".into(),
            ttl: Some(60_000),
            poll_interval: Some(1000),
            ..Default::default()
        };
        let created = CreateTaskResult {
            task: task.clone(),
            ..Default::default()
        };
        spec.check("CreateTaskResult", &to_value(&created));
        spec.request::<GetTask>("GetTaskRequest", 8, &tasks::TaskIdParams::new("t-1"));
        spec.result::<GetTask>("GetTaskResult", 8, &task);
        spec.notification::<TaskStatusNotification>("TaskStatusNotification", &task);
    }
    spec.notification::<ToolListChanged>("ToolListChangedNotification", &EmptyParams::default());

    // The validator does reject a broken tool.
    spec.rejects("ListToolsResult", &json!({"tools": [{"name": "x"}]}));
}

fn resources(spec: &mut Spec) {
    let mut resource = Resource::new("file:///README.md", "README.md")
        .with_mime_type("text/markdown")
        .with_description("Project readme");
    resource.size = Some(1024);
    resource.annotations = Some(annotations(spec));
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        resource.title = Some("Readme".into());
        resource.meta = Some(obj(json!({"com.example/etag": "abc"})));
    }
    let list = ListResourcesResult {
        resources: vec![resource],
        ..Default::default()
    };
    spec.request::<ListResources>(
        "ListResourcesRequest",
        10,
        &PaginatedRequestParams::default(),
    );
    spec.result::<ListResources>("ListResourcesResult", 10, &list);

    let mut template = ResourceTemplate::new("file:///logs/{date}.log", "daily-log");
    template.mime_type = Some("text/plain".into());
    let templates = ListResourceTemplatesResult {
        resource_templates: vec![template],
        next_cursor: Some("c2".into()),
        ..Default::default()
    };
    spec.request::<ListResourceTemplates>(
        "ListResourceTemplatesRequest",
        11,
        &PaginatedRequestParams::default(),
    );
    spec.result::<ListResourceTemplates>("ListResourceTemplatesResult", 11, &templates);

    spec.request::<ReadResource>(
        "ReadResourceRequest",
        12,
        &ReadResourceRequestParams::new("file:///README.md"),
    );
    let read = ReadResourceResult::new(vec![
        ResourceContents::text("file:///README.md", "# Hi").with_mime_type("text/markdown"),
        ResourceContents::blob("file:///logo.png", "iVBORw0KGgo=").with_mime_type("image/png"),
    ]);
    spec.result::<ReadResource>("ReadResourceResult", 12, &read);

    spec.request::<Subscribe>(
        "SubscribeRequest",
        13,
        &SubscribeRequestParams::new("file:///README.md"),
    );
    spec.result::<Subscribe>("EmptyResult", 13, &EmptyResult::default());
    spec.request::<Unsubscribe>(
        "UnsubscribeRequest",
        14,
        &SubscribeRequestParams::new("file:///README.md"),
    );
    spec.notification::<ResourceUpdated>(
        "ResourceUpdatedNotification",
        &ResourceUpdatedNotificationParams::new("file:///README.md"),
    );
    spec.notification::<ResourceListChanged>(
        "ResourceListChangedNotification",
        &EmptyParams::default(),
    );
}

fn prompts(spec: &mut Spec) {
    let mut prompt = Prompt::new("code_review", "Review code")
        .with_argument(PromptArgument::new("code", "The code", true));
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        prompt.title = Some("Code review".into());
    }
    let list = ListPromptsResult {
        prompts: vec![prompt],
        ..Default::default()
    };
    spec.request::<ListPrompts>("ListPromptsRequest", 20, &PaginatedRequestParams::default());
    spec.result::<ListPrompts>("ListPromptsResult", 20, &list);

    let get = GetPromptRequestParams::new("code_review").with_argument("code", "fn main() {}");
    spec.request::<GetPrompt>("GetPromptRequest", 21, &get);
    let result = GetPromptResult {
        description: Some("A review".into()),
        ..GetPromptResult::new(vec![
            PromptMessage::user_text("Please review: fn main() {}"),
            PromptMessage::new(
                Role::User,
                ContentBlock::embedded_text("file:///main.rs", "text/x-rust", "fn main() {}"),
            ),
            PromptMessage::assistant_text("Looks fine."),
        ])
    };
    spec.result::<GetPrompt>("GetPromptResult", 21, &result);
    spec.notification::<PromptListChanged>(
        "PromptListChangedNotification",
        &EmptyParams::default(),
    );
}

fn completion_and_logging(spec: &mut Spec) {
    let mut params =
        CompleteRequestParams::new(CompletionReference::prompt("code_review"), "language", "py");
    if spec.at_least(ProtocolVersion::V2025_06_18) {
        params.context = Some(CompletionContext {
            arguments: Some([("framework".to_owned(), "flask".to_owned())].into()),
        });
    }
    spec.request::<Complete>("CompleteRequest", 30, &params);
    let params = CompleteRequestParams::new(
        CompletionReference::resource("file:///logs/{date}.log"),
        "date",
        "2025-",
    );
    spec.request::<Complete>("CompleteRequest", 31, &params);
    let mut result = CompleteResult::new(vec!["python".into(), "pytorch".into()]);
    result.completion.total = Some(10);
    result.completion.has_more = Some(true);
    spec.result::<Complete>("CompleteResult", 30, &result);

    spec.request::<SetLevel>(
        "SetLevelRequest",
        32,
        &SetLevelRequestParams::new(LoggingLevel::Warning),
    );
    spec.result::<SetLevel>("EmptyResult", 32, &EmptyResult::default());
    let msg = LoggingMessageNotificationParams::new(
        LoggingLevel::Error,
        json!({"error": "connection failed", "port": 5432}),
    )
    .with_logger("db");
    spec.notification::<LoggingMessage>("LoggingMessageNotification", &msg);

    let mut progress =
        ProgressNotificationParams::new(ProgressToken::from("tok-1"), 50.0, Some(100.0));
    if spec.at_least(ProtocolVersion::V2025_03_26) {
        progress = progress.with_message("halfway");
    }
    spec.notification::<Progress>("ProgressNotification", &progress);
    let progress = ProgressNotificationParams::new(ProgressToken::Integer(42), 0.25, None);
    spec.notification::<Progress>("ProgressNotification", &progress);

    let cancelled = CancelledNotificationParams::new(RequestId::number(6), Some("user".into()));
    spec.notification::<Cancelled>("CancelledNotification", &cancelled);
    let cancelled = CancelledNotificationParams::new(RequestId::string("req-a"), None);
    spec.notification::<Cancelled>("CancelledNotification", &cancelled);
}

fn client_features(spec: &mut Spec) {
    let mut params = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::user_text("Capital of France?"),
            SamplingMessage::new(Role::User, ContentBlock::image("iVBORw0KGgo=", "image/png")),
        ],
        100,
    );
    params.model_preferences = Some(ModelPreferences {
        hints: Some(vec![ModelHint {
            name: Some("claude-3-sonnet".into()),
            ..Default::default()
        }]),
        intelligence_priority: Some(0.8),
        speed_priority: Some(0.5),
        cost_priority: Some(0.0),
        ..Default::default()
    });
    params.system_prompt = Some("Be brief.".into());
    params.include_context = Some(sampling::IncludeContext::ThisServer);
    params.temperature = Some(0.7);
    params.stop_sequences = Some(vec!["\n\n".into()]);
    params.metadata = Some(obj(json!({"provider": {"top_k": 5}})));
    spec.request::<CreateMessage>("CreateMessageRequest", 40, &params);
    let result = CreateMessageResult::assistant_text("claude-3-sonnet", "Paris.");
    spec.result::<CreateMessage>("CreateMessageResult", 40, &result);

    if spec.at_least(ProtocolVersion::V2025_11_25) {
        let tool = Tool::new("get_weather", "Weather", Tool::empty_input_schema());
        let tool_use = ContentBlock::ToolUse(ToolUseContent {
            id: "call_1".into(),
            name: "get_weather".into(),
            input: obj(json!({"city": "Paris"})),
            ..Default::default()
        });
        let tool_result = ContentBlock::ToolResult(content::ToolResultContent {
            tool_use_id: "call_1".into(),
            content: vec![ContentBlock::text("18°C")],
            ..Default::default()
        });
        let mut params = CreateMessageRequestParams::new(
            vec![
                SamplingMessage::user_text("Weather in Paris?"),
                SamplingMessage {
                    role: Role::Assistant,
                    content: SamplingContent::Multiple(vec![tool_use.clone()]),
                    meta: None,
                    extra: JsonObject::new(),
                },
                SamplingMessage {
                    role: Role::User,
                    content: SamplingContent::Multiple(vec![tool_result]),
                    meta: None,
                    extra: JsonObject::new(),
                },
            ],
            500,
        );
        params.tools = Some(vec![tool]);
        params.tool_choice = Some(ToolChoice {
            mode: Some(sampling::ToolChoiceMode::Auto),
            ..Default::default()
        });
        spec.request::<CreateMessage>("CreateMessageRequest", 41, &params);
        let result = CreateMessageResult {
            content: SamplingContent::Multiple(vec![tool_use]),
            stop_reason: Some(sampling::stop_reason::TOOL_USE.into()),
            ..CreateMessageResult::assistant_text("m", "")
        };
        spec.result::<CreateMessage>("CreateMessageResult", 41, &result);
    }

    if spec.at_least(ProtocolVersion::V2025_06_18) {
        let schema = obj(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 1},
                "age": {"type": "integer", "minimum": 0},
                "subscribe": {"type": "boolean", "default": false},
                "color": {"type": "string", "enum": ["red", "green"]}
            },
            "required": ["name"]
        }));
        let form = ElicitRequestParams::form("Your details?", schema);
        spec.request::<Elicit>("ElicitRequest", 50, &form);
        let accept =
            ElicitResult::accept(obj(json!({"name": "Ada", "age": 36, "subscribe": true})));
        spec.result::<Elicit>("ElicitResult", 50, &accept);
        spec.result::<Elicit>("ElicitResult", 51, &ElicitResult::decline());
        spec.result::<Elicit>("ElicitResult", 52, &ElicitResult::cancel());
    }
    if spec.at_least(ProtocolVersion::V2025_11_25) {
        let url = ElicitRequestParams::url("Sign in", "https://example.com/auth", "el-1");
        spec.request::<Elicit>("ElicitRequest", 53, &url);
        spec.check("ElicitRequestURLParams", &to_value(&url));
        spec.result::<Elicit>("ElicitResult", 53, &ElicitResult::accept_url());
        spec.notification::<ElicitationComplete>(
            "ElicitationCompleteNotification",
            &ElicitationCompleteNotificationParams::new("el-1"),
        );
    }

    spec.request::<ListRoots>("ListRootsRequest", 60, &EmptyParams::default());
    let roots = ListRootsResult::new(vec![
        Root::new("file:///home/u/project", "Project"),
        Root {
            uri: "file:///tmp".into(),
            ..Default::default()
        },
    ]);
    spec.result::<ListRoots>("ListRootsResult", 60, &roots);
    spec.notification::<RootsListChanged>("RootsListChangedNotification", &EmptyParams::default());
}

#[test]
fn messages_validate_against_each_version_schema() {
    let dir = spec_dir();
    if !dir.is_dir() {
        eprintln!(
            "skipping: ../shared/spec not found (looked in {})",
            dir.display()
        );
        return;
    }
    for version in HANDSHAKE_VERSIONS.iter().rev() {
        let mut spec = Spec::load(&dir, version.clone());
        lifecycle(&mut spec);
        tools(&mut spec);
        resources(&mut spec);
        prompts(&mut spec);
        completion_and_logging(&mut spec);
        client_features(&mut spec);
        eprintln!("{}: {} checks passed", spec.version, spec.checked);
        assert!(spec.checked > 60);
    }
}
