//! `mcpflow inspect --url https://…` against a local TLS server: the shipped binary speaks
//! https with the platform's roots (here a test CA named by `SSL_CERT_FILE`), and a
//! certificate it cannot trust fails with a one-line error, not a hang.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::{HttpServe, ScratchDir, mcpflow_with};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA and a certificate for `localhost` and 127.0.0.1 that it signed.
struct TestPki {
    ca_pem: String,
    server: ServerConfig,
}

fn test_pki() -> TestPki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key"))
        .expect("CA certificate");
    let leaf_key = KeyPair::generate().expect("server key");
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("server parameters")
        .signed_by(&leaf_key, &ca)
        .expect("server certificate");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let server = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone(), ca.der().clone()], key)
        .expect("TLS server configuration");
    TestPki {
        ca_pem: ca.pem(),
        server,
    }
}

/// A TLS front on a free loopback port that forwards each connection to `backend`.
fn tls_front(runtime: &tokio::runtime::Runtime, config: ServerConfig, backend: SocketAddr) -> u16 {
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind the TLS front");
    let port = listener.local_addr().expect("TLS front address").port();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    runtime.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if let Ok(mut plain) = TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                }
            });
        }
    });
    port
}

fn backend_addr(url: &str) -> SocketAddr {
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("serve --http prints an http:// URL");
    authority
        .parse()
        .expect("serve --http listens on an IP address")
}

#[test]
fn inspect_reaches_an_https_server_and_names_an_untrusted_certificate() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let pki = test_pki();
    let dir = ScratchDir::new("tls");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &pki.ca_pem).expect("write the CA file");

    let server = HttpServe::start(&[]);
    let port = tls_front(&runtime, pki.server, backend_addr(&server.url));
    let url = format!("https://localhost:{port}/mcp");

    let ca = ca_file.to_str().expect("a UTF-8 temp path");
    let trusted = mcpflow_with(
        &["inspect", "--json", "--timeout", "10", "--url", &url],
        None,
        &[("SSL_CERT_FILE", ca)],
    );
    assert!(
        trusted.code == 0 && trusted.stdout.contains("test_simple_text"),
        "inspect over https with the test CA trusted: {}",
        trusted.describe()
    );

    // Roots without the test CA: a clear error, exit 3, no hang.
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "").expect("write an empty CA file");
    let untrusted = mcpflow_with(
        &["inspect", "--timeout", "10", "--url", &url],
        None,
        &[("SSL_CERT_FILE", empty.to_str().expect("a UTF-8 temp path"))],
    );
    assert_eq!(
        untrusted.code,
        3,
        "an untrusted certificate is a connection failure: {}",
        untrusted.describe()
    );
    assert!(
        untrusted.stderr.to_lowercase().contains("certificate"),
        "the error names the certificate problem: {}",
        untrusted.describe()
    );
    // Field defect 16: one line, which says how to trust a private CA.
    assert!(
        untrusted.stderr.contains("SSL_CERT_FILE") && untrusted.stderr.lines().count() == 1,
        "one line with the hint, no log line: {}",
        untrusted.describe()
    );
    drop(server);
    runtime.shutdown_timeout(Duration::from_secs(1));
}
