//! etcd's certificates rotated as manifests/ha's comment and docs/installing.md say, under load:
//! a Job made from the CronJob `etcd-certificates` with `FARM_ROTATE_CA=true` puts a new CA in
//! every bundle and restarts the members one at a time; the CronJob's later runs make it sign
//! once every member accepts a certificate of it and it has been in the bundles long enough for
//! the kubelets to update the mounted Secrets (60 s here, `FARM_SETTLE_SECONDS`); the members
//! then serve certificates of the new CA, read at each handshake, and the server's replicas
//! connect with their new client certificate, reread from their files. Nothing acknowledged is
//! lost, and only the members' restarts fail requests.

use super::high_availability::replicas;
use super::load::Load;
use crate::common::node::{Node, eventually_within};
use std::time::{Duration, Instant};

/// A Job from the CronJob `etcd-certificates` with `env` (`NAME=value`), run to its end; its log.
fn run_job(node: &Node, name: &str, env: &[&str]) -> String {
    let job = node.must(&[
        "-n",
        "farm-system",
        "create",
        "job",
        name,
        "--from=cronjob/etcd-certificates",
        "--dry-run=client",
        "-o",
        "yaml",
    ]);
    let mut set_env = vec!["set", "env", "--local", "-f", "-", "-o", "yaml"];
    set_env.extend_from_slice(env);
    let (ok, job, err) = node.kubectl_with_stdin(&set_env, Some(&job));
    assert!(ok, "{err}");
    let (ok, _, err) = node.kubectl_with_stdin(&["create", "-f", "-"], Some(&job));
    assert!(ok, "{err}");
    let job = format!("job/{name}");
    node.must(&["-n", "farm-system", "wait", "--for=condition=Complete", &job, "--timeout=120s"]);
    let log = node.must(&["-n", "farm-system", "logs", &job]);
    node.must(&["-n", "farm-system", "delete", &job]);
    log
}

/// The subject of the certificate `key` of the Secret `secret`.
fn subject_of(node: &Node, secret: &str, key: &str) -> String {
    let path = format!("jsonpath={{.data.{}}}", key.replace('.', "\\."));
    let base64 = node.must(&["-n", "farm-system", "get", "secret", secret, "-o", &path]);
    let pem = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, base64.trim()).unwrap();
    let facts = farm_apiserver::certificates::material::Facts::of_pem(&String::from_utf8(pem).unwrap()).unwrap();
    x509_parser::parse_x509_certificate(&facts[0].der).unwrap().1.subject().to_string()
}

/// The issuer of the certificate each member serves on its client port, from inside the node.
fn issuers_served(node: &Node) -> Vec<String> {
    let pods = node.json(&["pods", "-n", "farm-system", "-l", "app.kubernetes.io/name=etcd"]);
    let ips: Vec<String> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["status"]["podIP"].as_str().map(String::from))
        .collect();
    ips.iter()
        .map(|ip| {
            let script = format!(
                "openssl s_client -connect {ip}:2379 </dev/null 2>/dev/null | openssl x509 -noout -issuer -nameopt RFC2253"
            );
            let out = node.exec(&["bash", "-c", &script], None);
            String::from_utf8_lossy(&out.stdout).trim().trim_start_matches("issuer=").to_string()
        })
        .collect()
}

/// The whole rotation under load; nothing acknowledged lost, failures only from the restarts.
pub fn a_ca_rotation_under_load_loses_nothing(node: &Node, owner: &str) {
    let old = subject_of(node, "etcd-ca", "signer.crt");
    let load = Load::start(node, owner, "etcd-ca");
    load.until_more_writes(30);
    let started = Instant::now();
    let out = run_job(node, "etcd-rotate", &["FARM_ROTATE_CA=true"]);
    assert!(out.contains("a new CA joins the trusted bundle") && out.contains("restarting the members"), "{out}");
    eprintln!("$ kubectl -n farm-system logs job/etcd-rotate\n{out}");
    node.must(&["-n", "farm-system", "rollout", "status", "statefulset/etcd", "--timeout=300s"]);
    let mut runs = 0;
    let promoted = eventually_within("the new CA to sign", Duration::from_secs(300), || {
        runs += 1;
        let out = run_job(node, &format!("etcd-certificates-{runs}"), &["FARM_SETTLE_SECONDS=60"]);
        let signs = out.contains("the new CA signs from now on");
        if !signs {
            eprintln!("etcd-certificates-{runs}: {}", out.lines().next().unwrap_or_default());
        }
        signs.then_some(out)
    });
    assert!(promoted.contains("all 3 members accept the new CA"), "{promoted}");
    eprintln!("$ kubectl -n farm-system logs job/etcd-certificates-{runs}\n{promoted}");
    let new = subject_of(node, "etcd-ca", "signer.crt");
    assert_ne!(new, old);
    eventually_within("every member to serve a certificate of the new CA", Duration::from_secs(240), || {
        let issuers = issuers_served(node);
        (issuers.len() == 3 && issuers.iter().all(|i| *i == new)).then_some(())
    });
    for replica in replicas(node) {
        let pod = replica["metadata"]["name"].as_str().unwrap().to_string();
        eventually_within("each replica to reread its etcd files", Duration::from_secs(180), || {
            let log = node.must(&["-n", "farm-system", "logs", &pod]);
            log.contains("reloaded the etcd TLS files").then_some(())
        });
    }
    let rotated = started.elapsed();
    load.until_more_writes(30);
    let tally = load.stop();
    eprintln!(
        "etcd's CA rotated under load in {:.1} s ({runs} later runs): {} writes acknowledged, {} requests succeeded, \
         failures {:?}",
        rotated.as_secs_f64(),
        tally.acknowledged.len(),
        tally.succeeded,
        tally.failures
    );
    tally.assert_nothing_lost(node);
    // Each member's restart fails at most the requests in flight on it (as a drain's does); the
    // new certificates, the bundle and the server's reread files fail none.
    tally.assert_only_stopping_members_failed(3, "a CA rotation");
}
