//! The server's modes and configuration: aggregated mode from a kubeconfig, serving certificates
//! from PEM files, and flags given as `FARM_*` environment variables.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn aggregated_mode_from_env_vars_uses_pem_certificates_and_refuses_until_authentication_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    // A kubeconfig naming some cluster; aggregated mode reads it at start.
    let kubeconfig = dir.path().join("cluster.kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n",
    )
    .unwrap();
    let certs = farm_apiserver::tls::generate("test-ca", &["farm.test".into()]).unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, &certs.cert_pem).unwrap();
    std::fs::write(&key, &certs.key_pem).unwrap();
    // The client trusts only the test CA and checks the name `localhost`.
    let client = common::Server::client_with(certs.ca_pem.as_bytes(), None);
    // A port chosen here can be taken by another test before the server binds it (the server
    // then exits): start again on another.
    let mut started = None;
    for _ in 0..5 {
        let port = free_port();
        let mut child = Child(
            Command::new(env!("CARGO_BIN_EXE_farm-apiserver"))
                .arg("serve")
                .env("FARM_BIND_ADDRESS", "127.0.0.1")
                .env("FARM_SECURE_PORT", port.to_string())
                .env("FARM_KUBECONFIG", &kubeconfig)
                .env("FARM_TLS_CERT_FILE", &cert)
                .env("FARM_TLS_PRIVATE_KEY_FILE", &key)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let base = format!("https://localhost:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(r) = client.get(format!("{base}/readyz")).send().await
                && r.status() == 200
            {
                started = Some((child, base));
                break;
            }
            if child.0.try_wait().unwrap().is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "aggregated server never became ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if started.is_some() {
            break;
        }
    }
    let (_child, base) = started.expect("the server started on one of five free ports");
    // Without the cluster's authentication ConfigMap nothing can be authenticated yet: 503, not
    // an open door; health stays open.
    let r = client
        .get(format!("{base}/apis/farm.example.com/v1alpha"))
        .header("X-Remote-User", "admin")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let body: serde_json::Value = r.json().await.unwrap();
    common::assert_status(&body, 503, "ServiceUnavailable");
    assert!(body["message"].as_str().unwrap().contains("extension-apiserver-authentication"));
    assert_eq!(client.get(format!("{base}/livez")).send().await.unwrap().status(), 200);
}

#[test]
fn aggregated_mode_without_any_cluster_configuration_fails_clearly() {
    let out = Command::new(env!("CARGO_BIN_EXE_farm-apiserver"))
        .args(["serve", "--bind-address", "127.0.0.1", "--secure-port", "0"])
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("FARM_KUBECONFIG")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pass --standalone"), "{stderr}");
}

#[test]
fn missing_certificate_files_fail_clearly() {
    let out = Command::new(env!("CARGO_BIN_EXE_farm-apiserver"))
        .args([
            "serve",
            "--standalone",
            "--secure-port",
            "0",
            "--tls-cert-file",
            "/nonexistent.crt",
            "--tls-private-key-file",
            "/nonexistent.key",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.crt"));
}

#[tokio::test]
async fn standalone_without_a_cluster_lists_farmpods_and_says_what_they_need() {
    let s = common::Server::start().await;
    let resources: serde_json::Value =
        s.client.get(s.url("/apis/farm.example.com/v1alpha")).send().await.unwrap().json().await.unwrap();
    let names: Vec<&str> =
        resources["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["llamas", "llamas/status", "farmpods"]);
    for path in ["/apis/farm.example.com/v1/farmpods", "/apis/farm.example.com/v1/namespaces/default/farmpods/web"] {
        let r = s.client.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 503, "{path}");
        assert!(r.headers().get("retry-after").is_none(), "{path}: waiting will not bring a cluster");
        let body: serde_json::Value = r.json().await.unwrap();
        common::assert_status(&body, 503, "ServiceUnavailable");
        assert!(body["message"].as_str().unwrap().contains("start it with --kubeconfig PATH"), "{body}");
    }
    let watch = s.client.get(s.url("/apis/farm.example.com/v1/farmpods?watch=true")).send().await.unwrap();
    assert_eq!(watch.status(), 503);
    // kubectl finds the resource and shows the server's reason, not "doesn't have a resource type".
    let (success, _, stderr) = s.kubectl(&["get", "farmpods"]);
    assert!(!success);
    assert!(
        stderr.contains("Error from server (ServiceUnavailable): FarmPods are views of a cluster's Pods"),
        "{stderr}"
    );
}

#[tokio::test]
async fn with_an_unreachable_cluster_llamas_work_at_once_and_farmpods_are_503_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = common::unreachable_cluster_kubeconfig(dir.path());
    let s = common::Server::start_with(&["--kubeconfig", kubeconfig.to_str().unwrap()]).await;
    let resources: serde_json::Value =
        s.client.get(s.url("/apis/farm.example.com/v1alpha")).send().await.unwrap().json().await.unwrap();
    let names: Vec<&str> =
        resources["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["llamas", "llamas/status", "farmpods"]);
    let farmpods = &resources["resources"][2];
    assert_eq!(farmpods["verbs"], serde_json::json!(["get", "list", "watch"]));
    assert_eq!(farmpods["shortNames"], serde_json::json!(["fp"]));

    let created =
        s.client.post(s.url(&common::llamas("default"))).json(&common::llama("dolly", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(created.status(), 201, "llamas do not wait for the cluster");

    let started = Instant::now();
    let r = s.client.get(s.url("/apis/farm.example.com/v1alpha/farmpods")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    // A lower bound on the server's one-second wait for its cache: load makes it longer, never
    // shorter, and an answer that did not wait fails it.
    assert!(started.elapsed() >= Duration::from_millis(900), "the request waited briefly for the cache first");
    let body: serde_json::Value = r.json().await.unwrap();
    common::assert_status(&body, 503, "ServiceUnavailable");

    let write = s
        .client
        .post(s.url("/apis/farm.example.com/v1alpha/namespaces/default/farmpods"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(write.status(), 405, "farmpods are read-only");

    let ready = s.anonymous().get(s.url("/readyz?verbose")).send().await.unwrap();
    assert_eq!(ready.status(), 200, "the Pod cache does not fail readiness: llamas are served");
    let text = ready.text().await.unwrap();
    assert!(text.contains("[-]pod-cache not ready") && text.contains("127.0.0.1:1"), "{text}");
    let cache = s.anonymous().get(s.url("/readyz/pod-cache")).send().await.unwrap();
    assert_eq!(cache.status(), 500);
}
