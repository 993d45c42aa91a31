//! What structured-merge-diff refuses in a value before it merges it, for MutatingAdmissionPolicy's
//! apply configurations: fields the schema does not declare (its `typed` validation, one error
//! per object: it stops at the first), and values that would replace an atomic list or map
//! whole (k8s.io/apiserver's `findAtomics`). Paths are written as structured-merge-diff writes
//! them (`.spec.tags`, `.spec.items[0].name`).

use super::shape::{ListKind, Schema, Shape, field_schema, shape};
use super::typed::entry_element;
use serde_json::Value;

/// The errors of `value` against `schema`, as `ValidationErrors.Error()` joins them; `None`
/// when it has none.
pub fn undeclared_fields(value: &Value, schema: &Schema) -> Option<String> {
    let mut errors = Vec::new();
    walk_undeclared(value, Some(schema), &mut String::new(), &mut errors);
    match errors.len() {
        0 => None,
        1 => errors.pop(),
        _ => Some(
            std::iter::once("errors:".to_string())
                .chain(errors.iter().map(|e| format!("  {e}")))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

fn walk_undeclared(value: &Value, schema: Option<&Schema>, path: &mut String, errors: &mut Vec<String>) {
    match (shape(schema, value), value) {
        (Shape::Object { fields, extra, closed, .. }, Value::Object(map)) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let known = field_schema(fields, extra, key);
                let length = path.len();
                path.push('.');
                path.push_str(key);
                if closed && known.is_none() {
                    errors.push(format!("{path}: field not declared in schema"));
                    path.truncate(length);
                    return;
                }
                walk_undeclared(&map[key], known, path, errors);
                path.truncate(length);
            }
        }
        (Shape::List { items, kind }, Value::Array(entries)) => {
            for (index, entry) in entries.iter().enumerate() {
                let length = path.len();
                // Entries of associative lists are named by their key, as the validation names them.
                match entry_element(kind, entry) {
                    Some(element) => path.push_str(&element.to_string()),
                    None => path.push_str(&format!("[{index}]")),
                }
                walk_undeclared(entry, items, path, errors);
                path.truncate(length);
            }
        }
        _ => {}
    }
}

/// The paths in `value` of the atomic maps and lists it sets (`findAtomics`), in the order it
/// walks them.
pub fn atomics(value: &Value, schema: &Schema) -> Vec<String> {
    let mut found = Vec::new();
    walk_atomics(value, Some(schema), &mut String::new(), &mut found);
    found
}

fn walk_atomics(value: &Value, schema: Option<&Schema>, path: &mut String, found: &mut Vec<String>) {
    match (shape(schema, value), value) {
        (Shape::Object { fields, extra, atomic, .. }, Value::Object(map)) => {
            if atomic {
                found.push(path.clone());
            }
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                // Like findAtomics, only declared fields (or those of `additionalProperties`).
                let Some(known) = field_schema(fields, extra, key) else { continue };
                let length = path.len();
                path.push('.');
                path.push_str(key);
                walk_atomics(&map[key], Some(known), path, found);
                path.truncate(length);
            }
        }
        (Shape::List { items, kind }, Value::Array(entries)) => {
            if *kind == ListKind::Atomic {
                found.push(path.clone());
            }
            for (index, entry) in entries.iter().enumerate() {
                let length = path.len();
                path.push_str(&format!("[{index}]"));
                walk_atomics(entry, items, path, found);
                path.truncate(length);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::compile(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "weight": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "toys": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "owner": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"name": {"type": "string"}}},
            }},
        }}))
    }

    /// Keys are walked in order (Go walks a map in any order); like Go, the walk of an object
    /// stops at its first undeclared key.
    #[test]
    fn undeclared_fields_are_named_with_their_path() {
        let schema = schema();
        assert_eq!(undeclared_fields(&json!({"spec": {"weight": 1, "labels": {"a": "b"}}}), &schema), None);
        assert_eq!(
            undeclared_fields(&json!({"spec": {"colour": "red"}}), &schema).as_deref(),
            Some(".spec.colour: field not declared in schema")
        );
        assert_eq!(
            undeclared_fields(&json!({"spec": {"toys": [{"name": "x", "size": 1}]}, "zebra": 1}), &schema).as_deref(),
            Some(
                "errors:\n  .spec.toys[name=\"x\"].size: field not declared in schema\n  .zebra: field not declared in schema"
            )
        );
    }

    #[test]
    fn atomic_lists_and_maps_are_found() {
        let schema = schema();
        let value = json!({"spec": {"tags": ["a"], "toys": [{"name": "x"}], "owner": {"name": "n"}, "weight": 2}});
        assert_eq!(atomics(&value, &schema), [".spec.owner", ".spec.tags"]);
        assert!(atomics(&json!({"spec": {"labels": {"a": "b"}}}), &schema).is_empty());
    }
}
