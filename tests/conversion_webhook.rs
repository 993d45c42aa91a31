//! The CRD conversion webhook (`POST /convert`) over HTTPS, as the kube-apiserver calls it (no
//! credentials): `ConversionReview`s of Llamas between v1alpha and v1, the uid echoed, a failure
//! for an object it cannot convert, a 400 `Status` for a body that is not a review. tests/e2e.rs
//! has a real kube-apiserver call it for a two-version Llama CRD.

mod common;

use common::clients::Cluster;
use common::control_plane::{ControlPlane, Farm};
use common::{Server, assert_status};
use serde_json::{Value, json};

fn review(desired: &str, objects: Vec<Value>) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "desiredAPIVersion": desired, "objects": objects}})
}

async fn convert(s: &Server, body: &Value) -> (u16, Value) {
    let response = s.anonymous().post(s.url("/convert")).json(body).send().await.unwrap();
    let code = response.status().as_u16();
    (code, response.json().await.unwrap())
}

fn llama(api_version: &str, spec: Value, annotations: Option<Value>) -> Value {
    let mut object = json!({"apiVersion": api_version, "kind": "Llama",
        "metadata": {"name": "dolly", "namespace": "default", "uid": "0b0b0b0b-0000-0000-0000-000000000001"},
        "spec": spec});
    if let Some(annotations) = annotations {
        object["metadata"]["annotations"] = annotations;
    }
    object
}

#[tokio::test]
async fn llamas_convert_between_v1alpha_and_v1_without_credentials() {
    let s = Server::start().await;
    let old = llama("farm.example.com/v1alpha", json!({"weight": 5, "height": 170.5, "color": "brown"}), None);
    let (code, answer) = convert(&s, &review("farm.example.com/v1", vec![old.clone()])).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(
        (answer["apiVersion"].as_str(), answer["kind"].as_str()),
        (Some("apiextensions.k8s.io/v1"), Some("ConversionReview"))
    );
    assert_eq!(answer["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    let new = &answer["response"]["convertedObjects"][0];
    assert_eq!(new["apiVersion"], "farm.example.com/v1");
    assert_eq!(new["spec"], json!({"weight": 5, "height": 170.5, "coat": {"color": "brown"}}));
    assert_eq!(new["metadata"], old["metadata"]);

    let mut patterned = new.clone();
    patterned["spec"]["coat"]["pattern"] = json!("Spotted");
    let (_, answer) = convert(&s, &review("farm.example.com/v1alpha", vec![patterned.clone()])).await;
    let back = &answer["response"]["convertedObjects"][0];
    assert_eq!(back["spec"], old["spec"]);
    assert_eq!(back["metadata"]["annotations"]["farm.example.com/v1-coat"], r#"{"pattern":"Spotted"}"#);
    let (_, answer) = convert(&s, &review("farm.example.com/v1", vec![back.clone()])).await;
    assert_eq!(answer["response"]["convertedObjects"][0], patterned, "the pattern survives a v1alpha client");
}

#[tokio::test]
async fn any_group_s_llamas_convert_and_everything_else_fails_the_review() {
    let s = Server::start().await;
    let theirs = llama("ref.example.com/v1", json!({"weight": 5, "height": 1, "coat": {"color": "white"}}), None);
    let (_, answer) = convert(&s, &review("ref.example.com/v1alpha", vec![theirs])).await;
    assert_eq!(answer["response"]["convertedObjects"][0]["apiVersion"], "ref.example.com/v1alpha");
    assert_eq!(answer["response"]["convertedObjects"][0]["spec"]["color"], "white");

    let bad_annotation = llama(
        "farm.example.com/v1alpha",
        json!({"weight": 5, "height": 1}),
        Some(json!({"farm.example.com/v1-coat": "{"})),
    );
    let alpaca = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Alpaca"});
    let cases = [
        (
            "farm.example.com/v1",
            bad_annotation,
            "object 0: metadata.annotations[farm.example.com/v1-coat]: Invalid value",
        ),
        ("farm.example.com/v1", alpaca, "object 0: not a Llama"),
        ("farm.example.com/v9", llama("farm.example.com/v1", json!({}), None), "object 0: cannot convert"),
        ("other.example.com/v1", llama("farm.example.com/v1alpha", json!({}), None), "object 0: cannot convert"),
    ];
    for (desired, object, message) in cases {
        let (code, answer) = convert(&s, &review(desired, vec![object])).await;
        assert_eq!(code, 200, "a failed conversion is an answer, not an error: {answer}");
        assert_eq!(answer["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(answer["response"]["result"]["status"], "Failure", "{answer}");
        let said = answer["response"]["result"]["message"].as_str().unwrap();
        assert!(said.starts_with(message), "{said}");
    }
}

#[tokio::test]
async fn a_body_that_is_not_a_conversion_review_is_a_400_status() {
    let s = Server::start().await;
    for body in [
        json!({"kind": "ConversionReview"}),
        json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "request": {"uid": "u", "desiredAPIVersion": "farm.example.com/v1", "objects": []}}),
        json!([1]),
    ] {
        let (code, answer) = convert(&s, &body).await;
        assert_eq!(code, 400, "{answer}");
        assert_status(&answer, 400, "BadRequest");
    }
    let response = s.anonymous().post(s.url("/convert")).body("{").send().await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let response = s.anonymous().get(s.url("/convert")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 405, "only POST");
}

/// A Llama CRD served at v1alpha and v1 (storage), converted by `farm`'s webhook.
fn two_version_crd(group: &str, farm: &Farm) -> Value {
    use base64::Engine;
    let size = json!({"type": "number", "minimum": 0, "exclusiveMinimum": true});
    let v1alpha =
        json!({"type": "object", "properties": {"weight": size, "height": size, "color": {"type": "string"}}});
    let coat = json!({"type": "object", "properties": {"color": {"type": "string"},
        "pattern": {"type": "string", "enum": ["Solid", "Spotted", "Patched"]}}});
    let v1 = json!({"type": "object", "properties": {"weight": size, "height": size, "coat": coat}});
    let version = |name: &str, storage: bool, spec: Value| {
        json!({"name": name, "served": true, "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}})
    };
    let ca = base64::engine::general_purpose::STANDARD.encode(&farm.ca_pem);
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("llamas.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "llamas", "singular": "llama", "kind": "Llama", "listKind": "LlamaList"},
            "versions": [version("v1alpha", false, v1alpha), version("v1", true, v1)],
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"url": format!("https://localhost:{}/convert", farm.port), "caBundle": ca}}}}})
}

/// A real kube-apiserver converts a two-version Llama CRD through the webhook: an object written
/// at one version reads at the other, and a pattern written at v1 survives a v1alpha client that
/// reads the object and writes it back.
#[tokio::test]
async fn the_kube_apiserver_converts_a_two_version_crd_through_the_webhook() {
    let cp = ControlPlane::up();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    cp.must(&["apply", "-f", "-"], Some(&two_version_crd("webhook.example.com", &farm).to_string()));
    cp.must(&["wait", "--for=condition=Established", "crd/llamas.webhook.example.com", "--timeout=60s"], None);
    let old = "apiVersion: webhook.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: dolly\nspec:\n  weight: 5\n  height: 170.5\n  color: brown\n";
    cp.must(&["apply", "-f", "-"], Some(old));
    let read = |version: &str, name: &str| -> Value {
        let resource = format!("llamas.{version}.webhook.example.com");
        serde_json::from_str(&cp.must(&["get", &resource, name, "-o", "json"], None)).unwrap()
    };
    assert_eq!(read("v1", "dolly")["spec"], json!({"weight": 5, "height": 170.5, "coat": {"color": "brown"}}));
    assert_eq!(read("v1alpha", "dolly")["spec"]["color"], "brown");

    let new = "apiVersion: webhook.example.com/v1\nkind: Llama\nmetadata:\n  name: spotty\nspec:\n  weight: 6\n  height: 150\n  coat:\n    color: white\n    pattern: Spotted\n";
    cp.must(&["apply", "-f", "-"], Some(new));
    let mut at_v1alpha = read("v1alpha", "spotty");
    assert_eq!(at_v1alpha["metadata"]["annotations"]["farm.example.com/v1-coat"], r#"{"pattern":"Spotted"}"#);
    at_v1alpha["spec"]["weight"] = json!(7);
    cp.must(&["replace", "-f", "-"], Some(&at_v1alpha.to_string()));
    let after = read("v1", "spotty");
    assert_eq!(after["spec"], json!({"weight": 7, "height": 150, "coat": {"color": "white", "pattern": "Spotted"}}));
    assert!(after["metadata"]["annotations"].get("farm.example.com/v1-coat").is_none(), "{after}");
}
