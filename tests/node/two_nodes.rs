//! manifests/ha on the two nodes: one replica a node (required anti-affinity), etcd's members
//! spread (two and one, the second node having one volume); a `kubectl drain` of the second node
//! under load evicts what the PodDisruptionBudgets allow and loses nothing, a drain of the first
//! meanwhile is refused by them; the second node's loss (its power cut: kubelet, containerd and
//! containers killed at once, its link down) fails requests only until the node controller has
//! taken its endpoints away, and loses no acknowledged write.

use super::high_availability::{SERVER, endpoints, replicas};
use super::load::Load;
use crate::common::node::{FIRST_NODE as FIRST, Node, SECOND_NODE as SECOND, eventually_within};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How many Pods of `selector` in farm-system run (or wait to) on each node.
fn per_node(node: &Node, selector: &str) -> BTreeMap<String, usize> {
    let pods = node.json(&["pods", "-n", "farm-system", "-l", selector]);
    let mut counts = BTreeMap::new();
    for pod in pods["items"].as_array().unwrap() {
        *counts.entry(pod["spec"]["nodeName"].as_str().unwrap_or("(none)").to_string()).or_default() += 1;
    }
    counts
}

/// manifests/ha's placement on the two nodes: one replica each (required anti-affinity); etcd's
/// members two and one (spread with `maxSkew: 1`; the second node has one volume).
pub fn each_node_holds_one_replica_and_the_second_one_etcd_member(node: &Node) {
    let expected = |first, second| BTreeMap::from([(FIRST.to_string(), first), (SECOND.to_string(), second)]);
    assert_eq!(per_node(node, SERVER), expected(1, 1), "one replica a node");
    assert_eq!(per_node(node, "app.kubernetes.io/name=etcd"), expected(2, 1), "etcd's members spread");
}

/// Everything of the install ready again: both replicas and the three members.
fn all_ready(node: &Node) {
    for workload in ["statefulset/etcd", "deployment/farm-apiserver"] {
        node.must(&["-n", "farm-system", "rollout", "status", workload, "--timeout=180s"]);
    }
}

/// `kubectl drain` of the second node under load: its replica and its etcd member evicted (their
/// budgets allow one each), their replacements Pending (one replica a node; the member's volume
/// is on that node); a drain of the first node meanwhile refused by both budgets; uncordoned,
/// all back; nothing lost, and no request failed but those in flight on the leaving etcd member.
pub fn a_drain_of_the_second_node_respects_the_budgets_and_loses_nothing(node: &Node, owner: &str) {
    let load = Load::start(node, owner, "drain");
    load.until_more_writes(30);
    let started = Instant::now();
    node.must(&["drain", SECOND, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=180s"]);
    let drained = started.elapsed();
    let running_on_second = |selector: &str| {
        let pods =
            node.json(&["pods", "-n", "farm-system", "-l", selector, "--field-selector", "status.phase=Running"]);
        pods["items"].as_array().unwrap().iter().filter(|p| p["spec"]["nodeName"] == SECOND).count()
    };
    assert_eq!(running_on_second(SERVER), 0, "the second node's replica evicted");
    assert_eq!(running_on_second("app.kubernetes.io/name=etcd"), 0, "the second node's member evicted");
    load.until_more_writes(30);

    // The first node's replica is the last one serving, its members two of three: each budget
    // refuses their eviction, and the drain gives up.
    let (refused, _, err) =
        node.kubectl(&["drain", FIRST, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=20s"]);
    assert!(!refused, "the first node drained with the second one drained too");
    assert!(err.contains("would violate the pod's disruption budget"), "{err}");
    let ready = |p: &Value| p["status"]["containerStatuses"][0]["ready"] == true;
    assert!(replicas(node).iter().any(|p| p["spec"]["nodeName"] == FIRST && ready(p)), "the last replica kept");
    for name in [FIRST, SECOND] {
        node.must(&["uncordon", name]);
    }
    all_ready(node);
    each_node_holds_one_replica_and_the_second_one_etcd_member(node);
    load.until_more_writes(30);
    let tally = load.stop();
    eprintln!(
        "kubectl drain {SECOND} under load in {:.1} s: {} writes acknowledged, {} requests succeeded, failures {:?}, \
         watch resumed {} times",
        drained.as_secs_f64(),
        tally.acknowledged.len(),
        tally.succeeded,
        tally.failures,
        tally.resumed
    );
    tally.assert_nothing_lost(node);
    // The replica leaves as in a rollout, without failing a request; the etcd member fails
    // those of its requests in flight as it stops.
    tally.assert_only_stopping_members_failed(1, "a drain");
}

/// Whether the Service's endpoints still name a ready address on the second node.
fn ready_endpoint_on_second(node: &Node) -> bool {
    endpoints(node, "farm-apiserver").iter().any(|e| e["nodeName"] == SECOND && e["conditions"]["ready"] == true)
}

/// The second node's power cut under load: requests routed to its replica hang, then fail,
/// until the node controller marks the node unreachable (`--node-monitor-grace-period`, 50 s by
/// default) and its endpoint leaves the Service; none fails after that but for the aggregator's
/// availability check (below), none after the node is back, and no acknowledged write is lost
/// (the first node's two members keep etcd's quorum).
pub fn losing_the_second_node_fails_requests_only_until_its_endpoints_go(node: &Node, owner: &str, routing: &str) {
    let load = Load::start(node, owner, &format!("loss-{routing}"));
    load.until_more_writes(30);
    let off = Instant::now();
    node.script(&["power-off", SECOND]);
    eventually_within("the lost node's endpoint to leave the Service", Duration::from_secs(180), || {
        (!ready_endpoint_on_second(node)).then_some(())
    });
    let gone = off.elapsed();
    load.until_more_writes(30);
    let writes_without = load.tally.lock().unwrap().acknowledged.len();
    let on = Instant::now();
    node.script(&["power-on", SECOND]);
    all_ready(node);
    let back = on.elapsed();
    load.until_more_writes(30);
    let tally = load.stop();
    let after_off = |at: &Instant| at.saturating_duration_since(off);
    let (first, last) = (tally.failed_at.first().map(after_off), tally.failed_at.last().map(after_off));
    eprintln!(
        "aggregator routing {routing}: {SECOND} powered off under load; its endpoint gone after {:.1} s; {} of {} \
         requests failed {:?}, the first {first:?} and the last {last:?} after the power cut; {} writes acknowledged \
         ({writes_without} by then); powered on, all ready after {:.1} s; watch resumed {} times",
        gone.as_secs_f64(),
        tally.failed_at.len(),
        tally.succeeded + tally.failed_at.len() as u64,
        tally.failures,
        tally.acknowledged.len(),
        back.as_secs_f64(),
        tally.resumed
    );
    tally.assert_nothing_lost(node);
    // Past the endpoint's removal: the aggregator's availability check (five probes at once,
    // each up to 6 s; through the cluster IP each may reach the lost replica) can have marked
    // the APIService unavailable, and then answers 503 "service unavailable" to every request
    // until its next check, requeued at most 30 s later.
    let bound = gone + Duration::from_secs(30);
    assert!(last.is_none_or(|last| last <= bound), "a request failed {last:?} after the power cut, past {bound:?}");
}
