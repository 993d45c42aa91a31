//! On a real node (`scripts/node.sh`: kube-apiserver, kube-controller-manager, kube-scheduler,
//! kubelet, kube-proxy and containerd in a network namespace of their own): farm-apiserver's
//! image built from the Dockerfile, installed as a user installs it with one `kubectl apply` of
//! the manifest its `certs` command writes, answering through the aggregator with its own
//! ServiceAccount, and FarmPods that show what the kubelet reports about the Pods it runs; then
//! the high-availability install ([`high_availability`]).
//!
//! The node is shared: a node already up is used and left up; one this test started is removed
//! when it ends, also when it fails.

#[path = "node/certificates.rs"]
mod certificates;
mod common;
#[path = "node/etcd_certificates.rs"]
mod etcd_certificates;
#[path = "node/etcd_operations.rs"]
mod etcd_operations;
#[path = "node/high_availability.rs"]
mod high_availability;
#[path = "node/load.rs"]
mod load;
#[path = "node/two_nodes.rs"]
mod two_nodes;

use common::node::{FIRST_NODE, KillOnDrop, Node, ROOT, eventually};
use common::{EVENT_DEADLINE, LineStream};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The quick start (one replica, Llamas in memory), then the high-availability install (two
/// replicas over an etcd StatefulSet): one cluster for both, as their installs share names.
#[test]
fn installed_from_its_manifests_it_serves_shows_the_kubelets_pods_and_survives_rollouts_and_crashes() {
    let node = Node::up();
    // Through the endpoints, whatever an earlier run on this node left.
    node.script(&["aggregator-routing", "true"]);
    let dir = tempfile::tempdir().unwrap();
    // The static install: kustomize's base in manifests/, nothing generated, no Secret.
    let base = format!("{ROOT}/manifests");
    // What an earlier run on this node may have left (the names are the manifest's).
    node.must(&["delete", "-k", &base, "--ignore-not-found", "--wait=true"]);
    node.must(&["delete", "secret", "-n", "farm-system", "farm-apiserver-serving-cert", "--ignore-not-found"]);
    let installed = Instant::now();
    node.must(&["apply", "-k", &base]);
    eventually("kubectl get llamas to answer through the aggregator", || {
        node.kubectl(&["get", "llamas"]).0.then_some(())
    });
    eprintln!("from kubectl apply to the first kubectl get llamas: {:.1} s", installed.elapsed().as_secs_f64());
    the_install_is_ready_and_available(&node);
    llamas_are_served_by_the_pod(&node);
    namespace_users_get_what_the_default_roles_grant(&node);
    certificates::the_managed_certificate_rotates_under_load_without_a_failed_request(&node);
    farmpods_show_what_the_kubelet_reports(&node);
    when_every_replica_is_gone_it_all_recovers_once_one_is_back(&node);
    a_binary_outside_the_cluster_serves_with_what_the_dev_loop_copies_out_of_the_pod(&node, dir.path());
    // Uninstalled as docs/installing.md says: the APIServices first (here after the server is
    // gone for good), then the rest; the group leaves discovery.
    a_server_gone_for_good_is_freed_by_deleting_its_apiservices(&node);
    node.must(&["delete", "-k", &base, "--ignore-not-found", "--wait=true"]);
    let (found, out, _) = node.kubectl(&["api-resources", "--api-group=farm.example.com"]);
    assert!(found && !out.contains("llamas"), "{out}");
    the_helm_chart_installs_serves_and_uninstalls(&node);
    high_availability::with_etcd_and_two_replicas_nothing_acknowledged_is_lost_through_rollouts_crashes_drains_and_a_lost_node(
        &node,
    );
}

/// `helm install` of charts/farm-apiserver (helm built by scripts/control-plane.sh) with its
/// defaults: served through the aggregator, its ClusterRoles in the default roles; `helm
/// uninstall` takes the group out of discovery.
fn the_helm_chart_installs_serves_and_uninstalls(node: &Node) {
    let helm = Command::new("bash").arg(format!("{ROOT}/scripts/control-plane.sh")).arg("helm").output().unwrap();
    assert!(helm.status.success(), "{}", String::from_utf8_lossy(&helm.stderr));
    let helm = String::from_utf8(helm.stdout).unwrap().trim().to_string();
    let kubeconfig = node.dir.join("kubeconfig").display().to_string();
    let run = |args: &[&str]| {
        let all: Vec<&str> = [helm.as_str(), "--kubeconfig", &kubeconfig].iter().chain(args).copied().collect();
        let out = node.exec(&all, None);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "helm {args:?}: {text}");
        text
    };
    let chart = format!("{ROOT}/charts/farm-apiserver");
    let installed = Instant::now();
    run(&[
        "install",
        "farm-apiserver",
        &chart,
        "-n",
        "farm-system",
        "--create-namespace",
        "--wait",
        "--timeout",
        "120s",
    ]);
    eventually("kubectl get llamas through the chart's install", || node.kubectl(&["get", "llamas"]).0.then_some(()));
    eprintln!("helm install to the first kubectl get llamas: {:.1} s", installed.elapsed().as_secs_f64());
    let pod = &node.json(&["pods", "-n", "farm-system", "-l", "app.kubernetes.io/instance=farm-apiserver"])["items"][0];
    assert_eq!(pod["spec"]["priorityClassName"], "system-cluster-critical", "{pod}");
    assert_eq!(pod["spec"]["nodeSelector"]["kubernetes.io/os"], "linux", "{pod}");
    let view = node.must(&["get", "clusterrole", "view", "-o", "jsonpath={.rules[*].resources}"]);
    assert!(view.contains("farmpods"), "view aggregates the chart's role: {view}");
    run(&["uninstall", "farm-apiserver", "-n", "farm-system", "--wait"]);
    let (found, out, _) = node.kubectl(&["api-resources", "--api-group=farm.example.com"]);
    assert!(found && !out.contains("llamas"), "{out}");
    node.must(&["delete", "secret", "-n", "farm-system", "farm-apiserver-serving-cert", "--ignore-not-found"]);

    // With its own etcd and two replicas: the Job of the release makes etcd's Secrets, which the
    // members and the replicas wait for; a Llama is stored; uninstalled with its namespace (the
    // Secrets and claims are not the release's), the volumes emptied for the next install.
    let installed = Instant::now();
    // The worker's only volume is for a member: the snapshot's claim binds on the first node.
    let backup_node = format!("storage.etcd.backup.nodeSelector.kubernetes\\.io/hostname={FIRST_NODE}");
    let etcd = ["--set", "replicaCount=2", "--set", "storage.type=etcd", "--set", backup_node.as_str()];
    let install = ["install", "farm-apiserver", &chart, "-n", "farm-system", "--wait", "--timeout", "300s"];
    run(&[&install[..], &etcd[..]].concat());
    node.apply("apiVersion: farm.example.com/v1\nkind: Llama\nmetadata: {name: charted, namespace: default}\nspec: {weight: 80, height: 150}\n");
    eprintln!("helm install with its etcd to a stored Llama: {:.1} s", installed.elapsed().as_secs_f64());
    let job = node.must(&["-n", "farm-system", "logs", "job/farm-apiserver-etcd-secrets-1"]);
    assert!(job.contains("created secret/farm-apiserver-etcd-ca"), "{job}");
    // The revision's snapshot, the backup claim's first consumer (bound for `--wait`).
    let backup = "job/farm-apiserver-etcd-backup-1";
    node.must(&["-n", "farm-system", "wait", "--for=condition=Complete", backup, "--timeout=180s"]);
    assert!(node.must(&["-n", "farm-system", "logs", backup]).contains("Snapshot saved at /backup/snapshot.db"));
    node.must(&["delete", "llama", "charted"]);
    run(&["uninstall", "farm-apiserver", "-n", "farm-system", "--wait"]);
    node.must(&["delete", "namespace", "farm-system", "--wait=true"]);
    node.script(&["recycle"]);
}

fn the_install_is_ready_and_available(node: &Node) {
    node.must(&["-n", "farm-system", "rollout", "status", "deployment/farm-apiserver", "--timeout=60s"]);
    let pods = node.json(&["pods", "-n", "farm-system", "-l", "app.kubernetes.io/name=farm-apiserver"]);
    for pod in pods["items"].as_array().unwrap() {
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz", "ready through its probe");
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert!(container["env"].as_array().unwrap().iter().all(|e| e["name"] != "FARM_KUBECONFIG"), "no kubeconfig");
        assert_eq!(pod["status"]["containerStatuses"][0]["ready"], true);
        assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 0, "{pod}");
    }
    for version in ["v1", "v1alpha"] {
        let apiservice = node.json(&["apiservice", &format!("{version}.farm.example.com")]);
        let available =
            apiservice["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Available");
        assert_eq!(available.unwrap()["status"], "True", "{apiservice}");
    }
}

/// A user bound to `edit` in a namespace writes its llamas, one bound to `view` reads them and
/// farmpods, through the default roles the install's ClusterRoles are aggregated into.
fn namespace_users_get_what_the_default_roles_grant(node: &Node) {
    node.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}).to_string());
    node.must(&["create", "rolebinding", "alice-edits", "--clusterrole", "edit", "--user", "alice", "-n", "team"]);
    node.must(&["create", "rolebinding", "bob-views", "--clusterrole", "view", "--user", "bob", "-n", "team"]);
    eventually("the default roles to take the farm's rules", || {
        let (_, out, _) =
            node.kubectl(&["auth", "can-i", "create", "llamas.farm.example.com", "--as", "alice", "-n", "team"]);
        (out.trim() == "yes").then_some(())
    });
    let llama = "apiVersion: farm.example.com/v1\nkind: Llama\nmetadata: {name: dolly, namespace: team}\nspec: {weight: 120, height: 170.5}\n";
    let (ok, _, err) = node.kubectl_with_stdin(&["--as", "alice", "apply", "-f", "-"], Some(llama));
    assert!(ok, "alice (edit) writes llamas: {err}");
    let (ok, out, err) = node.kubectl(&["--as", "bob", "-n", "team", "get", "llamas,farmpods", "-o", "name"]);
    assert!(ok && out.trim() == "llama.farm.example.com/dolly", "bob (view) reads them: {out}{err}");
    let (ok, _, err) = node.kubectl(&["--as", "bob", "-n", "team", "delete", "llama", "dolly"]);
    assert!(!ok && err.contains(r#"User "bob" cannot delete resource "llamas""#), "{err}");
    let (ok, _, err) = node.kubectl(&["--as", "alice", "-n", "default", "get", "llamas"]);
    assert!(!ok && err.contains("Forbidden"), "alice's binding is for team only: {err}");
    node.must(&["delete", "namespace", "team", "--wait=false"]);
}

fn llamas_are_served_by_the_pod(node: &Node) {
    node.apply(
        "apiVersion: farm.example.com/v1\nkind: Llama\nmetadata: {name: dolly, namespace: default}\nspec: {weight: 120, height: 170.5}\n",
    );
    let dolly = node.json(&["llama", "dolly"]);
    assert_eq!(dolly["spec"]["weight"], 120);
    let listed = node.must(&["get", "llamas"]);
    assert!(listed.contains("dolly"), "{listed}");
    // The FarmPods of the server's own Pods: read from the cluster with its ServiceAccount.
    let listed = node.must(&["get", "farmpods", "-A"]);
    assert!(listed.lines().any(|l| l.starts_with("farm-system") && l.contains("Running")), "{listed}");
    node.must(&["delete", "llama", "dolly"]);
}

/// A Deployment of the workload image in `namespace`, whose container runs `script`.
fn workload(name: &str, namespace: &str, image: &str, script: &str) -> String {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "main", "image": image, "imagePullPolicy": "Never",
                        "command": ["sh", "-c", script],
                    }],
                },
            },
        },
    })
    .to_string()
}

fn farmpods_show_what_the_kubelet_reports(node: &Node) {
    node.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "herd"}}).to_string());
    let image = node.env("WORKLOAD_IMAGE");
    // Runs until told to stop, then exits 3: a restart the test causes from inside.
    node.apply(&workload("grazer", "herd", &image, "while [ ! -e /tmp/stop ]; do sleep 0.2; done; exit 3"));
    node.must(&["-n", "herd", "rollout", "status", "deployment/grazer", "--timeout=60s"]);
    let pod = node.json(&["pods", "-n", "herd", "-l", "app=grazer"])["items"][0].clone();
    let name = pod["metadata"]["name"].as_str().unwrap().to_string();
    let farmpod = node.json(&["farmpod", "-n", "herd", &name]);
    same_as_the_pod(&farmpod, &pod);
    assert_eq!(farmpod["status"]["phase"], "Running");
    // On either node, with an address of that node's Pods' subnet (scripts/node.sh).
    let subnet = match farmpod["spec"]["nodeName"].as_str() {
        Some("farm-node") => "10.244.0.",
        Some("farm-node-2") => "10.244.1.",
        other => panic!("a FarmPod on no node of the cluster: {other:?}"),
    };
    assert!(farmpod["status"]["podIP"].as_str().unwrap().starts_with(subnet), "{farmpod}");

    let list = node.json(&["farmpods", "-n", "herd"]);
    let since = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let watch =
        node.watch(&format!("/apis/farm.example.com/v1/namespaces/herd/farmpods?watch=1&resourceVersion={since}"));
    node.must(&["exec", "-n", "herd", &name, "--", "touch", "/tmp/stop"]);
    let events =
        events_until(&watch, |e| e["object"]["status"]["restarts"] == 1 && e["object"]["status"]["ready"] == "1/1");
    let restarted = &events.last().unwrap()["object"];
    assert_eq!(restarted["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], 3);
    same_as_the_pod(restarted, &node.json(&["pod", "-n", "herd", &name]));

    // A container that keeps failing: kubelets up to 1.3x report its back-off as `waiting:
    // CrashLoopBackOff`; kubelet 1.37.2 keeps its terminated state (`Error`, which `kubectl get
    // pods` prints) until the next start. Either way the FarmPod shows what the Pod says.
    node.apply(&workload("stumbler", "herd", &image, "exit 1"));
    reason_of("stumbler", &["CrashLoopBackOff", "Error"], node);
    node.apply(&workload("ghost", "herd", "localhost/farm-absent:1", "true"));
    reason_of("ghost", &["ErrImageNeverPull"], node);

    node.must(&["-n", "herd", "scale", "deployment/grazer", "--replicas=0"]);
    events_until(&watch, |e| e["type"] == "DELETED" && e["object"]["metadata"]["name"] == name.as_str());
    node.must(&["delete", "namespace", "herd", "--wait=false"]);
}

/// The condition `kind` of the object `args` names (`kubectl get -o json`), if it has one.
fn condition(node: &Node, args: &[&str], kind: &str) -> Option<Value> {
    let object = node.json(args);
    object["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind).cloned()
}

/// With no replica, what users see: both APIServices unavailable for want of endpoints, the
/// group's requests answered 503 by the aggregator, discovery incomplete, a namespace deletion
/// held back by the namespace controller; once a replica is back, all of it recovers on its own.
fn when_every_replica_is_gone_it_all_recovers_once_one_is_back(node: &Node) {
    node.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "paddock"}}).to_string());
    node.apply(
        "apiVersion: farm.example.com/v1\nkind: Llama\nmetadata: {name: dolly, namespace: paddock}\nspec: {weight: 120, height: 170.5}\n",
    );
    node.must(&["-n", "farm-system", "scale", "deployment/farm-apiserver", "--replicas=0"]);
    for version in ["v1", "v1alpha"] {
        let apiservice = format!("{version}.farm.example.com");
        let available = eventually(&format!("{apiservice} to be unavailable"), || {
            condition(node, &["apiservice", &apiservice], "Available").filter(|c| c["status"] == "False")
        });
        assert_eq!(available["reason"], "MissingEndpoints", "{available}");
    }
    let (ok, _, err) = node.kubectl(&["get", "llamas", "-n", "paddock"]);
    assert!(!ok && err.contains("(ServiceUnavailable): the server is currently unable to handle the request"), "{err}");
    // Discovery lacks the group. (Through kube-apiserver 1.20's legacy discovery kubectl also
    // failed, "unable to retrieve the complete list of server APIs: farm.example.com/v1";
    // through 1.37.2's aggregated discovery it lists the rest and exits 0.)
    // (Within the aggregator's discovery refresh: right after the APIServices turn unavailable,
    // it may still list the group for a moment.)
    let (ok, err) = eventually("discovery to leave the group out", || {
        let (ok, out, err) = node.kubectl(&["api-resources"]);
        (out.contains("pods") && !out.contains("llamas")).then_some((ok, err))
    });
    eprintln!("kubectl api-resources with every replica gone: exit ok {ok}, stderr {err:?}");
    node.must(&["delete", "namespace", "paddock", "--wait=false"]);
    let held = eventually("the namespace controller to report the discovery failure", || {
        condition(node, &["namespace", "paddock"], "NamespaceDeletionDiscoveryFailure")
            .filter(|c| c["status"] == "True")
    });
    assert!(held["message"].as_str().unwrap().contains("farm.example.com/v1"), "{held}");
    assert_eq!(node.json(&["namespace", "paddock"])["status"]["phase"], "Terminating");

    node.must(&["-n", "farm-system", "scale", "deployment/farm-apiserver", "--replicas=1"]);
    let back = Instant::now();
    eventually("kubectl get llamas to answer again", || node.kubectl(&["get", "llamas"]).0.then_some(()));
    eprintln!("a replica back: kubectl get llamas answered after {:.1} s", back.elapsed().as_secs_f64());
    eventually("the namespace to be deleted", || {
        let (_, _, err) = node.kubectl(&["get", "namespace", "paddock"]);
        err.contains("NotFound").then_some(())
    });
    eprintln!("a replica back: the namespace was deleted after {:.1} s", back.elapsed().as_secs_f64());
    let (ok, out, err) = node.kubectl(&["api-resources", "--api-group=farm.example.com"]);
    assert!(ok && out.contains("llamas") && out.contains("farmpods"), "{err}{out}");
}

/// A server gone for good (every replica gone, never to return): namespace deletions hang on
/// the discovery of its group until the one command of docs/installing.md deletes its
/// APIServices; then the namespace goes and discovery is whole again.
fn a_server_gone_for_good_is_freed_by_deleting_its_apiservices(node: &Node) {
    node.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "meadow"}}).to_string());
    node.must(&["-n", "farm-system", "scale", "deployment/farm-apiserver", "--replicas=0"]);
    eventually("v1.farm.example.com to be unavailable", || {
        condition(node, &["apiservice", "v1.farm.example.com"], "Available").filter(|c| c["status"] == "False")
    });
    node.must(&["delete", "namespace", "meadow", "--wait=false"]);
    eventually("the namespace controller to report the discovery failure", || {
        condition(node, &["namespace", "meadow"], "NamespaceDeletionDiscoveryFailure").filter(|c| c["status"] == "True")
    });
    let freed = Instant::now();
    let out = node.must(&["delete", "apiservice", "-l", "app.kubernetes.io/name=farm-apiserver"]);
    assert!(out.contains("v1.farm.example.com") && out.contains("v1alpha.farm.example.com"), "{out}");
    eventually("the namespace to be deleted", || {
        let (_, _, err) = node.kubectl(&["get", "namespace", "meadow"]);
        err.contains("NotFound").then_some(())
    });
    eprintln!("gone for good: the namespace was deleted {:.1} s after the APIServices", freed.elapsed().as_secs_f64());
    let (ok, out, err) = node.kubectl(&["api-resources"]);
    assert!(ok && out.contains("pods") && !out.contains("farm.example.com") && !err.contains("farm"), "{out}{err}");
}

/// The development loop of docs/installing.md: `scripts/dev.sh` (what `make dev` runs) copies
/// the Pod's configuration and a token of its ServiceAccount, sends the aggregator's traffic to
/// a local binary, and restores the install when the binary stops.
fn a_binary_outside_the_cluster_serves_with_what_the_dev_loop_copies_out_of_the_pod(node: &Node, dir: &Path) {
    let log = dir.join("dev.log");
    let replicas =
        node.must(&["-n", "farm-system", "get", "deployment", "farm-apiserver", "-o", "jsonpath={.spec.replicas}"]);
    let mut command = Command::new("bash");
    command
        .arg(format!("{ROOT}/scripts/node.sh"))
        .args(["exec", "bash", &format!("{ROOT}/scripts/dev.sh"), "--address", &node.env("NODE_IP")])
        .args(["--binary", env!("CARGO_BIN_EXE_farm-apiserver")])
        .stdout(std::fs::File::create(dir.join("dev.out")).unwrap())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut dev = KillOnDrop(command.spawn().expect("start scripts/dev.sh"));
    let work = eventually("the local binary to serve", || {
        let text = std::fs::read_to_string(&log).unwrap();
        let work = text.lines().find_map(|l| l.strip_prefix("dev: its configuration and logs: "))?.to_string();
        text.contains("\"serving\"").then_some(PathBuf::from(work))
    });
    let outsider = "apiVersion: farm.example.com/v1\nkind: Llama\nmetadata: {name: outsider, namespace: default}\nspec: {weight: 80, height: 150}\n";
    // (Through the cluster IP, the aggregator's connection to the scaled-down Pod serves until
    // that Pod's shutdown delay ends: the first applies may land there.)
    let created = eventually("the local binary to answer the aggregator", || {
        node.kubectl_with_stdin(&["apply", "-f", "-"], Some(outsider)).0.then_some(())?;
        let audit = std::fs::read_to_string(work.join("audit.log")).unwrap_or_default();
        audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|e| e["verb"] == "create")
    });
    assert_eq!(created["user"]["username"], "farm-node-admin", "the identity the aggregator named: {created}");
    let (ok, _, err) = node.kubectl(&["get", "farmpods", "-A"]);
    assert!(ok, "FarmPods from a Pod cache synced with the ServiceAccount's token: {err}");
    let (ok, _, err) = node.kubectl(&["--as", "bob", "get", "llamas"]);
    assert!(
        !ok && err.contains(r#"User "bob" cannot list resource "llamas" in API group "farm.example.com""#),
        "{err}"
    );
    // SIGTERM (or Ctrl-C): the binary drains, the script restores the install.
    let stopped = Command::new("kill").args(["-TERM", &dev.0.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    let exit = dev.0.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(exit.success() && text.contains("dev: restored"), "{exit}: {text}");
    assert!(text.contains(&format!("scaled from {replicas} to 0")), "it says what it changed: {text}");
    assert!(!work.exists(), "the token and configuration are removed");
    node.must(&["-n", "farm-system", "rollout", "status", "deployment/farm-apiserver", "--timeout=60s"]);
    eventually("the Pod to serve again", || node.kubectl(&["get", "llamas"]).0.then_some(()));
    let selector =
        node.must(&["-n", "farm-system", "get", "service", "farm-apiserver", "-o", "jsonpath={.spec.selector}"]);
    assert!(selector.contains("farm-apiserver"), "{selector}");
}

/// Events of `watch` up to the first that `last` accepts; every one in resourceVersion order.
fn events_until(watch: &LineStream, last: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut events: Vec<Value> = Vec::new();
    loop {
        let event: Value = serde_json::from_str(&watch.next_line(EVENT_DEADLINE)).expect("a JSON watch event");
        let rv = |e: &Value| e["object"]["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>().unwrap();
        if let Some(previous) = events.last() {
            assert!(rv(&event) > rv(previous), "out of order: {previous} then {event}");
        }
        events.push(event);
        if last(events.last().unwrap()) {
            return events;
        }
    }
}

/// Waits until the FarmPod of `deployment`'s Pod shows `reason`, as the kubelet put it in the Pod.
/// Waits until `deployment`'s FarmPod shows one of `reasons`, and checks that its Pod, read at
/// the same resourceVersion, reports it as its container's state (waiting or terminated).
fn reason_of(deployment: &str, reasons: &[&str], node: &Node) {
    let selector = format!("app={deployment}");
    let (farmpod, pod) = eventually(&format!("{deployment}'s FarmPod to show one of {reasons:?}"), || {
        let farmpod = node.json(&["farmpods", "-n", "herd", "-l", &selector])["items"][0].clone();
        farmpod["status"]["reason"].as_str().filter(|r| reasons.contains(r))?;
        let pod = node.json(&["pod", "-n", "herd", farmpod["metadata"]["name"].as_str()?]);
        (pod["metadata"]["resourceVersion"] == farmpod["metadata"]["resourceVersion"]).then_some((farmpod, pod))
    });
    let state = &pod["status"]["containerStatuses"][0]["state"];
    let reported = state["waiting"]["reason"].as_str().or(state["terminated"]["reason"].as_str());
    assert_eq!(reported, farmpod["status"]["reason"].as_str(), "{state}");
    same_as_the_pod(&farmpod, &pod);
}

/// What a FarmPod shows of its Pod (`pod`, at the same resourceVersion) is what the kubelet
/// reported in it: node, IP, phase, start time, conditions, each container's state, and the
/// summaries computed from those.
fn same_as_the_pod(farmpod: &Value, pod: &Value) {
    let (status, reported) = (&farmpod["status"], &pod["status"]);
    assert_eq!(farmpod["metadata"]["resourceVersion"], pod["metadata"]["resourceVersion"]);
    assert_eq!(farmpod["spec"]["nodeName"], pod["spec"]["nodeName"]);
    for (ours, theirs) in [("podIP", "podIP"), ("phase", "phase"), ("startTime", "startTime"), ("qosClass", "qosClass")]
    {
        assert_eq!(status[ours], reported[theirs], "{ours}");
    }
    assert_eq!(status["conditions"], without_nulls(&reported["conditions"]));
    let containers = reported["containerStatuses"].as_array().unwrap();
    let shown = status["containerStatuses"].as_array().unwrap();
    assert_eq!(shown.len(), containers.len());
    for (ours, theirs) in shown.iter().zip(containers) {
        for field in ["name", "image", "ready", "started", "restartCount", "state"] {
            assert_eq!(ours[field], without_nulls(&theirs[field]), "containerStatuses[].{field}");
        }
        if theirs["lastState"] != json!({}) {
            assert_eq!(ours["lastState"], without_nulls(&theirs["lastState"]));
        }
    }
    let ready = containers.iter().filter(|c| c["ready"] == true).count();
    assert_eq!(status["ready"], format!("{ready}/{}", pod["spec"]["containers"].as_array().unwrap().len()));
    let restarts: i64 = containers.iter().map(|c| c["restartCount"].as_i64().unwrap()).sum();
    assert_eq!(status["restarts"], restarts);
}

/// `value` without its null fields: the kube-apiserver 1.20 writes a Pod condition's empty
/// `lastProbeTime` as null, where a FarmPod leaves it out; both mean "not set".
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}
