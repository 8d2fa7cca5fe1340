//! `WWW-Authenticate` parsing (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).
//!
//! The parser is a single forward pass over the header value: no recursion, no
//! backtracking beyond one parameter's lookahead, so hostile input costs linear time and
//! ends in a [`ChallengeError`], never a panic.

use thiserror::Error;

/// Why a `WWW-Authenticate` value could not be parsed.
///
/// Positions are byte offsets into the header value; the value itself is not echoed,
/// since it comes from the peer and may be large.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ChallengeError {
    /// Something other than what the grammar allows at this point.
    #[error("malformed WWW-Authenticate: expected {expected} at byte {at}")]
    Expected {
        /// What the grammar wanted.
        expected: &'static str,
        /// Byte offset of the offending character.
        at: usize,
    },
    /// A quoted string with no closing quote.
    #[error("malformed WWW-Authenticate: quoted string opened at byte {at} is not closed")]
    UnterminatedQuote {
        /// Byte offset of the opening quote.
        at: usize,
    },
    /// A control character inside a quoted string.
    #[error("malformed WWW-Authenticate: control character in a quoted string at byte {at}")]
    ControlCharacter {
        /// Byte offset of the control character.
        at: usize,
    },
    /// A Bearer parameter given twice (RFC 6750 §3 forbids it, and it would be ambiguous).
    #[error("malformed WWW-Authenticate: Bearer parameter `{name}` appears more than once")]
    DuplicateParameter {
        /// The repeated parameter, lowercased.
        name: String,
    },
}

/// One challenge of a `WWW-Authenticate` value: a scheme with a token68 or parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Challenge {
    /// The auth scheme as sent (compare case-insensitively).
    pub scheme: String,
    /// The token68 form (`Basic abc==`), when the challenge uses it instead of parameters.
    pub token68: Option<String>,
    /// The parameters in order: names lowercased, quoted values unescaped.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The first value of parameter `name` (give it lowercased).
    #[must_use]
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this challenge's scheme is `scheme`, case-insensitively.
    #[must_use]
    pub fn is_scheme(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }
}

/// A `Bearer` challenge with the parameters RFC 6750 and RFC 9728 define.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BearerChallenge {
    /// `realm`.
    pub realm: Option<String>,
    /// `resource_metadata` (RFC 9728 §5.1): where the protected-resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: space-delimited scopes the request needs.
    pub scope: Option<String>,
    /// `error`, e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
    /// `error_description`, for people; never act on it.
    pub error_description: Option<String>,
    /// `error_uri`.
    pub error_uri: Option<String>,
    /// Every parameter, the ones above included, in order.
    pub params: Vec<(String, String)>,
}

impl BearerChallenge {
    /// Builds it from a parsed challenge, refusing repeated parameters.
    ///
    /// # Errors
    /// [`ChallengeError::DuplicateParameter`] when a parameter appears twice.
    pub fn from_challenge(challenge: &Challenge) -> Result<Self, ChallengeError> {
        let mut out = Self {
            params: challenge.params.clone(),
            ..Self::default()
        };
        for (i, (name, value)) in challenge.params.iter().enumerate() {
            if challenge.params[..i].iter().any(|(n, _)| n == name) {
                return Err(ChallengeError::DuplicateParameter { name: name.clone() });
            }
            let slot = match name.as_str() {
                "realm" => &mut out.realm,
                "resource_metadata" => &mut out.resource_metadata,
                "scope" => &mut out.scope,
                "error" => &mut out.error,
                "error_description" => &mut out.error_description,
                "error_uri" => &mut out.error_uri,
                _ => continue,
            };
            *slot = Some(value.clone());
        }
        Ok(out)
    }

    /// The scopes of `scope`, split on spaces; empty when there is none.
    #[must_use]
    pub fn scopes(&self) -> Vec<&str> {
        self.scope
            .as_deref()
            .map(|s| s.split(' ').filter(|s| !s.is_empty()).collect())
            .unwrap_or_default()
    }

    /// Whether the server says the token lacks scope (a 403 asking for step-up).
    #[must_use]
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Parses one `WWW-Authenticate` value into its challenges, in order.
///
/// # Errors
/// A [`ChallengeError`] saying where the value breaks the grammar.
pub fn parse_www_authenticate(value: &str) -> Result<Vec<Challenge>, ChallengeError> {
    let mut p = Parser { s: value, pos: 0 };
    let mut out = Vec::new();
    loop {
        p.skip_separators();
        if p.eof() {
            return Ok(out);
        }
        let scheme = p.token().ok_or(p.expected("an auth scheme"))?;
        let mut challenge = Challenge {
            scheme: scheme.to_owned(),
            token68: None,
            params: Vec::new(),
        };
        let spaced = p.skip_ws();
        if p.eof() || p.peek() == Some(b',') {
            out.push(challenge);
            continue;
        }
        if !spaced {
            return Err(p.expected("a space after the auth scheme"));
        }
        if !p.at_param() {
            challenge.token68 = Some(p.token68()?.to_owned());
            p.skip_ws();
            if !p.eof() && p.peek() != Some(b',') {
                return Err(p.expected("a comma or the end after a token68"));
            }
            out.push(challenge);
            continue;
        }
        loop {
            challenge.params.push(p.param()?);
            p.skip_ws();
            if p.eof() {
                break;
            }
            if p.peek() != Some(b',') {
                return Err(p.expected("a comma between parameters"));
            }
            p.skip_separators();
            // A token not followed by `=` starts the next challenge.
            if p.eof() || !p.at_param() {
                break;
            }
        }
        out.push(challenge);
    }
}

/// The first `Bearer` challenge among the `WWW-Authenticate` values of one response.
///
/// A caller that gets an error can still fall back to well-known discovery, since the
/// header is optional (MCP 2025-11-25, SEP-985).
///
/// # Errors
/// A [`ChallengeError`] when a value is malformed or the Bearer challenge repeats a
/// parameter.
pub fn bearer_challenge<'a>(
    values: impl IntoIterator<Item = &'a str>,
) -> Result<Option<BearerChallenge>, ChallengeError> {
    for value in values {
        for challenge in parse_www_authenticate(value)? {
            if challenge.is_scheme("bearer") {
                return BearerChallenge::from_challenge(&challenge).map(Some);
            }
        }
    }
    Ok(None)
}

/// The challenge a protected resource answers with, under the `Bearer` scheme or, for
/// a resource that wants DPoP-bound tokens (RFC 9449 §7.1), the `DPoP` scheme (its
/// parameters are the same: `resource_metadata`, `scope`, `error`); `Bearer` first. The
/// flag is `true` for a `DPoP` one.
///
/// # Errors
/// As [`bearer_challenge`].
pub fn resource_challenge<'a>(
    values: impl IntoIterator<Item = &'a str> + Clone,
) -> Result<Option<(BearerChallenge, bool)>, ChallengeError> {
    if let Some(bearer) = bearer_challenge(values.clone())? {
        return Ok(Some((bearer, false)));
    }
    for value in values {
        for challenge in parse_www_authenticate(value)? {
            if challenge.is_scheme("dpop") {
                return BearerChallenge::from_challenge(&challenge).map(|c| Some((c, true)));
            }
        }
    }
    Ok(None)
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

/// `tchar` of RFC 9110 §5.6.2.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The characters of `token68` before its trailing `=`s (RFC 9110 §11.2).
fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

impl<'a> Parser<'a> {
    fn eof(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn expected(&self, expected: &'static str) -> ChallengeError {
        ChallengeError::Expected {
            expected,
            at: self.pos,
        }
    }

    /// Skips spaces and tabs; says whether there were any.
    fn skip_ws(&mut self) -> bool {
        let start = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        self.pos > start
    }

    /// Skips whitespace and commas, including the empty list elements `#rule` allows.
    fn skip_separators(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.pos += 1;
        }
    }

    fn token(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while self.peek().is_some_and(is_tchar) {
            self.pos += 1;
        }
        // Only ASCII was consumed, so both ends are char boundaries.
        (self.pos > start).then(|| &self.s[start..self.pos])
    }

    fn token68(&mut self) -> Result<&'a str, ChallengeError> {
        let start = self.pos;
        while self.peek().is_some_and(is_token68_char) {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.expected("a token68 or a parameter"));
        }
        while self.peek() == Some(b'=') {
            self.pos += 1;
        }
        Ok(&self.s[start..self.pos])
    }

    /// Whether a `name = value` parameter starts here; moves nothing.
    fn at_param(&mut self) -> bool {
        let start = self.pos;
        let found = self.token().is_some() && {
            self.skip_ws();
            self.peek() == Some(b'=') && {
                self.pos += 1;
                self.skip_ws();
                self.peek().is_some_and(|b| b == b'"' || is_tchar(b))
            }
        };
        self.pos = start;
        found
    }

    fn param(&mut self) -> Result<(String, String), ChallengeError> {
        let name = self
            .token()
            .ok_or(self.expected("a parameter name"))?
            .to_ascii_lowercase();
        self.skip_ws();
        if self.peek() != Some(b'=') {
            return Err(self.expected("`=` after a parameter name"));
        }
        self.pos += 1;
        self.skip_ws();
        let value = if self.peek() == Some(b'"') {
            self.quoted()?
        } else {
            self.token()
                .ok_or(self.expected("a token or a quoted string"))?
                .to_owned()
        };
        Ok((name, value))
    }

    /// A quoted string (RFC 9110 §5.6.4), unescaped; non-ASCII passes as `obs-text`.
    fn quoted(&mut self) -> Result<String, ChallengeError> {
        let open = self.pos;
        let mut out = String::new();
        let mut chars = self.s[open + 1..].char_indices();
        while let Some((i, c)) = chars.next() {
            let at = open + 1 + i;
            match c {
                '"' => {
                    self.pos = at + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, e)) if e == '\t' || !e.is_control() => out.push(e),
                    Some((j, _)) => {
                        return Err(ChallengeError::ControlCharacter { at: open + 1 + j });
                    }
                    None => break,
                },
                c if c == '\t' || !c.is_control() => out.push(c),
                _ => return Err(ChallengeError::ControlCharacter { at }),
            }
        }
        Err(ChallengeError::UnterminatedQuote { at: open })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(value: &str) -> Challenge {
        let mut all = parse_www_authenticate(value).expect("parses");
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    #[test]
    fn bearer_with_the_mcp_parameters() {
        let value = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error="insufficient_scope", error_description="needs write""#;
        let b = bearer_challenge([value]).expect("parses").expect("bearer");
        assert_eq!(
            b.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(b.scopes(), ["files:read", "files:write"]);
        assert!(b.is_insufficient_scope());
        assert_eq!(b.error_description.as_deref(), Some("needs write"));
        assert_eq!(b.params.len(), 4);
    }

    #[test]
    fn names_are_case_insensitive_and_tokens_need_no_quotes() {
        let c = one("bEaReR Realm=example ,  ERROR = invalid_token");
        assert!(c.is_scheme("Bearer"));
        assert_eq!(c.param("realm"), Some("example"));
        assert_eq!(c.param("error"), Some("invalid_token"));
    }

    #[test]
    fn quoted_strings_unescape() {
        let c = one(r#"Bearer realm="a \"quoted\" \\ value, with comma", scope="""#);
        assert_eq!(c.param("realm"), Some(r#"a "quoted" \ value, with comma"#));
        assert_eq!(c.param("scope"), Some(""));
    }

    #[test]
    fn several_challenges_in_one_value() {
        let all = parse_www_authenticate(
            r#"Basic realm="x", Newauth realm="apps", type=1, title="Login", Basic YWxhZGRpbjpvcGVu==, Bearer scope="a""#,
        )
        .expect("parses");
        let schemes: Vec<_> = all.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "Newauth", "Basic", "Bearer"]);
        assert_eq!(all[1].params.len(), 3);
        assert_eq!(all[2].token68.as_deref(), Some("YWxhZGRpbjpvcGVu=="));
        let b = bearer_challenge([r#"Basic realm="x""#, "Bearer scope=a"]);
        assert_eq!(
            b.expect("parses").expect("bearer").scope.as_deref(),
            Some("a")
        );
    }

    #[test]
    fn bare_schemes_and_empty_elements() {
        let all = parse_www_authenticate(" , Bearer,, Basic ,").expect("parses");
        assert_eq!(all.len(), 2);
        assert!(all[0].params.is_empty() && all[0].token68.is_none());
        assert!(parse_www_authenticate("").expect("parses").is_empty());
        assert_eq!(bearer_challenge(["Basic"]), Ok(None));
    }

    #[test]
    fn obs_text_passes_inside_quotes() {
        assert_eq!(
            one(r#"Bearer realm="café ☕""#).param("realm"),
            Some("café ☕")
        );
    }

    #[test]
    fn repeated_bearer_parameters_are_refused() {
        let err = bearer_challenge([r#"Bearer scope="a", SCOPE="b""#]).expect_err("duplicate");
        assert_eq!(
            err,
            ChallengeError::DuplicateParameter {
                name: "scope".into()
            }
        );
    }

    #[test]
    fn malformed_values_give_errors_with_positions() {
        use ChallengeError::*;
        let cases: &[(&str, ChallengeError)] = &[
            (r#"Bearer realm="open"#, UnterminatedQuote { at: 13 }),
            ("Bearer realm=\"a\u{1}b\"", ControlCharacter { at: 15 }),
            (
                r#"Bearer realm="x" scope="y""#,
                Expected {
                    expected: "a comma between parameters",
                    at: 17,
                },
            ),
            (
                "=Bearer",
                Expected {
                    expected: "an auth scheme",
                    at: 0,
                },
            ),
            (
                "Bearer realm==x",
                Expected {
                    expected: "a comma or the end after a token68",
                    at: 14,
                },
            ),
            (
                "Bearer \"x\"",
                Expected {
                    expected: "a token68 or a parameter",
                    at: 7,
                },
            ),
            (
                "Bearer\"x\"",
                Expected {
                    expected: "a space after the auth scheme",
                    at: 6,
                },
            ),
            ("Bearer realm=\"x\\", UnterminatedQuote { at: 13 }),
        ];
        for (value, want) in cases {
            assert_eq!(
                parse_www_authenticate(value).as_ref(),
                Err(want),
                "{value:?}"
            );
        }
    }

    #[test]
    fn odd_inputs_never_panic() {
        let pieces = [
            "Bearer", " ", ",", "=", "\"", "\\", "a", "é", "\u{0}", "\t", "==", "realm", "x=\"",
            "☕", "\r\n", "/",
        ];
        // Every string of up to four pieces: a cheap exhaustive fuzz of the grammar's edges.
        let mut inputs = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for s in &inputs {
                for p in pieces {
                    next.push(format!("{s}{p}"));
                }
            }
            for s in &next {
                let _ = parse_www_authenticate(s);
                let _ = bearer_challenge([s.as_str()]);
            }
            inputs = next;
        }
        let long = "Bearer ".to_owned() + &"a=b, ".repeat(10_000) + &"\\\"".repeat(10_000);
        assert!(parse_www_authenticate(&long).is_err());
    }
}
