//! The example server standalone, as a newcomer runs it: kubectl and an HTTPS client against
//! its cluster-scoped Regions (discovery, paths without a namespace, Table, status, server-side
//! apply, watch, validation) and its ConfigDigests, which need a cluster.

mod common;

use common::Standalone;
use futures::StreamExt;
use serde_json::{Value, json};

const WEST: &str = "apiVersion: ops.example.com/v1
kind: Region
metadata:
  name: west
  namespace: somewhere
spec:
  zones: [west-a, west-b]
  capacity: 40
";

const REGIONS: &str = "/apis/ops.example.com/v1/regions";

/// The rows of a kubectl table, split on whitespace.
fn rows(table: &str) -> Vec<Vec<String>> {
    table.lines().map(|l| l.split_whitespace().map(str::to_string).collect()).collect()
}

#[tokio::test]
async fn discovery_says_regions_are_cluster_scoped_and_config_digests_namespaced() {
    let s = Standalone::start().await;
    let out = s.kubectl(&["api-resources", "--api-group=ops.example.com"], None);
    assert_eq!(
        rows(&out)[1..],
        [
            ["configdigests", "cd", "ops.example.com/v1", "true", "ConfigDigest"],
            ["regions", "rg", "ops.example.com/v1", "false", "Region"]
        ]
    );
    let explained = s.kubectl(&["explain", "region.spec.capacity"], None);
    assert!(explained.contains("How many machines the region may hold"), "{explained}");
}

#[tokio::test]
async fn a_region_lives_at_a_path_without_a_namespace_and_keeps_none() {
    let s = Standalone::start().await;
    assert_eq!(s.kubectl(&["apply", "-f", "-"], Some(WEST)).trim(), "region.ops.example.com/west created");
    let region: Value = serde_json::from_str(&s.kubectl(&["get", "region", "west", "-o", "json"], None)).unwrap();
    assert_eq!(region["metadata"].get("namespace"), None, "the body's namespace is cleared, as for a CRD");
    assert_eq!(rows(&s.kubectl(&["get", "regions"], None))[0], ["NAME", "ZONES", "CAPACITY", "MACHINES", "AGE"]);
    assert_eq!(rows(&s.kubectl(&["get", "rg"], None))[1][..3], ["west", "west-a,west-b", "40"]);

    let r = s.client.get(s.url(&format!("{REGIONS}/west"))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    for path in [
        "/apis/ops.example.com/v1/namespaces/default/regions/west",
        "/apis/ops.example.com/v1/namespaces/default/regions",
    ] {
        let r = s.client.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        let status: Value = r.json().await.unwrap();
        assert_eq!((status["kind"].as_str(), status["reason"].as_str()), (Some("Status"), Some("NotFound")));
    }
    assert_eq!(s.kubectl(&["delete", "region", "west"], None).trim(), "region.ops.example.com \"west\" deleted");
    let r = s.client.get(s.url(&format!("{REGIONS}/west"))).send().await.unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn the_status_is_written_through_its_subresource_only() {
    let s = Standalone::start().await;
    s.kubectl(&["apply", "-f", "-"], Some(WEST));
    let main = s.kubectl(&["patch", "region", "west", "--type=merge", "-p", r#"{"status":{"machines":3}}"#], None);
    assert!(main.contains("patched (no change)"), "{main}");
    let patch = r#"{"spec":{"capacity":1},"status":{"machines":7}}"#;
    s.kubectl(&["patch", "region", "west", "--subresource=status", "--type=merge", "-p", patch], None);
    let region: Value = serde_json::from_str(&s.kubectl(&["get", "region", "west", "-o", "json"], None)).unwrap();
    assert_eq!((region["spec"]["capacity"].as_i64(), region["status"]["machines"].as_i64()), (Some(40), Some(7)));
    assert_eq!(rows(&s.kubectl(&["get", "regions"], None))[1][..4], ["west", "west-a,west-b", "40", "7"]);
}

#[tokio::test]
async fn an_invalid_region_is_a_422_status_naming_every_field() {
    let s = Standalone::start().await;
    let body = json!({"apiVersion": "ops.example.com/v1", "kind": "Region", "metadata": {"name": "nowhere"},
        "spec": {"zones": [], "capacity": 0}});
    let r = s.client.post(s.url(REGIONS)).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 422);
    let status: Value = r.json().await.unwrap();
    assert_eq!(status["reason"], "Invalid");
    // The bounds of the published schema, checked as a CustomResourceDefinition's are.
    let causes: Vec<(&str, &str)> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["field"].as_str().unwrap(), c["message"].as_str().unwrap()))
        .collect();
    assert_eq!(
        causes,
        [
            ("spec.capacity", "Invalid value: 0: spec.capacity in body should be greater than or equal to 1"),
            ("spec.zones", "Invalid value: 0: spec.zones in body should have at least 1 items"),
        ]
    );
}

#[tokio::test]
async fn server_side_apply_and_watch_see_a_cluster_scoped_object() {
    let s = Standalone::start().await;
    let watch = s.client.get(s.url(&format!("{REGIONS}?watch=true"))).send().await.unwrap();
    assert_eq!(watch.status(), 200);
    let mut events = watch.bytes_stream();
    let applied = s.kubectl(&["apply", "--server-side", "--field-manager=fleet", "-f", "-"], Some(WEST));
    assert_eq!(applied.trim(), "region.ops.example.com/west serverside-applied");
    let bigger = WEST.replace("capacity: 40", "capacity: 50");
    s.kubectl(&["apply", "--server-side", "--field-manager=fleet", "-f", "-"], Some(&bigger));
    let region: Value = s.client.get(s.url(&format!("{REGIONS}/west"))).send().await.unwrap().json().await.unwrap();
    let managed = &region["metadata"]["managedFields"];
    assert_eq!((managed[0]["manager"].as_str(), managed[0]["operation"].as_str()), (Some("fleet"), Some("Apply")));
    assert_eq!(managed[0]["fieldsV1"], json!({"f:spec": {"f:capacity": {}, "f:zones": {}}}));
    s.kubectl(&["delete", "region", "west"], None);

    let mut seen = Vec::new();
    let mut buffer = Vec::new();
    while seen.len() < 3 {
        let chunk = tokio::time::timeout(common::DEADLINE, events.next()).await.expect("an event").unwrap().unwrap();
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let event: Value = serde_json::from_slice(&line).unwrap();
            let object = &event["object"];
            assert_eq!(object["metadata"].get("namespace"), None);
            seen.push((event["type"].as_str().unwrap().to_string(), object["spec"]["capacity"].as_i64().unwrap()));
        }
    }
    assert_eq!(seen, [("ADDED".into(), 40), ("MODIFIED".into(), 50), ("DELETED".into(), 50)]);
    let left = s.client.get(s.url(REGIONS)).send().await.unwrap().json::<Value>().await.unwrap();
    assert_eq!(left["items"], json!([]));
}

#[tokio::test]
async fn config_digests_without_a_cluster_say_what_is_missing() {
    let s = Standalone::start().await;
    let err = common::kubectl(&s.kubeconfig, &["get", "configdigests", "-A"], None).unwrap_err();
    assert!(err.contains("ServiceUnavailable") && err.contains("start the server with --kubeconfig PATH"), "{err}");
}

#[tokio::test]
async fn a_whole_float_in_an_integer_field_is_an_integer_as_for_a_crd() {
    let s = Standalone::start().await;
    // A custom resource's validator takes 12.0 as an integer; 12.5 is not one.
    for (sent, code) in [("12.0", 201), ("12.5", 422)] {
        let body = format!(
            r#"{{"apiVersion":"ops.example.com/v1","kind":"Region","metadata":{{"name":"i"}},"spec":{{"zones":["a"],"capacity":{sent}}}}}"#
        );
        let created =
            s.client.post(s.url(REGIONS)).header("content-type", "application/json").body(body).send().await.unwrap();
        assert_eq!(created.status(), code, "{sent}");
        if code == 201 {
            let text = created.text().await.unwrap();
            assert!(text.contains(r#""capacity":12"#) && !text.contains(r#""capacity":12."#), "{sent}: {text}");
            s.client.delete(s.url(&format!("{REGIONS}/i"))).send().await.unwrap();
        } else {
            let status: serde_json::Value = created.json().await.unwrap();
            assert_eq!(status["details"]["causes"][0]["field"], "spec.capacity", "{status}");
        }
    }
}

#[tokio::test]
async fn a_float_field_keeps_a_whole_number_whole_as_a_crd_does() {
    let s = Standalone::start().await;
    // The text of each write and of what every read gives back, as a CRD gives it.
    for (sent, read) in [("12", "12"), ("12.0", "12"), ("1.5", "1.5"), ("1e21", "1e+21")] {
        let body = format!(
            r#"{{"apiVersion":"ops.example.com/v1","kind":"Region","metadata":{{"name":"n"}},"spec":{{"zones":["a"],"capacity":1,"overcommit":{sent}}}}}"#
        );
        let created =
            s.client.post(s.url(REGIONS)).header("content-type", "application/json").body(body).send().await.unwrap();
        assert_eq!(created.status(), 201, "{sent}");
        let expected = format!(r#""overcommit":{read}}}"#);
        assert!(created.text().await.unwrap().contains(&expected), "{sent}");
        let got = s.client.get(s.url(&format!("{REGIONS}/n"))).send().await.unwrap().text().await.unwrap();
        assert!(got.contains(&expected), "{sent}: {got}");
        assert_eq!(s.kubectl(&["get", "region", "n", "-o", "jsonpath={.spec.overcommit}"], None), read, "{sent}");
        s.client.delete(s.url(&format!("{REGIONS}/n"))).send().await.unwrap();
    }
}
