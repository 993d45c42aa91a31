//! The serving certificate the installed server manages (`kubectl apply -k manifests`: no
//! Secret, no caBundle in the install), rotated on the node: with a certificate of 12 s and a CA
//! of 48 s, a client reading through the aggregator sees the certificate renewed and the CA
//! replaced (a new one trusted, signing, the old one gone from the APIServices' caBundle)
//! without one failed request.

use crate::common::node::{Node, eventually_within};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SECRET: &str = "farm-apiserver-serving-cert";

/// A field of the certificate Secret, PEM.
fn secret_pem(node: &Node, key: &str) -> Option<String> {
    use base64::Engine;
    let (ok, out, _) = node.kubectl(&[
        "get",
        "secret",
        "-n",
        "farm-system",
        SECRET,
        "-o",
        &format!("jsonpath={{.data.{}}}", key.replace('.', "\\.")),
    ]);
    let bytes = base64::engine::general_purpose::STANDARD.decode(out.trim()).ok()?;
    ok.then(|| String::from_utf8(bytes).ok()).flatten()
}

/// The caBundle of `v1.farm.example.com`, PEM.
fn published(node: &Node) -> Option<String> {
    use base64::Engine;
    let out = node.must(&["get", "apiservice", "v1.farm.example.com", "-o", "jsonpath={.spec.caBundle}"]);
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(out.trim()).ok()?).ok()
}

pub fn the_managed_certificate_rotates_under_load_without_a_failed_request(node: &Node) {
    // Short validities, and a Secret made anew with them (the running one has a year-long CA).
    let deployment = "deployment/farm-apiserver";
    let short = ["FARM_CERTIFICATE_VALIDITY_SECONDS=12", "FARM_CERTIFICATE_CA_VALIDITY_SECONDS=48"];
    node.must(&["-n", "farm-system", "set", "env", deployment, short[0], short[1]]);
    node.must(&["-n", "farm-system", "rollout", "status", deployment, "--timeout=90s"]);
    let first_signer = made_anew(node, |lifetime| lifetime <= 60);

    let (succeeded, failures, stop) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
    let kubeconfig = node.dir.join("kubeconfig");
    let reader = node.in_netns({
        let (succeeded, failures, stop) = (succeeded.clone(), failures.clone(), stop.clone());
        move || async move {
            let client = Node::kube_client(kubeconfig).await;
            while !stop.load(Ordering::SeqCst) {
                let request =
                    http::Request::get("/apis/farm.example.com/v1/namespaces/default/llamas").body(Vec::new()).unwrap();
                match client.request_text(request).await {
                    Ok(_) => {
                        succeeded.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(error) => failures.lock().unwrap().push(error.to_string()),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    let started = Instant::now();
    eventually_within("a new CA to sign and the first to leave the published bundle", Duration::from_secs(150), || {
        let (signer, bundle) = (secret_pem(node, "signer.crt")?, secret_pem(node, "ca.crt")?);
        (signer != first_signer && !bundle.contains(first_signer.trim()) && published(node)? == bundle).then_some(())
    });
    stop.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    let (succeeded, failures) = (succeeded.load(Ordering::SeqCst), failures.lock().unwrap().clone());
    eprintln!(
        "managed certificate: a CA rotation and its renewals in {:.0} s, {succeeded} reads through the aggregator, {} failed",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(failures.is_empty(), "reads failed during the rotation: {:?}", &failures[..failures.len().min(5)]);
    assert!(succeeded > 100, "too few reads: {succeeded}");
    let logs = node.must(&["-n", "farm-system", "logs", deployment]);
    assert!(logs.matches("serving the certificate of the Secret").count() >= 4, "{logs}");

    // Back to the install's validities, and a year-long CA at once (the steps that follow stop
    // every replica for longer than the short one lives).
    let defaults = ["FARM_CERTIFICATE_VALIDITY_SECONDS-", "FARM_CERTIFICATE_CA_VALIDITY_SECONDS-"];
    node.must(&["-n", "farm-system", "set", "env", deployment, defaults[0], defaults[1]]);
    node.must(&["-n", "farm-system", "rollout", "status", deployment, "--timeout=90s"]);
    made_anew(node, |lifetime| lifetime > 86_400);
}

/// Deletes the Secret until the replica makes it anew with a CA whose validity (seconds) is as
/// `wanted` says (a replica of the previous rollout, still shutting down, may make it first
/// with its own), published and served; returns that CA.
fn made_anew(node: &Node, wanted: impl Fn(i64) -> bool) -> String {
    use farm_apiserver::certificates::material::Facts;
    node.must(&["-n", "farm-system", "delete", "secret", SECRET]);
    eventually_within("the replica to make the Secret anew", Duration::from_secs(90), || {
        let signer = secret_pem(node, "signer.crt")?;
        let ca = Facts::of_pem(&signer).ok()?.pop()?;
        if !wanted(ca.not_after - ca.not_before) {
            node.kubectl(&["-n", "farm-system", "delete", "secret", SECRET]);
            return None;
        }
        (published(node)? == secret_pem(node, "ca.crt")? && node.kubectl(&["get", "llamas"]).0).then_some(signer)
    })
}
