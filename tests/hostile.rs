//! Hostile input, as an attacker or a broken client sends it, against the real server over
//! HTTPS (HTTP/1.1 and HTTP/2 where they differ): every answer is a `Status` with the right
//! code, every limit holds on every route, and the server stays ready meanwhile.
//!
//! What the fuzz targets cannot reach is here: the HTTP layer, limits shared between requests,
//! and answers whose cost depends on what is stored. Nothing waits a fixed time: a request that
//! must hold a slot is made to by the test (a body it never finishes sending), and the audit log
//! tells when the server has received it.

mod common;

use common::raw::{connect, hold_a_slot, read_answer, status_of};
use common::{Backend, Server, assert_status, backends, llama, llama_path, llamas};
use rstest_reuse::apply;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

/// A client of `s` speaking only HTTP/1.1, or HTTP/2 as negotiated.
fn client(s: &Server, http1: bool) -> reqwest::Client {
    let builder = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&s.ca_pem).unwrap())
        .default_headers(
            [(reqwest::header::AUTHORIZATION, format!("Bearer {}", s.token).parse().unwrap())].into_iter().collect(),
        );
    if http1 { builder.http1_only() } else { builder }.build().unwrap()
}

/// The answer's code and its body read as JSON (`Null` when it is not JSON).
async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("an answer, not a cut connection");
    let code = response.status().as_u16();
    (code, response.json().await.unwrap_or(Value::Null))
}

async fn assert_ready(s: &Server) {
    assert_eq!(s.client.get(s.url("/readyz")).send().await.unwrap().status(), 200);
}

/// A server whose one in-flight slot a test can hold, with the audit log that tells when it is.
async fn one_slot_server(dir: &std::path::Path, extra: &[&str]) -> (Server, std::path::PathBuf) {
    let (policy, audit) = (dir.join("policy.yaml"), dir.join("audit.log"));
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n").unwrap();
    let (policy_flag, audit_flag) = (policy.display().to_string(), audit.display().to_string());
    let mut flags = vec!["--max-requests-inflight", "1", "--audit-policy-file", &policy_flag, "--audit-log-path"];
    flags.push(&audit_flag);
    flags.extend_from_slice(extra);
    let s = Server::start_with(&flags).await;
    let (code, _) = send(s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 1.0, 1.0))).await;
    assert_eq!(code, 201);
    (s, audit)
}

#[tokio::test]
async fn a_watch_whose_timeout_overflows_the_clock_is_served_on_both_http_versions() {
    let s = Server::start().await;
    let huge = "timeoutSeconds=9223372036854775807";
    for (http1, name) in [(true, "one"), (false, "two")] {
        let client = client(&s, http1);
        let mut watch = client.get(s.url(&format!("{}?watch=true&{huge}", llamas(name)))).send().await.unwrap();
        assert_eq!(watch.status(), 200, "HTTP/1.1: {http1}");
        let (code, _) = send(client.post(s.url(&llamas(name))).json(&llama(name, 1.0, 1.0))).await;
        assert_eq!(code, 201);
        let chunk = watch.chunk().await.unwrap().expect("the event of the create");
        let event: Value = serde_json::from_slice(&chunk).unwrap();
        assert_eq!((event["type"].as_str(), event["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some(name)));
        // The legacy path names the object in the path; what it names stays a name.
        let legacy = format!("/apis/farm.example.com/v1/watch/namespaces/default/llamas/a&{huge}");
        assert_eq!(client.get(s.url(&legacy)).send().await.unwrap().status(), 200);
        assert_ready(&s).await;
    }
}

#[tokio::test]
async fn only_a_get_is_a_watch_exempt_from_the_inflight_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (s, audit) = one_slot_server(dir.path(), &[]).await;
    let (mut held, body) = hold_a_slot(&s, &audit).await;
    let (code, status) =
        send(s.client.post(s.url(&format!("{}?watch=1", llamas("default")))).json(&llama("x", 1.0, 1.0))).await;
    assert_eq!(code, 429, "a POST with watch=1 is no watch: {status}");
    assert_status(&status, 429, "TooManyRequests");
    let watch = s.client.get(s.url(&format!("{}?watch=1&timeoutSeconds=1", llamas("default")))).send().await.unwrap();
    assert_eq!(watch.status(), 200);
    held.write_all(body).await.unwrap();
    assert_eq!(status_of(held).await, "200");
    let (code, _) = send(s.client.get(s.url(&llama_path("default", "x")))).await;
    assert_eq!(code, 404, "the refused POST stored nothing");
}

#[tokio::test]
async fn sixty_thousand_unknown_fields_give_fifty_warnings_not_sixty_thousand() {
    let s = Server::start().await;
    let mut body = llama("", 1.0, 1.0);
    for i in 0..60_000 {
        body["spec"][format!("f{i}")] = json!(1);
    }
    for (http1, name) in [(true, "one"), (false, "two")] {
        body["metadata"]["name"] = json!(name);
        let url = s.url(&format!("{}?fieldValidation=Warn", llamas("default")));
        let response = client(&s, http1).post(url).json(&body).send().await.expect("an answer");
        assert_eq!(response.status(), 201, "HTTP/1.1: {http1}");
        let warnings: Vec<&str> = response.headers().get_all("warning").iter().map(|w| w.to_str().unwrap()).collect();
        // v1alpha's deprecation, 49 warnings and how many more there were: a client limited to
        // 100 headers reads them.
        assert_eq!(warnings.len(), 51);
        assert!(warnings[0].contains("deprecated"), "{}", warnings[0]);
        assert_eq!(warnings[1], r#"299 - "unknown field \"spec.f0\"""#);
        assert_eq!(warnings[50], r#"299 - "59951 more warnings were dropped""#);
    }
    assert_ready(&s).await;
}

#[tokio::test]
async fn the_conversion_webhook_is_held_to_the_inflight_limit_and_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let (s, audit) = one_slot_server(dir.path(), &[]).await;
    let review = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "farm.example.com/v1", "objects": []}});
    let (mut held, body) = hold_a_slot(&s, &audit).await;
    let (code, status) = send(s.anonymous().post(s.url("/convert")).json(&review)).await;
    assert_eq!(code, 429, "{status}");
    assert_status(&status, 429, "TooManyRequests");
    held.write_all(body).await.unwrap();
    assert_eq!(status_of(held).await, "200");
    let (code, answer) = send(s.anonymous().post(s.url("/convert")).json(&review)).await;
    assert_eq!((code, answer["response"]["result"]["status"].as_str()), (200, Some("Success")));

    // A review that declares more than the webhook reads is refused before its body is read.
    let mut oversized = connect(&s).await;
    let head = "POST /convert HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                Content-Length: 100000000\r\nConnection: close\r\n\r\n{";
    oversized.write_all(head.as_bytes()).await.unwrap();
    assert_eq!(status_of(oversized).await, "413");
    assert_ready(&s).await;
}

#[tokio::test]
async fn the_conversion_webhook_takes_only_certificates_of_the_ca_it_is_given() {
    use farm_apiserver::tls::{Usage, issue_for, new_ca};
    let dir = tempfile::tempdir().unwrap();
    let (callers, strangers) = (new_ca("kube-apiserver-webhook-clients").unwrap(), new_ca("strangers").unwrap());
    let ca_file = dir.path().join("webhook-clients.crt");
    std::fs::write(&ca_file, &callers.cert_pem).unwrap();
    let s = Server::start_with(&["--conversion-webhook-client-ca-file", ca_file.to_str().unwrap()]).await;
    let review = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "farm.example.com/v1", "objects": []}});
    let with_certificate = |ca| {
        let issued = issue_for(ca, "kube-apiserver", &[], Usage::Client).unwrap();
        let identity = reqwest::Identity::from_pem(format!("{}{}", issued.cert_pem, issued.key_pem).as_bytes());
        reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&s.ca_pem).unwrap())
            .identity(identity.unwrap())
            .build()
            .unwrap()
    };
    let (code, status) = send(s.anonymous().post(s.url("/convert")).json(&review)).await;
    assert_eq!(code, 401, "{status}");
    assert_status(&status, 401, "Unauthorized");
    let (code, _) = send(with_certificate(&strangers).post(s.url("/convert")).json(&review)).await;
    assert_eq!(code, 401);
    let (code, answer) = send(with_certificate(&callers).post(s.url("/convert")).json(&review)).await;
    assert_eq!((code, answer["response"]["uid"].as_str()), (200, Some("u")));
    // The rest of the API is as it was: the token still opens it.
    assert_eq!(send(s.client.get(s.url(&llamas("default")))).await.0, 200);
}

/// `levels` objects nested under `f:a` keys, as a managed fields entry's `fieldsV1` could be.
fn nested_fields(levels: usize) -> Value {
    (1..levels).fold(json!({}), |inner, _| json!({ "f:a": inner }))
}

/// A llama named `name` whose one managed fields entry nests `levels` deep in its `fieldsV1`.
fn llama_with_deep_managed_fields(name: &str, levels: usize) -> Value {
    let mut llama = llama(name, 1.0, 1.0);
    llama["metadata"]["managedFields"] = json!([{"manager": "hand", "operation": "Update",
        "apiVersion": "farm.example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": nested_fields(levels)}]);
    llama
}

/// How deep `value` nests (a scalar is 0, `{}` is 1).
fn depth(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[tokio::test]
async fn lists_in_yaml_serve_the_deepest_object_the_server_stores() {
    let s = Server::start().await;
    let deep = llama_with_deep_managed_fields("deep", 123);
    assert_eq!(depth(&deep), 127, "the deepest body read as it is");
    let (code, created) = send(s.client.post(s.url(&llamas("default"))).json(&deep)).await;
    assert_eq!(code, 201, "{created}");
    assert!(depth(&created) >= 127, "the deep entry is stored whole: {}", depth(&created));
    for path in [llamas("default"), "/apis/farm.example.com/v1/llamas".to_string()] {
        let response = s.client.get(s.url(&path)).header("accept", "application/yaml").send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let yaml = response.text().await.unwrap();
        assert!(yaml.contains("name: deep"), "{yaml}");
    }
    let table =
        s.client.get(s.url(&llamas("default"))).header("accept", "application/yaml;as=Table;v=v1;g=meta.k8s.io");
    assert_eq!(table.send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn an_apply_to_a_stored_object_refuses_the_types_a_create_refuses() {
    const APPLY: &str = "application/apply-patch+yaml";
    let s = Server::start().await;
    let (code, stored) = send(s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 1.0, 1.0))).await;
    assert_eq!(code, 201);
    let apply = |config: Value| {
        let url = s.url(&format!("{}?fieldManager=hostile", llama_path("default", "dolly")));
        send(s.client.patch(url).header("content-type", APPLY).body(config.to_string()))
    };
    let typed = |metadata: Value, spec: Value| json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": metadata, "spec": spec});
    let (code, status) = apply(typed(json!({"name": "dolly"}), json!(7))).await;
    assert_eq!(code, 422, "{status}");
    assert_status(&status, 422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "spec", "{status}");
    let (code, status) = apply(typed(json!({"name": "dolly"}), json!({"weight": "heavy"}))).await;
    assert_eq!((code, status["details"]["causes"][0]["field"].as_str()), (422, Some("spec.weight")), "{status}");
    for metadata in [json!(7), json!({"name": "dolly", "finalizers": [1]}), json!({"name": "dolly", "labels": [1]})] {
        let (code, status) = apply(typed(metadata.clone(), json!({"weight": 2.0}))).await;
        assert_eq!(code, 400, "{metadata}: {status}");
        assert_status(&status, 400, "BadRequest");
    }
    let (_, now) = send(s.client.get(s.url(&llama_path("default", "dolly")))).await;
    assert_eq!(now["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"], "nothing was written");
}

#[tokio::test]
async fn a_managed_fields_entry_too_deep_to_keep_whole_is_refused_not_cut() {
    let s = Server::start().await;
    let deep = llama_with_deep_managed_fields("deeper", 200);
    let (code, status) = send(s.client.post(s.url(&llamas("default"))).json(&deep)).await;
    assert_eq!(code, 400, "{status}");
    assert_status(&status, 400, "BadRequest");
    assert!(status["message"].as_str().unwrap().contains("metadata nests deeper than 64 levels"), "{status}");
    assert_eq!(send(s.client.get(s.url(&llama_path("default", "deeper")))).await.0, 404);

    let (code, _) = send(s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 1.0, 1.0))).await;
    assert_eq!(code, 201);
    let patch = json!([{"op": "add", "path": "/metadata/managedFields/0/fieldsV1", "value": nested_fields(200)}]);
    let patched =
        s.client.patch(s.url(&llama_path("default", "dolly"))).header("content-type", "application/json-patch+json");
    let (code, status) = send(patched.body(patch.to_string())).await;
    assert_eq!(code, 422, "{status}");
    assert_ready(&s).await;
}

#[tokio::test]
async fn an_oversized_head_gets_a_431_status_and_the_connection_goes_on() {
    // A limit of 32 KiB, so that the query too can exceed it (a client writes no URI over 64 KiB).
    let s = Server::start_with(&["--max-header-bytes", "32768"]).await;
    let big = "x".repeat(40 * 1024);
    for http1 in [true, false] {
        let client = client(&s, http1);
        for request in [
            client.get(s.url(&llamas("default"))).header("x-filler", &big),
            client.get(s.url(&format!("{}?labelSelector=a%3D{big}", llamas("default")))),
        ] {
            let (code, status) = send(request).await;
            assert_eq!(code, 431, "HTTP/1.1: {http1}: {status}");
            assert_status(&status, 431, "RequestHeaderFieldsTooLarge");
        }
        // Over HTTP/2 the same connection serves the next request.
        assert_eq!(send(client.get(s.url(&llamas("default")))).await.0, 200);
    }
    assert_ready(&s).await;
}

#[tokio::test]
async fn refusals_before_the_body_is_read_reach_the_client_as_a_status() {
    let dir = tempfile::tempdir().unwrap();
    let (s, audit) = one_slot_server(dir.path(), &[]).await;
    let mut oversized = llama("big", 1.0, 1.0);
    oversized["metadata"]["annotations"] = json!({"a": "x".repeat(4 << 20)});
    for http1 in [true, false] {
        let (code, status) = send(client(&s, http1).post(s.url(&llamas("default"))).json(&oversized)).await;
        assert_eq!(code, 413, "HTTP/1.1: {http1}: {status}");
        assert_status(&status, 413, "RequestEntityTooLarge");
    }
    // The one slot held: a write with a body of 1 MiB is refused before it is read.
    let (mut held, body) = hold_a_slot(&s, &audit).await;
    let mut large = llama("large", 1.0, 1.0);
    large["metadata"]["annotations"] = json!({"a": "x".repeat(1 << 20)});
    for http1 in [true, false] {
        let (code, status) = send(client(&s, http1).post(s.url(&llamas("default"))).json(&large)).await;
        assert_eq!(code, 429, "HTTP/1.1: {http1}: {status}");
        assert_status(&status, 429, "TooManyRequests");
    }
    held.write_all(body).await.unwrap();
    assert_eq!(status_of(held).await, "200");
}

/// `n` finalizers named after `prefix`.
fn finalizers(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("farm.example.com/{prefix}-{i}")).collect()
}

/// Writes large enough to be worked off the runtime's workers (bodies and objects over 64 KiB:
/// a create, an apply by a second manager and a JSON patch of 10,000 finalizers) are stored and
/// answered as small ones, on both backends, while the server stays ready.
#[apply(backends)]
async fn writes_of_large_lists_are_stored_whole(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut body = llama("many", 1.0, 1.0);
    body["metadata"]["finalizers"] = json!(finalizers("a", 10_000));
    assert!(body.to_string().len() > 64 * 1024);
    let (code, created) = send(s.client.post(s.url(&llamas("default"))).json(&body)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["finalizers"].as_array().map(Vec::len), Some(10_000));
    assert_ready(&s).await;

    let config = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": "many", "finalizers": finalizers("b", 10_000)}});
    let url = s.url(&format!("{}?fieldManager=second", llama_path("default", "many")));
    let apply = s.client.patch(url).header("content-type", "application/apply-patch+yaml");
    let (code, applied) = send(apply.body(config.to_string())).await;
    assert_eq!(code, 200, "{applied}");
    let names = applied["metadata"]["finalizers"].as_array().unwrap();
    assert_eq!(names.len(), 20_000, "both managers' finalizers are kept");
    assert_eq!(
        (names[0].as_str(), names[19_999].as_str()),
        (Some("farm.example.com/a-0"), Some("farm.example.com/b-9999"))
    );
    let managers: Vec<&str> =
        applied["metadata"]["managedFields"].as_array().unwrap().iter().filter_map(|m| m["manager"].as_str()).collect();
    assert!(managers.contains(&"second"), "{managers:?}");
    assert_ready(&s).await;

    let patch = json!([{"op": "add", "path": "/metadata/finalizers/-", "value": "farm.example.com/last"}]);
    let patched =
        s.client.patch(s.url(&llama_path("default", "many"))).header("content-type", "application/json-patch+json");
    let (code, patched) = send(patched.body(patch.to_string())).await;
    assert_eq!(code, 200, "{patched}");
    let (_, read) = send(s.client.get(s.url(&llama_path("default", "many")))).await;
    assert_eq!(read["metadata"]["finalizers"].as_array().map(Vec::len), Some(20_001));
    assert_eq!(read["metadata"]["resourceVersion"], patched["metadata"]["resourceVersion"]);
}

/// Over HTTP/1.1, a body refused before it was read (429 here) is read after the answer and
/// thrown away, so the client can finish sending it, read the answer and go on using the
/// connection: closing it with the body still arriving would reset it, and a client still
/// writing would see a broken pipe rather than the answer.
#[tokio::test]
async fn over_http1_the_rest_of_a_refused_body_is_read_and_the_connection_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (s, audit) = one_slot_server(dir.path(), &[]).await;
    let (mut held, body) = hold_a_slot(&s, &audit).await;
    let mut large = llama("large", 1.0, 1.0);
    large["metadata"]["annotations"] = json!({"a": "x".repeat(1 << 20)});
    let large = large.to_string();
    let mut connection = connect(&s).await;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        llamas("default"),
        s.token,
        large.len()
    );
    connection.write_all(head.as_bytes()).await.unwrap();
    connection.flush().await.unwrap();
    let (code, answer) = read_answer(&mut connection).await;
    assert_eq!(code, "429", "{}", String::from_utf8_lossy(&answer));
    connection.write_all(large.as_bytes()).await.expect("the server reads the rest of the body");
    let next = format!("GET /readyz HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\r\n", s.token);
    connection.write_all(next.as_bytes()).await.unwrap();
    connection.flush().await.unwrap();
    let (code, _) = read_answer(&mut connection).await;
    assert_eq!(code, "200", "the same connection answers the next request");
    held.write_all(body).await.unwrap();
    assert_eq!(status_of(held).await, "200");
}
