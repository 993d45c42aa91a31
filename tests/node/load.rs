//! The load of the high-availability steps: kube-rs writers, a reader and a watch, and kubectl
//! writing and reading, through the aggregator from inside the node's network namespace; what
//! they saw, to compare with what was stored.

use crate::common::EVENT_DEADLINE;
use crate::common::node::{Node, kubectl_in_node};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::api::{WatchEvent, WatchParams};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The namespace of the load's Llamas.
pub const NS: &str = "stampede";

/// What the load saw.
#[derive(Default, Debug)]
pub struct Tally {
    /// Llamas whose create was acknowledged.
    pub acknowledged: BTreeSet<String>,
    /// Llamas a watch saw ADDED.
    pub watched: BTreeSet<String>,
    /// Requests answered with success.
    pub succeeded: u64,
    /// Failed requests by what failed them.
    pub failures: BTreeMap<String, u64>,
    /// Reads that missed a write acknowledged before they began.
    pub stale_reads: Vec<String>,
    /// Times the watch was resumed from its last resourceVersion.
    pub resumed: u64,
    /// When each failed request failed.
    pub failed_at: Vec<Instant>,
    /// Creates that failed but were stored: sent again, they were answered AlreadyExists.
    pub stored_though_failed: Vec<String>,
}

impl Tally {
    fn fail(&mut self, what: String) {
        *self.failures.entry(what).or_default() += 1;
        self.failed_at.push(Instant::now());
    }

    /// Every acknowledged write stored and seen by the watch, no read missing one: what a lost
    /// replica, member or node may never cost.
    pub fn assert_nothing_lost(&self, node: &Node) {
        assert!(self.stale_reads.is_empty(), "{:?}", self.stale_reads);
        let unseen: Vec<_> = self.acknowledged.iter().filter(|n| !self.watched.contains(*n)).collect();
        assert!(unseen.is_empty(), "acknowledged writes the watch never saw: {unseen:?}");
        let stored: BTreeSet<String> = node.json(&["llamas", "-n", NS])["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        let lost: Vec<_> = self.acknowledged.iter().filter(|n| !stored.contains(*n)).collect();
        assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    }

    /// No request failed but those in flight on an etcd member as it stopped (`stops` times
    /// during `what`): each a 503 "storage is unavailable" with Retry-After (etcd's "server
    /// stopped" or "leader changed": they may have been applied, so neither etcd's client nor
    /// ours sends them again), at most one a client of the load for each stop.
    pub fn assert_only_stopping_members_failed(&self, stops: u64, what: &str) {
        let failed: u64 = self.failures.values().sum();
        let storage = |what: &String| what.contains("503 ServiceUnavailable: storage is unavailable");
        assert!(
            failed <= stops * CLIENTS && self.failures.keys().all(storage),
            "{what} failed more than the requests in flight on the etcd members that stopped: {:?}",
            self.failures
        );
    }
}

/// What the kube-apiserver's HTTP/2 client fails when a replica it reaches through the Service's
/// cluster IP drains (its graceful GOAWAY, which any server's drain sends while the aggregator's
/// one connection to it carries the load): a create the client had taken that connection for
/// as the GOAWAY arrived. x/net/http2 closes the request's body when the connection turns
/// unusable, then net/http cannot send it again, and the aggregator answers 503 "error trying
/// to reach service: net/http: cannot rewind body after connection loss" (golang/go#62450; the
/// same 503 with a Go server: docs/installing.md). Such a create never reached a server: sent
/// again, none was AlreadyExists. At most one per writer (kube-rs's and kubectl's) for each of
/// the `drained` replicas; reads and watches have no body and are sent again by the client.
pub fn assert_only_goaway_races(tally: &Tally, kubectl: &KubectlTally, drained: u64) {
    let race = |f: &str| f.contains("net/http: cannot rewind bo") || f.contains("http2: Transport: cannot retr");
    let ours = tally.failures.iter().all(|(f, _)| f.starts_with("create: 503") && race(f));
    let kubectls = kubectl.failures.iter().all(|f| f.contains("error when creating") && race(f));
    let failed = tally.failures.values().sum::<u64>() + kubectl.failures.len() as u64;
    assert!(
        ours && kubectls && failed <= drained * (WRITERS + 1),
        "failures other than creates lost to a drain's GOAWAY, or more than one a writer each drain: {:?} {:?}",
        tally.failures,
        kubectl.failures
    );
    let stored = [&tally.stored_though_failed[..], &kubectl.stored_though_failed[..]].concat();
    assert!(stored.is_empty(), "failed creates that were stored: {stored:?}");
}

/// The load's writers.
const WRITERS: u64 = 3;
/// The load's clients that have a request in flight at any time: the writers, a reader, a watch.
const CLIENTS: u64 = WRITERS + 2;

/// What failed a request: the Status's code, reason and the start of its message, or the
/// connection's error.
pub fn failure(error: &kube::Error) -> String {
    match error {
        // (What our server says, shortened: the storage's failure, say; the aggregator's 503s
        // say only "error trying to reach service".)
        kube::Error::Api(status) => {
            format!("{} {}: {}", status.code, status.reason, status.message.chars().take(60).collect::<String>())
        }
        other => format!("connection: {}", other.to_string().chars().take(80).collect::<String>()),
    }
}

pub fn llamas(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("farm.example.com", "v1", "Llama");
    Api::namespaced_with(client, NS, &ApiResource::from_gvk_with_plural(&gvk, "llamas"))
}

fn rv_of(object: &DynamicObject) -> u64 {
    object.metadata.resource_version.as_deref().and_then(|rv| rv.parse().ok()).unwrap_or_default()
}

/// The load: writers, a reader and a watch (kube-rs, inside the node's namespace), until `stop`;
/// then the watch goes on until it has seen every acknowledged write.
pub struct Load {
    pub tally: Arc<Mutex<Tally>>,
    stop: Arc<AtomicBool>,
    running: std::thread::JoinHandle<()>,
}

impl Load {
    /// Writers, a reader and a watch; the writers' Llamas are named after `run` (one load a run).
    pub fn start(node: &Node, owner: &str, run: &str) -> Self {
        let (tally, stop) = (Arc::new(Mutex::new(Tally::default())), Arc::new(AtomicBool::new(false)));
        let (t, s, kubeconfig, owner) = (tally.clone(), stop.clone(), node.dir.join("kubeconfig"), owner.to_string());
        let run = run.to_string();
        let running = node.in_netns(move || async move {
            let api = llamas(Node::kube_client(kubeconfig).await);
            let since = api.list(&ListParams::default()).await.expect("the first list").metadata.resource_version;
            let mut tasks: Vec<_> = (0..WRITERS)
                .map(|id| writer(api.clone(), format!("{run}-w{id}"), owner.clone(), t.clone(), s.clone()))
                .collect();
            tasks.push(Box::pin(reader(api.clone(), t.clone(), s.clone())));
            tasks.push(Box::pin(watch(api, since.unwrap_or_default(), t, s)));
            futures::future::join_all(tasks).await;
        });
        Self { tally, stop, running }
    }

    /// Waits until `more` further writes are acknowledged.
    pub fn until_more_writes(&self, more: usize) {
        let start = self.tally.lock().unwrap().acknowledged.len();
        let deadline = Instant::now() + EVENT_DEADLINE;
        while self.tally.lock().unwrap().acknowledged.len() < start + more {
            assert!(
                Instant::now() < deadline,
                "no {more} more writes acknowledged: {:?}",
                self.tally.lock().unwrap().failures
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn stop(self) -> Tally {
        self.stop.store(true, Ordering::SeqCst);
        self.running.join().expect("the load");
        Arc::try_unwrap(self.tally).expect("the load's tally").into_inner().unwrap()
    }
}

type Task = std::pin::Pin<Box<dyn Future<Output = ()>>>;

/// Creates Llamas owned by the ConfigMap `owner` one after another; a failed create is sent
/// again, and an AlreadyExists after a failure means the failed one was stored.
fn writer(api: Api<DynamicObject>, id: String, owner: String, tally: Arc<Mutex<Tally>>, stop: Arc<AtomicBool>) -> Task {
    Box::pin(async move {
        for n in 0.. {
            let name = format!("{id}-{n}");
            let mut llama = json!({
                "apiVersion": "farm.example.com/v1", "kind": "Llama",
                "metadata": {"name": name},
                "spec": {"weight": 1 + n % 500, "height": 150},
            });
            // One in 25 owned by the ConfigMap, with a label to find them by: the garbage
            // collector deletes a few Llamas a second (the kube-controller-manager's default
            // client rate limit of 20 requests a second, shared with its informers' lists).
            if n % 25 == 0 {
                llama["metadata"]["labels"] = json!({"owned": "true"});
                llama["metadata"]["ownerReferences"] =
                    json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "herd", "uid": owner}]);
            }
            let llama: DynamicObject = serde_json::from_value(llama).unwrap();
            let mut failed = false;
            loop {
                let created = api.create(&PostParams::default(), &llama).await;
                let mut tally = tally.lock().unwrap();
                match created {
                    Ok(_) => {
                        tally.succeeded += 1;
                        tally.acknowledged.insert(name);
                        break;
                    }
                    Err(kube::Error::Api(status)) if failed && status.code == 409 => {
                        tally.stored_though_failed.push(name.clone());
                        tally.acknowledged.insert(name);
                        break;
                    }
                    Err(error) => tally.fail(format!("create: {}", failure(&error))),
                }
                failed = true;
                if stop.load(Ordering::SeqCst) {
                    return;
                }
            }
            if stop.load(Ordering::SeqCst) {
                return;
            }
        }
    })
}

/// Lists the Llamas again and again: each list must hold every write acknowledged before it began.
async fn reader(api: Api<DynamicObject>, tally: Arc<Mutex<Tally>>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        let before: Vec<String> = tally.lock().unwrap().acknowledged.iter().cloned().collect();
        let listed = api.list(&ListParams::default()).await;
        let mut tally = tally.lock().unwrap();
        match listed {
            Ok(list) => {
                tally.succeeded += 1;
                let names: BTreeSet<_> = list.items.iter().filter_map(|o| o.metadata.name.clone()).collect();
                let missing: Vec<_> = before.into_iter().filter(|n| !names.contains(n)).collect();
                if !missing.is_empty() {
                    tally
                        .stale_reads
                        .push(format!("a list at {:?} missed {missing:?}", list.metadata.resource_version));
                }
            }
            Err(error) => tally.fail(format!("list: {}", failure(&error))),
        }
    }
}

/// Watches from `since`, resuming from the last resourceVersion seen whenever the watch ends
/// or fails, until `stop` and every acknowledged write seen (or [`EVENT_DEADLINE`] after `stop`).
async fn watch(api: Api<DynamicObject>, since: String, tally: Arc<Mutex<Tally>>, stop: Arc<AtomicBool>) {
    let (mut rv, mut last) = (since, 0u64);
    let mut stopped_at: Option<Instant> = None;
    loop {
        if stop.load(Ordering::SeqCst) {
            let seen_all = {
                let t = tally.lock().unwrap();
                t.acknowledged.iter().all(|n| t.watched.contains(n))
            };
            let since_stop = stopped_at.get_or_insert_with(Instant::now).elapsed();
            if seen_all || since_stop > EVENT_DEADLINE {
                return;
            }
        }
        let stream = match api.watch(&WatchParams::default().timeout(20), &rv).await {
            Ok(stream) => stream,
            Err(error) => {
                tally.lock().unwrap().fail(format!("watch: {}", failure(&error)));
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream);
        while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(1), stream.next()).await {
            let mut t = tally.lock().unwrap();
            let object = match event {
                Ok(WatchEvent::Added(o)) => {
                    t.watched.insert(o.metadata.name.clone().unwrap_or_default());
                    o
                }
                Ok(WatchEvent::Modified(o) | WatchEvent::Deleted(o)) => o,
                Ok(WatchEvent::Bookmark(b)) => {
                    rv = b.metadata.resource_version;
                    continue;
                }
                Ok(WatchEvent::Error(status)) => {
                    t.fail(format!("watch event: {} {}", status.code, status.reason));
                    break;
                }
                Err(error) => {
                    t.fail(format!("watch stream: {}", failure(&error)));
                    break;
                }
            };
            let at = rv_of(&object);
            assert!(at > last, "watch events out of order: {at} after {last}");
            (last, rv) = (at, at.to_string());
        }
        tally.lock().unwrap().resumed += 1;
    }
}

/// What kubectl did: the Llamas it created, its reads that succeeded, its failures' messages,
/// and the creates that failed but were stored (AlreadyExists when sent again).
#[derive(Default)]
pub struct KubectlTally {
    pub created: Vec<String>,
    pub reads: u64,
    pub failures: Vec<String>,
    pub stored_though_failed: Vec<String>,
}

/// kubectl creating a Llama, then listing them, over and over until `stop`; a failed create is
/// sent again, and AlreadyExists after a failure means the failed one was stored.
pub fn kubectl_client(node: &Node, run: &str, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<KubectlTally> {
    let (kubeconfig, run) = (node.dir.join("kubeconfig"), run.to_string());
    std::thread::spawn(move || {
        let kubectl = |args: &[&str], stdin: Option<String>| {
            let in_namespace = [&["-n", NS], args].concat();
            let (ok, _, err) = kubectl_in_node(&kubeconfig, &in_namespace, stdin.as_deref());
            (ok, err)
        };
        let mut tally = KubectlTally::default();
        for n in 0.. {
            let name = format!("{run}-k-{n}");
            let llama = json!({"apiVersion": "farm.example.com/v1", "kind": "Llama", "metadata": {"name": name}, "spec": {"weight": 7, "height": 7}});
            let mut failed = false;
            loop {
                match kubectl(&["create", "-f", "-"], Some(llama.to_string())) {
                    (true, _) => break tally.created.push(name.clone()),
                    (false, err) if failed && err.contains("AlreadyExists") => {
                        tally.stored_though_failed.push(name.clone());
                        break tally.created.push(name.clone());
                    }
                    (false, err) => tally.failures.push(err),
                }
                failed = true;
            }
            match kubectl(&["get", "llamas", "-o", "name"], None) {
                (true, _) => tally.reads += 1,
                (false, err) => tally.failures.push(err),
            }
            if stop.load(Ordering::SeqCst) {
                return tally;
            }
        }
        tally
    })
}
