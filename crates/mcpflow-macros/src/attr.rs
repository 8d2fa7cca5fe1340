//! Parsing of the macros' own arguments: `#[tool(name = "..", title = "..")]`,
//! `#[prompt(..)]` and `#[resource("uri", ..)]`. Every key is a string literal; an
//! unknown or repeated key is an error pointing at it.

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::{Ident, LitStr, Token};

/// `key = "value"` pairs, in order, checked against the keys a macro accepts.
#[derive(Default)]
pub(crate) struct KeyValues {
    pairs: Vec<(Ident, LitStr)>,
}

impl KeyValues {
    /// Take the value of `key`, if given.
    pub(crate) fn take(&mut self, key: &str) -> Option<LitStr> {
        let index = self.pairs.iter().position(|(k, _)| k == key)?;
        Some(self.pairs.remove(index).1)
    }
}

/// Parse `key = "value", ...` after an optional leading positional string literal
/// (`#[resource("file:///{path}", name = "..")]`). `allowed` lists the keys the macro
/// knows, for the error message; `macro_name` names the macro in it.
pub(crate) fn parse_args(
    tokens: TokenStream,
    macro_name: &str,
    allowed: &[&str],
    positional: bool,
) -> syn::Result<(Option<LitStr>, KeyValues)> {
    let parser = |input: ParseStream<'_>| {
        let mut first = None;
        if positional && input.peek(LitStr) {
            first = Some(input.parse::<LitStr>()?);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let mut values = KeyValues::default();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            if !allowed.iter().any(|a| key == a) {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!(
                        "unknown `#[{macro_name}]` key `{key}`; expected one of: {}",
                        allowed.join(", ")
                    ),
                ));
            }
            if values.pairs.iter().any(|(k, _)| *k == key) {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("`{key}` is given twice"),
                ));
            }
            input.parse::<Token![=]>()?;
            let value: LitStr = input.parse()?;
            values.pairs.push((key, value));
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok((first, values))
    };
    parser.parse2(tokens)
}

/// A string given in an attribute, or the default, as a literal to quote.
pub(crate) fn string_or(value: Option<LitStr>, default: &str, span: Span) -> LitStr {
    value.unwrap_or_else(|| LitStr::new(default, span))
}

#[cfg(test)]
mod tests {
    use super::parse_args;
    use quote::quote;

    #[test]
    fn reads_keys_and_a_positional_literal() {
        let (uri, mut kv) = parse_args(
            quote!("x://{id}", name = "items", mime_type = "text/plain"),
            "resource",
            &["name", "mime_type"],
            true,
        )
        .expect("parses");
        assert_eq!(uri.map(|u| u.value()).as_deref(), Some("x://{id}"));
        assert_eq!(kv.take("name").map(|v| v.value()).as_deref(), Some("items"));
        assert_eq!(
            kv.take("mime_type").map(|v| v.value()).as_deref(),
            Some("text/plain")
        );
        assert!(kv.take("name").is_none());
    }

    #[test]
    fn rejects_unknown_and_repeated_keys() {
        let err = parse_args(quote!(nmae = "x"), "tool", &["name", "title"], false)
            .map(drop)
            .expect_err("unknown key");
        assert_eq!(
            err.to_string(),
            "unknown `#[tool]` key `nmae`; expected one of: name, title"
        );
        let err = parse_args(quote!(name = "a", name = "b"), "tool", &["name"], false)
            .map(drop)
            .expect_err("repeated key");
        assert_eq!(err.to_string(), "`name` is given twice");
        assert!(parse_args(quote!("x://a"), "tool", &["name"], false).is_err());
        assert!(parse_args(quote!(name = 3), "tool", &["name"], false).is_err());
    }
}
