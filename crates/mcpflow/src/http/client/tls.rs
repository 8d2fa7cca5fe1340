//! The HTTP clients' TLS configuration, built once per process.
//!
//! Building a `reqwest` client with rustls reads and parses the system's root
//! certificates each time, which made every [`HttpClientTransport`](super::HttpClientTransport)
//! cost as much as a few calls. Every client the crate builds takes a copy of one
//! configuration instead: the system roots as the first client in the process found them,
//! checked by the platform verifier with the process's default crypto provider (or
//! aws-lc-rs, as `reqwest` would choose), offering HTTP/2 and HTTP/1.1.

/// A client builder with the shared TLS configuration, when there is one: with the
/// `rustls` feature, unless the configuration could not be built (then `reqwest` builds
/// its own, and reports the same error itself).
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    #[cfg(feature = "rustls")]
    if let Some(config) = shared::config() {
        return builder.tls_backend_preconfigured(config.clone());
    }
    builder
}

/// A client with the shared TLS configuration and reqwest's defaults, for the verifiers
/// that have no error to report; should that build fail, [`reqwest::Client::new`]'s own
/// (which panics as it always did when TLS cannot start).
#[cfg(feature = "http-server")]
pub(crate) fn client() -> reqwest::Client {
    client_builder().build().unwrap_or_default()
}

#[cfg(feature = "rustls")]
mod shared {
    use std::sync::{Arc, OnceLock};

    use rustls::ClientConfig;
    use rustls::crypto::CryptoProvider;

    /// The process's configuration; `None` when the platform verifier could not start.
    pub(super) fn config() -> Option<&'static ClientConfig> {
        static CONFIG: OnceLock<Option<ClientConfig>> = OnceLock::new();
        CONFIG
            .get_or_init(|| {
                build()
                    .map_err(|e| tracing::debug!(error = %e, "no shared TLS configuration"))
                    .ok()
            })
            .as_ref()
    }

    fn build() -> Result<ClientConfig, rustls::Error> {
        let provider = CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone())?;
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }
}
