//! The high-availability install on the node, as a user makes it: one
//! `kubectl apply -k` of manifests/ha (three replicas over an etcd StatefulSet of three members
//! on the node's persistent volumes, the serving certificate managed by the replicas, etcd's by
//! `farm-apiserver certs`). Then, under load
//! through the aggregator (kube-rs writers, readers and a watch; kubectl writing and reading; the
//! kube-controller-manager's garbage collector following every Llama): a `kubectl rollout
//! restart` loses no acknowledged write and no watch event and fails no request, and a killed
//! replica's container is measured until every request succeeds again.

use crate::common::EVENT_DEADLINE;
use crate::common::node::{Node, ROOT, eventually, eventually_within, kubectl_in_node};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::api::{WatchEvent, WatchParams};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The namespace of the load's Llamas.
const NS: &str = "stampede";
const SERVER: &str = "app.kubernetes.io/name=farm-apiserver";

/// Installs manifests/ha on `node`, loads it through a rollout and a crash, and removes it.
pub fn with_etcd_and_three_replicas_a_rollout_loses_nothing_and_a_killed_replica_recovers(node: &Node) {
    let dir = tempfile::tempdir().unwrap();
    let ha = ha_overlay(dir.path());
    let ha = ha.to_str().unwrap();
    uninstall(node, ha);
    let installed = Instant::now();
    apply_overlay(node, ha);
    for workload in ["statefulset/etcd", "deployment/farm-apiserver"] {
        node.must(&["-n", "farm-system", "rollout", "status", workload, "--timeout=180s"]);
    }
    eventually("kubectl get llamas to answer", || node.kubectl(&["get", "llamas", "-A"]).0.then_some(()));
    eprintln!("from kubectl apply -k to the first kubectl get llamas: {:.1} s", installed.elapsed().as_secs_f64());
    each_replica_is_ready_with_etcd(node);

    node.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).to_string());
    node.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "herd", "namespace": NS}}).to_string(),
    );
    let owner = node.json(&["configmap", "-n", NS, "herd"])["metadata"]["uid"].as_str().unwrap().to_string();
    // Through the endpoints (`--enable-aggregator-routing=true`, the node's default) and through
    // the Service's cluster IP and kube-proxy (the kube-apiserver's default).
    for routing in ["true", "false"] {
        aggregator_routing(node, routing);
        a_rollout_restart_under_load_loses_nothing(node, &owner, routing);
        a_killed_replica_is_measured_until_every_request_succeeds(node, routing);
    }
    aggregator_routing(node, "true");

    // The garbage collector's informers saw every Llama: deleting their owner deletes them all.
    let owned = node.json(&["llamas", "-n", NS, "-l", "owned=true"])["items"].as_array().unwrap().len();
    node.must(&["delete", "configmap", "-n", NS, "herd"]);
    let deleting = Instant::now();
    // Within three minutes: after the quick start of the same test (in-memory Llamas, at other
    // resourceVersions), the controller-manager's informers of Llamas relist with a
    // resourceVersion this etcd has not reached; each list is answered 504 "Too large resource
    // version" after 3 s, as the kube-apiserver answers it, and client-go retries it 10 times
    // before it lists afresh (about 43 s, seen in the controller-manager's log).
    eventually_within("the garbage collector to delete every Llama of the owner", Duration::from_secs(180), || {
        node.json(&["llamas", "-n", NS, "-l", "owned=true"])["items"].as_array().unwrap().is_empty().then_some(())
    });
    eprintln!("the garbage collector deleted the {owned} owned Llamas in {:.1} s", deleting.elapsed().as_secs_f64());
    node.must(&["delete", "namespace", NS, "--timeout=60s"]);
    uninstall(node, ha);
}

/// The overlay as a user has it in a checkout, nothing generated (etcd's Secrets are made by its
/// Job), in a folder of the test.
fn ha_overlay(dir: &Path) -> PathBuf {
    crate::common::copy_of_the_manifests(dir).join("ha")
}

/// `kubectl apply -k`. Kubernetes 1.20 (the node's) serves PodDisruptionBudgets as
/// `policy/v1beta1` only, where every release since 1.25 serves `policy/v1` only: there, the
/// same two budgets are applied at the older version, and nothing else may have failed.
fn apply_overlay(node: &Node, ha: &str) {
    if kubectl_k(node, &["apply", "-k", ha]) {
        let rendered = node.must(&["kustomize", ha]);
        for doc in rendered.split("\n---\n").filter(|d| d.contains("kind: PodDisruptionBudget")) {
            node.apply(&doc.replace("apiVersion: policy/v1\n", "apiVersion: policy/v1beta1\n"));
        }
    }
}

/// `kubectl VERB -k DIR`; true when it failed for the two `policy/v1` PodDisruptionBudgets that
/// Kubernetes 1.20 cannot map, and for nothing else (discovery of our group failing while the
/// server's Pods go away, reported by kubectl on the way, aside).
fn kubectl_k(node: &Node, args: &[&str]) -> bool {
    let (ok, out, err) = node.kubectl(args);
    if ok {
        return false;
    }
    let v1 = r#"no matches for kind "PodDisruptionBudget" in version "policy/v1""#;
    let noise = |l: &&str| {
        l.contains("ensure CRDs are installed first") || l.contains("couldn't get resource list for farm.example.com")
    };
    let refused: Vec<_> = err.lines().filter(|l| !noise(l)).collect();
    assert!(
        err.matches(v1).count() == 2 && refused.iter().all(|l| l.contains(v1)),
        "kubectl {args:?} failed: {err}{out}"
    );
    true
}

/// Removes the install and its etcd's data (the claims' volumes emptied for the next install).
fn uninstall(node: &Node, ha: &str) {
    kubectl_k(node, &["delete", "-k", ha, "--ignore-not-found", "--wait=true"]);
    // (kubectl does not wait when some of its objects failed.)
    node.must(&["delete", "namespace", "farm-system", NS, "--ignore-not-found", "--wait=true"]);
    let recycled = node.exec(&["bash", &format!("{ROOT}/scripts/node.sh"), "recycle"], None);
    assert!(recycled.status.success(), "{}", String::from_utf8_lossy(&recycled.stderr));
}

/// Restarts the node's kube-apiserver with `--enable-aggregator-routing=<routing>` (unless it
/// runs so) and waits until the group answers through it.
fn aggregator_routing(node: &Node, routing: &str) {
    let out =
        Command::new("bash").arg(format!("{ROOT}/scripts/node.sh")).args(["aggregator-routing", routing]).output();
    let out = out.expect("run scripts/node.sh aggregator-routing");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eventually("the group to answer through the kube-apiserver", || {
        node.kubectl(&["get", "llamas", "-A"]).0.then_some(())
    });
}

/// The ready replica whose audit log (its standard output) recorded the most lists in the last
/// two seconds: (its Pod's name, its container's ID, the lists of each ready replica).
fn busiest_replica(node: &Node) -> (String, String, Vec<usize>) {
    let ready = |p: &&Value| {
        p["status"]["containerStatuses"][0]["ready"] == true && p["metadata"]["deletionTimestamp"].is_null()
    };
    let pods = replicas(node);
    let counted: Vec<(usize, &Value)> = pods
        .iter()
        .filter(ready)
        .map(|pod| {
            let name = pod["metadata"]["name"].as_str().unwrap();
            let log = node.must(&["-n", "farm-system", "logs", name, "--since=2s"]);
            (log.lines().filter(|l| l.contains(r#""verb":"list""#)).count(), pod)
        })
        .collect();
    let (_, pod) = counted.iter().max_by_key(|(lists, _)| *lists).expect("a ready replica");
    let container = pod["status"]["containerStatuses"][0]["containerID"].as_str().unwrap();
    let name = pod["metadata"]["name"].as_str().unwrap().to_string();
    (name, container.trim_start_matches("containerd://").to_string(), counted.iter().map(|(n, _)| *n).collect())
}

/// The server's Pods, as JSON.
fn replicas(node: &Node) -> Vec<Value> {
    node.json(&["pods", "-n", "farm-system", "-l", SERVER])["items"].as_array().unwrap().clone()
}

fn each_replica_is_ready_with_etcd(node: &Node) {
    let claims = node.json(&["pvc", "-n", "farm-system"]);
    let bound = claims["items"].as_array().unwrap().iter().filter(|c| c["status"]["phase"] == "Bound").count();
    assert_eq!(bound, 3, "a volume per etcd member: {claims}");
    let pods = replicas(node);
    assert_eq!(pods.len(), 3);
    for pod in pods {
        let url = format!("https://{}:8443/readyz?verbose", pod["status"]["podIP"].as_str().unwrap());
        let out = node.exec(&["curl", "-sk", &url], None);
        let text = String::from_utf8_lossy(&out.stdout);
        let ready = ["[+]etcd ok", "[+]watch-cache-llamas ok", "readyz check passed"];
        assert!(ready.iter().all(|check| text.contains(check)), "{text}");
    }
}

/// What the load saw.
#[derive(Default, Debug)]
struct Tally {
    /// Llamas whose create was acknowledged.
    acknowledged: BTreeSet<String>,
    /// Llamas a watch saw ADDED.
    watched: BTreeSet<String>,
    /// Requests answered with success.
    succeeded: u64,
    /// Failed requests by what failed them.
    failures: BTreeMap<String, u64>,
    /// Reads that missed a write acknowledged before they began.
    stale_reads: Vec<String>,
    /// Times the watch was resumed from its last resourceVersion.
    resumed: u64,
}

impl Tally {
    fn fail(&mut self, what: String) {
        *self.failures.entry(what).or_default() += 1;
    }
}

/// What failed a request: the Status's code and reason, or the connection's error.
fn failure(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{} {}", status.code, status.reason),
        other => format!("connection: {}", other.to_string().chars().take(80).collect::<String>()),
    }
}

fn llamas(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("farm.example.com", "v1", "Llama");
    Api::namespaced_with(client, NS, &ApiResource::from_gvk_with_plural(&gvk, "llamas"))
}

fn rv_of(object: &DynamicObject) -> u64 {
    object.metadata.resource_version.as_deref().and_then(|rv| rv.parse().ok()).unwrap_or_default()
}

/// The load: writers, a reader and a watch (kube-rs, inside the node's namespace), until `stop`;
/// then the watch goes on until it has seen every acknowledged write.
struct Load {
    tally: Arc<Mutex<Tally>>,
    stop: Arc<AtomicBool>,
    running: std::thread::JoinHandle<()>,
}

impl Load {
    /// Writers, a reader and a watch; the writers' Llamas are named after `run` (one load a run).
    fn start(node: &Node, owner: &str, run: &str) -> Self {
        let (tally, stop) = (Arc::new(Mutex::new(Tally::default())), Arc::new(AtomicBool::new(false)));
        let (t, s, kubeconfig, owner) = (tally.clone(), stop.clone(), node.dir.join("kubeconfig"), owner.to_string());
        let run = run.to_string();
        let running = node.in_netns(move || async move {
            let api = llamas(Node::kube_client(kubeconfig).await);
            let since = api.list(&ListParams::default()).await.expect("the first list").metadata.resource_version;
            let mut tasks: Vec<_> = (0..3)
                .map(|id| writer(api.clone(), format!("{run}-w{id}"), owner.clone(), t.clone(), s.clone()))
                .collect();
            tasks.push(Box::pin(reader(api.clone(), t.clone(), s.clone())));
            tasks.push(Box::pin(watch(api, since.unwrap_or_default(), t, s)));
            futures::future::join_all(tasks).await;
        });
        Self { tally, stop, running }
    }

    /// Waits until `more` further writes are acknowledged.
    fn until_more_writes(&self, more: usize) {
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

    fn stop(self) -> Tally {
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

/// What kubectl did: the Llamas it created, its reads that succeeded, its failures' messages.
#[derive(Default)]
struct KubectlTally {
    created: Vec<String>,
    reads: u64,
    failures: Vec<String>,
}

/// kubectl creating a Llama, then listing them, over and over until `stop`; a failed create is
/// sent again, and AlreadyExists after a failure means the failed one was stored.
fn kubectl_client(node: &Node, run: &str, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<KubectlTally> {
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
                    (false, err) if failed && err.contains("AlreadyExists") => break tally.created.push(name.clone()),
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

fn a_rollout_restart_under_load_loses_nothing(node: &Node, owner: &str, routing: &str) {
    let before: BTreeSet<String> = replicas(node).iter().map(|p| p["metadata"]["name"].to_string()).collect();
    let run = format!("routing-{routing}");
    let load = Load::start(node, owner, &run);
    let kubectl_stop = Arc::new(AtomicBool::new(false));
    let kubectl = kubectl_client(node, &run, kubectl_stop.clone());
    load.until_more_writes(50);
    let restarted = Instant::now();
    node.must(&["-n", "farm-system", "rollout", "restart", "deployment/farm-apiserver"]);
    node.must(&["-n", "farm-system", "rollout", "status", "deployment/farm-apiserver", "--timeout=180s"]);
    // The old replicas' servers have exited (their Pods may linger: the kubelet 1.20 sometimes
    // removes a stopped container before it records the kill, and takes a minute more to
    // delete the Pod; nothing of it serves by then).
    eventually("the old replicas to have stopped", || {
        let pods = replicas(node);
        let running = |p: &&Value| p["status"]["containerStatuses"][0]["state"]["running"].is_object();
        let names: BTreeSet<String> = pods.iter().filter(running).map(|p| p["metadata"]["name"].to_string()).collect();
        (names.len() == 3 && names.is_disjoint(&before)).then_some(())
    });
    let rolled = restarted.elapsed();
    load.until_more_writes(50);
    kubectl_stop.store(true, Ordering::SeqCst);
    let by_kubectl = kubectl.join().unwrap();
    // kubectl's writes are acknowledged writes too: the watch goes on until it has seen them.
    load.tally.lock().unwrap().acknowledged.extend(by_kubectl.created.iter().cloned());
    let tally = load.stop();
    eprintln!(
        "aggregator routing {routing}: rollout restart in {:.1} s under load: {} writes acknowledged ({} by kubectl), {} kube-rs requests \
         and {} kubectl reads succeeded, failures {:?} and {:?}, watch resumed {} times",
        rolled.as_secs_f64(),
        tally.acknowledged.len(),
        by_kubectl.created.len(),
        tally.succeeded,
        by_kubectl.reads,
        tally.failures,
        by_kubectl.failures,
        tally.resumed,
    );
    assert!(tally.stale_reads.is_empty(), "{:?}", tally.stale_reads);
    let unseen: Vec<_> = tally.acknowledged.iter().filter(|n| !tally.watched.contains(*n)).collect();
    assert!(unseen.is_empty(), "acknowledged writes the watch never saw: {unseen:?}");
    let stored: BTreeSet<String> = node.json(&["llamas", "-n", NS])["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let lost: Vec<_> = tally.acknowledged.iter().filter(|n| !stored.contains(*n)).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    assert!(
        tally.failures.is_empty() && by_kubectl.failures.is_empty(),
        "{:?} {:?}",
        tally.failures,
        by_kubectl.failures
    );
}

/// When a request ended, and what failed it, if anything.
type Outcome = (Instant, Option<String>);

/// One replica's container killed (SIGKILL, as the kernel's OOM killer does), the one serving
/// most of the reader's requests (through a cluster IP, the aggregator's connection reaches one
/// replica): requests through the aggregator go on until twenty in a row succeeded after the
/// replica was ready again; the time from the kill to the last failed request is measured.
fn a_killed_replica_is_measured_until_every_request_succeeds(node: &Node, routing: &str) {
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let (s, o, kubeconfig) = (stop.clone(), outcomes.clone(), node.dir.join("kubeconfig"));
    let reading = node.in_netns(move || async move {
        let api = llamas(Node::kube_client(kubeconfig).await);
        while !s.load(Ordering::SeqCst) {
            let listed = api.list(&ListParams::default().limit(1)).await;
            o.lock().unwrap().push((Instant::now(), listed.err().map(|e| failure(&e))));
        }
    });
    eventually("the reader to be under way", || (outcomes.lock().unwrap().len() >= 20).then_some(()));
    let (name, container, served) = busiest_replica(node);
    let socket = node.dir.join("containerd.sock");
    let killed = Instant::now();
    let out = Command::new(node.env("CTR"))
        .args(["--address", socket.to_str().unwrap(), "-n", "k8s.io", "task", "kill", "-s", "SIGKILL", &container])
        .output()
        .expect("run ctr");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eventually("the killed replica to be restarted and ready", || {
        let pod = node.json(&["pod", "-n", "farm-system", &name]);
        let status = &pod["status"]["containerStatuses"][0];
        (status["restartCount"] == 1 && status["ready"] == true).then_some(())
    });
    let ready_again = killed.elapsed();
    // The reader goes on until twenty requests in a row that ended after that moment succeeded.
    eventually("twenty requests in a row to succeed after the replica was back", || {
        let outcomes = outcomes.lock().unwrap();
        let after: Vec<_> = outcomes.iter().filter(|(at, _)| at.duration_since(killed) > ready_again).collect();
        (after.len() >= 20 && after.iter().rev().take(20).all(|(_, f)| f.is_none())).then_some(())
    });
    stop.store(true, Ordering::SeqCst);
    reading.join().unwrap();
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    let failed: Vec<_> = outcomes.iter().filter(|(_, f)| f.is_some()).collect();
    let last_failure = failed.last().map(|(at, _)| at.duration_since(killed));
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, f) in &failed {
        *kinds.entry(f.as_deref().unwrap()).or_default() += 1;
    }
    eprintln!(
        "aggregator routing {routing}: a replica killed (it served {served:?} of the reads of the last 2 s): {} of {} \
         requests failed {kinds:?}, the last {last_failure:?} after the kill; the replica restarted and ready after {:.1} s",
        failed.len(),
        outcomes.len(),
        ready_again.as_secs_f64()
    );
    // What a killed replica costs, bounded: only the aggregator's 503s for the dead replica, none
    // once the restarted one is ready (plus the time endpoints take to follow, a few seconds).
    assert!(kinds.keys().all(|k| k.starts_with("503")), "failures other than the aggregator's 503: {kinds:?}");
    if let Some(last) = last_failure {
        assert!(
            last <= ready_again + Duration::from_secs(5),
            "a failure {last:?} after the kill, {ready_again:?} ready"
        );
    }
}
