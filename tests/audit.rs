//! The audit log, black-box against the real binary: each request leaves exactly the events its
//! policy rule asks for (levels, stages, bodies, managedFields), with the request's `Audit-ID`
//! sent back; a watch has a `ResponseStarted`; the bearer token never appears; 10,000 requests
//! from 64 connections lose no event, across rotations; rotation keeps `--audit-log-maxbackup`
//! files; events queued at shutdown are written. (Through the aggregator, with delegated
//! authorization's decisions: `tests/e2e.rs`.)

mod common;

use common::{Server, llama, llama_path, llamas};
use futures::StreamExt;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// One rule per level, and the policy's own omitted stage and managedFields.
const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: None
  nonResourceURLs: ["/readyz", "/livez", "/healthz", "/metrics"]
- level: RequestResponse
  verbs: [create]
  resources: [{group: farm.example.com, resources: [llamas]}]
- level: Request
  verbs: [patch, update]
  omitStages: [RequestReceived]
  omitManagedFields: false
- level: Metadata
  resources: [{group: farm.example.com}]
- level: None
"#;

/// A server writing its audit log to `dir/audit.log` under `policy`, with `extra` flags.
async fn audited(dir: &Path, policy: &str, extra: &[&str]) -> Server {
    std::fs::write(dir.join("policy.yaml"), policy).unwrap();
    let policy = dir.join("policy.yaml").display().to_string();
    let log = dir.join("audit.log").display().to_string();
    let mut args = vec!["--audit-policy-file", &policy, "--audit-log-path", &log];
    args.extend_from_slice(extra);
    Server::start_with(&args).await
}

/// Every event in the log files of `dir` (rotated ones first).
fn events(dir: &Path) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    // Backups sort by their time, and before `audit.log`.
    files.sort_by_key(|p| (p.file_name().unwrap() == "audit.log", p.clone()));
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect()
}

/// Stops `server` gracefully and waits for it.
async fn stop(mut server: Server) {
    server.terminate();
    assert!(server.exit_status(Duration::from_secs(30)).await.is_some_and(|s| s.success()));
}

fn summary(event: &Value) -> (String, String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (text(&event["verb"]), text(&event["level"]), text(&event["stage"]))
}

#[tokio::test]
async fn each_request_leaves_the_events_its_rule_asks_for() {
    let dir = tempfile::tempdir().unwrap();
    let s = audited(dir.path(), POLICY, &[]).await;
    let path = llama_path("default", "dolly");
    let created = s
        .client
        .post(s.url(&llamas("default")))
        .header("audit-id", "create-1")
        .json(&llama("dolly", 1.0, 2.0))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    assert_eq!(created.headers()["audit-id"], "create-1", "the request's Audit-ID comes back");
    let patched = s
        .client
        .patch(s.url(&path))
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"spec":{"weight":3}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 200);
    let got = s.client.get(s.url(&path)).send().await.unwrap();
    let generated = got.headers()["audit-id"].to_str().unwrap().to_string();
    assert_eq!(generated.len(), 36, "an Audit-ID is made when the request has none");
    let missing = s.client.get(s.url(&llama_path("default", "nobody"))).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(s.client.get(s.url("/version")).send().await.unwrap().status(), 200);
    let token = s.token.clone();
    stop(s).await;

    let events = events(dir.path());
    let seen: Vec<_> = events.iter().map(summary).collect();
    let expected = [
        ("create", "RequestResponse", "RequestReceived"),
        ("create", "RequestResponse", "ResponseComplete"),
        ("patch", "Request", "ResponseComplete"),
        ("get", "Metadata", "RequestReceived"),
        ("get", "Metadata", "ResponseComplete"),
        ("get", "Metadata", "RequestReceived"),
        ("get", "Metadata", "ResponseComplete"),
    ]
    .map(|(v, l, s)| (v.to_string(), l.to_string(), s.to_string()));
    assert_eq!(seen, expected, "health, metrics and /version are not recorded");

    let create = &events[1];
    assert_eq!(create["auditID"], "create-1");
    assert_eq!(create["objectRef"]["name"], "dolly", "named from the request's object");
    assert_eq!(create["requestObject"]["spec"]["weight"], 1.0);
    assert_eq!(create["responseObject"]["metadata"]["name"], "dolly");
    assert!(create["responseObject"]["metadata"]["managedFields"].is_null(), "the policy omits managedFields");
    assert_eq!(create["responseStatus"], serde_json::json!({"metadata": {}, "code": 201}));
    assert_eq!(create["user"]["username"], "standalone-token");
    assert_eq!(create["annotations"]["authorization.k8s.io/decision"], "allow");
    let patch = &events[2];
    assert_eq!(patch["requestObject"], serde_json::json!({"spec": {"weight": 3}}), "a patch's object is the patch");
    assert!(patch["responseObject"].is_null(), "no response at level Request");
    assert_eq!(events[4]["auditID"], generated.as_str());
    assert!(events[4]["requestObject"].is_null() && events[4]["responseObject"].is_null());
    let failed = &events[6]["responseStatus"];
    assert_eq!((failed["code"].as_u64(), failed["reason"].as_str()), (Some(404), Some("NotFound")));
    assert_eq!(failed["message"], r#"llamas.farm.example.com "nobody" not found"#);
    let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    assert!(!text.contains(&token), "the bearer token is never recorded");
}

#[tokio::test]
async fn a_watch_is_recorded_when_it_starts_and_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let s = audited(
        dir.path(),
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  verbs: [watch]\n",
        &[],
    )
    .await;
    let response =
        s.client.get(s.url(&format!("{}?watch=true&timeoutSeconds=1", llamas("default")))).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut response = response;
    while response.chunk().await.unwrap().is_some() {}
    // The last event is written when the server has let go of the ended stream: wait for it to
    // be in the log before stopping, so that stopping is not what ends the watch.
    let log = dir.path().join("audit.log");
    common::wait_until("the watch's ResponseComplete event", async || {
        common::complete_lines(&log).iter().any(|l| l.contains(r#""stage":"ResponseComplete""#))
    })
    .await;
    stop(s).await;
    let stages: Vec<_> = events(dir.path()).iter().map(|e| e["stage"].as_str().unwrap().to_string()).collect();
    assert_eq!(stages, ["RequestReceived", "ResponseStarted", "ResponseComplete"]);
}

/// Sends `count` GETs and creates over 64 connections at once.
async fn load(s: &Server, count: usize) {
    let requests = futures::stream::iter(0..count).map(|i| {
        let request = if i % 4 == 0 {
            s.client.post(s.url(&llamas("default"))).json(&llama(&format!("l{i}"), 1.0, 1.0))
        } else {
            s.client.get(s.url(&llama_path("default", "l0")))
        };
        async move {
            let response = request.send().await.unwrap();
            let code = response.status().as_u16();
            // Read to the end: a client that drops bodies unread resets streams, and reqwest's
            // HTTP/2 client gives up on the connection after a thousand of its own resets.
            response.bytes().await.unwrap();
            code
        }
    });
    let codes: Vec<u16> = requests.buffer_unordered(64).collect().await;
    assert!(
        codes.iter().all(|c| [200, 201, 404].contains(c)),
        "{:?}",
        codes.iter().find(|c| ![200, 201, 404].contains(c))
    );
}

#[tokio::test]
async fn ten_thousand_requests_under_load_lose_no_event_and_rotation_keeps_maxbackup_files() {
    const REQUESTS: usize = 10_000;
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  resources: [{group: farm.example.com}]\n";
    let dir = tempfile::tempdir().unwrap();
    let s = audited(dir.path(), policy, &["--audit-log-maxsize", "1"]).await;
    load(&s, REQUESTS).await;
    let metrics = s.scrape().await;
    stop(s).await;
    let events = events(dir.path());
    assert_eq!(events.len(), REQUESTS, "one ResponseComplete per request, across every file");
    let mut ids: Vec<&str> = events.iter().map(|e| e["auditID"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), REQUESTS);
    let files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "log"))
        .count();
    assert!(files >= 4, "1 MB files: {files}");
    assert!(metrics.get("apiserver_audit_event_total").copied().unwrap_or_default() >= REQUESTS as f64 * 0.99);
    assert_eq!(metrics.get("apiserver_audit_error_total{plugin=\"buffered\"}").copied().unwrap_or_default(), 0.0);

    let dir = tempfile::tempdir().unwrap();
    let s = audited(dir.path(), policy, &["--audit-log-maxsize", "1", "--audit-log-maxbackup", "2"]).await;
    load(&s, REQUESTS).await;
    stop(s).await;
    let files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".log"))
        .collect();
    assert_eq!(files.len(), 3, "the log and two backups: {files:?}");
}

#[tokio::test]
async fn a_request_authentication_refuses_leaves_one_event_without_a_user() {
    let dir = tempfile::tempdir().unwrap();
    let s = audited(dir.path(), "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n", &[]).await;
    let refused = s.anonymous().get(s.url(&llamas("default"))).header("audit-id", "nobody-1").send().await.unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["audit-id"], "nobody-1");
    stop(s).await;
    let events = events(dir.path());
    let refused: Vec<&Value> = events.iter().filter(|e| e["auditID"] == "nobody-1").collect();
    assert_eq!(refused.len(), 1, "{events:#?}");
    let event = refused[0];
    assert_eq!((event["stage"].as_str(), event["verb"].as_str()), (Some("ResponseStarted"), Some("list")));
    assert_eq!(event["user"], serde_json::json!({}));
    assert_eq!(
        event["responseStatus"],
        serde_json::json!({"metadata": {}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
}

#[tokio::test]
async fn a_bad_policy_stops_the_server_at_start_and_half_a_configuration_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.yaml"), "apiVersion: v1\nkind: ConfigMap\n").unwrap();
    std::fs::write(dir.path().join("empty.yaml"), "apiVersion: audit.k8s.io/v1\nkind: Policy\n").unwrap();
    let log = dir.path().join("audit.log").display().to_string();
    for (policy, expected) in
        [("bad.yaml", "audit.k8s.io/v1 Policy"), ("empty.yaml", "loaded illegal policy with 0 rules")]
    {
        let policy = dir.path().join(policy).display().to_string();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_farm-apiserver"))
            .args(["serve", "--standalone", "--bind-address", "127.0.0.1", "--secure-port", "0"])
            .args(["--audit-policy-file", &policy, "--audit-log-path", &log])
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{stderr}");
    }
    // A log path without a policy: the server runs, and records nothing, as the kube-apiserver.
    let s = Server::start_with(&["--audit-log-path", &log]).await;
    assert_eq!(s.client.get(s.url(&llamas("default"))).send().await.unwrap().status(), 200);
    stop(s).await;
    assert!(std::fs::read_to_string(&log).unwrap_or_default().is_empty());
}

/// An event of a request at v1 records v1, and, at RequestResponse, the objects as the client
/// sent and received them, at v1.
#[tokio::test]
async fn events_record_the_version_a_request_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let s = audited(dir.path(), POLICY, &[]).await;
    let body = serde_json::json!({"apiVersion": "farm.example.com/v1", "kind": "Llama", "metadata": {"name": "spotty"},
        "spec": {"weight": 6, "height": 150, "coat": {"color": "white", "pattern": "Spotted"}}});
    let created = s
        .client
        .post(s.url("/apis/farm.example.com/v1/namespaces/default/llamas"))
        .header("audit-id", "create-v1")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    stop(s).await;
    let events = events(dir.path());
    let event = events
        .iter()
        .find(|e| e["auditID"] == "create-v1" && e["stage"] == "ResponseComplete")
        .expect("the create's event");
    assert_eq!(event["objectRef"]["apiVersion"], "v1");
    assert_eq!(event["requestObject"]["spec"]["coat"]["pattern"], "Spotted");
    assert_eq!(event["responseObject"]["apiVersion"], "farm.example.com/v1");
}

/// The policy `manifests/base/audit-policy.yaml` gives the Deployment records nothing of the aggregator's own calls,
/// every body of a write, and the metadata of reads.
#[test]
fn the_policy_the_deployment_mounts_is_valid() {
    use farm_apiserver::audit::policy::{Level, Policy};
    use farm_apiserver::auth::attributes::Attributes;
    use farm_apiserver::machinery::user::UserInfo;
    let manifests: Vec<Value> =
        serde_saphyr::from_multiple(include_str!("../manifests/base/audit-policy.yaml")).expect("YAML manifests");
    let text = manifests.iter().find_map(|m| m["data"]["policy.yaml"].as_str()).expect("a policy.yaml");
    let policy = Policy::parse(text).expect("a valid policy");
    let resource = |verb: &str, namespace: &str, name: &str| Attributes::Resource {
        verb: verb.into(),
        group: "farm.example.com".into(),
        version: "v1".into(),
        resource: "llamas".into(),
        subresource: String::new(),
        namespace: namespace.into(),
        name: name.into(),
    };
    let user = |name: &str, groups: &[&str]| UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    };
    let aggregator = user("system:kube-aggregator", &["system:masters"]);
    assert_eq!(policy.evaluate(&aggregator, &resource("get", "", "")).level, Level::None);
    let alice = user("alice", &[]);
    assert_eq!(policy.evaluate(&alice, &resource("patch", "a", "x")).level, Level::RequestResponse);
    assert_eq!(policy.evaluate(&alice, &resource("watch", "a", "")).level, Level::Metadata);
}
