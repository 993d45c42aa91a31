//! A server built with the library, served in the test's process: standalone, on a free
//! loopback port, with the token of the kubeconfig it writes, and a client that sends it.

use apiserver_kit::prelude::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Serves `builder` standalone with `options` (their authentication and cluster replaced),
/// writing its kubeconfig in `dir`; the server's URL and token once `/readyz` answers 200.
pub async fn serve(builder: ApiServerBuilder, options: ServerOptions, dir: &std::path::Path) -> (String, String) {
    let kubeconfig = dir.join("kubeconfig");
    let options = ServerOptions {
        authentication: Authentication::Standalone { write_kubeconfig: Some(kubeconfig.clone()) },
        cluster: ClusterConnection::None,
        ..options
    };
    let server = builder.options(options).build().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("https://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener, std::future::pending()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !kubeconfig.exists() {
        assert!(Instant::now() < deadline, "no kubeconfig written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let written: Value = serde_json::from_slice(&std::fs::read(&kubeconfig).unwrap()).unwrap();
    let token = written["users"][0]["user"]["token"].as_str().unwrap().to_string();
    let probe = client(&token, false);
    loop {
        if let Ok(r) = probe.get(format!("{base}/readyz")).send().await
            && r.status() == 200
        {
            return (base, token);
        }
        assert!(Instant::now() < deadline, "the server never became ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A client sending `token`, speaking only HTTP/1.1 when `http1`, else HTTP/2 as negotiated.
pub fn client(token: &str, http1: bool) -> reqwest::Client {
    let builder = reqwest::Client::builder().danger_accept_invalid_certs(true).default_headers(
        [(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap())].into_iter().collect(),
    );
    if http1 { builder.http1_only() } else { builder }.build().unwrap()
}
