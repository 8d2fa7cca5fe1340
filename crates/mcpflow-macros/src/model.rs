//! What each macro registers, read from its attribute and the function it is on. No
//! code is generated here (see `render`).

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitStr, Signature, Type};

use crate::attr::{parse_args, string_or};
use crate::signature::{
    ArgsAndContext, Receiver, ResourceParam, args_and_context, check_async, doc_comment, receiver,
    resource_params,
};
use crate::uri::template_variables;

/// Name, title and description, as registered.
pub(crate) struct Labels {
    /// The MCP name (default: the function's name).
    pub(crate) name: LitStr,
    /// The display title, if given.
    pub(crate) title: Option<LitStr>,
    /// `description = ".."`, else the doc comment, else none.
    pub(crate) description: Option<LitStr>,
}

/// A `#[tool]` function or method.
pub(crate) struct ToolSpec {
    /// The Rust function.
    pub(crate) ident: Ident,
    /// How it is called.
    pub(crate) receiver: Receiver,
    /// Its parameters.
    pub(crate) params: ArgsAndContext,
    /// What the client sees.
    pub(crate) labels: Labels,
    /// Where errors about the return type point.
    pub(crate) output_span: Span,
}

/// A `#[prompt]` function.
pub(crate) struct PromptSpec {
    /// The Rust function.
    pub(crate) ident: Ident,
    /// Its parameters.
    pub(crate) params: ArgsAndContext,
    /// What the client sees.
    pub(crate) labels: Labels,
    /// Where errors about the return type point.
    pub(crate) output_span: Span,
}

/// A `#[resource("...")]` function.
pub(crate) struct ResourceSpec {
    /// The Rust function.
    pub(crate) ident: Ident,
    /// The URI or URI template.
    pub(crate) uri: LitStr,
    /// The template's variables; empty for a fixed resource.
    pub(crate) variables: Vec<String>,
    /// What each parameter receives, in order.
    pub(crate) params: Vec<ResourceParam>,
    /// What the client sees.
    pub(crate) labels: Labels,
    /// `mime_type = ".."`, if given.
    pub(crate) mime_type: Option<LitStr>,
    /// Where errors about the return type point.
    pub(crate) output_span: Span,
}

const LABEL_KEYS: &[&str] = &["name", "title", "description"];
const RESOURCE_KEYS: &[&str] = &["name", "title", "description", "mime_type"];

fn labels(values: &mut crate::attr::KeyValues, sig: &Signature, attrs: &[Attribute]) -> Labels {
    let default_name = sig.ident.unraw().to_string();
    let description = values
        .take("description")
        .or_else(|| doc_comment(attrs).map(|doc| LitStr::new(&doc, sig.ident.span())));
    Labels {
        name: string_or(values.take("name"), &default_name, sig.ident.span()),
        title: values.take("title"),
        description,
    }
}

fn output_span(sig: &Signature) -> Span {
    match &sig.output {
        syn::ReturnType::Default => sig.ident.span(),
        syn::ReturnType::Type(_, ty) => ty.span(),
    }
}

impl ToolSpec {
    /// Read a `#[tool(..)]` attribute's arguments and the function. `in_impl` is true
    /// inside `#[tools]`, where `&self` methods are allowed.
    pub(crate) fn parse(
        args: TokenStream,
        attrs: &[Attribute],
        sig: &Signature,
        in_impl: bool,
    ) -> syn::Result<Self> {
        let (_, mut values) = parse_args(args, "tool", LABEL_KEYS, false)?;
        check_async(sig, "tool")?;
        let receiver = receiver(sig, "tool", in_impl)?;
        let params = args_and_context(sig, "tool")?;
        Ok(ToolSpec {
            ident: sig.ident.clone(),
            receiver,
            params,
            labels: labels(&mut values, sig, attrs),
            output_span: output_span(sig),
        })
    }
}

impl PromptSpec {
    /// Read a `#[prompt(..)]` attribute's arguments and the function.
    pub(crate) fn parse(
        args: TokenStream,
        attrs: &[Attribute],
        sig: &Signature,
    ) -> syn::Result<Self> {
        let (_, mut values) = parse_args(args, "prompt", LABEL_KEYS, false)?;
        check_async(sig, "prompt")?;
        receiver(sig, "prompt", false)?;
        let params = args_and_context(sig, "prompt")?;
        Ok(PromptSpec {
            ident: sig.ident.clone(),
            params,
            labels: labels(&mut values, sig, attrs),
            output_span: output_span(sig),
        })
    }
}

impl ResourceSpec {
    /// Read a `#[resource("uri", ..)]` attribute's arguments and the function.
    pub(crate) fn parse(
        args: TokenStream,
        attrs: &[Attribute],
        sig: &Signature,
    ) -> syn::Result<Self> {
        let (uri, mut values) = parse_args(args, "resource", RESOURCE_KEYS, true)?;
        let uri = uri.ok_or_else(|| {
            syn::Error::new(
                Span::call_site(),
                "`#[resource]` needs its URI first: `#[resource(\"scheme://path/{id}\")]`",
            )
        })?;
        let variables =
            template_variables(&uri.value()).map_err(|m| syn::Error::new(uri.span(), m))?;
        check_async(sig, "resource")?;
        receiver(sig, "resource", false)?;
        let params = resource_params(sig, &variables)?;
        Ok(ResourceSpec {
            ident: sig.ident.clone(),
            uri,
            variables,
            params,
            mime_type: values.take("mime_type"),
            labels: labels(&mut values, sig, attrs),
            output_span: output_span(sig),
        })
    }

    /// Whether the URI is a template.
    pub(crate) fn is_template(&self) -> bool {
        !self.variables.is_empty()
    }

    /// The types of the variables received by name, with their names.
    pub(crate) fn named_variables(&self) -> impl Iterator<Item = (&String, &Type)> {
        self.params.iter().filter_map(|p| match p {
            ResourceParam::Variable(name, ty) => Some((name, &**ty)),
            _ => None,
        })
    }
}
