//! The example server registered with a real kube-apiserver through an APIService, with
//! kube-controller-manager beside it: kubectl through the aggregator, ConfigDigests following the
//! cluster's ConfigMaps, the garbage collector following a cluster-scoped owner, and the same
//! requests (hand-written and generated, by the `apiserver-conformance` crate the farm server's
//! suite uses) to Regions and to an equivalent cluster-scoped CustomResourceDefinition answered
//! alike.

mod common;

use apiserver_conformance::{Field, Request, Subject, Values};
use common::cluster::{Cluster, eventually};
use reqwest::Method;
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

/// Regions against the reference CRD `regions.crd.ops.example.com`.
static REGIONS: Subject = Subject {
    group: "ops.example.com",
    reference_group: "crd.ops.example.com",
    kind: "Region",
    plural: "regions",
    namespaced: false,
    versions: &["v1"],
    object: region,
    fields: &[
        Field { path: capacity, values: Values::Number },
        Field { path: overcommit, values: Values::Number },
        Field { path: zones, values: Values::Strings },
    ],
    statuses: || vec![json!({"machines": 3}), json!({"machines": -1}), json!({}), json!("ready")],
    selectable_fields: &[],
    unrenamed: &[],
};

fn region(name: &str, version: &str) -> Value {
    json!({"apiVersion": format!("ops.example.com/{version}"), "kind": "Region", "metadata": {"name": name},
        "spec": {"zones": ["gen-a"], "capacity": 10}})
}

fn capacity(_: &str) -> Option<&'static [&'static str]> {
    Some(&["spec", "capacity"])
}

fn overcommit(_: &str) -> Option<&'static [&'static str]> {
    Some(&["spec", "overcommit"])
}

fn zones(_: &str) -> Option<&'static [&'static str]> {
    Some(&["spec", "zones"])
}

/// A cluster-scoped CustomResourceDefinition of Regions in `group`, its schema the one
/// ops-apiserver publishes (read from the kube-apiserver's `/openapi/v2`, which aggregates it:
/// 1.20 aggregates no OpenAPI v3).
async fn region_crd(c: &Cluster, group: &str) -> Value {
    let mut region = Value::Null;
    eventually("the aggregated OpenAPI document to describe Regions", || {
        let document: Value = serde_json::from_str(&c.kubectl(&["get", "--raw", "/openapi/v2"], None)).unwrap();
        region = document["definitions"]["com.example.ops.v1.Region"].clone();
        region.is_object()
    })
    .await;
    let properties = json!({"spec": region["properties"]["spec"], "status": region["properties"]["status"]});
    let schema = json!({"type": "object", "required": ["spec"], "properties": properties});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("regions.{group}")},
        "spec": {"group": group, "scope": "Cluster",
            "names": {"plural": "regions", "singular": "region", "kind": "Region", "listKind": "RegionList",
                "shortNames": ["rg"], "categories": ["ops"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}}, "additionalPrinterColumns": columns()}]}})
}

/// The CRD's Table columns: the example's (Region's `Strategy::columns`), and the age.
fn columns() -> Value {
    let column = |name: &str, kind: &str, path: &str, description: &str| json!({"name": name, "type": kind, "jsonPath": path, "description": description, "priority": 0});
    let age = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
    json!([
        column("Zones", "string", ".spec.zones", "Its zones."),
        column("Capacity", "integer", ".spec.capacity", "Machines it may hold."),
        column("Machines", "integer", ".status.machines", "Machines it holds."),
        column("Age", "date", ".metadata.creationTimestamp", age),
    ])
}

/// The hand-written requests: a create whose body names a namespace, a second create, the
/// namespaced paths a cluster-scoped resource does not have, status, merge patch, server-side
/// apply by two managers of one field, selectors, list, delete and a read after it, and the
/// mistakes the tables' entries for Regions explain.
/// kubectl's Accept for a Table.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

fn corpus() -> Vec<Request> {
    let (json, merge, apply) = ("application/json", "application/merge-patch+json", "application/apply-patch+yaml");
    let west = json!({"apiVersion": "ops.example.com/v1", "kind": "Region", "metadata": {"name": "west", "namespace": "elsewhere"},
        "spec": {"zones": ["west-a"], "capacity": 4}});
    let applied = |zone: &str| json!({"apiVersion": "ops.example.com/v1", "kind": "Region", "metadata": {"name": "west"}, "spec": {"zones": [zone]}});
    let nowhere = json!({"apiVersion": "ops.example.com/v1", "kind": "Region", "metadata": {"name": "nowhere"},
        "spec": {"zones": [], "capacity": 1}});
    let numbered = json!({"apiVersion": "ops.example.com/v1", "kind": "Region", "metadata": {"name": "numbered"},
        "spec": {"zones": [1], "capacity": 1}});
    let labelled = json!({"apiVersion": "ops.example.com/v1", "kind": "Region",
        "metadata": {"name": "labelled", "labels": {"B-": null}}, "spec": {"zones": ["a"], "capacity": 1}});
    let request = |label: &str, method: Method, path: &str| Request::new(label, method, format!("{{gv}}{path}"));
    vec![
        request("create with a namespace in the body", Method::POST, "/regions").content_type(json).json(&west),
        request("create it again", Method::POST, "/regions").content_type(json).json(&west),
        request("read", Method::GET, "/regions/west"),
        request("read at a namespaced path", Method::GET, "/namespaces/default/regions/west"),
        request("list at a namespaced path", Method::GET, "/namespaces/default/regions"),
        request("status", Method::PATCH, "/regions/west/status")
            .content_type(merge)
            .json(&json!({"status": {"machines": 3}})),
        request("create without zones", Method::POST, "/regions").content_type(json).json(&nowhere),
        request("create with a zone that is no string", Method::POST, "/regions").content_type(json).json(&numbered),
        // A dry run: 1.20 stores what we refuse (see the tables).
        request("apply with a null label", Method::PATCH, "/regions/labelled")
            .query("fieldManager=fleet&dryRun=All")
            .content_type(apply)
            .json(&labelled),
        request("status beyond int64", Method::PATCH, "/regions/west/status")
            .content_type(merge)
            .body(r#"{"status": {"machines": 18446744073709551615}}"#),
        request("merge patch of spec and status", Method::PATCH, "/regions/west")
            .content_type(merge)
            .json(&json!({"spec": {"capacity": 5}, "status": {"machines": 9}})),
        request("apply by fleet", Method::PATCH, "/regions/west")
            .query("fieldManager=fleet")
            .content_type(apply)
            .json(&applied("west-b")),
        request("apply by a rival", Method::PATCH, "/regions/west")
            .query("fieldManager=rival")
            .content_type(apply)
            .json(&applied("west-c")),
        request("discovery", Method::GET, ""),
        request("a Table", Method::GET, "/regions").accept(TABLE),
        request("a Table of one", Method::GET, "/regions/west").accept(TABLE),
        request("list by a label", Method::GET, "/regions").query("labelSelector=missing"),
        request("list", Method::GET, "/regions"),
        request("delete", Method::DELETE, "/regions/west"),
        request("read after delete", Method::GET, "/regions/west"),
    ]
}

#[tokio::test]
async fn regions_answer_every_request_as_a_cluster_scoped_custom_resource_does() {
    // No garbage collector: it would finish an orphaning delete of ours and of the CRD's each in
    // its own time, between the delete and the read after it. Audited: every answer of both
    // sides carries an Audit-Id, compared as the other headers.
    let c = Cluster::start_with("--audit").await;
    let reference = REGIONS.reference_group;
    c.kubectl(&["apply", "-f", "-"], Some(&region_crd(&c, reference).await.to_string()));
    c.kubectl(&["wait", "--for=condition=Established", &format!("crd/regions.{reference}"), "--timeout=60s"], None);
    let details = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    // The tables of allowed differences are shared with the farm server's Llamas: here each
    // entry fires as often as it says for Regions (`expected`), or never.
    let (base, client) = c.apiserver();
    let tally = apiserver_conformance::compare(&REGIONS, (&base, client), &corpus(), details).await;
    if !tally.unexplained.is_empty() {
        println!("ops-apiserver's log:\n{}", c.log());
    }
    tally.assert_conforms();
}
