//! Starts the real `farm-apiserver` binary in standalone mode on a free loopback port and gives
//! tests an HTTPS client that trusts its CA and carries its token, read from the kubeconfig the
//! server writes, exactly as kubectl would.

#![allow(dead_code, unused_macros)]

pub mod apply_migration;
pub mod clients;
pub mod control_plane;
pub mod etcd;
pub mod loopback_tls;
pub mod node;
pub mod raw;
pub mod reference_conversion;

pub use etcd::Backend;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The farm-apiserver binary the tests start: this package's, or the one `FARM_APISERVER_BINARY`
/// names (`scripts/conformance-mutants.sh` runs the unchanged suite against a deliberately broken
/// build of the server that way).
pub fn farm_apiserver_binary() -> PathBuf {
    std::env::var_os("FARM_APISERVER_BINARY").map_or_else(|| env!("CARGO_BIN_EXE_farm-apiserver").into(), PathBuf::from)
}

/// A running standalone server, stopped when dropped.
pub struct Server {
    child: Child,
    /// `https://127.0.0.1:PORT`
    pub base: String,
    /// The bearer token from the kubeconfig.
    pub token: String,
    /// The CA certificate (PEM) from the kubeconfig.
    pub ca_pem: Vec<u8>,
    /// Path of the written kubeconfig.
    pub kubeconfig: PathBuf,
    /// A client trusting the CA and sending the token.
    pub client: reqwest::Client,
    /// Where it keeps Llamas.
    pub backend: Backend,
    /// An etcd of its own (stopped after the server).
    own_etcd: Option<etcd::Etcd>,
    _dir: tempfile::TempDir,
}

/// Runs a test once per storage backend: `#[apply(backends)]` on an `async fn` taking
/// `#[case] backend: Backend` gives `name::case_1_memory` and `name::case_2_etcd`.
#[rstest_reuse::template]
#[rstest::rstest]
#[case::memory(Backend::Memory)]
#[case::etcd(Backend::Etcd)]
#[tokio::test]
pub async fn backends(#[case] backend: Backend) {}

impl Server {
    /// Starts a server and waits until `/readyz` answers 200.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts a server storing Llamas in `backend`.
    pub async fn start_on(backend: Backend) -> Self {
        Self::start_on_with(backend, &[]).await
    }

    /// Starts a server storing Llamas in `backend`, with extra `serve` flags. With etcd, it
    /// uses the test binary's shared etcd under a prefix of its own.
    pub async fn start_on_with(backend: Backend, extra: &[&str]) -> Self {
        match backend {
            Backend::Memory => Self::start_with(extra).await,
            Backend::Etcd => Self::start_on_etcd(etcd::Etcd::shared(), &etcd::unique_prefix(), extra).await,
        }
    }

    /// Like [`Server::start_on_with`], but with etcd, on an etcd of its own (for tests that
    /// compact the history or read the revision, both global to an etcd).
    pub async fn start_isolated(backend: Backend, extra: &[&str]) -> Self {
        match backend {
            Backend::Memory => Self::start_with(extra).await,
            Backend::Etcd => {
                let etcd = etcd::Etcd::start();
                let mut server = Self::start_on_etcd(&etcd, &etcd::unique_prefix(), extra).await;
                server.own_etcd = Some(etcd);
                server
            }
        }
    }

    /// Starts a server storing Llamas in `etcd` under `prefix` (replicas share one).
    pub async fn start_on_etcd(etcd: &etcd::Etcd, prefix: &str, extra: &[&str]) -> Self {
        Self::start_on_endpoints(&etcd.endpoint, prefix, extra).await
    }

    /// Starts a server storing Llamas under `prefix` in the etcd at `endpoints` (comma-separated).
    pub async fn start_on_endpoints(endpoints: &str, prefix: &str, extra: &[&str]) -> Self {
        let flags = etcd::storage_flags_at(endpoints, prefix, extra);
        let mut server = Self::start_with(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await;
        server.backend = Backend::Etcd;
        server
    }

    /// Makes every revision before now unreadable, as a short history does: with etcd, compacts
    /// the server's own etcd (see [`Server::start_isolated`]); in memory, a test passes a small
    /// `--watch-history-size` and writes past it instead.
    pub async fn expire_history(&self) {
        if self.backend == Backend::Etcd {
            self.own_etcd.as_ref().expect("compaction needs Server::start_isolated").compact_all().await;
        }
    }

    /// Starts a server with extra `serve` flags.
    pub async fn start_with(extra: &[&str]) -> Self {
        let server = Self::start_unready(extra).await;
        server.wait_ready().await;
        server
    }

    /// Starts a server with extra `serve` flags and returns once it serves, ready or not.
    pub async fn start_unready(extra: &[&str]) -> Self {
        let filter = std::env::var("FARM_TEST_LOG").unwrap_or_else(|_| "warn".into());
        Self::launch(extra, &filter, Stdio::inherit()).await
    }

    /// Starts a server whose log, filtered by `filter` (a `RUST_LOG` value), goes to `log`;
    /// returns once it is ready.
    pub async fn start_logging(extra: &[&str], filter: &str, log: &std::path::Path) -> Self {
        let server = Self::start_unready_logging(extra, filter, log).await;
        server.wait_ready().await;
        server
    }

    /// Like [`Server::start_logging`], but returns once it serves, ready or not.
    pub async fn start_unready_logging(extra: &[&str], filter: &str, log: &std::path::Path) -> Self {
        let file = std::fs::File::create(log).expect("create the log file");
        Self::launch(extra, filter, Stdio::from(file)).await
    }

    /// Starts a server whose log (`RUST_LOG=info`) goes to a pipe the test reads, and may
    /// close; returns once it serves, with the pipe's read end.
    pub async fn start_with_log_pipe(extra: &[&str]) -> (Self, std::process::ChildStderr) {
        let mut server = Self::launch(extra, "info", Stdio::piped()).await;
        let log = server.child.stderr.take().expect("the server's stderr");
        (server, log)
    }

    /// Waits for `/readyz` to answer 200 (a server on etcd lists every object first, which a
    /// loaded machine may take well over 20 s to do for the large ones of tests/ha.rs).
    async fn wait_ready(&self) {
        let deadline = Instant::now() + EVENT_DEADLINE;
        loop {
            let last = match self.client.get(self.url("/readyz?verbose")).send().await {
                Ok(r) if r.status() == 200 => return,
                Ok(r) => r.text().await.unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            assert!(
                Instant::now() < deadline,
                "the server never became ready in {EVENT_DEADLINE:?}; its /readyz:\n{last}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The server's `/metrics`: each series (`name{labels}` as printed) with its value.
    pub async fn scrape(&self) -> std::collections::BTreeMap<String, f64> {
        let r = self.client.get(self.url("/metrics")).send().await.expect("scrape");
        assert_eq!(r.status(), 200);
        let text = r.text().await.expect("metrics text");
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| l.rsplit_once(' '))
            .map(|(series, value)| (series.to_string(), value.parse().expect("a numeric sample")))
            .collect()
    }

    async fn launch(extra: &[&str], filter: &str, stderr: Stdio) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        let child = Command::new(farm_apiserver_binary())
            .args(["serve", "--standalone", "--bind-address", "127.0.0.1", "--secure-port", "0", "--write-kubeconfig"])
            .arg(&kubeconfig)
            .args(extra)
            .env("RUST_LOG", filter)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start farm-apiserver");
        let deadline = Instant::now() + EVENT_DEADLINE;
        while !kubeconfig.exists() {
            assert!(Instant::now() < deadline, "the server wrote no kubeconfig in {EVENT_DEADLINE:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&kubeconfig).expect("read kubeconfig")).expect("kubeconfig is JSON");
        let cluster = &config["clusters"][0]["cluster"];
        let base = cluster["server"].as_str().expect("server URL").to_string();
        use base64::Engine;
        let ca_pem = base64::engine::general_purpose::STANDARD
            .decode(cluster["certificate-authority-data"].as_str().expect("CA data"))
            .expect("CA is base64");
        let token = config["users"][0]["user"]["token"].as_str().expect("token").to_string();
        let client = Self::client_with(&ca_pem, Some(&token));
        let server = Self {
            child,
            base,
            token,
            ca_pem,
            kubeconfig,
            client,
            backend: Backend::Memory,
            own_etcd: None,
            _dir: dir,
        };
        while server.client.get(server.url("/livez")).send().await.is_err() {
            assert!(Instant::now() < deadline, "the server never answered");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server
    }

    /// A client trusting `ca_pem`, sending `token` when given.
    pub fn client_with(ca_pem: &[u8], token: Option<&str>) -> reqwest::Client {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = token {
            headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().expect("header"));
        }
        reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(ca_pem).expect("CA PEM"))
            .default_headers(headers)
            .build()
            .expect("client")
    }

    /// An absolute URL for `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM, as the kubelet does when a Pod is deleted.
    pub fn terminate(&self) {
        let status = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status().expect("run kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Kills the process at once (SIGKILL): no shutdown, no flushing.
    pub fn kill(&mut self) {
        self.child.kill().expect("kill -9");
        let _ = self.child.wait();
    }

    /// Waits up to `within` for the process to exit; its exit status, or `None` if still running.
    pub async fn exit_status(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A client trusting the CA without the token.
    pub fn anonymous(&self) -> reqwest::Client {
        Self::client_with(&self.ca_pem, None)
    }

    /// Runs kubectl against this server; returns (success, stdout, stderr).
    /// A kube-rs client configured from the server's kubeconfig, as an operator would build one.
    pub async fn kube_client(&self) -> kube::Client {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("the server's kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("a config");
        kube::Client::try_from(config).expect("a client")
    }

    pub fn kubectl(&self, args: &[&str]) -> (bool, String, String) {
        self.kubectl_with_stdin(args, None)
    }

    /// Runs kubectl with `stdin` as its standard input.
    pub fn kubectl_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        clients::Cluster::kubectl_env(self, args, stdin, &[])
    }
}

impl clients::Cluster for Server {
    fn kubectl_env(&self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> (bool, String, String) {
        let mut command = Command::new(kubectl_path());
        command.args(args).env("KUBECONFIG", &self.kubeconfig).env("HOME", self._dir.path()).envs(env.iter().copied());
        clients::run_with_stdin(command, stdin)
    }

    fn kubeconfig_path(&self) -> PathBuf {
        self.kubeconfig.clone()
    }
}

/// Writes a kubeconfig naming a cluster nobody listens at (port 1 of loopback) into `dir`.
pub fn unreachable_cluster_kubeconfig(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("unreachable.kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n",
    )
    .expect("write kubeconfig");
    path
}

/// A running command whose standard output arrives line by line; killed when dropped.
pub struct LineStream {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl LineStream {
    /// Starts `command` with its stdout piped.
    pub fn spawn(mut command: Command) -> Self {
        use std::io::BufRead;
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// The next line; panics after `wait` without one.
    pub fn next_line(&self, wait: Duration) -> String {
        self.lines.recv_timeout(wait).expect("a line within the wait")
    }
}

impl Drop for LineStream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long a test waits for an event before it fails: a bound on failure only, far above what
/// any event takes on a loaded machine, never a measure of how fast something is.
pub const EVENT_DEADLINE: Duration = Duration::from_secs(60);

/// Polls `check` until it holds; panics, naming `what`, after [`EVENT_DEADLINE`].
pub async fn wait_until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + EVENT_DEADLINE;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out after {EVENT_DEADLINE:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The complete lines of the file at `path` (a line still being written is left out); none
/// when it does not exist yet.
pub fn complete_lines(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete.lines().map(str::to_string).collect()
}

/// How many complete lines of the log at `path` contain `needle`.
pub fn log_count(path: &std::path::Path, needle: &str) -> usize {
    complete_lines(path).iter().filter(|l| l.contains(needle)).count()
}

/// Waits until the log at `path` has more than `already` lines containing `needle`: the event
/// the line reports has happened.
pub async fn wait_for_log(path: &std::path::Path, needle: &str, already: usize) {
    wait_until(&format!("a log line with {needle:?}"), async || log_count(path, needle) > already).await;
}

/// kubectl from `KUBECTL`, or the one on the PATH.
pub fn kubectl_path() -> String {
    std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into())
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Llama body.
pub fn llama(name: &str, weight: f64, height: f64) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "farm.example.com/v1alpha",
        "kind": "Llama",
        "metadata": {"name": name},
        "spec": {"weight": weight, "height": height}
    })
}

/// GETs `path` with the server's client: the status code and the JSON body.
pub async fn get_json(s: &Server, path: &str) -> (u16, serde_json::Value) {
    let r = s.client.get(s.url(path)).send().await.expect("request");
    (r.status().as_u16(), r.json().await.expect("a JSON body"))
}

/// An object's resourceVersion as a number.
pub fn rv(object: &serde_json::Value) -> u64 {
    object["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse().ok()).expect("resourceVersion")
}

/// Path of the llamas collection in `ns`.
pub fn llamas(ns: &str) -> String {
    format!("/apis/farm.example.com/v1alpha/namespaces/{ns}/llamas")
}

/// Path of one llama.
pub fn llama_path(ns: &str, name: &str) -> String {
    format!("{}/{name}", llamas(ns))
}

/// Asserts that `body` is a failure `Status` with `code` and `reason`, and returns it.
pub fn assert_status(body: &serde_json::Value, code: u16, reason: &str) {
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["apiVersion"], "v1", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

/// A watch response read frame by frame.
pub struct WatchStream {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl WatchStream {
    /// Opens a watch at `path` (query included) with the server's client.
    pub async fn open(server: &Server, path: &str) -> Self {
        Self::open_accepting(server, path, "application/json").await
    }

    /// Opens a watch asking for `accept`.
    pub async fn open_accepting(server: &Server, path: &str, accept: &str) -> Self {
        let response =
            server.client.get(server.url(path)).header("accept", accept).send().await.expect("watch request");
        assert_eq!(response.status(), 200, "watch {path}");
        Self { response, buffer: Vec::new() }
    }

    /// The next event, `None` at the end of the stream; panics after `wait` without one.
    pub async fn next_within(&mut self, wait: Duration) -> Option<serde_json::Value> {
        loop {
            if let Some(pos) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=pos).collect();
                return Some(serde_json::from_slice(&line).expect("a JSON watch frame"));
            }
            match tokio::time::timeout(wait, self.response.chunk()).await {
                Err(_) => panic!("no watch event within {wait:?}"),
                Ok(Ok(Some(chunk))) => self.buffer.extend_from_slice(&chunk),
                Ok(Ok(None)) | Ok(Err(_)) => return None,
            }
        }
    }

    /// The next event, within five seconds.
    pub async fn next(&mut self) -> Option<serde_json::Value> {
        self.next_within(Duration::from_secs(5)).await
    }
}

/// `(type, name)` of a watch event.
pub fn event_summary(event: &serde_json::Value) -> (String, String) {
    (
        event["type"].as_str().unwrap_or_default().to_string(),
        event["object"]["metadata"]["name"].as_str().unwrap_or_default().to_string(),
    )
}

/// A copy of the repository's `manifests/` (the base and its `ha` overlay, without what
/// `farm-apiserver certs` writes there) in `dir`, as a user has it in a checkout; returns its
/// path. Tests write their generated files into the copy, never into the repository.
pub fn copy_of_the_manifests(dir: &std::path::Path) -> PathBuf {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests"));
    let copy = dir.join("manifests");
    for sub in ["", "base", "ha", "ha/restore"] {
        std::fs::create_dir_all(copy.join(sub)).unwrap();
        for entry in std::fs::read_dir(root.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if name.ends_with(".yaml") && !["app.yaml", "etcd-certs.yaml", "install.yaml"].contains(&name.as_str()) {
                std::fs::copy(&path, copy.join(sub).join(name)).unwrap();
            }
        }
    }
    copy
}
