//! Validation of a JSON value against a resource's published schema (the inlined schemas of
//! [`super::resource::body_schema`]), with the rules and words of the kube-apiserver's validation
//! of a custom resource (`k8s.io/kube-openapi/pkg/validation` and apiextensions' list checks):
//! JSON types, required properties, `minimum`/`maximum`, `enum`, `pattern`, `minLength`/`maxLength`,
//! `minItems`/`maxItems`, and unique entries in lists of `x-kubernetes-list-type` `set` and `map` (keyed by
//! `x-kubernetes-list-map-keys`). Every error is collected, with its field path.

use super::error::FieldError;
use parking_lot::RwLock;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// The JSON type of `value` as schemas name it (`integer` for whole numbers).
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks `value`, found at `path`, against `schema`, recursively, adding every problem to
/// `errors`.
pub fn check(path: &str, value: &Value, schema: &Value, errors: &mut Vec<FieldError>) {
    if value.is_null() {
        // As for CRDs, null in a field that is not nullable is treated as unset.
        return;
    }
    if let Some(error) = type_error(path, value, schema) {
        errors.push(error);
        // The enum is checked on its own, as kube-openapi's validators each report, and so are
        // the bounds of a number in a field of the other numeric type (a fraction where an
        // integer is wanted): its number validator applies to any number.
        enumerated(path, value, schema, errors);
        let numeric = schema.get("type").and_then(Value::as_str).is_some_and(|t| t == "integer" || t == "number");
        if value.is_number() && numeric {
            bounds(path, value, schema, errors);
        }
        return;
    }
    enumerated(path, value, schema, errors);
    match value {
        Value::Number(_) => bounds(path, value, schema, errors),
        Value::String(text) => string(path, text, schema, errors),
        Value::Object(map) => object(path, map, schema, errors),
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check(&format!("{path}[{i}]"), v, s, errors);
                }
            }
            item_count(path, items.len(), schema, errors);
            unique_entries(path, items, schema, errors);
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// The JSON type and format kube-openapi infers for a decoded `value` (the apiserver decodes a
/// number into an int64 when it fits, else a float64).
fn inferred_type(value: &Value) -> (&'static str, &'static str) {
    match value {
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        other => (json_type(other), ""),
    }
}

/// The error of `value`, found at `path`, when its JSON type is not the one `schema` names, as
/// kube-openapi's type validator words it: against a schema with a `format`, a value neither a
/// string nor a list is checked by its format too ("must be of type double: \"\"" for a
/// boolean), and a string or list passes a non-numeric schema with a format.
fn type_error(path: &str, value: &Value, schema: &Value) -> Option<FieldError> {
    let expected = schema.get("type").and_then(Value::as_str)?;
    let wanted_format = schema.get("format").and_then(Value::as_str).unwrap_or_default();
    let (actual, format) = inferred_type(value);
    let numeric_schema = matches!(expected, "number" | "integer");
    // A whole float is an integer too (kube-openapi's `IsFloat64AJSONInteger`: `12.0`).
    let float_int = actual == "number" && expected == "integer" && value.as_f64().is_some_and(super::number::is_whole);
    let int_float = actual == "integer" && expected == "number";
    let type_fits = expected == actual || float_int || int_float;
    let listish = value.is_string() || value.is_array();
    let lower = (wanted_format == "int64" && format == "int32") || (wanted_format == "float64" && format == "float32");
    let refuse = |expected: &str, actual: &str| {
        let detail = format!("{path} in body must be of type {expected}: \"{actual}\"");
        Some(FieldError::type_invalid(path, &Value::String(actual.to_string()), detail))
    };
    let format_fits = wanted_format.is_empty() || type_fits || format == wanted_format || lower;
    if !listish && !format_fits {
        return refuse(wanted_format, format);
    }
    if !numeric_schema && !wanted_format.is_empty() && listish {
        return None;
    }
    if !type_fits {
        return refuse(expected, actual);
    }
    None
}

/// Adds to `out` the path of each field of `value` (found at `path`) that `schema` does not
/// declare, as a custom resource's pruning names them (`status.height`, `spec.zones[0].x`): a
/// field of an object with `properties` that are not its own, where neither
/// `additionalProperties` nor `x-kubernetes-preserve-unknown-fields` keeps it.
pub fn unknown_fields(path: &str, value: &Value, schema: &Value, out: &mut Vec<String>) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    let declares = schema.get("properties").is_some();
    children(path, value, schema, |at, v, s| match s {
        Some(s) => unknown_fields(&at, v, s, out),
        None if declares => out.push(at),
        None => {}
    });
}

/// Calls `visit` with each member of an object or item of a list in `value` (found at `path`):
/// its path, and the schema `schema` gives it (a property's, else an object
/// `additionalProperties`; for an item, `items`), or `None` for a member it gives none. Items of a
/// list without `items` are not visited.
fn children<'v, 's>(
    path: &str,
    value: &'v Value,
    schema: &'s Value,
    mut visit: impl FnMut(String, &'v Value, Option<&'s Value>),
) {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, v) in map {
                visit(format!("{path}.{key}"), v, properties.and_then(|p| p.get(key)).or(additional));
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    visit(format!("{path}[{i}]"), v, Some(s));
                }
            }
        }
        _ => {}
    }
}

/// Checks only the kinds of `value`, found at `path`, against `schema`, recursively, as
/// structured-merge-diff types an apply configuration before it looks for conflicts: an object,
/// a list, a string, a boolean or a number (an integer and a fraction are both numbers there; a
/// fraction where an integer is due is the later validation's to refuse). No required fields,
/// bounds or formats: a configuration is partial. Each error is [`check`]'s for the same field.
pub fn check_types(path: &str, value: &Value, schema: &Value, errors: &mut Vec<FieldError>) {
    if value.is_null() {
        return;
    }
    let numeric = |t: Option<&str>| matches!(t, Some("integer" | "number"));
    if numeric(schema.get("type").and_then(Value::as_str)) && value.is_number() {
        return;
    }
    if let Some(error) = type_error(path, value, schema) {
        errors.push(error);
        return;
    }
    children(path, value, schema, |at, v, s| {
        if let Some(s) = s {
            check_types(&at, v, s, errors);
        }
    });
}

fn object(path: &str, map: &serde_json::Map<String, Value>, schema: &Value, errors: &mut Vec<FieldError>) {
    for name in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
        if let Some(name) = name.as_str()
            && map.get(name).is_none_or(Value::is_null)
        {
            errors.push(FieldError::required(format!("{path}.{name}"), ""));
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    for (key, v) in map {
        let child = format!("{path}.{key}");
        if let Some(s) = properties.and_then(|p| p.get(key)) {
            check(&child, v, s, errors);
        } else if let Some(s) = additional {
            check(&child, v, s, errors);
        }
    }
}

/// Checks a number against the schema's `minimum`/`maximum` (with OpenAPI v2/v3.0 boolean
/// `exclusiveMinimum`/`exclusiveMaximum`).
fn bounds(path: &str, value: &Value, schema: &Value, errors: &mut Vec<FieldError>) {
    let Some(n) = value.as_f64() else { return };
    let exclusive = |key: &str| schema.get(key).and_then(Value::as_bool).unwrap_or(false);
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        let (bad, words) = if exclusive("exclusiveMinimum") {
            (n <= min, "greater than")
        } else {
            (n < min, "greater than or equal to")
        };
        if bad {
            let bound = FieldError::invalid("", &schema["minimum"], "").value.unwrap_or_default();
            errors.push(FieldError::invalid(path, value, format!("{path} in body should be {words} {bound}")));
        }
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        let (bad, words) =
            if exclusive("exclusiveMaximum") { (n >= max, "less than") } else { (n > max, "less than or equal to") };
        if bad {
            let bound = FieldError::invalid("", &schema["maximum"], "").value.unwrap_or_default();
            errors.push(FieldError::invalid(path, value, format!("{path} in body should be {words} {bound}")));
        }
    }
}

/// Checks a list's length against the schema's `minItems` and `maxItems`.
fn item_count(path: &str, count: usize, schema: &Value, errors: &mut Vec<FieldError>) {
    let count = count as u64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && count < min
    {
        let message = format!("{path} in body should have at least {min} items");
        errors.push(FieldError::invalid(path, &Value::from(count), message));
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && count > max
    {
        let message = format!("{path} in body should have at most {max} items");
        errors.push(FieldError::invalid(path, &Value::from(count), message));
    }
}

/// Checks a value of any type against the schema's `enum`.
fn enumerated(path: &str, value: &Value, schema: &Value, errors: &mut Vec<FieldError>) {
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let names: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        errors.push(FieldError::not_supported(path, value, &names));
    }
}

/// Checks a string against the schema's `minLength`, `maxLength` (in characters) and `pattern`.
fn string(path: &str, text: &str, schema: &Value, errors: &mut Vec<FieldError>) {
    let value = Value::String(text.to_string());
    let length = text.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && length < min
    {
        errors.push(FieldError::invalid(path, &value, format!("{path} in body should be at least {min} chars long")));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && length > max
    {
        errors.push(FieldError::too_long(path, max as usize));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && compiled(pattern).is_some_and(|re| !re.is_match(text))
    {
        errors.push(FieldError::invalid(path, &value, format!("{path} in body should match '{pattern}'")));
    }
}

/// The compiled `pattern`, kept: patterns come from the server's own schemas, so the cache is
/// bounded by them. A pattern that does not compile checks nothing (a test keeps them valid).
fn compiled(pattern: &str) -> Option<Arc<regex::Regex>> {
    type Patterns = RwLock<HashMap<String, Option<Arc<regex::Regex>>>>;
    static PATTERNS: LazyLock<Patterns> = LazyLock::new(Patterns::default);
    if let Some(re) = PATTERNS.read().get(pattern) {
        return re.clone();
    }
    let re = regex::Regex::new(pattern).ok().map(Arc::new);
    PATTERNS.write().entry(pattern.to_string()).or_insert(re).clone()
}

/// Entries of a `set` list must differ; entries of a `map` list must differ in their keys.
fn unique_entries(path: &str, items: &[Value], schema: &Value, errors: &mut Vec<FieldError>) {
    let keys: Vec<&str> = match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default(),
        Some("set") => Vec::new(),
        _ => return,
    };
    let mut seen = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let shown = if keys.is_empty() { go_value(item) } else { go_key(item, &keys) };
        if !seen.insert(shown.clone()) {
            errors.push(FieldError::duplicate(format!("{path}[{i}]"), shown));
        }
    }
}

/// A map entry's key fields as Go's `%#v` prints them: `map[string]interface {}{"type":"Ready"}`.
fn go_key(item: &Value, keys: &[&str]) -> String {
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    let fields: Vec<String> =
        sorted.iter().filter_map(|k| Some(format!("{k:?}:{}", go_value(item.get(*k)?)))).collect();
    format!("map[string]interface {{}}{{{}}}", fields.join(", "))
}

/// A scalar as Go's `%#v` prints it (strings quoted); anything else as JSON.
fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(value: Value, schema: Value) -> Vec<String> {
        let mut errors = Vec::new();
        check("f", &value, &schema, &mut errors);
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_whole_float_is_an_integer_as_for_a_custom_resource() {
        let integer = json!({"type": "integer"});
        assert!(errors(json!(12.0), integer.clone()).is_empty());
        assert!(errors(json!(-3.0), integer.clone()).is_empty());
        assert_eq!(
            errors(json!(12.5), integer.clone()),
            ["f: Invalid value: \"number\": f in body must be of type integer: \"number\""]
        );
        assert_eq!(errors(json!(1e300), integer).len(), 1, "beyond what a JSON integer says exactly");
    }

    #[test]
    fn a_fraction_in_an_integer_field_is_also_checked_against_its_bounds() {
        let capacity = json!({"type": "integer", "format": "int64", "minimum": 1});
        assert_eq!(
            errors(json!(-0.5), capacity.clone()),
            [
                "f: Invalid value: \"float64\": f in body must be of type int64: \"float64\"",
                "f: Invalid value: -0.5: f in body should be greater than or equal to 1",
            ]
        );
        assert_eq!(errors(json!("x"), capacity).len(), 1, "a string is no number: its bounds are not checked");
    }

    #[test]
    fn a_value_of_the_wrong_type_is_also_checked_against_the_enum() {
        let schema = json!({"type": "string", "enum": ["Solid", "Spotted"]});
        let mut errors = Vec::new();
        check("spec.coat.pattern", &json!(3), &schema, &mut errors);
        let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "spec.coat.pattern: Invalid value: \"integer\": spec.coat.pattern in body must be of type string: \"integer\"",
                "spec.coat.pattern: Unsupported value: 3: supported values: \"Solid\", \"Spotted\"",
            ]
        );
    }

    #[test]
    fn strings_meet_enum_length_and_pattern() {
        let schema = json!({"type": "string", "enum": ["True", "False"], "maxLength": 4, "pattern": "^T"});
        assert!(errors(json!("True"), schema.clone()).is_empty());
        assert_eq!(
            errors(json!("Maybe"), schema),
            [
                "f: Unsupported value: \"Maybe\": supported values: \"True\", \"False\"",
                "f: Too long: must have at most 4 bytes",
                "f: Invalid value: \"Maybe\": f in body should match '^T'",
            ]
        );
        let short = json!({"type": "string", "minLength": 1});
        assert_eq!(errors(json!(""), short), ["f: Invalid value: \"\": f in body should be at least 1 chars long"]);
    }

    #[test]
    fn map_lists_are_keyed_and_sets_unique() {
        let map = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]});
        let twice = json!([{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}]);
        assert_eq!(errors(twice, map), ["f[1]: Duplicate value: map[string]interface {}{\"type\":\"Ready\"}"]);
        let set = json!({"type": "array", "x-kubernetes-list-type": "set"});
        assert_eq!(errors(json!(["a", "b", "a"]), set.clone()), ["f[2]: Duplicate value: \"a\""]);
        assert!(errors(json!(["a", "b"]), set).is_empty());
        assert!(errors(json!([1, 1]), json!({"type": "array"})).is_empty(), "atomic lists may repeat");
    }

    #[test]
    fn lists_meet_min_and_max_items() {
        let schema = json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2});
        assert_eq!(errors(json!([]), schema.clone()), ["f: Invalid value: 0: f in body should have at least 1 items"]);
        assert_eq!(
            errors(json!(["a", 1, "c"]), schema.clone()),
            [
                "f[1]: Invalid value: \"integer\": f[1] in body must be of type string: \"integer\"",
                "f: Invalid value: 3: f in body should have at most 2 items",
            ]
        );
        assert!(errors(json!(["a"]), schema).is_empty());
    }

    #[test]
    fn a_partial_object_is_checked_for_the_kinds_structured_merge_diff_types() {
        let schema = json!({"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1}, "name": {"type": "string"},
            "zones": {"type": "array", "items": {"type": "string"}}}});
        let kinds = |value: Value| {
            let mut errors = Vec::new();
            check_types("spec", &value, &schema, &mut errors);
            errors.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        assert!(kinds(json!({"size": -0.5})).is_empty(), "a number where an integer is due is numeric");
        assert!(kinds(json!({"zones": ["a"]})).is_empty(), "nothing is required of a partial object");
        assert_eq!(
            kinds(json!({"size": "big", "zones": [1], "name": null})),
            [
                r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#,
                r#"spec.zones[0]: Invalid value: "integer": spec.zones[0] in body must be of type string: "integer""#,
            ]
        );
        assert_eq!(kinds(json!(7)).len(), 1);
    }

    #[test]
    fn nested_errors_carry_their_paths() {
        let schema = json!({"type": "object", "required": ["a"], "properties": {"b": {"type": "array", "items": {"type": "integer", "minimum": 0}}}});
        assert_eq!(
            errors(json!({"b": [1, -1, "x"]}), schema),
            [
                "f.a: Required value",
                "f.b[1]: Invalid value: -1: f.b[1] in body should be greater than or equal to 0",
                "f.b[2]: Invalid value: \"string\": f.b[2] in body must be of type integer: \"string\"",
            ]
        );
    }
}
