//! `metadata.managedFields` on creates, updates, patches and status writes, black-box over HTTPS
//! against the standalone server (memory and etcd). The expected field sets are what the
//! kube-apiserver 1.20 wrote for the same requests on a Llama CustomResourceDefinition (the
//! `subresource` entry is current Kubernetes', which 1.20 predates).

mod common;

use common::{Backend, Server, backends, llama, llama_path, llamas, rv};
use rstest_reuse::apply;
use serde_json::{Value, json};

async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let r = req.send().await.expect("request");
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

async fn merge_patch(s: &Server, path: &str, body: Value) -> (u16, Value) {
    let request = s.client.patch(s.url(path)).header("content-type", "application/merge-patch+json");
    send(request.body(body.to_string())).await
}

/// Each entry's manager, operation, subresource and fields.
fn entries(object: &Value) -> Vec<(String, String, String, Value)> {
    let text = |e: &Value, k: &str| e[k].as_str().unwrap_or_default().to_string();
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            assert_eq!(e["fieldsType"], "FieldsV1");
            assert!(e["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{e}");
            (text(e, "manager"), text(e, "operation"), text(e, "subresource"), e["fieldsV1"].clone())
        })
        .collect()
}

fn entry(manager: &str, subresource: &str, fields: Value) -> (String, String, String, Value) {
    (manager.into(), "Update".into(), subresource.into(), fields)
}

#[apply(backends)]
async fn each_writer_owns_what_it_set_last(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut body = llama("dolly", 1.0, 2.0);
    body["metadata"]["labels"] = json!({"herd": "north"});
    let (code, created) =
        send(s.client.post(s.url(&format!("{}?fieldManager=a", llamas("default")))).json(&body)).await;
    assert_eq!(code, 201, "{created}");
    let a = json!({"f:metadata": {"f:labels": {".": {}, "f:herd": {}}}, "f:spec": {".": {}, "f:height": {}, "f:weight": {}}});
    assert_eq!(entries(&created), [entry("a", "", a)]);

    let path = format!("{}?fieldManager=b", llama_path("default", "dolly"));
    let (code, patched) = merge_patch(&s, &path, json!({"metadata": {"labels": {"herd": null, "field": "b"}}})).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        entries(&patched),
        [
            entry(
                "a",
                "",
                json!({"f:metadata": {"f:labels": {}}, "f:spec": {".": {}, "f:height": {}, "f:weight": {}}})
            ),
            entry("b", "", json!({"f:metadata": {"f:labels": {"f:field": {}}}})),
        ]
    );

    // A controller's status write is an entry of its own, for the status subresource.
    let status = format!("{}/status?fieldManager=herder", llama_path("default", "dolly"));
    let (code, written) = merge_patch(&s, &status, json!({"status": {"observedGeneration": 1}})).await;
    assert_eq!(code, 200, "{written}");
    let last = entries(&written).pop().unwrap();
    assert_eq!(last, entry("herder", "status", json!({"f:status": {".": {}, "f:observedGeneration": {}}})));

    // A write that changes nothing changes no entry and no resourceVersion.
    let (_, same) = merge_patch(&s, &path, json!({"metadata": {"labels": {"field": "b"}}})).await;
    assert_eq!(rv(&same), rv(&written));
    assert_eq!(same["metadata"]["managedFields"], written["metadata"]["managedFields"]);
}

#[apply(backends)]
async fn the_manager_defaults_to_the_user_agent_and_an_empty_list_strips_the_entries(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let request = s.client.post(s.url(&llamas("default"))).header("user-agent", "herder/1.2 (linux/amd64)");
    let (_, created) = send(request.json(&llama("dolly", 1.0, 2.0))).await;
    assert_eq!(entries(&created)[0].0, "herder");

    let mut next = created.clone();
    next["metadata"]["managedFields"] = json!([]);
    next["spec"]["weight"] = json!(5.0);
    let put = s.client.put(s.url(&format!("{}?fieldManager=c", llama_path("default", "dolly"))));
    let (code, replaced) = send(put.json(&next)).await;
    assert_eq!(code, 200, "{replaced}");
    // As current Kubernetes documents it: the managers are stripped entirely, and the object
    // stays untracked until an apply (kube-apiserver 1.20 kept them instead).
    assert_eq!(replaced["metadata"].get("managedFields"), None, "{replaced}");
    let (_, patched) = merge_patch(&s, &llama_path("default", "dolly"), json!({"spec": {"weight": 6.0}})).await;
    assert_eq!(patched["metadata"].get("managedFields"), None, "{patched}");

    let (code, refused) = send(
        s.client
            .post(s.url(&format!("{}?fieldManager={}", llamas("default"), "m".repeat(129))))
            .json(&llama("x", 1.0, 1.0)),
    )
    .await;
    assert_eq!(code, 422, "{refused}");
}

/// Clearing the managers as Kubernetes documents it: a patch that sets `managedFields` to one
/// empty entry, whether a merge patch or a JSON patch; a patch that does not name them leaves
/// them to the field manager.
#[apply(backends)]
async fn a_patch_naming_managed_fields_resets_them_and_one_that_does_not_keeps_them(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    for name in ["merged", "json"] {
        let create = s.client.post(s.url(&format!("{}?fieldManager=a", llamas("default"))));
        let (code, created) = send(create.json(&llama(name, 1.0, 2.0))).await;
        assert_eq!((code, entries(&created).len()), (201, 1), "{created}");
        let path = format!("{}?fieldManager=b", llama_path("default", name));
        let (code, kept) = merge_patch(&s, &path, json!({"spec": {"weight": 3.0}})).await;
        let managers: Vec<String> = entries(&kept).into_iter().map(|e| e.0).collect();
        assert_eq!((code, managers), (200, vec!["a".to_string(), "b".to_string()]), "{kept}");
    }
    let (code, cleared) =
        merge_patch(&s, &llama_path("default", "merged"), json!({"metadata": {"managedFields": [{}]}})).await;
    assert_eq!((code, cleared["metadata"].get("managedFields")), (200, None), "{cleared}");
    let clear = json!([{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}]);
    let request =
        s.client.patch(s.url(&llama_path("default", "json"))).header("content-type", "application/json-patch+json");
    let (code, cleared) = send(request.body(clear.to_string())).await;
    assert_eq!((code, cleared["metadata"].get("managedFields")), (200, None), "{cleared}");
}

#[tokio::test]
async fn kubectl_shows_the_managers_of_a_client_side_apply_then_a_patch() {
    let s = Server::start().await;
    let manifest = "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: dolly\nspec:\n  weight: 120\n  height: 170.5\n";
    let (ok, _, err) = s.kubectl_with_stdin(&["apply", "-f", "-"], Some(manifest));
    assert!(ok, "{err}");
    let (ok, _, err) = s.kubectl(&["patch", "llama", "dolly", "--type=merge", "-p", r#"{"spec":{"weight":130}}"#]);
    assert!(ok, "{err}");
    let (ok, out, err) = s.kubectl(&["get", "llama", "dolly", "-o", "json", "--show-managed-fields"]);
    assert!(ok, "{err}");
    let object: Value = serde_json::from_str(&out).unwrap();
    let managers: Vec<String> = entries(&object).into_iter().map(|e| e.0).collect();
    assert_eq!(managers, ["kubectl-client-side-apply", "kubectl-patch"]);
    // Each at the version of its request: the manifest's, and the preferred one kubectl patches at.
    let versions = object["metadata"]["managedFields"].as_array().unwrap().iter().map(|e| e["apiVersion"].clone());
    assert!(versions.eq([json!("farm.example.com/v1alpha"), json!("farm.example.com/v1")]), "{object}");
    let (_, hidden, _) = s.kubectl(&["get", "llama", "dolly", "-o", "yaml"]);
    assert!(!hidden.contains("managedFields"), "kubectl hides them by default");
}

#[tokio::test]
async fn with_managed_fields_off_writes_record_none_and_apply_is_unsupported() {
    let s = Server::start_with(&["--managed-fields", "false"]).await;
    let mut body = llama("dolly", 1.0, 1.0);
    body["metadata"]["managedFields"] = json!([{"manager": "me", "operation": "Update", "apiVersion": "farm.example.com/v1alpha", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]);
    let (code, created) = send(s.client.post(s.url(&llamas("default"))).json(&body)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"].get("managedFields"), None, "client-set entries are dropped too");
    let (code, patched) = merge_patch(&s, &llama_path("default", "dolly"), json!({"spec": {"weight": 2.0}})).await;
    assert_eq!((code, patched["metadata"].get("managedFields")), (200, None));
    let apply = s.client.patch(s.url(&format!("{}?fieldManager=a", llama_path("default", "dolly"))));
    let (code, status) = send(apply.header("content-type", "application/apply-patch+yaml").body("{}")).await;
    assert_eq!(code, 415, "{status}");
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json"
    );
}
