//! The OpenAPI documents promise only what the server does: every path and method the served
//! v2 and v3 documents list is sent a valid request (writes as dry runs) against the standalone
//! server, and must be answered with one of the codes the document lists for it.

mod common;

use common::{Server, llama, llama_path, llamas};
use serde_json::{Value, json};

/// The documented paths and methods of `document`, with their documented response codes.
fn operations(document: &Value) -> Vec<(String, String, Vec<u16>)> {
    let mut out = Vec::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        for (method, operation) in item.as_object().into_iter().flatten() {
            if method == "parameters" {
                continue;
            }
            let codes = operation["responses"].as_object().into_iter().flatten().filter_map(|(c, _)| c.parse().ok());
            out.push((path.clone(), method.clone(), codes.collect()));
        }
    }
    out
}

/// A valid request for a documented operation on the llama `dolly` of `default` (or its
/// collection); writes are dry runs, so every operation sees the same state.
fn request(s: &Server, path: &str, method: &str, current: &Value) -> reqwest::RequestBuilder {
    let path = path.replace("{namespace}", "default").replace("{name}", "dolly");
    let url = s.url(&path);
    let dry = |builder: reqwest::RequestBuilder| builder.query(&[("dryRun", "All")]);
    match method {
        "get" => s.client.get(url),
        "post" => dry(s.client.post(url)).json(&llama("created", 1.0, 2.0)),
        "put" => dry(s.client.put(url)).json(current),
        "patch" => dry(s.client.patch(url)).header("content-type", "application/merge-patch+json").body("{}"),
        "delete" => dry(s.client.delete(url)),
        other => panic!("the document lists a method the test does not know: {other}"),
    }
}

#[tokio::test]
async fn every_documented_path_and_method_answers_as_documented() {
    let s = Server::start().await;
    let created = s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 120.0, 170.5)).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let current: Value =
        s.client.get(s.url(&llama_path("default", "dolly"))).send().await.unwrap().json().await.unwrap();

    let mut checked = 0;
    for document_path in ["/openapi/v2", "/openapi/v3/apis/farm.example.com/v1alpha"] {
        let document: Value = s.client.get(s.url(document_path)).send().await.unwrap().json().await.unwrap();
        let operations = operations(&document);
        assert!(operations.len() >= 10, "{document_path} lists only {operations:?}");
        for (path, method, codes) in operations {
            let response = request(&s, &path, &method, &current).send().await.unwrap();
            let code = response.status().as_u16();
            let body: Value = response.json().await.unwrap_or(json!(null));
            assert!(
                codes.contains(&code),
                "{document_path}: {method} {path} answered {code}, documented {codes:?}: {body}"
            );
            assert!(body.is_object(), "{method} {path}: {body}");
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} operations checked");
}
