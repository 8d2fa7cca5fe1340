//! Which `scope` to request (MCP authorization, "Scope selection strategy"), and the
//! RFC 9207 `iss` check of an authorization response.

use thiserror::Error;

use super::challenge::BearerChallenge;
use super::metadata::{AuthorizationServerMetadata, ProtectedResourceMetadata};

/// The scope for an authorization request: the challenge's `scope`, else every scope of
/// the protected resource's `scopes_supported`, else none (omit the parameter).
///
/// The challenge is authoritative: its scopes are used as they are, with no relation to
/// `scopes_supported` assumed.
#[must_use]
pub fn select_scope(
    challenge: Option<&BearerChallenge>,
    resource: Option<&ProtectedResourceMetadata>,
) -> Option<String> {
    if let Some(scopes) = challenge.map(BearerChallenge::scopes)
        && !scopes.is_empty()
    {
        return Some(scopes.join(" "));
    }
    resource
        .and_then(|r| r.scopes_supported.as_ref())
        .and_then(|s| join(s.iter().map(String::as_str)))
}

/// The scope for a step-up after a 403 `insufficient_scope`: the union of what was
/// requested before and what the challenge asks for, in that order, each once.
#[must_use]
pub fn step_up_scope(previous: Option<&str>, challenge: &BearerChallenge) -> Option<String> {
    let old = previous.into_iter().flat_map(|s| s.split(' '));
    join(old.chain(challenge.scopes()))
}

/// `scope` with `offline_access` added when the authorization server lists it, so that
/// a refresh token may be issued; unchanged otherwise.
#[must_use]
pub fn with_offline_access(
    scope: Option<String>,
    server: &AuthorizationServerMetadata,
) -> Option<String> {
    if !server.supports_scope("offline_access") {
        return scope;
    }
    let old = scope.as_deref().into_iter().flat_map(|s| s.split(' '));
    join(old.chain(["offline_access"]))
}

/// Space-joins the non-empty scopes, dropping repeats; `None` when nothing is left.
fn join<'a>(scopes: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for s in scopes {
        if !s.is_empty() && !seen.contains(&s) {
            seen.push(s);
        }
    }
    (!seen.is_empty()).then(|| seen.join(" "))
}

/// An authorization response whose `iss` cannot be trusted (RFC 9207). The response's
/// `error` and `error_description` must then be neither shown nor acted on.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum IssError {
    /// The server advertises `iss` but the response has none.
    #[error("the authorization response lacks the `iss` its server advertises")]
    Missing,
    /// `iss` names another issuer (a mix-up attack, or a misconfigured server).
    #[error("the authorization response comes from issuer `{found}`, expected `{expected}`")]
    Mismatch {
        /// The issuer recorded before redirecting.
        expected: String,
        /// The response's `iss`, form-decoded.
        found: String,
    },
}

/// Checks the form-decoded `iss` of an authorization response against the issuer
/// recorded before the redirect, by simple string equality:
///
/// | advertised | `iss` present | result |
/// |---|---|---|
/// | yes | yes | compared |
/// | yes | no | [`IssError::Missing`] |
/// | no | yes | compared |
/// | no | no | accepted |
///
/// # Errors
/// [`IssError`].
pub fn check_response_iss(
    server: &AuthorizationServerMetadata,
    expected_issuer: &str,
    iss: Option<&str>,
) -> Result<(), IssError> {
    let advertised = server.authorization_response_iss_parameter_supported == Some(true);
    match iss {
        Some(found) if found != expected_issuer => Err(IssError::Mismatch {
            expected: expected_issuer.to_owned(),
            found: found.to_owned(),
        }),
        Some(_) => Ok(()),
        None if advertised => Err(IssError::Missing),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn challenge(scope: Option<&str>) -> BearerChallenge {
        BearerChallenge {
            scope: scope.map(str::to_owned),
            ..BearerChallenge::default()
        }
    }

    fn prm(scopes: Option<Vec<&str>>) -> ProtectedResourceMetadata {
        serde_json::from_value(json!({"resource": "https://r", "scopes_supported": scopes}))
            .expect("prm")
    }

    #[test]
    fn selection_order() {
        let both = prm(Some(vec!["mcp:basic", "mcp:read"]));
        assert_eq!(
            select_scope(Some(&challenge(Some("files:write"))), Some(&both)).as_deref(),
            Some("files:write")
        );
        for c in [None, Some(challenge(None)), Some(challenge(Some(" ")))] {
            assert_eq!(
                select_scope(c.as_ref(), Some(&both)).as_deref(),
                Some("mcp:basic mcp:read")
            );
        }
        assert_eq!(select_scope(None, Some(&prm(None))), None);
        assert_eq!(select_scope(None, Some(&prm(Some(vec![])))), None);
        assert_eq!(select_scope(None, None), None);
    }

    #[test]
    fn step_up_is_the_union() {
        let c = challenge(Some("mcp:write mcp:read"));
        assert_eq!(
            step_up_scope(Some("mcp:read  mcp:basic"), &c).as_deref(),
            Some("mcp:read mcp:basic mcp:write")
        );
        assert_eq!(
            step_up_scope(None, &c).as_deref(),
            Some("mcp:write mcp:read")
        );
        assert_eq!(step_up_scope(None, &challenge(None)), None);
    }

    fn server(extra: serde_json::Value) -> AuthorizationServerMetadata {
        let mut doc = json!({"issuer": "https://as"});
        if let (Some(d), serde_json::Value::Object(e)) = (doc.as_object_mut(), extra) {
            d.extend(e);
        }
        serde_json::from_value(doc).expect("metadata")
    }

    #[test]
    fn offline_access_only_when_listed() {
        let listed = server(json!({"scopes_supported": ["mcp", "offline_access"]}));
        assert_eq!(
            with_offline_access(Some("mcp".into()), &listed).as_deref(),
            Some("mcp offline_access")
        );
        assert_eq!(
            with_offline_access(None, &listed).as_deref(),
            Some("offline_access")
        );
        assert_eq!(
            with_offline_access(Some("offline_access".into()), &listed).as_deref(),
            Some("offline_access")
        );
        assert_eq!(
            with_offline_access(Some("mcp".into()), &server(json!({}))).as_deref(),
            Some("mcp")
        );
    }

    #[test]
    fn rfc9207_table() {
        let yes = server(json!({"authorization_response_iss_parameter_supported": true}));
        let no = server(json!({}));
        assert_eq!(
            check_response_iss(&yes, "https://as", Some("https://as")),
            Ok(())
        );
        assert_eq!(
            check_response_iss(&yes, "https://as", None),
            Err(IssError::Missing)
        );
        assert_eq!(check_response_iss(&no, "https://as", None), Ok(()));
        assert_eq!(
            check_response_iss(&no, "https://as", Some("https://as")),
            Ok(())
        );
        for s in [&yes, &no] {
            assert!(matches!(
                check_response_iss(s, "https://as", Some("https://as/")),
                Err(IssError::Mismatch { .. })
            ));
        }
    }
}
