//! `#[tool]`, `#[tools]`, `#[prompt]` and `#[resource]` end to end: a server built from
//! the generated registrations, a client over `MemoryTransport::pair(1)`, the lists and
//! calls checked. Every wait is bounded.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use mcpflow::client::Client;
use mcpflow::protocol::{
    ErrorCode, ErrorObject, GetPromptRequestParams, GetPromptResult, PromptMessage,
    ReadResourceResult, ResourceContents,
};
use mcpflow::schemars::JsonSchema;
use mcpflow::server::{RunningServer, Server, ServerBuilder, ServerContext, Structured, ToolError};
use mcpflow::transport::MemoryTransport;
use mcpflow::{prompt, resource, tool, tools};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::common::bounded;

async fn connect(builder: ServerBuilder) -> (Client, RunningServer) {
    let server = builder.build();
    let (client_side, server_side) = MemoryTransport::pair(1);
    let running = server.serve(server_side);
    let client = bounded(
        "the handshake",
        Client::builder("test", "1.0.0").connect(client_side),
    )
    .await
    .expect("client connects");
    (client, running)
}

// ---- #[tool] ----

/// Arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

/// Add two numbers.
///
/// Integers only.
#[tool(title = "Adder")]
async fn add(args: AddArgs, cx: ServerContext) -> Result<Structured<Sum>, String> {
    let _ = cx.cancellation();
    Ok(Structured(Sum {
        sum: args.a + args.b,
    }))
}

/// Divide, failing on zero.
#[tool(name = "div", description = "Integer division")]
async fn divide(args: DivArgs) -> Result<String, String> {
    if args.divisor == 0 {
        return Err("division by zero".to_owned());
    }
    Ok((args.dividend / args.divisor).to_string())
}

#[derive(Deserialize, JsonSchema)]
struct DivArgs {
    dividend: i64,
    divisor: i64,
}

/// Says hello; takes no arguments.
#[tool]
async fn hello() -> Result<&'static str, String> {
    Ok("hello")
}

/// Fails with a protocol error, passed through as is.
#[tool]
async fn strict(_cx: ServerContext) -> Result<String, ToolError> {
    Err(ToolError::invalid_params("never right"))
}

#[tokio::test]
async fn tool_functions_list_and_call() {
    let builder = Server::builder("calc", "1.0.0");
    let builder = [add_tool, divide_tool, hello_tool, strict_tool]
        .into_iter()
        .fold(builder, |builder, register| register(builder));
    let (client, _running) = connect(builder).await;

    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "div", "hello", "strict"]);

    let add = &tools[0];
    assert_eq!(add.title.as_deref(), Some("Adder"));
    assert_eq!(
        add.description.as_deref(),
        Some("Add two numbers.\n\nIntegers only.")
    );
    let schema = json!(add.input_schema);
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["a"]["description"],
        "The first number."
    );
    assert_eq!(schema["required"], json!(["a", "b"]));
    let output = json!(add.output_schema.clone().expect("an output schema"));
    assert!(output["properties"]["sum"].is_object(), "{output}");

    assert_eq!(tools[1].description.as_deref(), Some("Integer division"));
    assert_eq!(tools[1].title, None);
    assert_eq!(tools[1].output_schema, None);
    assert_eq!(json!(tools[2].input_schema), json!({"type": "object"}));

    let result = bounded("add", client.call_tool("add", json!({"a": 2, "b": 3})))
        .await
        .expect("add answers");
    assert_eq!(result.is_error, None);
    assert_eq!(result.structured_content, Some(json!({"sum": 5})));

    let result = bounded(
        "div",
        client.call_tool("div", json!({"dividend": 7, "divisor": 2})),
    )
    .await
    .expect("div answers");
    assert_eq!(result.content[0].as_text(), Some("3"));
    let result = bounded(
        "div by 0",
        client.call_tool("div", json!({"dividend": 7, "divisor": 0})),
    )
    .await
    .expect("div answers");
    assert_eq!(result.is_error, Some(true));
    assert_eq!(result.content[0].as_text(), Some("division by zero"));

    let result = bounded("hello", client.call_tool("hello", json!({"ignored": true})))
        .await
        .expect("hello answers");
    assert_eq!(result.content[0].as_text(), Some("hello"));

    let error = bounded("strict", client.call_tool("strict", json!({})))
        .await
        .expect_err("a protocol error");
    assert!(error.to_string().contains("never right"), "{error}");

    bounded("close", client.close()).await;
}

// ---- #[tools] ----

#[derive(Default)]
struct Counter {
    n: AtomicI64,
}

#[derive(Deserialize, JsonSchema)]
struct IncArgs {
    /// How much to add.
    by: i64,
}

#[tools]
impl Counter {
    /// Increment the counter; returns the new value.
    #[tool]
    async fn increment(&self, args: IncArgs) -> Result<String, String> {
        Ok((self.n.fetch_add(args.by, Ordering::SeqCst) + args.by).to_string())
    }

    /// The current value.
    #[tool(name = "get", title = "Read the counter")]
    async fn value(&self, _cx: ServerContext) -> Result<String, String> {
        Ok(self.n.load(Ordering::SeqCst).to_string())
    }

    /// A tool without state.
    #[tool]
    async fn version() -> Result<&'static str, String> {
        Ok("1")
    }

    /// Not a tool: left alone.
    fn peek(&self) -> i64 {
        self.n.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn tools_on_an_impl_block_share_state() {
    let counter = Arc::new(Counter::default());
    let builder = counter
        .clone()
        .register_tools(Server::builder("counter", "1.0.0"));
    let (client, _running) = connect(builder).await;

    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["increment", "get", "version"]);
    assert_eq!(
        tools[0].description.as_deref(),
        Some("Increment the counter; returns the new value.")
    );
    assert_eq!(
        json!(tools[0].input_schema)["properties"]["by"]["description"],
        "How much to add."
    );
    assert_eq!(tools[1].title.as_deref(), Some("Read the counter"));

    for _ in 0..2 {
        bounded("increment", client.call_tool("increment", json!({"by": 5})))
            .await
            .expect("increment answers");
    }
    assert_eq!(counter.peek(), 10);
    let result = bounded("get", client.call_tool("get", json!({})))
        .await
        .expect("get answers");
    assert_eq!(result.content[0].as_text(), Some("10"));
    let result = bounded("version", client.call_tool("version", json!({})))
        .await
        .expect("version answers");
    assert_eq!(result.content[0].as_text(), Some("1"));

    let bad = bounded(
        "increment",
        client.call_tool("increment", json!({"by": "x"})),
    )
    .await
    .expect("answers");
    assert_eq!(
        bad.is_error,
        Some(true),
        "schema violations are tool errors"
    );

    bounded("close", client.close()).await;
}

// ---- #[prompt] ----

#[derive(Deserialize, JsonSchema)]
struct ReviewArgs {
    /// The code to review.
    code: String,
    /// What to focus on.
    focus: Option<String>,
}

/// Review a piece of code.
#[prompt(name = "review", title = "Code review")]
async fn review_code(args: ReviewArgs) -> Result<Vec<PromptMessage>, String> {
    if args.code.is_empty() {
        return Err("no code".to_owned());
    }
    let focus = args.focus.unwrap_or_else(|| "anything".to_owned());
    Ok(vec![PromptMessage::user_text(format!(
        "Review ({focus}): {}",
        args.code
    ))])
}

/// A greeting, with no arguments.
#[prompt]
async fn greeting(_cx: ServerContext) -> Result<GetPromptResult, ErrorObject> {
    let mut result = GetPromptResult::new(vec![PromptMessage::assistant_text("hi")]);
    result.description = Some("a greeting".to_owned());
    Ok(result)
}

#[tokio::test]
async fn prompts_list_and_get() {
    let (client, _running) = connect(greeting_prompt(review_code_prompt(Server::builder(
        "prompts", "1.0.0",
    ))))
    .await;

    let prompts = bounded("prompts/list", client.list_all_prompts())
        .await
        .expect("prompts/list");
    assert_eq!(prompts.len(), 2);
    let review = &prompts[0];
    assert_eq!(review.name, "review");
    assert_eq!(review.title.as_deref(), Some("Code review"));
    assert_eq!(
        review.description.as_deref(),
        Some("Review a piece of code.")
    );
    let mut arguments: Vec<(String, Option<String>, Option<bool>)> = review
        .arguments
        .iter()
        .flatten()
        .map(|a| (a.name.clone(), a.description.clone(), a.required))
        .collect();
    arguments.sort();
    assert_eq!(
        arguments,
        [
            (
                "code".into(),
                Some("The code to review.".into()),
                Some(true)
            ),
            (
                "focus".into(),
                Some("What to focus on.".into()),
                Some(false)
            ),
        ]
    );
    assert_eq!(prompts[1].name, "greeting");
    assert_eq!(prompts[1].arguments, None);

    let params = GetPromptRequestParams::new("review")
        .with_argument("code", "fn main() {}")
        .with_argument("focus", "naming");
    let result = bounded("prompts/get", client.get_prompt(&params))
        .await
        .expect("review answers");
    assert_eq!(
        result.messages[0].content.as_text(),
        Some("Review (naming): fn main() {}")
    );
    let params = GetPromptRequestParams::new("review").with_argument("code", "x");
    let result = bounded("prompts/get", client.get_prompt(&params))
        .await
        .expect("an optional argument may be left out");
    assert_eq!(
        result.messages[0].content.as_text(),
        Some("Review (anything): x")
    );

    let params = GetPromptRequestParams::new("review").with_argument("code", "");
    let error = bounded("prompts/get", client.get_prompt(&params))
        .await
        .expect_err("the prompt fails");
    assert!(error.to_string().contains("no code"), "{error}");

    let result = bounded(
        "prompts/get",
        client.get_prompt(&GetPromptRequestParams::new("greeting")),
    )
    .await
    .expect("greeting answers");
    assert_eq!(result.description.as_deref(), Some("a greeting"));
    assert_eq!(result.messages[0].content.as_text(), Some("hi"));

    bounded("close", client.close()).await;
}

// ---- #[resource] ----

/// Today's notes.
#[resource("notes://today", mime_type = "text/plain", title = "Today")]
async fn today(uri: String) -> Result<String, ErrorObject> {
    Ok(format!("nothing planned ({uri})"))
}

/// One part of an item.
#[resource("items://{id}/{part}", name = "item")]
async fn item(part: String, id: u32, cx: ServerContext) -> Result<String, ErrorObject> {
    let _ = cx.cancellation();
    if id == 0 {
        return Err(ErrorObject::new(
            ErrorCode::RESOURCE_NOT_FOUND,
            format!("no item {id}"),
        ));
    }
    Ok(format!("item {id}, part {part}"))
}

/// Any file.
#[resource("file:///{+path}", mime_type = "text/markdown")]
async fn file(uri: String, vars: HashMap<String, String>) -> Result<ReadResourceResult, String> {
    Ok(ReadResourceResult::new(vec![ResourceContents::text(
        uri,
        format!("# {}", vars["path"]),
    )]))
}

#[tokio::test]
async fn resources_and_templates_list_and_read() {
    let builder = Server::builder("notes", "1.0.0");
    let builder = [today_resource, item_resource, file_resource]
        .into_iter()
        .fold(builder, |builder, register| register(builder));
    let (client, _running) = connect(builder).await;

    let resources = bounded("resources/list", client.list_all_resources())
        .await
        .expect("resources/list");
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0].uri, "notes://today");
    assert_eq!(resources[0].name, "today");
    assert_eq!(resources[0].title.as_deref(), Some("Today"));
    assert_eq!(resources[0].description.as_deref(), Some("Today's notes."));
    assert_eq!(resources[0].mime_type.as_deref(), Some("text/plain"));

    let templates = bounded("templates/list", client.list_all_resource_templates())
        .await
        .expect("resources/templates/list");
    let listed: Vec<(&str, &str)> = templates
        .iter()
        .map(|t| (t.uri_template.as_str(), t.name.as_str()))
        .collect();
    assert_eq!(
        listed,
        [("items://{id}/{part}", "item"), ("file:///{+path}", "file")]
    );
    assert_eq!(templates[1].mime_type.as_deref(), Some("text/markdown"));

    let read = bounded("read today", client.read_resource("notes://today"))
        .await
        .expect("today reads");
    let ResourceContents::Text(text) = &read.contents[0] else {
        panic!("text contents");
    };
    assert_eq!(text.text, "nothing planned (notes://today)");
    assert_eq!(text.uri, "notes://today");
    assert_eq!(text.mime_type.as_deref(), Some("text/plain"));

    let read = bounded("read item", client.read_resource("items://7/head"))
        .await
        .expect("item reads");
    let ResourceContents::Text(text) = &read.contents[0] else {
        panic!("text contents");
    };
    assert_eq!(text.text, "item 7, part head");

    let error = bounded("read item 0", client.read_resource("items://0/head"))
        .await
        .expect_err("not found");
    assert!(error.to_string().contains("no item 0"), "{error}");
    let error = bounded("read item x", client.read_resource("items://x/head"))
        .await
        .expect_err("`x` is not a number");
    assert!(
        error.to_string().contains("`id` in `items://x/head`"),
        "{error}"
    );

    let read = bounded("read file", client.read_resource("file:///docs/a.md"))
        .await
        .expect("file reads");
    let ResourceContents::Text(text) = &read.contents[0] else {
        panic!("text contents");
    };
    assert_eq!(text.text, "# docs/a.md");

    bounded("close", client.close()).await;
}

#[tokio::test]
async fn functions_stay_callable() {
    let sum = divide(DivArgs {
        dividend: 9,
        divisor: 3,
    })
    .await;
    assert_eq!(sum, Ok("3".to_owned()));
}
