//! Starts the real `ops-apiserver` binary on a free loopback port, standalone (a client trusting
//! the CA it generated and carrying its token, read from the kubeconfig it writes, as kubectl
//! does) or aggregated behind a real kube-apiserver (`cluster`).

#![allow(dead_code)]

pub mod cluster;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a test waits for something that happens at once on a quiet machine.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A running standalone server, stopped when dropped.
pub struct Standalone {
    child: Child,
    /// `https://127.0.0.1:PORT`
    pub base: String,
    /// The kubeconfig it wrote.
    pub kubeconfig: PathBuf,
    /// A client trusting its CA and sending its token.
    pub client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Standalone {
    /// Starts the server and waits until it answers `/readyz` with 200.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        let child = Command::new(env!("CARGO_BIN_EXE_ops-apiserver"))
            .args(["--standalone", "--listen", "127.0.0.1:0", "--write-kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ops-apiserver");
        let deadline = Instant::now() + DEADLINE;
        while !kubeconfig.exists() {
            assert!(Instant::now() < deadline, "the server wrote no kubeconfig");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&kubeconfig).expect("the kubeconfig")).expect("JSON");
        let cluster = &config["clusters"][0]["cluster"];
        let base = cluster["server"].as_str().expect("the server's URL").to_string();
        let ca = decode_base64(cluster["certificate-authority-data"].as_str().expect("the CA"));
        let token = config["users"][0]["user"]["token"].as_str().expect("the token");
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().expect("a header"));
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("the CA's PEM"))
            .default_headers(headers)
            .build()
            .expect("a client");
        let server = Self { child, base, kubeconfig, client, _dir: dir };
        loop {
            if let Ok(r) = server.client.get(server.url("/readyz")).send().await
                && r.status() == 200
            {
                return server;
            }
            assert!(Instant::now() < deadline, "the server never became ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// An absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// kubectl with this server's kubeconfig: its stdout, or a panic with its stderr.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        kubectl(&self.kubeconfig, args, stdin).expect("kubectl succeeds")
    }
}

impl Drop for Standalone {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// kubectl with `kubeconfig`: its stdout, or its stderr when it fails.
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubectl");
    let mut input = child.stdin.take().expect("kubectl's stdin");
    input.write_all(stdin.unwrap_or_default().as_bytes()).expect("write kubectl's stdin");
    drop(input);
    let out = child.wait_with_output().expect("kubectl's output");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    if out.status.success() { Ok(text(out.stdout)) } else { Err(text(out.stderr)) }
}

/// The bytes of standard base64 `text` (a kubeconfig's `certificate-authority-data`).
pub fn decode_base64(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).expect("base64")
}
