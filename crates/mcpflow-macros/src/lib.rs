//! The attribute macros of [mcpflow](https://docs.rs/mcpflow): `#[tool]`, `#[tools]`,
//! `#[prompt]` and `#[resource("uri")]` register plain `async fn`s as MCP tools, prompts
//! and resources on mcpflow's `ServerBuilder`, and the `JsonSchema` derive stands for
//! schemars' in a crate that depends on mcpflow alone.
//!
//! Use them through mcpflow, which exports them as `mcpflow::{tool, tools, prompt,
//! resource, JsonSchema}` (feature `macros`, on by default, for the first four). The
//! guide, with an example for each macro and the builder code it stands for, is mcpflow's
//! [Attribute macros](https://docs.rs/mcpflow/latest/mcpflow/#attribute-macros).

// Each attribute macro is documented on mcpflow's re-export, the page its users read,
// whose examples run as mcpflow's doctests.
#![allow(missing_docs)]

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

#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as ItemFn);
    let generated = ToolSpec::parse(attr.into(), &function.attrs, &function.sig, false)
        .map(|spec| render::tool_function(&spec, &function.vis));
    finish(function.to_token_stream(), generated)
}

#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut block = syn::parse_macro_input!(item as ItemImpl);
    let generated = tools_impl(attr.into(), &mut block);
    finish(block.to_token_stream(), generated)
}

#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as ItemFn);
    let generated = PromptSpec::parse(attr.into(), &function.attrs, &function.sig)
        .map(|spec| render::prompt_function(&spec, &function.vis));
    finish(function.to_token_stream(), generated)
}

#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as ItemFn);
    let generated = ResourceSpec::parse(attr.into(), &function.attrs, &function.sig)
        .map(|spec| render::resource_function(&spec, &function.vis));
    finish(function.to_token_stream(), generated)
}

/// Derive `JsonSchema` in a crate that depends on mcpflow but not on schemars: the
/// same attributes and output as schemars' derive.
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
