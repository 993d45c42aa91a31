//! Deletion propagation and preconditions, black-box over HTTPS against the standalone server
//! (memory and etcd) and with kubectl: what a delete does to the object itself, as the
//! kube-apiserver does it for a custom resource. (What the garbage collector and the namespace
//! controller then do is proven in `tests/e2e.rs`, with the real kube-controller-manager.)

mod common;

use common::{Backend, Server, assert_status, backends, llama, llama_path, llamas, rv};
use rstest_reuse::apply;
use serde_json::{Value, json};

async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let r = req.send().await.expect("request");
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

async fn create(s: &Server, body: &Value) -> Value {
    let (code, created) = send(s.client.post(s.url(&llamas("default"))).json(body)).await;
    assert_eq!(code, 201, "{created}");
    created
}

async fn delete(s: &Server, name: &str, query: &str) -> (u16, Value) {
    send(s.client.delete(s.url(&format!("{}?{query}", llama_path("default", name))))).await
}

fn finalizers(object: &Value) -> Value {
    object["metadata"]["finalizers"].clone()
}

#[apply(backends)]
async fn orphan_and_foreground_mark_the_object_for_the_garbage_collector(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    create(&s, &llama("dolly", 1.0, 1.0)).await;

    let (code, orphaned) = delete(&s, "dolly", "propagationPolicy=Orphan").await;
    assert_eq!(code, 200, "{orphaned}");
    assert_eq!(finalizers(&orphaned), json!(["orphan"]));
    assert!(orphaned["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(orphaned["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(orphaned["metadata"]["generation"], 2, "the first mark moves the generation");
    let (_, stored) = send(s.client.get(s.url(&llama_path("default", "dolly")))).await;
    assert_eq!(stored, orphaned, "the object stays until the garbage collector removes the finalizer");

    // The policy of an object being deleted may still change; the deletion time does not.
    let (code, foreground) = delete(&s, "dolly", "propagationPolicy=Foreground").await;
    assert_eq!(code, 200);
    assert_eq!(finalizers(&foreground), json!(["foregroundDeletion"]));
    assert_eq!(foreground["metadata"]["deletionTimestamp"], orphaned["metadata"]["deletionTimestamp"]);
    assert_eq!(foreground["metadata"]["generation"], 2);
    let (_, same) = delete(&s, "dolly", "").await;
    assert_eq!(rv(&same), rv(&foreground), "without a policy the finalizer's stands: nothing changes");

    // Background drops the garbage collector's finalizer: nothing holds the object any more.
    let (code, gone) = delete(&s, "dolly", "propagationPolicy=Background").await;
    assert_eq!(code, 200, "{gone}");
    let (code, _) = send(s.client.get(s.url(&llama_path("default", "dolly")))).await;
    assert_eq!(code, 404);
}

#[apply(backends)]
async fn the_legacy_orphan_dependents_flag_and_deletecollection_follow_the_same_rules(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut kept = llama("kept", 1.0, 1.0);
    kept["metadata"]["finalizers"] = json!(["farm.example.com/shear"]);
    create(&s, &kept).await;
    // An object that stays, with orphanDependents=false: 202, as the kube-apiserver answers it.
    let (code, marked) = delete(&s, "kept", "orphanDependents=false").await;
    assert_eq!(code, 202, "{marked}");
    assert_eq!(finalizers(&marked), json!(["farm.example.com/shear"]));
    let (code, orphaned) = delete(&s, "kept", "orphanDependents=true").await;
    assert_eq!(code, 200);
    assert_eq!(finalizers(&orphaned), json!(["farm.example.com/shear", "orphan"]));
    let (code, both) = delete(&s, "kept", "orphanDependents=true&propagationPolicy=Orphan").await;
    assert_eq!(code, 422);
    assert_status(&both, 422, "Invalid");

    for name in ["a", "b"] {
        create(&s, &llama(name, 1.0, 1.0)).await;
    }
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"});
    let (code, list) = send(s.client.delete(s.url(&llamas("default"))).json(&options)).await;
    assert_eq!(code, 200, "{list}");
    // The answer lists the llamas as they were before, as the kube-apiserver's DeleteCollection.
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    let fresh = items.iter().filter(|i| i["metadata"]["name"] != "kept");
    assert!(fresh.into_iter().all(|i| i["metadata"]["deletionTimestamp"].is_null()), "{list}");
    let (_, left) = send(s.client.get(s.url(&llamas("default")))).await;
    let left = left["items"].as_array().unwrap();
    assert_eq!(left.len(), 3, "every llama waits for the garbage collector");
    assert!(left.iter().all(|i| finalizers(i).as_array().unwrap().contains(&json!("orphan"))), "{left:?}");
}

#[apply(backends)]
async fn a_delete_whose_preconditions_no_longer_hold_removes_nothing(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let created = create(&s, &llama("dolly", 1.0, 1.0)).await;
    let path = llama_path("default", "dolly");
    let (code, _) = send(
        s.client
            .patch(s.url(&path))
            .header("content-type", "application/merge-patch+json")
            .body(r#"{"spec":{"weight":2}}"#),
    )
    .await;
    assert_eq!(code, 200);
    let stale = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan",
        "preconditions": {"uid": created["metadata"]["uid"], "resourceVersion": created["metadata"]["resourceVersion"]}});
    let (code, refused) = send(s.client.delete(s.url(&path)).json(&stale)).await;
    assert_eq!(code, 409, "{refused}");
    assert_status(&refused, 409, "Conflict");
    let message = refused["message"].as_str().unwrap();
    assert!(message.starts_with(r#"Operation cannot be fulfilled on Llama.farm.example.com "dolly": the ResourceVersion in the precondition ("#), "{message}");
    assert_eq!(
        (refused["details"]["kind"].as_str(), refused["details"]["name"].as_str()),
        (Some("Llama"), Some("dolly"))
    );
    let (_, stored) = send(s.client.get(s.url(&path))).await;
    assert_eq!(stored["metadata"].get("deletionTimestamp"), None, "nothing was marked");
    assert_eq!(stored["spec"]["weight"], 2.0);
}

#[tokio::test]
async fn kubectl_cascade_orphan_and_foreground_leave_the_object_to_the_garbage_collector() {
    let s = Server::start().await;
    for name in ["orphaned", "foreground", "background"] {
        create(&s, &llama(name, 1.0, 1.0)).await;
    }
    for (name, cascade) in [("orphaned", "orphan"), ("foreground", "foreground"), ("background", "background")] {
        let cascade = format!("--cascade={cascade}");
        let (ok, out, err) = s.kubectl(&["delete", "llama", name, &cascade, "--wait=false"]);
        assert!(ok, "{err}");
        assert_eq!(out.trim(), format!("llama.farm.example.com \"{name}\" deleted"));
    }
    let (ok, out, err) =
        s.kubectl(&["get", "llamas", "-o", "jsonpath={range .items[*]}{.metadata.name}={.metadata.finalizers} {end}"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), r#"foreground=["foregroundDeletion"] orphaned=["orphan"]"#);
}
