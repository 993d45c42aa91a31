//! The stored objects of writes the suites met, computed as the tested server stored them, and
//! the defects the computation catches.

use super::*;
use crate::subject::tests::WIDGETS as CLUSTER_WIDGETS;
use reqwest::Method;

fn apply(path: &str, query: &str, yaml: &str) -> Request {
    Request::new("apply", Method::PATCH, path).query(query).content_type("application/apply-patch+yaml").body(yaml)
}

fn answered(body: Value, warnings: &[&str]) -> Answer {
    Answer { warnings: warnings.iter().map(|w| w.to_string()).collect(), ..Answer::json(201, body) }
}

/// A Widget as the tested server answers it, with its metadata's `extra` members.
fn widget(extra: Value, spec: Value) -> Value {
    let mut metadata = json!({"name": "w", "namespace": "ns", "uid": "<uid ns/w #1>",
        "resourceVersion": "<rv ns/w #1>", "creationTimestamp": "<creationTimestamp #1>", "generation": 1});
    for (name, value) in extra.as_object().into_iter().flatten() {
        metadata[name] = value.clone();
    }
    json!({"apiVersion": "test.example.com/v1", "kind": "Widget", "metadata": metadata, "spec": spec})
}

/// Widgets in namespaces.
static WIDGETS: Subject = Subject { namespaced: true, ..CLUSTER_WIDGETS };

const PATH: &str = "{gv}/namespaces/ns/widgets/w";

#[test]
fn an_apply_creating_with_an_unknown_and_a_null_field_stores_and_owns_the_rest() {
    let write = apply(
        PATH,
        "fieldManager=alice",
        "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n  horns: 2\n  color: null\n",
    );
    let owned = json!({"f:spec": {"f:color": {}, "f:size": {}}});
    let entry = json!([{"apiVersion": "test.example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": owned,
        "manager": "alice", "operation": "Apply", "time": "<time>"}]);
    let made = widget(json!({"managedFields": entry}), json!({"size": 3}));
    let answer = answered(made.clone(), &[r#"299 - "unknown field \"spec.horns\"""#]);
    let expected = stored(&WIDGETS, &write, None, &answer).expect("computed");
    assert_eq!(expected.as_ref(), Some(&made));
    // Stored and owned: the defect the computation is for.
    let mut horned = made.clone();
    horned["spec"]["horns"] = json!(2);
    horned["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:horns"] = json!({});
    let read = Answer::json(200, horned);
    assert!(difference(&expected, &read).is_some_and(|d| d.contains("horns")), "{:?}", difference(&expected, &read));
    assert_eq!(difference(&expected, &Answer::json(200, made)), None);
}

/// The object an update made, with its labels, owned by `unknown`.
fn setup() -> Value {
    let owned = json!({"f:metadata": {"f:labels": {".": {}, "f:gen": {}}}, "f:spec": {".": {}, "f:size": {}}});
    let entry = json!([{"apiVersion": "test.example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": owned,
        "manager": "unknown", "operation": "Update", "time": "<time>"}]);
    widget(json!({"labels": {"gen": "yes"}, "managedFields": entry}), json!({"size": 1}))
}

#[test]
fn an_apply_to_an_object_shares_equal_fields_and_a_changed_one_raises_generation_and_version() {
    let before = setup();
    let write = apply(
        PATH,
        "fieldManager=generator",
        "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  labels:\n    gen: 'yes'\nspec:\n  size: 1\n",
    );
    let mut same = before.clone();
    let entry = json!({"apiVersion": "test.example.com/v1", "fieldsType": "FieldsV1", "manager": "generator",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:gen": {}}}, "f:spec": {"f:size": {}}}, "operation": "Apply", "time": "<time>"});
    let entries = same["metadata"]["managedFields"].as_array_mut().expect("entries");
    entries.insert(0, entry);
    same["metadata"]["resourceVersion"] = json!("<rv ns/w #2>");
    let answer = Answer::json(200, same.clone());
    let expected = stored(&WIDGETS, &write, Some(&before), &answer).expect("computed");
    assert_eq!(expected.as_ref(), Some(&same), "a new manager changes managedFields: a new resourceVersion");
    // The same configuration by the same manager again changes nothing: the version is kept.
    let again = stored(&WIDGETS, &write, Some(&same), &Answer::json(200, same.clone())).expect("computed");
    assert_eq!(again.as_ref(), Some(&same));
    let mut bumped = same.clone();
    bumped["metadata"]["resourceVersion"] = json!("<rv ns/w #3>");
    assert!(stored(&WIDGETS, &write, Some(&same), &Answer::json(200, bumped.clone())).is_ok_and(|e| e == Some(same)));
    assert!(difference(&again, &Answer::json(200, bumped)).is_some(), "a no-op that bumped the resourceVersion");
    // A changed size conflicts with its owner, unless forced.
    let bigger = apply(
        PATH,
        "fieldManager=generator",
        "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 2\n",
    );
    let conflict = stored(&WIDGETS, &bigger, Some(&before), &answer);
    assert!(conflict.is_err_and(|why| why.contains("conflicted with unknown")));
    let forced = Request { query: "fieldManager=generator&force=true".into(), ..bigger };
    let expected = stored(&WIDGETS, &forced, Some(&before), &answer).expect("computed").expect("an object");
    assert_eq!((expected["spec"].clone(), expected["metadata"]["generation"].clone()), (json!({"size": 2}), json!(2)));
    let owners: Vec<&str> = expected["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["manager"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(owners, ["generator", "unknown"]);
    assert_eq!(
        expected["metadata"]["managedFields"][1]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:gen": {}}}, "f:spec": {}})
    );
}

#[test]
fn a_merge_patch_is_an_update_that_takes_the_fields_it_changed() {
    let before = setup();
    let write = Request::new("patch", Method::PATCH, PATH)
        .query("fieldManager=editor")
        .content_type("application/merge-patch+json")
        .json(&json!({"metadata": {"labels": {"gen": null, "new": "x"}}, "spec": {"size": 4}, "status": {"s": 1}}));
    let mut answer = Answer::json(200, before.clone());
    answer.body["metadata"]["resourceVersion"] = json!("<rv ns/w #2>");
    let expected = stored(&WIDGETS, &write, Some(&before), &answer).expect("computed").expect("an object");
    assert_eq!(expected["metadata"]["labels"], json!({"new": "x"}));
    assert_eq!((expected["spec"].clone(), expected.get("status")), (json!({"size": 4}), None), "the status is reset");
    assert_eq!(expected["metadata"]["resourceVersion"], "<rv ns/w #2>");
    let entries = &expected["metadata"]["managedFields"];
    assert_eq!(entries[0]["manager"], "editor");
    assert_eq!(entries[0]["fieldsV1"], json!({"f:metadata": {"f:labels": {"f:new": {}}}, "f:spec": {"f:size": {}}}));
    assert_eq!(entries[1]["fieldsV1"], json!({"f:metadata": {"f:labels": {}}, "f:spec": {}}));
    // An answer at the old version for a write that changed the object.
    let kept = stored(&WIDGETS, &write, Some(&before), &Answer::json(200, before.clone())).expect("computed");
    assert_eq!(kept.expect("an object")["metadata"]["resourceVersion"], "<a new resourceVersion>");
}

#[test]
fn a_write_that_is_not_of_one_object_cannot_be_told() {
    let collection = Request::new("deletecollection", Method::DELETE, "{gv}/namespaces/ns/widgets");
    assert!(stored(&WIDGETS, &collection, None, &Answer::json(200, json!({}))).is_err());
    let strategic =
        Request::new("patch", Method::PATCH, PATH).content_type("application/strategic-merge-patch+json").body("{}");
    assert!(stored(&WIDGETS, &strategic, Some(&setup()), &Answer::json(200, setup())).is_err());
    let delete = Request::new("delete", Method::DELETE, PATH);
    assert_eq!(stored(&WIDGETS, &delete, Some(&setup()), &Answer::json(200, setup())), Ok(None));
}
