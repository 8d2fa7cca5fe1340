//! DNS-rebinding protection: a browser page on another site must not reach a server
//! listening on localhost, so `Host` and `Origin` are checked against allow-lists.

use axum::http::HeaderMap;
use axum::http::header::{HOST, ORIGIN};

/// The hosts a loopback server answers to by default.
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// Which `Host` and `Origin` values are accepted.
#[derive(Debug, Clone)]
pub(crate) struct HostGuard {
    /// Accepted hostnames (`example.com`) or `host:port` pairs; `None`: any.
    hosts: Option<Vec<String>>,
    /// Accepted origins (`https://app.example.com`); `None`: any. An origin whose host
    /// is an accepted hostname is accepted too.
    origins: Option<Vec<String>>,
}

impl HostGuard {
    /// Loopback names only, the default.
    pub(crate) fn loopback() -> Self {
        HostGuard {
            hosts: Some(LOOPBACK.iter().map(|h| (*h).to_owned()).collect()),
            origins: Some(Vec::new()),
        }
    }

    /// No checks.
    pub(crate) fn off() -> Self {
        HostGuard {
            hosts: None,
            origins: None,
        }
    }

    pub(crate) fn set_hosts(&mut self, hosts: Vec<String>) {
        self.hosts = Some(hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect());
        self.origins.get_or_insert_with(Vec::new);
    }

    pub(crate) fn set_origins(&mut self, origins: Vec<String>) {
        self.origins = Some(
            origins
                .into_iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        );
    }

    /// `Err(reason)` when the request must be refused.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), String> {
        if let Some(hosts) = &self.hosts {
            let host = headers
                .get(HOST)
                .and_then(|h| h.to_str().ok())
                .ok_or_else(|| "the request has no valid Host header".to_owned())?;
            if !host_allowed(hosts, host) {
                return Err(format!(
                    "Host `{host}` is not allowed (DNS-rebinding protection); allow it with HttpServer::allowed_hosts (`mcpflow serve --allow-host`)"
                ));
            }
        }
        if let Some(origins) = &self.origins
            && let Some(origin) = headers.get(ORIGIN)
        {
            let origin = origin
                .to_str()
                .map_err(|_| "the Origin header is not valid text".to_owned())?
                .trim_end_matches('/')
                .to_ascii_lowercase();
            let by_host = origin_host(&origin).is_some_and(|h| {
                self.hosts
                    .as_ref()
                    .is_some_and(|hosts| host_allowed(hosts, h))
            });
            if !by_host && !origins.iter().any(|a| a == "*" || *a == origin) {
                return Err(format!(
                    "Origin `{origin}` is not allowed (DNS-rebinding protection); allow it with HttpServer::allowed_origins (`mcpflow serve --allow-origin`)"
                ));
            }
        }
        Ok(())
    }
}

impl HostGuard {
    /// Whether a page from `origin` may read this server's answers (CORS): it is one of
    /// the allowed origins (`*` allows any), or its host is an allowed host (a page
    /// served from the loopback names, by default). A server whose checks are off
    /// allows no page unless origins were named.
    pub(crate) fn allows_page(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        let listed = self
            .origins
            .as_ref()
            .is_some_and(|o| o.iter().any(|a| a == "*" || *a == origin));
        let by_host = origin_host(&origin).is_some_and(|h| {
            self.hosts
                .as_ref()
                .is_some_and(|hosts| host_allowed(hosts, h))
        });
        listed || by_host
    }
}

/// `host` is `name` or `name:port`; an entry without a port accepts any port.
fn host_allowed(allowed: &[String], host: &str) -> bool {
    let name = strip_port(host);
    allowed
        .iter()
        .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name))
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        // [::1]:8080
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// The `host[:port]` part of `scheme://host[:port]`.
fn origin_host(origin: &str) -> Option<&str> {
    let (_, rest) = origin.split_once("://")?;
    Some(rest.split('/').next().unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(HOST, HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            h.insert(ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        h
    }

    #[test]
    fn loopback_names_pass_and_others_are_refused() {
        let guard = HostGuard::loopback();
        for ok in ["localhost:3000", "127.0.0.1:8080", "[::1]:1", "localhost"] {
            assert!(guard.check(&headers(ok, None)).is_ok(), "{ok}");
        }
        assert!(
            guard
                .check(&headers("127.0.0.1:1", Some("http://localhost:5173")))
                .is_ok()
        );
        let err = guard.check(&headers("evil.example.com", None)).unwrap_err();
        assert!(err.contains("evil.example.com"), "{err}");
        assert!(
            guard
                .check(&headers("localhost:3000", Some("http://evil.example.com")))
                .is_err()
        );
    }

    #[test]
    fn allow_lists_extend_and_off_accepts_everything() {
        let mut guard = HostGuard::loopback();
        guard.set_hosts(vec!["mcp.example.com".into()]);
        guard.set_origins(vec!["https://app.example.com/".into()]);
        assert!(guard.check(&headers("mcp.example.com:443", None)).is_ok());
        assert!(
            guard
                .check(&headers("mcp.example.com", Some("https://app.example.com")))
                .is_ok()
        );
        assert!(guard.check(&headers("localhost", None)).is_err());
        assert!(
            HostGuard::off()
                .check(&headers("anything", Some("http://x")))
                .is_ok()
        );
    }
}
