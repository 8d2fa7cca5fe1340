//! `serve --http` as an OAuth protected resource, for trying clients against it: the
//! flags, checked together, and the [`ResourceAuth`] they make once the URL served is
//! known (it is the audience tokens must name).

use mcpflow::http::server::auth::{DpopPolicy, IntrospectionVerifier, JwtVerifier, ResourceAuth};
use reqwest::Url;

const HEADING: &str = "Authorization (protected resource, --http)";

/// The OAuth flags of `serve --http`.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct ResourceAuthArgs {
    /// Require OAuth bearer tokens issued by this authorization server (its issuer URL);
    /// with `--auth-introspect` or `--auth-jwks`, and `--auth-scope`.
    #[arg(long, global = true, value_name = "URL", help_heading = HEADING)]
    auth_issuer: Option<String>,
    /// Check each token at this RFC 7662 introspection endpoint.
    #[arg(long, global = true, value_name = "URL", help_heading = HEADING)]
    auth_introspect: Option<String>,
    /// Check each token as a JWT signed with a key of this JWKS.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        conflicts_with = "auth_introspect",
        help_heading = HEADING
    )]
    auth_jwks: Option<String>,
    /// The scope every request needs (space-separated, or repeat the flag); the 401
    /// challenge names it.
    #[arg(long, global = true, value_name = "SCOPE", help_heading = HEADING)]
    auth_scope: Vec<String>,
    /// The client ID the server authenticates with at `--auth-introspect`.
    #[arg(long, global = true, value_name = "ID", help_heading = HEADING)]
    auth_client_id: Option<String>,
    /// Read the secret of `--auth-client-id` from this environment variable.
    #[arg(long, global = true, value_name = "VAR", help_heading = HEADING)]
    auth_client_secret_env: Option<String>,
    /// The resource URL tokens must be issued for (default: the URL served, e.g.
    /// `http://127.0.0.1:3000/mcp`; set it behind a proxy).
    #[arg(long, global = true, value_name = "URL", help_heading = HEADING)]
    auth_resource: Option<String>,
    /// Take DPoP-bound tokens (RFC 9449), checking each request's proof: `accepted`
    /// (bearer tokens too) or `required`.
    #[arg(long, global = true, value_name = "HOW", help_heading = HEADING)]
    auth_dpop: Option<DpopMode>,
    /// With `--auth-dpop`: proofs must carry a nonce this server hands out.
    #[arg(long, global = true, requires = "auth_dpop", help_heading = HEADING)]
    auth_dpop_nonce: bool,
}

/// How `--auth-dpop` takes DPoP-bound tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DpopMode {
    /// Bound tokens with their proofs, and bearer tokens.
    Accepted,
    /// Bound tokens only.
    Required,
}

/// The checked flags: what [`ResourceAuthArgs::check`] returns.
#[derive(Debug)]
pub struct Protection {
    issuer: String,
    verifier: Verifier,
    scopes: Vec<String>,
    resource: Option<String>,
    dpop: Option<DpopPolicy>,
}

#[derive(Debug)]
enum Verifier {
    Introspect(IntrospectionVerifier),
    Jwks(Url),
}

fn url(flag: &str, text: &str) -> Result<Url, String> {
    Url::parse(text).map_err(|e| format!("{flag} `{text}` is not a URL: {e}"))
}

impl ResourceAuthArgs {
    /// Whether any of the flags is given.
    pub fn is_set(&self) -> bool {
        self.auth_issuer.is_some()
            || self.auth_introspect.is_some()
            || self.auth_jwks.is_some()
            || !self.auth_scope.is_empty()
            || self.auth_client_id.is_some()
            || self.auth_client_secret_env.is_some()
            || self.auth_resource.is_some()
            || self.auth_dpop.is_some()
    }

    /// The protection the flags ask for (`None`: none), or why they do not fit together.
    pub fn check(&self) -> Result<Option<Protection>, String> {
        if !self.is_set() {
            return Ok(None);
        }
        let issuer = self
            .auth_issuer
            .clone()
            .ok_or("the --auth-* flags need --auth-issuer URL (the authorization server)")?;
        url("--auth-issuer", &issuer)?;
        let scopes: Vec<String> = self
            .auth_scope
            .iter()
            .flat_map(|s| s.split_whitespace())
            .map(str::to_owned)
            .collect();
        if scopes.is_empty() {
            return Err("--auth-issuer needs --auth-scope SCOPE (what every request needs)".into());
        }
        let credentials = match (&self.auth_client_id, &self.auth_client_secret_env) {
            (Some(id), Some(var)) => {
                let secret = std::env::var(var).ok().filter(|s| !s.is_empty()).ok_or_else(
                    || format!("--auth-client-secret-env {var}: the environment variable `{var}` is not set or empty"),
                )?;
                Some((id.clone(), secret))
            }
            (None, None) => None,
            _ => {
                return Err("--auth-client-id and --auth-client-secret-env go together".to_owned());
            }
        };
        let verifier = match (&self.auth_introspect, &self.auth_jwks) {
            (Some(endpoint), None) => {
                let mut verifier = IntrospectionVerifier::new(url("--auth-introspect", endpoint)?)
                    .issuer(issuer.clone());
                if let Some((id, secret)) = credentials {
                    verifier = verifier.client_credentials(id, secret);
                }
                Verifier::Introspect(verifier)
            }
            (None, Some(jwks)) if credentials.is_none() => {
                Verifier::Jwks(url("--auth-jwks", jwks)?)
            }
            (None, Some(_)) => {
                return Err(
                    "--auth-client-id applies to --auth-introspect, not --auth-jwks".into(),
                );
            }
            _ => {
                return Err(
                    "--auth-issuer needs a way to check tokens: --auth-introspect URL or --auth-jwks URL"
                        .into(),
                );
            }
        };
        if let Some(resource) = &self.auth_resource {
            url("--auth-resource", resource)?;
        }
        let dpop = self.auth_dpop.map(|mode| {
            let policy = match mode {
                DpopMode::Accepted => DpopPolicy::accepted(),
                DpopMode::Required => DpopPolicy::required(),
            };
            if self.auth_dpop_nonce {
                policy.with_nonces()
            } else {
                policy
            }
        });
        Ok(Some(Protection {
            issuer,
            verifier,
            scopes,
            resource: self.auth_resource.clone(),
            dpop,
        }))
    }
}

impl Protection {
    /// The resource server's configuration for the endpoint served at `served`.
    pub fn resource_auth(self, served: &str) -> ResourceAuth {
        let resource = self.resource.unwrap_or_else(|| served.to_owned());
        let auth = match self.verifier {
            Verifier::Introspect(verifier) => {
                ResourceAuth::new(resource.clone(), self.issuer, verifier)
            }
            Verifier::Jwks(jwks) => {
                let verifier = JwtVerifier::new(self.issuer.clone(), jwks, resource.clone());
                ResourceAuth::new(resource.clone(), self.issuer, verifier)
            }
        };
        let auth = auth
            .resource_name("mcpflow")
            .scopes_supported(self.scopes.clone())
            .required_scopes(self.scopes);
        match self.dpop {
            Some(policy) => auth.dpop(policy),
            None => auth,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        auth: ResourceAuthArgs,
    }

    fn check(args: &[&str]) -> Result<Option<Protection>, String> {
        let flags = Flags::try_parse_from(std::iter::once("serve").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        flags.auth.check()
    }

    #[test]
    fn the_flags_must_name_an_issuer_a_verifier_and_a_scope() {
        assert!(check(&[]).unwrap().is_none());
        let issuer = ["--auth-issuer", "http://127.0.0.1:9"];
        let err = |args: &[&str]| check(args).unwrap_err();
        assert!(err(&["--auth-scope", "s"]).contains("--auth-issuer"));
        assert!(
            err(&[issuer[0], issuer[1], "--auth-jwks", "http://a/jwks"]).contains("--auth-scope")
        );
        assert!(
            err(&[issuer[0], issuer[1], "--auth-scope", "s"])
                .contains("--auth-introspect URL or --auth-jwks URL")
        );
        assert!(
            err(&[
                issuer[0],
                issuer[1],
                "--auth-scope",
                "s",
                "--auth-jwks",
                "http://a/j",
                "--auth-introspect",
                "http://a/i"
            ])
            .contains("cannot be used with")
        );
        let jwt = check(&[
            issuer[0],
            issuer[1],
            "--auth-scope",
            "a b",
            "--auth-scope",
            "c",
            "--auth-jwks",
            "http://a/j",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(jwt.scopes, ["a", "b", "c"]);
        let auth = jwt.resource_auth("http://127.0.0.1:3000/mcp");
        assert_eq!(auth.metadata().resource, "http://127.0.0.1:3000/mcp");
        assert_eq!(
            auth.metadata().authorization_servers,
            ["http://127.0.0.1:9"]
        );
    }

    #[test]
    fn the_introspection_secret_comes_from_the_environment_and_is_never_shown() {
        let base = [
            "--auth-issuer",
            "http://127.0.0.1:9",
            "--auth-scope",
            "s",
            "--auth-introspect",
            "http://127.0.0.1:9/introspect",
            "--auth-client-id",
            "rs",
        ];
        assert!(check(&base).unwrap_err().contains("go together"));
        let unset = [
            &base[..],
            &["--auth-client-secret-env", "MCPFLOW_TEST_UNSET_VAR"],
        ]
        .concat();
        assert!(
            check(&unset)
                .unwrap_err()
                .contains("MCPFLOW_TEST_UNSET_VAR")
        );
        // Any variable that is set stands for the secret (the tests may not set one).
        let secret = std::env::var("PATH").unwrap();
        let with_var = [&base[..], &["--auth-client-secret-env", "PATH"]].concat();
        let protection = check(&with_var).unwrap().unwrap();
        assert!(
            !format!("{protection:?}").contains(&secret),
            "{protection:?}"
        );
        assert!(format!("{protection:?}").contains("rs"));
    }
}
