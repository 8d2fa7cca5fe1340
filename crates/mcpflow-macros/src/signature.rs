//! Reading a handler's signature: is it `async`, what receiver it has, and which
//! parameter is the argument struct, the `ServerContext`, the URI or a template
//! variable. Everything here is syntax; types are checked by the compiler on the
//! generated code.

use syn::{Attribute, Expr, FnArg, Lit, Meta, Pat, Signature, Type};

/// How a handler is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receiver {
    /// A free function or an associated function without `self`.
    None,
    /// A method taking `&self` (in a `#[tools]` impl).
    Ref,
}

/// A tool's or a prompt's parameters: `(args?, cx?)`.
#[derive(Clone)]
pub(crate) struct ArgsAndContext {
    /// The argument struct's type, when the function takes one.
    pub(crate) args: Option<Type>,
    /// Whether the function takes a `ServerContext` last.
    pub(crate) context: bool,
}

/// What one parameter of a resource function receives. Equal when of the same kind
/// (and, for a variable, the same name).
#[derive(Clone)]
pub(crate) enum ResourceParam {
    /// The requested URI (a parameter named `uri`).
    Uri,
    /// All template variables (a `HashMap<String, String>`).
    Variables,
    /// One template variable, parsed with `FromStr` into the parameter's type.
    Variable(String, Box<Type>),
    /// The `ServerContext`.
    Context,
}

impl PartialEq for ResourceParam {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ResourceParam::Variable(a, _), ResourceParam::Variable(b, _)) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

/// Fail unless the function is `async`, non-generic and not variadic.
pub(crate) fn check_async(sig: &Signature, macro_name: &str) -> syn::Result<()> {
    if sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(
            sig.fn_token,
            format!(
                "`#[{macro_name}]` needs an `async fn`: write `async fn {}`",
                sig.ident
            ),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            format!("a `#[{macro_name}]` function cannot be generic"),
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new_spanned(
            variadic,
            "variadic functions are not supported",
        ));
    }
    Ok(())
}

/// The receiver, checked: `allow_ref` is true inside `#[tools]`, where `&self` is the
/// one receiver allowed.
pub(crate) fn receiver(
    sig: &Signature,
    macro_name: &str,
    allow_ref: bool,
) -> syn::Result<Receiver> {
    let Some(FnArg::Receiver(receiver)) = sig.inputs.first() else {
        return Ok(Receiver::None);
    };
    if !allow_ref {
        return Err(syn::Error::new_spanned(
            receiver,
            format!(
                "a `#[{macro_name}]` function cannot take `self`; for a method, put \
                 `#[tools]` on the impl block and `#[tool]` on the method"
            ),
        ));
    }
    let by_shared_ref = receiver.reference.is_some()
        && receiver.mutability.is_none()
        && receiver.colon_token.is_none();
    if !by_shared_ref {
        return Err(syn::Error::new_spanned(
            receiver,
            "a `#[tools]` method takes `&self`: the state is shared behind an `Arc` \
             (use atomics or a lock for mutation)",
        ));
    }
    Ok(Receiver::Ref)
}

/// Whether `ty` names `ServerContext` (by its last path segment).
fn is_context(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|name| name == "ServerContext")
}

/// Whether `ty` names a `HashMap` (by its last path segment).
fn is_map(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|name| name == "HashMap")
}

fn last_segment(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().map(|s| s.ident.to_string())
        }
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

fn typed_inputs(sig: &Signature) -> impl Iterator<Item = &syn::PatType> {
    sig.inputs.iter().filter_map(|input| match input {
        FnArg::Typed(typed) => Some(typed),
        FnArg::Receiver(_) => None,
    })
}

fn reject_context_by_ref(ty: &Type) -> syn::Result<()> {
    if let Type::Reference(reference) = ty
        && is_context(&reference.elem)
    {
        return Err(syn::Error::new_spanned(
            ty,
            "take the `ServerContext` by value (it is cheap to clone)",
        ));
    }
    Ok(())
}

/// A tool's or prompt's parameters: none, `(args)`, `(cx)` or `(args, cx)`, where `cx`
/// is recognized by its type's name, `ServerContext`.
pub(crate) fn args_and_context(sig: &Signature, macro_name: &str) -> syn::Result<ArgsAndContext> {
    let inputs: Vec<&syn::PatType> = typed_inputs(sig).collect();
    for input in &inputs {
        reject_context_by_ref(&input.ty)?;
    }
    match inputs.as_slice() {
        [] => Ok(ArgsAndContext {
            args: None,
            context: false,
        }),
        [only] if is_context(&only.ty) => Ok(ArgsAndContext {
            args: None,
            context: true,
        }),
        [only] => Ok(ArgsAndContext {
            args: Some((*only.ty).clone()),
            context: false,
        }),
        [first, _] if is_context(&first.ty) => Err(syn::Error::new_spanned(
            first,
            format!(
                "a `#[{macro_name}]` function takes its argument struct first and the \
                 `ServerContext` last"
            ),
        )),
        [first, second] if is_context(&second.ty) => Ok(ArgsAndContext {
            args: Some((*first.ty).clone()),
            context: true,
        }),
        [_, second] => Err(syn::Error::new_spanned(
            second,
            format!(
                "a `#[{macro_name}]` function takes one argument struct (all its inputs as \
                 fields) and optionally a `ServerContext` last; this parameter is neither"
            ),
        )),
        [_, _, third, ..] => Err(syn::Error::new_spanned(
            third,
            format!(
                "a `#[{macro_name}]` function takes at most two parameters: its argument \
                 struct and a `ServerContext`"
            ),
        )),
    }
}

/// A resource function's parameters, each matched by name or type: a template
/// variable's name, `uri`, a `HashMap` (all variables) or a `ServerContext`. Every
/// template variable must be received, by name or through the map.
pub(crate) fn resource_params(
    sig: &Signature,
    variables: &[String],
) -> syn::Result<Vec<ResourceParam>> {
    let mut params = Vec::new();
    for input in typed_inputs(sig) {
        reject_context_by_ref(&input.ty)?;
        let name = match &*input.pat {
            Pat::Ident(ident) => Some(ident.ident.to_string()),
            _ => None,
        };
        let param = if is_context(&input.ty) {
            ResourceParam::Context
        } else if is_map(&input.ty) {
            ResourceParam::Variables
        } else if let Some(var) = name.as_ref().filter(|n| variables.contains(n)) {
            ResourceParam::Variable(var.clone(), input.ty.clone())
        } else if name.as_deref() == Some("uri") {
            ResourceParam::Uri
        } else {
            let expected = if variables.is_empty() {
                "`uri: String` or a `ServerContext` (this URI has no `{variables}`)".to_owned()
            } else {
                format!(
                    "a template variable ({}), `uri: String`, `HashMap<String, String>` or \
                     a `ServerContext`",
                    variables
                        .iter()
                        .map(|v| format!("`{v}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(syn::Error::new_spanned(
                input,
                format!("a `#[resource]` parameter is {expected}"),
            ));
        };
        // Names are unique in Rust already; types are not.
        let by_type = matches!(param, ResourceParam::Context | ResourceParam::Variables);
        if by_type && params.contains(&param) {
            return Err(syn::Error::new_spanned(
                input,
                "this parameter is given twice",
            ));
        }
        if param == ResourceParam::Variables && variables.is_empty() {
            return Err(syn::Error::new_spanned(
                input,
                "this resource URI has no `{variables}`, so there is no map to receive",
            ));
        }
        params.push(param);
    }
    let takes_map = params.contains(&ResourceParam::Variables);
    let missing: Vec<&String> = variables
        .iter()
        .filter(|v| {
            !takes_map
                && !params
                    .iter()
                    .any(|p| matches!(p, ResourceParam::Variable(name, _) if name == *v))
        })
        .collect();
    if !missing.is_empty() {
        let names = missing
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(syn::Error::new(
            sig.paren_token.span.join(),
            format!(
                "the resource template's variable{} {names} must be received: add a \
                 parameter named after each (`{}: String`, or any `FromStr` type) or \
                 `vars: HashMap<String, String>`",
                if missing.len() == 1 { "" } else { "s" },
                missing[0],
            ),
        ));
    }
    Ok(params)
}

/// The doc comment, one line per `///` line, each stripped of one leading space and
/// the whole trimmed; `None` when there is none.
pub(crate) fn doc_comment(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Str(s) => Some(s.value()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').map(str::to_owned).unwrap_or(line))
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::{ResourceParam, args_and_context, doc_comment, resource_params};
    use syn::ItemFn;

    fn sig(item: &str) -> syn::Signature {
        syn::parse_str::<ItemFn>(item).expect("a function").sig
    }

    #[test]
    fn finds_args_and_context() {
        let p =
            args_and_context(&sig("async fn f(a: A, cx: ServerContext) {}"), "tool").expect("ok");
        assert!(p.args.is_some() && p.context);
        let p = args_and_context(
            &sig("async fn f(cx: mcpflow::server::ServerContext) {}"),
            "tool",
        )
        .expect("ok");
        assert!(p.args.is_none() && p.context);
        let p = args_and_context(&sig("async fn f() {}"), "tool").expect("ok");
        assert!(p.args.is_none() && !p.context);
        assert!(args_and_context(&sig("async fn f(cx: ServerContext, a: A) {}"), "tool").is_err());
        assert!(args_and_context(&sig("async fn f(a: A, b: B) {}"), "tool").is_err());
        assert!(args_and_context(&sig("async fn f(a: A, cx: &ServerContext) {}"), "tool").is_err());
    }

    #[test]
    fn matches_resource_parameters() {
        let vars = vec!["id".to_owned(), "part".to_owned()];
        let params = resource_params(
            &sig("async fn f(part: String, uri: String, id: u32, cx: ServerContext) {}"),
            &vars,
        )
        .expect("ok");
        assert!(matches!(&params[0], ResourceParam::Variable(name, _) if name == "part"));
        assert!(params[1] == ResourceParam::Uri);
        assert!(matches!(&params[2], ResourceParam::Variable(name, _) if name == "id"));
        assert!(params[3] == ResourceParam::Context);
        let params = resource_params(&sig("async fn f(vars: HashMap<String, String>) {}"), &vars)
            .expect("ok");
        assert!(params == vec![ResourceParam::Variables]);
        let err = resource_params(&sig("async fn f(id: String) {}"), &vars)
            .map(drop)
            .expect_err("part is missing");
        assert!(err.to_string().contains("`part` must be received"), "{err}");
        assert!(resource_params(&sig("async fn f(other: String) {}"), &[]).is_err());
        assert!(resource_params(&sig("async fn f(uri: String, uri2: String) {}"), &[]).is_err());
    }

    #[test]
    fn reads_doc_comments() {
        let item: ItemFn = syn::parse_quote! {
            /// Add two numbers.
            ///
            /// Exactly.
            async fn add() {}
        };
        assert_eq!(
            doc_comment(&item.attrs).as_deref(),
            Some("Add two numbers.\n\nExactly.")
        );
        let item: ItemFn = syn::parse_quote! { async fn add() {} };
        assert_eq!(doc_comment(&item.attrs), None);
    }
}
