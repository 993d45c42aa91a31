//! A handler that panics answers its own request with a 500 `Status` and nothing else: the
//! connection stays up (HTTP/1.1 and HTTP/2), the server stays ready, the panic is counted in
//! `<prefix>_request_panics_total` and the answer carries the request's audit ID.

mod common;

use apiserver_kit::prelude::*;
use serde_json::{Value, json};

/// A gadget whose validation panics on size 13, as a bug in a strategy would.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "test.example.com", version = "v1", kind = "Gadget", namespaced, derive = "PartialEq")]
pub struct GadgetSpec {
    size: i64,
}

impl ApiResource for Gadget {}
impl Strategy for Gadget {
    fn validate(&self) -> Vec<FieldError> {
        assert_ne!(self.spec.size, 13, "a strategy bug: size 13");
        Vec::new()
    }
}

/// The server's URL and its token, once it is ready.
async fn serve(dir: &std::path::Path) -> (String, String) {
    let builder = ApiServerBuilder::new(Identity::new("gadget-apiserver", "0.1.0"), "test.example.com", &["v1"])
        .stored(StoredResource::<Gadget>::new());
    common::serve(builder, ServerOptions::default(), dir).await
}

fn gadget(name: &str, size: i64) -> Value {
    json!({"apiVersion": "test.example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": {"size": size}})
}

#[tokio::test]
async fn a_panicking_handler_answers_500_on_a_connection_that_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let (base, token) = serve(dir.path()).await;
    let collection = format!("{base}/apis/test.example.com/v1/namespaces/default/gadgets");
    for (http1, name) in [(true, "one"), (false, "two")] {
        let client = common::client(&token, http1);
        let response = client
            .post(&collection)
            .header("Audit-ID", format!("audit-{name}"))
            .json(&gadget(name, 13))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 500, "HTTP/1.1: {http1}");
        assert_eq!(response.headers()["audit-id"], format!("audit-{name}").as_str());
        let status: Value = response.json().await.unwrap();
        assert_eq!((status["kind"].as_str(), status["reason"].as_str()), (Some("Status"), Some("InternalError")));
        assert!(status["message"].as_str().unwrap().contains("caused apiserver to panic"), "{status}");
        // The same client (and connection) goes on: the server is ready and stores what is valid.
        assert_eq!(client.get(format!("{base}/readyz")).send().await.unwrap().status(), 200);
        let created = client.post(&collection).json(&gadget(name, 7)).send().await.unwrap();
        assert_eq!(created.status(), 201);
    }
    // Nothing of the panicking requests was stored.
    let list: Value = common::client(&token, false).get(&collection).send().await.unwrap().json().await.unwrap();
    let sizes: Vec<&Value> = list["items"].as_array().unwrap().iter().map(|g| &g["spec"]["size"]).collect();
    assert_eq!(sizes, [&json!(7), &json!(7)]);
    let metrics =
        common::client(&token, false).get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let counted = r#"gadget_apiserver_request_panics_total{verb="POST",resource="gadgets"} 2"#;
    assert!(metrics.lines().any(|line| line == counted), "no `{counted}` in:\n{metrics}");
}

#[tokio::test]
async fn a_request_without_an_audit_id_gets_one_with_its_500() {
    let dir = tempfile::tempdir().unwrap();
    let (base, token) = serve(dir.path()).await;
    let collection = format!("{base}/apis/test.example.com/v1/namespaces/default/gadgets");
    let response = common::client(&token, false).post(&collection).json(&gadget("three", 13)).send().await.unwrap();
    assert_eq!(response.status(), 500);
    let id = response.headers()["audit-id"].to_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "a UUID: {id}");
}
