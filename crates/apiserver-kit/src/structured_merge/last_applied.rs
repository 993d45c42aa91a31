//! Client-side `kubectl apply`'s annotation in server-side apply, as k8s.io/apiserver's field
//! manager treats it, so that objects created with `kubectl apply` move to
//! `kubectl apply --server-side` without conflicts (`lastAppliedManager` and `lastAppliedUpdater`
//! in `pkg/endpoints/handlers/fieldmanager` for 1.20, `managedfields/internal` since):
//!
//! - [`allowed_conflicts`]: an apply by `kubectl` may take over, without a conflict, the fields
//!   the object's `kubectl.kubernetes.io/last-applied-configuration` records with the value the
//!   object still has; a field the annotation does not record, or records with another value
//!   (someone changed it since, e.g. `kubectl edit`), still conflicts.
//! - [`record`]: after an apply by `kubectl`, an object that carries the annotation gets the
//!   applied configuration in it, so a later client-side `kubectl apply` computes its three-way
//!   patch from what was applied last.
//!
//! Only the manager `kubectl` does either: a tool that applies under its own name opts out.

use super::fieldpath::Set;
use super::shape::Schema;
use super::typed::{Comparison, compare, to_field_set};
use crate::machinery::validation::TOTAL_ANNOTATION_SIZE_LIMIT;
use serde_json::Value;

/// The annotation client-side `kubectl apply` three-way-merges against.
pub const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The manager kubectl applies as, the only one whose applies read and keep the annotation.
pub const KUBECTL: &str = "kubectl";

/// The annotation of `object`, when it has a non-empty one.
fn annotation_of(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations")?.get(ANNOTATION)?.as_str().filter(|text| !text.is_empty())
}

/// The fields an apply at `api_version` may take over from their managers without a conflict
/// (`allowedConflictsFromLastApplied`): those `live`'s annotation records, minus those whose
/// value in `live` differs from the recorded one or that `live` no longer has. `None` when `live`
/// has no annotation, or one that is not an object of `api_version` with a kind.
pub fn allowed_conflicts(live: &Value, api_version: &str, schema: &Schema) -> Option<Set> {
    let recorded: Value = serde_json::from_str(annotation_of(live)?).ok()?;
    let kind = recorded.get("kind").and_then(Value::as_str).filter(|kind| !kind.is_empty());
    if !recorded.is_object()
        || kind.is_none()
        || recorded.get("apiVersion").and_then(Value::as_str) != Some(api_version)
    {
        return None;
    }
    let Comparison { added, modified, removed } = compare(&recorded, live, schema);
    Some(to_field_set(&recorded, schema).difference(&modified).difference(&added).difference(&removed))
}

/// Writes `applied` (the configuration as the client sent it, without the annotation itself)
/// into the annotation of `object`, when `object` has a non-empty one (`lastAppliedUpdater`;
/// an empty one is how a user opts out, since Kubernetes 1.22). The text is Go's encoding of
/// it: keys sorted, then a newline. When the annotations would then exceed their size limit,
/// the annotation is removed instead (`SetLastApplied`), so that the apply still succeeds.
pub fn record(object: &mut Value, applied: &Value) {
    if annotation_of(object).is_none() {
        return;
    }
    let mut applied = applied.clone();
    if let Some(annotations) = applied.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        annotations.remove(ANNOTATION);
    }
    if let Some(annotations) = object.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        annotations.insert(ANNOTATION.into(), Value::String(format!("{applied}\n")));
        let size: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
        if size > TOTAL_ANNOTATION_SIZE_LIMIT {
            annotations.remove(ANNOTATION);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structured_merge::fieldpath::PathElement;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::compile(&json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
            "spec": {"type": "object", "properties": {"weight": {"type": "number"}, "height": {"type": "number"}}},
        }}))
    }

    const V1ALPHA: &str = "test.example.com/v1alpha";

    fn with_annotation(spec: Value, recorded: &Value) -> Value {
        json!({"apiVersion": V1ALPHA, "kind": "Widget",
            "metadata": {"name": "dolly", "annotations": {(ANNOTATION): format!("{recorded}\n")}}, "spec": spec})
    }

    fn field(path: &[&str]) -> Vec<PathElement> {
        path.iter().map(|step| PathElement::Field(step.to_string())).collect()
    }

    #[test]
    fn recorded_fields_with_their_recorded_values_are_allowed() {
        let recorded = json!({"apiVersion": V1ALPHA, "kind": "Widget", "metadata": {"name": "dolly"},
            "spec": {"weight": 5, "height": 2}});
        let live = with_annotation(json!({"weight": 5.0, "height": 3}), &recorded);
        let allowed = allowed_conflicts(&live, V1ALPHA, &schema()).unwrap();
        assert!(allowed.has(&field(&["spec", "weight"])), "5 is 5.0: {allowed:?}");
        assert!(!allowed.has(&field(&["spec", "height"])), "changed since it was applied");
        assert!(!allowed.has(&field(&["spec", "color"])), "never recorded");
        let gone = with_annotation(json!({"height": 2}), &recorded);
        assert!(!allowed_conflicts(&gone, V1ALPHA, &schema()).unwrap().has(&field(&["spec", "weight"])));
    }

    #[test]
    fn an_annotation_of_another_version_no_kind_or_no_json_allows_nothing() {
        let of = |recorded: &str| {
            let mut live = with_annotation(json!({"weight": 5}), &json!({}));
            live["metadata"]["annotations"][ANNOTATION] = json!(recorded);
            allowed_conflicts(&live, V1ALPHA, &schema())
        };
        assert!(of(r#"{"apiVersion":"test.example.com/v1","kind":"Widget","spec":{"weight":5}}"#).is_none());
        assert!(of(r#"{"apiVersion":"test.example.com/v1alpha","spec":{"weight":5}}"#).is_none());
        let whole = r#"{"apiVersion":"test.example.com/v1alpha","kind":"Widget","spec":{}}"#;
        assert!(of(&whole[..whole.len() - 2]).is_none(), "cut short");
        assert!(of("").is_none());
        assert!(of(r#"{"apiVersion":"test.example.com/v1alpha","kind":"Widget","spec":{"weight":5}}"#).is_some());
        let mut bare = with_annotation(json!({"weight": 5}), &json!({}));
        bare["metadata"]["annotations"] = json!({});
        assert!(allowed_conflicts(&bare, V1ALPHA, &schema()).is_none());
    }

    #[test]
    fn the_annotation_is_rewritten_only_where_there_is_one() {
        let applied = json!({"apiVersion": V1ALPHA, "kind": "Widget",
            "metadata": {"name": "dolly", "annotations": {(ANNOTATION): "x", "note": "kept"}}, "spec": {"weight": 6}});
        let mut object = with_annotation(json!({"weight": 6}), &json!({"old": true}));
        record(&mut object, &applied);
        let text = object["metadata"]["annotations"][ANNOTATION].as_str().unwrap();
        assert_eq!(
            text,
            "{\"apiVersion\":\"test.example.com/v1alpha\",\"kind\":\"Widget\",\"metadata\":{\"annotations\":{\"note\":\"kept\"},\"name\":\"dolly\"},\"spec\":{\"weight\":6}}\n"
        );
        let mut without = json!({"metadata": {"annotations": {"note": "kept"}}});
        record(&mut without, &applied);
        assert_eq!(without, json!({"metadata": {"annotations": {"note": "kept"}}}));
        let mut emptied = json!({"metadata": {"annotations": {(ANNOTATION): ""}}});
        record(&mut emptied, &applied);
        assert_eq!(emptied["metadata"]["annotations"][ANNOTATION], "", "an empty one is left, as since 1.22");
    }

    #[test]
    fn a_record_that_would_overflow_the_annotations_is_removed() {
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 100);
        let applied =
            json!({"apiVersion": V1ALPHA, "kind": "Widget", "metadata": {"name": "dolly"}, "spec": {"weight": 6}});
        let mut object = json!({"metadata": {"annotations": {(ANNOTATION): "{}", "big": big}}});
        record(&mut object, &applied);
        assert_eq!(object["metadata"]["annotations"].as_object().unwrap().len(), 1, "only `big` is left");
        let mut object = json!({"metadata": {"annotations": {(ANNOTATION): "{}", "small": "x"}}});
        record(&mut object, &applied);
        assert!(object["metadata"]["annotations"][ANNOTATION].as_str().unwrap().contains("\"weight\":6"));
    }

    proptest::proptest! {
        /// A field is allowed exactly when the record and the live object both hold it, equal.
        #[test]
        fn a_field_is_allowed_when_recorded_with_its_live_value(
            recorded_weight in proptest::option::of(0u8..4),
            live_weight in proptest::option::of(0u8..4),
            recorded_height in proptest::option::of(0u8..4),
            live_height in proptest::option::of(0u8..4),
        ) {
            let spec = |weight: Option<u8>, height: Option<u8>| {
                let mut spec = serde_json::Map::new();
                weight.map(|w| spec.insert("weight".into(), json!(w)));
                height.map(|h| spec.insert("height".into(), json!(f64::from(h))));
                Value::Object(spec)
            };
            let recorded = json!({"apiVersion": V1ALPHA, "kind": "Widget", "spec": spec(recorded_weight, recorded_height)});
            let live = with_annotation(spec(live_weight, live_height), &recorded);
            let allowed = allowed_conflicts(&live, V1ALPHA, &schema()).unwrap();
            let held = |recorded: Option<u8>, live: Option<u8>| recorded.is_some() && recorded == live;
            proptest::prop_assert_eq!(allowed.has(&field(&["spec", "weight"])), held(recorded_weight, live_weight));
            proptest::prop_assert_eq!(allowed.has(&field(&["spec", "height"])), held(recorded_height, live_height));
        }

        /// Any annotation text is read without a panic, and allows only what it records.
        #[test]
        fn any_annotation_is_read_safely(text in ".{0,80}", tail in "[a-z{}\\[\\]\":,0-9]{0,40}") {
            let mut live = with_annotation(json!({"weight": 5}), &json!({}));
            let annotation = format!("{{\"apiVersion\":\"{V1ALPHA}\",\"kind\":\"Widget\",{tail}");
            for text in [text, annotation] {
                live["metadata"]["annotations"][ANNOTATION] = json!(text);
                if let Some(allowed) = allowed_conflicts(&live, V1ALPHA, &schema()) {
                    let recorded: Value = serde_json::from_str(&text).unwrap();
                    proptest::prop_assert!(allowed.difference(&to_field_set(&recorded, &schema())).is_empty());
                }
            }
        }
    }
}
