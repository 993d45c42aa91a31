//! The OpenAPI documents promise only what the server does: every path and method the served
//! v2 and v3 documents list is sent a valid request (writes as dry runs) against the standalone
//! server, once with each media type it documents for its body and once asking for each media
//! type it documents for its answer (a watch's stream aside), and must be answered with one of
//! the codes the document lists for it, in the media type asked for.

mod common;

use common::{Server, llama, llama_path, llamas};
use serde_json::{Value, json};

/// One documented operation: its path, method and response codes, the media types of its
/// body (none without one) and of its answers.
struct Documented {
    path: String,
    method: String,
    codes: Vec<u16>,
    consumes: Vec<String>,
    produces: Vec<String>,
}

/// The keys of a v3 `content`, or a v2 list of media types.
fn media_types(value: &Value) -> Vec<String> {
    match value {
        Value::Object(content) => content.keys().cloned().collect(),
        Value::Array(types) => types.iter().filter_map(|t| t.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    }
}

/// The documented operations of `document` (v2 or v3).
fn operations(document: &Value) -> Vec<Documented> {
    let mut out = Vec::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        for (method, operation) in item.as_object().into_iter().flatten().filter(|(m, _)| *m != "parameters") {
            let responses = operation["responses"].as_object().into_iter().flatten();
            let codes = responses.clone().filter_map(|(c, _)| c.parse().ok()).collect();
            let has_body = operation["parameters"].as_array().into_iter().flatten().any(|p| p["in"] == "body");
            let consumes = match &operation["requestBody"] {
                Value::Null if has_body => media_types(&operation["consumes"]),
                Value::Null => Vec::new(),
                body => media_types(&body["content"]),
            };
            let mut produces = media_types(&operation["produces"]);
            produces.extend(
                responses
                    .flat_map(|(_, r)| media_types(&r["content"]))
                    .filter(|t| !produces.contains(t))
                    .collect::<Vec<_>>(),
            );
            produces.retain(|t| !t.contains("stream=watch"));
            out.push(Documented { path: path.clone(), method: method.clone(), codes, consumes, produces });
        }
    }
    out
}

/// A valid body in `media_type` for `method` on the llama `dolly` (or its collection) at
/// `api_version`, a dry run where the body says so (its llamas have no colour, so they differ
/// between versions by their `apiVersion` only).
fn body(method: &str, media_type: &str, current: &Value, api_version: &str) -> String {
    let at_version = |mut object: Value| {
        object["apiVersion"] = json!(api_version);
        object.to_string()
    };
    match (method, media_type) {
        ("post", _) => at_version(llama("created", 1.0, 2.0)),
        ("put", _) => at_version(current.clone()),
        // A DeleteOptions body is read instead of the query's options, dryRun included.
        ("delete", _) => json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}).to_string(),
        (_, "application/json-patch+json") => "[]".into(),
        (_, "application/apply-patch+yaml") => at_version(json!({"kind": "Llama", "metadata": {"name": "dolly"}})),
        _ => "{}".into(),
    }
}

/// A valid request for a documented operation on the llama `dolly` of `default` (or its
/// collection), with a body in `consumes` (JSON is YAML too), asking for an answer in `accept`;
/// writes are dry runs, so every operation sees the same state.
fn request(
    s: &Server,
    op: &Documented,
    consumes: Option<&str>,
    accept: &str,
    current: &Value,
) -> reqwest::RequestBuilder {
    let path = op.path.replace("{namespace}", "default").replace("{name}", "dolly");
    let method = reqwest::Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
    let mut builder = s.client.request(method, s.url(&path)).header("accept", accept);
    if op.method != "get" {
        builder = builder.query(&[("dryRun", "All")]);
    }
    if let Some(media_type) = consumes {
        if media_type.contains("apply-patch") {
            builder = builder.query(&[("fieldManager", "openapi-paths")]);
        }
        let version = path.split('/').nth(3).unwrap_or_default();
        let api_version = format!("farm.example.com/{version}");
        builder = builder.header("content-type", media_type).body(body(&op.method, media_type, current, &api_version));
    }
    builder
}

#[tokio::test]
async fn every_documented_path_method_and_media_type_answers_as_documented() {
    let s = Server::start().await;
    let created = s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 120.0, 170.5)).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let current: Value =
        s.client.get(s.url(&llama_path("default", "dolly"))).send().await.unwrap().json().await.unwrap();

    let mut checked = 0;
    for document_path in
        ["/openapi/v2", "/openapi/v3/apis/farm.example.com/v1", "/openapi/v3/apis/farm.example.com/v1alpha"]
    {
        let document: Value = s.client.get(s.url(document_path)).send().await.unwrap().json().await.unwrap();
        let operations = operations(&document);
        assert!(operations.len() >= 10, "{document_path} lists only {} operations", operations.len());
        for op in &operations {
            assert!(
                op.produces.contains(&"application/json".to_string()),
                "{document_path}: {} {}",
                op.method,
                op.path
            );
            let first_body = op.consumes.first().map(String::as_str);
            let bodies = op.consumes.iter().map(|c| (Some(c.as_str()), "application/json"));
            let answers = op.produces.iter().map(|p| (first_body, p.as_str()));
            for (consumes, accept) in bodies.chain(answers) {
                let response = request(&s, op, consumes, accept, &current).send().await.unwrap();
                let code = response.status().as_u16();
                let content_type = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_string());
                let text = response.text().await.unwrap();
                let what = format!("{document_path}: {} {} with {consumes:?}, accepting {accept}", op.method, op.path);
                // Without a cluster FarmPods answer 503 saying so (a code no document lists, as
                // the kube-apiserver's list only 200, 201 and 401).
                let without_cluster = op.path.contains("/farmpods") && code == 503 && text.contains("--kubeconfig");
                assert!(
                    op.codes.contains(&code) || without_cluster,
                    "{what}: answered {code}, documented {:?}: {text}",
                    op.codes
                );
                assert!(
                    content_type.as_deref().is_some_and(|t| t.starts_with(accept)),
                    "{what}: answered {content_type:?}"
                );
                assert!(!text.is_empty(), "{what}: no body");
                checked += 1;
            }
        }
    }
    println!("{checked} requests checked");
    assert!(checked >= 60, "only {checked} requests checked");
}

/// kubectl validates against OpenAPI v3 and, when v3 has no schema for an object's kind, falls
/// back to `/openapi/v2` in protobuf only: a mistyped kind must get the RESTMapper's `no matches
/// for kind`, as from the kube-apiserver, not a failed download. The protobuf answer is gnostic's
/// `openapi.v2.Document` of the JSON document, with its own ETag.
#[tokio::test]
async fn openapi_v2_is_served_as_protobuf_for_kubectls_fallback() {
    use apiserver_kit::api::openapi_protobuf::{self, CLIENT_GO_MEDIA_TYPE, MEDIA_TYPE};
    use prost::Message;

    let s = Server::start().await;
    let lama = "apiVersion: farm.example.com/v1\nkind: Lama\nmetadata: {name: x}\nspec: {weight: 1, height: 1}\n";
    let (success, stdout, stderr) = s.kubectl_with_stdin(&["apply", "-f", "-"], Some(lama));
    let output = format!("{stdout}{stderr}");
    assert!(!success, "{output}");
    assert!(output.contains(r#"no matches for kind "Lama""#), "{output}");
    assert!(!output.contains("failed to download openapi"), "{output}");

    let protobuf = s.client.get(s.url("/openapi/v2")).header("accept", CLIENT_GO_MEDIA_TYPE).send().await.unwrap();
    assert_eq!(protobuf.status(), 200);
    assert_eq!(protobuf.headers()["content-type"], MEDIA_TYPE);
    assert_eq!(protobuf.headers()["vary"], "Accept");
    let protobuf_etag = protobuf.headers()["etag"].to_str().unwrap().to_string();
    let document = openapi_protobuf::Document::decode(protobuf.bytes().await.unwrap()).unwrap();

    let json = s.client.get(s.url("/openapi/v2")).header("accept", "application/json").send().await.unwrap();
    assert_eq!(json.status(), 200);
    assert_eq!(json.headers()["content-type"], "application/json");
    assert_ne!(json.headers()["etag"].to_str().unwrap(), protobuf_etag);
    let json: Value = json.json().await.unwrap();
    assert_eq!(json["swagger"], "2.0");
    assert_eq!(document, openapi_protobuf::document(&json), "the protobuf answer encodes the JSON one");
    let definitions = &document.definitions.as_ref().unwrap().additional_properties;
    assert!(definitions.iter().any(|d| d.name == "com.example.farm.v1.Llama"));

    let cached = s
        .client
        .get(s.url("/openapi/v2"))
        .header("accept", CLIENT_GO_MEDIA_TYPE)
        .header("if-none-match", &protobuf_etag)
        .send()
        .await
        .unwrap();
    assert_eq!(cached.status(), 304);
}
