//! A real control plane for the end-to-end tests: etcd and kube-apiserver on loopback (and
//! kube-controller-manager where a test asks for it), started by `scripts/control-plane.sh`,
//! which builds them once when `KUBE_APISERVER` / `KUBE_CONTROLLER_MANAGER` are unset; and
//! farm-apiserver in aggregated mode, registered with it through an APIService.

use super::clients::{self, Cluster};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd + kube-apiserver, stopped when dropped.
pub struct ControlPlane {
    pub dir: tempfile::TempDir,
    /// The reference CRD's conversion webhook, once it is installed.
    conversion: std::sync::OnceLock<super::reference_conversion::ConversionWebhook>,
}

impl ControlPlane {
    pub fn up() -> Self {
        Self::start(&[])
    }

    /// With kube-controller-manager: namespace, garbage-collector and service-account controllers.
    pub fn up_with_controller_manager() -> Self {
        Self::start(&["--controller-manager"])
    }

    pub fn start(options: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh"))
            .arg("up")
            .arg(dir.path())
            .args(options)
            .status()
            .expect("run scripts/control-plane.sh");
        assert!(status.success(), "the control plane did not start");
        Self { dir, conversion: std::sync::OnceLock::new() }
    }

    pub fn kubeconfig(&self, user: &str) -> PathBuf {
        self.dir.path().join(format!("{user}.kubeconfig"))
    }

    /// Registers `farm` and waits until the aggregator serves its group.
    pub async fn register(&self, farm: &Farm) {
        self.must(&["apply", "-f", "-"], Some(&farm.registration()));
        for version in ["v1", "v1alpha"] {
            let apiservice = format!("apiservice/{version}.farm.example.com");
            self.must(&["wait", "--for=condition=Available", &apiservice, "--timeout=60s"], None);
            eventually(&format!("the aggregator to serve farm.example.com/{version}"), async || {
                self.run(&["get", "--raw", &format!("/apis/farm.example.com/{version}")], None).0
            })
            .await;
        }
    }

    /// A client of `farm`'s own port (not through the aggregator) presenting `user`'s client
    /// certificate (signed by the cluster's client CA), or none when `user` is `None`. It does not
    /// retry, so tests see every status as sent.
    pub fn direct(&self, farm: &Farm, user: Option<&str>) -> reqwest::Client {
        let mut builder = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(farm.ca_pem.as_bytes()).unwrap());
        if let Some(user) = user {
            let mut pem = std::fs::read(self.dir.path().join(format!("{user}.crt"))).unwrap();
            pem.extend(std::fs::read(self.dir.path().join(format!("{user}.key"))).unwrap());
            builder = builder.identity(reqwest::Identity::from_pem(&pem).unwrap());
        }
        builder.build().unwrap()
    }

    /// The kube-apiserver's URL and an HTTPS client of it presenting the admin's certificate,
    /// for requests whose raw answers (Status bodies, headers, redirects) a test compares.
    pub fn apiserver(&self) -> (String, reqwest::Client) {
        let env = std::fs::read_to_string(self.dir.path().join("env")).unwrap();
        let port = env.lines().find_map(|l| l.strip_prefix("KUBE_APISERVER_PORT=")).unwrap().to_string();
        let mut pem = std::fs::read(self.dir.path().join("admin.crt")).unwrap();
        pem.extend(std::fs::read(self.dir.path().join("admin.key")).unwrap());
        let ca = std::fs::read(self.dir.path().join("ca.crt")).unwrap();
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
            .identity(reqwest::Identity::from_pem(&pem).unwrap())
            // A redirect is an answer to compare, never one to follow.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        (format!("https://127.0.0.1:{port}"), client)
    }

    /// farm-apiserver running as `e2e-nobody` with only the RBAC of `grants`, registered, once
    /// its log has explained which rule it lacks to read `plural`.
    pub async fn farm_lacking_rbac_for(&self, grants: &str, plural: &str) -> Farm {
        self.must(&["apply", "-f", "-"], Some(grants));
        let farm = Farm::start(&self.kubeconfig("nobody"));
        self.register(&farm).await;
        let rule = format!(r#"resources: ["{plural}"], verbs: ["get", "list", "watch"]"#);
        eventually("the log to explain the missing RBAC rule", async || {
            let log = farm.log();
            log.contains(&format!("RBAC forbids the server to list or watch {plural}")) && log.contains(&rule)
        })
        .await;
        farm
    }

    pub async fn client(&self) -> kube::Client {
        let kubeconfig = kube::config::Kubeconfig::read_from(self.kubeconfig("admin")).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
        kube::Client::try_from(config).unwrap()
    }
}

impl ControlPlane {
    /// Installs the reference CRD of `group` (`tests/conformance/reference-crd.yaml`, converted
    /// by the tests' own webhook) and waits until it is established.
    pub fn install_reference_crd(&self, group: &str) {
        let webhook = self.conversion.get_or_init(super::reference_conversion::start);
        self.must(&["apply", "-f", "-"], Some(&reference_crd(group, &webhook.url, &webhook.ca_bundle).to_string()));
        let crd = format!("crd/llamas.{group}");
        self.must(&["wait", "--for=condition=Established", &crd, "--timeout=60s"], None);
    }
}

/// The reference CustomResourceDefinition of `group`, written by hand
/// (`tests/conformance/reference-crd.yaml`), converted by the webhook at `url` whose CA is
/// `ca_bundle` (base64).
pub fn reference_crd(group: &str, url: &str, ca_bundle: &str) -> Value {
    let text = include_str!("../conformance/reference-crd.yaml")
        .replace("GROUP", group)
        .replace("CONVERSION_URL", url)
        .replace("CA_BUNDLE", ca_bundle);
    serde_saphyr::from_str(&text).expect("the reference CRD is YAML")
}

impl Cluster for ControlPlane {
    /// kubectl as the admin; stderr without the version-skew warning.
    fn kubectl_env(&self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> (bool, String, String) {
        let mut command = Command::new(super::kubectl_path());
        command.arg("--kubeconfig").arg(self.kubeconfig("admin")).args(args);
        command.env("HOME", self.dir.path()).envs(env.iter().copied());
        let (ok, stdout, stderr) = clients::run_with_stdin(command, stdin);
        let stderr = stderr.lines().filter(|l| !l.contains("version difference")).collect::<Vec<_>>().join("\n");
        (ok, stdout, stderr)
    }

    fn kubeconfig_path(&self) -> PathBuf {
        self.kubeconfig("admin")
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh"))
            .arg("down")
            .arg(self.dir.path())
            .status();
    }
}

/// farm-apiserver in aggregated mode, its log captured.
pub struct Farm {
    pub child: std::process::Child,
    pub port: u16,
    pub ca_pem: String,
    pub log: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    _dir: tempfile::TempDir,
}

impl Farm {
    pub fn start(kubeconfig: &Path) -> Self {
        Self::start_with(kubeconfig, &[])
    }

    /// With `extra` arguments to `serve`.
    pub fn start_with(kubeconfig: &Path, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let certs = farm_apiserver::tls::generate("farm-e2e-ca", &["farm-apiserver.farm-system.svc".into()]).unwrap();
        let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::write(&cert, &certs.cert_pem).unwrap();
        std::fs::write(&key, &certs.key_pem).unwrap();
        let files =
            [OsStr::new("--tls-cert-file"), cert.as_os_str(), OsStr::new("--tls-private-key-file"), key.as_os_str()];
        let extra: Vec<&OsStr> = extra.iter().map(OsStr::new).chain(files).collect();
        let (child, port, log) = spawn(kubeconfig, &extra, dir.path());
        Self { child, port, ca_pem: certs.ca_pem, log, cert, key, _dir: dir }
    }

    /// Keeping its serving certificate in the Secret `farm-system/<secret>` (no files; `ca_pem`
    /// is empty: clients read the bundle from the Secret or the APIServices), with `extra`
    /// arguments to `serve`.
    pub fn start_managed(kubeconfig: &Path, secret: &str, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let secret = format!("farm-system/{secret}");
        let args: Vec<&OsStr> = ["--certificate-secret", secret.as_str()]
            .into_iter()
            .chain(extra.iter().copied())
            .map(OsStr::new)
            .collect();
        let (child, port, log) = spawn(kubeconfig, &args, dir.path());
        let (cert, key) = (PathBuf::new(), PathBuf::new());
        Self { child, port, ca_pem: String::new(), log, cert, key, _dir: dir }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the server gracefully (SIGTERM), as the kubelet does, and waits for it to exit:
    /// everything it had to write (its audit log) is written. Panics if it does not exit.
    pub async fn stop(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
        let deadline = Instant::now() + super::EVENT_DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("the server's exit status") {
                return status;
            }
            assert!(Instant::now() < deadline, "farm-apiserver did not exit after SIGTERM");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The Namespace, ExternalName Service and APIServices (one per version) routing the group to
    /// this server; without a caBundle for a server that writes its own (`start_managed`).
    pub fn registration(&self) -> String {
        use base64::Engine;
        let ca = match self.ca_pem.is_empty() {
            true => String::new(),
            false => format!(", caBundle: {}", base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)),
        };
        let apiservice = |version: &str, priority: u8| {
            format!(
                "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: {version}.farm.example.com}}\n\
                 spec: {{group: farm.example.com, version: {version}, groupPriorityMinimum: 1000, \
                 versionPriority: {priority}, service: {{name: farm-apiserver, namespace: farm-system, port: {port}}}\
                 {ca}}}\n",
                port = self.port
            )
        };
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: farm-system}}\n---\n\
             apiVersion: v1\nkind: Service\nmetadata: {{name: farm-apiserver, namespace: farm-system}}\n\
             spec: {{type: ExternalName, externalName: localhost, ports: [{{port: {port}, protocol: TCP}}]}}\n---\n\
             {}---\n{}",
            apiservice("v1", 20),
            apiservice("v1alpha", 15),
            port = self.port
        )
    }
}

/// Starts farm-apiserver in aggregated mode with `args`, its log in `dir`, on a port it chose
/// itself (`--secure-port 0`; a port chosen here could be taken by another test before the server
/// binds it), read from its "serving" log line.
fn spawn(kubeconfig: &Path, args: &[&OsStr], dir: &Path) -> (std::process::Child, u16, PathBuf) {
    let log = dir.join("server.log");
    let mut child = Command::new(super::farm_apiserver_binary())
        .args(["serve", "--bind-address", "127.0.0.1", "--secure-port", "0"])
        .args(["--pod-cache-max-backoff-seconds", "2", "--tls-reload-interval-seconds", "1"])
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("RUST_LOG", std::env::var("FARM_TEST_LOG").unwrap_or_else(|_| "info".into()))
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + super::EVENT_DEADLINE;
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(port) = serving_port(&text) {
            return (child, port, log);
        }
        let exited = child.try_wait().unwrap();
        assert!(exited.is_none() && Instant::now() < deadline, "farm-apiserver is not serving ({exited:?}):\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The port of the server's "serving url=https://127.0.0.1:PORT" log line (other lines say
/// "serving" too: "managing the serving certificate").
fn serving_port(log: &str) -> Option<u16> {
    let rest = log.lines().find_map(|l| l.split_once(" serving url=https://127.0.0.1:"))?.1;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

impl Drop for Farm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// RBAC letting the user `e2e-nobody` (`ControlPlane::kubeconfig("nobody")`) delegate
/// authentication and authorization, as an installed server may (manifests/base/rbac.yaml).
pub const NOBODY_DELEGATES: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: nobody-delegates}\n\
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}\n\
    subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-nobody}]\n---\n\
    apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: nobody-reads-auth, namespace: kube-system}\n\
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}\n\
    subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-nobody}]\n";

/// RBAC letting `e2e-nobody` read admission webhook configurations and admission policies, as
/// an installed server may.
pub const NOBODY_ADMITS: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: nobody-admits}\n\
    rules: [{apiGroups: [admissionregistration.k8s.io], resources: [mutatingwebhookconfigurations, validatingwebhookconfigurations, validatingadmissionpolicies, validatingadmissionpolicybindings, mutatingadmissionpolicies, mutatingadmissionpolicybindings], verbs: [get, list, watch]}]\n---\n\
    apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: nobody-admits}\n\
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nobody-admits}\n\
    subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-nobody}]\n";
