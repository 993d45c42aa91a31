//! The example server registered with a real kube-apiserver through an APIService, with
//! kube-controller-manager beside it: kubectl through the aggregator, ConfigDigests following the
//! cluster's ConfigMaps, the garbage collector following a cluster-scoped owner, and the same
//! requests to Regions and to an equivalent cluster-scoped CustomResourceDefinition answered alike.

mod common;

use common::cluster::{Cluster, eventually};
use serde_json::{Value, json};

const WEST: &str = "apiVersion: ops.example.com/v1
kind: Region
metadata: {name: west}
spec: {zones: [west-a], capacity: 4}
";

#[tokio::test]
async fn through_the_aggregator_kubectl_serves_regions_and_config_digests_of_the_clusters_config_maps() {
    let c = Cluster::start().await;
    let resources = c.kubectl(&["api-resources", "--api-group=ops.example.com", "--no-headers"], None);
    let rows: Vec<Vec<&str>> = resources.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows,
        [
            ["configdigests", "cd", "ops.example.com/v1", "true", "ConfigDigest"],
            ["regions", "rg", "ops.example.com/v1", "false", "Region"]
        ]
    );
    assert_eq!(c.kubectl(&["apply", "-f", "-"], Some(WEST)).trim(), "region.ops.example.com/west created");
    c.kubectl(&["create", "configmap", "settings", "--from-literal=a=1", "--from-literal=b=22"], None);
    eventually("the ConfigDigest of settings", || c.try_kubectl(&["get", "configdigest", "settings"], None).is_ok())
        .await;
    let digest: Value = serde_json::from_str(&c.kubectl(&["get", "cd", "settings", "-o", "json"], None)).unwrap();
    assert_eq!(digest["spec"]["keys"], json!(["a", "b"]));
    assert_eq!(digest["spec"]["bytes"], 3);
    assert!(digest["spec"]["digest"].as_str().unwrap().starts_with("sha256:"), "{digest}");
    c.kubectl(&["delete", "configmap", "settings"], None);
    eventually("the ConfigDigest to go", || c.try_kubectl(&["get", "configdigest", "settings"], None).is_err()).await;
}

#[tokio::test]
async fn the_garbage_collector_deletes_a_namespaced_dependent_of_a_cluster_scoped_region_not_the_reverse() {
    let c = Cluster::start().await;
    c.kubectl(&["apply", "-f", "-"], Some(WEST));
    c.kubectl(&["create", "configmap", "settings", "--from-literal=a=1"], None);
    let uid = |args: &[&str]| c.kubectl(&[args, &["-o", "jsonpath={.metadata.uid}"]].concat(), None);
    let (west, settings) = (uid(&["get", "region", "west"]), uid(&["get", "configmap", "settings"]));
    let owned = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned", "namespace": "default",
        "ownerReferences": [{"apiVersion": "ops.example.com/v1", "kind": "Region", "name": "west", "uid": west}]}});
    c.kubectl(&["create", "-f", "-"], Some(&owned.to_string()));
    // A cluster-scoped dependent of a namespaced owner: invalid, the collector says so and keeps it.
    let misowned = json!({"apiVersion": "ops.example.com/v1", "kind": "Region",
        "metadata": {"name": "misowned", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "uid": settings}]},
        "spec": {"zones": ["x"], "capacity": 1}});
    c.kubectl(&["create", "-f", "-"], Some(&misowned.to_string()));

    c.kubectl(&["delete", "region", "west"], None);
    eventually("the collector to delete the Region's ConfigMap", || {
        c.try_kubectl(&["get", "configmap", "owned"], None).is_err_and(|e| e.contains("NotFound"))
    })
    .await;
    c.kubectl(&["delete", "configmap", "settings"], None);
    let invalid = ["get", "events", "-A", "--field-selector", "reason=OwnerRefInvalidNamespace", "-o", "json"];
    eventually("the collector's OwnerRefInvalidNamespace event", || {
        let events: Value = serde_json::from_str(&c.kubectl(&invalid, None)).unwrap();
        events["items"].as_array().unwrap().iter().any(|e| e["involvedObject"]["name"] == "misowned")
    })
    .await;
    assert!(c.try_kubectl(&["get", "region", "misowned"], None).is_ok(), "a misowned Region is kept");
}

/// A cluster-scoped CustomResourceDefinition of Regions, in `group`, as the example describes them.
fn region_crd(group: &str) -> Value {
    let schema = json!({"type": "object", "required": ["spec"], "properties": {
        "spec": {"type": "object", "required": ["zones", "capacity"], "properties": {
            "zones": {"type": "array", "items": {"type": "string"}}, "capacity": {"type": "integer", "format": "int64"}}},
        "status": {"type": "object", "required": ["machines"], "properties": {"machines": {"type": "integer", "format": "int64"}}}}});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("regions.{group}")},
        "spec": {"group": group, "scope": "Cluster",
            "names": {"plural": "regions", "singular": "region", "kind": "Region", "listKind": "RegionList", "shortNames": ["rg"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}}}]}})
}

/// One request of the differential comparison: method, path under `/apis/<group>/v1`, media
/// type and body.
type Step = (&'static str, &'static str, &'static str, Value);

fn steps() -> Vec<Step> {
    let (json, merge, apply) = ("application/json", "application/merge-patch+json", "application/apply-patch+yaml");
    let west = json!({"apiVersion": "GROUP/v1", "kind": "Region", "metadata": {"name": "west", "namespace": "elsewhere"},
        "spec": {"zones": ["west-a"], "capacity": 4}});
    vec![
        ("POST", "/regions", json, west.clone()),
        ("POST", "/regions", json, west),
        ("GET", "/regions/west", json, Value::Null),
        ("GET", "/namespaces/default/regions/west", json, Value::Null),
        ("GET", "/namespaces/default/regions", json, Value::Null),
        ("PATCH", "/regions/west/status", merge, json!({"status": {"machines": 3}})),
        ("PATCH", "/regions/west", merge, json!({"spec": {"capacity": 5}, "status": {"machines": 9}})),
        (
            "PATCH",
            "/regions/west?fieldManager=fleet",
            apply,
            json!({"apiVersion": "GROUP/v1", "kind": "Region", "metadata": {"name": "west"}, "spec": {"zones": ["west-b"]}}),
        ),
        (
            "PATCH",
            "/regions/west?fieldManager=rival",
            apply,
            json!({"apiVersion": "GROUP/v1", "kind": "Region", "metadata": {"name": "west"}, "spec": {"zones": ["west-c"]}}),
        ),
        ("GET", "/regions?labelSelector=missing", json, Value::Null),
        ("GET", "/regions", json, Value::Null),
        ("DELETE", "/regions/west", json, Value::Null),
        ("GET", "/regions/west", json, Value::Null),
    ]
}

/// What of an answer must be the same: the code and the body without what differs by design
/// (uids, times, resourceVersions, the group's name).
fn comparable(group: &str, code: u16, body: &str) -> (u16, Value) {
    let text = body.replace(group, "GROUP");
    let mut value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    strip(&mut value);
    (code, value)
}

/// `value` without its objects' managedFields.
fn drop_managed_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("managedFields");
            map.values_mut().for_each(drop_managed_fields);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_managed_fields),
        _ => {}
    }
}

fn strip(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in ["uid", "creationTimestamp", "resourceVersion", "time", "selfLink", "continue"] {
                map.remove(key);
            }
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// The reviewed differences between our answer and the CRD's, each with its reason (the farm
/// server's conformance suite, `tests/conformance/allowed.rs`, allows the same ones): the reason,
/// when one explains `ours` against `theirs`.
fn allowed(ours: &(u16, Value), theirs: &(u16, Value)) -> Option<&'static str> {
    let ((code, body), (their_code, their_body)) = (ours, theirs);
    if *their_code == 404 && their_body == "404 page not found\n" {
        let not_found = *code == 404 && body["kind"] == "Status" && body["reason"] == "NotFound";
        // A CRD's group answers an unknown path with text; built-in groups (and servers on
        // k8s.io/apiserver) with a NotFound Status, as every answer of ours is one.
        return not_found.then_some("a NotFound Status where a CRD answers `404 page not found`");
    }
    if their_body["kind"] == "Status" && their_body["status"] == "Success" {
        // The deleted object, as the kube-apiserver answers for Pods (ReturnDeletedObject).
        let same = *code == 200 && body["metadata"]["name"] == their_body["details"]["name"];
        return same.then_some("the deleted object where a CRD answers a Success Status");
    }
    // Kubernetes 1.22 keys the managedFields of status writes by `subresource: status`; the
    // reference (1.20) records them with the object's. Everything else must be equal.
    let without = |v: &Value| {
        let mut v = v.clone();
        drop_managed_fields(&mut v);
        v
    };
    let status_entries_apart = body.to_string().contains(r#""subresource":"status""#);
    (code == their_code && status_entries_apart && without(body) == without(their_body))
        .then_some("managedFields of status writes keyed by `subresource: status` (Kubernetes 1.22)")
}

#[tokio::test]
async fn regions_answer_every_request_as_a_cluster_scoped_custom_resource_does() {
    let c = Cluster::start().await;
    let reference = "crd.ops.example.com";
    c.kubectl(&["apply", "-f", "-"], Some(&region_crd(reference).to_string()));
    c.kubectl(&["wait", "--for=condition=Established", &format!("crd/regions.{reference}"), "--timeout=60s"], None);
    let (base, client) = c.apiserver();
    let mut differences = Vec::new();
    for (method, path, media_type, body) in steps() {
        let mut answers = Vec::new();
        for group in ["ops.example.com", reference] {
            let url = format!("{base}/apis/{group}/v1{path}");
            let mut request = client.request(method.parse().unwrap(), url).header("Content-Type", media_type);
            if !body.is_null() {
                request = request.body(body.to_string().replace("GROUP", group));
            }
            let response = request.send().await.unwrap();
            let code = response.status().as_u16();
            assert!(code < 500, "{method} {path} in {group}: {code}");
            answers.push(comparable(group, code, &response.text().await.unwrap()));
        }
        if answers[0] != answers[1] && allowed(&answers[0], &answers[1]).is_none() {
            differences.push(format!("{method} {path}\n  ours: {:?}\n  CRD:  {:?}", answers[0], answers[1]));
        }
    }
    assert!(differences.is_empty(), "{}\n{}", differences.join("\n"), c.log());
}
