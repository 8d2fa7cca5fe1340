//! Attribute macros for [mcpflow](https://docs.rs/mcpflow): register plain `async fn`s
//! as MCP tools, prompts and resources. Everything here is sugar over
//! `mcpflow::server::ServerBuilder`; each macro's section shows the builder code it
//! stands for. mcpflow's `macros` feature (on by default) exports them as
//! `mcpflow::{tool, tools, prompt, resource}`. The crate also provides the
//! [`JsonSchema`](#jsonschema) derive that mcpflow exports in every build.
//!
//! Each macro leaves the function as it is (call it directly in tests) and adds a
//! companion function that registers it: `NAME_tool`, `NAME_prompt` or
//! `NAME_resource`, of type `fn(ServerBuilder) -> ServerBuilder`, with the function's
//! visibility. `#[tools]` on an `impl` block adds
//! `register_tools(self: Arc<Self>, builder: ServerBuilder) -> ServerBuilder`.
//! Apply companions by nesting calls, or fold a list of them:
//!
//! ```
//! # use std::sync::Arc;
//! # use mcpflow::server::Server;
//! # #[mcpflow::tool] async fn add() -> Result<String, String> { Ok(String::new()) }
//! # #[mcpflow::prompt] async fn greet() -> Result<Vec<mcpflow::protocol::PromptMessage>, String> { Ok(vec![]) }
//! # #[mcpflow::resource("notes://a")] async fn note() -> Result<String, String> { Ok(String::new()) }
//! # #[derive(Default)] struct Counter;
//! # #[mcpflow::tools] impl Counter { #[tool] async fn get(&self) -> Result<String, String> { Ok(String::new()) } }
//! let builder = Server::builder("demo", "1.0.0");
//! let builder = [add_tool, greet_prompt, note_resource]
//!     .into_iter()
//!     .fold(builder, |builder, register| register(builder));
//! let server = Arc::new(Counter::default()).register_tools(builder).build();
//! # drop(server);
//! ```
//!
//! The generated code names `::mcpflow` and `::serde` (the argument structs derive
//! `serde::Deserialize`, so the crate depends on `serde` already).
//!
//! # `#[tool]`
//!
//! ```
//! use mcpflow::server::{Server, ServerContext, Structured};
//! use mcpflow::schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// The first number.
//!     a: i64,
//!     /// The second number.
//!     b: i64,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Sum {
//!     sum: i64,
//! }
//!
//! /// Add two numbers.
//! #[mcpflow::tool(title = "Adder")]
//! async fn add(args: AddArgs, _cx: ServerContext) -> Result<Structured<Sum>, String> {
//!     Ok(Structured(Sum { sum: args.a + args.b }))
//! }
//!
//! /// The time, as text. A tool may take no arguments at all.
//! #[mcpflow::tool(name = "now")]
//! async fn current_time() -> Result<String, String> {
//!     Ok("noon".to_owned())
//! }
//!
//! let server = current_time_tool(add_tool(Server::builder("calc", "1.0.0"))).build();
//! # drop(server);
//! ```
//!
//! registers the same tools as
//!
//! ```
//! # use mcpflow::server::{Server, ServerContext, Structured};
//! # use mcpflow::protocol::{CallToolResult, JsonObject, Tool};
//! # use mcpflow::schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(Deserialize, JsonSchema)] struct AddArgs { a: i64, b: i64 }
//! # #[derive(Serialize, JsonSchema)] struct Sum { sum: i64 }
//! # async fn add(args: AddArgs, _cx: ServerContext) -> Result<Structured<Sum>, String> {
//! #     Ok(Structured(Sum { sum: args.a + args.b }))
//! # }
//! // The schemas come from `AddArgs` and `Structured<Sum>`; the arguments are decoded by
//! // serde straight from the request, and a misfit is answered naming its path.
//! let tool = Tool::new("add", "Add two numbers.", JsonObject::new()).with_title("Adder");
//! let server = Server::builder("calc", "1.0.0")
//!     .typed_tool_with(tool, add)
//!     .tool(Tool::new("now", "The time, as text. A tool may take no arguments at all.",
//!                     Tool::empty_input_schema()),
//!           |_arguments, _cx| async { Ok(CallToolResult::text("noon")) })
//!     .build();
//! # drop(server);
//! ```
//!
//! (without a title, that is `ServerBuilder::typed_tool("add", "Add two numbers.", add)`).
//!
//! - Parameters: an argument struct (`Deserialize + JsonSchema`; its schema is the
//!   `inputSchema`, its field docs the property descriptions), then optionally a
//!   `ServerContext`, recognized by its type's name. Both are optional: a tool without
//!   an argument struct declares `{"type": "object"}` and ignores its arguments.
//! - Return: `Result<R, E>` with `R: ToolOutput` (`String`, `&'static str`,
//!   `CallToolResult`, `ContentBlock`, `Vec<ContentBlock>`, `Structured<T>`, which also
//!   sets the `outputSchema`) and `E: Display` (the client gets `isError: true` with
//!   the message). A `ToolError` is passed through as it is, so
//!   `ToolError::invalid_params` still becomes a JSON-RPC error.
//! - Keys: `name` (default: the function's name), `title`, `description` (default:
//!   the doc comment).
//!
//! # `#[tools]`
//!
//! On an inherent `impl` block, for tools that share state. Each `#[tool]` method takes
//! `&self` (or no receiver); the generated `register_tools` clones the `Arc` into each
//! handler.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicI64, Ordering};
//! use mcpflow::server::Server;
//! use mcpflow::schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Default)]
//! struct Counter {
//!     n: AtomicI64,
//! }
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct IncArgs {
//!     /// How much to add.
//!     by: i64,
//! }
//!
//! #[mcpflow::tools]
//! impl Counter {
//!     /// Increment the counter; returns the new value.
//!     #[tool]
//!     async fn increment(&self, args: IncArgs) -> Result<String, String> {
//!         Ok((self.n.fetch_add(args.by, Ordering::SeqCst) + args.by).to_string())
//!     }
//! }
//!
//! let server = Arc::new(Counter::default())
//!     .register_tools(Server::builder("counter", "1.0.0"))
//!     .build();
//! # drop(server);
//! ```
//!
//! is, for each method, `builder.typed_tool("increment", "Increment ...", { let this =
//! counter.clone(); move |args, _cx| { let this = this.clone(); async move {
//! this.increment(args).await } } })`.
//!
//! # `#[prompt]`
//!
//! ```
//! use mcpflow::protocol::PromptMessage;
//! use mcpflow::server::Server;
//! use mcpflow::schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct ReviewArgs {
//!     /// The code to review.
//!     code: String,
//!     /// What to focus on.
//!     focus: Option<String>,
//! }
//!
//! /// Review a piece of code.
//! #[mcpflow::prompt(name = "review")]
//! async fn review_code(args: ReviewArgs) -> Result<Vec<PromptMessage>, String> {
//!     let focus = args.focus.unwrap_or_else(|| "anything".to_owned());
//!     Ok(vec![PromptMessage::user_text(format!("Review, looking at {focus}:\n{}", args.code))])
//! }
//!
//! let server = review_code_prompt(Server::builder("reviewer", "1.0.0")).build();
//! # drop(server);
//! ```
//!
//! stands for
//!
//! ```
//! # use mcpflow::protocol::{ErrorObject, GetPromptResult, Prompt, PromptArgument, PromptMessage};
//! # use mcpflow::server::Server;
//! # #[derive(serde::Deserialize)] struct ReviewArgs { code: String, focus: Option<String> }
//! # async fn review_code(args: ReviewArgs) -> Result<Vec<PromptMessage>, String> { Ok(vec![]) }
//! let prompt = Prompt::new("review", "Review a piece of code.")
//!     .with_argument(PromptArgument::new("code", "The code to review.", true))
//!     .with_argument(PromptArgument::new("focus", "What to focus on.", false));
//! let server = Server::builder("reviewer", "1.0.0")
//!     .prompt(prompt, |arguments, _cx| async move {
//!         let object: serde_json::Map<String, serde_json::Value> =
//!             arguments.into_iter().map(|(k, v)| (k, v.into())).collect();
//!         let args: ReviewArgs = serde_json::from_value(object.into())
//!             .map_err(|e| ErrorObject::invalid_params(format!("arguments do not fit the prompt `review`: {e}")))?;
//!         review_code(args).await.map(GetPromptResult::new).map_err(ErrorObject::internal)
//!     })
//!     .build();
//! # drop(server);
//! ```
//!
//! - The argument struct's properties become the prompt's arguments (required when
//!   the schema requires them, i.e. not `Option` and no `#[serde(default)]`; field docs
//!   become descriptions). Prompt arguments are strings on the wire, so its fields
//!   should be `String` or `Option<String>`. The struct and the `ServerContext` are
//!   both optional, as for tools.
//! - Return: `Result<GetPromptResult, E>` or `Result<Vec<PromptMessage>, E>`. An
//!   `Err(ErrorObject)` is sent as it is; any other `E: Display` becomes `-32603`.
//! - Keys: `name`, `title`, `description`, as for tools.
//!
//! # `#[resource("uri")]`
//!
//! A URI without `{...}` registers a fixed resource; with variables, a resource
//! template (RFC 6570 level 1: `{name}`, `{+name}`, `{#name}`, separated by literal
//! text; the URI is checked at compile time).
//!
//! ```
//! use std::collections::HashMap;
//! use mcpflow::protocol::ErrorObject;
//! use mcpflow::server::Server;
//!
//! /// Today's notes.
//! #[mcpflow::resource("notes://today", mime_type = "text/plain")]
//! async fn today(uri: String) -> Result<String, ErrorObject> {
//!     Ok(format!("nothing planned ({uri})"))
//! }
//!
//! /// One item, by number.
//! #[mcpflow::resource("items://{id}/{part}", name = "item")]
//! async fn item(id: u32, part: String) -> Result<String, String> {
//!     Ok(format!("item {id}, {part}"))
//! }
//!
//! /// Any file, with all variables at once.
//! #[mcpflow::resource("file:///{path}")]
//! async fn file(vars: HashMap<String, String>) -> Result<String, String> {
//!     Ok(vars["path"].clone())
//! }
//!
//! let server = file_resource(item_resource(today_resource(Server::builder("notes", "1.0.0")))).build();
//! # drop(server);
//! ```
//!
//! stands for
//!
//! ```
//! # use mcpflow::protocol::{ErrorObject, ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
//! # use mcpflow::server::Server;
//! # async fn today(uri: String) -> Result<String, ErrorObject> { Ok(uri) }
//! # async fn item(id: u32, part: String) -> Result<String, String> { Ok(part) }
//! let server = Server::builder("notes", "1.0.0")
//!     .resource(
//!         Resource::new("notes://today", "today").with_description("Today's notes.").with_mime_type("text/plain"),
//!         |uri, _cx| async move {
//!             let text = today(uri.clone()).await?;
//!             Ok(ReadResourceResult::new(vec![ResourceContents::text(uri, text).with_mime_type("text/plain")]))
//!         },
//!     )
//!     .resource_template(ResourceTemplate::new("items://{id}/{part}", "item"), |uri, vars, _cx| async move {
//!         let id: u32 = vars["id"].parse().map_err(|e| ErrorObject::invalid_params(format!("`id` in `{uri}`: {e}")))?;
//!         let text = item(id, vars["part"].clone()).await.map_err(ErrorObject::internal)?;
//!         Ok(ReadResourceResult::new(vec![ResourceContents::text(uri, text)]))
//!     })
//!     .build();
//! # drop(server);
//! ```
//!
//! - Parameters, matched by name or type, in any order, each optional except that
//!   every template variable must be received: a parameter named after a variable
//!   (any `FromStr` type; a value that does not parse is `-32602`), `uri` (the
//!   requested URI, `String`), a `HashMap<String, String>` (all variables), a
//!   `ServerContext`.
//! - Return: `Result<T, E>` with `T` one of `ReadResourceResult`, `ResourceContents`,
//!   `Vec<ResourceContents>`, `String` or `&'static str` (text contents for the
//!   requested URI, with `mime_type` if given). An `Err(ErrorObject)` is sent as it is
//!   (e.g. `-32002` resource not found); any other `E: Display` becomes `-32603`.
//! - Keys: the URI first, then `name` (default: the function's name), `title`,
//!   `description` (default: the doc comment) and `mime_type`.
//!
//! # `JsonSchema`
//!
//! `#[derive(mcpflow::JsonSchema)]` (also exported as `mcpflow::schemars::JsonSchema`)
//! is schemars' derive for a crate that depends on mcpflow but not on schemars. It takes
//! the same `serde`, `schemars`, `validate` and `garde` attributes and gives the same
//! schema, name and id (mcpflow's `tests/schema_derive.rs` compares the two). It declares
//! a hidden copy of the type that derives schemars' `JsonSchema` with the crate path set
//! to mcpflow's, and implements `JsonSchema` for the type by delegating to the copy;
//! attributes of other derives are left off the copy.
//!
//! ```
//! use mcpflow::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(rename_all = "camelCase")]
//! struct Search {
//!     /// What to look for.
//!     query: String,
//!     #[schemars(range(min = 1, max = 100))]
//!     max_results: Option<u32>,
//! }
//!
//! let schema = mcpflow::server::schema_of::<Search>();
//! assert_eq!(schema["properties"]["maxResults"]["maximum"], 100);
//! ```
//!
//! # Errors at compile time
//!
//! Each points at the offending code: a function that is not `async`, a generic one,
//! an unknown or repeated key, a `self` receiver outside `#[tools]` (or other than
//! `&self` inside), a parameter that is neither the argument struct nor the context
//! (or the context first), a resource URI with unbalanced braces or an unsupported
//! template form, and a template variable no parameter receives. The
//! `tests/ui/*.stderr` files show each message.

mod attr;
mod model;
mod render;
mod schema;
mod signature;
mod uri;

use proc_macro::TokenStream;
use quote::{ToTokens, quote};
use syn::{ImplItem, ItemFn, ItemImpl, Meta};

use crate::model::{PromptSpec, ResourceSpec, ToolSpec};

/// Register an `async fn` as an MCP tool: generates `NAME_tool(builder) -> builder`.
/// See the [crate docs](crate#tool).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as ItemFn);
    let generated = ToolSpec::parse(attr.into(), &function.attrs, &function.sig, false)
        .map(|spec| render::tool_function(&spec, &function.vis));
    finish(function.to_token_stream(), generated)
}

/// Register the `#[tool]` methods of an `impl` block: generates
/// `register_tools(self: Arc<Self>, builder) -> builder`. See the
/// [crate docs](crate#tools).
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut block = syn::parse_macro_input!(item as ItemImpl);
    let generated = tools_impl(attr.into(), &mut block);
    finish(block.to_token_stream(), generated)
}

/// Register an `async fn` as an MCP prompt: generates `NAME_prompt(builder) -> builder`.
/// See the [crate docs](crate#prompt).
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as ItemFn);
    let generated = PromptSpec::parse(attr.into(), &function.attrs, &function.sig)
        .map(|spec| render::prompt_function(&spec, &function.vis));
    finish(function.to_token_stream(), generated)
}

/// Register an `async fn` as an MCP resource or resource template (by its URI):
/// generates `NAME_resource(builder) -> builder`. See the
/// [crate docs](crate#resourceuri).
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as ItemFn);
    let generated = ResourceSpec::parse(attr.into(), &function.attrs, &function.sig)
        .map(|spec| render::resource_function(&spec, &function.vis));
    finish(function.to_token_stream(), generated)
}

/// Derive `JsonSchema` in a crate that depends on mcpflow but not on schemars: the
/// same attributes and output as schemars' derive. See the [crate docs](crate#jsonschema).
#[proc_macro_derive(JsonSchema, attributes(schemars, serde, validate, garde))]
pub fn json_schema(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    schema::derive(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The user's item, then the generated code or the error (the item is kept either
/// way, so one mistake does not cascade into "cannot find function" errors).
fn finish(
    item: proc_macro2::TokenStream,
    generated: syn::Result<proc_macro2::TokenStream>,
) -> TokenStream {
    let generated = generated.unwrap_or_else(syn::Error::into_compile_error);
    quote!(#item #generated).into()
}

/// Strip the `#[tool]` attributes from the block's methods and generate
/// `register_tools`.
fn tools_impl(
    attr: proc_macro2::TokenStream,
    block: &mut ItemImpl,
) -> syn::Result<proc_macro2::TokenStream> {
    let mut errors: Vec<syn::Error> = Vec::new();
    let mut push = |error: syn::Error| errors.push(error);
    if !attr.is_empty() {
        push(syn::Error::new_spanned(
            &attr,
            "`#[tools]` takes no arguments",
        ));
    }
    if let Some((_, path, _)) = &block.trait_ {
        push(syn::Error::new_spanned(
            path,
            "`#[tools]` goes on an inherent `impl` block, not a trait impl",
        ));
    }
    let mut specs = Vec::new();
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(index) = method
            .attrs
            .iter()
            .position(|a| a.path().segments.last().is_some_and(|s| s.ident == "tool"))
        else {
            continue;
        };
        let attribute = method.attrs.remove(index);
        let args = match attribute.meta {
            Meta::Path(_) => proc_macro2::TokenStream::new(),
            Meta::List(list) => list.tokens,
            Meta::NameValue(nv) => {
                push(syn::Error::new_spanned(
                    nv,
                    "write `#[tool]` or `#[tool(name = \"..\")]`",
                ));
                continue;
            }
        };
        match ToolSpec::parse(args, &method.attrs, &method.sig, true) {
            Ok(spec) => specs.push(spec),
            Err(e) => push(e),
        }
    }
    if let Some(all) = errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    }) {
        return Err(all);
    }
    if specs.is_empty() {
        return Err(syn::Error::new_spanned(
            &block.self_ty,
            "`#[tools]` found no `#[tool]` method in this impl block",
        ));
    }
    Ok(render::tools_impl(block, &specs))
}
