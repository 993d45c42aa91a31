//! An HTTPS listener on a free loopback port for the servers the tests run themselves
//! (webhooks), its certificate signed by a CA of its own, named for the `caBundle` of the
//! configurations that call it.

use base64::Engine;
use std::sync::Arc;

/// A bound listener and what serving TLS on it takes.
pub struct LoopbackTls {
    pub listener: std::net::TcpListener,
    pub port: u16,
    pub config: axum_server::tls_rustls::RustlsConfig,
    /// The CA that signed the certificate, base64, for a `caBundle`.
    pub ca_bundle: String,
}

/// Binds a free loopback port for a server whose certificate names `names`, signed by the CA
/// `ca_name`.
pub fn bind(ca_name: &str, names: &[String]) -> LoopbackTls {
    let certs = farm_apiserver::tls::generate(ca_name, names).unwrap();
    let chain: Vec<_> = rustls_pemfile::certs(&mut certs.cert_pem.as_bytes()).collect::<Result<_, _>>().unwrap();
    let key = rustls_pemfile::private_key(&mut certs.key_pem.as_bytes()).unwrap().unwrap();
    let config = rustls::ServerConfig::builder_with_provider(farm_apiserver::tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = axum_server::tls_rustls::RustlsConfig::from_config(Arc::new(config));
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&certs.ca_pem);
    LoopbackTls { listener, port, config, ca_bundle }
}
