//! `#[derive(JsonSchema)]` through mcpflow's re-export of `schemars`.
//!
//! schemars' own derive names the crate as `schemars::...`, which resolves only in a
//! crate that depends on schemars itself. A derive cannot add attributes to the item it
//! is applied to, so this one declares a private copy of the item with
//! `#[derive(JsonSchema)] #[schemars(crate = "::mcpflow::__private::schemars")]` and the
//! same fields, generics, documentation and `serde`/`schemars` attributes, and implements
//! `JsonSchema` for the user's type by delegating to the copy. The copy is named after the
//! original in the schema (`rename`), so titles, `$defs` keys and schema ids are those
//! schemars would give the original.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::punctuated::Punctuated;
use syn::{Attribute, Data, DeriveInput, Fields, Meta, Token, Visibility};

/// The schemars crate as the generated code names it.
const SCHEMARS: &str = "::mcpflow::__private::schemars";

/// The attributes schemars' derive reads: its helpers, and doc comments.
const READ_BY_SCHEMARS: [&str; 5] = ["doc", "serde", "schemars", "validate", "garde"];

/// Attributes schemars' derive reads, `cfg`, which decides whether a field exists at
/// all, and `repr`.
fn is_kept(attribute: &Attribute) -> bool {
    let path = attribute.path();
    READ_BY_SCHEMARS
        .iter()
        .chain(&["cfg", "repr"])
        .any(|name| path.is_ident(name))
        || (path.is_ident("cfg_attr") && cfg_attr_is_kept(attribute))
}

/// A `cfg_attr(predicate, attrs...)` is kept when every attribute it may add is.
fn cfg_attr_is_kept(attribute: &Attribute) -> bool {
    let Ok(list) = attribute.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
    else {
        return false;
    };
    list.iter().skip(1).all(|meta| {
        READ_BY_SCHEMARS
            .iter()
            .any(|name| meta.path().is_ident(name))
    })
}

/// Whether `serde` or `schemars` on the container already names the schema (`rename`)
/// or makes it a remote derive, which names it after the remote type.
fn names_itself(attributes: &[Attribute]) -> bool {
    attributes
        .iter()
        .filter(|a| a.path().is_ident("serde") || a.path().is_ident("schemars"))
        .any(|a| has_key(a, &["rename", "remote"]))
}

/// Whether a `schemars(crate = ...)` is present: the copy sets its own.
fn is_crate_override(attribute: &Attribute) -> bool {
    attribute.path().is_ident("schemars") && has_key(attribute, &["crate"])
}

/// Whether the attribute's list has one of `keys`, as `key = value` or `key(...)`. An
/// attribute this cannot read is left for schemars to report.
fn has_key(attribute: &Attribute, keys: &[&str]) -> bool {
    let mut found = false;
    let _ = attribute.parse_nested_meta(|meta| {
        found |= keys.iter().any(|key| meta.path.is_ident(key));
        skip_value(&meta)
    });
    found
}

/// Skip a key's value (`= expr`, or a list such as `(serialize = "a")`), so the next
/// key parses.
fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

fn keep(attributes: &mut Vec<Attribute>) {
    attributes.retain(|a| is_kept(a) && !is_crate_override(a));
}

fn keep_in_fields(fields: &mut Fields) {
    for field in fields.iter_mut() {
        keep(&mut field.attrs);
        field.vis = Visibility::Inherited;
    }
}

/// The derive's expansion for `input`.
pub(crate) fn derive(mut input: DeriveInput) -> syn::Result<TokenStream> {
    let schemars: syn::Path = syn::parse_str(SCHEMARS)?;
    let original = input.ident.clone();
    let name = original.to_string();
    let copy = format_ident!("__McpflowSchemaOf{}", original, span = Span::mixed_site());

    match &mut input.data {
        Data::Struct(data) => keep_in_fields(&mut data.fields),
        Data::Enum(data) => {
            for variant in &mut data.variants {
                keep(&mut variant.attrs);
                keep_in_fields(&mut variant.fields);
            }
        }
        Data::Union(data) => {
            return Err(syn::Error::new_spanned(
                data.union_token,
                "JsonSchema cannot be derived for a union",
            ));
        }
    }
    let rename = (!names_itself(&input.attrs)).then(|| quote!(#[schemars(rename = #name)]));
    keep(&mut input.attrs);
    input.ident = copy.clone();
    // `pub` inside the block, so that naming the copy in the impl's bounds exposes
    // nothing: it cannot be reached from outside the block.
    input.vis = syn::parse_quote!(pub);

    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let mut bounds = where_clause
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(where));
    bounds
        .predicates
        .push(syn::parse_quote!(#copy #type_generics: #schemars::JsonSchema));

    Ok(quote! {
        const _: () = {
            #[derive(#schemars::JsonSchema)]
            #[schemars(crate = #SCHEMARS)]
            #rename
            #[allow(dead_code, non_camel_case_types, clippy::all)]
            #input

            #[automatically_derived]
            impl #impl_generics #schemars::JsonSchema for #original #type_generics #bounds {
                fn inline_schema() -> bool {
                    <#copy #type_generics as #schemars::JsonSchema>::inline_schema()
                }

                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    <#copy #type_generics as #schemars::JsonSchema>::schema_name()
                }

                fn schema_id() -> ::std::borrow::Cow<'static, str> {
                    <#copy #type_generics as #schemars::JsonSchema>::schema_id()
                }

                fn json_schema(generator: &mut #schemars::SchemaGenerator) -> #schemars::Schema {
                    <#copy #type_generics as #schemars::JsonSchema>::json_schema(generator)
                }
            }
        };
    })
}
