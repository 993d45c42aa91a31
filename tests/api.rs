//! Black-box tests of the Llama API over HTTPS against the real binary in standalone mode:
//! every verb, every representation and every error, asserting codes and `Status` bodies.
//! Each test runs twice: Llamas in memory, and in a real etcd.

mod common;

use common::{Backend, Server, assert_status, backends, llama, llama_path, llamas};
use reqwest::StatusCode;
use rstest_reuse::apply;
use serde_json::{Value, json};

/// The Warning of every v1alpha answer.
const DEPRECATED: &str = "299 - \"farm.example.com/v1alpha Llama is deprecated; use farm.example.com/v1 Llama\"";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

struct Reply {
    code: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

async fn send(req: reqwest::RequestBuilder) -> Reply {
    let response = req.send().await.expect("request");
    let code = response.status();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("body");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    Reply { code, headers, body }
}

impl Server {
    async fn get_json(&self, path: &str) -> Reply {
        send(self.client.get(self.url(path))).await
    }
    async fn create(&self, ns: &str, body: &Value) -> Reply {
        send(self.client.post(self.url(&llamas(ns))).json(body)).await
    }
    async fn patch(&self, path: &str, content_type: &str, body: &str) -> Reply {
        send(self.client.patch(self.url(path)).header("content-type", content_type).body(body.to_string())).await
    }
}

#[apply(backends)]
async fn health_endpoints_are_open_and_verbose_lists_checks(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    for path in ["/healthz", "/livez", "/readyz"] {
        let r = send(s.anonymous().get(s.url(path))).await;
        assert_eq!(r.code, 200, "{path}");
        assert_eq!(r.body, "ok");
    }
    let r = send(s.anonymous().get(s.url("/readyz?verbose"))).await;
    let text = r.body.as_str().unwrap();
    assert!(
        text.contains("[+]ping ok") && text.contains("[+]shutdown ok") && text.ends_with("readyz check passed\n"),
        "{text}"
    );
    assert_eq!(send(s.anonymous().get(s.url("/livez/ping"))).await.code, 200);
    assert_status(&send(s.anonymous().get(s.url("/livez/nothing"))).await.body, 404, "NotFound");
}

#[apply(backends)]
async fn requests_without_the_token_get_401_status(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let r = send(s.anonymous().get(s.url("/apis"))).await;
    assert_status(&r.body, 401, "Unauthorized");
    let wrong = Server::client_with(&s.ca_pem, Some("not-the-token"));
    assert_status(&send(wrong.get(s.url(&llamas("default")))).await.body, 401, "Unauthorized");
    // Identity headers are no substitute for the token.
    let forged = send(
        s.anonymous().get(s.url("/apis")).header("X-Remote-User", "admin").header("X-Remote-Group", "system:masters"),
    )
    .await;
    assert_status(&forged.body, 401, "Unauthorized");
}

#[apply(backends)]
async fn unknown_paths_and_methods_get_status_bodies(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    assert_status(&s.get_json("/nothing/here").await.body, 404, "NotFound");
    assert_status(&s.get_json("/apis/farm.example.com/v1alpha/namespaces/default/cows").await.body, 404, "NotFound");
    let r = send(s.client.post(s.url("/apis")).body("{}")).await;
    assert_status(&r.body, 405, "MethodNotAllowed");
    let r = send(s.client.put(s.url(&llamas("default"))).json(&llama("a", 1.0, 1.0))).await;
    assert_status(&r.body, 405, "MethodNotAllowed");
    let r = send(s.client.post(s.url("/apis/farm.example.com/v1alpha/llamas")).json(&llama("a", 1.0, 1.0))).await;
    assert_status(&r.body, 405, "MethodNotAllowed");
}

#[apply(backends)]
async fn discovery_documents_describe_llamas(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let groups = s.get_json("/apis").await;
    assert_eq!(groups.body["kind"], "APIGroupList");
    assert_eq!(groups.body["groups"][0]["name"], "farm.example.com");
    assert_eq!(groups.body["groups"][0]["preferredVersion"]["groupVersion"], "farm.example.com/v1");

    for version in ["v2", "v2beta1"] {
        let accept =
            format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList,application/json");
        let r = send(s.client.get(s.url("/apis")).header("accept", accept)).await;
        assert_eq!(r.code, 200);
        assert_eq!(
            r.headers["content-type"],
            format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList").as_str()
        );
        assert_eq!(r.body["kind"], "APIGroupDiscoveryList");
        assert_eq!(r.body["apiVersion"], format!("apidiscovery.k8s.io/{version}"));
        let versions = &r.body["items"][0]["versions"];
        assert_eq!((versions[0]["version"].as_str(), versions[1]["version"].as_str()), (Some("v1"), Some("v1alpha")));
        let resource = &versions[0]["resources"][0];
        assert_eq!(resource["resource"], "llamas");
        assert_eq!(resource["scope"], "Namespaced");
        assert_eq!(resource["responseKind"]["kind"], "Llama");
        assert_eq!(resource["shortNames"], json!(["lm"]));
    }

    let group = s.get_json("/apis/farm.example.com").await;
    assert_eq!(group.body["kind"], "APIGroup");
    assert_eq!(group.body["versions"][0]["version"], "v1");
    assert_eq!(group.body["versions"][1]["version"], "v1alpha");

    let list = s.get_json("/apis/farm.example.com/v1alpha").await;
    assert_eq!(list.body["kind"], "APIResourceList");
    assert_eq!(list.body["groupVersion"], "farm.example.com/v1alpha");
    let llamas = &list.body["resources"][0];
    assert_eq!(llamas["name"], "llamas");
    assert_eq!(llamas["singularName"], "llama");
    assert_eq!(llamas["kind"], "Llama");
    assert_eq!(llamas["namespaced"], true);
    assert_eq!(llamas["shortNames"], json!(["lm"]));
    assert_eq!(llamas["categories"], json!(["farm"]));
    // base64 of the first 8 bytes of sha256("farm.example.com/v1/Llama"): the storage version's,
    // at every version.
    assert_eq!(llamas["storageVersionHash"], "x7awabpd3l0=");
    for verb in ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"] {
        assert!(llamas["verbs"].as_array().unwrap().contains(&json!(verb)), "{verb}");
    }

    let api = s.get_json("/api").await;
    assert_eq!(api.body["kind"], "APIVersions");
    let version = s.get_json("/version").await;
    assert_eq!(version.body["major"], "1");
    assert!(version.body["gitVersion"].as_str().unwrap().starts_with("v1."));
}

#[apply(backends)]
async fn served_openapi_matches_the_checked_in_documents(#[case] backend: Backend) {
    // With a cluster configured every resource is served (FarmPods too, even before the cluster answers).
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = common::unreachable_cluster_kubeconfig(dir.path());
    let s = Server::start_on_with(backend, &["--kubeconfig", kubeconfig.to_str().unwrap()]).await;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi");
    let read = |name: &str| {
        std::fs::read_to_string(format!("{dir}/{name}")).expect("checked-in OpenAPI file (run `make openapi`)")
    };

    let v2 = send(s.client.get(s.url("/openapi/v2"))).await;
    assert_eq!(v2.code, 200);
    assert_eq!(
        v2.body,
        serde_json::from_str::<Value>(&read("v2.json")).unwrap(),
        "openapi/v2.json is stale: run `make openapi`"
    );
    let etag = v2.headers["etag"].to_str().unwrap().to_string();
    let cached = send(s.client.get(s.url("/openapi/v2")).header("if-none-match", &etag)).await;
    assert_eq!(cached.code, StatusCode::NOT_MODIFIED);

    let index = s.get_json("/openapi/v3").await;
    assert_eq!(
        index.body,
        serde_json::from_str::<Value>(&read("v3.json")).unwrap(),
        "openapi/v3.json is stale: run `make openapi`"
    );
    let url = index.body["paths"]["apis/farm.example.com/v1alpha"]["serverRelativeURL"].as_str().unwrap().to_string();
    assert!(url.contains("?hash="));
    let gv = s.get_json(&url).await;
    assert_eq!(gv.code, 200);
    assert!(gv.headers["cache-control"].to_str().unwrap().contains("immutable"));
    assert_eq!(
        gv.body,
        serde_json::from_str::<Value>(&read("v3-apis-farm.example.com-v1alpha.json")).unwrap(),
        "openapi/v3-apis-farm.example.com-v1alpha.json is stale: run `make openapi`"
    );
    let v1_url = index.body["paths"]["apis/farm.example.com/v1"]["serverRelativeURL"].as_str().unwrap().to_string();
    let v1 = s.get_json(&v1_url).await;
    assert_eq!(v1.code, 200);
    assert_eq!(
        v1.body,
        serde_json::from_str::<Value>(&read("v3-apis-farm.example.com-v1.json")).unwrap(),
        "openapi/v3-apis-farm.example.com-v1.json is stale: run `make openapi`"
    );
    let stale = send(
        reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&s.ca_pem).unwrap())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(s.url("/openapi/v3/apis/farm.example.com/v1alpha?hash=0000"))
            .bearer_auth(&s.token),
    )
    .await;
    assert_eq!(stale.code, StatusCode::MOVED_PERMANENTLY);
    assert!(stale.headers["location"].to_str().unwrap().ends_with(&url[url.find("hash=").unwrap() + 5..]));

    let schema = &gv.body["components"]["schemas"]["com.example.farm.v1alpha.Llama"];
    assert_eq!(schema["x-kubernetes-group-version-kind"][0]["kind"], "Llama");
    // Protobuf is served (tests/openapi_paths.rs checks it); an Accept of nothing the server
    // writes is a 406 Status.
    let unservable =
        send(s.client.get(s.url("/openapi/v2")).header("accept", "application/vnd.kubernetes.protobuf")).await;
    assert_status(&unservable.body, 406, "NotAcceptable");
}

#[apply(backends)]
async fn create_sets_system_fields_and_ignores_client_set_ones(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut body = llama("dolly", 120.0, 170.5);
    body["metadata"]["uid"] = json!("client-uid");
    body["metadata"]["generation"] = json!(9);
    body["metadata"]["creationTimestamp"] = json!("2001-01-01T00:00:00Z");
    // A resourceVersion is refused, as the kube-apiserver's storage refuses it.
    let mut with_rv = body.clone();
    with_rv["metadata"]["resourceVersion"] = json!("12345");
    let refused = s.create("default", &with_rv).await;
    assert_status(&refused.body, 400, "BadRequest");
    assert_eq!(refused.body["message"], "resourceVersion should not be set on objects to be created");
    let r = s.create("default", &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let meta = &r.body["metadata"];
    assert_ne!(meta["uid"], "client-uid");
    assert_eq!(meta["uid"].as_str().unwrap().len(), 36);
    assert_ne!(meta["resourceVersion"], "12345");
    assert_eq!(meta["generation"], 1);
    assert_ne!(meta["creationTimestamp"], "2001-01-01T00:00:00Z");
    assert_eq!(meta["namespace"], "default");
    assert_eq!(r.body["apiVersion"], "farm.example.com/v1alpha");
    assert_eq!(r.body["kind"], "Llama");

    let got = s.get_json(&llama_path("default", "dolly")).await;
    assert_eq!(got.code, 200);
    assert_eq!(got.body, r.body);
}

#[apply(backends)]
async fn resource_versions_increase_globally_across_namespaces(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut last = 0u64;
    for (i, ns) in ["a", "b", "a", "c"].iter().enumerate() {
        let r = s.create(ns, &llama(&format!("l{i}"), 1.0, 1.0)).await;
        let rv: u64 = r.body["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
        assert!(rv > last, "{rv} after {last}");
        last = rv;
    }
    let list = s.get_json("/apis/farm.example.com/v1alpha/llamas").await;
    assert_eq!(list.body["metadata"]["resourceVersion"], last.to_string());
}

#[apply(backends)]
async fn generate_name_makes_a_unique_name(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut body = llama("", 1.0, 1.0);
    body["metadata"] = json!({"generateName": "cria-"});
    let a = s.create("default", &body).await;
    let b = s.create("default", &body).await;
    let (na, nb) = (a.body["metadata"]["name"].as_str().unwrap(), b.body["metadata"]["name"].as_str().unwrap());
    assert!(na.starts_with("cria-") && na.len() == 10, "{na}");
    assert_ne!(na, nb);
    body["metadata"] = json!({});
    let r = s.create("default", &body).await;
    assert_status(&r.body, 422, "Invalid");
    assert!(r.body["message"].as_str().unwrap().contains("metadata.name: Required value"), "{}", r.body);
}

#[apply(backends)]
async fn creating_a_duplicate_is_already_exists(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    assert_eq!(s.create("default", &llama("dolly", 1.0, 1.0)).await.code, 201);
    let r = s.create("default", &llama("dolly", 2.0, 2.0)).await;
    assert_status(&r.body, 409, "AlreadyExists");
    assert_eq!(r.body["message"], "llamas.farm.example.com \"dolly\" already exists");
    assert_eq!(r.body["details"], json!({"name": "dolly", "group": "farm.example.com", "kind": "llamas"}));
    assert_eq!(s.get_json(&llama_path("default", "dolly")).await.body["spec"]["weight"], 1.0);
}

#[apply(backends)]
async fn getting_a_missing_llama_returns_not_found_status(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let r = s.get_json(&llama_path("default", "ghost")).await;
    assert_status(&r.body, 404, "NotFound");
    assert_eq!(r.body["message"], "llamas.farm.example.com \"ghost\" not found");
    assert_eq!(r.body["details"]["name"], "ghost");
    assert_eq!(r.body["details"]["kind"], "llamas");
}

#[tokio::test]
async fn a_path_segment_that_is_not_utf8_gets_a_bad_request_status() {
    let s = Server::start().await;
    for path in [llama_path("default", "%FF"), "/apis/farm.example.com/v1alpha/namespaces/%C3%28/llamas".into()] {
        let r = s.get_json(&path).await;
        assert_status(&r.body, 400, "BadRequest");
        assert!(r.body["message"].as_str().unwrap().contains("UTF-8"), "{}", r.body);
    }
    let r = s.get_json("/readyz/%FF").await;
    assert_eq!(r.code, 400, "{}", r.body);
}

#[apply(backends)]
async fn invalid_llamas_get_one_422_listing_every_field_and_nothing_is_stored(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut body = llama("Bad_Name", -1.0, 0.0);
    body["metadata"]["labels"] = json!({"bad key": "ok"});
    let r = s.create("default", &body).await;
    assert_status(&r.body, 422, "Invalid");
    assert_eq!(r.body["details"]["kind"], "Llama");
    assert_eq!(r.body["details"]["group"], "farm.example.com");
    assert_eq!(r.body["details"]["name"], "Bad_Name");
    let fields: Vec<&str> =
        r.body["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    for field in ["metadata.name", "metadata.labels", "spec.weight", "spec.height"] {
        assert!(fields.contains(&field), "{field} missing from {fields:?}");
    }
    assert!(r.body["message"].as_str().unwrap().starts_with("Llama.farm.example.com \"Bad_Name\" is invalid: ["));

    let missing = s.create("default", &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "x"}, "spec": {"weight": "heavy"}})).await;
    assert_status(&missing.body, 422, "Invalid");
    let causes = missing.body["details"]["causes"].to_string();
    assert!(
        causes.contains("spec.height")
            && causes.contains("FieldValueRequired")
            && causes.contains("must be of type number"),
        "{causes}"
    );
    let no_spec = s
        .create(
            "default",
            &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "x"}}),
        )
        .await;
    assert_status(&no_spec.body, 422, "Invalid");
    assert_eq!(no_spec.body["details"]["causes"][0]["field"], "spec");

    let list = s.get_json(&llamas("default")).await;
    assert_eq!(list.body["items"], json!([]));
}

#[apply(backends)]
async fn malformed_requests_are_bad_requests(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut other_ns = llama("a", 1.0, 1.0);
    other_ns["metadata"]["namespace"] = json!("elsewhere");
    let r = s.create("default", &other_ns).await;
    assert_status(&r.body, 400, "BadRequest");
    assert!(r.body["message"].as_str().unwrap().contains("does not match the namespace"));

    let mut wrong_version = llama("a", 1.0, 1.0);
    wrong_version["apiVersion"] = json!("farm.example.com/v2");
    assert_status(&s.create("default", &wrong_version).await.body, 400, "BadRequest");
    let mut wrong_kind = llama("a", 1.0, 1.0);
    wrong_kind["kind"] = json!("Alpaca");
    assert_status(&s.create("default", &wrong_kind).await.body, 400, "BadRequest");

    let r =
        send(s.client.post(s.url(&llamas("default"))).header("content-type", "application/json").body("{\"kind\": "))
            .await;
    assert_status(&r.body, 400, "BadRequest");
    let r = send(s.client.post(s.url(&llamas("default"))).header("content-type", "text/plain").body("hello")).await;
    assert_status(&r.body, 415, "UnsupportedMediaType");

    let mut huge = llama("big", 1.0, 1.0);
    huge["metadata"]["annotations"] = json!({"filler": "x".repeat(3 * 1024 * 1024 + 10)});
    let r = s.create("default", &huge).await;
    assert_status(&r.body, 413, "RequestEntityTooLarge");
    assert_eq!(s.get_json(&llamas("default")).await.body["items"], json!([]));
}

#[apply(backends)]
async fn a_body_without_content_type_is_read_as_json(#[case] backend: Backend) {
    // The official Python client sends custom-object creates without a Content-Type.
    let s = Server::start_on(backend).await;
    let request = s.client.post(s.url(&llamas("default"))).body(llama("dolly", 1.0, 1.0).to_string());
    let created = send(request).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["metadata"]["name"], "dolly");
}

#[apply(backends)]
async fn yaml_bodies_are_read_as_the_kube_apiserver_reads_them(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let post = |body: &str| {
        s.client.post(s.url(&llamas("default"))).header("content-type", "application/yaml").body(body.to_string())
    };
    // go-yaml v2's scalars, as kube-apiserver 1.20 stored them for a Llama CRD: hex, legacy octal, quoted text.
    let manifest = "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: dolly\n  labels: {tier: gold}\nspec:\n  weight: 0x10\n  height: 0755\n  color: \"yes\"\n";
    let created = send(post(manifest)).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["spec"], json!({"weight": 16, "height": 493, "color": "yes"}));
    assert_eq!(created.body["metadata"]["labels"], json!({"tier": "gold"}));
    // An unquoted `yes` is YAML 1.1's true, which the schema refuses for a string.
    let r = send(post(&manifest.replace("dolly", "bool").replace("\"yes\"", "yes"))).await;
    assert_status(&r.body, 422, "Invalid");
    assert!(
        r.body["message"].as_str().unwrap().contains("spec.color in body must be of type string: \"boolean\""),
        "{}",
        r.body
    );
    let r = send(post("apiVersion: farm.example.com/v1alpha\nkind: Llama\nspec:\n  height: [1\n")).await;
    assert_status(&r.body, 400, "BadRequest");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .starts_with("the object provided is unrecognized (must be of type Llama): "),
        "{}",
        r.body
    );

    let rv = created.body["metadata"]["resourceVersion"].as_str().unwrap();
    let put_body = format!(
        "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: dolly\n  resourceVersion: \"{rv}\"\nspec:\n  weight: 17\n  height: 2\n"
    );
    let put = send(
        s.client.put(s.url(&llama_path("default", "dolly"))).header("content-type", "application/yaml").body(put_body),
    )
    .await;
    assert_eq!(put.code, 200, "{}", put.body);
    assert_eq!(put.body["spec"], json!({"weight": 17, "height": 2}));

    let r = send(s.client.post(s.url(&llamas("default"))).header("content-type", "text/plain").body(manifest)).await;
    assert_status(&r.body, 415, "UnsupportedMediaType");
    assert_eq!(
        r.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );

    let dry_run = "apiVersion: v1\nkind: DeleteOptions\ndryRun: [All]\n";
    let delete = s.client.delete(s.url(&llama_path("default", "dolly"))).header("content-type", "application/yaml");
    assert_eq!(send(delete.body(dry_run)).await.code, 200);
    assert_eq!(
        s.get_json(&llama_path("default", "dolly")).await.code,
        200,
        "a dry-run delete read from YAML keeps the llama"
    );
}

#[apply(backends)]
async fn field_validation_controls_unknown_fields(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut body = llama("dolly", 1.0, 1.0);
    body["spec"]["horns"] = json!(2);
    body["metadata"]["nickname"] = json!("d");

    let strict = send(s.client.post(s.url(&format!("{}?fieldValidation=Strict", llamas("default")))).json(&body)).await;
    assert_status(&strict.body, 400, "BadRequest");
    let message = strict.body["message"].as_str().unwrap();
    assert!(
        message.contains("unknown field \"spec.horns\"") && message.contains("unknown field \"metadata.nickname\""),
        "{message}"
    );

    let warn = send(s.client.post(s.url(&format!("{}?fieldValidation=Warn", llamas("default")))).json(&body)).await;
    assert_eq!(warn.code, 201);
    let warnings: Vec<&str> = warn.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert!(warnings.contains(&"299 - \"unknown field \\\"spec.horns\\\"\""), "{warnings:?}");
    assert!(warn.body["spec"].get("horns").is_none());

    body["metadata"]["name"] = json!("quiet");
    let ignore = send(s.client.post(s.url(&format!("{}?fieldValidation=Ignore", llamas("default")))).json(&body)).await;
    assert_eq!(ignore.code, 201);
    let warnings: Vec<&str> = ignore.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(warnings, [DEPRECATED], "only v1alpha's deprecation");

    let bad =
        send(s.client.post(s.url(&format!("{}?fieldValidation=Loose&dryRun=Maybe", llamas("default")))).json(&body))
            .await;
    assert_status(&bad.body, 422, "Invalid");
    assert!(bad.body["message"].as_str().unwrap().starts_with("CreateOptions.meta.k8s.io"), "{}", bad.body);
}

/// What the kube-apiserver's decoder warns of goes out with whatever refuses the write after
/// it: a namespace or apiVersion other than the request's (400; of another version, only the
/// metadata's), a name already taken (409, with the finalizer warning of the strategy too).
#[tokio::test]
async fn refused_writes_still_warn_of_what_decoding_found() {
    let s = Server::start().await;
    let warnings = |r: &reqwest::Response| -> Vec<String> {
        r.headers().get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect()
    };
    let horns = "299 - \"unknown field \\\"spec.horns\\\"\"";
    let mut body = llama("dolly", 1.0, 1.0);
    body["spec"]["horns"] = json!(2);
    body["metadata"]["namespace"] = json!("elsewhere");
    let other_namespace = s.client.post(s.url(&llamas("default"))).json(&body).send().await.unwrap();
    assert_eq!(
        (other_namespace.status().as_u16(), warnings(&other_namespace)),
        (400, vec![DEPRECATED.to_string(), horns.to_string()])
    );

    body["metadata"]["namespace"] = json!("default");
    body["metadata"]["finalizers"] = json!(["hold"]);
    let finalizer = "299 - \"metadata.finalizers: \\\"hold\\\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers\"";
    for code in [201, 409] {
        let created = s.client.post(s.url(&llamas("default"))).json(&body).send().await.unwrap();
        assert_eq!(created.status().as_u16(), code);
        assert_eq!(warnings(&created), [DEPRECATED, horns, finalizer], "{code}");
    }

    // Every unknown field, also past one of the wrong type, and also when the object is missing.
    let mut mistyped = llama("nobody", 1.0, 1.0);
    mistyped["spec"]["height"] = json!([1]);
    mistyped["spec"]["horns"] = json!(2);
    let missing = s.client.put(s.url(&llama_path("default", "nobody"))).json(&mistyped).send().await.unwrap();
    assert_eq!((missing.status().as_u16(), warnings(&missing)), (404, vec![DEPRECATED.to_string(), horns.to_string()]));

    // A patched object is decoded, its unknown fields warned of (those of the spec a status
    // write resets included), before the storage refuses its emptied resourceVersion.
    let status = s.client.patch(s.url(&format!("{}/status", llama_path("default", "dolly"))));
    let status = status.header("content-type", "application/merge-patch+json");
    let emptied = status.body(r#"{"metadata": {"resourceVersion": ""}, "spec": {"horns": 2}}"#).send().await.unwrap();
    assert_eq!((emptied.status().as_u16(), warnings(&emptied)), (422, vec![DEPRECATED.to_string(), horns.to_string()]));

    // A body of another version: only its metadata's unknown fields (decoded as ObjectMeta
    // whatever the kind), as a custom resource's decoder warns of them.
    body["apiVersion"] = json!("");
    body["metadata"]["horns"] = json!(2);
    let horns = "299 - \"unknown field \\\"metadata.horns\\\"\"";
    let no_version = s.client.put(s.url(&llama_path("default", "dolly"))).json(&body).send().await.unwrap();
    assert_eq!(
        (no_version.status().as_u16(), warnings(&no_version)),
        (400, vec![DEPRECATED.to_string(), horns.to_string()])
    );
}

/// A patch body that is no JSON at all is refused before the object is looked up (1.31 and
/// later: `invalid JSON patch`, 400, where the object's absence was answered first).
#[tokio::test]
async fn a_patch_that_is_no_json_is_refused_before_the_object_is_looked_up() {
    let s = Server::start().await;
    for (content_type, body) in [
        ("application/merge-patch+json", "z`&"),
        ("application/json-patch+json", "[{"),
        ("application/merge-patch+json", ""),
    ] {
        let patch = s.client.patch(s.url(&llama_path("default", "nobody"))).header("content-type", content_type);
        let r = send(patch.body(body)).await;
        assert_status(&r.body, 400, "BadRequest");
        assert_eq!(r.body["message"], "invalid JSON patch", "{content_type} {body:?}");
    }
    let r = send(
        s.client
            .patch(s.url(&llama_path("default", "nobody")))
            .header("content-type", "application/merge-patch+json")
            .body("[1]"),
    )
    .await;
    assert_status(&r.body, 404, "NotFound");
}

#[apply(backends)]
async fn update_checks_resource_version_and_bumps_generation_on_spec_change(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let created = s.create("default", &llama("dolly", 1.0, 1.0)).await.body;
    let path = llama_path("default", "dolly");

    let mut next = created.clone();
    next["spec"]["weight"] = json!(2.0);
    let updated = send(s.client.put(s.url(&path)).json(&next)).await;
    assert_eq!(updated.code, 200, "{}", updated.body);
    assert_eq!(updated.body["metadata"]["generation"], 2);
    assert_ne!(updated.body["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
    assert_eq!(updated.body["metadata"]["uid"], created["metadata"]["uid"]);

    let mut labelled = updated.body.clone();
    labelled["metadata"]["labels"] = json!({"herd": "a"});
    let relabelled = send(s.client.put(s.url(&path)).json(&labelled)).await;
    assert_eq!(relabelled.body["metadata"]["generation"], 2, "metadata changes leave generation alone");

    let stale = send(s.client.put(s.url(&path)).json(&next)).await;
    assert_status(&stale.body, 409, "Conflict");
    assert!(stale.body["message"].as_str().unwrap().contains("the object has been modified"));

    let mut no_rv = next.clone();
    no_rv["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    assert_status(&send(s.client.put(s.url(&path)).json(&no_rv)).await.body, 422, "Invalid");

    let renamed = send(s.client.put(s.url(&llama_path("default", "other"))).json(&relabelled.body)).await;
    assert_status(&renamed.body, 400, "BadRequest");
    let mut ghost = relabelled.body.clone();
    ghost["metadata"]["name"] = json!("ghost");
    assert_status(&send(s.client.put(s.url(&llama_path("default", "ghost"))).json(&ghost)).await.body, 404, "NotFound");

    let mut invalid = relabelled.body.clone();
    invalid["spec"]["height"] = json!(-5);
    assert_status(&send(s.client.put(s.url(&path)).json(&invalid)).await.body, 422, "Invalid");
    assert_eq!(s.get_json(&path).await.body, relabelled.body, "a refused update changes nothing");
}

#[apply(backends)]
async fn merge_and_json_patches_apply_and_strategic_merge_is_unsupported(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    s.create("default", &llama("dolly", 1.0, 1.0)).await;
    let path = llama_path("default", "dolly");

    let merged = s
        .patch(
            &path,
            "application/merge-patch+json",
            r#"{"spec":{"color":"white"},"metadata":{"labels":{"herd":"a"}}}"#,
        )
        .await;
    assert_eq!(merged.code, 200, "{}", merged.body);
    assert_eq!(merged.body["spec"]["color"], "white");
    assert_eq!(merged.body["metadata"]["labels"]["herd"], "a");
    assert_eq!(merged.body["metadata"]["generation"], 2);

    let jsonp =
        s.patch(&path, "application/json-patch+json", r#"[{"op":"replace","path":"/spec/weight","value":7}]"#).await;
    assert_eq!(jsonp.code, 200, "{}", jsonp.body);
    assert_eq!(jsonp.body["spec"]["weight"], 7.0);

    let smp = s.patch(&path, "application/strategic-merge-patch+json", r#"{"spec":{"weight":8}}"#).await;
    assert_status(&smp.body, 415, "UnsupportedMediaType");

    let failed_test =
        s.patch(&path, "application/json-patch+json", r#"[{"op":"test","path":"/spec/weight","value":1}]"#).await;
    assert_status(&failed_test.body, 422, "Invalid");
    let garbage = s.patch(&path, "application/json-patch+json", "not json").await;
    assert_status(&garbage.body, 400, "BadRequest");
    let invalid = s.patch(&path, "application/merge-patch+json", r#"{"spec":{"weight":-1}}"#).await;
    assert_status(&invalid.body, 422, "Invalid");
    let stale = s
        .patch(&path, "application/merge-patch+json", r#"{"metadata":{"resourceVersion":"1"},"spec":{"weight":9}}"#)
        .await;
    assert_status(&stale.body, 409, "Conflict");
    let rename = s.patch(&path, "application/merge-patch+json", r#"{"metadata":{"name":"other"}}"#).await;
    // As the kube-apiserver's patcher: a 400 naming both names.
    assert_status(&rename.body, 400, "BadRequest");
    assert_eq!(rename.body["message"], "the name of the object (other) does not match the name on the URL (dolly)");

    assert_eq!(s.get_json(&path).await.body, jsonp.body, "refused patches change nothing");
    let missing = s.patch(&llama_path("default", "ghost"), "application/merge-patch+json", "{}").await;
    assert_status(&missing.body, 404, "NotFound");
}

#[apply(backends)]
async fn delete_returns_the_deleted_object_and_honours_preconditions(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let created = s.create("default", &llama("dolly", 1.0, 1.0)).await.body;
    let path = llama_path("default", "dolly");

    let wrong_uid = send(
        s.client
            .delete(s.url(&path))
            .json(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "nope"}})),
    )
    .await;
    assert_status(&wrong_uid.body, 409, "Conflict");
    assert!(
        wrong_uid.body["message"]
            .as_str()
            .unwrap()
            .contains("the UID in the precondition (nope) does not match the UID in record"),
        "{}",
        wrong_uid.body
    );

    let bad_policy = send(s.client.delete(s.url(&format!("{path}?propagationPolicy=Sometimes")))).await;
    assert_status(&bad_policy.body, 422, "Invalid");

    let deleted = send(s.client.delete(s.url(&path)).json(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background", "preconditions": {"uid": created["metadata"]["uid"]}}))).await;
    assert_eq!(deleted.code, 200, "{}", deleted.body);
    assert_eq!(deleted.body["kind"], "Llama");
    assert_eq!(deleted.body["metadata"]["uid"], created["metadata"]["uid"]);
    assert_status(&s.get_json(&path).await.body, 404, "NotFound");
    assert_status(&send(s.client.delete(s.url(&path))).await.body, 404, "NotFound");
}

#[apply(backends)]
async fn finalizers_delay_deletion_until_the_last_is_removed(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let mut body = llama("dolly", 1.0, 1.0);
    body["metadata"]["finalizers"] = json!(["farm.example.com/shear"]);
    s.create("default", &body).await;
    let path = llama_path("default", "dolly");

    let marked = send(s.client.delete(s.url(&path))).await;
    assert_eq!(marked.code, 200);
    assert!(marked.body["metadata"]["deletionTimestamp"].is_string(), "{}", marked.body);
    let still = s.get_json(&path).await;
    assert_eq!(still.code, 200);
    assert_eq!(still.body["metadata"]["deletionTimestamp"], marked.body["metadata"]["deletionTimestamp"]);

    let again = send(s.client.delete(s.url(&path))).await;
    assert_eq!(
        again.body["metadata"]["resourceVersion"], marked.body["metadata"]["resourceVersion"],
        "a second delete changes nothing"
    );

    let add = s
        .patch(
            &path,
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":["farm.example.com/shear","farm.example.com/more"]}}"#,
        )
        .await;
    assert_status(&add.body, 422, "Invalid");

    let cleared = s.patch(&path, "application/merge-patch+json", r#"{"metadata":{"finalizers":null}}"#).await;
    assert_eq!(cleared.code, 200, "{}", cleared.body);
    assert_status(&s.get_json(&path).await.body, 404, "NotFound");
}

#[apply(backends)]
async fn dry_run_validates_everything_and_stores_nothing(#[case] backend: Backend) {
    // The last check reads the store's revision, which with etcd is the whole etcd's: on the
    // etcd the test binary shares, other tests move it.
    let s = Server::start_isolated(backend, &[]).await;
    let dry = |p: &str| format!("{p}?dryRun=All");
    let created = send(s.client.post(s.url(&dry(&llamas("default")))).json(&llama("dolly", 1.0, 1.0))).await;
    assert_eq!(created.code, 201);
    assert_eq!(created.body["metadata"]["name"], "dolly");
    assert_status(&s.get_json(&llama_path("default", "dolly")).await.body, 404, "NotFound");
    // A dry run answers the object as it came, with the resourceVersion it was sent (the real
    // create refuses one, 400), as the kube-apiserver's dry-run storage answers a copy of it.
    let mut with_rv = llama("dolly", 1.0, 1.0);
    with_rv["metadata"]["resourceVersion"] = json!("42");
    let tried = send(s.client.post(s.url(&dry(&llamas("default")))).json(&with_rv)).await;
    assert_eq!((tried.code.as_u16(), &tried.body["metadata"]["resourceVersion"]), (201, &json!("42")));
    assert_status(&send(s.client.post(s.url(&llamas("default"))).json(&with_rv)).await.body, 400, "BadRequest");

    let real = s.create("default", &llama("dolly", 1.0, 1.0)).await.body;
    let path = llama_path("default", "dolly");
    let patched = s.patch(&dry(&path), "application/merge-patch+json", r#"{"spec":{"weight":5}}"#).await;
    assert_eq!(patched.body["spec"]["weight"], 5.0);
    let mut next = real.clone();
    next["spec"]["height"] = json!(9);
    let put = send(s.client.put(s.url(&dry(&path))).json(&next)).await;
    assert_eq!(put.code, 200);
    let deleted = send(s.client.delete(s.url(&dry(&path)))).await;
    assert_eq!(deleted.code, 200);
    assert_eq!(s.get_json(&path).await.body, real, "dry runs left the object untouched");

    // Every verb's dry run is judged as the real request is: validation, existence and
    // preconditions refuse it with the same Status as without dryRun.
    for (method, path, content_type, body, code, reason) in refused_writes(&real) {
        let request = |query: &str| {
            let request = s.client.request(method.clone(), s.url(&format!("{path}{query}")));
            let request = request.header("content-type", content_type);
            match &body {
                Some(body) => request.body(body.to_string()),
                None => request,
            }
        };
        let (dry_answer, real_answer) = (send(request("?dryRun=All")).await, send(request("")).await);
        assert_status(&dry_answer.body, code, reason);
        assert_eq!(dry_answer.body, real_answer.body, "{method} {path}: the dry run is refused as the real request");
    }
    assert_eq!(s.get_json(&path).await.body, real, "refused writes left the object untouched");
    let revision = s.get_json(&llamas("default")).await.body["metadata"]["resourceVersion"].clone();
    assert_eq!(revision, real["metadata"]["resourceVersion"], "dry runs used no revision");
}

/// A write and its refusal: method, path, content type, body, and the refusal's code and reason.
type Refused = (reqwest::Method, String, &'static str, Option<Value>, u16, &'static str);

/// Writes the server refuses while `dolly` (stored as `real`) exists in `default`, one per verb
/// and reason.
fn refused_writes(real: &Value) -> Vec<Refused> {
    use reqwest::Method;
    let (dolly, nobody) = (llama_path("default", "dolly"), llama_path("default", "nobody"));
    let (json, merge) = ("application/json", "application/merge-patch+json");
    let mut invalid = real.clone();
    invalid["spec"]["weight"] = json!(-1);
    let mut stale = real.clone();
    stale["metadata"]["resourceVersion"] = json!("999999");
    let precondition =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "999999"}});
    vec![
        (Method::POST, llamas("default"), json, Some(llama("bad", -1.0, 1.0)), 422, "Invalid"),
        (Method::POST, llamas("default"), json, Some(llama("dolly", 1.0, 1.0)), 409, "AlreadyExists"),
        (Method::PUT, dolly.clone(), json, Some(invalid), 422, "Invalid"),
        (Method::PUT, dolly.clone(), json, Some(stale), 409, "Conflict"),
        (Method::PATCH, dolly.clone(), merge, Some(json!({"spec": {"weight": -1}})), 422, "Invalid"),
        (Method::PATCH, nobody.clone(), merge, Some(json!({"spec": {"weight": 2}})), 404, "NotFound"),
        (Method::DELETE, nobody, json, None, 404, "NotFound"),
        (Method::DELETE, dolly, json, Some(precondition), 409, "Conflict"),
    ]
}

#[apply(backends)]
async fn lists_are_typed_sorted_and_scoped(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    for (ns, name) in [("b", "z"), ("a", "y"), ("a", "x")] {
        s.create(ns, &llama(name, 1.0, 1.0)).await;
    }
    let all = s.get_json("/apis/farm.example.com/v1alpha/llamas").await;
    assert_eq!(all.body["kind"], "LlamaList");
    assert_eq!(all.body["apiVersion"], "farm.example.com/v1alpha");
    let names: Vec<&str> =
        all.body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["x", "y", "z"]);
    let a = s.get_json(&llamas("a")).await;
    assert_eq!(a.body["items"].as_array().unwrap().len(), 2);
}

#[apply(backends)]
async fn deletecollection_empties_one_namespace_only(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    for (ns, name) in [("a", "x"), ("a", "y"), ("b", "z")] {
        s.create(ns, &llama(name, 1.0, 1.0)).await;
    }
    let r = send(s.client.delete(s.url(&llamas("a")))).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["kind"], "LlamaList");
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(s.get_json(&llamas("a")).await.body["items"], json!([]));
    assert_eq!(s.get_json(&llamas("b")).await.body["items"].as_array().unwrap().len(), 1);
}

#[apply(backends)]
async fn tables_render_name_weight_height_and_age(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    s.create("default", &llama("dolly", 120.0, 170.5)).await;
    let list =
        send(s.client.get(s.url(&llamas("default"))).header("accept", format!("{TABLE},application/json"))).await;
    // The serializer's media type, as the kube-apiserver writes a Table's: the body says it is one.
    assert_eq!(list.headers["content-type"], "application/json");
    assert_eq!(list.body["kind"], "Table");
    assert_eq!(list.body["apiVersion"], "meta.k8s.io/v1");
    let columns: Vec<&str> =
        list.body["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(columns, ["Name", "Weight", "Height", "Ready", "Age", "Color"]);
    let row = &list.body["rows"][0];
    assert_eq!(row["cells"][0], "dolly");
    assert_eq!(row["cells"][1], 120.0);
    assert_eq!(row["cells"][2], 170.5);
    assert_eq!(row["cells"][3], Value::Null, "no Ready condition yet");
    assert!(row["cells"][4].as_str().unwrap().ends_with('s'));
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
    let stored = s.get_json(&llama_path("default", "dolly")).await.body;
    assert_eq!(row["object"]["metadata"], stored["metadata"], "the whole metadata, managed fields included");
    assert!(stored["metadata"]["managedFields"].is_array());
    let pretty = s
        .client
        .get(s.url(&format!("{}?pretty=true", llamas("default"))))
        .header("accept", TABLE)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(pretty.starts_with("{\n  \"kind\": \"Table\""), "pretty, in the Table's own order: {pretty}");
    assert!(pretty.contains("\n          \"name\": \"dolly\""), "the row's object indented too: {pretty}");
    let mut compact = list.body.clone();
    let mut reread: Value = serde_json::from_str(&pretty).unwrap();
    for table in [&mut compact, &mut reread] {
        table["rows"][0]["cells"][4] = json!("age");
        // The list's resourceVersion is the storage's revision, which other tests sharing the
        // etcd move between the two requests.
        table["metadata"]["resourceVersion"] = json!("rv");
    }
    assert_eq!(reread, compact);

    let one = send(
        s.client
            .get(s.url(&format!("{}?includeObject=Object", llama_path("default", "dolly"))))
            .header("accept", TABLE),
    )
    .await;
    assert_eq!(one.body["rows"][0]["object"], stored, "the whole object, as a GET answers it");
    assert_eq!(one.body["rows"].as_array().unwrap().len(), 1);
    let none =
        send(s.client.get(s.url(&format!("{}?includeObject=None", llamas("default")))).header("accept", TABLE)).await;
    assert_eq!(none.body["rows"][0]["object"], json!(null), "an empty RawExtension, as Go writes it");
    let bad =
        send(s.client.get(s.url(&format!("{}?includeObject=All", llamas("default")))).header("accept", TABLE)).await;
    assert_status(&bad.body, 400, "BadRequest");
}

#[apply(backends)]
async fn metadata_only_and_protobuf_first_requests_are_negotiated(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    s.create("default", &llama("dolly", 1.0, 1.0)).await;
    let meta = send(
        s.client
            .get(s.url(&llamas("default")))
            .header("accept", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"),
    )
    .await;
    assert_eq!(meta.body["kind"], "PartialObjectMetadataList");
    assert_eq!(meta.body["items"][0]["metadata"]["name"], "dolly");
    assert!(meta.body["items"][0].get("spec").is_none());
    let one = send(
        s.client
            .get(s.url(&llama_path("default", "dolly")))
            .header("accept", "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"),
    )
    .await;
    assert_eq!(one.body["kind"], "PartialObjectMetadata");

    let proto_first = send(
        s.client
            .get(s.url(&llama_path("default", "dolly")))
            .header("accept", "application/vnd.kubernetes.protobuf, */*"),
    )
    .await;
    assert_eq!(proto_first.code, 200);
    assert_eq!(proto_first.body["kind"], "Llama");
    let proto_only = send(
        s.client.get(s.url(&llama_path("default", "dolly"))).header("accept", "application/vnd.kubernetes.protobuf"),
    )
    .await;
    assert_status(&proto_only.body, 406, "NotAcceptable");
}

#[apply(backends)]
async fn http2_is_negotiated_over_tls(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let r = s.client.get(s.url("/apis")).send().await.unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
}

/// A browser's or a command-line tool's request (`User-Agent: curl/…`, `Wget/…`,
/// `Mozilla/5.0 …`) gets indented JSON, as the kube-apiserver gives it: objects, lists, `Status`
/// errors (authentication's too), discovery and `/version`; `pretty` in the query decides over
/// the client as Go reads a boolean (`pretty=yes` is false); watches stay one event per line.
#[tokio::test]
async fn human_clients_get_indented_answers_unless_the_query_says_otherwise() {
    let s = Server::start().await;
    s.create("default", &llama("dolly", 120.0, 170.5)).await;
    let text = |client: reqwest::Client, path: String, agent: &'static str| async move {
        let response = client.get(path).header("user-agent", agent).send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    };
    let curl = "curl/8.5.0";
    for (path, code, start) in [
        (llama_path("default", "dolly"), 200, "{\n  \"apiVersion\": \"farm.example.com/"),
        (llamas("default"), 200, "{\n  \"apiVersion\": \"farm.example.com/"),
        (llama_path("default", "nobody"), 404, "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\""),
        // (Discovery's and /version's fields are in k8s-openapi's order, not Go's.)
        ("/apis/farm.example.com/v1".to_string(), 200, "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"APIResourceList\""),
        ("/version".to_string(), 200, "{\n  \"buildDate\": "),
        ("/no/such/path".to_string(), 404, "{\n  \"kind\": \"Status\""),
    ] {
        let (got, body) = text(s.client.clone(), s.url(&path), curl).await;
        assert_eq!((got, body.starts_with(start)), (code, true), "{path}: {body}");
        let (_, compact) = text(s.client.clone(), s.url(&path), "kubectl/v1.32.0").await;
        assert!(compact.starts_with("{\""), "{path}: {compact}");
        let (indented, compact): (Value, Value) =
            (serde_json::from_str(&body).unwrap(), serde_json::from_str(&compact).unwrap());
        assert_eq!(indented["kind"], compact["kind"], "{path}");
    }
    let (code, body) = text(s.anonymous(), s.url(&llamas("default")), "Mozilla/5.0 (X11; Linux x86_64)").await;
    assert_eq!((code, body.starts_with("{\n  \"kind\": \"Status\"")), (401, true), "{body}");
    for (query, agent) in
        [("pretty=0", curl), ("pretty=yes", curl), ("pretty=yes", "Go-http-client/2.0"), ("pretty", "Go")]
    {
        let (_, body) = text(s.client.clone(), s.url(&format!("{}?{query}", llamas("default"))), agent).await;
        assert!(body.starts_with("{\""), "{query} from {agent}: {body}");
    }
    let (_, body) = text(s.client.clone(), s.url(&format!("{}?pretty=true", llamas("default"))), "Go").await;
    assert!(body.starts_with("{\n"), "{body}");
    let (_, events) =
        text(s.client.clone(), s.url(&format!("{}?watch=1&timeoutSeconds=1", llamas("default"))), curl).await;
    assert!(events.starts_with("{\"type\":\"ADDED\""), "{events}");
}
