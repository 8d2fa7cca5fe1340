//! The OAuth hook of the transport: after a 401 or a 403 `insufficient_scope`, run the
//! flow and say whether to send the request again. One request runs the flow at most
//! `max_attempts` times, and the flow itself stops after as many attempts in a row
//! across requests.

use std::future::Future;

use reqwest::header::WWW_AUTHENTICATE;
use reqwest::{RequestBuilder, Response};

use super::connection::Connection;
use crate::auth::OAuthError;
use crate::error::TransportError;

/// What to do with a response.
pub(super) enum Step {
    /// Handle it as usual.
    Proceed,
    /// Tokens changed: send the request again.
    Retry,
    /// No token could be had.
    Fail(TransportError),
}

/// The token generation to pass to [`after`] (0 without OAuth).
pub(super) fn generation(conn: &Connection) -> u64 {
    conn.config.oauth.as_ref().map_or(0, |o| o.generation())
}

/// Inspects `response` to a request sent at token `generation`.
pub(super) async fn after(
    conn: &Connection,
    context: &'static str,
    response: &Response,
    generation: u64,
    sends: &mut u32,
) -> Step {
    let Some(oauth) = &conn.config.oauth else {
        return Step::Proceed;
    };
    // A server may hand out a new DPoP nonce on any answer (RFC 9449 §9).
    let nonce = response
        .headers()
        .get(DPOP_NONCE)
        .and_then(|v| v.to_str().ok())
        .filter(|n| oauth.learn_nonce(response.url(), n))
        .is_some();
    let status = response.status();
    if status.is_success() {
        oauth.succeeded();
        return Step::Proceed;
    }
    if !matches!(status.as_u16(), 401 | 403) {
        return Step::Proceed;
    }
    let values: Vec<&str> = response
        .headers()
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    // The proof lacked the nonce the server now gave: the same request again, with it;
    // not an authorization attempt.
    if status == 401 && nonce && asks_for_nonce(&values) {
        return Step::Retry;
    }
    if *sends >= oauth.max_attempts() {
        let said = refusal(&values).map_or(String::new(), |r| format!("; the server said: {r}"));
        return Step::Fail(TransportError::Http {
            context,
            status: Some(status.as_u16()),
            detail: format!("still refused after {sends} authorization attempts{said}"),
        });
    }
    *sends += 1;
    // Boxed: a rare path, kept out of every POST's future.
    match Box::pin(oauth.challenged(status.as_u16(), &values, generation)).await {
        Ok(()) => Step::Retry,
        Err(OAuthError::Forbidden) => Step::Proceed,
        Err(e) => {
            tracing::warn!(error = %e, "OAuth authorization failed");
            Step::Fail(TransportError::Http {
                context,
                status: Some(status.as_u16()),
                detail: format!("the server requires authorization, which failed: {e}"),
            })
        }
    }
}

const DPOP_NONCE: &str = "dpop-nonce";

/// Whether a `DPoP` challenge says the proof must carry the server's nonce.
fn asks_for_nonce(values: &[&str]) -> bool {
    matches!(
        crate::auth::resource_challenge(values.iter().copied()),
        Ok(Some((challenge, true))) if challenge.error.as_deref() == Some("use_dpop_nonce")
    )
}

/// The `error` and `error_description` of a refusal's challenge (`invalid_token:
/// signature invalid`), shown to people only: the reason behind a token that keeps
/// being refused.
fn refusal(values: &[&str]) -> Option<String> {
    let (challenge, _) = crate::auth::resource_challenge(values.iter().copied()).ok()??;
    match (challenge.error, challenge.error_description) {
        (Some(error), Some(description)) => Some(format!("{error}: {description}")),
        (Some(error), None) => Some(error),
        (None, description) => description,
    }
}

/// Sends the request `make` builds, again after a successful authorization; an
/// authorization failure leaves the refusing response to the caller (it is logged).
pub(super) async fn send<F, Fut>(
    conn: &Connection,
    context: &'static str,
    mut make: F,
) -> Result<Response, reqwest::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = RequestBuilder>,
{
    let mut sends = 0;
    loop {
        let generation = generation(conn);
        let response = make().await.send().await?;
        match after(conn, context, &response, generation, &mut sends).await {
            Step::Retry => {}
            Step::Proceed | Step::Fail(_) => return Ok(response),
        }
    }
}
