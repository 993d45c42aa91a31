//! `scripts/control-plane.sh` never uses cached Kubernetes binaries that its current recipe did
//! not build: their folder is named after a hash of the recipe, and each binary's `--version`
//! must print the recipe's version. These tests run the script's `recipe` and `check` commands
//! (which never build) against caches holding stand-in binaries.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh");
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
    stand_ins(&dir, "v1.20.2");
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
        stderr(&out).contains("--version printed 'Kubernetes v1.19.0', not 'Kubernetes v1.20.2'"),
        "unclear error: {}",
        stderr(&out)
    );
}

#[test]
fn binaries_built_by_an_older_recipe_are_not_used() {
    let cache = tempfile::tempdir().unwrap();
    // The right version, but in the folder of another recipe (and in the layout before hashes).
    stand_ins(&cache.path().join("kubernetes-1.20.2-000000000000"), "v1.20.2");
    stand_ins(&cache.path().join("bin"), "v1.20.2");
    let out = run(Path::new(SCRIPT), cache.path(), &["check"]);
    assert!(!out.status.success(), "binaries of another recipe passed the check");
    let current = recipe_dir(Path::new(SCRIPT), cache.path());
    assert!(stderr(&out).contains(&format!("no kube-apiserver in {}", current.display())), "{}", stderr(&out));
}

#[test]
fn changing_any_build_step_or_the_version_changes_the_cache_folder() {
    let cache = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(SCRIPT).unwrap();
    let copy = |name: &str, text: &str| {
        let path = cache.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let same = recipe_dir(&copy("same.sh", &original), cache.path());
    assert_eq!(same, recipe_dir(Path::new(SCRIPT), cache.path()), "the recipe's hash is not deterministic");
    let edits = [
        ("CGO_ENABLED=0", "CGO_ENABLED=1"),
        ("patch_reflect2 \"$tree\"", "true"),
        ("apt-get source -qq kubernetes", "apt-get source -qq kubernetes=1.20.2"),
        ("K8S_VERSION=\"1.20.2\"", "K8S_VERSION=\"1.20.3\""),
    ];
    for (i, (from, to)) in edits.into_iter().enumerate() {
        assert!(original.contains(from), "the script no longer contains {from:?}");
        let changed = recipe_dir(&copy(&format!("changed-{i}.sh"), &original.replacen(from, to, 1)), cache.path());
        assert_ne!(changed, same, "changing {from:?} to {to:?} kept the cache folder");
    }
}
