//! The Llama's validation rules (`x-kubernetes-validations` of its schema: a colour is not
//! blank; at v1 a coat keeps its pattern; a condition is not newer than its status), end to end
//! and side by side: every request is sent
//! to farm-apiserver's llamas (`farm.example.com`, through the aggregator) and to the reference
//! CustomResourceDefinition of the same Llama (`ref.example.com`, made of the OpenAPI farm-apiserver
//! publishes, rules included), which the real kube-apiserver validates itself. Creates, updates,
//! merge and JSON patches, server-side applies and status writes that break the rules (alone,
//! beside schema errors, beside errors that keep the rules from running) are answered with the
//! same `Status` by both, once the group's name is made the same; writes the rules allow
//! succeed on both.

#[path = "admission/both.rs"]
#[allow(dead_code, reason = "the admission tests use the rest")]
mod both;
mod common;

use both::{Answer, Both};
use common::clients::Cluster;
use common::control_plane::{ControlPlane, Farm};
use reqwest::Method;
use serde_json::{Value, json};

const NS: &str = "pasture";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const APPLY: &str = "application/apply-patch+yaml";
const JSON: &str = "application/json";

/// Starts the control plane, farm-apiserver, the reference CRD and the namespace.
async fn setup() -> (ControlPlane, Farm, Both) {
    let cp = ControlPlane::up();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    cp.install_reference_crd("ref.example.com");
    cp.must(&["create", "namespace", NS], None);
    let (base, client) = cp.apiserver();
    (cp, farm, Both::new(base, client))
}

/// A llama at `version` named `name` with `spec`.
fn llama(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("farm.example.com/{version}"), "kind": "Llama",
        "metadata": {"name": name, "namespace": NS}, "spec": spec})
}

fn collection() -> String {
    format!("namespaces/{NS}/llamas")
}

fn object(name: &str) -> String {
    format!("namespaces/{NS}/llamas/{name}")
}

/// Both answers to one request at `version`, asserted equal when the write was refused (a
/// `Status` is the same on both) and otherwise equal in code, warnings and spec.
async fn alike(both: &Both, version: &str, method: Method, path: &str, body: &Value, kind: &str) -> Answer {
    let (farm, reference) = both.each_at(version, method.clone(), path, Some(body), kind).await;
    assert_eq!((farm.code, &farm.warnings), (reference.code, &reference.warnings), "{method} {path}: {farm:?}");
    if farm.code >= 400 {
        assert_eq!(farm.body, reference.body, "{method} {path}");
    } else {
        assert_eq!(farm.body["spec"], reference.body["spec"], "{method} {path}");
    }
    farm
}

/// PUTs `change` of the stored llama `name` (at `version`, through `subresource` when given)
/// on both, each with its own resourceVersion.
async fn update(both: &Both, version: &str, name: &str, subresource: &str, change: impl Fn(&mut Value)) -> Answer {
    let path = format!("{version}/{}{subresource}", object(name));
    let mut answers = Vec::new();
    for group in ["farm.example.com", "ref.example.com"] {
        let mut current = both.send(group, Method::GET, &path, None, JSON).await.body;
        change(&mut current);
        answers.push(both.send(group, Method::PUT, &path, Some(&current), JSON).await);
    }
    let (farm, reference) = (&answers[0], &answers[1]);
    assert_eq!((farm.code, &farm.warnings), (reference.code, &reference.warnings), "PUT {path}: {farm:?}");
    if farm.code >= 400 {
        assert_eq!(farm.body, reference.body, "PUT {path}");
    }
    answers.swap_remove(0)
}

/// The causes of a refusal: each field and message.
fn causes(answer: &Answer) -> Vec<String> {
    let causes = answer.body["details"]["causes"].as_array().cloned().unwrap_or_default();
    causes
        .iter()
        .map(|c| format!("{}: {}", c["field"].as_str().unwrap_or(""), c["message"].as_str().unwrap_or("")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_that_break_the_llamas_rules_are_refused_as_the_reference_crd_refuses_them() {
    let (_cp, _farm, both) = setup().await;
    let post = |version: &'static str, body: Value| {
        let both = &both;
        async move { alike(both, version, Method::POST, &collection(), &body, JSON).await }
    };

    // Creates: a blank colour at each version; beside a schema error; beside a blocking one.
    let refused = post("v1alpha", llama("v1alpha", "blank", json!({"weight": 5, "height": 150, "color": "  "}))).await;
    assert_eq!(
        (refused.code, causes(&refused)),
        (422, vec!["spec.color: Invalid value: \"  \": must not be blank".into()])
    );
    let refused = post(
        "v1",
        llama("v1", "blank", json!({"weight": 5, "height": 150, "coat": {"color": "", "pattern": "Solid"}})),
    )
    .await;
    assert_eq!(causes(&refused), ["spec.coat.color: Invalid value: \"\": must not be blank"]);
    let refused = post("v1alpha", llama("v1alpha", "light", json!({"weight": -1, "height": 150, "color": " "}))).await;
    assert_eq!(causes(&refused).len(), 2, "the schema's error, then the rule's: {:?}", refused.body);
    let refused =
        post("v1alpha", llama("v1alpha", "heavy", json!({"weight": "heavy", "height": 150, "color": " "}))).await;
    assert!(
        causes(&refused).iter().any(|c| c.contains("some validation rules were not checked")),
        "a mistyped weight keeps the rules from running: {:?}",
        refused.body
    );
    let refused =
        post("v1", llama("v1", "striped", json!({"weight": 5, "height": 150, "coat": {"pattern": "Striped"}}))).await;
    assert_eq!(refused.code, 422);

    // A spotted llama, then writes that would change its pattern.
    let spotted =
        llama("v1", "spotty", json!({"weight": 5, "height": 150, "coat": {"color": "white", "pattern": "Spotted"}}));
    assert_eq!(post("v1", spotted).await.code, 201);
    let repaint = |llama: &mut Value| llama["spec"]["coat"]["pattern"] = json!("Solid");
    let refused = update(&both, "v1", "spotty", "", repaint).await;
    assert_eq!(
        causes(&refused),
        ["spec.coat.pattern: Invalid value: \"Solid\": a coat keeps its pattern for life: Spotted"]
    );
    // (One error at a time among siblings: the kube-apiserver walks properties in Go's map
    // order, which is random.)
    let merge = json!({"spec": {"weight": 0, "coat": {"pattern": "Patched"}}});
    let refused = alike(&both, "v1", Method::PATCH, &object("spotty"), &merge, MERGE).await;
    assert_eq!(causes(&refused).len(), 2, "the schema's error, then the rule's: {:?}", refused.body);
    let json_patch = json!([{"op": "replace", "path": "/spec/coat/pattern", "value": "Solid"}]);
    assert_eq!(alike(&both, "v1", Method::PATCH, &object("spotty"), &json_patch, JSON_PATCH).await.code, 422);
    let applied =
        llama("v1", "spotty", json!({"weight": 5, "height": 150, "coat": {"color": "white", "pattern": "Solid"}}));
    let apply_path = format!("{}?fieldManager=rancher&force=true", object("spotty"));
    assert_eq!(alike(&both, "v1", Method::PATCH, &apply_path, &applied, APPLY).await.code, 422);
    // A server-side apply that creates is a create: the blank colour is refused.
    let new = llama("v1", "applied", json!({"weight": 5, "height": 150, "coat": {"color": "\t"}}));
    let refused =
        alike(&both, "v1", Method::PATCH, &format!("{}?fieldManager=rancher", object("applied")), &new, APPLY).await;
    assert_eq!(causes(&refused), ["spec.coat.color: Invalid value: \"\\t\": must not be blank"]);

    // What the rules allow: a new colour, the same pattern, the pattern removed (a transition
    // rule needs the old value), then given anew.
    let recolour = json!({"spec": {"coat": {"color": "grey", "pattern": "Spotted"}}});
    assert_eq!(alike(&both, "v1", Method::PATCH, &object("spotty"), &recolour, MERGE).await.code, 200);
    let patched = json!({"spec": {"coat": {"pattern": "Patched"}}});
    let refused = alike(&both, "v1", Method::PATCH, &object("spotty"), &patched, MERGE).await;
    assert_eq!(
        causes(&refused),
        ["spec.coat.pattern: Invalid value: \"Patched\": a coat keeps its pattern for life: Spotted"]
    );
    let unpatterned = json!([{"op": "remove", "path": "/spec/coat/pattern"}]);
    assert_eq!(alike(&both, "v1", Method::PATCH, &object("spotty"), &unpatterned, JSON_PATCH).await.code, 200);
    assert_eq!(
        alike(&both, "v1", Method::PATCH, &object("spotty"), &json!({"spec": {"coat": {"pattern": "Patched"}}}), MERGE)
            .await
            .code,
        200
    );

    // Status writes keep the spec: the rules hold, a blank colour sent there is not seen.
    let status = json!({"spec": {"coat": {"color": " "}}, "status": {"observedGeneration": 1}});
    let written = alike(&both, "v1", Method::PATCH, &format!("{}/status", object("spotty")), &status, MERGE).await;
    assert_eq!((written.code, &written.body["status"]), (200, &json!({"observedGeneration": 1})));
    let put_status = |llama: &mut Value| {
        llama["status"] = json!({"observedGeneration": 2});
        llama["spec"]["coat"]["pattern"] = json!("Solid");
    };
    assert_eq!(update(&both, "v1", "spotty", "/status", put_status).await.code, 200);

    // A status whose condition observed a newer generation than the status did, through each
    // way of writing it.
    let ready = |generation: i64| {
        json!({"type": "Ready", "status": "True", "reason": "Grazing", "message": "",
            "lastTransitionTime": "2026-11-23T10:00:00Z", "observedGeneration": generation})
    };
    let newer = json!({"status": {"observedGeneration": 2, "conditions": [ready(3)]}});
    let status_path = format!("{}/status", object("spotty"));
    let refused = alike(&both, "v1", Method::PATCH, &status_path, &newer, MERGE).await;
    assert_eq!(
        causes(&refused),
        ["status.conditions: Invalid value: a condition cannot have observed a newer generation than the status"]
    );
    let newer_put = |llama: &mut Value| llama["status"] = newer["status"].clone();
    assert_eq!(update(&both, "v1alpha", "spotty", "/status", newer_put).await.code, 422);
    let applied = json!({"apiVersion": "farm.example.com/v1", "kind": "Llama",
        "metadata": {"name": "spotty", "namespace": NS}, "status": newer["status"]});
    let apply_status = format!("{status_path}?fieldManager=herder&force=true");
    assert_eq!(alike(&both, "v1", Method::PATCH, &apply_status, &applied, APPLY).await.code, 422);
    let json_patch = json!([{"op": "add", "path": "/status/conditions", "value": [ready(5)]}]);
    assert_eq!(alike(&both, "v1", Method::PATCH, &status_path, &json_patch, JSON_PATCH).await.code, 422);
    let caught_up = json!({"status": {"observedGeneration": 5, "conditions": [ready(5)]}});
    assert_eq!(alike(&both, "v1", Method::PATCH, &status_path, &caught_up, MERGE).await.code, 200);
    // A write of the object leaves the status as it is, which the rule keeps passing.
    let heavier = json!({"spec": {"weight": 6}});
    assert_eq!(alike(&both, "v1", Method::PATCH, &object("spotty"), &heavier, MERGE).await.code, 200);
}
