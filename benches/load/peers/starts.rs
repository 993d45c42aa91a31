//! Memory with 100,000 objects stored, and the time from start to ready with them in etcd: each
//! server's RSS is read settled when it is fresh (started, nothing loaded) and again after a
//! restart with the objects in etcd, so that its growth per object is that of a process which
//! only loaded them (the RSS of a process that went through the loads keeps what its allocator
//! did not give back). The restart is timed to the first `/readyz` 200, to the first
//! consistent LIST 200, and to a filled watch cache: the later of `/readyz` and the first 200 to
//! a consistent LIST with a label selector that matches nothing. k8s.io/apiserver's `/readyz`
//! does not wait for its watch caches, and until one is filled it answers such a LIST 429
//! (only a LIST with a limit and no selector is passed to etcd meanwhile, KEP-4568); ours waits
//! for its cache in `/readyz` and reads etcd for any LIST until then. farm-apiserver in memory
//! cannot restart with its objects: its growth is measured while a fresh process is filled.

use super::super::watchers::settled_rss_mb;
use super::super::{ControlPlane, Target, aggregator, start};
use super::{Peer, Peers, Resource, fill};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The objects stored in namespace `rss` of each server.
pub(super) const OBJECTS: usize = 100_000;

/// The settled RSS (MB) of each peer, read side by side (0 for a peer without a process).
pub(super) async fn settled(peers: &[&Peer]) -> Vec<f64> {
    futures::future::join_all(peers.iter().map(|peer| async move {
        match peer.pid {
            Some(pid) => settled_rss_mb(pid).await,
            None => 0.0,
        }
    }))
    .await
}

/// One server's restart with [`OBJECTS`] (and the 1,000 of namespace `small`) in etcd.
pub(super) struct Start {
    pub name: &'static str,
    /// From the spawn to the first `/readyz` answered 200.
    pub readyz: Duration,
    /// From the spawn to the first consistent LIST (`limit=1`) of namespace `rss` answered 200.
    pub list: Duration,
    /// From the spawn to the watch cache filled: `/readyz` and a selector LIST answered 200.
    pub filled: Duration,
    /// Its RSS settled once fresh, before any load, and once restarted (MB).
    pub fresh_mb: f64,
    pub restarted_mb: f64,
}

impl Start {
    /// The growth of the RSS per stored object (KB), from fresh to restarted.
    pub fn kb_per_object(&self) -> f64 {
        (self.restarted_mb - self.fresh_mb) * 1024.0 / (OBJECTS + 1_000) as f64
    }
}

/// Polls `target` from `started` until its `/readyz`, a consistent LIST and a LIST with a
/// selector answer 200: the time of each first 200.
async fn time_to_ready(started: Instant, target: &Target, resource: Resource) -> [Duration; 3] {
    let client = target.client(false);
    let collection = resource.collection("rss");
    let urls = [
        target.url("/readyz"),
        target.url(&format!("{collection}?limit=1")),
        target.url(&format!("{collection}?labelSelector=bench-probe%3Dnone")),
    ];
    let mut first: [Option<Duration>; 3] = [None; 3];
    loop {
        for (url, first) in urls.iter().zip(first.iter_mut()).filter(|(_, first)| first.is_none()) {
            if client.get(url).send().await.is_ok_and(|r| r.status() == 200) {
                *first = Some(started.elapsed());
            }
        }
        if let [Some(readyz), Some(list), Some(selector)] = first {
            return [readyz, list, selector];
        }
        assert!(started.elapsed() < Duration::from_secs(300), "not ready within 300 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The pid written in `file` of the control plane's directory, which must be there.
fn pid_of(cp: &ControlPlane, file: &str) -> u32 {
    cp.pid(file).unwrap_or_else(|| panic!("no pid in {file}"))
}

/// Stops process `pid` (SIGTERM) and waits until it is gone.
fn stop(pid: u32) {
    let _ = Command::new("kill").arg(pid.to_string()).status();
    let status = format!("/proc/{pid}/status");
    while std::fs::read_to_string(&status).is_ok_and(|s| !s.contains("State:\tZ")) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Restarts farm-apiserver on etcd, sample-apiserver and the kube-apiserver (the CRD's server),
/// each once the previous one is ready, with the objects of the create phase deleted first, so
/// that each starts with the [`OBJECTS`] of `rss` and the 1,000 of `small`. `fresh` is the RSS of
/// each when it was fresh (farm etcd, sample, CRD).
pub(super) async fn restarts(binary: &Path, cp: &ControlPlane, peers: &mut Peers, fresh: [f64; 3]) -> Vec<Start> {
    for i in [1, 3, 5] {
        let peer = &peers.peers[i];
        let url = peer.target.url(&peer.resource.collection("create"));
        let r = peer.target.client(false).delete(url).send().await.expect("deletecollection");
        assert!(r.status().is_success(), "{}: deletecollection {}", peer.name, r.status());
    }
    let mut starts = Vec::new();
    drop(peers.aggregated.take());
    let started = Instant::now();
    let flags: Vec<&str> = peers.etcd_flags.iter().map(String::as_str).collect();
    let (farm, ca, port) = aggregator::start_aggregated(binary, cp, &flags);
    let pid = farm.child.id();
    peers.aggregated = Some(farm);
    let target = Target {
        base: format!("https://127.0.0.1:{port}"),
        ca: ca.into_bytes(),
        credentials: cp.target.credentials.clone(),
    };
    starts.push(restarted("farm-apiserver on etcd", started, &target, peers.peers[1].resource, pid, fresh[0]).await);

    let sample = ("sample-apiserver", "sample-apiserver.pid", ("sample-apiserver.sh", "start"));
    starts.push(restart_by_script(cp, sample, &peers.peers[3], fresh[1]).await);
    let crd = ("kube-apiserver (the CRD)", "kube-apiserver.pid", ("control-plane.sh", "restart-kube-apiserver"));
    starts.push(restart_by_script(cp, crd, &peers.peers[5], fresh[2]).await);
    starts
}

/// Restarts the server named `name` whose pid is in `pid_file`, started again by `scripts/<script>
/// <command>`, and times it as `peer` reaches it.
async fn restart_by_script(
    cp: &ControlPlane,
    (name, pid_file, (script_name, command)): (&'static str, &str, (&str, &str)),
    peer: &Peer,
    fresh_mb: f64,
) -> Start {
    stop(pid_of(cp, pid_file));
    let started = Instant::now();
    cp.run_script(script_name, command);
    let pid = pid_of(cp, pid_file);
    restarted(name, started, &peer.target, peer.resource, pid, fresh_mb).await
}

/// The restart of one server started at `started`, timed and its RSS read once settled.
async fn restarted(
    name: &'static str,
    started: Instant,
    target: &Target,
    resource: Resource,
    pid: u32,
    fresh_mb: f64,
) -> Start {
    let [readyz, list, selector] = time_to_ready(started, target, resource).await;
    Start { name, readyz, list, filled: readyz.max(selector), fresh_mb, restarted_mb: settled_rss_mb(pid).await }
}

/// farm-apiserver in memory: a fresh standalone process's RSS (MB) before and after it is filled
/// with [`OBJECTS`].
pub(super) async fn memory_mode(binary: &Path) -> (f64, f64) {
    let (farm, _) = start(binary, &[]).await;
    let peer = Peer {
        name: "farm memory (fresh)",
        tag: "f",
        target: farm.target.clone(),
        resource: Resource::Llama { group: "farm.example.com" },
        pid: Some(farm.child.id()),
    };
    let before = settled(&[&peer]).await[0];
    fill(&peer, "rss", OBJECTS, "r").await;
    (before, settled(&[&peer]).await[0])
}

/// The memory and start tables.
pub(super) fn print(memory_mode: (f64, f64), filled: &[(&str, f64)], starts: &[Start]) {
    println!();
    println!(
        "| server | RSS fresh MB | RSS with 101,000 stored MB | KB per stored object | KB per object while filling |"
    );
    println!("|---|---|---|---|---|");
    let per_object = |before: f64, after: f64| (after - before) * 1024.0 / OBJECTS as f64;
    println!(
        "| farm-apiserver in memory (a fresh process filled) | {:.1} | {:.1} | {:.2} | {:.2} |",
        memory_mode.0,
        memory_mode.1,
        per_object(memory_mode.0, memory_mode.1),
        per_object(memory_mode.0, memory_mode.1)
    );
    for (start, (_, while_filling)) in starts.iter().zip(filled) {
        println!(
            "| {} (restarted) | {:.1} | {:.1} | {:.2} | {while_filling:.2} |",
            start.name,
            start.fresh_mb,
            start.restarted_mb,
            start.kb_per_object()
        );
    }
    println!();
    println!(
        "| start with 101,000 objects in etcd | to /readyz 200 (s) | to a consistent LIST 200 (s) | to its watch cache filled (s) |"
    );
    println!("|---|---|---|---|");
    for start in starts {
        let [readyz, list, filled] = [start.readyz, start.list, start.filled].map(|d| d.as_secs_f64());
        println!("| {} | {readyz:.2} | {list:.2} | {filled:.2} |", start.name);
    }
}
