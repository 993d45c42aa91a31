//! The hand-written corpus: every verb and subresource of llamas, every content type, the query
//! parameters of each verb with valid, empty, duplicated and invalid values, malformed bodies and
//! unusual paths. Requests run in order and build on each other (a list sees what the creates
//! before it made), so each section uses llamas of its own names.

use apiserver_conformance::Request;
use reqwest::Method;
use serde_json::{Value, json};

/// The namespaces the corpus uses, one per section (so a difference in one section's writes
/// cannot show up again in another's lists) and one for generated requests; the test creates them.
pub const NAMESPACES: &[&str] = &[
    "conformance",
    "paths",
    "creates",
    "bodies",
    "reads",
    "lists",
    "updates",
    "patches",
    "applies",
    "migrations",
    "versions",
    "status",
    "deletes",
    "watches",
    "herd",
    "compression",
    "generated",
];
/// The namespace sections are written in; each runs in the namespace of its name instead.
const NS: &str = "conformance";

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY_YAML: &str = "application/apply-patch+yaml";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const METADATA: &str = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";

/// The path of `rest` under the corpus's namespace.
pub fn at(rest: &str) -> String {
    format!("{{gv}}/namespaces/{NS}/{rest}")
}

/// A Llama; a whole weight is written as an integer (`20`, not `20.0`), as clients written in Go
/// write it, since kube-apiserver 1.20 counts `20.0` replacing a stored `20` as a change of spec.
pub fn llama(name: &str, weight: f64) -> Value {
    let weight = if weight.fract() == 0.0 { json!(weight as i64) } else { json!(weight) };
    json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": name}, "spec": {"weight": weight, "height": 170.5}})
}

fn yaml_llama(name: &str, weight: &str) -> String {
    format!(
        "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: {name}\nspec:\n  weight: {weight}\n  height: 170.5\n"
    )
}

fn get(label: &str, path: &str) -> Request {
    Request::new(label, Method::GET, path)
}

fn create(label: &str, body: &Value) -> Request {
    Request::new(label, Method::POST, at("llamas")).content_type(JSON).json(body)
}

fn create_text(label: &str, content_type: &str, body: &str) -> Request {
    Request::new(label, Method::POST, at("llamas")).content_type(content_type).body(body)
}

fn patch(label: &str, name: &str, content_type: &str, body: &str) -> Request {
    Request::new(label, Method::PATCH, at(&format!("llamas/{name}"))).content_type(content_type).body(body)
}

fn delete(label: &str, name: &str) -> Request {
    Request::new(label, Method::DELETE, at(&format!("llamas/{name}")))
}

/// A herd of twelve, listed and watched from the watch cache: the kube-apiserver 1.20's cache
/// gives them in the order it walks a Go map (from a random bucket and slot), which for twelve
/// is all but never key order, where three (the `lists` section's) often are.
fn herd() -> Vec<Request> {
    let mut requests: Vec<Request> =
        (1..=12).map(|i| create("herd: a llama", &llama(&format!("member-{i:02}"), f64::from(i)))).collect();
    // A watch from the last create's resourceVersion waits until the watch cache has seen it.
    requests.push(
        get("herd: the watch cache has seen the last", &at("llamas"))
            .query("watch=true&timeoutSeconds=1&resourceVersion=$RV"),
    );
    requests.push(get("herd: listed from the watch cache", &at("llamas")).query("resourceVersion=0"));
    requests.push(get("herd: watched from the start", &at("llamas")).query("watch=true&timeoutSeconds=1"));
    requests
}

/// Compressed answers (APIResponseCompression): two llamas with 70,000-character annotations make
/// a list of over 128 KiB, gzipped for a client that accepts gzip; one of them alone, a list
/// asked for without gzip or with other encodings only, and a watch, go as they are.
fn compression() -> Vec<Request> {
    let large = |name: &str| {
        let mut body = llama(name, 40.0);
        body["metadata"]["annotations"] = json!({"note": "a".repeat(70_000)});
        create("compression: a llama of 70 KB", &body)
    };
    let list = |label: &str, encoding: &str| {
        get(&format!("compression: {label}"), &at("llamas")).header("accept-encoding", encoding)
    };
    vec![
        large("wool-1"),
        large("wool-2"),
        list("a list of 140 KB, gzip accepted", "gzip"),
        list("gzip among others", "deflate, gzip, br"),
        list("gzip with a quality", "gzip;q=1.0"),
        list("only other encodings", "deflate, br"),
        list("any encoding", "*"),
        list("identity", "identity"),
        get("compression: a list without Accept-Encoding", &at("llamas")),
        list("a Table of them", "gzip").accept("application/json;as=Table;v=v1;g=meta.k8s.io"),
        get("compression: one llama of 70 KB", &at("llamas/wool-1")).header("accept-encoding", "gzip"),
        get("compression: a watch", &at("llamas"))
            .query("watch=true&timeoutSeconds=1")
            .header("accept-encoding", "gzip"),
    ]
}

/// The whole hand-written corpus, in the order it runs.
pub fn requests() -> Vec<Request> {
    let sections = [
        ("paths", paths()),
        ("creates", creates()),
        ("bodies", malformed_bodies()),
        ("reads", reads()),
        ("lists", lists()),
        ("updates", updates()),
        ("patches", patches()),
        ("applies", applies()),
        ("migrations", migrations()),
        ("versions", versions()),
        ("status", status()),
        ("deletes", deletes()),
        ("watches", watches()),
        ("herd", herd()),
        ("compression", compression()),
    ];
    let mut requests = Vec::new();
    for (namespace, section) in sections {
        for mut request in section {
            request.path = request.path.replace(NS, namespace);
            request.query = request.query.replace(NS, namespace);
            if let Some(body) = request.body.take() {
                request.body = Some(match String::from_utf8(body) {
                    Ok(text) => text.replace(NS, namespace).into_bytes(),
                    Err(e) => e.into_bytes(),
                });
            }
            requests.push(request);
        }
    }
    requests
}

/// The path of `rest` under the corpus's namespace at v1.
fn at_v1(rest: &str) -> String {
    format!("{{gv2}}/namespaces/{NS}/{rest}")
}

/// A Llama at v1 with `coat`.
fn coated(name: &str, coat: Value) -> Value {
    json!({"apiVersion": "farm.example.com/v1", "kind": "Llama", "metadata": {"name": name},
        "spec": {"weight": 6, "height": 150, "coat": coat}})
}

/// v1 beside v1alpha: every verb at v1 on objects stored once and read at both versions (the
/// reference converts through farm-apiserver's `/convert`), v1's pattern through a v1alpha
/// client, the enum, v1alpha's deprecation warning, and server-side apply across versions.
fn versions() -> Vec<Request> {
    let v1 = |label: &str, method: Method, rest: &str| Request::new(format!("versions: {label}"), method, at_v1(rest));
    let create_v1 = |label: &str, body: &Value| v1(label, Method::POST, "llamas").content_type(JSON).json(body);
    let mut requests = vec![
        create_v1("create at v1 with a coat", &coated("coated", json!({"color": "white", "pattern": "Spotted"}))),
        v1("read at v1", Method::GET, "llamas/coated"),
        get("versions: read at v1alpha, the pattern in its annotation", &at("llamas/coated")),
        v1("list at v1", Method::GET, "llamas"),
        get("versions: list at v1alpha", &at("llamas")),
        v1("Table at v1", Method::GET, "llamas").accept(TABLE),
        get("versions: Table at v1alpha", &at("llamas")).accept(TABLE),
        v1("metadata at v1", Method::GET, "llamas/coated").accept(METADATA),
        v1("YAML at v1", Method::GET, "llamas/coated").accept(YAML),
        create_v1("a pattern outside the enum", &coated("striped", json!({"pattern": "Striped"}))),
        create_v1("a colour that is no string", &coated("odd", json!({"color": 5}))),
        create_v1("a v1alpha body at v1", &llama("misplaced", 5.0)),
        get("versions: the object read at v1alpha to write back", &at("llamas/coated")),
        Request::new("versions: replaced at v1alpha with its annotation", Method::PUT, at("llamas/coated"))
            .content_type(JSON)
            .json(&json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
                "metadata": {"name": "coated", "resourceVersion": "$RV",
                    "annotations": {"farm.example.com/v1-coat": "{\"pattern\":\"Spotted\"}"}},
                "spec": {"weight": 7, "height": 150, "color": "white"}})),
        v1("the pattern kept", Method::GET, "llamas/coated"),
        v1("merge patch at v1", Method::PATCH, "llamas/coated")
            .content_type(MERGE)
            .body(json!({"spec": {"coat": {"pattern": "Patched"}}}).to_string()),
        v1("JSON patch at v1", Method::PATCH, "llamas/coated")
            .content_type(JSON_PATCH)
            .body(json!([{"op": "replace", "path": "/spec/coat/color", "value": "black"}]).to_string()),
        patch(
            "versions: a v1alpha client removes the annotation",
            "coated",
            MERGE,
            &json!({"metadata": {"annotations": {"farm.example.com/v1-coat": null}}}).to_string(),
        ),
        v1("the pattern removed", Method::GET, "llamas/coated"),
        v1("status at v1", Method::PATCH, "llamas/coated/status")
            .content_type(MERGE)
            .body(json!({"status": {"observedGeneration": 1}}).to_string()),
        create_v1("a second, to delete", &coated("doomed", json!({"color": "grey"}))),
        v1("deletecollection at v1", Method::DELETE, "llamas").query("fieldSelector=metadata.name%3Ddoomed"),
        v1("delete at v1", Method::DELETE, "llamas/coated"),
    ];
    requests.extend(applies_across_versions());
    requests
}

/// Server-side apply across versions: each manager's fields are named at its request's version,
/// and conflicts, forcing, ownership and removal work across them.
fn applies_across_versions() -> Vec<Request> {
    let apply = |label: &str, gv: &str, query: &str, spec: Value| {
        let version = if gv == "{gv2}" { "v1" } else { "v1alpha" };
        let body = json!({"apiVersion": format!("farm.example.com/{version}"), "kind": "Llama",
            "metadata": {"name": "across"}, "spec": spec});
        Request::new(format!("versions: apply {label}"), Method::PATCH, format!("{gv}/namespaces/{NS}/llamas/across"))
            .content_type(APPLY_YAML)
            .body(body.to_string())
            .query(query.to_string())
    };
    let (v1, v1alpha) = ("{gv2}", "{gv}");
    let sizes = |extra: Value| {
        let mut spec = json!({"weight": 5, "height": 3});
        spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        spec
    };
    let coat = |coat: Value| sizes(json!({"coat": coat}));
    vec![
        apply("at v1alpha by old", v1alpha, "fieldManager=old", sizes(json!({"color": "white"}))),
        apply(
            "at v1 by new: the colour conflicts",
            v1,
            "fieldManager=new",
            coat(json!({"color": "brown", "pattern": "Spotted"})),
        ),
        apply(
            "at v1 by new, forced",
            v1,
            "fieldManager=new&force=true",
            coat(json!({"color": "brown", "pattern": "Spotted"})),
        ),
        apply("at v1 by old, same fields", v1, "fieldManager=old", sizes(json!({}))),
        get("versions: applied across versions, at v1alpha", &at("llamas/across")),
        apply("at v1 by new without the pattern", v1, "fieldManager=new", coat(json!({"color": "brown"}))),
        Request::new("versions: read at v1 after the pattern went", Method::GET, at_v1("llamas/across")),
        patch(
            "versions: a v1alpha update sets a colour",
            "across",
            MERGE,
            &json!({"spec": {"color": "grey"}}).to_string(),
        )
        .query("fieldManager=patcher"),
        apply("at v1 conflicts with the v1alpha updater", v1, "fieldManager=new", coat(json!({"color": "red"}))),
        apply("at v1 with the updater's value", v1, "fieldManager=new", coat(json!({"color": "grey"}))),
        Request::new("versions: managers at the end", Method::GET, at_v1("llamas/across")),
        // 1.20 fails this one (see the entry of ON_PURPOSE on pruning at another version).
        apply("at v1alpha by new, moving back", v1alpha, "fieldManager=new", sizes(json!({"color": "grey"}))),
    ]
}

/// Discovery and unusual paths: trailing slashes, percent-encoding, unknown resources and versions.
fn paths() -> Vec<Request> {
    let mut requests = vec![create("paths: a llama to find", &llama("pathfinder", 100.0))];
    for path in [
        "{gv}",
        "{gv}/",
        "/apis/farm.example.com/v9",
        "/apis/farm.example.com/v9/namespaces/conformance/llamas",
        "{gv}/cows",
        "{gv}/namespaces/conformance/cows",
        "{gv}/namespaces/conformance/cows/x",
        "{gv}/llamas",
        "{gv}/llamas/",
        "{gv}/llamas/pathfinder",
        "{gv}/namespaces/conformance/llamas/",
        "{gv}/namespaces/conformance/llamas/pathfinder",
        "{gv}/namespaces/conformance/llamas/pathfinder/",
        "{gv}/namespaces/conformance/llamas/path%66inder",
        "{gv}/namespaces/conform%61nce/llamas/pathfinder",
        "{gv}/namespaces/conformance/llamas/pathfinder/status",
        "{gv}/namespaces/conformance/llamas/pathfinder/status/",
        "{gv}/namespaces/conformance/llamas/pathfinder/scale",
        "{gv}/namespaces/conformance/llamas/pathfinder/status/extra",
        "{gv}/namespaces/conformance/llamas/missing/status",
        "{gv}/namespaces/conformance/llamas/Pathfinder",
        "{gv}/namespaces/conformance/llamas/a%20b",
        "{gv}/namespaces/conformance/llamas/a%2Fb",
        "{gv}/namespaces/conformance/llamas/..",
        "{gv}/namespaces/conformance/llamas/%2E%2E",
        "{gv}/namespaces/conformance",
        "{gv}/namespaces/conformance/",
        "{gv}/namespaces/",
        "{gv}/namespaces/missing/llamas",
        "{gv}/namespaces/missing/llamas/pathfinder",
        "{gv}/namespaces/Bad_Namespace/llamas",
        "{gv}/namespaces/conformance/llamas/pathfinder?",
        "{gv}/namespaces/conformance/llamas//pathfinder",
    ] {
        requests.push(get("paths", path));
    }
    for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
        for path in ["{gv}", "{gv}/llamas", "{gv}/namespaces/conformance/llamas/pathfinder/scale", "{gv}/cows"] {
            let request = Request::new("paths: other methods", method.clone(), path).content_type(JSON);
            requests.push(request.json(&llama("nobody", 1.0)));
        }
    }
    requests.push(
        Request::new("paths: POST to a named llama", Method::POST, at("llamas/pathfinder"))
            .content_type(JSON)
            .json(&llama("pathfinder", 1.0)),
    );
    requests.push(
        Request::new("paths: PUT to the collection", Method::PUT, at("llamas"))
            .content_type(JSON)
            .json(&llama("pathfinder", 1.0)),
    );
    requests.push(Request::new("paths: HEAD", Method::HEAD, at("llamas/pathfinder")));
    requests.push(Request::new("paths: OPTIONS", Method::OPTIONS, at("llamas/pathfinder")));
    requests
}

/// Creates: content types, query parameters and the metadata rules of names, labels, annotations.
fn creates() -> Vec<Request> {
    let mut requests = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        format!("create-{n}")
    };
    for content_type in [
        JSON,
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        "APPLICATION/JSON",
        "",
        "text/plain",
        "application/xml",
        "application/vnd.kubernetes.protobuf",
        "*/*",
        "application/json, text/plain",
        "garbage;;",
    ] {
        let request = Request::new(format!("create: content-type {content_type:?}"), Method::POST, at("llamas"));
        let request = if content_type.is_empty() { request } else { request.content_type(content_type) };
        requests.push(request.json(&llama(&next(), 10.0)));
    }
    for content_type in [YAML, "application/yaml; charset=utf-8", "text/yaml", "application/x-yaml"] {
        requests.push(create_text(&format!("create: {content_type}"), content_type, &yaml_llama(&next(), "11")));
    }
    for content_type in [MERGE, JSON_PATCH, STRATEGIC, APPLY_YAML] {
        requests.push(create_text(
            &format!("create: patch type {content_type}"),
            content_type,
            &llama(&next(), 1.0).to_string(),
        ));
    }
    let query_values: &[(&str, &[&str])] = &[
        ("dryRun", &["All", "", "all", "bogus", "All&dryRun=All", "All&dryRun=bogus"]),
        (
            "fieldManager",
            &["conformance", "", "a%20b", &"m".repeat(129), &"m".repeat(128), "tab%09here", "x&fieldManager=y"],
        ),
        ("fieldValidation", &["Ignore", "Warn", "Strict", "", "strict", "bogus"]),
        ("pretty", &["true", "false", "bogus", ""]),
        ("timeout", &["10s", "bogus", ""]),
        ("unknownParameter", &["x"]),
    ];
    for (name, values) in query_values {
        for value in *values {
            let request = create(&format!("create: {name}={value}"), &llama(&next(), 12.0));
            requests.push(request.query(format!("{name}={value}")));
        }
    }
    for (label, metadata) in metadata_cases() {
        let mut body = llama("", 13.0);
        let name = next();
        body["metadata"] = metadata;
        if let Some(metadata) = body["metadata"].as_object_mut()
            && !metadata.contains_key("name")
            && !metadata.contains_key("generateName")
        {
            metadata.insert("name".into(), json!(name));
        }
        requests.push(create(&format!("create: metadata {label}"), &body));
    }
    requests.push(create("create: again (exists)", &llama("create-1", 10.0)));
    requests.push(create("create: again, dry run", &llama("create-1", 10.0)).query("dryRun=All"));
    // A dry run answers the object as it came, the resourceVersion sent included.
    let mut with_rv = llama("dry-with-rv", 10.0);
    with_rv["metadata"]["resourceVersion"] = json!("5");
    requests.push(create("create: dry run carrying a resourceVersion", &with_rv).query("dryRun=All"));
    requests
}

/// Metadata to create llamas with: what validation accepts and refuses.
fn metadata_cases() -> Vec<(&'static str, Value)> {
    let long = "a".repeat(254);
    let label_63 = "v".repeat(63);
    let label_64 = "v".repeat(64);
    vec![
        ("no name", json!({})),
        ("empty name", json!({"name": ""})),
        ("generateName", json!({"generateName": "gen-"})),
        ("bad generateName", json!({"generateName": "Gen_"})),
        ("name and generateName", json!({"name": "both-names", "generateName": "gen-"})),
        ("uppercase name", json!({"name": "Dolly"})),
        ("name with a dot", json!({"name": "dolly.the.llama"})),
        ("name with a slash", json!({"name": "a/b"})),
        ("name with a percent", json!({"name": "a%b"})),
        ("name '..'", json!({"name": ".."})),
        ("name too long", json!({"name": long})),
        ("name of 253", json!({"name": "n".repeat(253)})),
        ("name with spaces", json!({"name": "a b"})),
        ("name is a number", json!({"name": 5})),
        ("name is null", json!({"name": null})),
        ("other namespace", json!({"name": "ns-mismatch", "namespace": "default"})),
        ("same namespace", json!({"name": "ns-same", "namespace": NS})),
        ("labels", json!({"name": "labelled", "labels": {"a": "b", "example.com/c": "d", "e": ""}})),
        ("label value of 63", json!({"name": "label-63", "labels": {"a": label_63}})),
        ("label value of 64", json!({"labels": {"a": label_64}})),
        ("label key with a space", json!({"labels": {"a b": "c"}})),
        ("label key with two slashes", json!({"labels": {"a/b/c": "c"}})),
        ("label key with an uppercase prefix", json!({"labels": {"Example.com/c": "c"}})),
        ("label value with a slash", json!({"labels": {"a": "b/c"}})),
        ("label value not a string", json!({"labels": {"a": 1}})),
        ("labels a list", json!({"labels": ["a"]})),
        (
            "annotations",
            json!({"name": "annotated", "annotations": {"note": "x\ny", "example.com/big": "b".repeat(1000)}}),
        ),
        ("annotations too large", json!({"annotations": {"a": "b".repeat(262145)}})),
        ("annotation key invalid", json!({"annotations": {"-a": "b"}})),
        ("finalizers", json!({"name": "finalized", "finalizers": ["example.com/hold"]})),
        ("finalizer without a domain", json!({"finalizers": ["hold"]})),
        ("finalizer invalid", json!({"finalizers": ["a b/c"]})),
        (
            "finalizers duplicated",
            json!({"name": "twice-finalized", "finalizers": ["example.com/hold", "example.com/hold"]}),
        ),
        (
            "ownerReferences",
            json!({"name": "owned", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "0b0b0b0b-0000-0000-0000-000000000001"}]}),
        ),
        (
            "ownerReference without uid",
            json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": ""}]}),
        ),
        (
            "ownerReference without kind",
            json!({"ownerReferences": [{"apiVersion": "v1", "kind": "", "name": "cm", "uid": "0b0b0b0b-0000-0000-0000-000000000001"}]}),
        ),
        (
            "two controllers",
            json!({"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "0b0b0b0b-0000-0000-0000-000000000001", "controller": true},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "0b0b0b0b-0000-0000-0000-000000000002", "controller": true}]}),
        ),
        ("uid set", json!({"name": "with-uid", "uid": "0b0b0b0b-0000-0000-0000-000000000003"})),
        ("resourceVersion set", json!({"name": "with-rv", "resourceVersion": "5"})),
        ("creationTimestamp set", json!({"name": "with-time", "creationTimestamp": "2020-01-01T00:00:00Z"})),
        ("creationTimestamp invalid", json!({"creationTimestamp": "yesterday"})),
        ("deletionTimestamp set", json!({"name": "with-deletion", "deletionTimestamp": "2020-01-01T00:00:00Z"})),
        ("generation set", json!({"name": "with-generation", "generation": 7})),
        ("selfLink set", json!({"name": "with-selflink", "selfLink": "/x"})),
        (
            "managedFields set",
            json!({"name": "with-managed", "managedFields": [{"manager": "someone", "operation": "Update", "apiVersion": "farm.example.com/v1alpha", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:weight": {}}}}]}),
        ),
        ("managedFields invalid", json!({"managedFields": [{"manager": "someone", "operation": "Bogus"}]})),
        ("unknown metadata field", json!({"name": "meta-unknown", "colour": "red"})),
        ("metadata a string", json!("dolly")),
        ("metadata null", json!(null)),
    ]
}

/// Bodies that are not Llamas, or not quite.
fn malformed_bodies() -> Vec<Request> {
    let mut requests = Vec::new();
    let bodies: Vec<(&str, String)> = vec![
        ("empty", String::new()),
        ("whitespace", "  \n".into()),
        ("null", "null".into()),
        ("array", "[]".into()),
        ("string", "\"llama\"".into()),
        ("number", "5".into()),
        ("empty object", "{}".into()),
        ("truncated", "{\"apiVersion\": \"farm.example.com/v1alpha\", \"kind\": \"Llama\"".into()),
        ("trailing garbage", format!("{} x", llama("trailing", 1.0))),
        ("two objects", format!("{}{}", llama("two-a", 1.0), llama("two-b", 1.0))),
        ("no kind", r#"{"apiVersion": "farm.example.com/v1alpha", "metadata": {"name": "no-kind"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("no apiVersion", r#"{"kind": "Llama", "metadata": {"name": "no-version"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("wrong kind", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Alpaca", "metadata": {"name": "alpaca"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("list kind", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "LlamaList", "items": []}"#.into()),
        ("wrong group", r#"{"apiVersion": "other.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "other-group"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("wrong version", r#"{"apiVersion": "farm.example.com/v1", "kind": "Llama", "metadata": {"name": "other-version"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("core apiVersion", r#"{"apiVersion": "v1", "kind": "Llama", "metadata": {"name": "core-version"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("kind a number", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": 5, "metadata": {"name": "kind-number"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("lowercase kind", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "llama", "metadata": {"name": "lower-kind"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("no spec", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "no-spec"}}"#.into()),
        ("spec null", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "spec-null"}, "spec": null}"#.into()),
        ("spec a list", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "spec-list"}, "spec": []}"#.into()),
        ("empty spec", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "spec-empty"}, "spec": {}}"#.into()),
        ("no weight", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "no-weight"}, "spec": {"height": 1}}"#.into()),
        ("weight null", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-null"}, "spec": {"weight": null, "height": 1}}"#.into()),
        ("weight a string", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-string"}, "spec": {"weight": "1", "height": 1}}"#.into()),
        ("weight a bool", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-bool"}, "spec": {"weight": true, "height": 1}}"#.into()),
        ("weight zero", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-zero"}, "spec": {"weight": 0, "height": 1}}"#.into()),
        ("weight negative", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-negative"}, "spec": {"weight": -1, "height": -2.5}}"#.into()),
        ("weight an integer", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-int"}, "spec": {"weight": 120, "height": 170}}"#.into()),
        ("weight with an exponent", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-exp"}, "spec": {"weight": 1.5e2, "height": 1E1}}"#.into()),
        ("weight 1e400", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-huge"}, "spec": {"weight": 1e400, "height": 1}}"#.into()),
        ("weight 1e308", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-big"}, "spec": {"weight": 1e308, "height": 1}}"#.into()),
        ("weight 2^64", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-u64"}, "spec": {"weight": 18446744073709551616, "height": 1}}"#.into()),
        ("weight 2^63-1", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-i64"}, "spec": {"weight": 9223372036854775807, "height": 1}}"#.into()),
        ("weight 5e-324", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-tiny"}, "spec": {"weight": 5e-324, "height": 1}}"#.into()),
        ("weight 0.1", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-tenth"}, "spec": {"weight": 0.1, "height": 0.30000000000000004}}"#.into()),
        ("weight -0", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "weight-minus-zero"}, "spec": {"weight": -0, "height": 1}}"#.into()),
        ("color a number", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "color-number"}, "spec": {"weight": 1, "height": 1, "color": 5}}"#.into()),
        ("color null", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "color-null"}, "spec": {"weight": 1, "height": 1, "color": null}}"#.into()),
        ("color with unicode", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "color-unicode"}, "spec": {"weight": 1, "height": 1, "color": "bl\u00e9 \ud83e\udd99 \u0000"}}"#.into()),
        ("lone surrogate", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "color-surrogate"}, "spec": {"weight": 1, "height": 1, "color": "\ud83e"}}"#.into()),
        ("unknown spec field", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "unknown-spec"}, "spec": {"weight": 1, "height": 1, "horns": 2}}"#.into()),
        ("unknown top-level field", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "unknown-top"}, "spec": {"weight": 1, "height": 1}, "horns": 2}"#.into()),
        ("duplicate field", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "duplicate"}, "spec": {"weight": 1, "weight": 2, "height": 1}}"#.into()),
        ("duplicate metadata", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "dup-a"}, "metadata": {"name": "dup-b"}, "spec": {"weight": 1, "height": 1}}"#.into()),
        ("status on create", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "with-status"}, "spec": {"weight": 1, "height": 1}, "status": {"observedGeneration": 3}}"#.into()),
        ("status invalid on create", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "bad-status"}, "spec": {"weight": 1, "height": 1}, "status": {"observedGeneration": -3}}"#.into()),
        ("deep nesting", format!(r#"{{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {{"name": "deep"}}, "spec": {{"weight": 1, "height": 1, "x": {}1{}}}}}"#, "[".repeat(2000), "]".repeat(2000))),
        ("nesting at Go's limit", format!(r#"{{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {{"name": "deep-limit"}}, "spec": {{"weight": 1, "height": 1, "x": {}1{}}}}}"#, "[".repeat(9998), "]".repeat(9998))),
        ("nesting one past Go's limit", format!(r#"{{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {{"name": "deep-past"}}, "spec": {{"weight": 1, "height": 1, "x": {}1{}}}}}"#, "[".repeat(9999), "]".repeat(9999))),
        ("deep objects", format!(r#"{{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {{"name": "deep-objects"}}, "spec": {{"weight": 1, "height": 1, "x": {}1{}}}}}"#, r#"{"a": "#.repeat(3000), "}".repeat(3000))),
        ("deep value of a typed field", format!(r#"{{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {{"name": "deep-typed"}}, "spec": {{"weight": 1, "height": 1, "color": {}"x"{}}}}}"#, "[".repeat(500), "]".repeat(500))),
        ("deep and broken", format!(r#"{{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {{"name": "deep-broken"}}, "spec": {{"weight": 1, "height": 1, "x": {}1,,{}}}}}"#, "[".repeat(500), "]".repeat(500))),
        ("very deep nesting", format!(r#"{{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {{"name": "deeper"}}, "spec": {{"weight": 1, "height": 1, "x": {}1{}}}}}"#, "[".repeat(20000), "]".repeat(20000))),
        ("comments", "{\"apiVersion\": \"farm.example.com/v1alpha\" /* c */, \"kind\": \"Llama\"}".into()),
        ("single quotes", "{'apiVersion': 'farm.example.com/v1alpha'}".into()),
        ("NaN", r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "nan"}, "spec": {"weight": NaN, "height": 1}}"#.into()),
    ];
    for (label, body) in bodies {
        requests.push(create_text(&format!("body: {label}"), JSON, &body));
    }
    let mut invalid_utf8 = br#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "utf8"}, "spec": {"weight": 1, "height": 1, "color": ""#.to_vec();
    invalid_utf8.extend([0xff, 0xfe, b'"', b'}', b'}']);
    requests
        .push(Request::new("body: invalid UTF-8", Method::POST, at("llamas")).content_type(JSON).body(invalid_utf8));
    let yaml_bodies: Vec<(&str, String)> = vec![
        ("yaml: valid", yaml_llama("yaml-valid", "12")),
        ("yaml: two documents", format!("{}---\n{}", yaml_llama("yaml-two-a", "1"), yaml_llama("yaml-two-b", "2"))),
        ("yaml: tabs", "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n\tname: tab\n".into()),
        ("yaml: not a mapping", "- a\n- b\n".into()),
        ("yaml: anchors", "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata: {name: anchors}\nspec: &s {weight: 1, height: 1}\nstatus: *s\n".into()),
        ("yaml: weight 0x10", yaml_llama("yaml-hex", "0x10")),
        ("yaml: weight 1_000", yaml_llama("yaml-underscore", "1_000")),
        ("yaml: weight .inf", yaml_llama("yaml-inf", ".inf")),
        ("yaml: weight .nan", yaml_llama("yaml-nan", ".nan")),
        ("yaml: weight yes", yaml_llama("yaml-yes", "yes")),
        ("yaml: weight '12'", yaml_llama("yaml-quoted", "'12'")),
        ("yaml: weight 1e3", yaml_llama("yaml-exp", "1e3")),
        ("yaml: weight 012", yaml_llama("yaml-octal", "012")),
        ("yaml: duplicate keys", "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata: {name: yaml-dup}\nspec: {weight: 1, weight: 2, height: 1}\n".into()),
        ("yaml: json inside", llama("yaml-json", 3.0).to_string()),
        ("yaml: empty", String::new()),
        ("yaml: unknown field", "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata: {name: yaml-unknown}\nspec: {weight: 1, height: 1, horns: 2}\n".into()),
    ];
    for (label, body) in yaml_bodies {
        requests.push(create_text(label, YAML, &body));
    }
    requests
}

/// GETs of one llama: Accept headers and query parameters.
fn reads() -> Vec<Request> {
    let mut requests = vec![create(
        "reads: a llama",
        &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": "reader", "labels": {"herd": "north"}}, "spec": {"weight": 100, "height": 150.5, "color": "white"}}),
    )];
    for accept in [
        JSON,
        YAML,
        TABLE,
        METADATA,
        "*/*",
        "",
        "application/*",
        "application/vnd.kubernetes.protobuf",
        "application/vnd.kubernetes.protobuf, application/json",
        "text/html",
        "application/json;q=0.5, application/yaml",
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
        "application/json;as=Table;v=v2;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io",
        "application/yaml;as=Table;v=v1;g=meta.k8s.io",
        "application/json;as=Widget;v=v1;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        "application/json;stream=watch",
        "application/json;pretty=1",
        "application/json; charset=utf-8",
    ] {
        let request = get(&format!("get: accept {accept:?}"), &at("llamas/reader"));
        requests.push(if accept.is_empty() { request } else { request.accept(accept) });
    }
    for query in [
        "resourceVersion=0",
        "resourceVersion=",
        "resourceVersion=bogus",
        "resourceVersion=$RV",
        "resourceVersion=1",
        "resourceVersion=99999999999",
        "resourceVersion=-1",
        "resourceVersionMatch=Exact",
        "resourceVersion=0&resourceVersionMatch=NotOlderThan",
        "pretty=true",
        "includeObject=None",
        "export=true",
        "watch=false",
        "watch=bogus",
        "labelSelector=herd%3Dsouth",
        "fieldSelector=metadata.name%3Dother",
    ] {
        requests.push(get(&format!("get: {query}"), &at("llamas/reader")).query(query));
    }
    for include in ["None", "Metadata", "Object", "", "bogus"] {
        requests.push(
            get(&format!("get: Table includeObject={include}"), &at("llamas/reader"))
                .accept(TABLE)
                .query(format!("includeObject={include}")),
        );
    }
    requests.push(get("get: missing", &at("llamas/missing")));
    requests.push(get("get: missing as Table", &at("llamas/missing")).accept(TABLE));
    requests.push(get("get: missing as YAML", &at("llamas/missing")).accept(YAML));
    requests
}

/// The query strings every LIST of the `lists` section is sent with.
const LIST_QUERIES: &[&str] = &[
    "",
    "labelSelector=list%3Dyes",
    "labelSelector=herd%3Dnorth",
    "labelSelector=herd!%3Dnorth",
    "labelSelector=herd%20in%20(north,south)",
    "labelSelector=herd%20notin%20(north)",
    "labelSelector=herd",
    "labelSelector=!herd",
    "labelSelector=herd%3D%3Dnorth",
    "labelSelector=",
    "labelSelector=a%20in%20(",
    "labelSelector=herd%3D%3D%3Dx",
    "labelSelector=Bad%20Key%3Dx",
    "labelSelector=herd%3Dnorth,list%3Dyes",
    "labelSelector=herd%3Dnorth&labelSelector=herd%3Dsouth",
    "labelSelector=herd%3E1",
    "labelSelector=herd%3Dnorth%20,%20list%3Dyes",
    "fieldSelector=metadata.name%3Dherd-a",
    "fieldSelector=metadata.name!%3Dherd-a",
    "fieldSelector=metadata.namespace%3Dconformance",
    "fieldSelector=metadata.namespace%3Dother",
    "fieldSelector=spec.color%3Dwhite",
    "fieldSelector=spec.weight%3D50",
    "fieldSelector=bogus",
    "fieldSelector=metadata.name",
    "fieldSelector=",
    "fieldSelector=metadata.name%3D%3Dherd-a",
    "fieldSelector=metadata.name%3Dherd-a,metadata.namespace%3Dconformance",
    "limit=1",
    "limit=2",
    "limit=0",
    "limit=-1",
    "limit=bogus",
    "limit=",
    "limit=1&limit=2",
    "limit=500",
    "limit=99999999999999999999",
    "continue=bogus",
    "continue=",
    "limit=1&continue=bogus",
    "resourceVersion=0",
    "resourceVersion=",
    "resourceVersion=bogus",
    "resourceVersion=1",
    "resourceVersion=$LISTRV",
    "resourceVersion=$LISTRV&resourceVersionMatch=Exact",
    "resourceVersion=$LISTRV&resourceVersionMatch=NotOlderThan",
    "resourceVersion=0&resourceVersionMatch=NotOlderThan",
    "resourceVersion=0&resourceVersionMatch=Exact",
    "resourceVersionMatch=Exact",
    "resourceVersionMatch=NotOlderThan",
    "resourceVersion=$LISTRV&resourceVersionMatch=bogus",
    "resourceVersion=99999999999",
    "resourceVersion=99999999999&resourceVersionMatch=Exact",
    "resourceVersion=0&limit=1",
    "resourceVersion=$LISTRV&limit=1",
    "timeoutSeconds=5",
    "timeoutSeconds=bogus",
    "timeoutSeconds=-1",
    "allowWatchBookmarks=true",
    "sendInitialEvents=true",
    "pretty=true",
    "watch=false",
    "watch=0",
    "includeObject=Object",
];

/// LISTs: selectors, paging, resource versions, Tables and metadata.
fn lists() -> Vec<Request> {
    let mut requests = Vec::new();
    for (name, herd, color) in
        [("herd-a", "north", "white"), ("herd-b", "south", "brown"), ("herd-c", "north", "brown")]
    {
        let mut body = llama(name, 50.0);
        body["metadata"]["labels"] = json!({"herd": herd, "list": "yes"});
        body["spec"]["color"] = json!(color);
        requests.push(create("lists: a llama", &body));
    }
    for query in LIST_QUERIES {
        requests.push(get(&format!("list: {query}"), &at("llamas")).query(*query));
    }
    for query in [
        "",
        "labelSelector=list%3Dyes",
        "limit=1",
        "fieldSelector=metadata.namespace%3Dconformance",
        "fieldSelector=metadata.namespace%3Dgenerated",
    ] {
        // Across namespaces, only the llamas of this section: other sections' differences (a
        // create one side refuses) would show up again here.
        let query = format!("labelSelector=list%3Dyes&{query}");
        requests.push(get(&format!("list all namespaces: {query}"), "{gv}/llamas").query(query));
    }
    requests.push(get("list: first page", &at("llamas")).query("limit=2&labelSelector=list%3Dyes"));
    requests.push(get("list: next page", &at("llamas")).query("limit=2&labelSelector=list%3Dyes&continue=$CONTINUE"));
    requests.push(get("list: first page", &at("llamas")).query("limit=1"));
    requests.push(
        get("list: next page with another selector", &at("llamas"))
            .query("limit=1&labelSelector=herd%3Dnorth&continue=$CONTINUE"),
    );
    // A full page after which llamas remain, none of them selected.
    requests.push(
        get("list: the last selected one fills the page", &at("llamas")).query("limit=1&labelSelector=herd%3Dsouth"),
    );
    requests.push(get("list: first page", &at("llamas")).query("limit=1"));
    requests.push(
        get("list: next page with a resourceVersion", &at("llamas"))
            .query("limit=1&resourceVersion=0&continue=$CONTINUE"),
    );
    for accept in [
        TABLE,
        METADATA_LIST,
        METADATA,
        YAML,
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        "application/vnd.kubernetes.protobuf",
    ] {
        for query in [
            "labelSelector=list%3Dyes",
            "labelSelector=list%3Dyes&limit=1",
            "labelSelector=nothing",
            "labelSelector=list%3Dyes&includeObject=Object",
        ] {
            requests.push(get(&format!("list: accept {accept} {query}"), &at("llamas")).accept(accept).query(query));
        }
    }
    requests.push(get("list: missing namespace", "{gv}/namespaces/missing/llamas"));
    requests
}

/// PUTs of llamas, and of their status.
fn updates() -> Vec<Request> {
    let put = |label: &str, name: &str, body: &Value| {
        Request::new(label, Method::PUT, at(&format!("llamas/{name}"))).content_type(JSON).json(body)
    };
    let mut with_rv = llama("updated", 20.0);
    with_rv["metadata"]["resourceVersion"] = json!("$RV");
    let mut stale = llama("updated", 21.0);
    stale["metadata"]["resourceVersion"] = json!("1");
    let mut bad_rv = llama("updated", 21.0);
    bad_rv["metadata"]["resourceVersion"] = json!("bogus");
    let mut with_status = with_rv.clone();
    with_status["status"] = json!({"observedGeneration": 9});
    let mut with_uid = with_rv.clone();
    with_uid["metadata"]["uid"] = json!("0b0b0b0b-0000-0000-0000-000000000009");
    let mut relabelled = with_rv.clone();
    relabelled["metadata"]["labels"] = json!({"Bad Key": "x"});
    vec![
        create("updates: a llama", &llama("updated", 19.0)),
        put("update: without resourceVersion", "updated", &llama("updated", 20.0)),
        put("update: with the resourceVersion", "updated", &with_rv),
        put("update: same again (no change)", "updated", &with_rv),
        put("update: stale resourceVersion", "updated", &stale),
        put("update: invalid resourceVersion", "updated", &bad_rv),
        put("update: status in the body", "updated", &with_status),
        put("update: another uid", "updated", &with_uid),
        put("update: invalid label", "updated", &relabelled),
        put("update: name differs from the path", "other-name", &with_rv),
        put("update: a missing llama", "never-created", &llama("never-created", 1.0)),
        put("update: invalid spec", "updated", &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "updated", "resourceVersion": "$RV"}, "spec": {"weight": -5, "height": 1}})),
        put("update: dry run", "updated", &with_rv).query("dryRun=All"),
        put("update: fieldManager too long", "updated", &with_rv).query(format!("fieldManager={}", "m".repeat(129))),
        put("update: unknown field, Strict, dry run", "updated", &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "updated", "resourceVersion": "$RV"}, "spec": {"weight": 1, "height": 1, "horns": 1}})).query("fieldValidation=Strict&dryRun=All"),
        put("update: unknown field", "updated", &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "updated", "resourceVersion": "$RV"}, "spec": {"weight": 22, "height": 1, "horns": 1}})),
        put("update: wrong kind", "updated", &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Alpaca", "metadata": {"name": "updated"}, "spec": {"weight": 1, "height": 1}})),
        put("update: other namespace in the body", "updated", &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "updated", "namespace": "default"}, "spec": {"weight": 1, "height": 1}})),
        Request::new("update: YAML", Method::PUT, at("llamas/updated")).content_type(YAML).body(yaml_llama("updated", "23")),
        Request::new("update: merge patch content type", Method::PUT, at("llamas/updated")).content_type(MERGE).json(&llama("updated", 24.0)),
        Request::new("update: no content type", Method::PUT, at("llamas/updated")).json(&llama("updated", 25.0)),
        Request::new("update: empty body", Method::PUT, at("llamas/updated")).content_type(JSON),
        get("updates: the result", &at("llamas/updated")),
    ]
}

/// Patches of the `patches` section: label, content type, body.
const PATCHES: &[(&str, &str, &str)] = &[
    ("merge: weight", MERGE, r#"{"spec": {"weight": 31}}"#),
    ("merge: add a label", MERGE, r#"{"metadata": {"labels": {"c": "d"}}}"#),
    ("merge: remove a label", MERGE, r#"{"metadata": {"labels": {"c": null}}}"#),
    ("merge: remove a required field", MERGE, r#"{"spec": {"weight": null}}"#),
    ("merge: invalid value", MERGE, r#"{"spec": {"weight": -1}}"#),
    ("merge: wrong type", MERGE, r#"{"spec": {"weight": "heavy"}}"#),
    ("merge: change the name", MERGE, r#"{"metadata": {"name": "renamed"}}"#),
    ("merge: change the namespace", MERGE, r#"{"metadata": {"namespace": "default"}}"#),
    ("merge: change the uid", MERGE, r#"{"metadata": {"uid": "0b0b0b0b-0000-0000-0000-000000000009"}}"#),
    ("merge: change the kind", MERGE, r#"{"kind": "Alpaca"}"#),
    ("merge: change the apiVersion", MERGE, r#"{"apiVersion": "farm.example.com/v2"}"#),
    ("merge: stale resourceVersion", MERGE, r#"{"metadata": {"resourceVersion": "1"}, "spec": {"weight": 32}}"#),
    ("merge: current resourceVersion", MERGE, r#"{"metadata": {"resourceVersion": "$RV"}, "spec": {"weight": 33}}"#),
    ("merge: status", MERGE, r#"{"status": {"observedGeneration": 4}}"#),
    ("merge: null", MERGE, "null"),
    ("merge: array", MERGE, "[]"),
    ("merge: empty object", MERGE, "{}"),
    ("merge: empty", MERGE, ""),
    ("merge: invalid JSON", MERGE, "{"),
    ("merge: unknown field", MERGE, r#"{"spec": {"horns": 2}}"#),
    ("merge: delete spec", MERGE, r#"{"spec": null}"#),
    ("merge: delete metadata", MERGE, r#"{"metadata": null}"#),
    ("json patch: replace", JSON_PATCH, r#"[{"op": "replace", "path": "/spec/weight", "value": 34}]"#),
    ("json patch: add a label", JSON_PATCH, r#"[{"op": "add", "path": "/metadata/labels/e", "value": "f"}]"#),
    (
        "json patch: escaped path",
        JSON_PATCH,
        r#"[{"op": "add", "path": "/metadata/labels/example.com~1g", "value": "h"}]"#,
    ),
    (
        "json patch: test passes",
        JSON_PATCH,
        r#"[{"op": "test", "path": "/spec/weight", "value": 34}, {"op": "replace", "path": "/spec/weight", "value": 35}]"#,
    ),
    ("json patch: test fails", JSON_PATCH, r#"[{"op": "test", "path": "/spec/weight", "value": 1}]"#),
    ("json patch: remove a missing field", JSON_PATCH, r#"[{"op": "remove", "path": "/spec/color"}]"#),
    ("json patch: add past the end", JSON_PATCH, r#"[{"op": "add", "path": "/metadata/finalizers/5", "value": "x"}]"#),
    (
        "json patch: move",
        JSON_PATCH,
        r#"[{"op": "move", "from": "/metadata/labels/e", "path": "/metadata/labels/moved"}]"#,
    ),
    ("json patch: copy", JSON_PATCH, r#"[{"op": "copy", "from": "/spec/weight", "path": "/spec/height"}]"#),
    ("json patch: unknown op", JSON_PATCH, r#"[{"op": "frobnicate", "path": "/spec/weight"}]"#),
    ("json patch: no path", JSON_PATCH, r#"[{"op": "add", "value": 1}]"#),
    ("json patch: path without a slash", JSON_PATCH, r#"[{"op": "add", "path": "spec", "value": 1}]"#),
    ("json patch: an object", JSON_PATCH, r#"{"op": "add", "path": "/spec/weight", "value": 1}"#),
    ("json patch: empty list", JSON_PATCH, "[]"),
    ("json patch: invalid result", JSON_PATCH, r#"[{"op": "replace", "path": "/spec/weight", "value": -4}]"#),
    ("json patch: remove the name", JSON_PATCH, r#"[{"op": "remove", "path": "/metadata/name"}]"#),
    ("json patch: root", JSON_PATCH, r#"[{"op": "replace", "path": "", "value": {}}]"#),
    ("json patch: index into an object", JSON_PATCH, r#"[{"op": "add", "path": "/spec/0", "value": 1}]"#),
    ("strategic: weight", STRATEGIC, r#"{"spec": {"weight": 36}}"#),
    ("strategic: directive", STRATEGIC, r#"{"metadata": {"$patch": "replace"}}"#),
    ("apply content type without fieldManager", APPLY_YAML, "spec:\n  weight: 37\n"),
    ("yaml content type", YAML, "spec: {weight: 38}"),
    ("json content type", JSON, r#"{"spec": {"weight": 38}}"#),
    ("no content type", "", r#"{"spec": {"weight": 38}}"#),
    ("unknown content type", "application/bogus", r#"{"spec": {"weight": 38}}"#),
    ("merge with charset", "application/merge-patch+json; charset=utf-8", r#"{"spec": {"weight": 39}}"#),
];

/// PATCHes: merge, JSON patch and strategic merge, good and bad.
fn patches() -> Vec<Request> {
    let mut requests = vec![create(
        "patches: a llama",
        &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": "patched", "labels": {"a": "b"}}, "spec": {"weight": 30, "height": 1}}),
    )];
    for (label, content_type, body) in PATCHES {
        let request = Request::new(format!("patch: {label}"), Method::PATCH, at("llamas/patched")).body(*body);
        requests.push(if content_type.is_empty() { request } else { request.content_type(content_type) });
    }
    // What 1.20 accepts and farm-apiserver refuses, as a dry run: the stores must not drift apart.
    let replace_missing = r#"[{"op": "replace", "path": "/spec/color", "value": "red"}]"#;
    requests.push(
        patch("patch: json patch: replace a missing field", "patched", JSON_PATCH, replace_missing).query("dryRun=All"),
    );
    for query in [
        "dryRun=All",
        "dryRun=bogus",
        "fieldManager=patcher",
        "fieldManager=",
        "force=true",
        "force=bogus",
        "fieldValidation=Strict&dryRun=All",
        "fieldValidation=bogus",
    ] {
        requests.push(
            patch(&format!("patch: merge {query}"), "patched", MERGE, r#"{"spec": {"weight": 40, "horns": 1}}"#)
                .query(query),
        );
    }
    requests.push(patch("patch: a missing llama", "missing", MERGE, r#"{"spec": {"weight": 1}}"#));
    requests.push(patch("patch: json patch on a missing llama", "missing", JSON_PATCH, "[]"));
    requests.push(get("patches: the result", &at("llamas/patched")));
    requests
}

/// Server-side apply: create, update, conflicts, force, managers, YAML and JSON.
fn applies() -> Vec<Request> {
    let apply = |label: &str, name: &str, query: &str, body: &str| {
        patch(&format!("apply: {label}"), name, APPLY_YAML, body).query(query.to_string())
    };
    let body = |name: &str, weight: &str| {
        format!(
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: {name}\nspec:\n  weight: {weight}\n  height: 3\n"
        )
    };
    let with_rv = "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied-with-rv\n  resourceVersion: \"7\"\nspec:\n  weight: 1\n  height: 3\n";
    vec![
        apply("creates", "applied", "fieldManager=alice", &body("applied", "40")),
        apply("same again", "applied", "fieldManager=alice", &body("applied", "40")),
        apply("another manager, same value", "applied", "fieldManager=bob", &body("applied", "40")),
        apply("conflict", "applied", "fieldManager=carol", &body("applied", "41")),
        apply("force", "applied", "fieldManager=carol&force=true", &body("applied", "41")),
        apply("no fieldManager", "applied", "", &body("applied", "42")),
        apply("empty fieldManager", "applied", "fieldManager=", &body("applied", "42")),
        apply("force=false", "applied", "fieldManager=alice&force=false", &body("applied", "43")),
        apply("dry run", "applied", "fieldManager=alice&dryRun=All", &body("applied", "44")),
        apply("dry run creating, carrying a resourceVersion", "applied-with-rv", "fieldManager=alice&dryRun=All", with_rv),
        apply("creating, carrying a resourceVersion", "applied-with-rv", "fieldManager=alice", with_rv),
        apply("name differs", "applied", "fieldManager=alice", &body("other", "44")),
        apply(
            "no name",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nspec:\n  weight: 1\n  height: 1\n",
        ),
        apply(
            "no apiVersion",
            "applied",
            "fieldManager=alice",
            "kind: Llama\nmetadata:\n  name: applied\nspec:\n  weight: 1\n",
        ),
        apply(
            "no kind",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nmetadata:\n  name: applied\nspec:\n  weight: 1\n",
        ),
        apply(
            "wrong kind",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Alpaca\nmetadata:\n  name: applied\n",
        ),
        apply("invalid value", "applied", "fieldManager=alice", &body("applied", "-1")),
        apply("creates one to refuse", "applied-repeat", "fieldManager=alice", &body("applied-repeat", "40")),
        apply(
            "invalid label and a null weight, forced",
            "applied-repeat",
            "fieldManager=bob&force=true",
            r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "applied-repeat", "labels": {"-8": "2<", "gen": "yes"}}, "spec": {"height": 20.5, "weight": null}}"#,
        ),
        apply(
            "invalid label, forced",
            "applied-repeat",
            "fieldManager=bob&force=true",
            r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "applied-repeat", "labels": {"-8": "2<", "gen": "yes"}}, "spec": {"height": 20.5, "weight": 10}}"#,
        ),
        apply(
            "invalid label",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied\n  labels:\n    \"-8\": \"2<\"\nspec:\n  weight: 45\n  height: 3\n",
        ),
        apply("wrong type", "applied", "fieldManager=alice", &body("applied", "heavy")),
        apply(
            "unknown field",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied\nspec:\n  weight: 45\n  height: 3\n  horns: 2\n",
        ),
        apply("invalid YAML", "applied", "fieldManager=alice", "spec: [\n"),
        apply("empty", "applied", "fieldManager=alice", ""),
        apply(
            "JSON body",
            "applied",
            "fieldManager=alice",
            r#"{"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "applied"}, "spec": {"weight": 46, "height": 3}}"#,
        ),
        apply(
            "status via the main resource",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied\nspec:\n  weight: 46\n  height: 3\nstatus:\n  observedGeneration: 1\n",
        ),
        apply(
            "labels",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied\n  labels:\n    a: b\nspec:\n  weight: 46\n  height: 3\n",
        ),
        apply(
            "give up a field",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied\nspec:\n  height: 3\n",
        ),
        apply(
            "resourceVersion stale",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied\n  resourceVersion: \"1\"\nspec:\n  weight: 47\n  height: 3\n",
        ),
        apply(
            "uid mismatch",
            "applied",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied\n  uid: 0b0b0b0b-0000-0000-0000-000000000009\nspec:\n  weight: 47\n  height: 3\n",
        ),
        apply("creates with invalid spec", "applied-bad", "fieldManager=alice", &body("applied-bad", "0")),
        apply(
            "creates with an unknown field",
            "applied-horned",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied-horned\nspec:\n  weight: 45\n  height: 3\n  horns: 2\n",
        ),
        apply(
            "creates with a null colour",
            "applied-colourless",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied-colourless\nspec:\n  weight: 45\n  height: 3\n  color: null\n",
        ),
        apply(
            "creates with null label values",
            "applied-null-labels",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied-null-labels\n  labels:\n    a: null\n    b: c\n  annotations:\n    note: null\nspec:\n  weight: 45\n  height: 3\n",
        ),
        apply(
            "a label with an invalid key and a null value",
            "applied-null-labels",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied-null-labels\n  labels:\n    \"bad key!\": null\nspec:\n  weight: 45\n  height: 3\n",
        )
        .query("fieldManager=alice&dryRun=All"),
        apply(
            "YAML plain keys that go-yaml v2 reads as booleans",
            "applied-null-labels",
            "fieldManager=alice",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied-null-labels\n  labels:\n    n: b\nspec:\n  weight: 45\n  height: 3\n",
        )
        .query("fieldManager=alice&dryRun=All"),
        apply(
            "null label value over an owned one",
            "applied-null-labels",
            "fieldManager=bob",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied-null-labels\n  labels:\n    b: null\nspec:\n  weight: 45\n  height: 3\n",
        ),
        apply("apply JSON content type", "applied", "fieldManager=alice", "")
            .content_type("application/apply-patch+json"),
        get("applies: the result", &at("llamas/applied")),
        apply("creates one to apply an empty map to", "applied-empty", "fieldManager=alice", &body("applied-empty", "40")),
        apply(
            "an empty spec and a label, by another manager",
            "applied-empty",
            "fieldManager=dora",
            "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: applied-empty\n  labels:\n    a: b\nspec: {}\n",
        ),
        get("applies: the llama an empty map was applied to", &at("llamas/applied-empty")),
    ]
}

/// What client-side `kubectl apply` records of `spec` for llama `name`: the configuration with
/// the namespace kubectl adds and, when `annotated`, the empty annotations it leaves.
fn record(name: &str, spec: Value, annotated: bool) -> String {
    let mut metadata = json!({"name": name, "namespace": NS});
    if annotated {
        metadata["annotations"] = json!({});
    }
    let config = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": metadata, "spec": spec});
    format!("{config}\n")
}

/// The move from client-side to server-side `kubectl apply`, request by request as kubectl 1.32
/// sends them: a client-side create records the configuration in the last-applied annotation;
/// kubectl's server-side apply takes over what that record holds with the live value, and keeps
/// the record current; kubectl then applies the record as `kubectl-last-applied`; a later
/// client-side apply merge-patches against the record. Fields changed since by another manager,
/// appliers of other names and records that are not of the object's version still conflict.
fn migrations() -> Vec<Request> {
    const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let client_side_create = |label: &str, name: &str, spec: Value, recorded: &str| {
        let body = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
            "metadata": {"name": name, "namespace": NS, "annotations": {LAST_APPLIED: recorded}}, "spec": spec});
        create(&format!("migration: {label}"), &body)
            .query("fieldManager=kubectl-client-side-apply&fieldValidation=Strict")
    };
    let server_side = |label: &str, name: &str, query: &str, spec: Value| {
        let body = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
            "metadata": {"name": name, "namespace": NS}, "spec": spec});
        patch(&format!("migration: {label}"), name, APPLY_YAML, &body.to_string()).query(query.to_string())
    };
    let kubectl = "fieldManager=kubectl&fieldValidation=Strict&force=false";
    let merge = |label: &str, name: &str, manager: &str, body: Value| {
        patch(&format!("migration: {label}"), name, MERGE, &body.to_string()).query(format!("fieldManager={manager}"))
    };
    let brown = json!({"weight": 5, "height": 170.5, "color": "brown"});
    let applied = json!({"weight": 6, "height": 170.5, "color": "brown"});
    let plain = json!({"weight": 5, "height": 170.5});
    let six = json!({"weight": 6, "height": 170.5});
    let keep_record = json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": "moving", "namespace": NS, "annotations": {LAST_APPLIED: record("moving", applied.clone(), false)}}});
    let back = json!({"metadata": {"annotations": {LAST_APPLIED: record("moving", six.clone(), true)}},
        "spec": {"color": null, "weight": 7}});
    let odd = |label: &str, recorded: &str| {
        vec![
            merge(
                &format!("a record: {label}"),
                "moving-odd",
                "kubectl-client-side-apply",
                json!({"metadata": {"annotations": {LAST_APPLIED: recorded}}}),
            ),
            server_side(&format!("server-side apply over a record: {label}"), "moving-odd", kubectl, six.clone()),
        ]
    };
    let mut requests = vec![
        client_side_create("client-side create", "moving", brown.clone(), &record("moving", brown.clone(), true)),
        server_side(
            "server-side dry run takes the record's fields over",
            "moving",
            &format!("{kubectl}&dryRun=All"),
            applied.clone(),
        ),
        server_side("server-side apply takes the record's fields over", "moving", kubectl, applied.clone()),
        patch("migration: the record applied as kubectl-last-applied", "moving", APPLY_YAML, &keep_record.to_string())
            .query("fieldManager=kubectl-last-applied&fieldValidation=Strict"),
        get("migration: after the server-side apply", &at("llamas/moving")),
        merge("client-side apply removes the colour", "moving", "kubectl-client-side-apply", back),
        get("migration: after the client-side apply", &at("llamas/moving")),
        client_side_create(
            "client-side create, to edit",
            "moving-edited",
            plain.clone(),
            &record("moving-edited", plain.clone(), true),
        ),
        merge("an edit", "moving-edited", "kubectl-edit", json!({"spec": {"weight": 9}})),
        server_side(
            "the edited weight conflicts, dry run",
            "moving-edited",
            &format!("{kubectl}&dryRun=All"),
            six.clone(),
        ),
        server_side("the edited weight conflicts", "moving-edited", kubectl, six.clone()),
        server_side(
            "a colour never recorded conflicts with no one",
            "moving-edited",
            kubectl,
            json!({"weight": 9, "height": 170.5, "color": "grey"}),
        ),
        get("migration: after the edit", &at("llamas/moving-edited")),
        client_side_create(
            "client-side create, for another applier",
            "moving-flux",
            plain.clone(),
            &record("moving-flux", plain.clone(), true),
        ),
        server_side("another applier meets the conflict", "moving-flux", "fieldManager=flux&force=false", six.clone()),
        server_side("kubectl with force", "moving-flux", "fieldManager=kubectl&force=true", six.clone()),
        get("migration: after the forced apply", &at("llamas/moving-flux")),
        client_side_create(
            "client-side create with a record of another version",
            "moving-odd",
            plain.clone(),
            &record("moving-odd", plain.clone(), true).replace("v1alpha", "v9"),
        ),
        server_side("a record of another version takes over nothing", "moving-odd", kubectl, six.clone()),
    ];
    requests.extend(odd("not JSON", "{\"apiVersion\":"));
    requests.extend(odd("no kind", &record("moving-odd", plain.clone(), true).replace("\"kind\":\"Llama\",", "")));
    requests.extend(odd("a list", "[]"));
    requests.extend(odd("the right version", &record("moving-odd", plain.clone(), true)));
    requests.push(get("migration: the odd one", &at("llamas/moving-odd")));
    requests.push(client_side_create("an empty record, to opt out", "moving-out", plain.clone(), ""));
    requests.push(server_side("kubectl's apply leaves an empty record empty", "moving-out", kubectl, plain));
    requests
}

/// The `/status` subresource.
fn status() -> Vec<Request> {
    let path = at("llamas/statused/status");
    let status_body = |generation: i64| {
        json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "statused", "resourceVersion": "$RV"},
            "spec": {"weight": 999, "height": 999}, "status": {"observedGeneration": generation,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Fed", "message": "fed", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}})
    };
    let put = |label: &str, body: &Value| Request::new(label, Method::PUT, &path).content_type(JSON).json(body);
    // A status merge patch carrying an invalid (64-character) label key.
    let labelled = |generation: i64| {
        json!({"metadata": {"labels": {"v".repeat(64): "x"}}, "status": {"observedGeneration": generation}}).to_string()
    };
    let patch_status = |label: &str, content_type: &str, body: &str| {
        Request::new(label, Method::PATCH, &path).content_type(content_type).body(body)
    };
    vec![
        create("status: a llama", &llama("statused", 60.0)),
        get("status: get", &path),
        put("status: put", &status_body(1)),
        put("status: put invalid", &status_body(-1)),
        // A dry run: kube-apiserver 1.20 refuses what farm-apiserver stores (see ON_PURPOSE).
        put("status: put a condition with an empty message", &{
            let mut b = status_body(1);
            b["status"]["conditions"][0]["message"] = json!("");
            b
        })
        .query("dryRun=All"),
        put("status: put stale", &{
            let mut b = status_body(2);
            b["metadata"]["resourceVersion"] = json!("1");
            b
        }),
        put("status: put a bad condition", &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "metadata": {"name": "statused"},
            "spec": {"weight": 1, "height": 1}, "status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}})),
        patch_status("status: merge patch", MERGE, r#"{"status": {"observedGeneration": 2}, "spec": {"weight": 1}}"#),
        patch_status("status: merge patch removing the status", MERGE, r#"{"status": null}"#),
        // A write of the status keeps the stored metadata: an invalid label it carries is neither
        // stored nor reported, with a valid status or an invalid one.
        patch_status("status: merge patch with an invalid label", MERGE, &labelled(3)),
        patch_status("status: merge patch with an invalid label and status", MERGE, &labelled(-1)),
        // Beyond int64: a built-in resource's decoder refuses it (400), a CRD reads it as a float (see ON_PURPOSE).
        patch_status("status: an observedGeneration beyond int64", MERGE, r#"{"status": {"observedGeneration": 18446744073709551615}}"#),

        patch_status("status: json patch", JSON_PATCH, r#"[{"op": "add", "path": "/status", "value": {"observedGeneration": 3}}]"#),
        patch_status("status: apply", APPLY_YAML, "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: statused\nstatus:\n  observedGeneration: 4\n").query("fieldManager=controller"),
        patch_status("status: apply changing the spec", APPLY_YAML, "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: statused\nspec:\n  weight: 5\n").query("fieldManager=controller"),
        get("status: get as Table", &path).accept(TABLE),
        get("status: the llama", &at("llamas/statused")),
        Request::new("status: delete", Method::DELETE, &path),
        Request::new("status: post", Method::POST, &path).content_type(JSON).json(&llama("statused", 1.0)),
        get("status: of a missing llama", &at("llamas/missing/status")),
        put("status: put on a missing llama", &status_body(1)).query("dryRun=All"),
        Request::new("status: put on a missing llama", Method::PUT, at("llamas/missing/status")).content_type(JSON).json(&llama("missing", 1.0)),
        // On a llama of their own: 1.20's managedFields differ from here on (see the entry).
        create("status: a llama whose status writes carry spec fields", &llama("spec-carrier", 60.0)),
        Request::new("status: merge patch setting a spec field the object lacks", Method::PATCH, at("llamas/spec-carrier/status"))
            .content_type(MERGE)
            .body(r#"{"spec": {"color": "grey"}}"#),
        Request::new("status: merge patch removing a spec field", Method::PATCH, at("llamas/spec-carrier/status"))
            .content_type(MERGE)
            .body(r#"{"spec": {"weight": null}}"#),
    ]
}

/// DELETEs and deletecollection: options in the query and in the body, preconditions, finalizers.
fn deletes() -> Vec<Request> {
    let mut requests = Vec::new();
    let names =
        ["del-1", "del-2", "del-3", "del-4", "del-5", "del-6", "del-7", "del-8", "del-9", "del-10", "del-11", "del-12"];
    for name in names {
        let mut body = llama(name, 70.0);
        body["metadata"]["labels"] = json!({"deletable": "yes"});
        requests.push(create("deletes: a llama", &body));
    }
    let with_body = |label: &str, name: &str, body: &str| delete(label, name).content_type(JSON).body(body);
    requests.extend([
        delete("delete: dry run", "del-1").query("dryRun=All"),
        delete("delete: dryRun=bogus", "del-1").query("dryRun=bogus"),
        delete("delete: plain", "del-1"),
        delete("delete: again", "del-1"),
        delete("delete: gracePeriodSeconds=0", "del-2").query("gracePeriodSeconds=0"),
        delete("delete: gracePeriodSeconds=bogus", "del-3").query("gracePeriodSeconds=bogus"),
        delete("delete: gracePeriodSeconds=-1", "del-3").query("gracePeriodSeconds=-1"),
        delete("delete: propagationPolicy=bogus", "del-3").query("propagationPolicy=bogus"),
        delete("delete: propagationPolicy=Orphan", "del-3").query("propagationPolicy=Orphan"),
        delete("delete: propagationPolicy=Background", "del-4").query("propagationPolicy=Background"),
        delete("delete: propagationPolicy=Foreground", "del-5").query("propagationPolicy=Foreground"),
        get("delete: foreground leaves the llama with a finalizer", &at("llamas/del-5")),
        delete("delete: orphanDependents=true", "del-6").query("orphanDependents=true"),
        delete("delete: orphanDependents and propagationPolicy", "del-6").query("orphanDependents=true&propagationPolicy=Background"),
        with_body("delete: body with uid precondition", "del-7", r#"{"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "0b0b0b0b-0000-0000-0000-000000000009"}}"#),
        with_body("delete: body with resourceVersion precondition", "del-7", r#"{"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}}"#),
        with_body("delete: body with dryRun", "del-7", r#"{"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}"#),
        with_body("delete: body with bad dryRun", "del-7", r#"{"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["Some"]}"#),
        with_body("delete: body with bad propagationPolicy", "del-7", r#"{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Sideways"}"#),
        with_body("delete: body of another kind", "del-7", r#"{"kind": "Llama", "apiVersion": "farm.example.com/v1alpha"}"#),
        with_body("delete: body without kind", "del-7", r#"{"propagationPolicy": "Background"}"#),
        with_body("delete: body meta.k8s.io/v1", "del-8", r#"{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Background"}"#),
        with_body("delete: invalid body", "del-9", "{"),
        with_body("delete: empty body", "del-9", ""),
        with_body("delete: body and query disagree", "del-9", r#"{"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}"#).query("dryRun=All"),
        delete("delete: YAML body", "del-9").content_type(YAML).body("kind: DeleteOptions\napiVersion: v1\ngracePeriodSeconds: 0\n"),
        delete("delete: a missing llama", "never"),
        delete("delete: in a missing namespace", "x").query("dryRun=All"),
        Request::new("delete: all namespaces path", Method::DELETE, "{gv}/llamas/del-10"),
    ]);
    requests.push(create(
        "deletes: a llama with a finalizer",
        &json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "spec": {"weight": 1, "height": 1}}),
    ));
    requests.extend([
        delete("delete: held by a finalizer", "held"),
        get("delete: held, with a deletionTimestamp", &at("llamas/held")),
        delete("delete: held, again", "held"),
        patch(
            "delete: held, a new finalizer is refused",
            "held",
            MERGE,
            r#"{"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}"#,
        ),
        patch("delete: held, spec changes", "held", MERGE, r#"{"spec": {"weight": 2}}"#),
        patch("delete: held, the finalizer removed", "held", MERGE, r#"{"metadata": {"finalizers": null}}"#),
        get("delete: held, gone", &at("llamas/held")),
    ]);
    let collection = |label: &str| Request::new(label, Method::DELETE, at("llamas"));
    requests.extend([
        collection("deletecollection: dry run").query("labelSelector=deletable%3Dyes&dryRun=All"),
        collection("deletecollection: invalid selector").query("labelSelector=a%20in%20("),
        collection("deletecollection: field selector").query("fieldSelector=metadata.name%3Ddel-11"),
        collection("deletecollection: by label").query("labelSelector=deletable%3Dyes"),
        collection("deletecollection: nothing matches").query("labelSelector=deletable%3Dno"),
        collection("deletecollection: with a body")
            .content_type(JSON)
            .body(r#"{"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}"#)
            .query("labelSelector=list%3Dyes"),
        collection("deletecollection: limit").query("labelSelector=list%3Dyes&limit=1&dryRun=All"),
        collection("deletecollection: propagationPolicy=bogus")
            .query("labelSelector=list%3Dyes&propagationPolicy=bogus"),
        Request::new("deletecollection: all namespaces", Method::DELETE, "{gv}/llamas")
            .query("labelSelector=nothing%3Dhere"),
        get("deletes: what is left", &at("llamas")).query("labelSelector=deletable"),
    ]);
    requests
}

/// Watches, each ended by the server at `timeoutSeconds`.
fn watches() -> Vec<Request> {
    let watch = |label: &str, query: &str| {
        get(&format!("watch: {label}"), &at("llamas")).query(format!("watch=true&timeoutSeconds=1&{query}"))
    };
    let mut requests = vec![
        get("watches: a list to start from", &at("llamas")).query("labelSelector=watched"),
        create("watches: a llama", &{
            let mut b = llama("watched-1", 80.0);
            b["metadata"]["labels"] = json!({"watched": "yes"});
            b
        }),
        patch("watches: a change", "watched-1", MERGE, r#"{"spec": {"weight": 81}}"#),
        create("watches: another llama", &{
            let mut b = llama("watched-2", 82.0);
            b["metadata"]["labels"] = json!({"watched": "no"});
            b
        }),
        patch(
            "watches: a label change out of the selector",
            "watched-1",
            MERGE,
            r#"{"metadata": {"labels": {"watched": "no"}}}"#,
        ),
        delete("watches: a deletion", "watched-2"),
    ];
    for query in [
        "resourceVersion=$LISTRV&labelSelector=watched",
        "resourceVersion=$LISTRV&labelSelector=watched%3Dyes",
        "resourceVersion=$LISTRV&labelSelector=watched%3Dno",
        "resourceVersion=$LISTRV&fieldSelector=metadata.name%3Dwatched-1",
        "labelSelector=watched",
        "resourceVersion=0&labelSelector=watched",
        "resourceVersion=$LISTRV&labelSelector=watched&allowWatchBookmarks=true",
        "resourceVersion=1&labelSelector=watched",
        "resourceVersion=bogus",
        "resourceVersion=99999999999&labelSelector=watched",
        "resourceVersion=$LISTRV&labelSelector=a%20in%20(",
        "resourceVersion=$LISTRV&fieldSelector=spec.color%3Dwhite",
        "labelSelector=watched&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        "labelSelector=watched&sendInitialEvents=true",
        "labelSelector=watched&resourceVersionMatch=Exact&resourceVersion=$LISTRV",
        "labelSelector=watched&limit=1",
        "labelSelector=watched&continue=bogus",
    ] {
        requests.push(watch(query, query));
    }
    requests.push(
        get("watch: as Table", &at("llamas")).accept(TABLE).query("watch=true&timeoutSeconds=1&labelSelector=watched"),
    );
    requests.push(
        get("watch: as metadata", &at("llamas"))
            .accept(METADATA)
            .query("watch=true&timeoutSeconds=1&labelSelector=watched"),
    );
    requests.push(
        get("watch: YAML", &at("llamas")).accept(YAML).query("watch=true&timeoutSeconds=1&labelSelector=watched"),
    );
    requests.push(get("watch: one llama by name path", &at("llamas/watched-1")).query("watch=true&timeoutSeconds=1"));
    requests
        .push(get("watch: all namespaces", "{gv}/llamas").query("watch=true&timeoutSeconds=1&labelSelector=watched"));
    requests.push(
        get("watch: the legacy watch path", "{gv}/watch/namespaces/conformance/llamas")
            .query("timeoutSeconds=1&labelSelector=watched"),
    );
    requests
}
