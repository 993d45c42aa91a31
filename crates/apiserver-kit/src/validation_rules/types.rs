//! The CEL type of a schema node, as k8s.io/apiserver's `SchemaDeclType` declares it for the
//! type checker: objects with properties are object types (their fields the properties that
//! have a type and an identifier), maps (`additionalProperties`) `map(string, T)`, arrays
//! `list(T)`, `number` `double`, `integer` `int`, strings `string` unless their format is
//! `byte` (`bytes`), `duration` or `date`/`date-time` (`timestamp`); int-or-string is `dyn`. A
//! node without a type (preserved unknown fields) has none, and neither has what holds only
//! such nodes.
//!
//! Object types are named as `MaybeAssignTypeName` names them: the node's own type by the name
//! given (Kubernetes makes a fresh `selfType…` for every node with rules), each field's object
//! type by its path from there (`selfType0.spec`); objects in lists and maps are `object`.

use super::escape::escape;
use super::schema;
use crate::cel::{CelType, ObjectType};
use serde_json::Value;
use std::sync::Arc;

/// The type of `node`, an object type named `name`; `resource_root` for the root of a resource
/// or an embedded one (whose `apiVersion`, `kind` and metadata names are declared).
pub fn decl_type(node: &Value, resource_root: bool, name: Option<&str>) -> Option<CelType> {
    if schema::int_or_string(node) {
        return Some(CelType::Dyn);
    }
    let with_meta;
    let node = if resource_root {
        with_meta = schema::with_type_and_object_meta(node);
        &*with_meta
    } else {
        node
    };
    match schema::type_of(node) {
        "array" => {
            let items = schema::items(node)?;
            Some(CelType::list(decl_type(items, schema::embedded(items), None)?))
        }
        "object" => object_type(node, name),
        "string" => Some(match schema::format_of(node) {
            "byte" => CelType::Bytes,
            "duration" => CelType::Duration,
            "date" | "date-time" => CelType::Timestamp,
            _ => CelType::String,
        }),
        "boolean" => Some(CelType::Bool),
        "number" => Some(CelType::Double),
        "integer" => Some(CelType::Int),
        _ => None,
    }
}

/// An object node's type: a map of its additionalProperties' type, or an object of its fields.
fn object_type(node: &Value, name: Option<&str>) -> Option<CelType> {
    if let Some(additional) = schema::additional_properties(node) {
        let values = decl_type(additional, schema::embedded(additional), None)?;
        return Some(CelType::map(CelType::String, values));
    }
    let name = name.unwrap_or("object");
    let fields = schema::properties(node).into_iter().flatten().filter_map(|(property, schema)| {
        let field = escape(property)?;
        let child = format!("{name}.{field}");
        let named = (name != "object").then_some(child.as_str());
        Some((field, decl_type(schema, schema::embedded(schema), named)?))
    });
    Some(CelType::Object(Arc::new(ObjectType::new(name, fields.collect::<Vec<_>>()))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_are_typed_as_kubernetes_types_them() {
        let node = json!({"type": "object", "properties": {
            "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"},
            "d": {"type": "string", "format": "duration"}, "t": {"type": "string", "format": "date-time"},
            "by": {"type": "string", "format": "byte"}, "ios": {"x-kubernetes-int-or-string": true},
            "any": {"x-kubernetes-preserve-unknown-fields": true},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "l": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
            "a-b": {"type": "string"}, "1a": {"type": "string"},
            "o": {"type": "object", "properties": {"p": {"type": "object"}}},
        }});
        let Some(CelType::Object(object)) = decl_type(&node, true, Some("selfType0")) else { panic!() };
        assert_eq!(object.name(), "selfType0");
        let field = |name: &str| object.field(name).map(ToString::to_string);
        assert_eq!(field("n").as_deref(), Some("double"));
        assert_eq!(field("i").as_deref(), Some("int"));
        assert_eq!(field("d").as_deref(), Some("duration"));
        assert_eq!(field("t").as_deref(), Some("timestamp"));
        assert_eq!(field("by").as_deref(), Some("bytes"));
        assert_eq!(field("ios").as_deref(), Some("dyn"));
        assert_eq!(field("any"), None, "no type: not declared");
        assert_eq!(field("m").as_deref(), Some("map(string, string)"));
        assert_eq!(field("l").as_deref(), Some("list(object)"));
        assert_eq!(field("a__dash__b").as_deref(), Some("string"));
        assert_eq!(field("1a"), None, "no identifier");
        assert_eq!(field("o").as_deref(), Some("selfType0.o"));
        assert_eq!(field("metadata").as_deref(), Some("selfType0.metadata"), "a resource's root");
        let Some(CelType::Object(o)) = object.field("o") else { panic!() };
        assert_eq!(o.field("p").map(ToString::to_string).as_deref(), Some("selfType0.o.p"));
    }
}
