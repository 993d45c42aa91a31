//! etcd of manifests/ha operated as docs/installing.md says: once the members have formed their
//! cluster, new members are told to join it (`ETCD_INITIAL_CLUSTER_STATE=existing`, a rolling
//! restart); a member whose volume is lost is replaced (removed, added again, its claim and Pod
//! deleted), and nothing stored is lost.

use crate::common::node::{FIRST_NODE, Node, SECOND_NODE, eventually_within};
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
        pods["items"].as_array().unwrap().iter().find(|p| on(p, SECOND_NODE)).expect("a member on the second node");
    let lost = lost["metadata"]["name"].as_str().unwrap().to_string();
    let through = pods["items"].as_array().unwrap().iter().find(|p| on(p, FIRST_NODE)).unwrap();
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

/// `ARGS…` of the install's namespace through kubectl, as the docs run them; printed with
/// their output, a transcript of the procedure.
fn in_namespace(node: &Node, args: &[&str]) -> String {
    let out = node.must(&[&["-n", "farm-system"], args].concat());
    eprintln!("$ kubectl -n farm-system {}\n{}", args.join(" "), out.trim_end());
    out
}

/// The Llamas of `namespace` whose names start with `prefix`, sorted.
fn llama_names(node: &Node, namespace: &str, prefix: &str) -> Vec<String> {
    let list = node.json(&["llamas", "-n", namespace]);
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["metadata"]["name"].as_str())
        .filter(|n| n.starts_with(prefix))
        .map(String::from)
        .collect();
    names.sort();
    names
}

/// A snapshot taken by the CronJob `etcd-backup` and restored by docs/installing.md's steps
/// ("Backup and restore"): what was stored when it was taken is back, what came later is gone,
/// the revisions jumped past every resourceVersion clients held, and the server writes again.
pub fn a_snapshot_restores_what_was_stored_when_it_was_taken(node: &Node, ha: &str, namespace: &str) {
    let llama = |name: &str| {
        format!(
            "apiVersion: farm.example.com/v1\nkind: Llama\nmetadata: {{name: {name}, namespace: {namespace}}}\n\
             spec: {{weight: 80, height: 150}}\n"
        )
    };
    for i in 0..3 {
        node.apply(&llama(&format!("snapshot-kept-{i}")));
    }
    in_namespace(node, &["create", "job", "--from=cronjob/etcd-backup", "etcd-backup-now"]);
    in_namespace(node, &["wait", "--for=condition=Complete", "job/etcd-backup-now", "--timeout=180s"]);
    let taken = in_namespace(node, &["logs", "job/etcd-backup-now"]);
    assert!(taken.contains("Snapshot saved at /backup/snapshot.db"), "{taken}");
    in_namespace(node, &["delete", "job", "etcd-backup-now"]);
    node.apply(&llama("snapshot-later"));
    node.must(&["delete", "llama", "-n", namespace, "snapshot-kept-0"]);
    let before = node.json(&["llama", "-n", namespace, "snapshot-later"])["metadata"]["resourceVersion"].clone();

    let started = std::time::Instant::now();
    restore_the_first_member(node, ha);
    add_the_others_as_learners(node);
    in_namespace(node, &["scale", "deployment/farm-apiserver", "--replicas=2"]);
    in_namespace(node, &["rollout", "status", "deployment/farm-apiserver", "--timeout=180s"]);
    eventually_within("the restored Llamas to be served", Duration::from_secs(120), || {
        node.kubectl(&["get", "llamas", "-n", namespace]).0.then_some(())
    });
    let restored = started.elapsed();
    let kept: Vec<String> = (0..3).map(|i| format!("snapshot-kept-{i}")).collect();
    assert_eq!(llama_names(node, namespace, "snapshot-"), kept, "what the snapshot held, nothing later");
    node.apply(&llama("snapshot-after"));
    let after = node.json(&["llama", "-n", namespace, "snapshot-after"])["metadata"]["resourceVersion"].clone();
    let number = |rv: &Value| rv.as_str().unwrap().parse::<u64>().unwrap();
    assert!(number(&after) > number(&before) + 999_000_000, "revisions bumped: {before} then {after}");
    let health = etcdctl(node, "etcd-0", &["endpoint", "health", "--cluster"]);
    assert_eq!(health.as_array().unwrap().iter().filter(|h| h["health"] == true).count(), 3, "{health}");
    eprintln!(
        "etcd restored from its snapshot in {:.1} s: {kept:?} back, resourceVersion {before} then {after}",
        restored.as_secs_f64()
    );
}

/// Steps 1 and 2: nothing writes, etcd stopped, the members' claims deleted; the snapshot
/// restored into a new claim of the first member (`restore/etcd-restore.yaml`), which then
/// starts as a cluster of its own.
fn restore_the_first_member(node: &Node, ha: &str) {
    in_namespace(node, &["scale", "deployment/farm-apiserver", "--replicas=0"]);
    in_namespace(node, &["scale", "statefulset/etcd", "--replicas=0"]);
    in_namespace(node, &["wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name=etcd", "--timeout=120s"]);
    in_namespace(node, &["delete", "pvc", "data-etcd-0", "data-etcd-1", "data-etcd-2"]);
    let applied = node.must(&["apply", "-f", &format!("{ha}/restore/etcd-restore.yaml")]);
    eprintln!("$ kubectl apply -f manifests/ha/restore/etcd-restore.yaml\n{}", applied.trim_end());
    eventually_within("the restore Job to complete", Duration::from_secs(180), || {
        node.script(&["recycle"]);
        let job = node.json(&["job", "-n", "farm-system", "etcd-restore"]);
        assert_ne!(job["status"]["failed"], 1, "{}", in_namespace(node, &["logs", "job/etcd-restore"]));
        (job["status"]["succeeded"] == 1).then_some(())
    });
    in_namespace(node, &["logs", "job/etcd-restore"]);
    in_namespace(node, &["delete", "job", "etcd-restore"]);
    in_namespace(node, &["set", "env", "statefulset/etcd", "ETCD_INITIAL_CLUSTER_STATE=existing"]);
    in_namespace(node, &["scale", "statefulset/etcd", "--replicas=1"]);
    in_namespace(node, &["wait", "--for=condition=Ready", "pod/etcd-0", "--timeout=180s"]);
}

/// Step 3: the two other members added as learners (the quorum stays the first member's),
/// started on new claims, and promoted once they caught up.
fn add_the_others_as_learners(node: &Node) {
    for member in ["etcd-1", "etcd-2"] {
        let peer = format!("--peer-urls=https://{member}.etcd.farm-system.svc:2380");
        let added = etcdctl(node, "etcd-0", &["member", "add", member, "--learner", &peer]);
        eprintln!("$ etcdctl member add {member} --learner {peer}\n{added}");
    }
    in_namespace(node, &["scale", "statefulset/etcd", "--replicas=3"]);
    for member in ["etcd-1", "etcd-2"] {
        eventually_within(&format!("{member} to be promoted"), Duration::from_secs(180), || {
            node.script(&["recycle"]);
            let (_, id) = members(node, "etcd-0").into_iter().find(|(name, _)| name == member)?;
            let endpoint = "--endpoints=https://etcd-0.etcd.farm-system.svc:2379";
            let tls = ["--cacert=/etc/etcd/tls/ca.crt", "--cert=/etc/etcd/tls/tls.crt", "--key=/etc/etcd/tls/tls.key"];
            let promote = [&["-n", "farm-system", "exec", "etcd-0", "--", "etcdctl", endpoint], &tls[..]].concat();
            node.kubectl(&[&promote[..], &["member", "promote", &id]].concat()).0.then_some(())
        });
    }
    in_namespace(node, &["rollout", "status", "statefulset/etcd", "--timeout=300s"]);
}
