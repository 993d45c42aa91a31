//! The sizes a schema node's values may have, as k8s.io/apiserver's `SchemaDeclType` bounds
//! them for the cost estimator (`DeclType.MaxElements` and `MinSerializedSize`): a string's
//! characters by `maxLength` (times 4: bytes), the longest of its `enum`, its format's longest
//! (durations, dates, date-times) or the request size limit; a list's items by `maxItems` or
//! how many of its smallest item fit in a request; a map's entries by `maxProperties` likewise.
//! What the estimator asks is the size at a field path from `self` (apiextensions'
//! `sizeEstimator`).

use super::escape::escape;
use super::schema;
use crate::cel::estimate::{Estimate, Sizes};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// `MaxRequestSizeBytes`: the largest request the kube-apiserver takes (3 MiB).
pub const MAX_REQUEST_SIZE: i64 = 3 * 1024 * 1024;
/// The longest JSON duration and date-time (`MaxDurationSizeJSON`, `MaxDatetimeSizeJSON`).
const MAX_DURATION_SIZE: i64 = 32;
const MAX_DATETIME_SIZE: i64 = 32;
/// A JSON date's length (`JSONDateSize`).
const DATE_SIZE: i64 = 12;
/// The longest name (`DNS1123SubdomainMaxLength`).
const NAME_MAX_LENGTH: i64 = 253;

/// A node's sizes, and those of what it holds.
#[derive(Clone, Debug, Default)]
pub struct NodeSizes {
    /// The most characters, bytes, items or entries its values have (`MaxElements`).
    pub max_elements: i64,
    /// The fewest bytes a value serializes to in JSON (`MinSerializedSize`).
    pub min_serialized_size: i64,
    /// An object's fields, by their CEL names.
    fields: HashMap<String, NodeSizes>,
    /// A list's items or a map's values.
    element: Option<Box<NodeSizes>>,
    /// A map's keys (strings of no bound: `MaxElements` 0).
    key: Option<Box<NodeSizes>>,
}

impl NodeSizes {
    /// The sizes of `node`'s values; `resource_root` for a resource's root or an embedded one.
    /// `None` where the node has no CEL type.
    pub fn of(node: &Value, resource_root: bool) -> Option<NodeSizes> {
        if schema::int_or_string(node) {
            let max = max_length(node).map_or(MAX_REQUEST_SIZE - 2, |length| length * 4);
            return Some(NodeSizes::simple(max, 1));
        }
        let with_meta;
        let node = if resource_root {
            with_meta = with_type_and_object_meta(node);
            &*with_meta
        } else {
            node
        };
        match schema::type_of(node) {
            "array" => {
                let items = schema::items(node)?;
                let element = NodeSizes::of(items, schema::embedded(items))?;
                let max = bound(node, "maxItems").unwrap_or((MAX_REQUEST_SIZE - 2) / (element.min_serialized_size + 1));
                Some(NodeSizes { element: Some(Box::new(element)), ..NodeSizes::simple(max, 2) })
            }
            "object" => object(node),
            "string" => Some(string(node)),
            "boolean" => Some(NodeSizes::simple(0, 4)),
            "number" | "integer" => Some(NodeSizes::simple(0, 1)),
            _ => None,
        }
    }

    fn simple(max_elements: i64, min_serialized_size: i64) -> NodeSizes {
        NodeSizes { max_elements, min_serialized_size, ..NodeSizes::default() }
    }

    /// How many times values of this node may be in a request, a comma between each
    /// (apiextensions' `maxCardinality`).
    pub fn max_cardinality(&self) -> u64 {
        u64::try_from(MAX_REQUEST_SIZE / (self.min_serialized_size + 1)).unwrap_or(0)
    }
}

/// A resource's root with the fields every rule may read there (apiextensions'
/// `WithTypeAndObjectMeta`): when the schema does not declare them all, `metadata` is made of a
/// `name` of at most 253 characters and a `generateName` of at most 252 (shorter when the
/// schema says so).
fn with_type_and_object_meta(node: &Value) -> Cow<'_, Value> {
    let Cow::Owned(mut with) = schema::with_type_and_object_meta(node) else { return Cow::Borrowed(node) };
    let declared = |name: &str| {
        let metadata = schema::properties(node).and_then(|p| p.get("metadata"));
        metadata.and_then(schema::properties).and_then(|p| p.get(name)).and_then(max_length)
    };
    for (name, cap) in [("name", NAME_MAX_LENGTH), ("generateName", NAME_MAX_LENGTH - 1)] {
        let max = declared(name).map_or(cap, |length| length.min(cap));
        let field = with.pointer_mut(&format!("/properties/metadata/properties/{name}")).and_then(Value::as_object_mut);
        if let Some(field) = field {
            field.insert("maxLength".into(), max.into());
        }
    }
    Cow::Owned(with)
}

/// An object's sizes: a map's by its values', or an object's fields'.
fn object(node: &Value) -> Option<NodeSizes> {
    if let Some(additional) = schema::additional_properties(node) {
        let values = NodeSizes::of(additional, schema::embedded(additional))?;
        let max = bound(node, "maxProperties").unwrap_or((MAX_REQUEST_SIZE - 2) / (values.min_serialized_size + 6));
        let key = NodeSizes::simple(0, 2);
        return Some(NodeSizes {
            element: Some(Box::new(values)),
            key: Some(Box::new(key)),
            ..NodeSizes::simple(max, 2)
        });
    }
    let required: Vec<&str> =
        node.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut sizes = NodeSizes::simple(0, 2);
    for (name, property) in schema::properties(node).into_iter().flatten() {
        let Some(field) = NodeSizes::of(property, schema::embedded(property)) else { continue };
        let defaulted = property.get("default").is_some_and(|d| !d.is_null());
        if required.contains(&name.as_str()) && !defaulted {
            sizes.min_serialized_size += name.len() as i64 + field.min_serialized_size + 4;
        }
        if let Some(escaped) = escape(name) {
            sizes.fields.insert(escaped, field);
        }
    }
    Some(sizes)
}

/// A string's sizes, by its format, `maxLength` or `enum`.
fn string(node: &Value) -> NodeSizes {
    match schema::format_of(node) {
        "byte" => NodeSizes::simple(max_length(node).unwrap_or(MAX_REQUEST_SIZE - 2), 2),
        "duration" => NodeSizes::simple(MAX_DURATION_SIZE, 3),
        "date" => NodeSizes::simple(DATE_SIZE, DATE_SIZE),
        "date-time" => NodeSizes::simple(MAX_DATETIME_SIZE, 21),
        _ => {
            let values = node.get("enum").and_then(Value::as_array).filter(|values| !values.is_empty());
            let longest = values.map(|v| v.iter().filter_map(Value::as_str).map(|s| s.len() as i64).max().unwrap_or(0));
            let max = match (max_length(node), longest) {
                (Some(length), _) => length * 4,
                (None, Some(longest)) => longest,
                (None, None) => MAX_REQUEST_SIZE - 2,
            };
            NodeSizes::simple(max, 2)
        }
    }
}

/// `maxLength`, not below 0.
fn max_length(node: &Value) -> Option<i64> {
    bound(node, "maxLength")
}

/// A bound of the node (`maxItems`), not below 0.
fn bound(node: &Value, name: &str) -> Option<i64> {
    let value = node.get(name)?;
    let n = value.as_i64().or_else(|| value.as_u64().map(|_| i64::MAX)).or_else(|| value.as_f64().map(|f| f as i64))?;
    Some(n.max(0))
}

impl Sizes for NodeSizes {
    /// The size at `path` from the node (its first element, the variable, skipped).
    fn size(&self, path: &[Arc<str>]) -> Option<Estimate> {
        let mut node = self;
        for name in path.iter().skip(1) {
            node = match &**name {
                "@items" | "@values" => node.element.as_deref()?,
                "@keys" => node.key.as_deref()?,
                field => node.fields.get(field)?,
            };
        }
        Some(Estimate::new(0, u64::try_from(node.max_elements).unwrap_or(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn size(sizes: &NodeSizes, path: &[&str]) -> Option<u64> {
        let path: Vec<Arc<str>> = path.iter().map(|p| Arc::from(*p)).collect();
        sizes.size(&path).map(|e| e.max)
    }

    #[test]
    fn strings_are_bound_by_their_length_format_or_the_request() {
        let node = json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": "string", "maxLength": 10}, "b": {"type": "string"},
            "c": {"type": "string", "enum": ["x", "abcd"]}, "d": {"type": "string", "format": "date-time"},
            "e": {"type": "string", "format": "byte", "maxLength": 10}, "f": {"x-kubernetes-int-or-string": true},
            "g": {"type": "string", "format": "duration", "maxLength": 3}, "h": {"type": "integer"}}});
        let sizes = NodeSizes::of(&node, false).unwrap();
        assert_eq!(size(&sizes, &["self", "a"]), Some(40));
        assert_eq!(size(&sizes, &["self", "b"]), Some(3_145_726));
        assert_eq!(size(&sizes, &["self", "c"]), Some(4));
        assert_eq!(size(&sizes, &["self", "d"]), Some(32));
        assert_eq!(size(&sizes, &["self", "e"]), Some(10));
        assert_eq!(size(&sizes, &["self", "f"]), Some(3_145_726));
        assert_eq!(size(&sizes, &["self", "g"]), Some(32));
        assert_eq!(size(&sizes, &["self", "h"]), Some(0));
        assert_eq!(size(&sizes, &["self", "z"]), None);
        assert_eq!(sizes.min_serialized_size, 2 + 1 + 2 + 4, "the required a: \"\"");
    }

    #[test]
    fn a_resource_roots_names_are_bound_unless_its_schema_declares_them() {
        let root = json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 10}, "generateName": {"type": "string"}}}}});
        let sizes = NodeSizes::of(&root, true).unwrap();
        assert_eq!(size(&sizes, &["self", "metadata", "name"]), Some(40));
        assert_eq!(size(&sizes, &["self", "metadata", "generateName"]), Some(1008));
        assert_eq!(size(&sizes, &["self", "kind"]), Some(3_145_726));
        let declared = json!({"type": "object", "properties": {"kind": {"type": "string"},
            "apiVersion": {"type": "string"}, "metadata": root["properties"]["metadata"]}});
        let sizes = NodeSizes::of(&declared, true).unwrap();
        assert_eq!(size(&sizes, &["self", "metadata", "generateName"]), Some(3_145_726));
    }

    #[test]
    fn lists_and_maps_are_bound_by_their_limits_or_their_smallest_entries() {
        let node = json!({"type": "object", "properties": {
            "l": {"type": "array", "items": {"type": "string"}},
            "m": {"type": "array", "maxItems": 5, "items": {"type": "integer"}},
            "n": {"type": "object", "additionalProperties": {"type": "boolean"}}}});
        let sizes = NodeSizes::of(&node, false).unwrap();
        assert_eq!(size(&sizes, &["self", "l"]), Some((3_145_728 - 2) / 3));
        assert_eq!(size(&sizes, &["self", "l", "@items"]), Some(3_145_726));
        assert_eq!(size(&sizes, &["self", "m"]), Some(5));
        assert_eq!(size(&sizes, &["self", "n"]), Some((3_145_728 - 2) / 10));
        assert_eq!(size(&sizes, &["self", "n", "@keys"]), Some(0));
        assert_eq!(size(&sizes, &["self", "n", "@values"]), Some(0));
        assert_eq!(sizes.max_cardinality(), 3_145_728 / 3);
    }
}
