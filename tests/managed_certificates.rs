//! Serving certificates the server keeps in a Secret (`--certificate-secret`), through a real
//! kube-apiserver (`scripts/control-plane.sh`): two replicas share one Secret, write the CA
//! bundle into the APIServices registered without one, and rotate the serving certificate and
//! the CA (validities of seconds here) while clients read, through the aggregator and directly
//! on new connections trusting what the APIServices publish, without one failed request.

mod common;

use base64::Engine;
use common::clients::Cluster;
use common::control_plane::{ControlPlane, Farm};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const SECRET: &str = "farm-apiserver-serving-cert";
const LLAMAS: &str = "/apis/farm.example.com/v1/namespaces/default/llamas";

/// Requests that succeeded and the failures seen, by one reader.
#[derive(Default)]
struct Tally {
    succeeded: AtomicUsize,
    failures: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    fn count(&self, outcome: Result<reqwest::StatusCode, String>) {
        match outcome {
            Ok(status) if status.is_success() => {
                self.succeeded.fetch_add(1, Ordering::Relaxed);
            }
            Ok(status) => self.failures.lock().unwrap().push(status.to_string()),
            Err(error) => self.failures.lock().unwrap().push(error),
        }
    }
}

/// The CA that signs now, the CAs trusted, and the serving certificate, as the Secret holds them.
async fn secret_state(secrets: &Api<Secret>) -> Option<(String, String, String)> {
    let data = secrets.get_opt(SECRET).await.ok()??.data?;
    let text = |key: &str| data.get(key).map(|b| String::from_utf8_lossy(&b.0).into_owned());
    Some((text("signer.crt")?, text("ca.crt")?, text("tls.crt")?))
}

/// The caBundle `v1.farm.example.com` publishes, PEM.
async fn published(apiservices: &Api<DynamicObject>) -> Option<String> {
    let apiservice = apiservices.get_opt("v1.farm.example.com").await.ok()??;
    let b64 = apiservice.data.pointer("/spec/caBundle")?.as_str()?.to_string();
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).ok()?).ok()
}

/// Reads llamas through the aggregator until `stop`.
async fn read_through_the_aggregator(cp: &ControlPlane, tally: Arc<Tally>, stop: tokio::sync::watch::Receiver<bool>) {
    let (url, client) = cp.apiserver();
    while !*stop.borrow() {
        let outcome = client.get(format!("{url}{LLAMAS}")).send().await;
        tally.count(outcome.map(|r| r.status()).map_err(|e| format!("through the aggregator: {e:?}")));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads llamas from each replica on a new connection each time, trusting the bundle the
/// APIService publishes at that moment, as the aggregator does, until `stop`.
async fn read_directly(
    identity: reqwest::Identity,
    apiservices: Api<DynamicObject>,
    ports: Vec<u16>,
    tally: Arc<Tally>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    while !*stop.borrow() {
        let Some(bundle) = published(&apiservices).await else { continue };
        let mut builder = reqwest::Client::builder().pool_max_idle_per_host(0).identity(identity.clone());
        for ca in reqwest::Certificate::from_pem_bundle(bundle.as_bytes()).unwrap() {
            builder = builder.add_root_certificate(ca);
        }
        let client = builder.build().unwrap();
        for port in &ports {
            let outcome = client.get(format!("https://localhost:{port}{LLAMAS}")).send().await;
            tally.count(outcome.map(|r| r.status()).map_err(|e| format!("directly to port {port}: {e:?}")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn replicas_share_a_managed_certificate_that_rotates_under_load_without_a_failed_request() {
    let cp = Arc::new(ControlPlane::up());
    let validities = ["--certificate-validity-seconds", "12", "--certificate-ca-validity-seconds", "48"];
    let first = Farm::start_managed(&cp.kubeconfig("admin"), SECRET, &validities);
    let second = Farm::start_managed(&cp.kubeconfig("admin"), SECRET, &validities);
    // Registered without a caBundle: the aggregator reaches the group once a replica wrote it.
    cp.register(&first).await;
    let client = cp.client().await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "farm-system");
    let apiservices: Api<DynamicObject> =
        Api::all_with(client, &farm_apiserver::certificates::controller::apiservice_resource());
    let (first_signer, _, first_leaf) = secret_state(&secrets).await.expect("the Secret a replica made");

    let mut pem = std::fs::read(cp.dir.path().join("admin.crt")).unwrap();
    pem.extend(std::fs::read(cp.dir.path().join("admin.key")).unwrap());
    let identity = reqwest::Identity::from_pem(&pem).unwrap();
    let (through, direct) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let readers = [
        tokio::spawn({
            let (cp, tally, stopped) = (cp.clone(), through.clone(), stopped.clone());
            async move { read_through_the_aggregator(&cp, tally, stopped).await }
        }),
        tokio::spawn(read_directly(
            identity,
            apiservices.clone(),
            vec![first.port, second.port],
            direct.clone(),
            stopped,
        )),
    ];

    // The event: a new CA signs, and the first one has left the bundle (it expired).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let state = secret_state(&secrets).await;
        if let Some((signer, trusted, _)) = &state
            && *signer != first_signer
            && !trusted.contains(first_signer.trim())
        {
            break;
        }
        assert!(Instant::now() < deadline, "no CA rotation in 120 s:\n{}\n{}", first.log(), second.log());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Readers go on until the new bundle is what the APIService publishes.
    let (_, bundle, leaf) = secret_state(&secrets).await.unwrap();
    while published(&apiservices).await.as_deref() != Some(bundle.as_str()) {
        assert!(Instant::now() < deadline, "the APIService never published the bundle without the old CA");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    stop.send(true).unwrap();
    for reader in readers {
        reader.await.unwrap();
    }

    assert_ne!(leaf, first_leaf);
    for (what, tally) in [("through the aggregator", &through), ("directly", &direct)] {
        eprintln!("{} requests {what} succeeded", tally.succeeded.load(Ordering::Relaxed));
        let failures = tally.failures.lock().unwrap();
        assert!(
            failures.is_empty(),
            "{} requests {what} failed: {:?}",
            failures.len(),
            &failures[..failures.len().min(5)]
        );
        assert!(tally.succeeded.load(Ordering::Relaxed) > 100, "too few requests {what}");
    }
    for farm in [&first, &second] {
        let log = farm.log();
        let served = log.matches("serving the certificate of the Secret").count();
        assert!(served >= 4, "a replica served {served} certificates in the run:\n{log}");
    }
    let (ok, out, _) = cp.run(&["get", "llamas", "-o", "name"], None);
    assert!(ok && out.is_empty(), "kubectl through the aggregator: {out}");
}
