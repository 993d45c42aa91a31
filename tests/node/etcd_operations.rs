//! etcd of manifests/ha operated as docs/installing.md says: once the members have formed their
//! cluster, new members are told to join it (`ETCD_INITIAL_CLUSTER_STATE=existing`, a rolling
//! restart); a member whose volume is lost is replaced (removed, added again, its claim and Pod
//! deleted), and nothing stored is lost.

use crate::common::node::{Node, eventually_within};
use serde_json::Value;
use std::time::Duration;

/// `etcdctl ARGS… -w json` run in the member `through` with its own certificate, as the docs
/// run it.
fn etcdctl(node: &Node, through: &str, args: &[&str]) -> Value {
    let endpoint = format!("--endpoints=https://{through}.etcd.farm-system.svc:2379");
    let tls = ["--cacert=/etc/etcd/tls/ca.crt", "--cert=/etc/etcd/tls/tls.crt", "--key=/etc/etcd/tls/tls.key"];
    let command =
        [&["-n", "farm-system", "exec", through, "--", "etcdctl", &endpoint], &tls[..], args, &["-w", "json"]];
    serde_json::from_str(&node.must(&command.concat())).expect("etcdctl's JSON")
}

/// The members etcd lists: (name, hex ID); a member added but not started yet has no name.
fn members(node: &Node, through: &str) -> Vec<(String, String)> {
    let list = etcdctl(node, through, &["member", "list"]);
    let hex = |id: &Value| format!("{:x}", id.as_u64().expect("a member ID"));
    list["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap_or("").to_string(), hex(&m["ID"])))
        .collect()
}

/// From now on a member that starts with an empty volume joins the running cluster instead of
/// bootstrapping one: a rolling restart, one member at a time (each keeps its data, where the
/// setting is ignored).
pub fn new_members_join_the_existing_cluster_from_now_on(node: &Node) {
    node.must(&["-n", "farm-system", "set", "env", "statefulset/etcd", "ETCD_INITIAL_CLUSTER_STATE=existing"]);
    node.must(&["-n", "farm-system", "rollout", "status", "statefulset/etcd", "--timeout=300s"]);
}

/// The member on the second node (its one volume) loses its volume; it is replaced by the
/// documented steps while the others serve, and every Llama stored before is there after.
pub fn a_member_whose_volume_is_lost_is_replaced(node: &Node) {
    let pods = node.json(&["pods", "-n", "farm-system", "-l", "app.kubernetes.io/name=etcd"]);
    let on = |p: &&Value, n: &str| p["spec"]["nodeName"] == n;
    let lost =
        pods["items"].as_array().unwrap().iter().find(|p| on(p, "farm-node-2")).expect("a member on farm-node-2");
    let lost = lost["metadata"]["name"].as_str().unwrap().to_string();
    let through = pods["items"].as_array().unwrap().iter().find(|p| on(p, "farm-node")).unwrap();
    let through = through["metadata"]["name"].as_str().unwrap().to_string();
    let llamas_before = node.json(&["llamas", "-A"])["items"].as_array().unwrap().len();

    let (_, id) = members(node, &through).into_iter().find(|(name, _)| *name == lost).expect("the lost member listed");
    etcdctl(node, &through, &["member", "remove", &id]);
    let peer = format!("--peer-urls=https://{lost}.etcd.farm-system.svc:2380");
    etcdctl(node, &through, &["member", "add", &lost, &peer]);
    node.must(&["-n", "farm-system", "delete", "pvc", &format!("data-{lost}"), "--wait=false"]);
    node.must(&["-n", "farm-system", "delete", "pod", &lost]);
    // The new claim waits for a volume: the node's only one, released, is emptied and offered
    // again, as a provisioner gives a new one.
    eventually_within("the member's new claim to be bound", Duration::from_secs(180), || {
        node.script(&["recycle"]);
        let claim = node.json(&["pvc", "-n", "farm-system", &format!("data-{lost}"), "--ignore-not-found"]);
        (claim["status"]["phase"] == "Bound").then_some(())
    });
    node.must(&["-n", "farm-system", "rollout", "status", "statefulset/etcd", "--timeout=300s"]);
    let listed = members(node, &through);
    assert!(listed.len() == 3 && listed.iter().all(|(name, _)| !name.is_empty()), "three started members: {listed:?}");
    let health = etcdctl(node, &through, &["endpoint", "health", "--cluster"]);
    assert!(health.as_array().unwrap().iter().all(|h| h["health"] == true), "{health}");
    let llamas_after = node.json(&["llamas", "-A"])["items"].as_array().unwrap().len();
    assert_eq!(llamas_after, llamas_before, "every Llama stored before the replacement is there after it");
    eprintln!("etcd member {lost} replaced after its volume was lost: {listed:?}, {llamas_after} Llamas kept");
}
