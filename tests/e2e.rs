//! End to end through a real control plane (etcd + kube-apiserver on loopback, and
//! kube-controller-manager where a test asks for it, started by `scripts/control-plane.sh`, which
//! builds them once when `KUBE_APISERVER` / `KUBE_CONTROLLER_MANAGER` are unset):
//! farm-apiserver runs in aggregated mode, an APIService routes `farm.example.com/v1alpha` to it,
//! and kubectl talks to the kube-apiserver only.

mod common;

use common::apply_migration;
use common::clients::{self, Cluster};
use common::control_plane::{ControlPlane, Farm, NOBODY_ADMITS, NOBODY_DELEGATES, eventually};

/// The version the owner references name (any served version names the same object).
const API_VERSION: &str = "farm.example.com/v1alpha";
use farm_apiserver::resources::llama::{Llama, LlamaSpec};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};

const DOLLY: &str = "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: dolly\nspec:\n  weight: 120\n  height: 170.5\n";

#[tokio::test]
async fn kubectl_reaches_llamas_and_farmpods_through_the_aggregator() {
    let cp = ControlPlane::up();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;

    let resources = cp.must(&["api-resources", "--api-group=farm.example.com"], None);
    assert!(
        resources.lines().any(|l| l.split_whitespace().eq(["llamas", "lm", "farm.example.com/v1", "true", "Llama"])),
        "{resources}"
    );
    assert!(
        resources.lines().any(|l| l.split_whitespace().eq([
            "farmpods",
            "fp",
            "farm.example.com/v1",
            "true",
            "FarmPod"
        ])),
        "{resources}"
    );

    // Today's aggregator takes our aggregated discovery (v2), with no fallback to the legacy
    // documents, as its discovery manager logs; it aggregates our OpenAPI v3, which kubectl
    // explain reads.
    let log = || std::fs::read_to_string(cp.dir.path().join("kube-apiserver.log")).unwrap();
    eventually("the aggregator's discovery manager to take our discovery", async || {
        log().contains("DiscoveryManager: Successfully downloaded discovery for")
    })
    .await;
    assert!(!log().contains("legacy discovery"), "{}", log());
    eventually("the aggregator's /openapi/v3 to list our group", async || {
        let v3: serde_json::Value = serde_json::from_str(&cp.must(&["get", "--raw", "/openapi/v3"], None)).unwrap();
        v3["paths"].get("apis/farm.example.com/v1").is_some()
    })
    .await;
    let explained = cp.must(&["explain", "llamas.spec"], None);
    assert!(explained.contains("GROUP:      farm.example.com") && explained.contains("weight"), "{explained}");

    assert_eq!(cp.must(&["apply", "-f", "-"], Some(DOLLY)).trim(), "llama.farm.example.com/dolly created");
    assert_eq!(
        cp.must(&["apply", "-f", "-"], Some(&DOLLY.replace("120", "125"))).trim(),
        "llama.farm.example.com/dolly configured"
    );
    let table = cp.must(&["get", "llamas"], None);
    assert!(table.lines().nth(1).unwrap().split_whitespace().take(3).eq(["dolly", "125", "170.5"]), "{table}");
    let (success, _, stderr) =
        cp.run(&["create", "-f", "-"], Some(&DOLLY.replace("weight: 120", "weight: -1").replace("dolly", "bad")));
    assert!(!success && stderr.contains("spec.weight"), "{stderr}");

    // A watch through the aggregator's proxy.
    let mut command = Command::new(common::kubectl_path());
    command.arg("--kubeconfig").arg(cp.kubeconfig("admin")).args(["get", "llamas", "-w", "-o", "name"]);
    let watch = common::LineStream::spawn(command);
    assert_eq!(watch.next_line(Duration::from_secs(20)), "llama.farm.example.com/dolly");
    cp.must(&["apply", "-f", "-"], Some(&DOLLY.replace("dolly", "cria")));
    assert_eq!(watch.next_line(Duration::from_secs(20)), "llama.farm.example.com/cria");
    drop(watch);

    // The storage migration of docs/versions.md, through the aggregator (kubectl maps the `v1` List there).
    let all = cp.must(&["get", "llamas", "-A", "-o", "json"], None);
    let replaced = cp.must(&["replace", "-f", "-"], Some(&all));
    assert!(replaced.contains("dolly replaced") && replaced.contains("cria replaced"), "{replaced}");

    // Pods become FarmPods; status changes show up; deletions remove them.
    let client = cp.client().await;
    cp.must(&["create", "namespace", "shop"], None);
    let pods: Api<Pod> = Api::namespaced(client, "shop");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web-1", "labels": {"app": "web"}},
        "spec": {"nodeName": "node-a", "containers": [{"name": "nginx", "image": "nginx:1.27"}, {"name": "sidecar", "image": "busybox"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let status = json!({"status": {"phase": "Running", "podIP": "10.1.2.3", "containerStatuses": [
        {"name": "nginx", "ready": true, "restartCount": 2, "image": "nginx:1.27", "imageID": "x", "state": {"running": {}}},
        {"name": "sidecar", "ready": false, "restartCount": 1, "image": "busybox", "imageID": "y", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    ]}});
    pods.patch_status("web-1", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    eventually("the FarmPod to show the Pod's status", async || {
        let out = cp.must(&["get", "farmpods", "-A"], None);
        out.lines()
            .any(|l| l.split_whitespace().take(7).eq(["shop", "web-1", "1/2", "CrashLoopBackOff", "3", "2", "node-a"]))
    })
    .await;
    let header = cp.must(&["get", "farmpods", "-A"], None);
    assert!(header.lines().next().unwrap().split_whitespace().eq([
        "NAMESPACE",
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "CONTAINERS",
        "NODE",
        "AGE"
    ]));
    let running = cp.must(&["get", "fp", "-n", "shop", "--field-selector", "status.phase=Running", "-o", "name"], None);
    assert_eq!(running.trim(), "farmpod.farm.example.com/web-1");
    let json: serde_json::Value =
        serde_json::from_str(&cp.must(&["get", "fp", "web-1", "-n", "shop", "-o", "json"], None)).unwrap();
    let pod_now = pods.get("web-1").await.unwrap();
    assert_eq!(
        json["metadata"]["resourceVersion"].as_str(),
        pod_now.metadata.resource_version.as_deref(),
        "a FarmPod carries its Pod's resourceVersion"
    );
    assert_eq!(json["status"]["podIP"], "10.1.2.3");
    assert_eq!(json["spec"]["images"], json!(["nginx:1.27", "busybox"]));
    let (success, _, stderr) = cp.run(&["delete", "fp", "web-1", "-n", "shop"], None);
    assert!(!success && (stderr.contains("MethodNotAllowed") || stderr.contains("not allow")), "{stderr}");

    pods.delete("web-1", &DeleteParams::default().grace_period(0)).await.unwrap();
    eventually("the FarmPod to go with its Pod", async || {
        cp.must(&["get", "farmpods", "-A", "-o", "name"], None).trim().is_empty()
    })
    .await;
}

#[tokio::test]
async fn standalone_with_a_kubeconfig_serves_the_clusters_pods_to_kubectl_directly() {
    let cp = ControlPlane::up();
    cp.must(&["create", "namespace", "barn"], None);
    let pods: Api<Pod> = Api::namespaced(cp.client().await, "barn");
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "hay"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let s = common::Server::start_with(&[
        "--kubeconfig",
        cp.kubeconfig("admin").to_str().unwrap(),
        "--pod-namespace",
        "barn",
    ])
    .await;
    eventually("kubectl to list the FarmPod from the standalone server", async || {
        let (ok, out, _) = s.kubectl(&["get", "farmpods", "-n", "barn", "-o", "name"]);
        ok && out.trim() == "farmpod.farm.example.com/hay"
    })
    .await;
    let (ok, out, _) = s.kubectl(&["get", "fp", "-n", "barn"]);
    assert!(ok);
    assert!(out.lines().nth(1).unwrap().split_whitespace().take(5).eq(["hay", "0/1", "Pending", "0", "1"]), "{out}");
    // The same view at v1, field for field.
    let (ok, out, err) = s.kubectl(&["get", "farmpods.v1.farm.example.com", "hay", "-n", "barn", "-o", "json"]);
    assert!(ok, "{err}");
    let new: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (_, out, _) = s.kubectl(&["get", "farmpods.v1alpha.farm.example.com", "hay", "-n", "barn", "-o", "json"]);
    let mut old: serde_json::Value = serde_json::from_str(&out).unwrap();
    old["apiVersion"] = json!("farm.example.com/v1");
    assert_eq!(new, old);
}

#[tokio::test]
async fn the_generated_install_manifest_is_accepted_by_the_kube_apiserver() {
    let cp = ControlPlane::up();
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.yaml");
    let manifests = common::copy_of_the_manifests(dir.path());
    let ha = manifests.join("ha");
    let out = Command::new(env!("CARGO_BIN_EXE_farm-apiserver"))
        .arg("certs")
        .arg("--manifests-dir")
        .arg(manifests.join("base"))
        .arg("--out-dir")
        .arg(dir.path().join("certs"))
        .arg("--app-yaml")
        .arg(&app)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Server-side dry run validates every object; the namespace must exist for the namespaced ones.
    cp.must(&["create", "namespace", "farm-system"], None);
    let applied = cp.must(&["apply", "--dry-run=server", "-f", app.to_str().unwrap()], None);
    for object in [
        "serviceaccount/farm-apiserver",
        "clusterrole.rbac.authorization.k8s.io/farm-apiserver",
        "clusterrole.rbac.authorization.k8s.io/farm-apiserver:metrics-reader",
        "rolebinding.rbac.authorization.k8s.io/farm-apiserver-auth-reader",
        "secret/farm-apiserver-serving-cert",
        "configmap/farm-apiserver-audit-policy",
        "deployment.apps/farm-apiserver",
        "service/farm-apiserver",
        "apiservice.apiregistration.k8s.io/v1.farm.example.com",
        "apiservice.apiregistration.k8s.io/v1alpha.farm.example.com",
    ] {
        assert!(applied.contains(object), "{object} missing from:\n{applied}");
    }

    // The static install (`kubectl apply -k manifests`): no Secret, no caBundle, the RBAC of a
    // server that manages its certificate.
    let base = Command::new(common::kubectl_path())
        .args(["kustomize", concat!(env!("CARGO_MANIFEST_DIR"), "/manifests")])
        .output()
        .unwrap();
    assert!(base.status.success(), "{}", String::from_utf8_lossy(&base.stderr));
    let base = String::from_utf8(base.stdout).unwrap();
    assert!(!base.contains("kind: Secret") && !base.contains("caBundle") && !base.contains("PRIVATE KEY"));
    let applied = cp.must(&["apply", "--dry-run=server", "-f", "-"], Some(&base));
    for object in [
        "role.rbac.authorization.k8s.io/farm-apiserver:serving-certificate",
        "clusterrole.rbac.authorization.k8s.io/farm-apiserver:serving-certificate",
        "clusterrole.rbac.authorization.k8s.io/farm-apiserver:aggregate-to-edit",
        "deployment.apps/farm-apiserver",
        "apiservice.apiregistration.k8s.io/v1.farm.example.com",
    ] {
        assert!(applied.contains(object), "{object} missing from:\n{applied}");
    }

    let rendered = Command::new(common::kubectl_path()).arg("kustomize").arg(&ha).output().unwrap();
    assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
    let rendered = String::from_utf8(rendered.stdout).unwrap();
    for expected in [
        "replicas: 2",
        "kind: PodDisruptionBudget",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "whenUnsatisfiable: DoNotSchedule",
        "name: ETCD_INITIAL_CLUSTER_STATE",
        "kind: CronJob",
        "name: FARM_STORAGE\n          value: etcd",
    ] {
        assert!(rendered.contains(expected), "{expected} missing from the HA overlay:\n{rendered}");
    }
    assert_eq!(rendered.matches("apiVersion: policy/v1\nkind: PodDisruptionBudget").count(), 2);
    let applied = cp.must(&["apply", "--dry-run=server", "-f", "-"], Some(&rendered));
    for object in [
        "deployment.apps/farm-apiserver",
        "poddisruptionbudget.policy/farm-apiserver",
        "statefulset.apps/etcd",
        "cronjob.batch/etcd-defrag",
        "cronjob.batch/etcd-certificates",
        "cronjob.batch/etcd-backup",
        "persistentvolumeclaim/etcd-backup",
        "service/etcd",
        "job.batch/farm-apiserver-etcd-secrets",
        "role.rbac.authorization.k8s.io/farm-apiserver-etcd-secrets",
        "poddisruptionbudget.policy/etcd",
    ] {
        assert!(applied.contains(object), "{object} missing from:\n{applied}");
    }
    assert!(!rendered.contains("kind: Secret") && !applied.contains("secret/"), "nothing secret in the HA install");
}

/// `farm-apiserver etcd-secrets` (the Job and CronJob of manifests/ha) against the real
/// kube-apiserver: the first run makes etcd's CA, the members' and the client's Secrets; a
/// second keeps them; a deleted member Secret is made again from the kept CA; `--rotate-ca`
/// puts a new CA in every bundle, which does not sign while no member could be asked whether
/// it trusts it (the node test runs the whole rotation).
#[tokio::test]
async fn the_etcd_secrets_job_makes_what_is_missing_keeps_what_exists_and_starts_a_rotation() {
    let cp = ControlPlane::up();
    cp.must(&["create", "namespace", "farm-system"], None);
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_farm-apiserver"))
            .args(["etcd-secrets", "--namespace", "farm-system"])
            .args(extra)
            .env("KUBECONFIG", cp.kubeconfig("admin"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let field = |secret: &str, key: &str| {
        let path = format!("jsonpath={{.data.{}}}", key.replace('.', "\\."));
        let base64 = cp.must(&["get", "secret", "-n", "farm-system", secret, "-o", &path], None);
        String::from_utf8(base64::Engine::decode(&base64::engine::general_purpose::STANDARD, base64).unwrap()).unwrap()
    };
    let facts = |pem: &str| farm_apiserver::certificates::material::Facts::of_pem(pem).unwrap();
    let (member, client) = ("secret/etcd-certs", "secret/farm-apiserver-etcd-client");
    assert_eq!(
        run(&[]),
        format!(
            "a new CA\ncreated secret/etcd-ca\na new certificate for {member}\ncreated {member}\na new certificate for {client}\ncreated {client}\n"
        )
    );
    let ca = field("etcd-ca", "ca.crt");
    assert_eq!(field("etcd-certs", "ca.crt"), ca, "the members trust the kept CA");
    assert_eq!(field("farm-apiserver-etcd-client", "ca.crt"), ca);
    let leaf = field("etcd-certs", "tls.crt");
    assert_eq!(run(&[]), "kept secret/etcd-ca\nkept secret/etcd-certs\nkept secret/farm-apiserver-etcd-client\n");
    cp.must(&["delete", "secret", "-n", "farm-system", "etcd-certs"], None);
    assert_eq!(
        run(&[]),
        format!("kept secret/etcd-ca\na new certificate for {member}\ncreated {member}\nkept {client}\n")
    );
    assert_eq!(field("etcd-certs", "ca.crt"), ca);
    assert_ne!(field("etcd-certs", "tls.crt"), leaf);
    let (ca_facts, leaf_facts) = (facts(&ca).remove(0), facts(&field("etcd-certs", "tls.crt")).remove(0));
    assert_eq!((ca_facts.not_after - ca_facts.not_before) / 86_400, 365, "a CA is valid a year");
    assert_eq!((leaf_facts.not_after - leaf_facts.not_before) / 86_400, 90, "a certificate 90 days");
    assert!(leaf_facts.names.contains(&"*.etcd.farm-system.svc".to_string()), "{:?}", leaf_facts.names);

    let rotating = run(&["--rotate-ca"]);
    let lines: Vec<&str> = rotating.lines().collect();
    assert_eq!(lines[0], "a new CA joins the trusted bundle", "{rotating}");
    assert!(
        lines[1].starts_with("the new CA signs in ")
            && lines[1].ends_with(" s at the earliest (mounted Secrets update)")
    );
    assert_eq!(
        lines[2..],
        ["updated secret/etcd-ca", "updated secret/etcd-certs", "updated secret/farm-apiserver-etcd-client"]
    );
    for secret in ["etcd-ca", "etcd-certs", "farm-apiserver-etcd-client"] {
        assert_eq!(facts(&field(secret, "ca.crt")).len(), 2, "{secret} trusts both CAs");
    }
    let waiting = run(&["--settle-seconds", "0"]);
    assert!(
        waiting.starts_with("the new CA does not sign yet: no statefulset/etcd\nkept secret/etcd-ca\n"),
        "{waiting}"
    );
    assert_eq!(field("etcd-ca", "signer.crt"), ca, "the old CA signs until the members trust the new one");

    // The chart's first versions kept the CA in the members' Secret: taken over, key moved out.
    let dir = tempfile::tempdir().unwrap();
    let legacy = farm_apiserver::tls::new_ca("chart-etcd-ca").unwrap();
    let member = farm_apiserver::tls::issue(&legacy, &["*.etcd.farm-system.svc".into()]).unwrap();
    let files = [
        ("ca.crt", &legacy.cert_pem),
        ("ca.key", &legacy.key_pem),
        ("tls.crt", &member.cert_pem),
        ("tls.key", &member.key_pem),
    ];
    let mut create = vec![
        "create".to_string(),
        "secret".into(),
        "generic".into(),
        "-n".into(),
        "farm-system".into(),
        "etcd-certs".into(),
    ];
    for (key, pem) in files {
        std::fs::write(dir.path().join(key), pem).unwrap();
        create.push(format!("--from-file={key}={}", dir.path().join(key).display()));
    }
    cp.must(&["delete", "secret", "-n", "farm-system", "etcd-ca", "etcd-certs"], None);
    cp.must(&create.iter().map(String::as_str).collect::<Vec<_>>(), None);
    let adopted = run(&[]);
    assert!(adopted.starts_with("took over the CA of secret/etcd-certs\n"), "{adopted}");
    assert_eq!(field("etcd-ca", "signer.crt"), legacy.cert_pem);
    assert_eq!(field("etcd-certs", "ca.key"), "", "the members no longer hold the CA's key");
}

/// charts/farm-apiserver rendered by helm (built by scripts/control-plane.sh) in each mode:
/// `helm lint` passes and the kube-apiserver accepts every object (a server-side dry run), and
/// each mode renders what it says.
#[tokio::test]
async fn the_helm_chart_renders_objects_the_kube_apiserver_accepts_in_each_mode() {
    let cp = ControlPlane::up();
    cp.must(&["create", "namespace", "farm-system"], None);
    let helm = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh"))
        .arg("helm")
        .output()
        .unwrap();
    assert!(helm.status.success(), "{}", String::from_utf8_lossy(&helm.stderr));
    let helm = String::from_utf8(helm.stdout).unwrap().trim().to_string();
    let chart = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/farm-apiserver");
    let render = |settings: &[&str]| {
        let mut args = vec!["template", "farm-apiserver", chart, "-n", "farm-system", "--kube-version", "1.37.2"];
        args.extend(settings.iter().flat_map(|s| ["--set", s]));
        let out = Command::new(&helm).args(&args).output().unwrap();
        assert!(out.status.success(), "helm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let lint = Command::new(&helm).args(["lint", chart, "--strict"]).output().unwrap();
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));

    let managed = render(&[]);
    assert!(!managed.contains("caBundle") && !managed.contains("kind: Secret"), "nothing secret by default");
    // The chart's defaults install what `kubectl apply -k manifests` installs: the two state the
    // same objects, and a change to one that the other misses fails here.
    let base = Command::new(common::kubectl_path())
        .args(["kustomize", concat!(env!("CARGO_MANIFEST_DIR"), "/manifests")])
        .output()
        .unwrap();
    let base = String::from_utf8(base.stdout).unwrap();
    let (by_chart, by_kustomize) = (as_installed(&cp, &managed), as_installed(&cp, &base));
    assert_eq!(by_chart.keys().collect::<Vec<_>>(), by_kustomize.keys().collect::<Vec<_>>());
    for (name, object) in &by_chart {
        assert_eq!(object, &by_kustomize[name], "{name}: the chart's defaults and manifests/ differ");
    }
    assert!(
        managed.contains("FARM_CERTIFICATE_SECRET")
            && managed.contains("priorityClassName: \"system-cluster-critical\"")
    );
    cp.must(&["apply", "--dry-run=server", "-f", "-"], Some(&managed));

    let ha = render(&["replicaCount=2", "storage.type=etcd"]);
    for expected in [
        "kind: StatefulSet",
        "unhealthyPodEvictionPolicy: AlwaysAllow",
        "requiredDuringScheduling",
        "whenUnsatisfiable: DoNotSchedule",
        "maxSurge: 0",
        "kind: CronJob",
        "/livez",
        "--quota-backend-bytes=2147483648",
        r#"args: ["etcd-secrets","--etcd-service","farm-apiserver-etcd","--service","farm-apiserver","--client-secret","farm-apiserver-etcd-client"]"#,
        "name: farm-apiserver-etcd-secrets-1",
    ] {
        assert!(ha.contains(expected), "{expected} missing from the HA rendering");
    }
    assert!(!ha.contains("kind: Secret"), "etcd's certificates are made in the cluster, not rendered");
    let applied = cp.must(&["apply", "--dry-run=server", "-f", "-"], Some(&ha));
    assert!(
        applied.contains("statefulset.apps/farm-apiserver-etcd")
            && applied.contains("poddisruptionbudget.policy/farm-apiserver")
            && applied.contains("cronjob.batch/farm-apiserver-etcd-backup")
            && applied.contains("cronjob.batch/farm-apiserver-etcd-certificates")
            && applied.contains("job.batch/farm-apiserver-etcd-secrets-1")
            && applied.contains("job.batch/farm-apiserver-etcd-backup-1")
            && applied.contains("persistentvolumeclaim/farm-apiserver-etcd-backup"),
        "{applied}"
    );

    let bundle = "LS0tLS1CRUdJTg==";
    let files = render(&[
        "certificates.mode=secret",
        "certificates.secretName=mine",
        &format!("certificates.caBundle={bundle}"),
    ]);
    assert_eq!(files.matches(&format!("caBundle: {bundle}")).count(), 2);
    assert!(files.contains("secretName: mine") && !files.contains("FARM_CERTIFICATE_SECRET"));
    assert!(!files.contains(":serving-certificate"), "no RBAC for certificates it does not manage");
    cp.must(&["apply", "--dry-run=server", "-f", "-"], Some(&files));

    let injected = render(&["certificates.mode=certManager"]);
    assert_eq!(injected.matches("cert-manager.io/inject-ca-from: farm-system/farm-apiserver-serving-cert").count(), 2);
    assert!(injected.contains("kind: Certificate") && injected.contains("isCA: true"));

    let refused = Command::new(&helm)
        .args(["template", "x", chart, "--kube-version", "1.37.2", "--set", "replicaCount=2"])
        .output()
        .unwrap();
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("needs storage.type etcd"));
}

/// The objects of an install as the kube-apiserver would store them (a server-side dry run), by
/// kind and name, without what only says who rendered them: Helm's labels, kubectl's
/// last-applied annotation, server-set metadata, the order of environment variables, and the
/// variables the chart states at the server's own defaults. The Namespace aside (Helm's
/// `--create-namespace` makes it).
fn as_installed(cp: &ControlPlane, yaml: &str) -> std::collections::BTreeMap<String, serde_json::Value> {
    let stored = cp.must(&["apply", "--dry-run=server", "-o", "json", "-f", "-"], Some(yaml));
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    let items = stored["items"].as_array().cloned().unwrap_or_else(|| vec![stored.clone()]);
    let mut objects = std::collections::BTreeMap::new();
    for mut object in items.into_iter().filter(|o| o["kind"] != "Namespace") {
        let meta = object["metadata"].clone();
        object["metadata"] = json!({"name": meta["name"], "namespace": meta["namespace"],
            "labels": meta["labels"], "annotations": meta["annotations"]});
        object.as_object_mut().unwrap().remove("status");
        without_renderers_marks(&mut object);
        let key = format!("{}/{}", object["kind"].as_str().unwrap(), object["metadata"]["name"].as_str().unwrap());
        objects.insert(key, object);
    }
    objects
}

/// Removes Helm's labels and kubectl's annotation wherever they are (metadata, selectors, Pod
/// templates), sorts `env` lists by name and drops the chart's variables that state defaults.
fn without_renderers_marks(value: &mut serde_json::Value) {
    const MARKS: [&str; 5] = [
        "helm.sh/chart",
        "app.kubernetes.io/managed-by",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/version",
        "kubectl.kubernetes.io/last-applied-configuration",
    ];
    // The server's defaults: its Service is the Deployment's, a week's certificates, a year's CA.
    const DEFAULTS: [(&str, &str); 3] = [
        ("FARM_CERTIFICATE_SERVICE", "farm-apiserver"),
        ("FARM_CERTIFICATE_VALIDITY_SECONDS", "604800"),
        ("FARM_CERTIFICATE_CA_VALIDITY_SECONDS", "31536000"),
    ];
    match value {
        serde_json::Value::Object(map) => {
            for mark in MARKS {
                map.remove(mark);
            }
            if let Some(serde_json::Value::Array(env)) = map.get_mut("env") {
                env.retain(|e| !DEFAULTS.iter().any(|(name, value)| e["name"] == *name && e["value"] == *value));
                env.sort_by_key(|e| e["name"].as_str().unwrap_or_default().to_string());
            }
            map.values_mut().for_each(without_renderers_marks);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(without_renderers_marks),
        _ => {}
    }
}

#[tokio::test]
async fn without_rbac_for_pods_the_log_names_the_rule_llamas_still_work_and_the_cache_recovers() {
    let cp = ControlPlane::up();
    // Everything an installed server has (manifests/base/rbac.yaml) except the right to read Pods.
    let farm = cp.farm_lacking_rbac_for(&format!("{NOBODY_DELEGATES}---\n{NOBODY_ADMITS}"), "pods").await;
    assert_eq!(cp.must(&["apply", "-f", "-"], Some(DOLLY)).trim(), "llama.farm.example.com/dolly created");
    // Straight to the server (kubectl would retry the 503 as Retry-After allows).
    let direct = cp.direct(&farm, Some("admin"));
    let r = direct
        .get(format!("https://localhost:{}/apis/farm.example.com/v1alpha/farmpods", farm.port))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503, "{}", farm.log());
    assert_eq!(r.headers()["retry-after"], "1");

    let grant = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: pod-reader}\n\
                 rules: [{apiGroups: [\"\"], resources: [pods], verbs: [get, list, watch]}]\n---\n\
                 apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: nobody-reads-pods}\n\
                 roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pod-reader}\n\
                 subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-nobody}]\n";
    cp.must(&["apply", "-f", "-"], Some(grant));
    eventually("the Pod cache to sync after the grant", async || cp.run(&["get", "farmpods", "-A"], None).0).await;
    assert!(farm.log().contains("pod cache synced"));
}

#[tokio::test]
async fn authentication_and_authorization_are_delegated_to_the_cluster() {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    let cp = ControlPlane::up();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    let base = format!("https://localhost:{}", farm.port);

    // Straight to the server: forged identity headers without a front-proxy certificate are 401.
    let anonymous = cp.direct(&farm, None);
    let forged = anonymous
        .get(format!("{base}/apis/farm.example.com/v1alpha/namespaces/default/llamas"))
        .header("X-Remote-User", "admin")
        .header("X-Remote-Group", "system:masters")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    let status: serde_json::Value = forged.json().await.unwrap();
    common::assert_status(&status, 401, "Unauthorized");

    // A client certificate from a CA the cluster does not trust is 401 too.
    let mallory = farm_apiserver::tls::generate("untrusted-ca", &["mallory".into()]).unwrap();
    let untrusted = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(farm.ca_pem.as_bytes()).unwrap())
        .identity(reqwest::Identity::from_pem(format!("{}{}", mallory.cert_pem, mallory.key_pem).as_bytes()).unwrap())
        .build()
        .unwrap();
    let r = untrusted
        .get(format!("{base}/apis/farm.example.com/v1alpha"))
        .header("X-Remote-User", "admin")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // A ServiceAccount token works through TokenReview; the SubjectAccessReview then decides.
    let client = cp.client().await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client, "default");
    let robot: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap();
    accounts.create(&PostParams::default(), &robot).await.unwrap();
    let request = TokenRequest {
        spec: Some(TokenRequestSpec { audiences: Some(vec![]), expiration_seconds: Some(600), ..Default::default() }),
        ..Default::default()
    };
    let token = accounts.create_token_request("robot", &PostParams::default(), &request).await.unwrap();
    let token = token.status.unwrap().token.expect("a token");
    let discovery =
        anonymous.get(format!("{base}/apis/farm.example.com/v1alpha")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(discovery.status(), 200, "discovery is allowed to every authenticated user");
    let denied = anonymous
        .get(format!("{base}/apis/farm.example.com/v1alpha/namespaces/default/llamas"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 403);
    let status: serde_json::Value = denied.json().await.unwrap();
    common::assert_status(&status, 403, "Forbidden");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains(r#"User "system:serviceaccount:default:robot" cannot list resource "llamas""#),
        "{status}"
    );
    let bad_token =
        anonymous.get(format!("{base}/apis/farm.example.com/v1alpha")).bearer_auth("not-a-token").send().await.unwrap();
    assert_eq!(bad_token.status(), 401);

    // Through the aggregator: a user without RBAC is refused; a Role in namespace a lets them
    // read llamas there, and only there.
    cp.must(&["create", "namespace", "a"], None);
    cp.must(&["create", "namespace", "b"], None);
    let (ok, _, stderr) = cp.run(&["--as", "bob", "get", "llamas", "-n", "a"], None);
    assert!(!ok);
    assert!(stderr.contains(r#"llamas.farm.example.com is forbidden: User "bob" cannot list resource "llamas" in API group "farm.example.com" in the namespace "a""#), "{stderr}");
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: llama-reader, namespace: a}\n\
                rules: [{apiGroups: [farm.example.com], resources: [llamas], verbs: [get, list, watch]}]\n---\n\
                apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: bob-reads-llamas, namespace: a}\n\
                roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: llama-reader}\n\
                subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]\n";
    cp.must(&["apply", "-f", "-"], Some(role));
    eventually("bob to read llamas in namespace a once the denial is no longer cached", async || {
        cp.run(&["--as", "bob", "get", "llamas", "-n", "a"], None).0
    })
    .await;
    let (ok, _, stderr) = cp.run(&["--as", "bob", "get", "llamas", "-n", "b"], None);
    assert!(!ok && stderr.contains(r#"in the namespace "b""#), "{stderr}");
    let (ok, _, stderr) = cp.run(&["--as", "bob", "create", "-n", "a", "-f", "-"], Some(DOLLY));
    assert!(!ok && stderr.contains("cannot create resource"), "{stderr}");

    // /metrics is authorized like any non-resource path: the robot may scrape once bound to the
    // metrics-reader ClusterRole of manifests/base/rbac.yaml.
    let metrics_url = format!("{base}/metrics");
    let refused = anonymous.get(&metrics_url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(refused.status(), 403);
    let rbac = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/base/rbac.yaml")).unwrap();
    let reader = rbac.split("\n---\n").find(|doc| doc.contains("farm-apiserver:metrics-reader")).unwrap();
    cp.must(&["apply", "-f", "-"], Some(reader));
    let role = "--clusterrole=farm-apiserver:metrics-reader";
    cp.must(&["create", "clusterrolebinding", "robot-scrapes", role, "--serviceaccount=default:robot"], None);
    let mut text = String::new();
    eventually("the robot to scrape /metrics once bound", async || {
        let r = anonymous.get(&metrics_url).bearer_auth(&token).send().await.unwrap();
        if r.status() != 200 {
            return false;
        }
        text = r.text().await.unwrap();
        true
    })
    .await;
    let sample = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
            .unwrap_or_else(|| panic!("{series} missing from:\n{text}"))
    };
    assert!(sample("farm_apiserver_authorization_decisions_total{result=\"denied\"}") >= 3.0);
    assert!(sample("farm_apiserver_authorization_decisions_total{result=\"allowed\"}") >= 2.0);
    assert!(sample("authentication_attempts_total{result=\"failure\"}") >= 3.0);
    assert!(sample("farm_apiserver_token_review_cache_lookups_total{result=\"hit\"}") >= 1.0);
    assert!(sample("farm_apiserver_token_review_cache_lookups_total{result=\"miss\"}") >= 2.0);
    assert!(sample("farm_apiserver_subject_access_review_cache_lookups_total{result=\"miss\"}") >= 3.0);
    assert_eq!(sample("farm_apiserver_pod_cache_synced"), 1.0);
    assert!(sample("farm_apiserver_pod_cache_last_event_age_seconds") < 600.0);

    // The log names the refusals and their users, never the tokens that were sent.
    let log = farm.log();
    assert!(!log.contains(&token), "the ServiceAccount token was logged");
    assert!(!log.contains("not-a-token"), "a wrong token was logged");
    assert!(
        log.lines().any(|l| l.contains("request refused")
            && l.contains("user=\"system:serviceaccount:default:robot\"")
            && l.contains("status=403")
            && l.contains("reason=\"Forbidden\"")),
        "no log line for the robot's 403:\n{log}"
    );
}

#[tokio::test]
async fn rotating_the_front_proxy_ca_keeps_the_apiservice_available_without_restarting_the_server() {
    let cp = ControlPlane::up();
    let mut farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    cp.must(&["apply", "-f", "-"], Some(DOLLY));
    let before = std::fs::read_to_string(cp.dir.path().join("front-proxy-ca.crt")).unwrap();

    let status = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh"))
        .arg("rotate-front-proxy")
        .arg(cp.dir.path())
        .status()
        .unwrap();
    assert!(status.success(), "rotation failed");
    assert_ne!(std::fs::read_to_string(cp.dir.path().join("front-proxy-ca.crt")).unwrap(), before);

    // The kube-apiserver now proxies with a certificate of the new CA, which it published in the
    // ConfigMap; the same farm-apiserver process picks it up.
    eventually("llamas through the aggregator after the rotation", async || {
        let (ok, out, _) = cp.run(&["get", "llamas", "-o", "name"], None);
        ok && out.trim() == "llama.farm.example.com/dolly"
    })
    .await;
    cp.must(&["wait", "--for=condition=Available", "apiservice/v1alpha.farm.example.com", "--timeout=60s"], None);
    assert!(farm.child.try_wait().unwrap().is_none(), "farm-apiserver was not restarted");
    assert!(farm.log().matches("loaded extension-apiserver-authentication").count() >= 2, "{}", farm.log());
}

#[tokio::test]
async fn a_replaced_serving_certificate_is_used_by_new_connections_without_a_restart() {
    let cp = ControlPlane::up();
    let mut farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    let old_ca = farm.ca_pem.clone();
    let old = cp.direct(&farm, Some("admin"));
    let url = format!("https://localhost:{}/apis/farm.example.com/v1alpha/namespaces/default/llamas", farm.port);
    assert_eq!(old.get(&url).send().await.unwrap().status(), 200);

    // A new CA and serving certificate, as cert-manager or `farm-apiserver certs` would write them.
    let new = farm_apiserver::tls::generate("farm-e2e-ca-2", &["farm-apiserver.farm-system.svc".into()]).unwrap();
    std::fs::write(&farm.key, &new.key_pem).unwrap();
    std::fs::write(&farm.cert, &new.cert_pem).unwrap();
    farm.ca_pem = new.ca_pem.clone();
    let fresh = cp.direct(&farm, Some("admin"));
    eventually("new connections to get the new certificate", async || fresh.get(&url).send().await.is_ok()).await;
    assert_eq!(old.get(&url).send().await.unwrap().status(), 200, "the established connection continues");

    // The APIService follows with the new caBundle; the aggregator then reaches the same process.
    cp.must(&["apply", "-f", "-"], Some(&farm.registration()));
    eventually("the aggregator to trust the new certificate", async || {
        let (ok, out, _) = cp.run(&["get", "--raw", "/apis/farm.example.com/v1alpha"], None);
        ok && out.contains("llamas")
    })
    .await;
    cp.must(&["wait", "--for=condition=Available", "apiservice/v1alpha.farm.example.com", "--timeout=60s"], None);
    assert!(farm.child.try_wait().unwrap().is_none(), "farm-apiserver was not restarted");
    assert!(farm.log().contains("reloaded the serving certificate"));
    let stale = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(old_ca.as_bytes()).unwrap())
        .build()
        .unwrap();
    assert!(stale.get(&url).send().await.is_err(), "new connections no longer see the old certificate");
}

#[tokio::test]
async fn namespace_users_bound_to_the_default_roles_get_what_the_aggregated_roles_grant() {
    let cp = ControlPlane::up_with_controller_manager();
    let mut farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    let roles =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/base/user-roles.yaml")).unwrap();
    cp.must(&["apply", "-f", "-"], Some(&roles));
    cp.must(&["create", "namespace", "team"], None);
    cp.must(&["create", "rolebinding", "alice-edits", "--clusterrole", "edit", "--user", "alice", "-n", "team"], None);
    cp.must(&["create", "rolebinding", "bob-views", "--clusterrole", "view", "--user", "bob", "-n", "team"], None);
    cp.must(&["create", "rolebinding", "carol-admin", "--clusterrole", "admin", "--user", "carol", "-n", "team"], None);
    eventually("the aggregation controller to give edit, view and admin the farm's rules", async || {
        ["edit", "view", "admin"].iter().all(|role| {
            cp.must(&["get", "clusterrole", role, "-o", "jsonpath={.rules[*].apiGroups}"], None)
                .contains("farm.example.com")
        })
    })
    .await;
    let as_user = |user: &str, args: &[&str], stdin: Option<&str>| {
        let args: Vec<&str> = ["--as", user, "-n", "team"].iter().chain(args).copied().collect();
        cp.run(&args, stdin)
    };
    // Writes and reads go through the aggregator to farm-apiserver, which asks the cluster
    // (SubjectAccessReview) whether the impersonated user may.
    for user in ["alice", "carol"] {
        let llama = DOLLY.replace("name: dolly", &format!("name: {user}s-llama"));
        let (ok, _, err) = as_user(user, &["create", "-f", "-"], Some(&llama));
        assert!(ok, "{user} may create llamas in team: {err}");
        let (ok, _, err) = as_user(user, &["delete", "llama", &format!("{user}s-llama")], None);
        assert!(ok, "{user} may delete llamas in team: {err}");
    }
    as_user("alice", &["create", "-f", "-"], Some(DOLLY));
    let (ok, out, err) = as_user("bob", &["get", "llamas,farmpods", "-o", "name"], None);
    assert!(ok && out.trim() == "llama.farm.example.com/dolly", "bob may read llamas and farmpods: {out}{err}");
    let (ok, _, err) = as_user("bob", &["delete", "llama", "dolly"], None);
    assert!(!ok && err.contains("Forbidden") && err.contains("bob"), "bob may not delete: {err}");
    let status = r#"{"status":{"observedGeneration":1}}"#;
    let (ok, _, err) = as_user(
        "alice",
        &["patch", "llama", "dolly", "--subresource", "status", "--type", "merge", "-p", status],
        None,
    );
    assert!(!ok && err.contains("Forbidden"), "status writes are a controller's, not edit's: {err}");
    let (ok, _, err) = cp.run(&["--as", "alice", "-n", "default", "get", "llamas"], None);
    assert!(!ok && err.contains("Forbidden"), "alice's binding is for team only: {err}");
    farm.stop().await;
}

#[tokio::test]
async fn the_controller_manager_creates_accounts_collects_garbage_and_deletes_namespaces() {
    let cp = ControlPlane::up_with_controller_manager();
    cp.must(&["create", "namespace", "pasture"], None);
    eventually("the service-account controller to give pasture its default account", async || {
        cp.run(&["get", "serviceaccount", "default", "-n", "pasture"], None).0
    })
    .await;

    cp.must(&["create", "configmap", "owner", "-n", "pasture"], None);
    let uid = cp.must(&["get", "configmap", "owner", "-n", "pasture", "-o", "jsonpath={.metadata.uid}"], None);
    let dependent = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dependent\n  namespace: pasture\n  ownerReferences:\n  \
         - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}\n"
    );
    cp.must(&["create", "-f", "-"], Some(&dependent));
    cp.must(&["delete", "configmap", "owner", "-n", "pasture"], None);
    eventually("the garbage collector to delete the owner's dependent", async || {
        let (found, _, stderr) = cp.run(&["get", "configmap", "dependent", "-n", "pasture"], None);
        !found && stderr.contains("NotFound")
    })
    .await;

    cp.must(&["delete", "namespace", "pasture", "--wait=false"], None);
    eventually("the namespace controller to empty and remove pasture", async || {
        let (found, _, stderr) = cp.run(&["get", "namespace", "pasture"], None);
        !found && stderr.contains("NotFound")
    })
    .await;
}

#[tokio::test]
async fn status_writes_through_the_aggregator_are_authorized_as_llamas_status() {
    let cp = ControlPlane::up();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    cp.must(&["apply", "-f", "-"], Some(DOLLY));
    // carol may read llamas and write their status; dave may read and patch llamas, not their status.
    let binding = |name: &str, user: &str, rules: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: {name}, namespace: default}}\n\
             rules: {rules}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n\
             metadata: {{name: {name}, namespace: default}}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {name}}}\n\
             subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {user}}}]\n"
        )
    };
    let role = [
        binding("carol", "carol", "[{apiGroups: [farm.example.com], resources: [llamas/status], verbs: [get, patch, update]}, {apiGroups: [farm.example.com], resources: [llamas], verbs: [get]}]"),
        binding("dave", "dave", "[{apiGroups: [farm.example.com], resources: [llamas], verbs: [get, patch]}]"),
    ]
    .join("---\n");
    cp.must(&["apply", "-f", "-"], Some(&role));
    let ready = r#"{"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","reason":"Grazing","message":"","lastTransitionTime":"2026-11-23T10:00:00Z"}]}}"#;
    let patch_status = |user: &str| {
        cp.run(&["--as", user, "patch", "llama", "dolly", "--subresource=status", "--type=merge", "-p", ready], None)
    };
    eventually("carol and dave's Roles to be in force", async || {
        patch_status("carol").0 && cp.run(&["--as", "dave", "get", "llama", "dolly"], None).0
    })
    .await;

    let (ok, _, stderr) =
        cp.run(&["--as", "carol", "patch", "llama", "dolly", "--type=merge", "-p", r#"{"spec":{"weight":1}}"#], None);
    assert!(
        !ok && stderr.contains(r#"User "carol" cannot patch resource "llamas" in API group "farm.example.com""#),
        "{stderr}"
    );
    // kubectl reads the subresource before patching it: the read is already authorized as llamas/status.
    let (ok, _, stderr) = patch_status("dave");
    assert!(!ok && stderr.contains(r#"User "dave" cannot get resource "llamas/status" in API group "farm.example.com" in the namespace "default""#), "{stderr}");

    let waited = cp.must(&["wait", "--for=condition=Ready", "llama/dolly", "--timeout=30s"], None);
    assert_eq!(waited.trim(), "llama.farm.example.com/dolly condition met");
    let weight = cp.must(
        &["get", "llama", "dolly", "-o", "jsonpath={.spec.weight} {.metadata.generation} {.status.observedGeneration}"],
        None,
    );
    assert_eq!(weight, "120 1 1");
}

#[tokio::test]
async fn kubectl_kube_rs_and_the_python_client_apply_through_the_aggregator() {
    let cp = ControlPlane::up();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    clients::kubectl_server_side_apply(&cp);
    clients::kubectl_edit(&cp);
    clients::kube_rs_apply(cp.client().await).await;
    cp.must(&["create", "namespace", "python"], None);
    clients::python_clients(&cp, "python", cp.dir.path());
}

/// The move from client-side to server-side `kubectl apply` (issue 34) gives the same transcript
/// for llamas through the aggregator, for llamas of a standalone server, and for a Llama CRD on
/// the kube-apiserver; each sequence also asserts what it expects, on all three.
#[tokio::test]
async fn kubectl_moves_from_client_side_to_server_side_apply_as_for_a_crd() {
    let cp = ControlPlane::up();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    cp.install_reference_crd("ref.example.com");
    let reference = apply_migration::all(&cp, "ref.example.com");
    let aggregated = apply_migration::all(&cp, "farm.example.com");
    apply_migration::assert_same(&aggregated, &reference, "through the aggregator");
    let standalone = apply_migration::all(&common::Server::start().await, "farm.example.com");
    apply_migration::assert_same(&standalone, &reference, "standalone");
}

/// A llama in `namespace`, with `finalizers` and `owners` (apiVersion, kind, name, uid).
fn llama_in(namespace: &str, name: &str, finalizers: &[&str], owners: &[(&str, &str, &str, &str)]) -> Llama {
    let mut llama = Llama::new(name, LlamaSpec { weight: 100.0, height: 170.0, color: None });
    llama.metadata.namespace = Some(namespace.into());
    llama.metadata.finalizers = (!finalizers.is_empty()).then(|| finalizers.iter().map(|f| f.to_string()).collect());
    let reference = |(api_version, kind, name, uid): &(&str, &str, &str, &str)| OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        uid: uid.to_string(),
        block_owner_deletion: Some(true),
        controller: None,
    };
    llama.metadata.owner_references = (!owners.is_empty()).then(|| owners.iter().map(reference).collect());
    llama
}

/// What a create in a namespace being deleted got back.
#[derive(Debug, PartialEq)]
enum Outcome {
    Created,
    /// 403: the namespace is terminating.
    Refused,
    /// 404: the namespace is gone.
    NoNamespace,
    Other(String),
}

/// Creates llamas `late-<n>` through `llamas` one after another until `stop`; each outcome, in order.
async fn create_until(llamas: Api<Llama>, namespace: String, stop: tokio::sync::watch::Receiver<bool>) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for i in 0.. {
        if *stop.borrow() {
            break;
        }
        let late = llama_in(&namespace, &format!("late-{i}"), &[], &[]);
        outcomes.push(match llamas.create(&PostParams::default(), &late).await {
            Ok(_) => Outcome::Created,
            Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("because it is being terminated") => {
                Outcome::Refused
            }
            Err(kube::Error::Api(e))
                if e.code == 404 && e.message.contains(&format!(r#"namespaces "{namespace}" not found"#)) =>
            {
                Outcome::NoNamespace
            }
            Err(e) => Outcome::Other(e.to_string()),
        });
        // Pacing, not synchronisation: a create every few milliseconds is plenty to catch one
        // let through, and leaves the two cores to the controller under test.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    outcomes
}

/// The `status` and `message` of the condition `kind` of the namespace `name`.
fn namespace_condition(cp: &ControlPlane, name: &str, kind: &str) -> (String, String) {
    let namespace: serde_json::Value =
        serde_json::from_str(&cp.must(&["get", "namespace", name, "-o", "json"], None)).unwrap();
    let conditions = namespace["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let condition = conditions.iter().find(|c| c["type"] == kind);
    let text = |field: &str| condition.and_then(|c| c[field].as_str()).unwrap_or_default().to_string();
    (text("status"), text("message"))
}

/// Requests farm-apiserver counted with `verb` on llamas, any code, from its `/metrics`.
async fn requests_counted(cp: &ControlPlane, farm: &Farm, verb: &str) -> f64 {
    let url = format!("https://localhost:{}/metrics", farm.port);
    let text = cp.direct(farm, Some("admin")).get(url).send().await.unwrap().text().await.unwrap();
    let series = format!(r#"apiserver_request_total{{verb="{verb}",resource="llamas","#);
    text.lines().filter(|l| l.starts_with(&series)).filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok()).sum()
}

/// The namespace controller's account of `namespace` once only the 50 llamas with a finalizer
/// are left: its conditions name them and their finalizer and report no failure, and it
/// deleted the rest with deletecollection, not one by one.
async fn the_controller_reports_50_llamas_held_by_their_finalizer(cp: &ControlPlane, farm: &Farm, namespace: &str) {
    eventually("the namespace's conditions to name the 50 llamas and their finalizer", async || {
        let (content, why) = namespace_condition(cp, namespace, "NamespaceContentRemaining");
        let (finalizers, which) = namespace_condition(cp, namespace, "NamespaceFinalizersRemaining");
        content == "True"
            && why.contains("llamas.farm.example.com has 50 resource instances")
            && finalizers == "True"
            && which.contains("farm.example.com/shear in 50 resource instances")
    })
    .await;
    for failure in [
        "NamespaceDeletionDiscoveryFailure",
        "NamespaceDeletionGroupVersionParsingFailure",
        "NamespaceDeletionContentFailure",
    ] {
        let (status, message) = namespace_condition(cp, namespace, failure);
        assert_eq!(status, "False", "{failure}: {message}");
    }
    assert!(requests_counted(cp, farm, "DELETECOLLECTION").await >= 1.0);
    assert_eq!(requests_counted(cp, farm, "DELETE").await, 0.0, "no llama was deleted one by one");
}

/// A create may get in before this server has heard of the namespace's deletion (as on the
/// kube-apiserver); once one is refused, none is let in: refused while the namespace
/// terminates, then refused because it is gone.
fn nothing_is_let_in_once_refused(outcomes: &[Outcome]) {
    let first_refusal = outcomes.iter().position(|o| *o != Outcome::Created).expect("a create was tried");
    let (before, after) = outcomes.split_at(first_refusal);
    let gone = after.iter().position(|o| *o == Outcome::NoNamespace).unwrap_or(after.len());
    eprintln!(
        "creates while the namespace went: {} let in before the first refusal, {gone} refused as terminating, {} as gone",
        before.len(),
        after.len() - gone
    );
    assert_eq!(after[0], Outcome::Refused, "the first refusal is the terminating namespace's: {outcomes:?}");
    assert!(after[..gone].iter().all(|o| *o == Outcome::Refused), "{outcomes:?}");
    assert!(after[gone..].iter().all(|o| *o == Outcome::NoNamespace), "{outcomes:?}");
}

#[tokio::test]
async fn the_namespace_controller_empties_a_namespace_of_500_llamas_and_nothing_is_created_in_it_meanwhile() {
    let cp = ControlPlane::up_with_controller_manager();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    cp.must(&["create", "namespace", "herd"], None);
    let llamas: Api<Llama> = Api::namespaced(cp.client().await, "herd");
    futures::stream::iter(0..500)
        .map(|i| {
            let finalizers: &[&str] = if i % 10 == 0 { &["farm.example.com/shear"] } else { &[] };
            let llama = llama_in("herd", &format!("l{i:03}"), finalizers, &[]);
            let llamas = llamas.clone();
            async move { llamas.create(&PostParams::default(), &llama).await.unwrap() }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    assert_eq!(llamas.list(&Default::default()).await.unwrap().items.len(), 500);

    let started = Instant::now();
    cp.must(&["delete", "namespace", "herd", "--wait=false"], None);
    // From the deletion until the namespace is gone, a client keeps trying to create llamas in it.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let creator = tokio::spawn(create_until(llamas.clone(), "herd".into(), stopped));
    // The namespace controller deletes the 450 llamas without finalizers and marks the other 50.
    eventually("the namespace controller to delete every llama it can", async || {
        let left = llamas.list(&Default::default()).await.unwrap().items;
        left.len() == 50 && left.iter().all(|l| l.metadata.deletion_timestamp.is_some())
    })
    .await;
    the_controller_reports_50_llamas_held_by_their_finalizer(&cp, &farm, "herd").await;

    // kubectl names the refusal as for any resource; a namespace that does not exist is refused too.
    let (ok, _, stderr) = cp.run(&["create", "-n", "herd", "-f", "-"], Some(DOLLY));
    assert!(!ok && stderr.contains(r#"llamas.farm.example.com "dolly" is forbidden: unable to create new content in namespace herd because it is being terminated"#), "{stderr}");
    let (ok, _, stderr) = cp.run(&["create", "-n", "does-not-exist", "-f", "-"], Some(DOLLY));
    assert!(!ok && stderr.contains(r#"namespaces "does-not-exist" not found"#), "{stderr}");

    // The finalizers' owner (this test) finishes its work; the namespace then goes.
    let clear = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    for llama in llamas.list(&Default::default()).await.unwrap().items {
        llamas.patch(&llama.metadata.name.unwrap(), &PatchParams::default(), &clear).await.unwrap();
    }
    eventually("the namespace to be gone", async || {
        let (found, _, stderr) = cp.run(&["get", "namespace", "herd"], None);
        !found && stderr.contains("NotFound")
    })
    .await;
    eprintln!("the namespace of 500 llamas went in {:?}", started.elapsed());
    stop.send(true).unwrap();
    let outcomes = creator.await.unwrap();
    nothing_is_let_in_once_refused(&outcomes);

    // Nothing is left in the server's own store, asked directly.
    let direct = cp.direct(&farm, Some("admin"));
    let url = format!("https://127.0.0.1:{}/apis/farm.example.com/v1alpha/llamas", farm.port);
    let all: serde_json::Value = direct.get(url).send().await.unwrap().json().await.unwrap();
    assert_eq!(all["items"], json!([]), "{all}");
}

/// The uid of `kind/name` in `namespace`, read with kubectl.
fn uid_of(cp: &ControlPlane, namespace: &str, kind: &str, name: &str) -> String {
    cp.must(&["get", kind, name, "-n", namespace, "-o", "jsonpath={.metadata.uid}"], None)
}

/// Whether `kind/name` is gone from `namespace`.
fn gone(cp: &ControlPlane, namespace: &str, kind: &str, name: &str) -> bool {
    let (found, _, stderr) = cp.run(&["get", kind, name, "-n", namespace], None);
    !found && stderr.contains("NotFound")
}

#[tokio::test]
async fn the_garbage_collector_follows_each_propagation_policy_through_the_aggregator() {
    let cp = ControlPlane::up_with_controller_manager();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    cp.must(&["create", "namespace", "farm"], None);
    let llamas: Api<Llama> = Api::namespaced(cp.client().await, "farm");
    let create = async |llama: Llama| llamas.create(&PostParams::default(), &llama).await.unwrap();
    let configmap = |name: &str| {
        cp.must(&["create", "configmap", name, "-n", "farm"], None);
        uid_of(&cp, "farm", "configmap", name)
    };

    // The collector learns of a new API group at its next discovery (every 30 s): wait until it
    // collects a probe, so that what follows is decided by policy, not by timing.
    let probe = configmap("probe");
    create(llama_in("farm", "probe", &[], &[("v1", "ConfigMap", "probe", &probe)])).await;
    cp.must(&["delete", "configmap", "probe", "-n", "farm"], None);
    eventually("the garbage collector to watch llamas", async || gone(&cp, "farm", "llama", "probe")).await;

    // A ConfigMap owning llamas: background deletion collects them; orphan keeps them, unowned.
    let barn = configmap("barn");
    create(llama_in("farm", "in-barn", &[], &[("v1", "ConfigMap", "barn", &barn)])).await;
    let shed = configmap("shed");
    create(llama_in("farm", "in-shed", &[], &[("v1", "ConfigMap", "shed", &shed)])).await;
    cp.must(&["delete", "configmap", "barn", "-n", "farm"], None);
    cp.must(&["delete", "configmap", "shed", "-n", "farm", "--cascade=orphan"], None);
    eventually("background deletion to collect in-barn", async || gone(&cp, "farm", "llama", "in-barn")).await;
    let kept = llamas.get("in-shed").await.unwrap();
    assert_eq!(kept.metadata.owner_references, None, "orphaned: the reference to the deleted owner is stripped");

    // A llama owning a ConfigMap and a llama: foreground keeps the owner, marked, until its
    // dependents are gone (here one waits on its own finalizer).
    let leader = create(llama_in("farm", "leader", &[], &[])).await.metadata.uid.unwrap();
    let by_leader = [(API_VERSION, "Llama", "leader", leader.as_str())];
    create(llama_in("farm", "calf", &["farm.example.com/shear"], &by_leader)).await;
    let feed = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: feed\n  namespace: farm\n  ownerReferences:\n  \
         - {{apiVersion: {API_VERSION}, kind: Llama, name: leader, uid: {leader}, blockOwnerDeletion: true}}\n"
    );
    cp.must(&["create", "-f", "-"], Some(&feed));
    cp.must(&["delete", "llama", "leader", "-n", "farm", "--cascade=foreground", "--wait=false"], None);
    let marked = llamas.get("leader").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.finalizers, Some(vec!["foregroundDeletion".to_string()]));
    eventually("the collector to delete feed and mark calf", async || {
        gone(&cp, "farm", "configmap", "feed")
            && llamas.get("calf").await.unwrap().metadata.deletion_timestamp.is_some()
    })
    .await;
    assert!(llamas.get("leader").await.is_ok(), "the owner waits for its last dependent");
    let clear = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    llamas.patch("calf", &PatchParams::default(), &clear).await.unwrap();
    eventually("the owner to go after its dependents", async || gone(&cp, "farm", "llama", "leader")).await;

    // --cascade=orphan on a llama: the owner goes, both dependents stay, unowned.
    let boss = create(llama_in("farm", "boss", &[], &[])).await.metadata.uid.unwrap();
    create(llama_in("farm", "follower", &[], &[(API_VERSION, "Llama", "boss", boss.as_str())])).await;
    let hay = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hay\n  namespace: farm\n  ownerReferences:\n  \
         - {{apiVersion: {API_VERSION}, kind: Llama, name: boss, uid: {boss}}}\n"
    );
    cp.must(&["create", "-f", "-"], Some(&hay));
    cp.must(&["delete", "llama", "boss", "-n", "farm", "--cascade=orphan"], None);
    assert!(gone(&cp, "farm", "llama", "boss"));
    assert_eq!(llamas.get("follower").await.unwrap().metadata.owner_references, None);
    let hay_owners =
        cp.must(&["get", "configmap", "hay", "-n", "farm", "-o", "jsonpath={.metadata.ownerReferences}"], None);
    assert_eq!(hay_owners, "", "the ConfigMap stays, unowned");
}

#[tokio::test]
async fn the_audit_log_records_requests_through_the_aggregator_with_the_clusters_decisions() {
    let cp = ControlPlane::up();
    let dir = tempfile::tempdir().unwrap();
    let (policy, log) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
    let rules = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n\
                 rules:\n- level: Metadata\n  resources: [{group: farm.example.com, resources: [llamas]}]\n";
    std::fs::write(&policy, rules).unwrap();
    let (policy, log_path) = (policy.display().to_string(), log.display().to_string());
    let farm =
        Farm::start_with(&cp.kubeconfig("admin"), &["--audit-policy-file", &policy, "--audit-log-path", &log_path]);
    cp.register(&farm).await;
    cp.must(&["create", "namespace", "barn"], None);
    let grant = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: dolly-viewer, namespace: barn}\n\
                 rules: [{apiGroups: [farm.example.com], resources: [llamas], resourceNames: [dolly], verbs: [get]}]\n---\n\
                 apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: carol-views-dolly, namespace: barn}\n\
                 roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: dolly-viewer}\n\
                 subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]\n";
    cp.must(&["apply", "-f", "-"], Some(grant));
    cp.must(&["create", "-n", "barn", "-f", "-"], Some(DOLLY));
    let (ok, _, _) = cp.run(&["--as", "carol", "get", "llama", "dolly", "-n", "barn"], None);
    assert!(ok);
    // The kube-apiserver refuses what its RBAC forbids before proxying; this server decides
    // for requests that reach it directly (here with the client certificate of e2e-nobody).
    let url = format!("https://localhost:{}/apis/farm.example.com/v1alpha/namespaces/barn/llamas/dolly", farm.port);
    let refused = cp.direct(&farm, Some("nobody")).delete(&url).send().await.unwrap();
    assert_eq!(refused.status(), 403);
    // An Audit-ID sent through the aggregator is the one recorded and returned, once (the
    // aggregator answers with its own; ours would make it two).
    let (base, client) = cp.apiserver();
    let traced = client
        .get(format!("{base}/apis/farm.example.com/v1alpha/namespaces/barn/llamas/dolly"))
        .header("audit-id", "e2e-trace-1")
        .send()
        .await
        .unwrap();
    assert_eq!(traced.status(), 200);
    let ids: Vec<_> = traced.headers().get_all("audit-id").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(ids, ["e2e-trace-1"]);

    // Stopped gracefully, the server writes every event it has: the log is then the whole
    // record of the server's life, the aggregator's discovery and availability checks included.
    let mut farm = farm;
    assert!(farm.stop().await.success(), "{}", farm.log());
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let of = |user: &str, verb: &str| {
        events
            .iter()
            .find(|e| e["user"]["username"] == user && e["verb"] == verb)
            .unwrap_or_else(|| panic!("no {verb} by {user} in {events:#?}"))
    };
    let created = of("e2e-admin", "create");
    assert_eq!(created["objectRef"]["name"], "dolly");
    assert_eq!(created["objectRef"]["namespace"], "barn");
    assert_eq!(created["responseStatus"]["code"], 201);
    assert_eq!(created["annotations"]["authorization.k8s.io/decision"], "allow");
    assert!(created["sourceIPs"].as_array().unwrap().iter().any(|ip| ip == "127.0.0.1"), "{created}");
    let viewed = of("carol", "get");
    assert_eq!(viewed["annotations"]["authorization.k8s.io/decision"], "allow");
    let reason = viewed["annotations"]["authorization.k8s.io/reason"].as_str().unwrap();
    assert!(reason.contains("carol-views-dolly"), "the RoleBinding that allowed it: {reason}");
    let refused = of("e2e-nobody", "delete");
    assert_eq!(refused["annotations"]["authorization.k8s.io/decision"], "forbid");
    assert_eq!(refused["responseStatus"]["code"], 403);
    assert_eq!(refused["responseStatus"]["reason"], "Forbidden");
    assert!(events.iter().any(|e| e["auditID"] == "e2e-trace-1"), "{events:#?}");
    // Exactly the events the policy asks for: one ResponseComplete per request on llamas, none
    // for the aggregator's discovery and availability checks.
    let written: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            let field = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            (field(&e["user"]["username"]), field(&e["verb"]), field(&e["stage"]))
        })
        .collect();
    let expected = [("e2e-admin", "create"), ("carol", "get"), ("e2e-nobody", "delete"), ("e2e-admin", "get")]
        .map(|(user, verb)| (user.to_string(), verb.to_string(), "ResponseComplete".to_string()));
    assert_eq!(written, expected);
}
