//! A cluster-scoped resource kept in etcd, through a whole server built with the library: its
//! objects are written under `<prefix>/<plural>/<name>` (the kube-apiserver's layout, no empty
//! namespace segment), and creates, reads, lists, watches from the watch cache and deletes
//! behave as with memory storage. etcd is `$ETCD` or the one on the PATH
//! (`scripts/control-plane.sh etcd` installs it).

mod common;

use apiserver_kit::prelude::*;
use apiserver_kit::server::StorageOptions;
use apiserver_kit::store::etcd::connection::{EtcdConfig, connect};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A gadget of the whole cluster: just a size.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "test.example.com", version = "v1", kind = "Gadget", derive = "PartialEq")]
pub struct GadgetSpec {
    size: i64,
}

impl ApiResource for Gadget {}
impl Strategy for Gadget {}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The etcd binary: `ETCD`, else the one the workspace's `scripts/control-plane.sh etcd` builds.
fn etcd_path() -> String {
    std::env::var("ETCD").unwrap_or_else(|_| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/control-plane.sh");
        let out = Command::new("bash").arg(script).arg("etcd").output().expect("run scripts/control-plane.sh etcd");
        assert!(out.status.success(), "scripts/control-plane.sh etcd: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
}

/// A private etcd on free loopback ports, killed when dropped.
struct Etcd {
    child: Child,
    endpoint: String,
    _dir: tempfile::TempDir,
}

impl Etcd {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (endpoint, peer) =
            (format!("http://127.0.0.1:{}", free_port()), format!("http://127.0.0.1:{}", free_port()));
        let child = Command::new(etcd_path())
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &endpoint, "--advertise-client-urls", &endpoint])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("default={peer}"), "--unsafe-no-fsync", "--log-level", "error"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start etcd (scripts/control-plane.sh etcd installs it, or set ETCD)");
        Self { child, endpoint, _dir: dir }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server's URL and a client with its token, once it is ready.
async fn serve(etcd: &Etcd, dir: &std::path::Path) -> (String, reqwest::Client) {
    let config = EtcdConfig {
        endpoints: vec![etcd.endpoint.clone()],
        prefix: "/registry/test.example.com".into(),
        ca_file: None,
        client_cert: None,
        request_timeout: Duration::from_secs(5),
    };
    let options = ServerOptions {
        storage: StorageOptions::Etcd { config, compaction_interval: None },
        ..ServerOptions::default()
    };
    let builder = ApiServerBuilder::new(Identity::new("gadget-apiserver", "0.1.0"), "test.example.com", &["v1"])
        .stored(StoredResource::<Gadget>::new());
    let (base, token) = common::serve(builder, options, dir).await;
    (base, common::client(&token, false))
}

async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let code = response.status().as_u16();
    (code, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap())
}

#[tokio::test]
async fn a_cluster_scoped_resource_in_etcd_is_kept_at_the_kube_apiservers_keys() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let (base, client) = serve(&etcd, dir.path()).await;
    let gadgets = format!("{base}/apis/test.example.com/v1/gadgets");
    let body = json!({"apiVersion": "test.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g1", "namespace": "somewhere"}, "spec": {"size": 3}});
    let (code, created) =
        send(client.post(&gadgets).header("Content-Type", "application/json").body(body.to_string())).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"].get("namespace"), None);
    let revision = created["metadata"]["resourceVersion"].as_str().unwrap().to_string();

    let etcd_client = connect(&EtcdConfig {
        endpoints: vec![etcd.endpoint.clone()],
        prefix: String::new(),
        ca_file: None,
        client_cert: None,
        request_timeout: Duration::from_secs(5),
    })
    .await
    .unwrap();
    let stored = etcd_client.get("/registry/test.example.com/gadgets/g1").await.unwrap();
    assert_eq!(stored.kvs.len(), 1, "the object is at <prefix>/<plural>/<name>");
    let stored: Value = serde_json::from_slice(&stored.kvs[0].value).unwrap();
    assert_eq!((stored["metadata"]["name"].as_str(), stored["metadata"].get("namespace")), (Some("g1"), None));
    assert!(etcd_client.get("/registry/test.example.com/gadgets//g1").await.unwrap().kvs.is_empty());

    let (code, read) = send(client.get(format!("{gadgets}/g1"))).await;
    assert_eq!((code, read["spec"]["size"].as_i64()), (200, Some(3)));
    let (code, _) = send(client.get(format!("{base}/apis/test.example.com/v1/namespaces/somewhere/gadgets/g1"))).await;
    assert_eq!(code, 404);
    let watch = client.get(format!("{gadgets}?watch=true&resourceVersion={revision}")).send().await.unwrap();
    let (code, _) = send(client.delete(format!("{gadgets}/g1"))).await;
    assert_eq!(code, 200);
    let (code, list) = send(client.get(&gadgets)).await;
    assert_eq!((code, list["items"].as_array().map(Vec::len)), (200, Some(0)));
    let mut events = String::new();
    let mut watch = watch;
    while !events.contains('\n') {
        let chunk = tokio::time::timeout(Duration::from_secs(30), watch.chunk()).await.unwrap().unwrap().unwrap();
        events.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let event: Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    assert_eq!((event["type"].as_str(), event["object"]["metadata"]["name"].as_str()), (Some("DELETED"), Some("g1")));
    assert!(etcd_client.get("/registry/test.example.com/gadgets/g1").await.unwrap().kvs.is_empty());
}
