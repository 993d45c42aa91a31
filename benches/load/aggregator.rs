//! What cluster users see (issue 36, `BENCH_ONLY=aggregator`): GET of one llama and LIST of
//! 1,000 through the kube-apiserver of the control plane, to farm-apiserver in aggregated mode
//! behind its APIService, beside the same requests to the plain HTTPS server of [`super::baseline`]
//! returning the very bytes farm-apiserver answered, behind an APIService of its own
//! (`plain.example.com`): the aggregator's own limit. Both are dialled by the aggregator as it
//! dials any APIService (an ExternalName Service naming localhost, the CA in `caBundle`), and
//! the client (this process, the admin's certificate) talks to the kube-apiserver only, in
//! alternating rounds ([`ab`]). The CPU columns are the backend's own.

use super::ab::{self, Load};
use super::{ControlPlane, Farm, LLAMAS, Target, baseline, fill, llama};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The name the aggregator gives the plain server (its certificate carries it).
pub const PLAIN_SERVICE: &str = "plain-apiserver.farm-system.svc";
const FARM_SERVICE: &str = "farm-apiserver.farm-system.svc";
/// The plain server's group, at the version farm-apiserver's loads use.
const PLAIN: &str = "/apis/plain.example.com/v1alpha/namespaces";

const PLAIN_LOADS: [Load; 2] = [
    Load {
        name: "GET one llama (32 conns)",
        concurrency: 32,
        request: |t, c, _| c.get(t.url(&format!("{PLAIN}/small/llamas/l000500"))),
    },
    Load {
        name: "LIST 1,000 llamas, JSON (8 conns)",
        concurrency: 8,
        request: |t, c, _| c.get(t.url(&format!("{PLAIN}/small/llamas"))),
    },
];

/// Runs the comparison and prints its table.
pub async fn compare(binary: &Path, phase: Duration) {
    let Some(cp) = ControlPlane::up() else {
        return println!("BENCH_ONLY=aggregator: skipped, the control plane cannot run here");
    };
    let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "small"}});
    let r = cp.target.client(false).post(cp.target.url("/api/v1/namespaces")).json(&namespace).send().await;
    assert!(r.expect("create namespace").status().is_success());
    let (farm, farm_ca, farm_port) = start_aggregated(binary, &cp, &[]);
    register(&cp, "farm", "farm.example.com", farm_port, &farm_ca);
    served(&cp.target, &format!("{LLAMAS}/small/llamas")).await;
    fill(&cp.target, &format!("{LLAMAS}/small/llamas"), 1_000, llama, "l").await;
    // The bytes farm-apiserver answered through the aggregator.
    let mut plain = baseline::spawn(baseline::answers_of(&cp.target).await, &cp.target).await;
    let plain_port: u16 = plain.target.base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("the plain port");
    register(&cp, "plain", "plain.example.com", plain_port, &String::from_utf8_lossy(&plain.target.ca));
    // Both sides are reached through the kube-apiserver; each side's CPU is its backend's.
    plain.target = cp.target.clone();
    served(&cp.target, &format!("{PLAIN}/small/llamas")).await;
    println!(
        "through the kube-apiserver's aggregator: farm-apiserver against a plain HTTPS server returning the same bytes, each behind its APIService, {} rounds of alternating runs, {} s each",
        ab::ROUNDS,
        phase.as_secs()
    );
    ab::header("farm", "plain");
    for (farm_load, plain_load) in [ab::GET_ONE_LLAMA, ab::LIST_1000_LLAMAS].iter().zip(&PLAIN_LOADS) {
        ab::row_of_two((&farm, farm_load), (&plain, plain_load), phase).await;
    }
    println!();
}

/// farm-apiserver in aggregated mode (delegated authentication, the cluster's Pods), its
/// certificate named as the aggregator names it, with `extra` flags; with its CA and port.
pub fn start_aggregated(binary: &Path, cp: &ControlPlane, extra: &[&str]) -> (Farm, String, u16) {
    let dir = tempfile::tempdir().expect("temp dir");
    let certs = farm_apiserver::tls::generate("bench-farm-ca", &[FARM_SERVICE.into()]).expect("certificates");
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, &certs.cert_pem).expect("write the certificate");
    std::fs::write(&key, &certs.key_pem).expect("write the key");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("address").port();
    let child = Command::new(binary)
        .args(["serve", "--bind-address", "127.0.0.1", "--secure-port", &port.to_string()])
        .arg("--kubeconfig")
        .arg(cp.kubeconfig())
        .arg("--tls-cert-file")
        .arg(&cert)
        .arg("--tls-private-key-file")
        .arg(&key)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("start farm-apiserver");
    let farm = Farm { child, target: cp.target.clone(), _dir: dir };
    (farm, certs.ca_pem, port)
}

/// Routes `group` (versions v1 and v1alpha) to the server on `port` of localhost, as
/// `manifests/` does in a cluster: an ExternalName Service and an APIService per version.
pub fn register(cp: &ControlPlane, name: &str, group: &str, port: u16, ca_pem: &str) {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let mut manifest = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: farm-system}}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: {name}-apiserver, namespace: farm-system}}\n\
         spec: {{type: ExternalName, externalName: localhost, ports: [{{port: {port}, protocol: TCP}}]}}\n"
    );
    for (version, priority) in [("v1", 20), ("v1alpha", 15)] {
        manifest.push_str(&format!(
            "---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: {version}.{group}}}\n\
             spec: {{group: {group}, version: {version}, groupPriorityMinimum: 1000, versionPriority: {priority}, \
             service: {{name: {name}-apiserver, namespace: farm-system, port: {port}}}, caBundle: {ca}}}\n"
        ));
    }
    let mut kubectl = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(cp.kubeconfig())
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("run kubectl");
    use std::io::Write;
    kubectl.stdin.take().expect("stdin").write_all(manifest.as_bytes()).expect("write the manifest");
    assert!(kubectl.wait().expect("kubectl").success(), "kubectl apply of the {group} APIServices");
}

/// Waits until the kube-apiserver answers `path` with 200 (the APIService available).
pub async fn served(target: &Target, path: &str) {
    let client = target.client(false);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if client.get(target.url(path)).send().await.is_ok_and(|r| r.status() == 200) {
            return;
        }
        assert!(Instant::now() < deadline, "the aggregator did not serve {path}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
