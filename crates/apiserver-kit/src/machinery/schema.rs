//! JSON schemas of resource types in the shape Kubernetes publishes (optional fields without
//! `null` types), and the shapes of `metadata` that managed fields read.

use serde_json::Value;

/// Kubernetes schemas mark optional fields by leaving them out of `required`, never by a
/// `null` type: turn `type: [T, "null"]` into `type: T` and drop `default: null`.
pub fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
                let replacement = if kept.len() == 1 { kept[0].clone() } else { Value::Array(kept) };
                map.insert("type".into(), replacement);
            }
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            map.remove("nullable");
            for v in map.values_mut() {
                strip_nulls(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// The shapes of `metadata` that managed fields and apply read
/// ([`crate::structured_merge::typed`]), as the kube-apiserver's schema of ObjectMeta gives them:
/// labels and annotations granular maps, finalizers a set, ownerReferences a list keyed by uid
/// of atomic references (`+structType=atomic` since Kubernetes 1.2x), managedFields atomic.
pub fn object_meta_shapes() -> Value {
    let string = serde_json::json!({"type": "string"});
    let integer = serde_json::json!({"type": "integer"});
    let string_map = serde_json::json!({"type": "object", "additionalProperties": {"type": "string"}});
    serde_json::json!({"type": "object", "properties": {
        "annotations": string_map, "labels": string_map,
        "finalizers": {"type": "array", "items": string, "x-kubernetes-list-type": "set"},
        "ownerReferences": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"],
            "items": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
                "apiVersion": string, "kind": string, "name": string, "uid": string,
                "controller": {"type": "boolean"}, "blockOwnerDeletion": {"type": "boolean"},
            }}},
        "managedFields": {"type": "array", "items": {"type": "object"}},
        "name": string, "generateName": string, "namespace": string, "selfLink": string, "uid": string,
        "resourceVersion": string, "creationTimestamp": string, "deletionTimestamp": string,
        "generation": integer, "deletionGracePeriodSeconds": integer,
    }})
}
