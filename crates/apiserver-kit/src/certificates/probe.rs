//! Whether a TLS server trusts a CA: a handshake presenting a client certificate of that CA,
//! then an HTTP request, which the server answers only when it accepted the certificate (with
//! TLS 1.3 a refusal arrives after the client's side of the handshake ended). A rotation asks
//! this before a new CA signs the certificates its servers present to each other.

use crate::tls;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long one probe may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to `host:port`, verifying the server's certificate against `roots_pem` for the name
/// `host`, presenting `client` (certificate and key, PEM), and sends `GET path`: `Ok` with the
/// status line when the server answered, `Err` saying why not.
pub async fn answers_with_client_certificate(
    host: &str,
    port: u16,
    path: &str,
    roots_pem: &str,
    client: &tls::Certs,
) -> Result<String, String> {
    let config = client_config(roots_pem, client)?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| format!("{host}: {e}"))?;
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect((host, port)).await.map_err(|e| format!("connecting: {e}"))?;
        let mut stream =
            tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.map_err(|e| format!("handshake: {e}"))?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.map_err(|e| format!("sending: {e}"))?;
        // The status line is enough (a server may keep the connection open after it).
        let mut answer = Vec::new();
        let mut chunk = [0u8; 512];
        while !answer.contains(&b'\n') {
            let read = stream.read(&mut chunk).await.map_err(|e| format!("the certificate was refused: {e}"))?;
            if read == 0 {
                break;
            }
            answer.extend_from_slice(&chunk[..read]);
        }
        let text = String::from_utf8_lossy(&answer);
        match text.lines().next() {
            Some(status) if status.starts_with("HTTP/") => Ok(status.to_string()),
            _ => Err("no HTTP answer".to_string()),
        }
    };
    tokio::time::timeout(TIMEOUT, exchange).await.map_err(|_| format!("no answer in {TIMEOUT:?}"))?
}

fn client_config(roots_pem: &str, client: &tls::Certs) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for der in rustls_pemfile::certs(&mut roots_pem.as_bytes()) {
        roots.add(der.map_err(|e| format!("the trusted CAs: {e}"))?).map_err(|e| format!("the trusted CAs: {e}"))?;
    }
    let chain = rustls_pemfile::certs(&mut client.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the client certificate: {e}"))?;
    let key = rustls_pemfile::private_key(&mut client.key_pem.as_bytes())
        .map_err(|e| format!("the client key: {e}"))?
        .ok_or("no client key")?;
    let config = rustls::ClientConfig::builder_with_provider(tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| format!("the client certificate: {e}"))?;
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TLS server on loopback requiring client certificates of `trusted`, answering HTTP.
    async fn server(trusted: &tls::Ca) -> (u16, tls::Ca) {
        let ca = tls::new_ca("probe-server-ca").unwrap();
        let serving = tls::issue(&ca, &["localhost".into()]).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(rustls_pemfile::certs(&mut trusted.cert_pem.as_bytes()).flatten());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), tls::provider())
            .build()
            .unwrap();
        let chain = rustls_pemfile::certs(&mut serving.cert_pem.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
        let key = rustls_pemfile::private_key(&mut serving.key_pem.as_bytes()).unwrap().unwrap();
        let config = rustls::ServerConfig::builder_with_provider(tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    if let Ok(mut stream) = acceptor.accept(tcp).await {
                        let mut buffer = [0u8; 1024];
                        let _ = stream.read(&mut buffer).await;
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await;
                        let _ = stream.shutdown().await;
                    }
                });
            }
        });
        (port, ca)
    }

    #[tokio::test]
    async fn a_server_answers_a_certificate_of_a_ca_it_trusts_and_refuses_another() {
        let trusted = tls::new_ca("trusted").unwrap();
        let other = tls::new_ca("other").unwrap();
        let (port, server_ca) = server(&trusted).await;
        let (ours, theirs) =
            [&trusted, &other].map(|ca| tls::issue_for(ca, "probe", &[], tls::Usage::Client).unwrap()).into();
        let answer = answers_with_client_certificate("localhost", port, "/version", &server_ca.cert_pem, &ours).await;
        assert_eq!(answer.unwrap(), "HTTP/1.1 200 OK");
        let refused =
            answers_with_client_certificate("localhost", port, "/version", &server_ca.cert_pem, &theirs).await;
        assert!(refused.unwrap_err().contains("refused"));
        let unknown_server = answers_with_client_certificate("localhost", port, "/", &trusted.cert_pem, &ours).await;
        assert!(unknown_server.unwrap_err().starts_with("handshake"));
    }
}
