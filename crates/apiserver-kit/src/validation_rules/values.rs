//! An object's JSON as the CEL value its schema makes it (k8s.io/apiserver's
//! `UnstructuredToVal`): `number` nodes are doubles even when written as integers, strings of
//! the `duration`, `date`, `date-time` and `byte` formats are durations, timestamps and bytes,
//! objects with properties are maps of their declared properties under their CEL identifiers
//! (a `null` property is absent, an undeclared one unseen), other objects maps of their
//! entries, and what has no type (int-or-string, preserved fields) is read as JSON is.
//!
//! Kubernetes converts lazily and leaves a malformed value as an error that only a rule reading
//! it meets; this conversion is eager, and a value its format cannot read stays a string.

use super::escape::escape;
use super::schema;
use crate::cel::list_types::{ListKind, MapKeys};
use crate::cel::{Map, Program, Value, evaluate};
use base64::Engine;
use serde_json::Value as Json;
use std::sync::{Arc, LazyLock};

/// The CEL value of `data` under `node`.
pub fn to_value(data: &Json, node: &Json) -> Value {
    if data.is_null() {
        return Value::Null;
    }
    if schema::int_or_string(node) {
        return Value::from_json(data);
    }
    match (schema::type_of(node), data) {
        ("object", Json::Object(map)) => object(map, node),
        ("array", Json::Array(items)) => match schema::items(node) {
            Some(items_schema) => list(items.iter().map(|item| to_value(item, items_schema)).collect(), node),
            None => Value::from_json(data),
        },
        ("string", Json::String(text)) => formatted(text, schema::format_of(node)),
        ("number", Json::Number(number)) => Value::Double(number.as_f64().unwrap_or(f64::NAN)),
        ("integer", Json::Number(number)) => match number.as_i64() {
            Some(i) => Value::Int(i),
            // A whole float (`12.0`), which the schema accepts as an integer.
            None => number
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map_or_else(|| Value::from_json(data), |f| Value::Int(f as i64)),
        },
        _ => Value::from_json(data),
    }
}

/// An object: its declared properties (an embedded resource's type and name fields too), or
/// its entries under additionalProperties, or nothing.
fn object(map: &serde_json::Map<String, Json>, node: &Json) -> Value {
    let with_meta;
    let node = if schema::embedded(node) {
        with_meta = schema::with_type_and_object_meta(node);
        &*with_meta
    } else {
        node
    };
    let entries: Vec<(Value, Value)> = if let Some(properties) = schema::properties(node) {
        let declared = map.iter().filter(|(_, v)| !v.is_null());
        let declared = declared.filter_map(|(k, v)| Some((k, v, properties.get(k)?)));
        declared.map(|(k, v, s)| (Value::string(&escape(k).unwrap_or_else(|| k.clone())), to_value(v, s))).collect()
    } else if let Some(additional) = schema::additional_properties(node) {
        map.iter().map(|(k, v)| (Value::string(k), to_value(v, additional))).collect()
    } else {
        Vec::new()
    };
    // String keys, unique (escaping keeps them apart).
    Value::Map(Arc::new(Map::native(entries)))
}

/// A list of its schema's `x-kubernetes-list-type`, which `==` and `+` follow.
fn list(items: Vec<Value>, node: &Json) -> Value {
    let kind = match schema::list_type(node) {
        "set" => ListKind::Set,
        "map" => {
            let keys = schema::list_map_keys(node).into_iter();
            let keys = keys.map(|key| (key.to_string(), escape(key).unwrap_or_else(|| key.to_string())));
            ListKind::Map(Arc::new(MapKeys::decoded(keys.collect())))
        }
        _ => ListKind::Atomic,
    };
    Value::kind_list(items, kind)
}

/// A string of `format`: a duration, a timestamp, bytes, or the string itself.
fn formatted(text: &str, format: &str) -> Value {
    let converted = match format {
        "duration" => convert(&DURATION, text),
        "date-time" => convert(&TIMESTAMP, text),
        "date" => convert(&TIMESTAMP, &format!("{text}T00:00:00Z")).filter(|_| text.len() == 10),
        "byte" => base64::engine::general_purpose::STANDARD.decode(text).ok().map(|b| Value::Bytes(Arc::from(b))),
        _ => None,
    };
    converted.unwrap_or_else(|| Value::string(text))
}

/// CEL's own conversions of a string, as cel-go parses durations (Go's `time.ParseDuration`)
/// and timestamps (RFC 3339), which is how the apiserver reads these formats.
static DURATION: LazyLock<Option<Program>> = LazyLock::new(|| conversion("duration"));
static TIMESTAMP: LazyLock<Option<Program>> = LazyLock::new(|| conversion("timestamp"));

fn conversion(function: &str) -> Option<Program> {
    Program::compile_declared(
        &format!("{function}(text)"),
        &crate::cel::Declarations::new().with_variable("text", crate::cel::CelType::String),
    )
    .ok()
}

fn convert(program: &Option<Program>, text: &str) -> Option<Value> {
    let program = program.as_ref()?;
    evaluate(program, &[("text", Value::string(text))], u64::MAX).value.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tagged(data: Json, node: Json) -> Json {
        to_value(&data, &node).to_tagged_json()
    }

    #[test]
    fn numbers_follow_the_schema() {
        assert_eq!(tagged(json!(3), json!({"type": "number"})), json!({"double": 3.0}));
        assert_eq!(tagged(json!(3), json!({"type": "integer"})), json!({"int": "3"}));
        assert_eq!(tagged(json!(3.0), json!({"type": "integer"})), json!({"int": "3"}));
        assert_eq!(tagged(json!(3), json!({"x-kubernetes-int-or-string": true})), json!({"int": "3"}));
        assert_eq!(tagged(json!("3%"), json!({"x-kubernetes-int-or-string": true})), json!({"string": "3%"}));
    }

    #[test]
    fn formatted_strings_are_durations_timestamps_and_bytes() {
        let string = |format: &str| json!({"type": "string", "format": format});
        assert_eq!(tagged(json!("1h30m"), string("duration")), json!({"duration": "1h30m0s"}));
        let at = tagged(json!("2024-01-02T03:04:05+01:00"), string("date-time"));
        assert_eq!(at, json!({"timestamp": "2024-01-02T02:04:05Z"}));
        assert_eq!(tagged(json!("2024-01-02"), string("date")), json!({"timestamp": "2024-01-02T00:00:00Z"}));
        assert_eq!(tagged(json!("aGk="), string("byte")), json!({"bytes": "aGk="}));
        assert_eq!(tagged(json!("soon"), string("duration")), json!({"string": "soon"}), "unreadable: kept");
    }

    #[test]
    fn objects_show_their_declared_properties_under_their_identifiers() {
        let node = json!({"type": "object", "properties": {"a-b": {"type": "number"}, "n": {"type": "string"}}});
        let value = tagged(json!({"a-b": 1, "n": null, "x": 2}), node);
        assert_eq!(value, json!({"map": [[{"string": "a__dash__b"}, {"double": 1.0}]]}));
        let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        assert_eq!(tagged(json!({"a-b": 1}), map), json!({"map": [[{"string": "a-b"}, {"int": "1"}]]}));
        let embedded = json!({"type": "object", "x-kubernetes-embedded-resource": true});
        let value = tagged(json!({"kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}}), embedded);
        let expected = json!({"map": [[{"string": "kind"}, {"string": "Pod"}],
            [{"string": "metadata"}, {"map": [[{"string": "name"}, {"string": "p"}]]}]]});
        assert_eq!(value, expected);
    }
}
