//! What users' clients do with llamas, written once and run both against the standalone server
//! (tests/apply.rs, tests/python_client.rs) and through a real kube-apiserver's aggregator
//! (tests/e2e.rs): kubectl's server-side apply and edit (moving from client-side apply is
//! `apply_migration.rs`);
//! kube-rs's `Patch::Apply` on the object and its status; the official Python client
//! (tests/python/clients.py). Each scenario uses llamas of its own names in `default`, so they can
//! share one cluster.

use farm_apiserver::resources::llama::Llama;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Something kubectl and the Python client can talk to.
pub trait Cluster {
    /// Runs kubectl with `stdin` and extra environment; returns (success, stdout, stderr).
    fn kubectl_env(&self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> (bool, String, String);

    /// The kubeconfig a client uses.
    fn kubeconfig_path(&self) -> PathBuf;

    fn run(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        self.kubectl_env(args, stdin, &[])
    }

    /// Runs kubectl and requires success; returns stdout.
    fn must(&self, args: &[&str], stdin: Option<&str>) -> String {
        let (ok, out, err) = self.run(args, stdin);
        assert!(ok, "kubectl {args:?} failed: {err}");
        out
    }
}

/// Runs `command` (a kubectl) with `stdin`; returns (success, stdout, stderr).
pub fn run_with_stdin(mut command: Command, stdin: Option<&str>) -> (bool, String, String) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = command
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubectl (install it with scripts/install-tools.sh)");
    if let Some(input) = stdin {
        child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    }
    let out = child.wait_with_output().expect("kubectl output");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn manifest(name: &str, weight: u32) -> String {
    format!(
        "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: {name}\nspec:\n  weight: {weight}\n  height: 170.5\n"
    )
}

fn jsonpath(c: &impl Cluster, name: &str, path: &str) -> String {
    c.must(&["get", "llama", name, "--show-managed-fields", "-o", &format!("jsonpath={path}")], None)
}

/// `kubectl apply --server-side`, a conflict with another manager's patch, `diff --server-side`
/// and `--force-conflicts`.
pub fn kubectl_server_side_apply(c: &impl Cluster) {
    let out = c.must(&["apply", "--server-side", "-f", "-"], Some(&manifest("ssa", 120)));
    assert_eq!(out.trim(), "llama.farm.example.com/ssa serverside-applied");
    c.must(&["patch", "llama", "ssa", "--type=merge", "-p", r#"{"spec":{"weight":130}}"#], None);
    let changed = manifest("ssa", 140);
    let (ok, diff, _) = c.run(&["diff", "--server-side", "--force-conflicts", "-f", "-"], Some(&changed));
    assert!(!ok && diff.contains("-  weight: 130") && diff.contains("+  weight: 140"), "{diff}");
    let (ok, _, err) = c.run(&["apply", "--server-side", "-f", "-"], Some(&changed));
    // kubectl patches at the preferred version, v1; the apply is at v1alpha: the conflict is found
    // on the objects converted to the patch's version, and names it.
    let conflict = r#"Apply failed with 1 conflict: conflict with "kubectl-patch" using farm.example.com/v1"#;
    assert!(!ok && err.contains(conflict) && err.contains(": .spec.weight\n"), "{err}");
    c.must(&["apply", "--server-side", "--force-conflicts", "-f", "-"], Some(&changed));
    assert_eq!(jsonpath(c, "ssa", "{.spec.weight}"), "140");
    // Forced, the field moved to kubectl, and kubectl-patch, owning nothing more, is dropped.
    let managers = "{range .metadata.managedFields[*]}{.manager}/{.operation}:{.fieldsV1} {end}";
    assert_eq!(jsonpath(c, "ssa", managers).trim(), r#"kubectl/Apply:{"f:spec":{"f:height":{},"f:weight":{}}}"#);
    let (ok, diff, err) = c.run(&["diff", "--server-side", "-f", "-"], Some(&changed));
    assert!(ok && diff.is_empty(), "nothing left to apply: {diff}{err}");
}

/// `kubectl edit` with a scripted editor: the change is stored and recorded for `kubectl-edit`.
pub fn kubectl_edit(c: &impl Cluster) {
    c.must(&["apply", "--server-side", "-f", "-"], Some(&manifest("edited", 120)));
    let editor = "sed -i -e 's/weight: 120/weight: 121/'";
    let (ok, out, err) = c.kubectl_env(&["edit", "llama", "edited"], None, &[("KUBE_EDITOR", editor)]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "llama.farm.example.com/edited edited");
    assert_eq!(jsonpath(c, "edited", "{.spec.weight}"), "121");
    let managers = "{range .metadata.managedFields[*]}{.manager}/{.operation}:{.fieldsV1} {end}";
    assert_eq!(
        jsonpath(c, "edited", managers).trim(),
        r#"kubectl/Apply:{"f:spec":{"f:height":{}}} kubectl-edit/Update:{"f:spec":{"f:weight":{}}}"#
    );
}

/// kube-rs: `Patch::Apply` on the object, then on its status (`patch_status`, `get_status`).
pub async fn kube_rs_apply(client: kube::Client) {
    let api: Api<Llama> = Api::namespaced(client, "default");
    let params = PatchParams::apply("herd-controller");
    let config = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "rs"},
                        "spec": {"weight": 1.0, "height": 2.0}});
    let created = api.patch("rs", &params, &Patch::Apply(config)).await.expect("apply");
    assert_eq!(created.spec.weight, 1.0);
    let status =
        json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "status": {"observedGeneration": 1}});
    let written = api.patch_status("rs", &params, &Patch::Apply(status)).await.expect("apply the status");
    assert_eq!(written.status.as_ref().and_then(|s| s.observed_generation), Some(1));
    let entries = written.metadata.managed_fields.unwrap_or_default();
    let status_entry = entries.iter().find(|e| e.subresource.as_deref() == Some("status")).expect("a status entry");
    assert_eq!(
        (status_entry.manager.as_deref(), status_entry.operation.as_deref()),
        (Some("herd-controller"), Some("Apply"))
    );
    assert_eq!(written.spec.weight, 1.0, "the status apply leaves the spec");
    let read = api.get_status("rs").await.expect("get the status");
    assert_eq!(read.status.and_then(|s| s.observed_generation), Some(1));
}

/// The interpreter of the Python client's virtualenv, as scripts/install-tools.sh makes it
/// (`FARM_PYTHON` to use another).
pub fn python() -> PathBuf {
    if let Ok(python) = std::env::var("FARM_PYTHON") {
        return python.into();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-tools.sh");
    let text = std::fs::read_to_string(&script).expect("scripts/install-tools.sh");
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("PYTHON_CLIENT_VERSION="))
        .expect("PYTHON_CLIENT_VERSION in scripts/install-tools.sh");
    let cache = std::env::var("FARM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache/farm-apiserver"));
    let python = cache.join(format!("python-kubernetes-{version}/bin/python"));
    assert!(python.exists(), "{} is missing: run scripts/install-tools.sh (make test does)", python.display());
    python
}

/// Runs tests/python/clients.py against `c` in `namespace`, which must hold no llamas.
pub fn python_clients(c: &impl Cluster, namespace: &str, home: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/clients.py");
    let out = Command::new(python())
        .arg(script)
        .arg(namespace)
        .env("KUBECONFIG", c.kubeconfig_path())
        .env("HOME", home)
        .output()
        .expect("run the Python client");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the Python client's assertions failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("every assertion held"), "{stdout}");
}
