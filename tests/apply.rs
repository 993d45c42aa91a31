//! Server-side apply (`PATCH` with `application/apply-patch+yaml`), black-box over HTTPS against
//! the standalone server (memory and etcd), with kubectl (`apply --server-side`,
//! `--force-conflicts`, `diff --server-side`) and kube-rs (`Patch::Apply`). Messages are the
//! kube-apiserver's.

mod common;

use common::{Backend, Server, assert_status, backends, llama, llama_path, llamas, rv};
use farm_apiserver::resources::llama::Llama;
use kube::api::{Api, Patch, PatchParams};
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
    assert_eq!(pruned["spec"], json!({"weight": 1.0, "height": 2.0}), "a field the applier stops sending goes");
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
    assert!(
        message
            .starts_with(r#"Apply failed with 1 conflict: conflict with "herder" using farm.example.com/v1alpha at "#),
        "{message}"
    );
    assert!(message.ends_with(": .spec.weight"), "{message}");
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

#[tokio::test]
async fn kube_rs_applies_the_object_and_its_status() {
    let s = Server::start().await;
    let api: Api<Llama> = Api::namespaced(s.kube_client().await, "default");
    let params = PatchParams::apply("herd-controller");
    let created = api
        .patch("dolly", &params, &Patch::Apply(applied("dolly", json!({"weight": 1.0, "height": 2.0}))))
        .await
        .unwrap();
    assert_eq!(created.spec.weight, 1.0);
    let status =
        json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "status": {"observedGeneration": 1}});
    let written = api.patch_status("dolly", &params, &Patch::Apply(status)).await.unwrap();
    assert_eq!(written.status.unwrap().observed_generation, Some(1));
    let entries = written.metadata.managed_fields.unwrap();
    let status_entry = entries.iter().find(|e| e.subresource.as_deref() == Some("status")).unwrap();
    assert_eq!(
        (status_entry.manager.as_deref(), status_entry.operation.as_deref()),
        (Some("herd-controller"), Some("Apply"))
    );
    assert_eq!(written.spec.weight, 1.0, "the status apply leaves the spec");
}

#[tokio::test]
async fn kubectl_applies_server_side_diffs_and_forces_conflicts() {
    let s = Server::start().await;
    let manifest = "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: dolly\nspec:\n  weight: 120\n  height: 170.5\n";
    let (ok, out, err) = s.kubectl_with_stdin(&["apply", "--server-side", "-f", "-"], Some(manifest));
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "llama.farm.example.com/dolly serverside-applied");
    let (ok, _, err) = s.kubectl(&["patch", "llama", "dolly", "--type=merge", "-p", r#"{"spec":{"weight":130}}"#]);
    assert!(ok, "{err}");
    let changed = manifest.replace("120", "140");
    let (ok, diff, _) =
        s.kubectl_with_stdin(&["diff", "--server-side", "--force-conflicts", "-f", "-"], Some(&changed));
    assert!(!ok && diff.contains("-  weight: 130") && diff.contains("+  weight: 140"), "{diff}");
    let (ok, _, err) = s.kubectl_with_stdin(&["apply", "--server-side", "-f", "-"], Some(&changed));
    assert!(!ok && err.contains(r#"conflict with "kubectl-patch" using farm.example.com/v1alpha"#), "{err}");
    let (ok, _, err) =
        s.kubectl_with_stdin(&["apply", "--server-side", "--force-conflicts", "-f", "-"], Some(&changed));
    assert!(ok, "{err}");
    let (_, weight, _) = s.kubectl(&["get", "llama", "dolly", "-o", "jsonpath={.spec.weight}"]);
    assert_eq!(weight, "140");
}

#[tokio::test]
async fn kubectl_moves_a_client_side_applied_llama_to_server_side_apply() {
    let s = Server::start().await;
    let manifest = "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: dolly\nspec:\n  weight: 120\n  height: 170.5\n";
    let (ok, _, err) = s.kubectl_with_stdin(&["apply", "-f", "-"], Some(manifest));
    assert!(ok, "{err}");
    // The same manifest server-side: kubectl hands the client-side manager's fields over to the
    // server-side one (its JSON patch of managedFields), and 120 equals the stored 120.0.
    let (ok, out, err) = s.kubectl_with_stdin(&["apply", "--server-side", "-f", "-"], Some(manifest));
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "llama.farm.example.com/dolly serverside-applied");
    let (_, managers, _) = s.kubectl(&[
        "get",
        "llama",
        "dolly",
        "--show-managed-fields",
        "-o",
        "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}",
    ]);
    assert_eq!(managers.trim(), "kubectl/Apply kubectl-last-applied/Apply");
    let (ok, _, err) =
        s.kubectl_with_stdin(&["apply", "--server-side", "-f", "-"], Some(&manifest.replace("120", "125")));
    assert!(ok, "{err}");
    let (_, weight, _) = s.kubectl(&["get", "llama", "dolly", "-o", "jsonpath={.spec.weight}"]);
    assert_eq!(weight, "125");
    // The server rewrote client-side apply's annotation, so client-side apply can take over again.
    let (ok, last, err) = s.kubectl(&["apply", "view-last-applied", "llama", "dolly", "-o", "json"]);
    assert!(ok, "{err}");
    let last: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last["spec"]["weight"], 125);
    let (ok, out, err) = s.kubectl_with_stdin(&["apply", "-f", "-"], Some(&manifest.replace("120", "126")));
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "llama.farm.example.com/dolly configured");
}
