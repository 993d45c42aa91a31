//! `scripts/control-plane.sh` never uses cached Kubernetes binaries that its current recipe did
//! not build: their folder is named after a hash of the recipe (the version, the Go module in
//! tools/kubernetes and the build steps), and each binary's `--version` must print the recipe's
//! version. These tests run the script's `recipe` and `check` commands (which never build)
//! against caches holding stand-in binaries.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh");
/// The release the script builds by default.
const VERSION: &str = "v1.37.2";
const COMPONENTS: [&str; 5] = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"];

/// Runs `script` with `args`, the cache in `cache`, no binaries named by the environment, and a
/// stand-in etcd (these tests are about the Kubernetes binaries).
fn run(script: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(script)
        .args(args)
        .env("FARM_CACHE", cache)
        .env("ETCD", "/bin/true")
        .env_remove("KUBE_APISERVER")
        .env_remove("KUBE_CONTROLLER_MANAGER")
        .env_remove("K8S_VERSION")
        .output()
        .expect("run control-plane.sh")
}

/// The cache folder the script's recipe builds into.
fn recipe_dir(script: &Path, cache: &Path) -> PathBuf {
    let out = run(script, cache, &["recipe"]);
    assert!(out.status.success(), "recipe: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Stand-ins for every Kubernetes binary in `dir` that print `version` as `--version` does.
fn stand_ins(dir: &Path, version: &str) {
    std::fs::create_dir_all(dir).unwrap();
    for component in COMPONENTS {
        let path = dir.join(component);
        std::fs::write(&path, format!("#!/bin/sh\necho 'Kubernetes {version}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn binaries_of_this_recipe_and_version_pass_the_check() {
    let cache = tempfile::tempdir().unwrap();
    let dir = recipe_dir(Path::new(SCRIPT), cache.path());
    stand_ins(&dir, VERSION);
    let out = run(Path::new(SCRIPT), cache.path(), &["check"]);
    assert!(out.status.success(), "check failed: {}", stderr(&out));
    let printed = String::from_utf8(out.stdout).unwrap();
    for component in COMPONENTS {
        assert!(printed.contains(&dir.join(component).display().to_string()), "{component} not printed: {printed}");
    }
}

#[test]
fn binaries_that_print_another_version_are_refused() {
    let cache = tempfile::tempdir().unwrap();
    let dir = recipe_dir(Path::new(SCRIPT), cache.path());
    stand_ins(&dir, "v1.19.0");
    let out = run(Path::new(SCRIPT), cache.path(), &["check"]);
    assert!(!out.status.success(), "stale binaries passed the check");
    assert!(
        stderr(&out).contains(&format!("--version printed 'Kubernetes v1.19.0', not 'Kubernetes {VERSION}'")),
        "unclear error: {}",
        stderr(&out)
    );
}

#[test]
fn binaries_built_by_an_older_recipe_are_not_used() {
    let cache = tempfile::tempdir().unwrap();
    // The right version, but in the folder of another recipe (and in the layout before hashes).
    stand_ins(&cache.path().join(format!("kubernetes-{}-000000000000", &VERSION[1..])), VERSION);
    stand_ins(&cache.path().join("bin"), VERSION);
    let out = run(Path::new(SCRIPT), cache.path(), &["check"]);
    assert!(!out.status.success(), "binaries of another recipe passed the check");
    let current = recipe_dir(Path::new(SCRIPT), cache.path());
    assert!(stderr(&out).contains(&format!("no kube-apiserver in {}", current.display())), "{}", stderr(&out));
}

/// A copy of the repository's script and Go modules under `root`, with `edit` made to the text
/// of the file at `path` (relative to the repository); returns the copied script.
fn copy_with(root: &Path, path: &str, edit: (&str, &str)) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "scripts/control-plane.sh",
        "tools/kubernetes/go.mod",
        "tools/kubernetes/go.sum",
        "tools/etcd/go.mod",
        "tools/etcd/go.sum",
    ] {
        let text = std::fs::read_to_string(repo.join(file)).unwrap();
        let text = if file == path {
            assert!(text.contains(edit.0), "{file} no longer contains {:?}", edit.0);
            text.replacen(edit.0, edit.1, 1)
        } else {
            text
        };
        std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
        std::fs::write(root.join(file), text).unwrap();
    }
    root.join("scripts/control-plane.sh")
}

#[test]
fn changing_any_build_step_the_module_or_the_version_changes_the_cache_folder() {
    let cache = tempfile::tempdir().unwrap();
    let copies = tempfile::tempdir().unwrap();
    let same = recipe_dir(&copy_with(&copies.path().join("same"), "", ("", "")), cache.path());
    assert_eq!(same, recipe_dir(Path::new(SCRIPT), cache.path()), "the recipe's hash is not deterministic");
    let script = "scripts/control-plane.sh";
    let edits = [
        (
            script,
            (
                "CGO_ENABLED=0 go build -trimpath -ldflags \"$(kubernetes_ldflags",
                "CGO_ENABLED=1 go build -trimpath -ldflags \"$(kubernetes_ldflags",
            ),
        ),
        (script, ("gitTreeState=clean", "gitTreeState=dirty")),
        (script, ("K8S_DEFAULT_VERSION=\"1.37.2\"", "K8S_DEFAULT_VERSION=\"1.37.1\"")),
        ("tools/kubernetes/go.mod", ("k8s.io/api => k8s.io/api v0.37.2", "k8s.io/api => k8s.io/api v0.37.1")),
        ("tools/kubernetes/go.sum", ("h1:", "h1:x")),
    ];
    for (i, (path, edit)) in edits.into_iter().enumerate() {
        let changed = recipe_dir(&copy_with(&copies.path().join(i.to_string()), path, edit), cache.path());
        assert_ne!(changed, same, "changing {:?} to {:?} in {path} kept the cache folder", edit.0, edit.1);
    }
    // Another release asked for is built in a folder of its own.
    let other = Command::new("bash")
        .arg(SCRIPT)
        .arg("recipe")
        .env("FARM_CACHE", cache.path())
        .env("K8S_VERSION", "1.35.4")
        .output()
        .unwrap();
    let other = String::from_utf8(other.stdout).unwrap();
    assert!(other.contains("kubernetes-1.35.4-"), "{other}");
}
