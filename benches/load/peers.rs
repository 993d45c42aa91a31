//! Side by side with what users would pick instead (issue 60, `BENCH_ONLY=peers`, and last in a
//! full run): on one control plane (etcd, kube-apiserver 1.37.2), the same loads against
//!
//! - farm-apiserver in memory, standalone, reached directly;
//! - farm-apiserver on the control plane's etcd, in aggregated mode (delegated authentication),
//!   reached directly and through the kube-apiserver's aggregator;
//! - k8s.io/sample-apiserver 0.37.2 on the same etcd ([`scripts/sample-apiserver.sh`]: Flunders of
//!   the Llamas' size), directly and through the aggregator;
//! - a Llama CustomResourceDefinition of the same schema on the kube-apiserver.
//!
//! Every request is JSON over HTTP/1.1 keep-alive connections with TLS 1.3 from the same
//! client, the admin's client certificate for all but the standalone server (its token), no
//! `Accept-Encoding`. Phases: GET of one object, LIST of 1,000 (consistent and at
//! `resourceVersion=0`), create, merge patch, server-side apply ([`Phase`]); watch fan-out to
//! 1,000 and 10,000 watchers (delivery of one write to the last watcher, and the server's memory
//! per watcher, each RSS read once it settled); the server's RSS per stored object with 100,000
//! and its time from start to ready with them in etcd ([`starts`]); with `BENCH_PROFILE=1`,
//! profiles of the phases whose goals can be missed ([`profile`]). Phases run target after
//! target, so drift of the shared machine falls on all of them alike.

use super::watchers::settled_rss_mb;
use super::{ControlPlane, Stats, Target, aggregator, delivery, fill_range, load, watch_creates};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

#[path = "peers/profile.rs"]
mod profile;
#[path = "peers/starts.rs"]
mod starts;
use std::time::{Duration, Instant};

/// What a peer serves, and how the loads name, make and change it.
#[derive(Clone, Copy)]
enum Resource {
    /// Llamas at v1 of `group` (farm.example.com's stored version; the CRD's only one).
    Llama { group: &'static str },
    /// sample-apiserver's Flunders at v1alpha1, of the Llamas' size.
    Flunder,
}

impl Resource {
    fn collection(self, namespace: &str) -> String {
        match self {
            Self::Llama { group } => format!("/apis/{group}/v1/namespaces/{namespace}/llamas"),
            Self::Flunder => format!("/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"),
        }
    }

    /// An object named `name`, its content varied by `i`.
    fn object(self, name: &str, i: u64) -> Value {
        let metadata = json!({"name": name, "labels": {"herd": "bench"}});
        match self {
            Self::Llama { group } => json!({"apiVersion": format!("{group}/v1"), "kind": "Llama", "metadata": metadata,
                "spec": {"weight": 100 + i % 1000, "height": 170, "coat": {"color": "white"}}}),
            Self::Flunder => {
                json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": metadata,
                "spec": {"reference": format!("l{:06}", i % 1_000_000), "referenceType": "Flunder"}})
            }
        }
    }

    /// A merge patch changing the object's spec by `i`.
    fn merge_patch(self, i: u64) -> Value {
        match self {
            Self::Llama { .. } => json!({"spec": {"weight": 100 + i % 1000}}),
            Self::Flunder => json!({"spec": {"reference": format!("l{:06}", i % 1_000_000)}}),
        }
    }
}

/// One server as the loads reach it.
#[derive(Clone)]
struct Peer {
    name: &'static str,
    /// Short, in the names of the objects its creates make (two peers may be one server).
    tag: &'static str,
    target: Target,
    resource: Resource,
    /// The serving process (for its RSS), when this machine runs it.
    pid: Option<u32>,
}

/// A load: its row name, connections, and the request number `i` sends to `peer`.
struct Phase {
    name: &'static str,
    /// Its name in file names.
    short: &'static str,
    concurrency: usize,
    request: fn(&Peer, &reqwest::Client, u64) -> reqwest::RequestBuilder,
}

const PHASES: [Phase; 6] = [
    Phase {
        name: "GET one object (32 conns)",
        short: "get",
        concurrency: 32,
        request: |p, c, _| c.get(p.target.url(&format!("{}/l000500", p.resource.collection("small")))),
    },
    Phase {
        name: "LIST 1,000, consistent (8 conns)",
        short: "list",
        concurrency: 8,
        request: |p, c, _| c.get(p.target.url(&p.resource.collection("small"))),
    },
    Phase {
        name: "LIST 1,000, resourceVersion=0 (8 conns)",
        short: "list-rv0",
        concurrency: 8,
        request: |p, c, _| c.get(p.target.url(&format!("{}?resourceVersion=0", p.resource.collection("small")))),
    },
    Phase {
        name: "create (32 conns)",
        short: "create",
        concurrency: 32,
        request: |p, c, i| {
            let name = format!("c{}{i:012}", p.tag);
            c.post(p.target.url(&p.resource.collection("create"))).json(&p.resource.object(&name, i))
        },
    },
    Phase {
        name: "update, merge patch (32 conns)",
        short: "merge-patch",
        concurrency: 32,
        request: |p, c, i| {
            let url = p.target.url(&format!("{}/l{:06}", p.resource.collection("small"), i % 1000));
            c.patch(url).header("content-type", "application/merge-patch+json").json(&p.resource.merge_patch(i))
        },
    },
    Phase {
        name: "update, server-side apply (32 conns)",
        short: "apply",
        concurrency: 32,
        request: |p, c, i| {
            let name = format!("l{:06}", i % 1000);
            let url = p.target.url(&format!("{}/{name}?fieldManager=bench&force=true", p.resource.collection("small")));
            c.patch(url).header("content-type", "application/apply-patch+yaml").json(&p.resource.object(&name, i))
        },
    },
];

/// The peers, started on `cp`: returns them with what keeps them running.
struct Peers {
    peers: Vec<Peer>,
    _standalone: super::Farm,
    aggregated: Option<super::Farm>,
    /// How to start the aggregated farm-apiserver again (its flags).
    etcd_flags: Vec<String>,
}

async fn start_peers(binary: &Path, cp: &ControlPlane) -> Peers {
    let admin = cp.target.credentials.clone();
    let (standalone, _) = super::start(binary, &[]).await;
    let etcd_flags: Vec<String> =
        ["--storage", "etcd", "--etcd-endpoints", &cp.etcd, "--etcd-prefix", "/registry/farm.example.com"]
            .map(String::from)
            .to_vec();
    let flags: Vec<&str> = etcd_flags.iter().map(String::as_str).collect();
    let (aggregated, farm_ca, farm_port) = aggregator::start_aggregated(binary, cp, &flags);
    aggregator::register(cp, "farm", "farm.example.com", farm_port, &farm_ca);
    cp.run_script("sample-apiserver.sh", "up");
    let env = std::fs::read_to_string(cp.dir.path().join("env")).expect("env");
    let wardle = env.lines().find_map(|l| l.strip_prefix("WARDLE_PORT=")).expect("WARDLE_PORT").to_string();
    let (sample_pid, kube_pid) = (cp.pid("sample-apiserver.pid"), cp.pid("kube-apiserver.pid"));
    let direct =
        |port: &str, ca: Vec<u8>| Target { base: format!("https://127.0.0.1:{port}"), ca, credentials: admin.clone() };
    let llama = Resource::Llama { group: "farm.example.com" };
    let peers = vec![
        Peer {
            name: "farm memory",
            tag: "m",
            target: standalone.target.clone(),
            resource: llama,
            pid: Some(standalone.child.id()),
        },
        Peer {
            name: "farm etcd",
            tag: "e",
            target: direct(&farm_port.to_string(), farm_ca.into_bytes()),
            resource: llama,
            pid: Some(aggregated.child.id()),
        },
        Peer {
            name: "farm etcd agg",
            tag: "a",
            target: cp.target.clone(),
            resource: llama,
            pid: Some(aggregated.child.id()),
        },
        Peer {
            name: "sample",
            tag: "s",
            target: direct(&wardle, cp.target.ca.clone()),
            resource: Resource::Flunder,
            pid: sample_pid,
        },
        Peer { name: "sample agg", tag: "t", target: cp.target.clone(), resource: Resource::Flunder, pid: sample_pid },
        Peer {
            name: "CRD",
            tag: "k",
            target: cp.target.clone(),
            resource: Resource::Llama { group: "bench.example.com" },
            pid: kube_pid,
        },
    ];
    Peers { peers, _standalone: standalone, aggregated: Some(aggregated), etcd_flags }
}

/// The peers that are servers of their own (the others reach one of these through the
/// aggregator): farm memory, farm etcd, sample, CRD.
const SERVERS: [usize; 4] = [0, 1, 3, 5];

/// Namespaces of the loads, made in the cluster.
const NAMESPACES: [&str; 5] = ["small", "create", "rss", "w1000", "w10000"];

/// The CRD of Llamas at v1 in `bench.example.com`, the schema of farm-apiserver's v1.
fn llama_v1_crd() -> Value {
    let number = json!({"type": "number", "minimum": 0, "exclusiveMinimum": true});
    let coat = json!({"type": "object", "properties": {"color": {"type": "string"},
        "pattern": {"type": "string", "enum": ["Solid", "Spotted", "Patched"]}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "llamas.bench.example.com"},
        "spec": {
            "group": "bench.example.com", "scope": "Namespaced",
            "names": {"plural": "llamas", "singular": "llama", "kind": "Llama", "listKind": "LlamaList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                    "required": ["weight", "height"], "properties": {"weight": number, "height": number, "coat": coat}}}}},
                "additionalPrinterColumns": [
                    {"name": "Weight", "type": "number", "jsonPath": ".spec.weight"},
                    {"name": "Height", "type": "number", "jsonPath": ".spec.height"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.coat.color", "priority": 1},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]
        }
    })
}

/// The namespaces and the CRD, in the cluster.
async fn prepare_cluster(cp: &ControlPlane) {
    let client = cp.target.client(false);
    for ns in NAMESPACES {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let r = client.post(cp.target.url("/api/v1/namespaces")).json(&body).send().await.expect("namespace");
        assert!(r.status().is_success(), "namespace {ns}: {}", r.status());
    }
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let r = client.post(cp.target.url(crds)).json(&llama_v1_crd()).send().await.expect("CRD");
    assert!(r.status().is_success(), "CRD: {}", r.text().await.unwrap_or_default());
}

/// Waits until `peer` creates an object (a server behind an APIService, or a CRD, serves a while
/// after it is registered; sample-apiserver refuses creates until its admission has synced).
async fn creatable(peer: &Peer) {
    let client = peer.target.client(false);
    let deadline = Instant::now() + Duration::from_secs(90);
    let url = peer.target.url(&peer.resource.collection("create"));
    loop {
        let r = client.post(&url).json(&peer.resource.object(&format!("probe-{}", peer.tag), 0)).send().await;
        if r.is_ok_and(|r| r.status() == 201 || r.status() == 409) {
            return;
        }
        assert!(Instant::now() < deadline, "{} did not create an object within 90 s", peer.name);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates `count` objects `{prefix}{i:06}` in `namespace` of `peer`, 32 at a time.
async fn fill(peer: &Peer, namespace: &str, count: usize, prefix: &'static str) {
    let resource = peer.resource;
    let object = move |i: usize| resource.object(&format!("{prefix}{i:06}"), i as u64);
    fill_range(&peer.target, &peer.resource.collection(namespace), 0..count, object).await;
}

/// Runs every phase on every peer, phase after phase: each peer's stats in phase order.
async fn request_phases(peers: &[Peer], duration: Duration) -> Vec<Vec<Stats>> {
    let mut by_peer: Vec<Vec<Stats>> = peers.iter().map(|_| Vec::new()).collect();
    for phase in &PHASES {
        for (peer, stats) in peers.iter().zip(by_peer.iter_mut()) {
            let (p, request) = (peer.clone(), phase.request);
            stats.push(load(&peer.target, phase.concurrency, duration, move |c, i| request(&p, c, i)).await);
        }
    }
    by_peer
}

/// What `watchers` watchers of an empty namespace of `peer` cost and see: delivery of each of
/// `writes` creates to the last watcher (µs), and the server's RSS per watcher (KB).
async fn fan_out(peer: &Peer, namespace: &str, watchers: usize, writes: usize) -> (Histogram<u64>, f64) {
    let url = peer.target.url(&peer.resource.collection(namespace));
    let clients: Vec<reqwest::Client> = (0..(watchers / 100).max(10)).map(|_| peer.target.client(true)).collect();
    // Each connection made before its streams, one at a time: 100 handshakes at once on the
    // busy cores were too slow for Go's HTTP/2 server, which closes a connection whose first
    // SETTINGS frame is late.
    for client in &clients {
        let r = client.get(format!("{url}?limit=1")).send().await.expect("a connection");
        assert_eq!(r.status(), 200, "{}: a list to open a connection", peer.name);
    }
    let opening = Arc::new(tokio::sync::Semaphore::new(200));
    let before = match peer.pid {
        Some(pid) => settled_rss_mb(pid).await,
        None => 0.0,
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let ready = Arc::new(tokio::sync::Barrier::new(watchers + 1));
    let mut handles = Vec::new();
    for w in 0..watchers {
        let (client, url, tx, ready) = (clients[w % clients.len()].clone(), url.clone(), tx.clone(), ready.clone());
        let opening = opening.clone();
        handles.push(tokio::spawn(async move {
            let permit = opening.acquire_owned().await.expect("the semaphore");
            let response = client.get(format!("{url}?watch=true")).send().await.expect("watch");
            drop(permit);
            ready.wait().await;
            watch_creates(response, writes, tx).await;
        }));
    }
    // A watch that could not be opened ends its task: fail then, not wait for ever.
    let opened = tokio::time::timeout(Duration::from_secs(300), ready.wait()).await;
    assert!(opened.is_ok(), "{}: {watchers} watches not all opened within 300 s", peer.name);
    let per_watcher = match peer.pid {
        Some(pid) => (settled_rss_mb(pid).await - before) * 1024.0 / watchers as f64,
        None => 0.0,
    };
    let writer = peer.target.client(false);
    let mut acked = Vec::new();
    for i in 0..writes {
        let r =
            writer.post(&url).json(&peer.resource.object(&format!("f{i:06}"), i as u64)).send().await.expect("create");
        assert_eq!(r.status(), 201);
        acked.push(Instant::now());
        // One fan-out at a time: the latency is a fan-out's, not a queue's.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(tx);
    (delivery(rx, &acked, watchers, peer.name, handles).await, per_watcher)
}

/// The RSS `peer`'s server grows by per stored object (KB) while [`starts::OBJECTS`] are
/// created in namespace `rss`.
async fn rss_per_object(peer: &Peer) -> f64 {
    let Some(pid) = peer.pid else { return 0.0 };
    let before = settled_rss_mb(pid).await;
    fill(peer, "rss", starts::OBJECTS, "r").await;
    let after = settled_rss_mb(pid).await;
    (after - before) * 1024.0 / starts::OBJECTS as f64
}

/// Runs the comparison and prints its tables.
pub async fn compare(binary: &Path, phase: Duration) {
    let Some(cp) = ControlPlane::up() else {
        return println!("BENCH_ONLY=peers: skipped, the control plane cannot run here");
    };
    prepare_cluster(&cp).await;
    let mut peers = start_peers(binary, &cp).await;
    aggregator::served(&cp.target, &Resource::Llama { group: "farm.example.com" }.collection("small")).await;
    for peer in &peers.peers {
        creatable(peer).await;
    }
    let fresh = starts::settled(&[&peers.peers[1], &peers.peers[3], &peers.peers[5]]).await;
    for &i in &SERVERS {
        fill(&peers.peers[i], "small", 1_000, "l").await;
    }
    println!(
        "side by side with the peers (issue 60): {} s a phase, JSON over HTTP/1.1 and TLS 1.3, one control plane",
        phase.as_secs()
    );
    let stats = request_phases(&peers.peers, phase).await;
    print_requests(&peers.peers, &stats);
    chart(&peers.peers, &stats);
    if std::env::var("BENCH_PROFILE").is_ok_and(|v| v == "1") {
        profile::run(&peers.peers, cp.etcd_pid(), phase).await;
    }
    let mut fan_outs = Vec::new();
    for watchers in [1_000, 10_000] {
        for &i in &SERVERS {
            fan_outs.push(fan_out(&peers.peers[i], &format!("w{watchers}"), watchers, 20).await);
        }
    }
    print_fan_outs(&peers.peers, &fan_outs);
    let mut filled = Vec::new();
    for i in [1, 3, 5] {
        filled.push((peers.peers[i].name, rss_per_object(&peers.peers[i]).await));
    }
    let memory_mode = starts::memory_mode(binary).await;
    let starts = starts::restarts(binary, &cp, &mut peers, [fresh[0], fresh[1], fresh[2]]).await;
    starts::print(memory_mode, &filled, &starts);
    print_goals(&stats, &fan_outs, &starts);
    drop(peers);
    cp.run_script("sample-apiserver.sh", "down");
}

/// `BENCH_ONLY=flame-graphs`: [`profile::redraw`].
pub fn redraw_flame_graphs() {
    profile::redraw();
}

fn print_requests(peers: &[Peer], stats: &[Vec<Stats>]) {
    println!();
    let names: Vec<String> = peers.iter().map(|p| format!("{:>20}", format!("{} req/s (p99 ms)", p.name))).collect();
    println!("| {:<40} | {} | errors |", "operation", names.join(" | "));
    println!("|{:-<42}|{}--------|", "", peers.iter().map(|_| format!("{:-<23}|", "")).collect::<String>());
    for (i, phase) in PHASES.iter().enumerate() {
        let cells: Vec<String> =
            stats.iter().map(|s| format!("{:>20}", format!("{:.0} ({:.1})", s[i].rate(), s[i].ms(0.99)))).collect();
        let errors: u64 = stats.iter().map(|s| s[i].errors).sum();
        println!("| {:<40} | {} | {errors:>6} |", phase.name, cells.join(" | "));
    }
}

fn print_fan_outs(peers: &[Peer], fan_outs: &[(Histogram<u64>, f64)]) {
    println!();
    println!("| watch fan-out: delivery of one create to the last watcher | p50 ms | p99 ms | KB per watcher |");
    println!("|---|---|---|---|");
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    for (n, (delivery, per_watcher)) in fan_outs.iter().enumerate() {
        let watchers = if n < SERVERS.len() { "1,000" } else { "10,000" };
        let peer = &peers[SERVERS[n % SERVERS.len()]];
        println!(
            "| {}, {watchers} watchers | {:.2} | {:.2} | {per_watcher:.1} |",
            peer.name,
            ms(delivery, 0.5),
            ms(delivery, 0.99)
        );
    }
}

/// The goals of issue 60, as ratios of this run.
fn print_goals(stats: &[Vec<Stats>], fan_outs: &[(Histogram<u64>, f64)], starts: &[starts::Start]) {
    let rate = |peer: usize, phase: usize| stats[peer][phase].rate().max(f64::MIN_POSITIVE);
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!();
    for (phase, name) in [(0, "GET"), (1, "LIST 1,000"), (3, "create")] {
        let direct = rate(1, phase) / rate(3, phase);
        let aggregated = rate(2, phase) / rate(4, phase);
        let crd = rate(2, phase) / rate(5, phase);
        println!(
            "goal {name}: ≥ 3× sample-apiserver: {direct:.1}× direct ({}), {aggregated:.1}× aggregated ({}); ≥ 1.5× the CRD through the aggregator: {crd:.1}× ({})",
            verdict(direct >= 3.0),
            verdict(aggregated >= 3.0),
            verdict(crd >= 1.5)
        );
    }
    let per_object = starts[0].kb_per_object() / starts[1].kb_per_object().max(f64::MIN_POSITIVE);
    println!(
        "goal RSS per stored object ≤ 1/3 of sample-apiserver's: {per_object:.2} ({})",
        verdict(per_object <= 1.0 / 3.0)
    );
    for (n, watchers) in [(0, "1,000"), (1, "10,000")] {
        let (ours, theirs) = (fan_outs[n * SERVERS.len() + 1].1, fan_outs[n * SERVERS.len() + 2].1);
        let ratio = ours / theirs.max(f64::MIN_POSITIVE);
        println!(
            "goal memory per watcher ≤ 1/3 of sample-apiserver's, {watchers} watchers: {ratio:.2} ({})",
            verdict(ratio <= 1.0 / 3.0)
        );
    }
    let filled = starts[0].filled.as_secs_f64() / starts[1].filled.as_secs_f64();
    let list = starts[0].list.as_secs_f64() / starts[1].list.as_secs_f64();
    println!(
        "goal start to ready with 100,000 ≤ 1/2 of sample-apiserver's: watch cache filled {filled:.2} ({}), first consistent LIST {list:.2} ({})",
        verdict(filled <= 0.5),
        verdict(list <= 0.5)
    );
}

/// Draws the request phases' rates into `target/peers.svg` (for docs/performance.md).
fn chart(peers: &[Peer], stats: &[Vec<Stats>]) {
    let phases: Vec<&str> = ["GET", "LIST consistent", "LIST rv=0", "create", "merge patch", "apply"].to_vec();
    let names: Vec<&str> = peers.iter().map(|p| p.name).collect();
    let rates: Vec<Vec<f64>> = stats.iter().map(|s| s.iter().map(Stats::rate).collect()).collect();
    let path = super::target_folder().join("peers.svg");
    match super::peers_chart::draw(&path, &phases, &names, &rates) {
        Ok(()) => println!("chart: {}", path.display()),
        Err(e) => println!("chart not drawn: {e}"),
    }
}
