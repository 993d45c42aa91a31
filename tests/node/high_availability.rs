//! The high-availability install on the two nodes, as a user makes it: one `kubectl apply -k`
//! of manifests/ha (two replicas, one a node, over an etcd StatefulSet of three members spread
//! over the nodes' persistent volumes, the serving certificate managed by the replicas, etcd's
//! made by a Job). Then, under load through the aggregator (kube-rs writers, readers and a
//! watch; kubectl writing and reading; the kube-controller-manager's garbage collector following
//! every Llama): a `kubectl rollout restart` loses no acknowledged write and no watch event and
//! fails no request with the aggregator's endpoint routing (through the cluster IP, only creates
//! the kube-apiserver's client loses to a drain's GOAWAY: [`load::assert_only_goaway_races`]), a
//! killed replica's container is measured until every request succeeds again, and the second
//! node is drained and then lost ([`two_nodes`]).

use super::load::{self, Load, NS, failure, kubectl_client, llamas};
use super::{etcd_certificates, etcd_operations, two_nodes};
use crate::common::node::{Node, eventually, eventually_within};
use kube::api::ListParams;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const SERVER: &str = "app.kubernetes.io/name=farm-apiserver";
/// The replicas of manifests/ha: one a node.
const REPLICAS: usize = 2;

/// Installs manifests/ha on `node`, loads it through rollouts, a crash, a drain and a node's
/// loss, and removes it.
pub fn with_etcd_and_two_replicas_nothing_acknowledged_is_lost_through_rollouts_crashes_drains_and_a_lost_node(
    node: &Node,
) {
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
    two_nodes::each_node_holds_one_replica_and_the_second_one_etcd_member(node);
    etcd_is_defragmented_by_its_cronjob(node);
    etcd_operations::new_members_join_the_existing_cluster_from_now_on(node);

    node.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).to_string());
    node.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "herd", "namespace": NS}}).to_string(),
    );
    let owner = node.json(&["configmap", "-n", NS, "herd"])["metadata"]["uid"].as_str().unwrap().to_string();
    etcd_certificates::a_ca_rotation_under_load_loses_nothing(node, &owner);
    // The second node drained, then lost, through the endpoints (`--enable-aggregator-routing=true`,
    // the node's default): first, while the kube-apiserver has run for a while. (Drained 16 s
    // after it restarted, the evicted replica kept its endpoint for over 20 s: the
    // controller-manager's informers had not yet followed pods again; that measured the restart.)
    two_nodes::a_drain_of_the_second_node_respects_the_budgets_and_loses_nothing(node, &owner);
    two_nodes::losing_the_second_node_fails_requests_only_until_its_endpoints_go(node, &owner, "true");
    // (Also before the kube-apiserver restarts: once, right after, the scheduler placed the
    // member's new Pod on its old claim, deleted but not yet so in its cache.)
    etcd_operations::a_member_whose_volume_is_lost_is_replaced(node);
    // Through the endpoints and through the Service's cluster IP and kube-proxy (the
    // kube-apiserver's default).
    for routing in ["true", "false"] {
        aggregator_routing(node, routing);
        a_rollout_restart_under_load_loses_nothing(node, &owner, routing);
        a_killed_replica_is_measured_until_every_request_succeeds(node, routing);
    }
    two_nodes::losing_the_second_node_fails_requests_only_until_its_endpoints_go(node, &owner, "false");
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
    etcd_operations::a_snapshot_restores_what_was_stored_when_it_was_taken(node, ha, NS);
    node.must(&["delete", "namespace", NS, "--timeout=60s"]);
    uninstall(node, ha);
}

/// The CronJob `etcd-defrag`, run now as its comment says: each member defragmented in turn.
fn etcd_is_defragmented_by_its_cronjob(node: &Node) {
    node.must(&["-n", "farm-system", "create", "job", "--from=cronjob/etcd-defrag", "etcd-defrag-now"]);
    node.must(&["-n", "farm-system", "wait", "--for=condition=Complete", "job/etcd-defrag-now", "--timeout=120s"]);
    let log = node.must(&["-n", "farm-system", "logs", "job/etcd-defrag-now"]);
    let members = log.lines().filter(|l| l.starts_with("Finished defragmenting etcd member")).count();
    assert_eq!(members, 3, "{log}");
    node.must(&["-n", "farm-system", "delete", "job", "etcd-defrag-now"]);
}

/// The overlay as a user has it in a checkout, nothing generated (etcd's Secrets are made by its
/// Job), in a folder of the test.
fn ha_overlay(dir: &Path) -> PathBuf {
    crate::common::copy_of_the_manifests(dir).join("ha")
}

/// `kubectl apply -k`. On a node of Kubernetes 1.20 (`K8S_VERSION=1.20…`; the default is
/// 1.37.2), which serves PodDisruptionBudgets as `policy/v1beta1` only where every release
/// since 1.25 serves `policy/v1` only, the same two budgets are applied at the older version,
/// and nothing else may have failed.
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
    node.script(&["recycle"]);
}

/// Restarts the node's kube-apiserver with `--enable-aggregator-routing=<routing>` (unless it
/// runs so) and waits until the group answers through it.
pub fn aggregator_routing(node: &Node, routing: &str) {
    node.script(&["aggregator-routing", routing]);
    eventually("the group to answer through the kube-apiserver", || {
        node.kubectl(&["get", "llamas", "-A"]).0.then_some(())
    });
    endpoints_follow_pods_again(node);
}

/// The endpoints of the EndpointSlices of the Service `service` in farm-system.
pub fn endpoints(node: &Node, service: &str) -> Vec<Value> {
    let selector = format!("kubernetes.io/service-name={service}");
    let slices = node.json(&["endpointslices", "-n", "farm-system", "-l", &selector]);
    let slices = slices["items"].as_array().unwrap().iter();
    slices.flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default()).collect()
}

/// After the kube-apiserver restarted, the controller-manager's informers resume with a delay:
/// a rollout started meanwhile left the Service without a ready endpoint for seconds (247
/// requests refused at its cluster IP in one run), which measured the restart, not the
/// rollout. A label put on a replica now must show in a probe Service's endpoints first.
fn endpoints_follow_pods_again(node: &Node) {
    let pod = replicas(node)[0]["metadata"]["name"].as_str().unwrap().to_string();
    let nonce = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos().to_string();
    let probe = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "endpoints-probe", "namespace": "farm-system"},
        "spec": {"selector": {"endpoints-probe": nonce}, "ports": [{"port": 443, "targetPort": 8443}]}});
    node.apply(&probe.to_string());
    node.must(&["-n", "farm-system", "label", "pod", &pod, &format!("endpoints-probe={nonce}"), "--overwrite"]);
    eventually_within("the endpoints to follow the replicas' labels", Duration::from_secs(120), || {
        endpoints(node, "endpoints-probe").iter().any(|e| e["targetRef"]["name"] == pod.as_str()).then_some(())
    });
    node.must(&["-n", "farm-system", "delete", "service", "endpoints-probe"]);
    node.must(&["-n", "farm-system", "label", "pod", &pod, "endpoints-probe-"]);
}

/// The ready replica whose audit log (its standard output) recorded the most lists in the last
/// two seconds: (its Pod's name, its node's, its container's ID, the lists of each ready replica).
fn busiest_replica(node: &Node) -> (String, String, String, Vec<usize>) {
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
    let on = pod["spec"]["nodeName"].as_str().unwrap().to_string();
    let container = container.trim_start_matches("containerd://").to_string();
    (name, on, container, counted.iter().map(|(n, _)| *n).collect())
}

/// The server's Pods, as JSON.
pub fn replicas(node: &Node) -> Vec<Value> {
    node.json(&["pods", "-n", "farm-system", "-l", SERVER])["items"].as_array().unwrap().clone()
}

fn each_replica_is_ready_with_etcd(node: &Node) {
    let claims = node.json(&["pvc", "-n", "farm-system"]);
    let bound = claims["items"].as_array().unwrap().iter().filter(|c| c["status"]["phase"] == "Bound").count();
    assert_eq!(bound, 3, "a volume per etcd member: {claims}");
    let pods = replicas(node);
    assert_eq!(pods.len(), REPLICAS);
    for pod in pods {
        let url = format!("https://{}:8443/readyz?verbose", pod["status"]["podIP"].as_str().unwrap());
        let out = node.exec(&["curl", "-sk", &url], None);
        let text = String::from_utf8_lossy(&out.stdout);
        let ready = ["[+]etcd ok", "[+]watch-cache-llamas ok", "readyz check passed"];
        assert!(ready.iter().all(|check| text.contains(check)), "{text}");
    }
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
        (names.len() == REPLICAS && names.is_disjoint(&before)).then_some(())
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
    tally.assert_nothing_lost(node);
    if routing == "true" {
        // The aggregator sends a draining replica nothing once its endpoint is gone.
        assert!(
            tally.failures.is_empty() && by_kubectl.failures.is_empty(),
            "{:?} {:?}",
            tally.failures,
            by_kubectl.failures
        );
    } else {
        load::assert_only_goaway_races(&tally, &by_kubectl, REPLICAS as u64);
    }
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
    let (name, on, container, served) = busiest_replica(node);
    let killed = Instant::now();
    node.script(&["ctr", &on, "-n", "k8s.io", "task", "kill", "-s", "SIGKILL", &container]);
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
