//! The Llama `status` subresource, black-box over HTTPS against the standalone server (memory and
//! etcd), with kubectl and with kube-rs: a controller writes `status` through `/status` while users
//! own `spec`, as for a custom resource with `subresources: {status: {}}` on the kube-apiserver.

mod common;

use common::{Backend, Server, assert_status, backends, llama, llama_path, llamas, rv};
use farm_apiserver::resources::llama::{Llama, LlamaStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use rstest_reuse::apply;
use serde_json::{Value, json};

fn status_path(ns: &str, name: &str) -> String {
    format!("{}/status", llama_path(ns, name))
}

fn ready(status: &str, generation: i64) -> Value {
    json!({
        "observedGeneration": generation,
        "conditions": [{
            "type": "Ready", "status": status, "reason": "Grazing", "message": "",
            "lastTransitionTime": "2026-11-23T10:00:00Z", "observedGeneration": generation,
        }],
    })
}

async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let r = req.send().await.expect("request");
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

async fn put(s: &Server, path: &str, body: &Value) -> (u16, Value) {
    send(s.client.put(s.url(path)).json(body)).await
}

async fn merge_patch(s: &Server, path: &str, body: Value) -> (u16, Value) {
    let request = s.client.patch(s.url(path)).header("content-type", "application/merge-patch+json");
    send(request.body(body.to_string())).await
}

#[apply(backends)]
async fn a_create_drops_the_status_and_a_status_write_changes_nothing_else(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut body = llama("dolly", 100.0, 170.0);
    body["status"] = ready("True", 7);
    let (code, created) = send(s.client.post(s.url(&llamas("default"))).json(&body)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created.get("status"), None, "a create may not set the status");

    // A PUT of /status that also changes the spec and the labels: only the status is taken.
    let mut write = created.clone();
    write["status"] = ready("True", 1);
    write["spec"]["weight"] = json!(1.0);
    write["metadata"]["labels"] = json!({"herd": "north"});
    let (code, written) = put(&s, &status_path("default", "dolly"), &write).await;
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["status"], ready("True", 1));
    assert_eq!(written["spec"], created["spec"], "a status write keeps the spec");
    assert_eq!(written["metadata"].get("labels"), None, "and the metadata");
    assert_eq!(written["metadata"]["generation"], 1, "and the generation");
    assert!(rv(&written) > rv(&created));

    // GET of /status is the whole object, as stored.
    let (code, read) = send(s.client.get(s.url(&status_path("default", "dolly")))).await;
    assert_eq!((code, &read), (200, &written));

    // The same body again is stale: the resourceVersion in it is a precondition.
    let (code, stale) = put(&s, &status_path("default", "dolly"), &write).await;
    assert_eq!(code, 409);
    assert_status(&stale, 409, "Conflict");
}

#[apply(backends)]
async fn the_main_resource_keeps_the_stored_status_and_the_generation_follows_the_spec(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    send(s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 100.0, 170.0))).await;
    let (code, with_status) =
        merge_patch(&s, &status_path("default", "dolly"), json!({"status": ready("True", 1)})).await;
    assert_eq!(code, 200, "{with_status}");

    // A merge patch of the object that only touches the status changes nothing at all.
    let (code, same) = merge_patch(&s, &llama_path("default", "dolly"), json!({"status": ready("False", 9)})).await;
    assert_eq!(code, 200);
    assert_eq!(same, with_status, "the status is not the main resource's to change");

    // A PUT of the object changes the spec, bumps the generation, keeps the status.
    let mut next = with_status.clone();
    next["spec"]["weight"] = json!(120.0);
    next["status"] = Value::Null;
    let (code, updated) = put(&s, &llama_path("default", "dolly"), &next).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["weight"], 120.0);
    assert_eq!(updated["metadata"]["generation"], 2);
    assert_eq!(updated["status"], ready("True", 1));

    // A status write leaves the generation where the spec put it; JSON patches work on /status.
    let patch = json!([{"op": "replace", "path": "/status/observedGeneration", "value": 2}]);
    let request =
        s.client.patch(s.url(&status_path("default", "dolly"))).header("content-type", "application/json-patch+json");
    let (code, patched) = send(request.body(patch.to_string())).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["status"]["observedGeneration"], 2);
    assert_eq!(patched["metadata"]["generation"], 2);

    // A dry run of /status answers with the result and stores nothing.
    let path = format!("{}?dryRun=All", status_path("default", "dolly"));
    let (code, dry) = merge_patch(&s, &path, json!({"status": {"observedGeneration": 5}})).await;
    assert_eq!((code, &dry["status"]["observedGeneration"]), (200, &json!(5)));
    let (_, stored) = send(s.client.get(s.url(&llama_path("default", "dolly")))).await;
    assert_eq!(stored, patched);

    // A status write keeps the stored metadata: an invalid label it carries is neither stored
    // nor reported, beside a valid status or an invalid one (as a custom resource's status).
    let labelled = |generation: i64| json!({"metadata": {"labels": {"v".repeat(64): "x"}}, "status": {"observedGeneration": generation}});
    let (code, written) = merge_patch(&s, &status_path("default", "dolly"), labelled(3)).await;
    assert_eq!((code, &written["metadata"]["labels"]), (200, &patched["metadata"]["labels"]), "{written}");
    let (code, refused) = merge_patch(&s, &status_path("default", "dolly"), labelled(-1)).await;
    let fields: Vec<&Value> =
        refused["details"]["causes"].as_array().into_iter().flatten().map(|c| &c["field"]).collect();
    assert_eq!((code, fields), (422, vec![&json!("status.observedGeneration")]), "{refused}");
}

#[apply(backends)]
async fn invalid_conditions_are_one_422_naming_each_field_and_nothing_is_stored(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    send(s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 100.0, 170.0))).await;
    let mut status = ready("Maybe", -1);
    let duplicate = status["conditions"][0].clone();
    status["conditions"][0]["reason"] = json!("not a reason");
    status["conditions"].as_array_mut().unwrap().push(duplicate);
    let (code, body) = merge_patch(&s, &status_path("default", "dolly"), json!({"status": status})).await;
    assert_eq!(code, 422, "{body}");
    assert_status(&body, 422, "Invalid");
    let causes: Vec<(&str, &str)> = body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["field"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    for expected in [
        ("status.observedGeneration", "FieldValueInvalid"),
        ("status.conditions[0].status", "FieldValueNotSupported"),
        ("status.conditions[0].reason", "FieldValueInvalid"),
        ("status.conditions[0].observedGeneration", "FieldValueInvalid"),
        ("status.conditions[1]", "FieldValueDuplicate"),
    ] {
        assert!(causes.contains(&expected), "{expected:?} missing from {causes:?}");
    }
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains(
            r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#
        ),
        "{message}"
    );
    let (_, stored) = send(s.client.get(s.url(&llama_path("default", "dolly")))).await;
    assert_eq!(stored.get("status"), None);
}

#[apply(backends)]
async fn status_serves_get_update_and_patch_only_and_discovery_says_so(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    send(s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 100.0, 170.0))).await;
    let path = status_path("default", "dolly");
    assert_status(&send(s.client.delete(s.url(&path))).await.1, 405, "MethodNotAllowed");
    assert_status(&send(s.client.post(s.url(&path)).json(&json!({}))).await.1, 405, "MethodNotAllowed");
    assert_status(&send(s.client.get(s.url(&status_path("default", "nobody")))).await.1, 404, "NotFound");
    assert_status(
        &send(s.client.get(s.url(&format!("{}/scale", llama_path("default", "dolly"))))).await.1,
        404,
        "NotFound",
    );

    let (_, list) = send(s.client.get(s.url("/apis/farm.example.com/v1alpha"))).await;
    let status = list["resources"].as_array().unwrap().iter().find(|r| r["name"] == "llamas/status").cloned();
    assert_eq!(
        status,
        Some(
            json!({"name": "llamas/status", "singularName": "", "namespaced": true, "kind": "Llama", "verbs": ["get", "patch", "update"]})
        )
    );
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let (_, aggregated) = send(s.client.get(s.url("/apis")).header("accept", accept)).await;
    let resources = &aggregated["items"][0]["versions"][0]["resources"];
    let llamas = resources.as_array().unwrap().iter().find(|r| r["resource"] == "llamas").unwrap();
    let status = &llamas["subresources"][0];
    assert_eq!(status["subresource"], "status");
    assert_eq!(status["responseKind"], json!({"group": "farm.example.com", "version": "v1", "kind": "Llama"}));
    assert_eq!(status["verbs"], json!(["get", "patch", "update"]));
}

/// Watch events the server has sent to watchers of llamas.
const WATCH_EVENTS: &str = "apiserver_watch_events_total{resource=\"llamas\"}";

#[tokio::test]
async fn kubectl_patches_the_status_and_waits_for_the_ready_condition() {
    let s = Server::start().await;
    send(s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 100.0, 170.0))).await;
    let waiter = {
        let kubeconfig = s.kubeconfig.clone();
        std::thread::spawn(move || {
            std::process::Command::new(common::kubectl_path())
                .args(["wait", "--for=condition=Ready", "llama/dolly", "--timeout=30s"])
                .env("KUBECONFIG", kubeconfig)
                .output()
                .expect("kubectl wait")
        })
    };
    // kubectl wait lists, finds no Ready condition yet, and watches: patch only once its watch
    // is open, so the condition reaches it as a watch event, which is what it waits for.
    let watches = "apiserver_longrunning_requests{resource=\"llamas\"}";
    common::wait_until("kubectl wait to watch the llama", async || {
        s.scrape().await.get(watches).copied().unwrap_or_default() == 1.0
    })
    .await;
    let events_before = s.scrape().await.get(WATCH_EVENTS).copied().unwrap_or_default();
    let patch = json!({"status": ready("True", 1)}).to_string();
    let (ok, out, err) = s.kubectl(&["patch", "llama", "dolly", "--subresource=status", "--type=merge", "-p", &patch]);
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "llama.farm.example.com/dolly patched");
    let waited = waiter.join().unwrap();
    let stdout = String::from_utf8_lossy(&waited.stdout);
    assert!(waited.status.success(), "{stdout}{}", String::from_utf8_lossy(&waited.stderr));
    assert_eq!(stdout.trim(), "llama.farm.example.com/dolly condition met");
    let events_after = s.scrape().await.get(WATCH_EVENTS).copied().unwrap_or_default();
    assert_eq!(events_after - events_before, 1.0, "kubectl wait saw the condition as one watch event");

    let (ok, out, _) = s.kubectl(&["get", "llama", "dolly"]);
    assert!(ok);
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["dolly", "100", "170", "True"], "the READY column shows the condition: {out}");
    let (ok, out, err) =
        s.kubectl(&["get", "llama", "dolly", "--subresource=status", "-o", "jsonpath={.status.conditions[0].reason}"]);
    assert!(ok, "{err}");
    assert_eq!(out, "Grazing");
    // The main resource's patch does not reach the status.
    let (ok, out, err) =
        s.kubectl(&["patch", "llama", "dolly", "--type=merge", "-p", r#"{"status":{"observedGeneration":9}}"#]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "llama.farm.example.com/dolly patched (no change)");
}

#[tokio::test]
async fn kube_rs_reads_and_writes_the_status_subresource() {
    let s = Server::start().await;
    let api: Api<Llama> = Api::namespaced(s.kube_client().await, "default");
    let created: Llama = serde_json::from_value(llama("dolly", 100.0, 170.0)).unwrap();
    api.create(&PostParams::default(), &created).await.unwrap();

    let condition = Condition {
        type_: "Ready".into(),
        status: "True".into(),
        reason: "Grazing".into(),
        message: "eating hay".into(),
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::from_second(1_795_000_000).unwrap()),
        observed_generation: Some(1),
    };
    let status = LlamaStatus { observed_generation: Some(1), conditions: vec![condition] };
    let patch = Patch::Merge(json!({"status": status}));
    let patched = api.patch_status("dolly", &PatchParams::default(), &patch).await.unwrap();
    assert_eq!(patched.status.as_ref(), Some(&status));

    let mut replaced = api.get_status("dolly").await.unwrap();
    assert_eq!(replaced, patched);
    replaced.status.as_mut().unwrap().observed_generation = Some(2);
    replaced.spec.weight = 1.0;
    let stored = api.replace_status("dolly", &PostParams::default(), &replaced).await.unwrap();
    assert_eq!(stored.status.unwrap().observed_generation, Some(2));
    assert_eq!(stored.spec.weight, 100.0, "the spec is not the status subresource's to change");
}
