//! The ceiling for reads: a plain HTTPS server that answers with bytes it holds in memory,
//! against farm-apiserver in memory mode, side by side in one run ([`ab`]).
//!
//! The baseline is this benchmark binary started again as a child process (so, like
//! farm-apiserver, it has its own process and runtime), with `FARM_BENCH_BASELINE_DIR` naming
//! a folder holding `get.json` and `list.json`: the very bytes farm-apiserver answered to the
//! GET of one llama and the LIST of 1,000. It serves them with the same TLS stack as
//! farm-apiserver (its `tls::server_config`: rustls with ring, ALPN h2 and http/1.1, through
//! axum-server and hyper), a path ending in `/llamas` getting the list and any other path the
//! object, to the same client (keep-alive HTTP/1.1 connections sending the same bearer token,
//! which the baseline does not check).

use super::ab::{self, Load, ROUNDS};
use super::{Farm, LLAMAS, Target, fill, llama, start};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that makes this binary the baseline server.
pub const DIR_VAR: &str = "FARM_BENCH_BASELINE_DIR";

const LOADS: [Load; 2] = [ab::GET_ONE_LLAMA, ab::LIST_1000_LLAMAS];

/// Runs the comparison and prints its table.
pub async fn compare(binary: &Path, phase: Duration) {
    let (farm, _) = start(binary, &[]).await;
    fill(&farm.target, &format!("{LLAMAS}/small/llamas"), 1_000, llama, "l").await;
    let dir = answers_of(&farm.target).await;
    let baseline = spawn(dir, &farm.target).await;
    println!(
        "reads against a plain HTTPS server returning the same bytes from memory (same TLS stack and client), \
         {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    ab::header("farm", "plain");
    for l in &LOADS {
        ab::row(&farm, &baseline, l, phase).await;
    }
    println!();
}

/// A folder holding the bytes `target` answers to the GET of one llama and the LIST of 1,000
/// (`get.json`, `list.json`), for the baseline server to serve.
pub(super) async fn answers_of(target: &Target) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let client = target.client(false);
    for (file, path) in [("get.json", "/small/llamas/l000500"), ("list.json", "/small/llamas")] {
        let response = client.get(target.url(&format!("{LLAMAS}{path}"))).send().await.expect("read");
        assert_eq!(response.status(), 200);
        std::fs::write(dir.path().join(file), response.bytes().await.expect("body")).expect("write");
    }
    dir
}

/// Starts the baseline server on the bytes in `dir`; it is stopped when the returned `Farm` is
/// dropped.
pub(super) async fn spawn(dir: tempfile::TempDir, like: &Target) -> Farm {
    let child = Command::new(std::env::current_exe().expect("this benchmark's path"))
        .env(DIR_VAR, dir.path())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the baseline server");
    let port_file = dir.path().join("port");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !port_file.exists() {
        assert!(Instant::now() < deadline, "the baseline server did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let port = std::fs::read_to_string(&port_file).expect("port");
    let target = Target {
        base: format!("https://127.0.0.1:{}", port.trim()),
        ca: std::fs::read(dir.path().join("ca.pem")).expect("the baseline's CA"),
        credentials: like.credentials.clone(),
    };
    Farm { child, target, _dir: dir }
}

/// The baseline server's whole life, in its own process: serves the bytes of `dir` until killed.
pub async fn serve(dir: &Path) {
    use axum::response::IntoResponse;
    let read = |name: &str| bytes::Bytes::from(std::fs::read(dir.join(name)).expect("the bytes to serve"));
    let (object, list) = (read("get.json"), read("list.json"));
    let answer = move |uri: axum::http::Uri| {
        let body = if uri.path().ends_with("/llamas") { list.clone() } else { object.clone() };
        async move { ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response() }
    };
    let app = axum::Router::new().fallback(answer);
    // Named as the aggregator names it when it is registered behind an APIService ([`super::aggregator`]).
    let certs = farm_apiserver::tls::generate("bench-baseline-ca", &[super::aggregator::PLAIN_SERVICE.into()])
        .expect("certificates");
    let certificate = farm_apiserver::tls::ReloadingCertificate::new(&certs).expect("certificate");
    let config = farm_apiserver::tls::server_config(certificate, false).expect("TLS config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("address").port();
    std::fs::write(dir.join("ca.pem"), &certs.ca_pem).expect("write the CA");
    std::fs::write(dir.join("port.tmp"), port.to_string()).expect("write the port");
    std::fs::rename(dir.join("port.tmp"), dir.join("port")).expect("publish the port");
    let rustls = axum_server::tls_rustls::RustlsConfig::from_config(config);
    let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(rustls);
    axum_server::from_tcp(listener)
        .expect("serve")
        .acceptor(acceptor)
        .serve(app.into_make_service())
        .await
        .expect("the baseline server");
}
