//! Serving-certificate reload and the request limits: new connections get a replaced
//! certificate while old ones continue; requests beyond the in-flight cap get 429; slow requests
//! get 504; slow or oversized request heads are refused; watches are exempt.
//!
//! Nothing here waits a fixed time: a test waits for the event itself (the server's log line of
//! a reload, the audit event of a request that holds a slot), and a request that must be slow is
//! made slow by the test (a body it never finishes sending), not by a sleep.

mod common;

use common::raw::{connect, hold_a_slot, patch_without_its_body, status_of};
use common::{Server, log_count, wait_for_log};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn client_trusting(ca_pem: &str, token: &str) -> reqwest::Client {
    common::Server::client_with(ca_pem.as_bytes(), Some(token))
}

#[tokio::test]
async fn replaced_certificate_files_reach_new_connections_while_old_ones_continue() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, log) = (dir.path().join("tls.crt"), dir.path().join("tls.key"), dir.path().join("server.log"));
    let first = farm_apiserver::tls::generate("ca-one", &[]).unwrap();
    // Chains (leaf, then CA): the standalone kubeconfig names the chain's last certificate as CA.
    std::fs::write(&cert, format!("{}{}", first.cert_pem, first.ca_pem)).unwrap();
    std::fs::write(&key, &first.key_pem).unwrap();
    let flags = [
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-private-key-file",
        key.to_str().unwrap(),
        "--tls-reload-interval-seconds",
        "1",
        "--log-format",
        "json",
    ];
    let s = Server::start_logging(&flags, "info", &log).await;
    let old = client_trusting(&first.ca_pem, &s.token);
    assert_eq!(old.get(s.url("/version")).send().await.unwrap().status(), 200);

    // The reload is logged once the new pair is in place: from then on, new connections get it.
    let second = farm_apiserver::tls::generate("ca-two", &[]).unwrap();
    std::fs::write(&key, &second.key_pem).unwrap();
    std::fs::write(&cert, format!("{}{}", second.cert_pem, second.ca_pem)).unwrap();
    wait_for_log(&log, "reloaded the serving certificate", 0).await;
    let fresh = client_trusting(&second.ca_pem, &s.token);
    assert_eq!(fresh.get(s.url("/version")).send().await.unwrap().status(), 200, "the new certificate is served");
    let stale = client_trusting(&first.ca_pem, &s.token);
    assert!(stale.get(s.url("/version")).send().await.is_err(), "new connections no longer get the old certificate");
    assert_eq!(old.get(s.url("/version")).send().await.unwrap().status(), 200, "the old connection continues");

    // A broken pair is not loaded: once the server has read it and said so, it still serves the
    // last good certificate.
    let refusals = log_count(&log, "not reloading the serving certificate yet");
    std::fs::write(&cert, "not a certificate").unwrap();
    wait_for_log(&log, "not reloading the serving certificate yet", refusals).await;
    let again = client_trusting(&second.ca_pem, &s.token);
    assert_eq!(again.get(s.url("/version")).send().await.unwrap().status(), 200);
    assert_eq!(log_count(&log, "reloaded the serving certificate"), 1, "the broken pair was never loaded");
}

#[tokio::test]
async fn requests_beyond_the_inflight_cap_get_429_but_watches_do_not_count() {
    let dir = tempfile::tempdir().unwrap();
    let (policy, audit) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n").unwrap();
    let (policy, audit_path) = (policy.display().to_string(), audit.display().to_string());
    let flags = ["--max-requests-inflight", "1", "--audit-policy-file", &policy, "--audit-log-path", &audit_path];
    let s = Server::start_with(&flags).await;
    let created = s.client.post(s.url(&common::llamas("default"))).json(&common::llama("dolly", 1.0, 1.0)).send();
    assert_eq!(created.await.unwrap().status(), 201);

    // The one slot is held by a patch whose body has not arrived, as its audit event shows.
    let (mut held, body) = hold_a_slot(&s, &audit).await;
    let refused = s.client.get(s.url(&common::llamas("default"))).send().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body_of_refusal: serde_json::Value = refused.json().await.unwrap();
    common::assert_status(&body_of_refusal, 429, "TooManyRequests");
    let watch = s
        .client
        .get(s.url(&format!("{}?watch=true&timeoutSeconds=1", common::llamas("default"))))
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200, "watches are long-running and exempt");

    // Once its body arrives the patch is answered, and the slot is free again.
    held.write_all(body).await.unwrap();
    assert_eq!(status_of(held).await, "200");
    assert_eq!(s.client.get(s.url(&common::llamas("default"))).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_request_over_the_timeout_gets_504_status() {
    let s = Server::start_with(&["--request-timeout-seconds", "1"]).await;
    let created = s.client.post(s.url(&common::llamas("default"))).json(&common::llama("dolly", 1.0, 1.0)).send();
    assert_eq!(created.await.unwrap().status(), 201);
    // The body never comes: only the request timeout can end this request.
    let (mut held, _) = patch_without_its_body(&s).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(common::EVENT_DEADLINE, held.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the request timeout ended the request");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    let body: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    common::assert_status(&body, 504, "Timeout");
    assert_eq!(body["message"], "Timeout: request did not complete within the allotted timeout");
    let (_, stored) = common::get_json(&s, &common::llama_path("default", "dolly")).await;
    assert_eq!(stored["spec"]["weight"], 1.0, "the timed-out patch changed nothing");
}

#[tokio::test]
async fn a_get_of_one_object_waiting_on_a_frozen_etcd_gets_504_at_the_request_timeout() {
    // A GET of one object runs on the task that serves it rather than a task of its own
    // (crate limits): its timeout must still end it while it waits.
    let etcd = common::etcd::Etcd::start();
    let s = Server::start_on_etcd(&etcd, &common::etcd::unique_prefix(), &["--request-timeout-seconds", "1"]).await;
    let created = s.client.post(s.url(&common::llamas("default"))).json(&common::llama("dolly", 1.0, 1.0)).send();
    assert_eq!(created.await.unwrap().status(), 201);
    // Frozen, etcd answers nothing: the GET's consistent read waits on it until the request
    // timeout (1 s) ends it, before the etcd client's own (2 s in the tests), whose error is
    // another Status.
    etcd.freeze(true);
    let got = tokio::time::timeout(
        common::EVENT_DEADLINE,
        s.client.get(s.url(&common::llama_path("default", "dolly"))).send(),
    )
    .await;
    etcd.freeze(false);
    let got = got.expect("the request timeout ended the GET").unwrap();
    assert_eq!(got.status(), 504);
    let body: serde_json::Value = got.json().await.unwrap();
    common::assert_status(&body, 504, "Timeout");
    assert_eq!(body["message"], "Timeout: request did not complete within the allotted timeout");
    // Thawed, the same GET is answered.
    assert_eq!(s.client.get(s.url(&common::llama_path("default", "dolly"))).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn slow_and_oversized_request_heads_are_refused() {
    let s = Server::start_with(&["--header-read-timeout-seconds", "1", "--max-headers", "20"]).await;

    // Headers that never finish: the server closes the connection after its header read
    // timeout (1 s). The wait is only a bound on failure: hyper's own default would be 30 s.
    let mut slowloris = connect(&s).await;
    slowloris.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n").await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(20), slowloris.read_to_end(&mut buf))
        .await
        .expect("the server closed the connection");

    // Too many headers: refused with 431.
    let mut many = connect(&s).await;
    let mut head = String::from("GET /version HTTP/1.1\r\nHost: localhost\r\n");
    for i in 0..40 {
        head.push_str(&format!("X-Filler-{i}: x\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    many.write_all(head.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(common::EVENT_DEADLINE, many.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
}
