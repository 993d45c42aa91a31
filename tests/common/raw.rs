//! Requests written by hand on a TLS connection of their own, for what a client library will not
//! send (a head without its body, a `Content-Length` that lies, oversized heads), and the audit
//! log's proof that such a request was received.

use super::{Server, complete_lines};
use std::path::Path;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A TLS connection to `s`, trusting its CA, for requests written by hand.
pub async fn connect(s: &Server) -> TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut s.ca_pem.as_slice()) {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(farm_apiserver::tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = TcpStream::connect(s.base.trim_start_matches("https://")).await.unwrap();
    connector.connect("localhost".try_into().unwrap(), tcp).await.unwrap()
}

/// A merge patch of `dolly` in `default` whose head is sent but whose body is not: the server
/// holds the request (and its in-flight slot) until the test sends the body or the request
/// times out. The body to send later is returned with the connection.
pub async fn patch_without_its_body(s: &Server) -> (TlsStream<TcpStream>, &'static [u8]) {
    const BODY: &[u8] = br#"{"spec":{"weight":7}}"#;
    let mut held = connect(s).await;
    let head = format!(
        "PATCH {} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/merge-patch+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        super::llama_path("default", "dolly"),
        s.token,
        BODY.len()
    );
    held.write_all(head.as_bytes()).await.unwrap();
    held.flush().await.unwrap();
    (held, BODY)
}

/// [`patch_without_its_body`], once the audit log at `audit` shows that the server received it:
/// from then on the patch holds its in-flight slot (the only one of a server started with
/// `--max-requests-inflight 1`).
pub async fn hold_a_slot(s: &Server, audit: &Path) -> (TlsStream<TcpStream>, &'static [u8]) {
    let held = patch_without_its_body(s).await;
    super::wait_until("the held patch to be received", async || received(audit, "patch")).await;
    held
}

/// The HTTP status code at the start of what `connection` answers, read to its end.
pub async fn status_of(mut connection: TlsStream<TcpStream>) -> String {
    let mut answer = Vec::new();
    let _ = connection.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    text.split_whitespace().nth(1).unwrap_or_default().to_string()
}

/// Whether the audit log at `path` records that a request with `verb` was received: past the
/// in-flight limit, which is the outermost layer, so it holds a slot.
pub fn received(path: &Path, verb: &str) -> bool {
    complete_lines(path)
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .any(|e| e["stage"] == "RequestReceived" && e["verb"] == verb)
}

/// Reads one answer's head and body from `connection` (which must carry a `Content-Length`), and
/// returns its status code and body.
pub async fn read_answer(connection: &mut TlsStream<TcpStream>) -> (String, Vec<u8>) {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        assert_eq!(connection.read(&mut byte).await.unwrap(), 1, "the connection ended in a head: {seen:?}");
        seen.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&seen).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
        .expect("a Content-Length");
    let mut body = vec![0; length];
    connection.read_exact(&mut body).await.unwrap();
    (head.split_whitespace().nth(1).unwrap_or_default().to_string(), body)
}
