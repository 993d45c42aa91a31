//! `make bench`: load against the real release binary over HTTPS on loopback, with keep-alive
//! connections, from this process (which shares the machine's cores with the server, as the
//! targets require). Prints one table:
//!
//! - time from process start to `/readyz` OK;
//! - GET of one llama, LIST of 1,000 and of 10,000 llamas as JSON and as Table, create throughput
//!   (req/s, p50, p99);
//! - watch fan-out: 1,000 watchers, time from a write's acknowledgement to its delivery to the
//!   last watcher (p50, p99 over the writes);
//! - FarmPod LIST with 10,000 Pods in the cache;
//! - the server's RSS with 100,000 llamas;
//! - what managed fields cost: GET, LIST, create and update as shipped and with
//!   `--managed-fields false`, and apply create and update ([`managed_fields`]);
//! - what the audit log costs: GET and create with every request audited at `Metadata`, and
//!   without ([`audit`]);
//! - how close reads come to a plain HTTPS server returning the same bytes from memory
//!   ([`baseline`]), and how close large LISTs come to nginx serving the same bytes ([`nginx`]);
//! - with the control plane, etcd storage against memory storage side by side ([`storage`]);
//! - last, the leak check: the soak's kind of load until a leak of 200 bytes per write would
//!   show in the server's RSS; it fails the run when it sees one ([`leak`]).
//!
//! When the real control plane of the e2e tests can run (`scripts/control-plane.sh`; set
//! `BENCH_CONTROL_PLANE=0` to skip it), the same request loads also run, in the same process and
//! run, against a Llama CustomResourceDefinition in that kube-apiserver (backed by etcd), and the
//! 10,000 Pods are listed from the kube-apiserver too; the table prints both and the ratio
//! ours / kube-apiserver. Like kubectl, the lists carry no resourceVersion, so the kube-apiserver
//! reads them from etcd.
//!
//! `BENCH_SECONDS` sets each load phase's length (default 5); `BENCH_ONLY=rss` measures only the
//! memory, `BENCH_ONLY=managed-fields` only the managed fields' cost, `BENCH_ONLY=audit` only the
//! audit log's, `BENCH_ONLY=etcd` only the etcd storage's request phases and fan-out,
//! `BENCH_ONLY=storage` only etcd storage against memory storage side by side ([`storage`]),
//! `BENCH_ONLY=versions` only reads at the stored version against the converted one ([`versions`]),
//! `BENCH_ONLY=compression` only LISTs plain against gzipped ([`compression`]),
//! `BENCH_ONLY=scale` only how costs grow from 1,000 to 1,000,000 llamas ([`scale`]),
//! `BENCH_ONLY=nginx` only large LISTs against nginx serving the same bytes ([`nginx`]),
//! `BENCH_ONLY=watchers` only 100, 1,000 and 10,000 watchers over HTTP/2 and HTTP/1.1 ([`watchers`]),
//! `BENCH_ONLY=watchlist` only 100 informers starting with streaming lists ([`watchers`]),
//! `BENCH_ONLY=stalled` only 1,000 watchers that never read under 100,000 updates ([`stalled`]),
//! `BENCH_ONLY=aggregator` only reads through the kube-apiserver against a plain server behind
//! its own APIService ([`aggregator`]), `BENCH_ONLY=chart` only the chart of the figures the
//! scale and watcher modes wrote (`target/scale.svg`, [`chart`]),
//! `BENCH_ONLY=policies` only creates with 0, 1 and 10 bound ValidatingAdmissionPolicies and how
//! soon a new binding is enforced ([`policies`]),
//! `BENCH_ONLY=flame-graphs` only the flame graphs of `make profile-peers`'s recordings again,
//! `BENCH_ONLY=peers` only the side-by-side comparison with sample-apiserver and a CRD on
//! today's kube-apiserver ([`peers`]),
//! `BENCH_ONLY=lists` only how a write's cost grows with 1,000 to 100,000 list entries and whether
//! the largest starves other requests ([`lists`]),
//! `BENCH_ONLY=baseline` only the comparison with a plain HTTPS server, `BENCH_ONLY=leak` only
//! the leak check (`LEAK_WRITES` sets how many writes it measures).
//! `FARM_BENCH_BINARY` loads another build of the server (to compare two commits in turn).

#[path = "load/ab.rs"]
mod ab;
#[path = "load/aggregator.rs"]
mod aggregator;
#[path = "load/audit.rs"]
mod audit;
#[path = "load/baseline.rs"]
mod baseline;
#[path = "load/chart.rs"]
mod chart;
#[path = "load/compression.rs"]
mod compression;
#[path = "load/leak.rs"]
mod leak;
#[path = "load/lists.rs"]
mod lists;
#[path = "load/managed_fields.rs"]
mod managed_fields;
#[path = "load/nginx.rs"]
mod nginx;
#[path = "load/peers.rs"]
mod peers;
#[path = "load/peers_chart.rs"]
mod peers_chart;
#[path = "load/policies.rs"]
mod policies;
#[path = "load/scale.rs"]
mod scale;
#[path = "load/stalled.rs"]
mod stalled;
#[path = "load/storage.rs"]
mod storage;
#[path = "load/versions.rs"]
mod versions;
#[path = "load/watchers.rs"]
mod watchers;

use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const LLAMAS: &str = "/apis/farm.example.com/v1alpha/namespaces";

/// How a target authenticates clients.
#[derive(Clone)]
enum Credentials {
    /// farm-apiserver standalone: the bearer token from the kubeconfig it wrote.
    Token(String),
    /// The kube-apiserver: the admin client certificate and key (PEM).
    Certificate(Vec<u8>),
}

/// Something to send load to.
#[derive(Clone)]
struct Target {
    base: String,
    ca: Vec<u8>,
    credentials: Credentials,
}

impl Target {
    /// A client with its own keep-alive connection (HTTP/1.1) or one multiplexed HTTP/2 connection.
    fn client(&self, http2: bool) -> reqwest::Client {
        let mut builder = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&self.ca).expect("CA"))
            .pool_max_idle_per_host(1);
        match &self.credentials {
            Credentials::Token(token) => {
                let mut headers = reqwest::header::HeaderMap::new();
                headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().expect("header"));
                builder = builder.default_headers(headers);
            }
            Credentials::Certificate(pem) => builder = builder.identity(reqwest::Identity::from_pem(pem).expect("key")),
        }
        let builder = if http2 { builder } else { builder.http1_only() };
        builder.build().expect("client")
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// farm-apiserver, stopped when dropped.
struct Farm {
    child: Child,
    target: Target,
    _dir: tempfile::TempDir,
}

impl Drop for Farm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> PathBuf {
    if let Some(binary) = std::env::var_os("FARM_BENCH_BINARY") {
        return PathBuf::from(binary);
    }
    // The server as `cargo bench` built it beside this benchmark (the bench profile is the
    // release profile). A `cargo build --release` from here used to rebuild every dependency in
    // turn with the bench's own build, minutes each time.
    PathBuf::from(env!("CARGO_BIN_EXE_farm-apiserver"))
}

/// Starts farm-apiserver standalone (with `extra` flags); returns it and the time from spawn to
/// `/readyz` OK.
async fn start(binary: &Path, extra: &[&str]) -> (Farm, Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    let started = Instant::now();
    let child = Command::new(binary)
        .args(["serve", "--standalone", "--bind-address", "127.0.0.1", "--secure-port", "0", "--write-kubeconfig"])
        .arg(&kubeconfig)
        .args(["--watch-buffer-size", "10000"])
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("start farm-apiserver");
    while !kubeconfig.exists() {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&kubeconfig).expect("kubeconfig")).expect("kubeconfig is JSON");
    let cluster = &config["clusters"][0]["cluster"];
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD
        .decode(cluster["certificate-authority-data"].as_str().expect("CA"))
        .expect("CA is base64");
    let target = Target {
        base: cluster["server"].as_str().expect("server").into(),
        ca,
        credentials: Credentials::Token(config["users"][0]["user"]["token"].as_str().expect("token").into()),
    };
    let farm = Farm { child, target, _dir: dir };
    let probe = farm.target.client(false);
    loop {
        if let Ok(r) = probe.get(farm.target.url("/readyz")).send().await
            && r.status() == 200
        {
            break;
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    (farm, started.elapsed())
}

/// etcd + kube-apiserver from `scripts/control-plane.sh`, stopped when dropped.
struct ControlPlane {
    dir: tempfile::TempDir,
    target: Target,
    /// The client URL of the control plane's etcd, which farm-apiserver's etcd column shares.
    etcd: String,
}

impl ControlPlane {
    /// Starts one, or `None` (with the reason printed) when it cannot run here.
    fn up() -> Option<Self> {
        if std::env::var("BENCH_CONTROL_PLANE").is_ok_and(|v| v == "0") {
            println!("kube-apiserver comparison skipped: BENCH_CONTROL_PLANE=0");
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let status = Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh"))
            .arg("up")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !status.is_ok_and(|s| s.success()) {
            println!("kube-apiserver comparison skipped: scripts/control-plane.sh up failed");
            return None;
        }
        let env = std::fs::read_to_string(dir.path().join("env")).expect("control plane env");
        let port = env.lines().find_map(|l| l.strip_prefix("KUBE_APISERVER_PORT=")).expect("port").to_string();
        let etcd_port = env.lines().find_map(|l| l.strip_prefix("ETCD_PORT=")).expect("etcd port").to_string();
        let mut identity = std::fs::read(dir.path().join("admin.crt")).expect("admin.crt");
        identity.extend(std::fs::read(dir.path().join("admin.key")).expect("admin.key"));
        let target = Target {
            base: format!("https://127.0.0.1:{port}"),
            ca: std::fs::read(dir.path().join("ca.crt")).expect("ca.crt"),
            credentials: Credentials::Certificate(identity),
        };
        Some(Self { dir, target, etcd: format!("http://127.0.0.1:{etcd_port}") })
    }

    /// The pid written in `file` of the control plane's directory, when it can be read.
    fn pid(&self, file: &str) -> Option<u32> {
        std::fs::read_to_string(self.dir.path().join(file)).ok()?.trim().parse().ok()
    }

    /// The pid of the control plane's etcd, when its pid file can be read.
    fn etcd_pid(&self) -> Option<u32> {
        self.pid("etcd.pid")
    }

    /// Runs `scripts/<name> <command> <the control plane's directory>`, which must succeed.
    fn run_script(&self, name: &str, command: &str) {
        let path = format!("{}/scripts/{name}", env!("CARGO_MANIFEST_DIR"));
        let status = Command::new("bash").arg(&path).arg(command).arg(self.dir.path()).status();
        assert!(status.is_ok_and(|s| s.success()), "scripts/{name} {command}");
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    /// Namespaces, and the Llama CRD (same schema and printer columns as farm-apiserver's
    /// Llamas), established.
    async fn prepare(&self, namespaces: &[&str]) {
        let client = self.target.client(false);
        for ns in namespaces {
            let r = client
                .post(self.target.url("/api/v1/namespaces"))
                .json(&serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
                .send()
                .await
                .expect("create namespace");
            assert!(r.status().is_success(), "namespace {ns}: {}", r.status());
        }
        let r = client
            .post(self.target.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"))
            .json(&llama_crd())
            .send()
            .await
            .expect("create CRD");
        assert!(r.status().is_success(), "CRD: {} {}", r.status(), r.text().await.unwrap_or_default());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = client.get(self.target.url(&format!("{LLAMAS}/{}/llamas", namespaces[0]))).send().await;
            if r.is_ok_and(|r| r.status() == 200) {
                break;
            }
            assert!(Instant::now() < deadline, "the Llama CRD was not served within 60 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh"))
            .arg("down")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn llama_crd() -> serde_json::Value {
    let number = serde_json::json!({"type": "number", "minimum": 0, "exclusiveMinimum": true});
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "llamas.farm.example.com"},
        "spec": {
            "group": "farm.example.com", "scope": "Namespaced",
            "names": {"plural": "llamas", "singular": "llama", "kind": "Llama", "listKind": "LlamaList", "shortNames": ["lm"]},
            "versions": [{
                "name": "v1alpha", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["weight", "height"], "properties": {
                        "weight": number, "height": number, "color": {"type": "string"}}}}}},
                "additionalPrinterColumns": [
                    {"name": "Weight", "type": "number", "jsonPath": ".spec.weight"},
                    {"name": "Height", "type": "number", "jsonPath": ".spec.height"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
            }]
        }
    })
}

fn llama(name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": name, "labels": {"herd": "bench"}}, "spec": {"weight": 120.5, "height": 170, "color": "white"}})
}

fn pod(name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "registry.example/app:1"}]}})
}

fn rss_mb(pid: u32) -> f64 {
    status_mb(pid, "VmRSS:")
}

/// A size `field` of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`), in MB.
fn status_mb(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

struct Stats {
    requests: u64,
    errors: u64,
    elapsed: Duration,
    latency: Histogram<u64>,
}

impl Stats {
    fn rate(&self) -> f64 {
        self.requests.saturating_sub(self.errors) as f64 / self.elapsed.as_secs_f64()
    }

    fn ms(&self, quantile: f64) -> f64 {
        self.latency.value_at_quantile(quantile) as f64 / 1000.0
    }
}

/// Runs `concurrency` loops, each on its own connection, issuing `request(i)` for `duration`.
async fn load<F>(target: &Target, concurrency: usize, duration: Duration, request: F) -> Stats
where
    F: Fn(&reqwest::Client, u64) -> reqwest::RequestBuilder + Send + Sync + 'static,
{
    let request = Arc::new(request);
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let client = target.client(false);
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut hist = Histogram::<u64>::new(3).expect("histogram");
            let (mut n, mut errors) = (0u64, 0u64);
            while Instant::now() < deadline {
                let t = Instant::now();
                match request(&client, worker as u64 * 1_000_000 + n).send().await {
                    Ok(r) if r.status().is_success() => match r.bytes().await {
                        Ok(_) => {
                            let _ = hist.record(t.elapsed().as_micros() as u64);
                        }
                        Err(_) => errors += 1,
                    },
                    _ => errors += 1,
                }
                n += 1;
            }
            (n, errors, hist)
        }));
    }
    let mut stats =
        Stats { requests: 0, errors: 0, elapsed: Duration::ZERO, latency: Histogram::new(3).expect("histogram") };
    for t in tasks {
        let (n, e, h) = t.await.expect("load task");
        stats.requests += n;
        stats.errors += e;
        stats.latency.add(h).expect("same histogram bounds");
    }
    stats.elapsed = started.elapsed();
    stats
}

/// Creates `count` objects from `body(i)` at `path`, 32 at a time, named `{prefix}{i:06}`.
async fn fill(target: &Target, path: &str, count: usize, body: fn(&str) -> serde_json::Value, prefix: &'static str) {
    fill_range(target, path, 0..count, move |i| body(&format!("{prefix}{i:06}"))).await;
}

/// Creates objects number `range`, each `object(i)`, at `path`, 32 at a time.
async fn fill_range(
    target: &Target,
    path: &str,
    range: std::ops::Range<usize>,
    object: impl Fn(usize) -> serde_json::Value + Clone + Send + 'static,
) {
    let concurrency = 32;
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (client, url, object) = (target.client(false), target.url(path), object.clone());
        let numbers = (range.start + worker..range.end).step_by(concurrency);
        tasks.push(tokio::spawn(async move {
            for i in numbers {
                let r = client.post(&url).json(&object(i)).send().await.expect("create");
                assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
            }
        }));
    }
    for t in tasks {
        t.await.expect("fill task");
    }
}

/// The three columns of one measurement: req/s, p50 ms, p99 ms (dashes when not measured).
fn cells(stats: Option<&Stats>) -> String {
    match stats {
        Some(s) => format!("{:>9.0} | {:>7.2} | {:>7.2}", s.rate(), s.ms(0.5), s.ms(0.99)),
        None => format!("{:>9} | {:>7} | {:>7}", "-", "-", "-"),
    }
}

/// `a`'s rate over `b`'s, when both were measured.
fn ratio(a: Option<&Stats>, b: Option<&Stats>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:>8.1}x", a.rate() / b.rate().max(f64::MIN_POSITIVE)),
        _ => format!("{:>9}", "-"),
    }
}

/// One row of the table: ours in memory, ours on etcd and the kube-apiserver's, as measured.
fn row(name: &str, memory: Option<&Stats>, etcd: Option<&Stats>, kube: Option<&Stats>) {
    let errors: u64 = [memory, etcd, kube].iter().flatten().map(|s| s.errors).sum();
    println!(
        "| {name:<38} | {} | {} | {} | {} | {} | {errors:>6} |",
        cells(memory),
        cells(etcd),
        cells(kube),
        ratio(memory, kube),
        ratio(etcd, kube)
    );
}

/// A fan-out row: delivery latency to the last of the watchers (no rate).
fn fan_out_row(name: &str, memory: &Histogram<u64>, etcd: Option<&Histogram<u64>>) {
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let etcd = match etcd {
        Some(h) => format!("{:>9} | {:>7.2} | {:>7.2}", "-", ms(h, 0.5), ms(h, 0.99)),
        None => cells(None),
    };
    println!(
        "| {name:<38} | {:>9} | {:>7.2} | {:>7.2} | {etcd} | {} | {:>9} | {:>9} | {:>6} |",
        "-",
        ms(memory, 0.5),
        ms(memory, 0.99),
        cells(None),
        "-",
        "-",
        0
    );
}

/// The request phases, run against one target: (row name, stats) in table order.
async fn request_phases(target: &Target, phase: Duration) -> Vec<(String, Stats)> {
    let mut rows = Vec::new();
    let t = target.clone();
    let get = load(target, 32, phase, move |c, _| c.get(t.url(&format!("{LLAMAS}/small/llamas/l000500")))).await;
    rows.push(("GET one llama (32 conns)".to_string(), get));
    for (ns, label, conns) in [("small", "1,000", 8), ("large", "10,000", 2)] {
        let t = target.clone();
        let json = load(target, conns, phase, move |c, _| c.get(t.url(&format!("{LLAMAS}/{ns}/llamas")))).await;
        rows.push((format!("LIST {label} llamas, JSON ({conns} conns)"), json));
        let t = target.clone();
        let table = load(target, conns, phase, move |c, _| {
            c.get(t.url(&format!("{LLAMAS}/{ns}/llamas"))).header("accept", TABLE)
        })
        .await;
        rows.push((format!("LIST {label} llamas, Table ({conns} conns)"), table));
    }
    let t = target.clone();
    let create = load(target, 32, phase, move |c, i| {
        c.post(t.url(&format!("{LLAMAS}/create/llamas"))).json(&llama(&format!("c{i}")))
    })
    .await;
    rows.push(("create (32 conns)".to_string(), create));
    rows
}

/// 1,000 watchers; returns per-write delivery latency to the last watcher, in microseconds.
async fn fan_out(target: &Target, watchers: usize, writes: usize) -> Histogram<u64> {
    fan_out_at(target, "fan", &["v1alpha"], watchers, writes).await
}

/// [`fan_out`] of llamas of `namespace`, watcher `w` watching at `versions[w % versions.len()]`
/// (the writes are made at v1alpha).
async fn fan_out_at(
    target: &Target,
    namespace: &str,
    versions: &[&str],
    watchers: usize,
    writes: usize,
) -> Histogram<u64> {
    let url = target.url(&format!("{LLAMAS}/{namespace}/llamas"));
    let watch_url = |w: usize| {
        target.url(&format!("/apis/farm.example.com/{}/namespaces/{namespace}/llamas", versions[w % versions.len()]))
    };
    let connections = 10;
    let clients: Vec<reqwest::Client> = (0..connections).map(|_| target.client(true)).collect();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let mut handles = Vec::new();
    let ready = Arc::new(tokio::sync::Barrier::new(watchers + 1));
    for w in 0..watchers {
        let c = clients[w % connections].clone();
        let (url, tx, ready) = (watch_url(w), tx.clone(), ready.clone());
        handles.push(tokio::spawn(async move {
            let r = c.get(format!("{url}?watch=true")).send().await.expect("watch");
            ready.wait().await;
            watch_creates(r, writes, tx).await;
        }));
    }
    ready.wait().await;
    let writer = target.client(false);
    let mut acked = Vec::new();
    for i in 0..writes {
        let r = writer.post(&url).json(&llama(&format!("f{i:06}"))).send().await.expect("create");
        assert_eq!(r.status(), 201);
        acked.push(Instant::now());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(tx);
    delivery(rx, &acked, watchers, "the server", handles).await
}

/// Reads a watch until it has seen `writes` ADDED events of objects `f<n>`, sending each `n`
/// and when it came.
async fn watch_creates(
    mut response: reqwest::Response,
    writes: usize,
    tx: tokio::sync::mpsc::UnboundedSender<(usize, Instant)>,
) {
    let (mut buffer, mut seen) = (Vec::new(), 0);
    while seen < writes {
        let Ok(Some(chunk)) = response.chunk().await else { break };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let event: serde_json::Value = serde_json::from_slice(&line).expect("watch frame");
            let name = event["object"]["metadata"]["name"].as_str().unwrap_or_default();
            if event["type"] == "ADDED"
                && let Some(n) = name.strip_prefix('f').and_then(|n| n.parse().ok())
            {
                let _ = tx.send((n, Instant::now()));
                seen += 1;
            }
        }
    }
}

/// When each write `i` (acknowledged at `acked[i]`) reached the last of `watchers` watchers,
/// from what their tasks ([`watch_creates`]) sent, in microseconds; every watcher must have seen
/// every write. The senders must be gone but the tasks' (`handles`).
async fn delivery(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(usize, Instant)>,
    acked: &[Instant],
    watchers: usize,
    server: &str,
    handles: Vec<tokio::task::JoinHandle<()>>,
) -> Histogram<u64> {
    let mut last = vec![(0usize, None::<Instant>); acked.len()];
    while let Some((i, at)) = rx.recv().await {
        last[i].0 += 1;
        last[i].1 = Some(last[i].1.map_or(at, |l: Instant| l.max(at)));
    }
    for handle in handles {
        let _ = handle.await;
    }
    let mut histogram = Histogram::<u64>::new(3).expect("histogram");
    for (i, (seen, at)) in last.iter().enumerate() {
        assert_eq!(*seen, watchers, "{server}: every watcher saw write {i}");
        let _ = histogram.record(at.map_or(0, |at| at.saturating_duration_since(acked[i]).as_micros() as u64));
    }
    histogram
}

/// 10,000 Pods created in the control plane; farm-apiserver (standalone, reading that cluster)
/// lists them as FarmPods, the kube-apiserver as Pods.
async fn farmpods(binary: &Path, cp: &ControlPlane, phase: Duration) -> (Stats, Stats) {
    const PODS: usize = 10_000;
    fill(&cp.target, "/api/v1/namespaces/pods/pods", PODS, pod, "p").await;
    let kubeconfig = cp.kubeconfig();
    let (farm, _) = start(binary, &["--kubeconfig", &kubeconfig.to_string_lossy()]).await;
    let client = farm.target.client(false);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r =
            client.get(farm.target.url("/apis/farm.example.com/v1alpha/namespaces/pods/farmpods?limit=1")).send().await;
        let remaining = match r {
            Ok(r) if r.status() == 200 => {
                let list: serde_json::Value = r.json().await.unwrap_or_default();
                list["metadata"]["remainingItemCount"].as_u64().map(|n| n + 1)
            }
            _ => None,
        };
        if remaining == Some(PODS as u64) {
            break;
        }
        assert!(Instant::now() < deadline, "the Pod cache did not fill within 120 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let t = farm.target.clone();
    let ours = load(&farm.target, 2, phase, move |c, _| {
        c.get(t.url("/apis/farm.example.com/v1alpha/namespaces/pods/farmpods"))
    })
    .await;
    drop(farm);
    let t = cp.target.clone();
    let theirs = load(&cp.target, 2, phase, move |c, _| c.get(t.url("/api/v1/namespaces/pods/pods"))).await;
    (ours, theirs)
}

/// The server's RSS empty, with 100,000 llamas, and after one LIST of them all (what the
/// allocator keeps of the 60 MB response), as shipped and with `--managed-fields false`, to show
/// what the stored form (`store::Stored`) and managed fields cost in memory.
async fn rss(binary: &Path) {
    for (name, args) in [("as shipped", &[][..]), ("--managed-fields false", &["--managed-fields", "false"][..])] {
        let (farm, _) = start(binary, args).await;
        let pid = farm.child.id();
        let before = rss_mb(pid);
        let path = format!("{LLAMAS}/rss/llamas");
        fill(&farm.target, &path, 100_000, llama, "l").await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let filled = rss_mb(pid);
        // The peak from here on is the LIST's (Linux resets VmHWM to VmRSS on "5").
        let reset = std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok();
        let listed = farm.target.client(false).get(farm.target.url(&path)).send().await.expect("list");
        assert_eq!(listed.status(), 200);
        let body = listed.bytes().await.expect("list body");
        let peak = status_mb(pid, "VmHWM:");
        tokio::time::sleep(Duration::from_millis(500)).await;
        println!(
            "RSS ({name}): {before:.1} MB empty, {filled:.1} MB with 100,000 llamas, {:.1} MB after listing them",
            rss_mb(pid)
        );
        if reset {
            println!(
                "  peak RSS while answering the unpaged LIST of all of them ({:.1} MB of JSON): {peak:.1} MB, {:+.1} MB",
                body.len() as f64 / 1e6,
                peak - filled
            );
        }
    }
}

#[tokio::main]
async fn main() {
    // Started again by `baseline` as the plain HTTPS server it compares with.
    if let Some(dir) = std::env::var_os(baseline::DIR_VAR) {
        return baseline::serve(Path::new(&dir)).await;
    }
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary without it, and a
    // load benchmark is not a test.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benches/load: skipped outside `cargo bench` (run `make bench`)");
        return;
    }
    let seconds: u64 = std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let phase = Duration::from_secs(seconds);
    let binary = binary();
    match std::env::var("BENCH_ONLY").as_deref() {
        Ok("rss") => return rss(&binary).await,
        Ok("managed-fields") => return managed_fields::compare(&binary, phase).await,
        Ok("audit") => return audit::compare(&binary, phase).await,
        Ok("etcd") => return etcd_only(&binary, phase).await,
        Ok("storage") => return storage_only(&binary, phase).await,
        Ok("baseline") => return baseline::compare(&binary, phase).await,
        Ok("leak") => return leak::check(&binary).await,
        Ok("versions") => return versions::compare(&binary, phase).await,
        Ok("compression") => return compression::compare(&binary, phase).await,
        Ok("scale") => return scale::grow(&binary, phase).await,
        Ok("nginx") => return nginx::compare(&binary, phase).await,
        Ok("watchers") => return watchers::fan_out(&binary).await,
        Ok("watchlist") => return watchers::watch_list(&binary).await,
        Ok("stalled") => return stalled::stalled(&binary).await,
        Ok("chart") => return draw_chart(&target_folder()),
        Ok("aggregator") => return aggregator::compare(&binary, phase).await,
        Ok("lists") => return lists::grow(&binary).await,
        Ok("policies") => return policies::compare(&binary, phase).await,
        Ok("peers") => return peers::compare(&binary, phase).await,
        Ok("flame-graphs") => return peers::redraw_flame_graphs(),
        _ => {}
    }
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("farm-apiserver load benchmark: {cores} cores, load generator on the same machine, {seconds} s per phase");

    let mut ready = Histogram::<u64>::new(3).expect("histogram");
    for _ in 0..5 {
        let (_, t) = start(&binary, &[]).await;
        ready.record(t.as_micros() as u64).expect("record");
    }
    println!(
        "time from process start to /readyz OK: median {:.1} ms over 5 starts",
        ready.value_at_quantile(0.5) as f64 / 1000.0
    );

    let (farm, _) = start(&binary, &[]).await;
    let memory = filled_phases(&farm.target, phase).await;
    drop(farm);
    let (farm, _) = start(&binary, &[]).await;
    let memory_fan = fan_out(&farm.target, 1_000, 100).await;
    drop(farm);

    let control_plane = ControlPlane::up();
    let (mut etcd, mut etcd_fan, mut kube, mut pods) = (None, None, None, None);
    if let Some(cp) = &control_plane {
        // farm-apiserver on the control plane's own etcd, beside the kube-apiserver's keys.
        let flags = ["--storage", "etcd", "--etcd-endpoints", &cp.etcd, "--etcd-prefix", "/farm-bench"];
        let (farm, _) = start(&binary, &flags).await;
        etcd = Some(filled_phases(&farm.target, phase).await);
        etcd_fan = Some(fan_out(&farm.target, 1_000, 100).await);
        drop(farm);
        storage::compare(&binary, cp, phase).await;
        cp.prepare(&["small", "large", "create", "pods"]).await;
        kube = Some(filled_phases(&cp.target, phase).await);
        pods = Some(farmpods(&binary, cp, phase).await);
    }
    drop(control_plane);

    println!();
    println!(
        "| {:<38} | {:>9} | {:>7} | {:>7} | {:>9} | {:>7} | {:>7} | {:>9} | {:>7} | {:>7} | {:>9} | {:>9} | {:>6} |",
        "operation",
        "memory/s",
        "p50 ms",
        "p99 ms",
        "etcd/s",
        "p50 ms",
        "p99 ms",
        "kube/s",
        "p50 ms",
        "p99 ms",
        "mem/kube",
        "etcd/kube",
        "errors"
    );
    println!(
        "|{:-<40}|{:->11}|{:->9}|{:->9}|{:->11}|{:->9}|{:->9}|{:->11}|{:->9}|{:->9}|{:->11}|{:->11}|{:->8}|",
        "", "", "", "", "", "", "", "", "", "", "", "", ""
    );
    fn nth(rows: &Option<Vec<(String, Stats)>>, i: usize) -> Option<&Stats> {
        rows.as_ref().map(|r| &r[i].1)
    }
    for (i, (name, stats)) in memory.iter().enumerate() {
        row(name, Some(stats), nth(&etcd, i), nth(&kube, i));
    }
    match &pods {
        Some((farm, kube)) => row("LIST 10,000 FarmPods / Pods (2 conns)", Some(farm), None, Some(kube)),
        None => println!("| {:<38} | skipped: needs the control plane", "LIST 10,000 FarmPods"),
    }
    fan_out_row("watch fan-out, 1,000 watchers", &memory_fan, etcd_fan.as_ref());
    println!();
    managed_fields::compare(&binary, phase).await;
    audit::compare(&binary, phase).await;
    baseline::compare(&binary, phase).await;
    nginx::compare(&binary, phase).await;
    aggregator::compare(&binary, phase).await;
    peers::compare(&binary, phase).await;
    lists::grow(&binary).await;
    rss(&binary).await;
    leak::check(&binary).await;
}

/// Writes `text` to `name` in the build's target folder (figures for the chart), then draws
/// the chart from every figure there.
fn write_figures(name: &str, text: &str) {
    let target = target_folder();
    let path = target.join(name);
    match std::fs::write(&path, text) {
        Ok(()) => println!("figures written to {}", path.display()),
        Err(error) => println!("figures not written to {}: {error}", path.display()),
    }
    draw_chart(&target);
}

/// The build's target folder, where figures and the chart are written.
fn target_folder() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"), Into::into)
}

/// Draws the chart from the figures in `folder` (`BENCH_ONLY=chart`: from earlier runs').
fn draw_chart(folder: &Path) {
    match chart::draw(folder) {
        Ok(svg) => println!("chart drawn: {}", svg.display()),
        Err(error) => println!("chart not drawn: {error}"),
    }
}

/// The etcd storage's rows alone, on the control plane's etcd.
async fn etcd_only(binary: &Path, phase: Duration) {
    let Some(cp) = ControlPlane::up() else {
        println!("BENCH_ONLY=etcd: skipped, the control plane cannot run here");
        return;
    };
    let flags = ["--storage", "etcd", "--etcd-endpoints", &cp.etcd, "--etcd-prefix", "/farm-bench"];
    let (farm, _) = start(binary, &flags).await;
    let rows = filled_phases(&farm.target, phase).await;
    let fan = fan_out(&farm.target, 1_000, 100).await;
    println!("etcd storage, {}:", binary.display());
    for (name, stats) in &rows {
        row(name, None, Some(stats), None);
    }
    let ms = |q: f64| fan.value_at_quantile(q) as f64 / 1000.0;
    println!("watch fan-out, 1,000 watchers: p50 {:.2} ms, p99 {:.2} ms", ms(0.5), ms(0.99));
}

/// etcd storage against memory storage alone, on the control plane's etcd.
async fn storage_only(binary: &Path, phase: Duration) {
    match ControlPlane::up() {
        Some(cp) => storage::compare(binary, &cp, phase).await,
        None => println!("BENCH_ONLY=storage: skipped, the control plane cannot run here"),
    }
}

/// 1,000 and 10,000 llamas written into `target`, then the request phases.
async fn filled_phases(target: &Target, phase: Duration) -> Vec<(String, Stats)> {
    fill(target, &format!("{LLAMAS}/small/llamas"), 1_000, llama, "l").await;
    fill(target, &format!("{LLAMAS}/large/llamas"), 10_000, llama, "l").await;
    request_phases(target, phase).await
}
