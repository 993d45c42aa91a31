//! Llamas at `farm.example.com/v1` beside `v1alpha`, over HTTPS on both storage backends: an
//! object written at one version reads at the other; v1's pattern survives a v1alpha client
//! (kept in an annotation while served at v1alpha); validation, field selectors, watches, Tables,
//! server-side apply and the status at v1.

mod common;

use common::{Backend, Server, WatchStream, backends};
use rstest_reuse::apply;
use serde_json::{Value, json};

const V1: &str = "/apis/farm.example.com/v1/namespaces/default/llamas";
const V1ALPHA: &str = "/apis/farm.example.com/v1alpha/namespaces/default/llamas";
const COAT: &str = "farm.example.com/v1-coat";

async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("a response");
    let code = response.status().as_u16();
    (code, response.json().await.expect("a JSON body"))
}

fn at_v1(name: &str, coat: Value) -> Value {
    json!({"apiVersion": "farm.example.com/v1", "kind": "Llama", "metadata": {"name": name},
        "spec": {"weight": 6, "height": 150, "coat": coat}})
}

async fn post(s: &Server, base: &str, body: &Value) -> (u16, Value) {
    send(s.client.post(s.url(base)).json(body)).await
}

async fn get(s: &Server, path: &str) -> Value {
    let (code, body) = send(s.client.get(s.url(path))).await;
    assert_eq!(code, 200, "{path}: {body}");
    body
}

#[apply(backends)]
async fn an_object_written_at_one_version_reads_at_the_other(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let (code, created) = post(&s, V1, &at_v1("spotty", json!({"color": "white", "pattern": "Spotted"}))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "farm.example.com/v1");
    let old = get(&s, &format!("{V1ALPHA}/spotty")).await;
    assert_eq!(old["apiVersion"], "farm.example.com/v1alpha");
    assert_eq!(old["spec"], json!({"weight": 6, "height": 150, "color": "white"}));
    assert_eq!(old["metadata"]["annotations"][COAT], r#"{"pattern":"Spotted"}"#);
    assert_eq!(old["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);

    let brown = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "brown"},
        "spec": {"weight": 5, "height": 170.5, "color": "brown"}});
    assert_eq!(post(&s, V1ALPHA, &brown).await.0, 201);
    let new = get(&s, &format!("{V1}/brown")).await;
    assert_eq!(new["spec"], json!({"weight": 5, "height": 170.5, "coat": {"color": "brown"}}));
    assert!(new["metadata"].get("annotations").is_none(), "{new}");
}

#[apply(backends)]
async fn a_v1alpha_client_keeps_the_pattern_and_removing_the_annotation_removes_it(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    post(&s, V1, &at_v1("spotty", json!({"color": "white", "pattern": "Spotted"}))).await;
    let mut old = get(&s, &format!("{V1ALPHA}/spotty")).await;
    old["spec"]["weight"] = json!(7);
    let (code, body) = send(s.client.put(s.url(&format!("{V1ALPHA}/spotty"))).json(&old)).await;
    assert_eq!(code, 200, "{body}");
    let new = get(&s, &format!("{V1}/spotty")).await;
    assert_eq!(new["spec"], json!({"weight": 7, "height": 150, "coat": {"color": "white", "pattern": "Spotted"}}));

    let removal = json!({"metadata": {"annotations": {COAT: null}}});
    let patch =
        s.client.patch(s.url(&format!("{V1ALPHA}/spotty"))).header("content-type", "application/merge-patch+json");
    let (code, body) = send(patch.json(&removal)).await;
    assert_eq!(code, 200, "{body}");
    let new = get(&s, &format!("{V1}/spotty")).await;
    assert_eq!(new["spec"]["coat"], json!({"color": "white"}));
    // As for a custom resource, generation is decided at the request's version: at v1alpha only
    // the annotation changed, which is metadata (the CRD of tests/conformance.rs agrees).
    assert_eq!(new["metadata"]["generation"], 2, "decided at v1alpha, where the spec did not change");
    let patch = s.client.patch(s.url(&format!("{V1}/spotty"))).header("content-type", "application/merge-patch+json");
    let (code, body) = send(patch.json(&json!({"spec": {"coat": {"pattern": "Solid"}}}))).await;
    assert_eq!((code, &body["metadata"]["generation"]), (200, &json!(3)), "at v1 the pattern is spec: {body}");
}

#[tokio::test]
async fn each_version_validates_in_its_own_terms() {
    let s = Server::start().await;
    let (code, refused) = post(&s, V1, &at_v1("striped", json!({"pattern": "Striped"}))).await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(refused["details"]["causes"][0]["field"], "spec.coat.pattern");
    assert_eq!(refused["details"]["causes"][0]["reason"], "FieldValueNotSupported");

    let mut reserved = at_v1("reserved", json!({"color": "white"}));
    reserved["metadata"]["annotations"] = json!({COAT: "{}"});
    let (code, refused) = post(&s, V1, &reserved).await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(refused["details"]["causes"][0]["field"], format!("metadata.annotations[{COAT}]"));

    let garbled = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": "garbled", "annotations": {COAT: "{"}}, "spec": {"weight": 5, "height": 1}});
    let (code, refused) = post(&s, V1ALPHA, &garbled).await;
    assert_eq!(code, 422, "an annotation v1 could not read is refused: {refused}");
    assert_eq!(refused["details"]["causes"][0]["field"], format!("metadata.annotations[{COAT}]"));

    let wrong_version = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "x"},
        "spec": {"weight": 5, "height": 1}});
    let (code, refused) = post(&s, V1, &wrong_version).await;
    assert_eq!(code, 400, "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("expected API version (farm.example.com/v1)"), "{refused}");
}

#[apply(backends)]
async fn field_selectors_name_each_version_s_own_fields(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    post(&s, V1, &at_v1("white", json!({"color": "white"}))).await;
    post(&s, V1, &at_v1("black", json!({"color": "black"}))).await;
    let names = |list: &Value| -> Vec<String> {
        list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&get(&s, &format!("{V1}?fieldSelector=spec.coat.color%3Dwhite")).await), ["white"]);
    assert_eq!(names(&get(&s, &format!("{V1ALPHA}?fieldSelector=spec.color%3Dblack")).await), ["black"]);
    let (code, refused) = send(s.client.get(s.url(&format!("{V1}?fieldSelector=spec.color%3Dwhite")))).await;
    assert_eq!(code, 400);
    assert_eq!(refused["message"], "field label not supported: spec.color");
}

#[apply(backends)]
async fn watches_at_both_versions_see_the_same_events_each_in_its_version(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut new = WatchStream::open(&s, &format!("{V1}?watch=true")).await;
    let mut old = WatchStream::open(&s, &format!("{V1ALPHA}?watch=true")).await;
    post(&s, V1, &at_v1("spotty", json!({"color": "white", "pattern": "Spotted"}))).await;
    let (a, b) = (new.next().await.expect("an event at v1"), old.next().await.expect("an event at v1alpha"));
    assert_eq!((a["type"].as_str(), b["type"].as_str()), (Some("ADDED"), Some("ADDED")));
    assert_eq!(a["object"]["spec"]["coat"]["pattern"], "Spotted");
    assert_eq!(b["object"]["apiVersion"], "farm.example.com/v1alpha");
    assert_eq!(b["object"]["metadata"]["annotations"][COAT], r#"{"pattern":"Spotted"}"#);
    assert_eq!(a["object"]["metadata"]["resourceVersion"], b["object"]["metadata"]["resourceVersion"]);
}

#[tokio::test]
async fn apply_tables_and_the_status_at_v1() {
    let s = Server::start().await;
    let config = at_v1("applied", json!({"color": "grey", "pattern": "Patched"}));
    let apply = s
        .client
        .patch(s.url(&format!("{V1}/applied?fieldManager=gitops")))
        .header("content-type", "application/apply-patch+yaml")
        .body(config.to_string());
    let (code, applied) = send(apply).await;
    assert_eq!(code, 201, "{applied}");
    let entry = &applied["metadata"]["managedFields"][0];
    assert_eq!(entry["apiVersion"], "farm.example.com/v1");
    assert_eq!(entry["fieldsV1"]["f:spec"]["f:coat"], json!({"f:color": {}, "f:pattern": {}}));

    let table = s.client.get(s.url(V1)).header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io");
    let (code, table) = send(table).await;
    assert_eq!(code, 200, "{table}");
    let columns: Vec<&str> =
        table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(columns, ["Name", "Weight", "Height", "Ready", "Age", "Color", "Pattern"]);
    let cells = &table["rows"][0]["cells"];
    assert_eq!((cells[5].as_str(), cells[6].as_str()), (Some("grey"), Some("Patched")));

    let status = json!({"apiVersion": "farm.example.com/v1", "kind": "Llama", "metadata": {"name": "applied"},
        "status": {"observedGeneration": 1}});
    let apply = s
        .client
        .patch(s.url(&format!("{V1}/applied/status?fieldManager=feeder")))
        .header("content-type", "application/apply-patch+yaml")
        .body(status.to_string());
    let (code, written) = send(apply).await;
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["status"]["observedGeneration"], 1);
    assert_eq!(written["spec"]["coat"]["pattern"], "Patched", "a status write keeps the spec");
}

/// A llama as the previous release stored it, at v1alpha: what `Stored` writes for the v1alpha
/// type, with a client-side apply's manager at v1alpha.
fn stored_at_v1alpha(name: &str, color: &str) -> Vec<u8> {
    use farm_apiserver::resources::llama::{Llama, LlamaSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time};
    let mut llama = Llama::new(name, LlamaSpec { weight: 5.0, height: 170.5, color: Some(color.into()) });
    let meta = &mut llama.metadata;
    meta.namespace = Some("default".into());
    meta.uid = Some(format!("0000-{name}"));
    meta.generation = Some(1);
    let created = Time("2026-01-02T03:04:05Z".parse().unwrap());
    meta.creation_timestamp = Some(created.clone());
    meta.managed_fields = Some(vec![ManagedFieldsEntry {
        api_version: Some("farm.example.com/v1alpha".into()),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(FieldsV1(json!({"f:spec": {".": {}, "f:color": {}, "f:height": {}, "f:weight": {}}}))),
        manager: Some("kubectl-client-side-apply".into()),
        operation: Some("Update".into()),
        time: Some(created),
        ..Default::default()
    }]);
    farm_apiserver::store::Stored::new(llama).unwrap().json().to_vec()
}

/// etcd's JSON gateway: `op` (`put` or `range`) of `key`, with `value` for a put.
async fn etcd_kv(endpoint: &str, op: &str, key: &str, value: Option<&[u8]>) -> Value {
    use base64::Engine;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut body = json!({"key": b64(key.as_bytes())});
    if let Some(value) = value {
        body["value"] = json!(b64(value));
    }
    let response = reqwest::Client::new().post(format!("{endpoint}/v3/kv/{op}")).json(&body).send().await.unwrap();
    assert!(response.status().is_success(), "{op} {key}");
    response.json().await.unwrap()
}

/// The `apiVersion` etcd holds for `key`.
async fn stored_api_version(endpoint: &str, key: &str) -> String {
    use base64::Engine;
    let range = etcd_kv(endpoint, "range", key, None).await;
    let value = base64::engine::general_purpose::STANDARD.decode(range["kvs"][0]["value"].as_str().unwrap()).unwrap();
    serde_json::from_slice::<Value>(&value).unwrap()["apiVersion"].as_str().unwrap().to_string()
}

/// The upgrade: llamas the previous release stored at v1alpha (under the same keys) are read at
/// both versions, a write moves one to v1, its managers keep their version (an apply at v1
/// conflicts with the v1alpha manager's colour), and the documented one-liner
/// (`kubectl get llamas -A -o json | kubectl replace -f -`) moves the rest.
#[tokio::test]
async fn llamas_stored_at_v1alpha_by_the_previous_release_are_served_and_migrated() {
    let etcd = common::etcd::Etcd::shared();
    let prefix = common::etcd::unique_prefix();
    let key = |name: &str| format!("{prefix}/llamas/default/{name}");
    for (name, color) in [("old-1", "white"), ("old-2", "brown"), ("old-3", "black")] {
        etcd_kv(&etcd.endpoint, "put", &key(name), Some(&stored_at_v1alpha(name, color))).await;
    }
    let s = Server::start_on_etcd(etcd, &prefix, &[]).await;
    let new = get(&s, &format!("{V1}/old-1")).await;
    assert_eq!(new["spec"], json!({"weight": 5, "height": 170.5, "coat": {"color": "white"}}));
    assert_eq!(new["metadata"]["managedFields"][0]["apiVersion"], "farm.example.com/v1alpha");
    let old = get(&s, &format!("{V1ALPHA}/old-1")).await;
    assert_eq!(old["spec"], json!({"weight": 5, "height": 170.5, "color": "white"}));
    assert_eq!(get(&s, V1).await["items"].as_array().unwrap().len(), 3);

    // A write moves the object to v1; the colour is still the v1alpha manager's.
    let apply = json!({"apiVersion": "farm.example.com/v1", "kind": "Llama", "metadata": {"name": "old-1"},
        "spec": {"weight": 5, "height": 170.5, "coat": {"color": "grey"}}});
    let request = s.client.patch(s.url(&format!("{V1}/old-1?fieldManager=painter")));
    let (code, conflict) =
        send(request.header("content-type", "application/apply-patch+yaml").body(apply.to_string())).await;
    assert_eq!(code, 409, "{conflict}");
    assert_eq!(
        conflict["message"],
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using farm.example.com/v1alpha: .spec.color"
    );
    let patch = s.client.patch(s.url(&format!("{V1}/old-1"))).header("content-type", "application/merge-patch+json");
    assert_eq!(send(patch.body(json!({"spec": {"weight": 6}}).to_string())).await.0, 200);
    assert_eq!(stored_api_version(&etcd.endpoint, &key("old-1")).await, "farm.example.com/v1");
    assert_eq!(stored_api_version(&etcd.endpoint, &key("old-2")).await, "farm.example.com/v1alpha");

    // docs/versions.md's one-liner, its standalone form: a standalone server serves no core group, so
    // kubectl cannot map a `v1` List; the items go one JSON document a line (`jq -c '.items[]'`).
    let all = s.kubectl(&["get", "llamas", "-A", "-o", "json"]);
    assert!(all.0, "{}", all.2);
    let list: Value = serde_json::from_str(&all.1).unwrap();
    let items: Vec<String> = list["items"].as_array().unwrap().iter().map(Value::to_string).collect();
    let replaced = s.kubectl_with_stdin(&["replace", "-f", "-"], Some(&items.join("\n")));
    assert!(replaced.0, "{}", replaced.2);
    for name in ["old-1", "old-2", "old-3"] {
        assert_eq!(stored_api_version(&etcd.endpoint, &key(name)).await, "farm.example.com/v1", "{name}");
    }
    let old = get(&s, &format!("{V1ALPHA}/old-2")).await;
    assert_eq!(old["spec"], json!({"weight": 5, "height": 170.5, "color": "brown"}), "nothing lost");
}
