//! The redirects the transport follows: `307` and `308` within the endpoint's origin.
//!
//! A `301`, `302` or `303` turns a POST into a body-less GET, so the message would be
//! lost and the server's answer to the GET read as its reply. A redirect to another
//! origin would hand it the custom headers ([`header`](super::HttpClientBuilder::header):
//! API keys, as a rule), which `reqwest` only strips for `Authorization` and cookies.
//! Either fails the request with an error that says where the server pointed, so the
//! user can configure that URL instead.

use reqwest::StatusCode;
use reqwest::redirect::{Attempt, Policy};

/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

/// Why a redirect was not followed; the text ends the request's error.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error(
        "the server redirected with {status} to {to}; mcpflow follows only 307 and 308 \
         redirects, which keep the method and body (use that URL as the endpoint)"
    )]
    Method { status: StatusCode, to: String },
    #[error(
        "the server redirected to another origin, {to}; not followed, so the transport's \
         headers stay with the endpoint's origin (use that URL as the endpoint)"
    )]
    Origin { to: String },
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooMany,
}

/// The policy of the transport's HTTP client.
pub(super) fn policy() -> Policy {
    Policy::custom(decide)
}

fn decide(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    let to = attempt.url().to_string();
    let same_origin = attempt
        .previous()
        .first()
        .is_some_and(|first| first.origin() == attempt.url().origin());
    match attempt.status() {
        _ if attempt.previous().len() > MAX_REDIRECTS => attempt.error(Refused::TooMany),
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT if same_origin => {
            attempt.follow()
        }
        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => {
            attempt.error(Refused::Origin { to })
        }
        status => attempt.error(Refused::Method { status, to }),
    }
}
