//! A real control plane (etcd, kube-apiserver and kube-controller-manager on loopback, started by
//! the repository's `scripts/control-plane.sh`) and the example server registered with it
//! through an APIService, as a cluster's administrator installs it.

use super::{DEADLINE, kubectl};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The control plane and ops-apiserver behind it, stopped when dropped.
pub struct Cluster {
    server: Child,
    /// The kubeconfig of the cluster's administrator.
    pub kubeconfig: PathBuf,
    /// ops-apiserver's log.
    pub log: PathBuf,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts the control plane (with kube-controller-manager) and ops-apiserver, registers it
    /// and waits until the aggregator serves `ops.example.com/v1`.
    pub async fn start() -> Self {
        Self::start_with("--controller-manager").await
    }

    /// As [`Cluster::start`], with `option` for `scripts/control-plane.sh up` in place of
    /// kube-controller-manager (whose garbage collector acts on deletions in its own time, which
    /// a comparison of two servers cannot wait for): `--audit`, so that every answer has an
    /// Audit-Id.
    pub async fn start_with(option: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/control-plane.sh");
        let up = Command::new("bash").arg(script).arg("up").arg(dir.path()).arg(option).status();
        assert!(up.expect("run scripts/control-plane.sh").success(), "the control plane did not start");
        let kubeconfig = dir.path().join("admin.kubeconfig");
        let certs = apiserver_kit::tls::generate("ops-e2e-ca", &["ops-apiserver.ops-system.svc".into()]).unwrap();
        let (cert, key, log) = (dir.path().join("ops.crt"), dir.path().join("ops.key"), dir.path().join("ops.log"));
        std::fs::write(&cert, &certs.cert_pem).unwrap();
        std::fs::write(&key, &certs.key_pem).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = Command::new(env!("CARGO_BIN_EXE_ops-apiserver"))
            .args(["--listen", &format!("127.0.0.1:{port}"), "--kubeconfig"])
            .arg(&kubeconfig)
            .arg("--tls-cert-file")
            .arg(&cert)
            .arg("--tls-private-key-file")
            .arg(&key)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start ops-apiserver");
        let cluster = Self { server, kubeconfig, log, dir };
        cluster.kubectl(&["apply", "-f", "-"], Some(&registration(port, &certs.ca_pem)));
        cluster.kubectl(&["wait", "--for=condition=Available", "apiservice/v1.ops.example.com", "--timeout=60s"], None);
        eventually("the aggregator to serve ops.example.com/v1", || {
            cluster.try_kubectl(&["get", "--raw", "/apis/ops.example.com/v1"], None).is_ok()
        })
        .await;
        cluster
    }

    /// kubectl as the administrator: its stdout, or a panic with its stderr.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        self.try_kubectl(args, stdin).unwrap_or_else(|err| panic!("kubectl {args:?}: {err}"))
    }

    /// kubectl as the administrator: its stdout, or its stderr when it fails.
    pub fn try_kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        kubectl(&self.kubeconfig, args, stdin)
    }

    /// The kube-apiserver's URL and an HTTPS client of it presenting the administrator's
    /// certificate, for requests whose raw answers (redirects too) a test compares.
    pub fn apiserver(&self) -> (String, reqwest::Client) {
        let file = |name: &str| std::fs::read(self.dir.path().join(name)).expect("a control plane file");
        let env = String::from_utf8(file("env")).unwrap();
        let port = env.lines().find_map(|l| l.strip_prefix("KUBE_APISERVER_PORT=")).expect("the port").to_string();
        let identity = [file("admin.crt"), file("admin.key")].concat();
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&file("ca.crt")).unwrap())
            .identity(reqwest::Identity::from_pem(&identity).unwrap())
            // A redirect is an answer to compare, never one to follow.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        (format!("https://127.0.0.1:{port}"), client)
    }

    /// ops-apiserver's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/control-plane.sh");
        let _ = Command::new("bash").arg(script).arg("down").arg(self.dir.path()).status();
    }
}

/// The Namespace, ExternalName Service and APIService routing `ops.example.com/v1` to the
/// server on `port`, trusting `ca_pem`.
fn registration(port: u16, ca_pem: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: ops-system}}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: ops-apiserver, namespace: ops-system}}\n\
         spec: {{type: ExternalName, externalName: localhost, ports: [{{port: {port}, protocol: TCP}}]}}\n---\n\
         apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: v1.ops.example.com}}\n\
         spec: {{group: ops.example.com, version: v1, groupPriorityMinimum: 1000, versionPriority: 15, \
         service: {{name: ops-apiserver, namespace: ops-system, port: {port}}}, caBundle: {ca}}}\n"
    )
}

/// Waits until `check` holds, polling it, for at most [`DEADLINE`].
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
