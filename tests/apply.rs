//! Server-side apply (`PATCH` with `application/apply-patch+yaml`), black-box over HTTPS against
//! the standalone server (memory and etcd), with kubectl (`apply --server-side`,
//! `--force-conflicts`, `diff --server-side`) and kube-rs (`Patch::Apply`). Messages are the
//! kube-apiserver's.

mod common;

use common::{Backend, Server, assert_status, backends, llama, llama_path, llamas, rv};
use rstest_reuse::apply;
use serde_json::{Value, json};

const APPLY: &str = "application/apply-patch+yaml";

async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let r = req.send().await.expect("request");
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

async fn apply_as(s: &Server, path: &str, query: &str, body: &Value) -> (u16, Value) {
    let url = s.url(&format!("{path}?{query}"));
    send(s.client.patch(url).header("content-type", APPLY).body(body.to_string())).await
}

fn applied(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": name}, "spec": spec})
}

#[apply(backends)]
async fn apply_creates_owns_what_it_sent_and_prunes_what_it_stops_sending(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let path = llama_path("default", "dolly");
    let config = applied("dolly", json!({"weight": 1.0, "height": 2.0, "color": "white"}));
    let (code, created) = apply_as(&s, &path, "fieldManager=gitops", &config).await;
    assert_eq!(code, 201, "{created}");
    let entries = created["metadata"]["managedFields"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0]["manager"].as_str(), entries[0]["operation"].as_str()), (Some("gitops"), Some("Apply")));
    assert_eq!(entries[0]["fieldsV1"], json!({"f:spec": {"f:color": {}, "f:height": {}, "f:weight": {}}}));

    let (code, same) = apply_as(&s, &path, "fieldManager=gitops", &config).await;
    assert_eq!((code, rv(&same)), (200, rv(&created)), "the same apply again changes nothing");

    let (code, pruned) =
        apply_as(&s, &path, "fieldManager=gitops", &applied("dolly", json!({"weight": 1.0, "height": 2.0}))).await;
    assert_eq!(code, 200, "{pruned}");
    assert_eq!(pruned["spec"], json!({"weight": 1, "height": 2}), "a field the applier stops sending goes");
}

#[apply(backends)]
async fn changing_a_field_another_manager_owns_is_a_409_naming_it_unless_forced(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let path = llama_path("default", "dolly");
    send(s.client.post(s.url(&format!("{}?fieldManager=herder", llamas("default")))).json(&llama("dolly", 1.0, 2.0)))
        .await;
    let config = applied("dolly", json!({"weight": 5.0, "height": 2.0}));
    let (code, refused) = apply_as(&s, &path, "fieldManager=gitops", &config).await;
    assert_eq!(code, 409, "{refused}");
    assert_status(&refused, 409, "Conflict");
    let message = refused["message"].as_str().unwrap();
    assert_eq!(
        message, r#"Apply failed with 1 conflict: conflict with "herder" using farm.example.com/v1alpha: .spec.weight"#,
        "the kube-apiserver prints no time: a manager's identifier holds none"
    );
    let cause = &refused["details"]["causes"][0];
    assert_eq!(
        (cause["reason"].as_str(), cause["field"].as_str()),
        (Some("FieldManagerConflict"), Some(".spec.weight"))
    );

    let (code, forced) = apply_as(&s, &path, "fieldManager=gitops&force=true", &config).await;
    assert_eq!(code, 200, "{forced}");
    assert_eq!(forced["spec"]["weight"], 5.0);
    let managers: Vec<&str> = forced["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["gitops", "herder"], "herder keeps the height it shares");
}

#[apply(backends)]
async fn an_unknown_field_an_apply_drops_is_owned_by_nobody(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let path = llama_path("default", "dolly");
    let config = applied("dolly", json!({"weight": 1.0, "height": 2.0, "horns": 1}));
    let (code, created) = apply_as(&s, &path, "fieldManager=a", &config).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"], json!({"weight": 1, "height": 2}), "dropped, as fieldValidation=Warn has it");
    let owned = &created["metadata"]["managedFields"][0]["fieldsV1"];
    assert_eq!(owned, &json!({"f:spec": {"f:height": {}, "f:weight": {}}}), "what was written, and only that");
    let (code, other) = apply_as(&s, &path, "fieldManager=b", &applied("dolly", json!({"horns": 2}))).await;
    assert_eq!(code, 200, "no conflict over a field the object does not have: {other}");
    assert_eq!(rv(&other), rv(&created), "nothing changed");
}

#[apply(backends)]
async fn apply_options_bodies_and_preconditions_are_checked(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let path = llama_path("default", "dolly");
    let config = applied("dolly", json!({"weight": 1.0, "height": 2.0}));
    let (code, body) = apply_as(&s, &path, "", &config).await;
    assert_eq!(code, 422);
    assert!(
        body["message"].as_str().unwrap().contains("fieldManager: Required value: is required for apply patch"),
        "{body}"
    );
    let merge =
        s.client.patch(s.url(&format!("{path}?force=true"))).header("content-type", "application/merge-patch+json");
    let (code, body) = send(merge.body("{}")).await;
    assert_eq!(code, 422);
    assert!(
        body["message"].as_str().unwrap().contains("force: Forbidden: may not be specified for non-apply patch"),
        "{body}"
    );
    let (code, body) =
        send(s.client.patch(s.url(&format!("{path}?fieldManager=a"))).header("content-type", APPLY).body("[1")).await;
    assert_eq!(code, 400, "{body}");
    let (code, _) =
        apply_as(&s, &path, "fieldManager=a", &applied("other", json!({"weight": 1.0, "height": 2.0}))).await;
    assert_eq!(code, 400, "the name must be the URL's");
    for metadata in [json!({"name": 7}), json!(7)] {
        let mut odd = config.clone();
        odd["metadata"] = metadata;
        let (code, body) = apply_as(&s, &path, "fieldManager=a", &odd).await;
        assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")), "as for an update: {body}");
        assert!(body["message"].as_str().unwrap().contains("cannot be handled as a Llama"), "{body}");
    }
    assert_eq!(send(s.client.get(s.url(&path))).await.0, 404, "a refused apply stores nothing");

    let (code, _) = apply_as(&s, &path, "fieldManager=a&dryRun=All", &config).await;
    assert_eq!(code, 201);
    assert_eq!(send(s.client.get(s.url(&path))).await.0, 404, "a dry run stores nothing");
    let (_, created) = apply_as(&s, &path, "fieldManager=a", &config).await;
    let mut stale = applied("dolly", json!({"weight": 9.0, "height": 2.0}));
    stale["metadata"]["resourceVersion"] = json!((rv(&created) + 1000).to_string());
    let (code, conflict) = apply_as(&s, &path, "fieldManager=a", &stale).await;
    assert_eq!(code, 409, "a resourceVersion in the configuration is a precondition: {conflict}");
    assert_eq!(rv(&send(s.client.get(s.url(&path))).await.1), rv(&created));
    let (code, _) = apply_as(
        &s,
        &format!("{}/status", llama_path("default", "nobody")),
        "fieldManager=a",
        &applied("nobody", json!({})),
    )
    .await;
    assert_eq!(code, 404);
}

#[apply(backends)]
async fn apply_reads_yaml_configurations(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let path = llama_path("default", "dolly");
    let apply_yaml = |body: &str| {
        s.client
            .patch(s.url(&format!("{path}?fieldManager=gitops")))
            .header("content-type", APPLY)
            .body(body.to_string())
    };
    let manifest = "# managed by GitOps\napiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: dolly\n  labels:\n    tier: gold\nspec:\n  weight: 3\n  height: 1.5\n  color: brown\n";
    let (code, created) = send(apply_yaml(manifest)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"], json!({"weight": 3, "height": 1.5, "color": "brown"}));
    let entry = &created["metadata"]["managedFields"][0];
    assert_eq!((entry["manager"].as_str(), entry["operation"].as_str()), (Some("gitops"), Some("Apply")));
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:tier": {}}}, "f:spec": {"f:color": {}, "f:height": {}, "f:weight": {}}})
    );
    // Dropping a field from the YAML removes it: the manager owned it alone.
    let (code, updated) = send(apply_yaml(&manifest.replace("  color: brown\n", ""))).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"], json!({"weight": 3, "height": 1.5}));

    // The kube-apiserver's messages for what is not an object of this type.
    for (body, message) in [
        (
            "- a\n- b\n",
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            "",
            "Incorrect version specified in apply patch. Specified patch version: , expected: farm.example.com/v1alpha",
        ),
        (
            "apiVersion: v1\nkind: Llama\n",
            "Incorrect version specified in apply patch. Specified patch version: v1, expected: farm.example.com/v1alpha",
        ),
    ] {
        let (code, status) = send(apply_yaml(body)).await;
        assert_status(&status, 400, "BadRequest");
        assert_eq!((code, status["message"].as_str().unwrap()), (400, message));
    }
    let (_, status) = send(apply_yaml("apiVersion: farm.example.com/v1alpha\nkind: Llama\nspec: {weight: [\n")).await;
    assert_status(&status, 400, "BadRequest");
    assert!(
        status["message"].as_str().unwrap().starts_with("error decoding YAML: error converting YAML to JSON: "),
        "{status}"
    );
    assert_eq!(send(s.client.get(s.url(&path))).await.1["spec"], updated["spec"], "refused applies change nothing");
}

#[tokio::test]
async fn kube_rs_applies_the_object_and_its_status() {
    let s = Server::start().await;
    common::clients::kube_rs_apply(s.kube_client().await).await;
}

#[tokio::test]
async fn kubectl_applies_server_side_diffs_and_forces_conflicts() {
    common::clients::kubectl_server_side_apply(&Server::start().await);
}

/// The move from client-side to server-side `kubectl apply` and back (tests/e2e.rs compares the
/// same transcript with a CRD's on the kube-apiserver).
#[tokio::test]
async fn kubectl_moves_client_side_applied_llamas_to_server_side_apply_and_back() {
    let transcript = common::apply_migration::all(&Server::start().await, "farm.example.com");
    assert!(transcript.len() > 20, "{transcript:?}");
}

#[tokio::test]
async fn kubectl_edit_records_its_change_as_kubectl_edit() {
    common::clients::kubectl_edit(&Server::start().await);
}
