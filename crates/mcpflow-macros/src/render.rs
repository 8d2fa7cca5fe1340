//! Code generation: each spec becomes an expression that takes the `ServerBuilder` in
//! `builder` and returns it with one more registration, using only mcpflow's public
//! builder API (`tool`, `prompt`, `resource`, `resource_template`).
//!
//! Local variables use `Span::mixed_site()`, so they cannot clash with the user's
//! names; helper items (traits, a wrapper struct) are declared inside the generated
//! function's body and carry a `__Mcpflow` prefix.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::LitStr;

use crate::model::{Labels, PromptSpec, ResourceSpec, ToolSpec};
use crate::signature::{Receiver, ResourceParam};

/// A hygienic local variable.
fn local(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::mixed_site())
}

/// The builder variable every registration reads and returns.
pub(crate) fn builder_ident() -> syn::Ident {
    local("builder")
}

fn optional_string(value: Option<&LitStr>) -> TokenStream {
    match value {
        Some(lit) => quote!(::core::option::Option::Some(::std::string::String::from(#lit))),
        None => quote!(::core::option::Option::None),
    }
}

fn set_labels(target: &syn::Ident, labels: &Labels) -> TokenStream {
    let title = optional_string(labels.title.as_ref());
    let description = optional_string(labels.description.as_ref());
    quote! {
        #target.title = #title;
        #target.description = #description;
    }
}

/// `struct __McpflowWrap` and traits that turn a handler's error into a `ToolError`
/// (`tool`) or an `ErrorObject` (`!tool`): one of those is kept as it is (autoref
/// specialization: the by-value impl wins over the by-reference one, and the error
/// type is concrete where it is called), anything else that implements `Display`
/// becomes a failure carrying its message.
fn error_helpers(tool: bool) -> TokenStream {
    let (target, method, make) = if tool {
        (
            quote!(::mcpflow::server::ToolError),
            quote!(__mcpflow_tool_error),
            quote!(::mcpflow::server::ToolError::failed(
                ::std::string::ToString::to_string(&self.0)
            )),
        )
    } else {
        (
            quote!(::mcpflow::protocol::ErrorObject),
            quote!(__mcpflow_error_object),
            quote!(::mcpflow::protocol::ErrorObject::internal(&self.0)),
        )
    };
    quote! {
        struct __McpflowWrap<T>(T);
        trait __McpflowErrorExact {
            fn #method(self) -> #target;
        }
        impl __McpflowErrorExact for __McpflowWrap<#target> {
            fn #method(self) -> #target {
                self.0
            }
        }
        trait __McpflowErrorDisplay {
            fn #method(self) -> #target;
        }
        impl<T: ::core::fmt::Display> __McpflowErrorDisplay for &__McpflowWrap<T> {
            fn #method(self) -> #target {
                #make
            }
        }
    }
}

/// Items the tool registrations of one generated function share.
pub(crate) fn tool_helpers() -> TokenStream {
    let errors = error_helpers(true);
    quote! {
        #errors
        fn __mcpflow_output_schema<A, R, E, F, Fut>(
            _call: &F,
        ) -> ::core::option::Option<::mcpflow::protocol::JsonObject>
        where
            F: ::core::ops::Fn(A, ::mcpflow::server::ServerContext) -> Fut,
            Fut: ::core::future::Future<Output = ::core::result::Result<R, E>>,
            R: ::mcpflow::server::ToolOutput,
        {
            <R as ::mcpflow::server::ToolOutput>::output_schema()
        }
    }
}

/// Register one tool on `builder`; for a method, `this` (an `Arc<Self>`) must be in
/// scope.
pub(crate) fn tool_registration(spec: &ToolSpec, in_impl: bool) -> TokenStream {
    let builder = builder_ident();
    let call = local("call");
    let tool = local("tool");
    let cx = local("cx");
    let args = local("args");
    let output = local("output");
    let error = local("error");
    let ident = &spec.ident;
    let name = &spec.labels.name;
    let labels = set_labels(&tool, &spec.labels);
    let callee = if in_impl && spec.receiver == Receiver::None {
        quote!(Self::#ident)
    } else {
        quote!(#ident)
    };
    let (args_param, cx_param, call_args) = handler_params(&spec.params, &args, &cx);
    let closure = match spec.receiver {
        Receiver::None => quote!(move |#args_param, #cx_param| #callee(#(#call_args),*)),
        Receiver::Ref => {
            let this = local("this");
            let shared = local("shared");
            quote! {{
                let #shared = ::std::sync::Arc::clone(&#this);
                move |#args_param, #cx_param| {
                    let #this = ::std::sync::Arc::clone(&#shared);
                    async move { Self::#ident(&#this, #(#call_args),*).await }
                }
            }}
        }
    };
    let (schema, arg_type, arg_value) = match &spec.params.args {
        Some(ty) => (
            quote!(::mcpflow::server::schema_of::<#ty>()),
            quote!(#ty),
            args.to_token_stream(),
        ),
        None => (
            quote!(::mcpflow::protocol::Tool::empty_input_schema()),
            quote!(::mcpflow::server::NoArguments),
            quote!(()),
        ),
    };
    let output_schema = quote_spanned!(spec.output_span=> __mcpflow_output_schema(&#call));
    quote! {{
        let #call = #closure;
        let mut #tool = ::mcpflow::protocol::Tool::new(#name, "", #schema);
        #labels
        #tool.output_schema = #output_schema;
        let #call = ::std::sync::Arc::new(#call);
        // Typed arguments, decoded by serde straight from the request.
        #builder.typed_tool_entry(#tool, move |#args: #arg_type,
                                             #cx: ::mcpflow::server::ServerContext| {
            let #call = ::std::sync::Arc::clone(&#call);
            async move {
                match #call(#arg_value, #cx).await {
                    ::core::result::Result::Ok(#output) => ::core::result::Result::Ok(
                        ::mcpflow::server::ToolOutput::into_call_result(#output),
                    ),
                    ::core::result::Result::Err(#error) => ::core::result::Result::Err(
                        __McpflowWrap(#error).__mcpflow_tool_error(),
                    ),
                }
            }
        })
    }}
}

/// The companion function of a free `#[tool]` fn: `fn NAME_tool(builder) -> builder`.
pub(crate) fn tool_function(spec: &ToolSpec, vis: &syn::Visibility) -> TokenStream {
    let builder = builder_ident();
    let fn_name = format_ident!("{}_tool", spec.ident.unraw_string());
    let doc = format!(
        "Registers the `{}` tool (the function [`{}`]) on a server builder. Generated by \
         `#[tool]`.",
        spec.labels.name.value(),
        spec.ident
    );
    let helpers = tool_helpers();
    let registration = tool_registration(spec, false);
    quote! {
        #[doc = #doc]
        #vis fn #fn_name(
            #builder: ::mcpflow::server::ServerBuilder,
        ) -> ::mcpflow::server::ServerBuilder {
            #helpers
            #registration
        }
    }
}

/// The companion function of a `#[prompt]` fn: `fn NAME_prompt(builder) -> builder`.
pub(crate) fn prompt_function(spec: &PromptSpec, vis: &syn::Visibility) -> TokenStream {
    let builder = builder_ident();
    let call = local("call");
    let prompt = local("prompt");
    let arguments = local("arguments");
    let object = local("object");
    let cx = local("cx");
    let args = local("args");
    let output = local("output");
    let error = local("error");
    let ident = &spec.ident;
    let name = &spec.labels.name;
    let labels = set_labels(&prompt, &spec.labels);
    let fn_name = format_ident!("{}_prompt", spec.ident.unraw_string());
    let doc = format!(
        "Registers the `{}` prompt (the function [`{}`]) on a server builder. Generated by \
         `#[prompt]`.",
        name.value(),
        spec.ident
    );
    let errors = error_helpers(false);
    let (args_param, cx_param, call_args) = handler_params(&spec.params, &args, &cx);
    let (declared, decode) = match &spec.params.args {
        Some(ty) => (
            quote!(__mcpflow_prompt_arguments(&::mcpflow::server::schema_of::<#ty>())),
            quote! {{
                let mut #object = ::mcpflow::protocol::JsonObject::new();
                for (key, value) in #arguments {
                    #object.insert(key, ::core::convert::From::from(value));
                }
                <#ty as ::serde::Deserialize>::deserialize(#object).map_err(|e| {
                    ::mcpflow::protocol::ErrorObject::invalid_params(::std::format!(
                        "arguments do not fit the prompt `{}`: {e}", #name
                    ))
                })?
            }},
        ),
        None => (
            quote!(::core::option::Option::None),
            quote!({
                let _ = #arguments;
            }),
        ),
    };
    let into_result = quote_spanned!(spec.output_span=>
        __McpflowPromptResult::__mcpflow_prompt_result(#output)
    );
    quote! {
        #[doc = #doc]
        #vis fn #fn_name(
            #builder: ::mcpflow::server::ServerBuilder,
        ) -> ::mcpflow::server::ServerBuilder {
            #errors
            trait __McpflowPromptResult {
                fn __mcpflow_prompt_result(self) -> ::mcpflow::protocol::GetPromptResult;
            }
            impl __McpflowPromptResult for ::mcpflow::protocol::GetPromptResult {
                fn __mcpflow_prompt_result(self) -> ::mcpflow::protocol::GetPromptResult {
                    self
                }
            }
            impl __McpflowPromptResult for ::std::vec::Vec<::mcpflow::protocol::PromptMessage> {
                fn __mcpflow_prompt_result(self) -> ::mcpflow::protocol::GetPromptResult {
                    ::mcpflow::protocol::GetPromptResult::new(self)
                }
            }
            /// The prompt's arguments from its argument struct's JSON Schema: one per
            /// property, required when the schema requires it.
            #[allow(dead_code)]
            fn __mcpflow_prompt_arguments(
                schema: &::mcpflow::protocol::JsonObject,
            ) -> ::core::option::Option<::std::vec::Vec<::mcpflow::protocol::PromptArgument>> {
                let required: ::std::vec::Vec<&str> = schema
                    .get("required")
                    .and_then(|r| r.as_array())
                    .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
                    .unwrap_or_default();
                let properties = schema.get("properties").and_then(|p| p.as_object())?;
                ::core::option::Option::Some(
                    properties
                        .iter()
                        .map(|(name, property)| {
                            let mut argument = ::mcpflow::protocol::PromptArgument::new(
                                name.clone(),
                                "",
                                required.contains(&name.as_str()),
                            );
                            argument.description = property
                                .get("description")
                                .and_then(|d| d.as_str())
                                .map(::std::borrow::ToOwned::to_owned);
                            argument
                        })
                        .collect(),
                )
            }
            let #call = move |#args_param, #cx_param| #ident(#(#call_args),*);
            let mut #prompt = ::mcpflow::protocol::Prompt::new(#name, "");
            #labels
            #prompt.arguments = #declared;
            #builder.prompt(#prompt, move |#arguments: ::std::collections::BTreeMap<
                ::std::string::String,
                ::std::string::String,
            >, #cx: ::mcpflow::server::ServerContext| async move {
                let #args = #decode;
                match #call(#args, #cx).await {
                    ::core::result::Result::Ok(#output) => ::core::result::Result::Ok(#into_result),
                    ::core::result::Result::Err(#error) => ::core::result::Result::Err(
                        __McpflowWrap(#error).__mcpflow_error_object(),
                    ),
                }
            })
        }
    }
}

/// The companion function of a `#[resource]` fn: `fn NAME_resource(builder) -> builder`.
pub(crate) fn resource_function(spec: &ResourceSpec, vis: &syn::Visibility) -> TokenStream {
    let builder = builder_ident();
    let entry = local("entry");
    let uri = local("uri");
    let vars = local("vars");
    let cx = local("cx");
    let output = local("output");
    let error = local("error");
    let ident = &spec.ident;
    let uri_lit = &spec.uri;
    let name = &spec.labels.name;
    let labels = set_labels(&entry, &spec.labels);
    let mime = optional_string(spec.mime_type.as_ref());
    let fn_name = format_ident!("{}_resource", spec.ident.unraw_string());
    let kind = if spec.is_template() {
        "resource template"
    } else {
        "resource"
    };
    let doc = format!(
        "Registers the {kind} `{}` (the function [`{}`]) on a server builder. Generated \
         by `#[resource]`.",
        uri_lit.value(),
        spec.ident
    );
    let errors = error_helpers(false);

    let mut parse_vars = Vec::new();
    let mut var_locals = std::collections::HashMap::new();
    for (index, (var, ty)) in spec.named_variables().enumerate() {
        let local_var = local(&format!("var{index}"));
        let ty_span = syn::spanned::Spanned::span(ty);
        let parse = quote_spanned!(ty_span=> <#ty as ::core::str::FromStr>::from_str(value));
        parse_vars.push(quote! {
            let #local_var: #ty = match #vars.get(#var) {
                ::core::option::Option::Some(value) => #parse.map_err(|e| {
                    ::mcpflow::protocol::ErrorObject::invalid_params(::std::format!(
                        "`{}` in `{}`: {e}", #var, #uri
                    ))
                })?,
                ::core::option::Option::None => {
                    return ::core::result::Result::Err(
                        ::mcpflow::protocol::ErrorObject::invalid_params(::std::format!(
                            "`{}` is missing from `{}`", #var, #uri
                        )),
                    );
                }
            };
        });
        var_locals.insert(var.clone(), local_var);
    }
    let call_args: Vec<TokenStream> = spec
        .params
        .iter()
        .map(|param| match param {
            ResourceParam::Uri => quote!(::core::clone::Clone::clone(&#uri)),
            ResourceParam::Variables => quote!(::core::clone::Clone::clone(&#vars)),
            ResourceParam::Variable(var, _) => var_locals
                .get(var)
                .map(ToTokens::to_token_stream)
                .unwrap_or_default(),
            ResourceParam::Context => cx.to_token_stream(),
        })
        .collect();
    let cx_param = if spec.params.contains(&ResourceParam::Context) {
        quote!(#cx: ::mcpflow::server::ServerContext)
    } else {
        quote!(_: ::mcpflow::server::ServerContext)
    };
    let into_result = quote_spanned!(spec.output_span=>
        __McpflowReadResult::__mcpflow_read_result(#output, &#uri, #mime)
    );
    let body = quote! {
        async move {
            #(#parse_vars)*
            match #ident(#(#call_args),*).await {
                ::core::result::Result::Ok(#output) => ::core::result::Result::Ok(#into_result),
                ::core::result::Result::Err(#error) => ::core::result::Result::Err(
                    __McpflowWrap(#error).__mcpflow_error_object(),
                ),
            }
        }
    };
    let register = if spec.is_template() {
        quote! {
            let mut #entry = ::mcpflow::protocol::ResourceTemplate::new(#uri_lit, #name);
            #labels
            #entry.mime_type = #mime;
            #builder.resource_template(#entry, move |#uri: ::std::string::String,
                #vars: ::std::collections::HashMap<::std::string::String, ::std::string::String>,
                #cx_param| #body)
        }
    } else {
        quote! {
            let mut #entry = ::mcpflow::protocol::Resource::new(#uri_lit, #name);
            #labels
            #entry.mime_type = #mime;
            #builder.resource(#entry, move |#uri: ::std::string::String, #cx_param| #body)
        }
    };
    quote! {
        #[doc = #doc]
        #vis fn #fn_name(
            #builder: ::mcpflow::server::ServerBuilder,
        ) -> ::mcpflow::server::ServerBuilder {
            #errors
            trait __McpflowReadResult {
                fn __mcpflow_read_result(
                    self,
                    uri: &str,
                    mime_type: ::core::option::Option<::std::string::String>,
                ) -> ::mcpflow::protocol::ReadResourceResult;
            }
            impl __McpflowReadResult for ::mcpflow::protocol::ReadResourceResult {
                fn __mcpflow_read_result(
                    self,
                    _: &str,
                    _: ::core::option::Option<::std::string::String>,
                ) -> ::mcpflow::protocol::ReadResourceResult {
                    self
                }
            }
            impl __McpflowReadResult for ::std::vec::Vec<::mcpflow::protocol::ResourceContents> {
                fn __mcpflow_read_result(
                    self,
                    _: &str,
                    _: ::core::option::Option<::std::string::String>,
                ) -> ::mcpflow::protocol::ReadResourceResult {
                    ::mcpflow::protocol::ReadResourceResult::new(self)
                }
            }
            impl __McpflowReadResult for ::mcpflow::protocol::ResourceContents {
                fn __mcpflow_read_result(
                    self,
                    _: &str,
                    _: ::core::option::Option<::std::string::String>,
                ) -> ::mcpflow::protocol::ReadResourceResult {
                    ::mcpflow::protocol::ReadResourceResult::new(::std::vec![self])
                }
            }
            impl __McpflowReadResult for ::std::string::String {
                fn __mcpflow_read_result(
                    self,
                    uri: &str,
                    mime_type: ::core::option::Option<::std::string::String>,
                ) -> ::mcpflow::protocol::ReadResourceResult {
                    let contents = ::mcpflow::protocol::ResourceContents::text(uri, self);
                    let contents = match mime_type {
                        ::core::option::Option::Some(mime) => contents.with_mime_type(mime),
                        ::core::option::Option::None => contents,
                    };
                    ::mcpflow::protocol::ReadResourceResult::new(::std::vec![contents])
                }
            }
            impl __McpflowReadResult for &'static str {
                fn __mcpflow_read_result(
                    self,
                    uri: &str,
                    mime_type: ::core::option::Option<::std::string::String>,
                ) -> ::mcpflow::protocol::ReadResourceResult {
                    __McpflowReadResult::__mcpflow_read_result(
                        ::std::string::String::from(self),
                        uri,
                        mime_type,
                    )
                }
            }
            #register
        }
    }
}

/// `Ident::unraw` as a string, for building companion names.
trait UnrawString {
    fn unraw_string(&self) -> String;
}

impl UnrawString for syn::Ident {
    fn unraw_string(&self) -> String {
        syn::ext::IdentExt::unraw(self).to_string()
    }
}

/// The `register_tools` method of a `#[tools]` impl block, in an impl block of its own.
pub(crate) fn tools_impl(block: &syn::ItemImpl, specs: &[ToolSpec]) -> TokenStream {
    let builder = builder_ident();
    let this = local("this");
    let (impl_generics, _, where_clause) = block.generics.split_for_impl();
    let self_ty = &block.self_ty;
    let helpers = tool_helpers();
    let registrations = specs.iter().map(|spec| {
        let registration = tool_registration(spec, true);
        quote!(let #builder = #registration;)
    });
    let names: Vec<String> = specs
        .iter()
        .map(|s| format!("`{}`", s.labels.name.value()))
        .collect();
    let doc = format!(
        "Registers the tools {} on a server builder; each handler holds a clone of the \
         `Arc`. Generated by `#[tools]`.",
        names.join(", ")
    );
    quote! {
        impl #impl_generics #self_ty #where_clause {
            #[doc = #doc]
            pub fn register_tools(
                self: ::std::sync::Arc<Self>,
                #builder: ::mcpflow::server::ServerBuilder,
            ) -> ::mcpflow::server::ServerBuilder {
                #helpers
                let #this = self;
                #(#registrations)*
                let _ = &#this;
                #builder
            }
        }
    }
}

/// The generated closure's two parameters (arguments, context; unused ones become `_`)
/// and the arguments it passes on to the user's function, for tools and prompts alike.
fn handler_params(
    params: &crate::signature::ArgsAndContext,
    args: &proc_macro2::Ident,
    cx: &proc_macro2::Ident,
) -> (TokenStream, TokenStream, Vec<TokenStream>) {
    let args_param = match &params.args {
        Some(ty) => quote!(#args: #ty),
        None => quote!(_: ()),
    };
    let cx_param = if params.context {
        quote!(#cx: ::mcpflow::server::ServerContext)
    } else {
        quote!(_: ::mcpflow::server::ServerContext)
    };
    let mut call_args = Vec::new();
    if params.args.is_some() {
        call_args.push(args.to_token_stream());
    }
    if params.context {
        call_args.push(cx.to_token_stream());
    }
    (args_param, cx_param, call_args)
}
