//! `make bench`: load against the real release binary over HTTPS on loopback, with keep-alive
//! connections, from this process (which shares the machine's cores with the server, as the
//! targets require). Prints one table:
//!
//! - time from process start to `/readyz` OK;
//! - GET of one llama, LIST of 1,000 and of 10,000 llamas as JSON and as Table (req/s, p50, p99);
//! - create throughput;
//! - watch fan-out: 1,000 watchers, time from a write's acknowledgement to its delivery to the
//!   last watcher (p50, p99 over the writes);
//! - the server's RSS with 100,000 llamas.
//!
//! `BENCH_SECONDS` sets each load phase's length (default 5).

use hdrhistogram::Histogram;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

struct Server {
    child: Child,
    base: String,
    token: String,
    ca: Vec<u8>,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> std::path::PathBuf {
    let status =
        Command::new(env!("CARGO")).args(["build", "--release", "--locked", "--quiet"]).status().expect("cargo build");
    assert!(status.success());
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/farm-apiserver")
}

/// Starts the server; returns it and the time from spawn to `/readyz` OK.
async fn start(binary: &std::path::Path) -> (Server, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let started = Instant::now();
    let child = Command::new(binary)
        .args(["serve", "--standalone", "--bind-address", "127.0.0.1", "--secure-port", "0", "--write-kubeconfig"])
        .arg(&kubeconfig)
        .args(["--watch-buffer-size", "10000"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    while !kubeconfig.exists() {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let config: serde_json::Value = serde_json::from_slice(&std::fs::read(&kubeconfig).unwrap()).unwrap();
    let cluster = &config["clusters"][0]["cluster"];
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD
        .decode(cluster["certificate-authority-data"].as_str().unwrap())
        .unwrap();
    let server = Server {
        child,
        base: cluster["server"].as_str().unwrap().into(),
        token: config["users"][0]["user"]["token"].as_str().unwrap().into(),
        ca,
        _dir: dir,
    };
    let probe = client(&server, false);
    loop {
        if let Ok(r) = probe.get(format!("{}/readyz", server.base)).send().await
            && r.status() == 200
        {
            break;
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let ready = started.elapsed();
    (server, ready)
}

/// A client with its own keep-alive connection (HTTP/1.1) or one multiplexed HTTP/2 connection.
fn client(server: &Server, http2: bool) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {}", server.token).parse().unwrap());
    let builder = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&server.ca).unwrap())
        .default_headers(headers)
        .pool_max_idle_per_host(1);
    let builder = if http2 { builder } else { builder.http1_only() };
    builder.build().unwrap()
}

fn llama(name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": name, "labels": {"herd": "bench"}}, "spec": {"weight": 120.5, "height": 170, "color": "white"}})
}

fn rss_mb(server: &Server) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
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

/// Runs `concurrency` loops, each on its own connection, issuing `request(i)` for `duration`.
async fn load<F>(server: &Server, concurrency: usize, duration: Duration, request: F) -> Stats
where
    F: Fn(&reqwest::Client, u64) -> reqwest::RequestBuilder + Send + Sync + 'static,
{
    let request = Arc::new(request);
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let client = client(server, false);
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut hist = Histogram::<u64>::new(3).unwrap();
            let (mut n, mut errors) = (0u64, 0u64);
            while Instant::now() < deadline {
                let t = Instant::now();
                match request(&client, worker as u64 * 1_000_000 + n).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        let _ = hist.record(t.elapsed().as_micros() as u64);
                    }
                    _ => errors += 1,
                }
                n += 1;
            }
            (n, errors, hist)
        }));
    }
    let mut stats = Stats { requests: 0, errors: 0, elapsed: Duration::ZERO, latency: Histogram::new(3).unwrap() };
    for t in tasks {
        let (n, e, h) = t.await.unwrap();
        stats.requests += n;
        stats.errors += e;
        stats.latency.add(h).unwrap();
    }
    stats.elapsed = started.elapsed();
    stats
}

fn row(name: &str, stats: &Stats) {
    println!(
        "| {name:<34} | {:>10.0} | {:>9.2} | {:>9.2} | {:>6} |",
        stats.requests as f64 / stats.elapsed.as_secs_f64(),
        stats.latency.value_at_quantile(0.5) as f64 / 1000.0,
        stats.latency.value_at_quantile(0.99) as f64 / 1000.0,
        stats.errors
    );
}

async fn fill(server: &Server, namespace: &str, count: usize) {
    let concurrency = 32;
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let client = client(server, false);
        let url = format!("{}/apis/farm.example.com/v1alpha/namespaces/{namespace}/llamas", server.base);
        tasks.push(tokio::spawn(async move {
            for i in (worker..count).step_by(concurrency) {
                let r = client.post(&url).json(&llama(&format!("l{i:06}"))).send().await.unwrap();
                assert_eq!(r.status(), 201);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// 1,000 watchers; returns per-write delivery latency to the last watcher, in microseconds.
async fn fan_out(server: &Server, watchers: usize, writes: usize) -> Histogram<u64> {
    let url = format!("{}/apis/farm.example.com/v1alpha/namespaces/fan/llamas", server.base);
    let connections = 10;
    let clients: Vec<reqwest::Client> = (0..connections).map(|_| client(server, true)).collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let mut handles = Vec::new();
    let ready = Arc::new(tokio::sync::Barrier::new(watchers + 1));
    for w in 0..watchers {
        let c = clients[w % connections].clone();
        let (url, tx, ready) = (url.clone(), tx.clone(), ready.clone());
        handles.push(tokio::spawn(async move {
            let r = c.get(format!("{url}?watch=true")).send().await.unwrap();
            ready.wait().await;
            let mut r = r;
            let mut buf = Vec::new();
            let mut seen = 0;
            while seen < writes {
                let Ok(Some(chunk)) = r.chunk().await else { break };
                buf.extend_from_slice(&chunk);
                while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=pos).collect();
                    let e: serde_json::Value = serde_json::from_slice(&line).unwrap();
                    if e["type"] == "ADDED" {
                        let i: usize = e["object"]["metadata"]["name"].as_str().unwrap()[1..].parse().unwrap();
                        let _ = tx.send((i, Instant::now()));
                        seen += 1;
                    }
                }
            }
        }));
    }
    ready.wait().await;
    let writer = client(server, false);
    let mut acked = Vec::new();
    for i in 0..writes {
        let r = writer.post(&url).json(&llama(&format!("f{i:06}"))).send().await.unwrap();
        assert_eq!(r.status(), 201);
        acked.push(Instant::now());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(tx);
    let mut last = vec![None::<Instant>; writes];
    let mut counts = vec![0usize; writes];
    while let Some((i, at)) = rx.recv().await {
        counts[i] += 1;
        last[i] = Some(last[i].map_or(at, |l: Instant| l.max(at)));
    }
    for h in handles {
        let _ = h.await;
    }
    let mut hist = Histogram::<u64>::new(3).unwrap();
    for i in 0..writes {
        assert_eq!(counts[i], watchers, "every watcher saw write {i}");
        let delay = last[i].unwrap().saturating_duration_since(acked[i]);
        let _ = hist.record(delay.as_micros() as u64);
    }
    hist
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary without it, and a
    // load benchmark is not a test.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benches/load: skipped outside `cargo bench` (run `make bench`)");
        return;
    }
    let seconds: u64 = std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let phase = Duration::from_secs(seconds);
    let binary = binary();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("farm-apiserver load benchmark: {cores} cores, load generator on the same machine, {seconds} s per phase");

    let mut ready = Histogram::<u64>::new(3).unwrap();
    for _ in 0..5 {
        let (_, t) = start(&binary).await;
        ready.record(t.as_micros() as u64).unwrap();
    }
    println!(
        "time from process start to /readyz OK: median {:.1} ms over 5 starts",
        ready.value_at_quantile(0.5) as f64 / 1000.0
    );
    println!();
    println!("| {:<34} | {:>10} | {:>9} | {:>9} | {:>6} |", "operation", "req/s", "p50 ms", "p99 ms", "errors");
    println!("|{:-<36}|{:->12}|{:->11}|{:->11}|{:->8}|", "", "", "", "", "");

    let (server, _) = start(&binary).await;
    fill(&server, "small", 1_000).await;
    fill(&server, "large", 10_000).await;
    let base = server.base.clone();
    let get = load(&server, 32, phase, move |c, _| {
        c.get(format!("{base}/apis/farm.example.com/v1alpha/namespaces/small/llamas/l000500"))
    })
    .await;
    row("GET one llama (32 conns)", &get);
    for (ns, label) in [("small", "1,000"), ("large", "10,000")] {
        let base = server.base.clone();
        let conns = if ns == "small" { 8 } else { 2 };
        let json = load(&server, conns, phase, move |c, _| {
            c.get(format!("{base}/apis/farm.example.com/v1alpha/namespaces/{ns}/llamas"))
        })
        .await;
        row(&format!("LIST {label} llamas, JSON ({conns} conns)"), &json);
        let base = server.base.clone();
        let table = load(&server, conns, phase, move |c, _| {
            c.get(format!("{base}/apis/farm.example.com/v1alpha/namespaces/{ns}/llamas")).header("accept", TABLE)
        })
        .await;
        row(&format!("LIST {label} llamas, Table ({conns} conns)"), &table);
    }
    let base = server.base.clone();
    let create = load(&server, 32, phase, move |c, i| {
        c.post(format!("{base}/apis/farm.example.com/v1alpha/namespaces/create/llamas")).json(&llama(&format!("c{i}")))
    })
    .await;
    row("create (32 conns)", &create);
    drop(server);

    let (server, _) = start(&binary).await;
    let fan = fan_out(&server, 1_000, 100).await;
    println!(
        "| {:<34} | {:>10} | {:>9.2} | {:>9.2} | {:>6} |",
        "watch fan-out, 1,000 watchers",
        "-",
        fan.value_at_quantile(0.5) as f64 / 1000.0,
        fan.value_at_quantile(0.99) as f64 / 1000.0,
        0
    );
    drop(server);

    let (server, _) = start(&binary).await;
    let before = rss_mb(&server);
    fill(&server, "rss", 100_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!();
    println!("RSS: {before:.1} MB empty, {:.1} MB with 100,000 llamas", rss_mb(&server));
}
