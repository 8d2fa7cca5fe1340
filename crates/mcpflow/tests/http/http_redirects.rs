//! Redirects the streamable HTTP client meets: a `307` or `308` within the endpoint's
//! origin is followed with the method and body kept; a redirect that would turn the
//! POST into a GET, or hand the custom headers to another origin, fails the request
//! with an error naming where the server pointed, and nothing reaches that place.
#![cfg(all(feature = "http-client", feature = "http-server"))]
#![allow(clippy::unwrap_used)] // panics are how tests fail

use axum::http::Method;
use common::bounded;

use super::http_client::{Reply, builder, connect, http_error, serve, standard, status};
use crate::common;

fn redirect(code: u16, to: &str) -> Reply {
    let mut reply = status(code, "");
    reply.headers_mut().insert("location", to.parse().unwrap());
    reply
}

/// `ping` POSTed to `/mcp` is redirected with `code` to `/moved`, which answers it.
async fn ping_redirected_within_the_origin(code: u16) {
    let server = serve(move |req| {
        if req.uri.path() == "/mcp" && req.rpc() == "ping" {
            return redirect(code, "/moved");
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server).header("x-api-key", "k-1")).await;
    bounded("ping through the redirect", client.ping())
        .await
        .unwrap();
    let moved: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|r| r.uri.path() == "/moved")
        .collect();
    assert_eq!(moved.len(), 1, "{code}: one request at the new URL");
    assert_eq!(moved[0].verb, Method::POST, "{code} keeps the method");
    assert_eq!(moved[0].rpc(), "ping", "{code} keeps the body");
    assert_eq!(moved[0].header("x-api-key"), Some("k-1"), "same origin");
    assert_eq!(moved[0].header("mcp-session-id"), Some("s-1"));
}

#[tokio::test]
async fn temporary_and_permanent_redirects_within_the_origin_are_followed() {
    ping_redirected_within_the_origin(307).await;
    ping_redirected_within_the_origin(308).await;
}

/// 301, 302 and 303 would resend the POST as a GET without its message.
#[tokio::test]
async fn a_redirect_that_drops_the_body_fails_the_request() {
    for code in [301u16, 302, 303] {
        let server = serve(move |req| {
            if req.uri.path() == "/mcp" && req.rpc() == "ping" {
                return redirect(code, "/moved");
            }
            standard(&req, Some("s-1"))
        })
        .await;
        let client = connect(builder(&server)).await;
        let error = bounded("the redirected ping fails", client.ping())
            .await
            .unwrap_err();
        let (_, _, detail) = http_error(&error);
        assert!(
            detail.contains(&format!("redirected with {code}")) && detail.contains("/moved"),
            "{code}: {detail}"
        );
        assert_eq!(
            server.count(|r| r.uri.path() == "/moved"),
            0,
            "{code}: nothing was sent to the new URL"
        );
        // The session goes on at the endpoint.
        bounded("tools/list after the refusal", client.list_all_tools())
            .await
            .unwrap();
    }
}

/// A redirect to another origin (another port here) would hand it the API key.
#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed() {
    let elsewhere = serve(|req| standard(&req, Some("s-2"))).await;
    let target = elsewhere.url.clone();
    let server = serve(move |req| {
        if req.rpc() == "ping" {
            return redirect(307, &target);
        }
        standard(&req, Some("s-1"))
    })
    .await;
    let client = connect(builder(&server).header("x-api-key", "k-1")).await;
    let error = bounded("the redirected ping fails", client.ping())
        .await
        .unwrap_err();
    let (_, _, detail) = http_error(&error);
    assert!(
        detail.contains("another origin") && detail.contains(&elsewhere.url),
        "{detail}"
    );
    assert!(elsewhere.seen().is_empty(), "the other origin got nothing");
}
