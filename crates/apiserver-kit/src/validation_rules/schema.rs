//! What the rules read of a schema node (a structural schema as JSON): its type and format, its
//! properties, items and additionalProperties, and the Kubernetes extensions (int-or-string,
//! embedded resources, list and map types).

use serde_json::{Value, json};
use std::borrow::Cow;

/// The node's `type` (`""` when it has none, as an int-or-string or a preserved node).
pub fn type_of(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or_default()
}

/// The node's `format`.
pub fn format_of(schema: &Value) -> &str {
    schema.get("format").and_then(Value::as_str).unwrap_or_default()
}

/// Whether the extension `name` is `true`.
pub fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool).unwrap_or_default()
}

/// `x-kubernetes-int-or-string`.
pub fn int_or_string(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-int-or-string")
}

/// `x-kubernetes-embedded-resource`.
pub fn embedded(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-embedded-resource")
}

/// The properties, when the node has a `properties` member (an object with properties).
pub fn properties(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// `items`, when it is a schema.
pub fn items(schema: &Value) -> Option<&Value> {
    schema.get("items").filter(|items| items.is_object())
}

/// `additionalProperties`, when it is a schema (not `true` or `false`).
pub fn additional_properties(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|additional| additional.is_object())
}

/// `x-kubernetes-list-type` (`""` when unset: atomic).
pub fn list_type(schema: &Value) -> &str {
    schema.get("x-kubernetes-list-type").and_then(Value::as_str).unwrap_or_default()
}

/// `x-kubernetes-list-map-keys`.
pub fn list_map_keys(schema: &Value) -> Vec<&str> {
    let keys = schema.get("x-kubernetes-list-map-keys").and_then(Value::as_array);
    keys.map(|keys| keys.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// Whether a map's entries correlate with the old object's by key (`MapIsCorrelatable`): unless
/// its `x-kubernetes-map-type` is another than `granular` or `atomic`.
pub fn map_correlatable(schema: &Value) -> bool {
    matches!(schema.get("x-kubernetes-map-type").and_then(Value::as_str), None | Some("granular" | "atomic"))
}

/// The node of a resource's root (or of an embedded resource) with the fields every rule may
/// read there whatever the schema says (`WithTypeAndObjectMeta`): `apiVersion` and `kind`
/// strings, and a `metadata` of `name` and `generateName` only.
pub fn with_type_and_object_meta(schema: &Value) -> Cow<'_, Value> {
    let string = |property: Option<&Value>| property.is_some_and(|p| type_of(p) == "string");
    let declared = properties(schema).is_some_and(|p| {
        let metadata = p.get("metadata").filter(|m| type_of(m) == "object");
        let meta = metadata.and_then(properties);
        string(p.get("kind"))
            && string(p.get("apiVersion"))
            && meta.is_some_and(|m| string(m.get("name")) && string(m.get("generateName")))
    });
    if declared {
        return Cow::Borrowed(schema);
    }
    let mut with = schema.clone();
    let Some(node) = with.as_object_mut() else { return Cow::Borrowed(schema) };
    let properties = node.entry("properties").or_insert_with(|| json!({}));
    if let Some(properties) = properties.as_object_mut() {
        properties.insert("kind".into(), json!({"type": "string"}));
        properties.insert("apiVersion".into(), json!({"type": "string"}));
        let meta =
            json!({"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}});
        properties.insert("metadata".into(), meta);
    }
    Cow::Owned(with)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_root_gains_its_type_and_name_fields() {
        let root = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
        let with = with_type_and_object_meta(&root);
        let names: Vec<&String> = properties(&with).unwrap().keys().collect();
        assert_eq!(names.len(), 4);
        assert_eq!(type_of(&with["properties"]["metadata"]["properties"]["generateName"]), "string");
        assert!(matches!(with_type_and_object_meta(&with), Cow::Borrowed(_)), "already there: kept");
    }
}
