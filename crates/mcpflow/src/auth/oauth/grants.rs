//! The grants: registration, authorization code with PKCE, the machine grants (client
//! credentials, enterprise-managed, workload identity) and refresh.

use std::sync::Arc;

use reqwest::Url;

use super::{Found, OAuthClient, OAuthError, check_method};
use crate::auth::config::{Grant, WorkloadIdentity};
use crate::auth::dpop::Dpop;
use crate::auth::pkce::{Pkce, State};
use crate::auth::scope::check_response_iss;
use crate::auth::store::{ClientRegistration, Tokens};
use crate::auth::token::{Endpoints, auth_method};
use crate::auth::user::{UserAuthorization, UserStepError};

impl OAuthClient {
    /// The registration at `found`'s issuer: pre-registered, stored, a Client ID Metadata
    /// Document, or a new dynamic registration (stored under the issuer).
    pub(super) async fn registration(
        &self,
        found: &Found,
        redirect_uri: &Url,
        scope: Option<&str>,
    ) -> Result<ClientRegistration, OAuthError> {
        let issuer = found.issuer.as_str();
        let pre = |at: Option<&str>| {
            self.config
                .pre_registered
                .iter()
                .find(|(i, _)| i.as_deref() == at)
                .map(|(_, c)| c.clone())
        };
        if let Some(client) = pre(Some(issuer)) {
            return Ok(client);
        }
        if let Some(client) = self.config.store.registration(issuer)? {
            return Ok(client);
        }
        if let Some(client) = pre(None) {
            return Ok(client);
        }
        if found.server.client_id_metadata_document_supported == Some(true)
            && let Some(url) = &self.config.client_metadata_url
        {
            return Ok(ClientRegistration::public(url.clone()).auth_method("none"));
        }
        let Some(endpoint) = found.server.registration_endpoint.as_deref() else {
            return Err(OAuthError::NoRegistration(issuer.to_owned()));
        };
        let endpoint = crate::auth::metadata::endpoint("registration_endpoint", Some(endpoint))?;
        let offered = found
            .server
            .token_endpoint_auth_methods_supported
            .as_deref();
        let method = match offered {
            None => "none",
            Some(m) if m.iter().any(|x| x == "none") => "none",
            Some(m) if m.iter().any(|x| x == "client_secret_basic") => "client_secret_basic",
            Some(m) if m.iter().any(|x| x == "client_secret_post") => "client_secret_post",
            Some(_) => "none",
        };
        let client = self
            .endpoints()
            .register(
                &endpoint,
                &self.config.client_name,
                redirect_uri,
                method,
                scope,
            )
            .await?;
        self.config
            .store
            .save_registration(issuer, client.clone())?;
        Ok(client)
    }

    pub(super) async fn authorization_code(
        &self,
        user: &dyn UserAuthorization,
        found: &Found,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let (authorization_endpoint, _) =
            found.server.check_for_authorization_code(&found.issuer)?;
        let redirect_uri = user.redirect_uri();
        let client = self
            .registration(found, &redirect_uri, scope.as_deref())
            .await?;
        let pkce = Pkce::generate()?;
        let state = State::generate()?;
        let mut url = authorization_endpoint;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", redirect_uri.as_str())
                .append_pair("code_challenge", pkce.challenge())
                .append_pair("code_challenge_method", pkce.method())
                .append_pair("state", state.as_str());
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
                // OpenID Connect grants offline_access (a refresh token) only with
                // consent asked for (OIDC Core §11); servers drop it otherwise.
                if scope.split(' ').any(|s| s == "offline_access") {
                    query.append_pair("prompt", "consent");
                }
            }
            if let Some(resource) = &found.resource {
                query.append_pair("resource", resource);
            }
        }
        let redirect = tokio::time::timeout(self.config.timeout, user.authorize(url))
            .await
            .map_err(|_| UserStepError::Timeout(self.config.timeout))??;
        let param = |name: &str| {
            redirect
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        // RFC 9207: an untrusted response is dropped before its error or code is read.
        check_response_iss(&found.server, &found.issuer, param("iss").as_deref())?;
        if !param("state").is_some_and(|s| state.matches(&s)) {
            return Err(OAuthError::StateMismatch);
        }
        if let Some(error) = param("error") {
            return Err(OAuthError::Denied {
                error,
                description: param("error_description"),
            });
        }
        let code = param("code").ok_or(OAuthError::NoCode)?;
        let params = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("code_verifier", pkce.verifier()),
        ];
        let dpop = self.dpop_for(found);
        self.token_request(found, &client, dpop, params, scope.as_deref())
            .await
    }

    pub(super) async fn client_credentials(
        &self,
        client: &ClientRegistration,
        found: &Found,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        self.machine_grant(
            client,
            found,
            scope,
            &[("grant_type", "client_credentials")],
        )
        .await
    }

    /// Enterprise-managed authorization: an ID-JAG from the identity provider, then the
    /// JWT bearer grant with it at the authorization server.
    pub(super) async fn enterprise(
        &self,
        client: &ClientRegistration,
        idp: &crate::auth::EnterpriseIdp,
        found: &Found,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let assertion = self
            .endpoints()
            .identity_assertion(
                idp,
                &found.issuer,
                found.resource.as_deref(),
                scope.as_deref(),
            )
            .await?;
        let grant = [
            ("grant_type", crate::auth::enterprise::JWT_BEARER_GRANT),
            ("assertion", assertion.expose()),
        ];
        self.machine_grant(client, found, scope, &grant).await
    }

    /// A grant without a user step: `grant` plus the scope and the resource, with the
    /// client's own authentication.
    pub(super) async fn machine_grant(
        &self,
        client: &ClientRegistration,
        found: &Found,
        scope: Option<String>,
        grant: &[(&str, &str)],
    ) -> Result<Tokens, OAuthError> {
        let mut params = grant.to_vec();
        if let Some(scope) = &scope {
            params.push(("scope", scope));
        }
        let dpop = self.dpop_for(found);
        self.token_request(found, client, dpop, params, scope.as_deref())
            .await
    }

    /// Workload identity: the platform's identity token as a JWT bearer grant, with no
    /// client authentication.
    pub(super) async fn workload(
        &self,
        identity: &WorkloadIdentity,
        found: &Found,
        scope: Option<String>,
    ) -> Result<Tokens, OAuthError> {
        let token = identity
            .current()
            .map_err(|e| OAuthError::WorkloadToken(e.to_string()))?;
        let client = ClientRegistration::public(identity.client_id.clone().unwrap_or_default())
            .auth_method("none");
        let grant = [
            ("grant_type", crate::auth::enterprise::JWT_BEARER_GRANT),
            ("assertion", token.expose()),
        ];
        self.machine_grant(&client, found, scope, &grant).await
    }

    /// The refresh-token grant; keeps the old refresh token when no new one is issued.
    pub(super) async fn refresh(&self, found: &Found, old: &Tokens) -> Result<(), OAuthError> {
        let Some(refresh_token) = &old.refresh_token else {
            return Ok(());
        };
        let client = match &self.config.grant {
            Grant::ClientCredentials(client) | Grant::Enterprise(client, _) => client.clone(),
            Grant::AuthorizationCode(user) => {
                self.registration(found, &user.redirect_uri(), old.scope.as_deref())
                    .await?
            }
            Grant::WorkloadIdentity(identity) => {
                ClientRegistration::public(identity.client_id.clone().unwrap_or_default())
                    .auth_method("none")
            }
        };
        let params = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.expose()),
        ];
        // A refresh token bound to a key is refreshed with that key.
        let dpop = match &old.dpop_key {
            Some(_) => self.dpop_key(),
            None => self.dpop_for(found),
        };
        let mut tokens = self
            .token_request(found, &client, dpop, params, old.scope.as_deref())
            .await?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(refresh_token.clone());
        }
        self.save(Some(tokens))
    }

    /// A token request at `found`'s token endpoint: `params` and the RFC 8707
    /// `resource`, with `client`'s authentication, proved with `dpop` when the tokens
    /// are to be bound to it.
    async fn token_request<'a>(
        &self,
        found: &'a Found,
        client: &ClientRegistration,
        dpop: Option<Arc<Dpop>>,
        mut params: Vec<(&'a str, &'a str)>,
        scope: Option<&str>,
    ) -> Result<Tokens, OAuthError> {
        let method = auth_method(client, &found.server)?;
        check_method(&method)?;
        if let Some(resource) = &found.resource {
            params.push(("resource", resource));
        }
        Ok(Endpoints {
            dpop: dpop.as_deref(),
            ..self.endpoints()
        }
        .token(
            &found.token_endpoint,
            &found.issuer,
            client,
            &method,
            &params,
            scope,
        )
        .await?)
    }
}
