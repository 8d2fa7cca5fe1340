//! A client for the client scenarios of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), over the streamable HTTP transport.
//!
//! The suite starts a scripted server, then runs this program with the server URL as
//! the last argument and the scenario name in `MCP_CONFORMANCE_SCENARIO`:
//!
//! ```text
//! cargo build --release -p mcpflow --example conformance_client
//! npx @modelcontextprotocol/conformance client \
//!     --command target/release/examples/conformance_client --scenario sse-retry
//! ```
//!
//! Scenarios: `initialize` (handshake, list tools, close), `tools_call` (call
//! `add_numbers`), `elicitation-sep1034-client-defaults` (answer elicitation with the
//! schema's defaults), `sse-retry` (a tool whose result arrives after the stream is
//! resumed), `auth/*` (OAuth as the scenario asks, then list and call every tool; DPoP
//! where the authorization server supports it, with the `oauth-jwt` feature),
//! `json-schema-2020-12-preservation` (hand the 2020-12 tool's schema, as held, to the
//! echo tool).
//! Any other scenario runs the handshake and lists tools. The exit status is
//! non-zero on any error, which is printed. Logs go to stderr (`RUST_LOG`, default
//! `warn`).
//!
//! When the runner asks for protocol 2026-07-28 (`MCP_CONFORMANCE_PROTOCOL_VERSION`),
//! the client probes with `server/discover` and speaks 2026-07-28 when the server does:
//! `request-metadata` and `json-schema-ref-no-deref` list tools, `sep-2322-client-request-state`
//! and `http-invalid-tool-headers` call every listed tool (answering elicitations),
//! `http-custom-headers` makes the calls the runner names in `MCP_CONFORMANCE_CONTEXT`,
//! and `http-standard-headers` also lists and reads resources and prompts.

#[cfg(feature = "http-client")]
#[tokio::main]
async fn main() -> std::process::ExitCode {
    conformance::main().await
}

#[cfg(not(feature = "http-client"))]
fn main() {
    eprintln!("conformance_client needs the `http-client` feature of mcpflow");
    std::process::exit(2);
}

/// The scenarios, and the client each one runs.
#[cfg(feature = "http-client")]
pub mod conformance {
    use std::process::ExitCode;

    use mcpflow::client::{Client, ClientHandle, Era};
    use mcpflow::protocol::{ElicitRequestParams, ElicitResult, JsonObject, ProtocolVersion, Tool};
    use serde_json::{Value, json};

    type Error = Box<dyn std::error::Error + Send + Sync>;

    /// Run the scenario named in `MCP_CONFORMANCE_SCENARIO` against the URL in the last
    /// argument.
    pub async fn main() -> ExitCode {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .init();
        let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
        let Some(url) = std::env::args().skip(1).last() else {
            eprintln!(
                "usage: conformance_client <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)"
            );
            return ExitCode::FAILURE;
        };
        match run(&url, &scenario).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("conformance client, scenario `{scenario}`: {e}");
                ExitCode::FAILURE
            }
        }
    }

    /// Run `scenario` against the server at `url`.
    ///
    /// # Errors
    /// Whatever fails: the transport configuration, the handshake, a call, or a tool that
    /// reports an error.
    pub async fn run(url: &str, scenario: &str) -> Result<(), Error> {
        let mut transport = mcpflow::http::client::HttpClientTransport::builder(url);
        if scenario.starts_with("auth/") {
            transport = transport.oauth(oauth_config(scenario)?);
        }
        let transport = transport.build()?;
        let per_request = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
            .is_ok_and(|v| v.as_str() >= "2026-07-28");
        let mut builder = Client::builder("mcpflow-conformance-client", env!("CARGO_PKG_VERSION"))
            .protocol_version(ProtocolVersion::V2025_11_25)
            .era(if per_request {
                Era::Auto
            } else {
                Era::Handshake
            });
        if scenario.starts_with("elicitation") || scenario.starts_with("sep-2322") {
            builder = builder.on_elicitation(false, |params, _client| async move {
                Ok(accept_with_defaults(&params))
            });
        }
        let client = builder.connect(transport).await?;
        let outcome = exercise(&client, scenario).await;
        client.close().await;
        outcome
    }

    async fn exercise(client: &ClientHandle, scenario: &str) -> Result<(), Error> {
        let tools = client.list_all_tools().await?;
        if scenario == "http-custom-headers" {
            return named_calls(client).await;
        }
        if scenario == "json-schema-2020-12-preservation" {
            return echo_schema(client, &tools).await;
        }
        let to_call: Vec<&Tool> = match scenario {
            "tools_call" => tools.iter().filter(|t| t.name == "add_numbers").collect(),
            "elicitation-sep1034-client-defaults"
            | "sse-retry"
            | "sep-2322-client-request-state"
            | "http-invalid-tool-headers"
            | "http-standard-headers" => tools.iter().collect(),
            s if s.starts_with("auth/") => tools.iter().collect(),
            _ => Vec::new(),
        };
        if scenario == "tools_call" && to_call.is_empty() {
            return Err("the server lists no `add_numbers` tool".into());
        }
        for tool in to_call {
            let result = client.call_tool(&tool.name, arguments_for(tool)).await?;
            if result.is_error() {
                let text = result
                    .content
                    .iter()
                    .find_map(|c| c.as_text())
                    .unwrap_or_default();
                return Err(format!("tool `{}` reported an error: {text}", tool.name).into());
            }
        }
        if scenario == "http-standard-headers" {
            for resource in client.list_all_resources().await? {
                client.read_resource(&resource.uri).await?;
            }
            for prompt in client.list_all_prompts().await? {
                let params = mcpflow::protocol::GetPromptRequestParams::new(prompt.name.clone());
                client.get_prompt(&params).await?;
            }
        }
        Ok(())
    }

    /// The tool calls listed in `MCP_CONFORMANCE_CONTEXT` (`{"toolCalls": [{name, arguments}]}`).
    async fn named_calls(client: &ClientHandle) -> Result<(), Error> {
        #[derive(serde::Deserialize)]
        struct Context {
            #[serde(rename = "toolCalls", default)]
            tool_calls: Vec<Call>,
        }
        #[derive(serde::Deserialize)]
        struct Call {
            name: String,
            #[serde(default)]
            arguments: Value,
        }
        let text = std::env::var("MCP_CONFORMANCE_CONTEXT").unwrap_or_else(|_| "{}".to_owned());
        let context: Context = serde_json::from_str(&text)?;
        for call in context.tool_calls {
            client.call_tool(&call.name, call.arguments).await?;
        }
        Ok(())
    }

    /// Hand the schema of `json_schema_2020_12_tool`, as this client holds it, to
    /// `json_schema_echo`: the suite checks that its 2020-12 keywords were kept.
    async fn echo_schema(client: &ClientHandle, tools: &[Tool]) -> Result<(), Error> {
        let focal = tools
            .iter()
            .find(|t| t.name == "json_schema_2020_12_tool")
            .ok_or("the server lists no `json_schema_2020_12_tool`")?;
        let schema = Value::Object(focal.input_schema.clone());
        client
            .call_tool("json_schema_echo", json!({ "schema": schema }))
            .await?;
        Ok(())
    }

    /// The Client ID Metadata Document URL the suite's authorization servers expect.
    const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

    /// OAuth for an `auth/*` scenario: client credentials from the context for the
    /// machine-client scenarios, else the authorization-code flow with a headless user
    /// step (the suite's authorization server redirects at once), a Client ID Metadata
    /// Document URL, and the context's pre-registered credentials if any.
    fn oauth_config(scenario: &str) -> Result<mcpflow::auth::OAuthConfig, Error> {
        use mcpflow::auth::{ClientRegistration, HeadlessRedirect, OAuthConfig, WorkloadIdentity};
        let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
            Ok(text) => serde_json::from_str(&text)?,
            Err(_) => Value::Null,
        };
        let field = |name: &str| context.get(name).and_then(Value::as_str).map(str::to_owned);
        let registered = match (field("client_id"), field("client_secret")) {
            // Signing needs the `oauth-jwt` feature; without it the token request fails.
            (Some(id), _) if field("private_key_pem").is_some() => {
                Some(ClientRegistration::private_key_jwt(
                    id,
                    field("private_key_pem").unwrap_or_default(),
                ))
            }
            (Some(id), Some(secret)) => Some(ClientRegistration::confidential(id, secret)),
            (Some(id), None) => Some(ClientRegistration::public(id)),
            _ => None,
        };
        if scenario.starts_with("auth/client-credentials") {
            let client = registered.ok_or("the scenario context has no client_id")?;
            return Ok(OAuthConfig::client_credentials(client));
        }
        if let Some(token) = field("valid_jwt") {
            // Workload identity: the platform's token as a JWT bearer grant.
            let mut identity = WorkloadIdentity::token(mcpflow::auth::Secret::new(token));
            if let Some(id) = field("client_id") {
                identity = identity.client_id(id);
            }
            return Ok(OAuthConfig::workload_identity(identity));
        }
        if let (Some(endpoint), Some(id_token)) =
            (field("idp_token_endpoint"), field("idp_id_token"))
        {
            // Enterprise-managed authorization (SEP-990): no browser step.
            let client = registered.ok_or("the scenario context has no client_id")?;
            let mut idp = mcpflow::auth::EnterpriseIdp::new(
                endpoint.parse()?,
                mcpflow::auth::Secret::new(id_token),
            );
            if let Some(id) = field("idp_client_id") {
                idp = idp.client_id(id);
            }
            return Ok(OAuthConfig::enterprise(client, idp));
        }
        let user = HeadlessRedirect::new("http://localhost:3000/callback".parse()?)?;
        let mut config = OAuthConfig::authorization_code(user)
            .client_name("mcpflow-conformance-client")
            .client_metadata_url(CLIENT_METADATA_URL);
        if let Some(client) = registered {
            config = config.pre_registered(None, client);
        }
        Ok(config)
    }

    /// Arguments for `tool`: `{"a": 5, "b": 3}` for `add_numbers`, else a value of the
    /// right type for each required property.
    fn arguments_for(tool: &Tool) -> Value {
        if tool.name == "add_numbers" {
            return json!({"a": 5, "b": 3});
        }
        let properties = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let required = tool
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut arguments = JsonObject::new();
        for name in required.iter().filter_map(Value::as_str) {
            let kind = properties
                .and_then(|p| p.get(name))
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("string");
            let value = match kind {
                "number" | "integer" => json!(1),
                "boolean" => json!(true),
                "array" => json!([]),
                "object" => json!({}),
                _ => json!("test"),
            };
            arguments.insert(name.to_owned(), value);
        }
        Value::Object(arguments)
    }

    /// Accept a form elicitation, filling every property that has a `default` with it
    /// (SEP-1034); decline URL elicitations.
    fn accept_with_defaults(params: &ElicitRequestParams) -> ElicitResult {
        let ElicitRequestParams::Form(form) = params else {
            return ElicitResult::decline();
        };
        let mut content = JsonObject::new();
        if let Some(properties) = form
            .requested_schema
            .get("properties")
            .and_then(Value::as_object)
        {
            for (name, schema) in properties {
                if let Some(default) = schema.get("default") {
                    content.insert(name.clone(), default.clone());
                }
            }
        }
        ElicitResult::accept(content)
    }
}
