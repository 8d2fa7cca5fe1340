//! Checking a `#[resource("...")]` URI at compile time: balanced braces, and only the
//! template forms mcpflow's matcher reads (RFC 6570 level 1 `{name}`, plus `{+name}`
//! and `{#name}`), with literal text between variables.

/// The variables of a URI template, in order; empty for a fixed URI.
///
/// # Errors
/// A message saying what is wrong with the template.
pub(crate) fn template_variables(uri: &str) -> Result<Vec<String>, String> {
    if uri.is_empty() {
        return Err("the resource URI is empty".to_owned());
    }
    let mut vars: Vec<String> = Vec::new();
    let mut rest = uri;
    let mut last_close: Option<usize> = None;
    let mut offset = 0;
    loop {
        let open = rest.find('{');
        let close = rest.find('}');
        if let Some(c) = close.filter(|c| open.is_none_or(|o| *c < o)) {
            return Err(format!(
                "unbalanced braces in the resource URI: `}}` at byte {} has no `{{`",
                offset + c
            ));
        }
        let Some(o) = open else {
            return Ok(vars);
        };
        let never_closed = || {
            format!(
                "unbalanced braces in the resource URI: `{{` at byte {} is never closed",
                offset + o
            )
        };
        let Some(c) = close else {
            return Err(never_closed());
        };
        let inner = &rest[o + 1..c];
        if inner.contains('{') {
            return Err(never_closed());
        }
        if last_close == Some(offset + o) {
            return Err(format!(
                "variables `{}` and `{inner}` need literal text between them",
                vars.last().map(String::as_str).unwrap_or_default()
            ));
        }
        let name = inner.strip_prefix(['+', '#']).unwrap_or(inner);
        if name.is_empty() {
            return Err("an empty variable `{}` in the resource URI".to_owned());
        }
        if let Some(bad) = name
            .chars()
            .find(|ch| !(ch.is_ascii_alphanumeric() || *ch == '_' || *ch == '.'))
        {
            return Err(format!(
                "`{{{inner}}}` is not supported (found `{bad}`): mcpflow matches \
                 `{{name}}`, `{{+name}}` and `{{#name}}` (RFC 6570 level 1)"
            ));
        }
        if vars.iter().any(|v| v == name) {
            return Err(format!("the variable `{name}` appears twice"));
        }
        vars.push(name.to_owned());
        last_close = Some(offset + c + 1);
        offset += c + 1;
        rest = &rest[c + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::template_variables;

    #[test]
    fn reads_variables() {
        assert_eq!(template_variables("mem://notes"), Ok(vec![]));
        assert_eq!(
            template_variables("x://items/{id}/parts/{+rest}"),
            Ok(vec!["id".to_owned(), "rest".to_owned()])
        );
        assert_eq!(
            template_variables("file:///{path}"),
            Ok(vec!["path".to_owned()])
        );
    }

    #[test]
    fn rejects_bad_templates() {
        for (uri, expected) in [
            ("x://{id", "`{` at byte 4 is never closed"),
            ("x://id}", "`}` at byte 6 has no `{`"),
            ("x://{a{b}}", "`{` at byte 4 is never closed"),
            ("x://{}", "empty variable"),
            ("x://{a}{b}", "need literal text between them"),
            ("x://{?q}", "is not supported"),
            ("x://{a,b}", "is not supported"),
            ("x://{a}/{a}", "appears twice"),
            ("", "is empty"),
        ] {
            let err = template_variables(uri).expect_err(uri);
            assert!(err.contains(expected), "{uri}: {err}");
        }
    }
}
