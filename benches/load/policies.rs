//! What ValidatingAdmissionPolicies cost a write (issue 58, `BENCH_ONLY=policies`): creates of
//! llamas straight to farm-apiserver in aggregated mode (the admin's client certificate,
//! delegated authorization) with 0, 1 and 10 bound policies, in rounds that go 0, 1, 10, 10, 1,
//! 0 so drift of the shared machine falls on every count; each policy has a variable and two
//! validations that pass. Then how soon a policy change is enforced: from the answer to the
//! binding's create to the first create it denies, probed every 5 ms.

use super::ab::{self, CREATE_LLAMA, Side};
use super::aggregator::{register, served, start_aggregated};
use super::{ControlPlane, Credentials, LLAMAS, Target};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
/// The bound counts measured.
const COUNTS: [usize; 3] = [0, 1, 10];
/// Policy changes timed.
const CHANGES: usize = 10;

/// Policy number `k`: llamas up to 1,000 kg with a name, and none labelled `probe-<k>`.
fn policy(k: usize) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": format!("bench-{k}")},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["farm.example.com"], "apiVersions": ["*"],
                "operations": ["CREATE", "UPDATE"], "resources": ["llamas"]}]},
            "variables": [{"name": "labels", "expression": "has(object.metadata.labels) ? object.metadata.labels : {}"}],
            "validations": [
                {"expression": "object.spec.weight <= 1000.0 && object.metadata.name.size() > 0",
                 "messageExpression": "'a llama of ' + string(object.spec.weight) + ' kg'"},
                {"expression": format!("!('probe-{k}' in variables.labels)"), "message": "probe"}]}})
}

fn binding(k: usize) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": format!("bench-{k}")},
        "spec": {"policyName": format!("bench-{k}"), "validationActions": ["Deny"]}})
}

/// Runs the comparison and prints its table and the change latencies.
pub async fn compare(binary: &Path, phase: Duration) {
    let Some(cp) = ControlPlane::up() else {
        return println!("BENCH_ONLY=policies: skipped, the control plane cannot run here");
    };
    let admin = cp.target.client(false);
    for namespace in ["create", "probe"] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        let r = admin.post(cp.target.url("/api/v1/namespaces")).json(&body).send().await;
        assert!(r.expect("create namespace").status().is_success());
    }
    let (mut farm, farm_ca, port) = start_aggregated(binary, &cp, &[]);
    register(&cp, "farm", "farm.example.com", port, &farm_ca);
    served(&cp.target, &format!("{LLAMAS}/create/llamas")).await;
    for k in 0..10 {
        let r = admin.post(cp.target.url(POLICIES)).json(&policy(k)).send().await.expect("create policy");
        assert!(r.status().is_success(), "policy {k}: {}", r.status());
    }
    // Straight to farm-apiserver, as the admin.
    let Credentials::Certificate(identity) = &cp.target.credentials else { unreachable!("the admin's certificate") };
    let credentials = Credentials::Certificate(identity.clone());
    farm.target = Target { base: format!("https://127.0.0.1:{port}"), ca: farm_ca.into_bytes(), credentials };
    let mut sides: Vec<Side> = COUNTS.iter().map(|_| Side::default()).collect();
    let mut round = 0;
    for _ in 0..ab::ROUNDS {
        let order = COUNTS.iter().enumerate().chain(COUNTS.iter().enumerate().rev());
        for (i, &count) in order {
            bind(&cp, &farm.target, count).await;
            round += 1;
            ab::measure(&farm, &CREATE_LLAMA, phase, round, &mut sides[i]).await;
        }
    }
    println!(
        "ValidatingAdmissionPolicies bound to llama writes: creates straight to farm-apiserver (aggregated), {} rounds of 0, 1, 10, 10, 1, 0 policies, {} s each",
        ab::ROUNDS,
        phase.as_secs()
    );
    println!();
    println!(
        "| {:<22} | {:>9} | {:>8} | {:>13} | {:>6} | {:>6} |",
        "bound policies", "creates/s", "CPU µs", "CPU vs none", "p99 ms", "errors"
    );
    println!("|{:-<24}|{:->11}|{:->10}|{:->15}|{:->8}|{:->8}|", "", "", "", "", "", "");
    for (count, side) in COUNTS.iter().zip(&sides) {
        let ratio = side.cpu_us() / sides[0].cpu_us().max(f64::MIN_POSITIVE);
        println!(
            "| {:<22} | {:>9.0} | {:>8.1} | {:>12.2}x | {:>6.2} | {:>6} |",
            count,
            side.rate(),
            side.cpu_us(),
            ratio,
            side.p99_ms(),
            side.errors()
        );
    }
    println!();
    change_latency(&cp, &farm.target).await;
}

/// Binds the first `count` policies (and only those), then waits until farm-apiserver enforces
/// exactly them.
async fn bind(cp: &ControlPlane, direct: &Target, count: usize) {
    let admin = cp.target.client(false);
    for k in 0..10 {
        let exists =
            admin.get(cp.target.url(&format!("{BINDINGS}/bench-{k}"))).send().await.expect("get").status() == 200;
        if k < count && !exists {
            let r = admin.post(cp.target.url(BINDINGS)).json(&binding(k)).send().await.expect("bind");
            assert!(r.status().is_success(), "binding {k}: {}", r.status());
        } else if k >= count && exists {
            admin.delete(cp.target.url(&format!("{BINDINGS}/bench-{k}"))).send().await.expect("unbind");
        }
    }
    for k in 0..10 {
        let denied = k < count;
        let deadline = Instant::now() + Duration::from_secs(30);
        while probe(direct, k).await != denied {
            assert!(Instant::now() < deadline, "policy bench-{k} not enforced as bound={denied}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Whether a create labelled `probe-<k>` is denied (a created one is deleted).
async fn probe(direct: &Target, k: usize) -> bool {
    let client = direct.client(false);
    let name = format!("probe-{k}");
    let body = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": name, "labels": {name.clone(): "yes"}}, "spec": {"weight": 1, "height": 1}});
    let r = client.post(direct.url(&format!("{LLAMAS}/probe/llamas"))).json(&body).send().await.expect("probe");
    let denied = r.status() == 422;
    if r.status().is_success() {
        client.delete(direct.url(&format!("{LLAMAS}/probe/llamas/{name}"))).send().await.expect("delete probe");
    }
    denied
}

/// Times [`CHANGES`] bindings of policy 0 from their create's answer to their first denial.
async fn change_latency(cp: &ControlPlane, direct: &Target) {
    let admin = cp.target.client(false);
    let mut took = Vec::new();
    for _ in 0..CHANGES {
        bind(cp, direct, 0).await;
        let r = admin.post(cp.target.url(BINDINGS)).json(&binding(0)).send().await.expect("bind");
        assert!(r.status().is_success());
        let bound = Instant::now();
        while !probe(direct, 0).await {
            assert!(bound.elapsed() < Duration::from_secs(30), "the binding was not enforced");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        took.push(bound.elapsed());
        admin.delete(cp.target.url(&format!("{BINDINGS}/bench-0"))).send().await.expect("unbind");
    }
    took.sort();
    println!(
        "a new binding is enforced {:.0} ms (median), {:.0} ms (slowest) after its create was answered, over {CHANGES} changes",
        took[CHANGES / 2].as_secs_f64() * 1e3,
        took[CHANGES - 1].as_secs_f64() * 1e3
    );
    println!();
}
