//! Serving-certificate reload and the request limits: new connections get a replaced
//! certificate while old ones continue; requests beyond the in-flight cap get 429; slow requests
//! get 504; slow or oversized request heads are refused; watches are exempt.

mod common;

use common::Server;
use std::time::{Duration, Instant};

fn client_trusting(ca_pem: &str, token: &str) -> reqwest::Client {
    common::Server::client_with(ca_pem.as_bytes(), Some(token))
}

#[tokio::test]
async fn replaced_certificate_files_reach_new_connections_while_old_ones_continue() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let first = farm_apiserver::tls::generate("ca-one", &[]).unwrap();
    // Chains (leaf, then CA): the standalone kubeconfig names the chain's last certificate as CA.
    std::fs::write(&cert, format!("{}{}", first.cert_pem, first.ca_pem)).unwrap();
    std::fs::write(&key, &first.key_pem).unwrap();
    let s = Server::start_with(&[
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-private-key-file",
        key.to_str().unwrap(),
        "--tls-reload-interval-seconds",
        "1",
    ])
    .await;
    let old = client_trusting(&first.ca_pem, &s.token);
    assert_eq!(old.get(s.url("/version")).send().await.unwrap().status(), 200);

    let second = farm_apiserver::tls::generate("ca-two", &[]).unwrap();
    std::fs::write(&key, &second.key_pem).unwrap();
    std::fs::write(&cert, format!("{}{}", second.cert_pem, second.ca_pem)).unwrap();
    let fresh = client_trusting(&second.ca_pem, &s.token);
    let deadline = Instant::now() + Duration::from_secs(10);
    while fresh.get(s.url("/version")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the new certificate was never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let stale = client_trusting(&first.ca_pem, &s.token);
    assert!(stale.get(s.url("/version")).send().await.is_err(), "new connections no longer get the old certificate");
    assert_eq!(old.get(s.url("/version")).send().await.unwrap().status(), 200, "the old connection continues");

    // A broken pair is not loaded: the server keeps serving the last good certificate.
    std::fs::write(&cert, "not a certificate").unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let again = client_trusting(&second.ca_pem, &s.token);
    assert_eq!(again.get(s.url("/version")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn requests_beyond_the_inflight_cap_get_429_but_watches_do_not_count() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = common::unreachable_cluster_kubeconfig(dir.path());
    let s = Server::start_with(&["--kubeconfig", kubeconfig.to_str().unwrap(), "--max-requests-inflight", "1"]).await;
    // Held for about a second: FarmPods wait for a cache that never syncs.
    let slow = {
        let (client, url) = (s.client.clone(), s.url("/apis/farm.example.com/v1alpha/farmpods"));
        tokio::spawn(async move { client.get(url).send().await.unwrap().status() })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = s.client.get(s.url(&common::llamas("default"))).send().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: serde_json::Value = refused.json().await.unwrap();
    common::assert_status(&body, 429, "TooManyRequests");
    let watch = s
        .client
        .get(s.url(&format!("{}?watch=true&timeoutSeconds=1", common::llamas("default"))))
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200, "watches are long-running and exempt");
    assert_eq!(slow.await.unwrap(), 503);
    assert_eq!(s.client.get(s.url(&common::llamas("default"))).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_request_over_the_timeout_gets_504_status() {
    let s = Server::start_with(&["--request-timeout-seconds", "1"]).await;
    let started = Instant::now();
    // A resourceVersion from the future waits up to 3 s: longer than the request timeout.
    let r = s
        .client
        .get(s.url(&format!("{}?resourceVersion=999&resourceVersionMatch=NotOlderThan", common::llamas("default"))))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 504);
    assert!(started.elapsed() < Duration::from_millis(2500));
    let body: serde_json::Value = r.json().await.unwrap();
    common::assert_status(&body, 504, "Timeout");
}

#[tokio::test]
async fn slow_and_oversized_request_heads_are_refused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start_with(&["--header-read-timeout-seconds", "1", "--max-headers", "20"]).await;
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
    let addr = s.base.trim_start_matches("https://").to_string();
    let connect = || async {
        let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        connector.connect("localhost".try_into().unwrap(), tcp).await.unwrap()
    };

    // Headers that never finish: the connection is closed after the header read timeout.
    let mut slowloris = connect().await;
    slowloris.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n").await.unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), slowloris.read_to_end(&mut buf))
        .await
        .expect("the server closed the connection");
    assert!(started.elapsed() < Duration::from_secs(4));

    // Too many headers: refused with 431.
    let mut many = connect().await;
    let mut head = String::from("GET /version HTTP/1.1\r\nHost: localhost\r\n");
    for i in 0..40 {
        head.push_str(&format!("X-Filler-{i}: x\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    many.write_all(head.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), many.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
}
