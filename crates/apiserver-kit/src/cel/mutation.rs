//! What a MutatingAdmissionPolicy makes of its mutations' values, as k8s.io/apiserver makes
//! it, with its error messages: an `ApplyConfiguration` expression's `Object` as the
//! unstructured object merged into the request's (patch/smd.go, up to the merge), a `JSONPatch`
//! expression's list as the operations of a JSON patch (patch/json_patch.go), and the return
//! types the compiler requires of each (admission/plugin/cel/compile.go). The expressions are
//! compiled with [`Declarations::with_patch_types`](super::Declarations::with_patch_types).
//!
//! Where Go iterates a map (an object's fields, a map's entries), ours go in key order: which
//! of several errors is reported, and the order of `type mismatch` errors joined, varies there.

use super::decls::CelType;
use super::objects::{JSON_PATCH, Native, Object, native};
use super::program::Program;
use super::value::Value;
use serde_json::{Map as JsonMap, Value as Json};
use std::collections::BTreeMap;

/// smd.go's `applyConfigPatcher` up to the merge: the `Object` value `value` as the
/// unstructured object it merges into the request's object.
///
/// A value that is no `Object`, an Object whose nested objects' type names are not their
/// field paths (`Object{spec: Object.status{}}`), or whose fields cannot be converted, is an
/// error worded as there. Then each field is converted as `convertField` converts it, and
/// the Go values structured-merge-diff cannot read as JSON (a `uint64`, bytes, a timestamp,
/// `null` as CEL's `structpb.NullValue`, the CEL values left inside a list CEL built in another,
/// a NaN) are refused here with `<field path>: unsupported value of type <Go type>` (or
/// `unsupported value NaN`), where the merge would refuse them (with its own words, after
/// its schema).
pub fn apply_configuration(value: &Value) -> Result<JsonMap<String, Json>, String> {
    let Value::Object(object) = value else {
        return Err(format!("unsupported return type from ApplyConfiguration expression: {}", runtime_type(value)));
    };
    check_type_names(object)?;
    let fields = object.to_native().map_err(|_| "invalid return type: *dynamic.ObjectVal".to_string())?;
    let mut json = JsonMap::new();
    for (name, field) in fields {
        let converted = unstructured(&format!(".{name}"), &field)?;
        json.insert(name, converted);
    }
    Ok(json)
}

/// json_patch.go's `evaluatePatchExpression` after the evaluation: the list of `JSONPatch`
/// values `value` as the operations of a JSON patch (`op`, `path`, `from` when not empty,
/// `value` when set, converted as cel-go converts a value to `structpb.Value`).
pub fn json_patch(value: &Value) -> Result<Vec<Json>, String> {
    let Value::List(items) = value else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".to_string());
    };
    items.iter().map(operation).collect()
}

/// compile.go's check of an `ApplyConfiguration` expression's type: `Object`.
pub fn check_apply_configuration_type(program: &Program) -> Result<(), String> {
    check_return_type(program, &CelType::Object(std::sync::Arc::new(super::ObjectType::open(super::objects::OBJECT))))
}

/// compile.go's check of a `JSONPatch` expression's type: `list(JSONPatch)`.
pub fn check_json_patch_type(program: &Program) -> Result<(), String> {
    let patch = super::Declarations::new().with_patch_types().object_type(JSON_PATCH);
    check_return_type(program, &CelType::list(patch.map_or(CelType::Dyn, CelType::Object)))
}

/// `must evaluate to T but got U` unless the program's output type is exactly `expected`.
fn check_return_type(program: &Program, expected: &CelType) -> Result<(), String> {
    let output = program.output_type();
    if output.is_exactly(expected) {
        return Ok(());
    }
    Err(format!("must evaluate to {} but got {}", expected.go_string(), output.go_string()))
}

/// One operation of the patch.
fn operation(item: &Value) -> Result<Json, String> {
    let prefix = "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch";
    let patch = match item {
        Value::JsonPatch(patch) => patch,
        Value::Optional(Some(inner)) if matches!(&**inner, Value::JsonPatch(_)) => return operation(inner),
        other => return Err(format!("{prefix}: {}", conversion_error(other, "*mutation.JSONPatchVal"))),
    };
    let mut op = JsonMap::new();
    op.insert("op".to_string(), Json::String(patch.op.clone()));
    op.insert("path".to_string(), Json::String(patch.path.clone()));
    if !patch.from.is_empty() {
        op.insert("from".to_string(), Json::String(patch.from.clone()));
    }
    if let Some(value) = &patch.value {
        if let Value::Object(object) = value {
            check_type_names(object)?;
        }
        let converted = json_value(value)
            .map_err(|e| format!("JSONPath valueExpression evaluated to a type that could not marshal to JSON: {e}"))?;
        op.insert("value".to_string(), converted);
    }
    Ok(Json::Object(op))
}

/// cel-go's error converting `value` to the Go type `to` (`*structpb.Value`, `string`, ...),
/// worded by the type of the value as each of cel-go's types words it.
fn conversion_error(value: &Value, to: &str) -> String {
    match value {
        Value::Int(_) => format!("unsupported type conversion from 'int' to {to}"),
        Value::Uint(_) => format!("unsupported type conversion from 'uint' to {to}"),
        Value::String(_) => format!("unsupported native conversion from string to '{to}'"),
        Value::Double(_) => format!("type conversion error from Double to '{to}'"),
        Value::Bool(_) => format!("type conversion error from bool to '{to}'"),
        Value::Null => format!("type conversion error from 'null_type' to '{to}'"),
        Value::List(_) => format!("type conversion error from list to '{to}'"),
        Value::Bytes(_) => format!("type conversion error from Bytes to '{to}'"),
        Value::Timestamp(..) => format!("type conversion error from 'Timestamp' to '{to}'"),
        Value::Duration(_) => format!("type conversion error from 'Duration' to '{to}'"),
        Value::Type(_) => "type conversion not supported for 'type'".to_string(),
        Value::Optional(None) => "optional.none() dereference".to_string(),
        Value::Optional(Some(inner)) => conversion_error(inner, to),
        Value::JsonPatch(_) => format!("cannot convert to native type: {to}"),
        Value::Object(object) => object.to_native().err().unwrap_or_else(|| format!("unable to convert to {to}")),
        Value::Map(map) => {
            // A map converts to a Go struct field by field, its keys capitalized.
            let key = map.keys().next().map(|k| capitalized(&k.display())).unwrap_or_default();
            format!("type conversion error, no such field '{key}' in type '{}'", to.trim_start_matches('*'))
        }
        Value::Opaque(opaque) => {
            let name = match opaque.type_name() {
                "kubernetes.NamedFormat" => "Format",
                other => other.rsplit('.').next().unwrap_or_default(),
            };
            format!("type conversion error from '{name}' to '{to}'")
        }
    }
}

fn capitalized(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// cel-go's `%v` of a value's runtime type (`ref.Type`, a `*types.Type`'s `String()`).
fn runtime_type(value: &Value) -> String {
    match value {
        Value::List(_) => "list(dyn)".to_string(),
        Value::Map(_) => "map(dyn, dyn)".to_string(),
        Value::Optional(_) => "optional_type(dyn)".to_string(),
        other => other.type_of().name().to_string(),
    }
}

/// `ObjectVal.CheckTypeNamesMatchFieldPathNames`, its errors joined as `errors.Join` joins
/// them, after `type mismatch: `.
fn check_type_names(object: &Object) -> Result<(), String> {
    let mut errors = Vec::new();
    let mut path = vec![object.type_name().to_string()];
    type_check(&Value::Object(std::sync::Arc::new(object.clone())), &mut path, &mut errors);
    if errors.is_empty() {
        return Ok(());
    }
    Err(format!("type mismatch: {}", errors.join("\n")))
}

/// dynamic.go's `typeCheck`: an Object's type name must be the path of field names from the
/// root, through its fields and the lists and maps CEL built (which Go sees as CEL values).
fn type_check(value: &Value, path: &mut Vec<String>, errors: &mut Vec<String>) {
    if let Value::Object(object) = value {
        let expected = path.join(".");
        if object.type_name() != expected {
            errors.push(format!(
                "unexpected type name {:?}, expected {expected:?}, which matches field name path from root Object type",
                object.type_name()
            ));
        }
        for (name, field) in object.fields() {
            path.push(name.to_string());
            type_check(field, path, errors);
            path.pop();
        }
        return;
    }
    match native(value) {
        Native::Cel(Value::List(items)) => items.iter().for_each(|item| type_check(item, path, errors)),
        Native::Cel(Value::Map(map)) => map.entries().for_each(|(_, item)| type_check(item, path, errors)),
        _ => {}
    }
}

/// A Go value of an apply configuration as structured-merge-diff reads it, in JSON.
fn unstructured(path: &str, value: &Native) -> Result<Json, String> {
    Ok(match value {
        Native::Nil => Json::Null,
        Native::Bool(b) => Json::Bool(*b),
        Native::String(s) => Json::String(s.to_string()),
        Native::Int(i) => Json::from(*i),
        Native::Float(f) if f.is_finite() => number(*f),
        Native::Float(f) => return Err(format!("{path}: unsupported value {}", super::format::go_float(*f))),
        Native::List(items) => Json::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| unstructured(&format!("{path}[{i}]"), item))
                .collect::<Result<_, _>>()?,
        ),
        Native::Map(fields) => Json::Object(
            fields
                .iter()
                .map(|(k, v)| Ok((k.clone(), unstructured(&format!("{path}.{k}"), v)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => return Err(format!("{path}: unsupported value of type {}", other.go_type())),
    })
}

/// A JSON number of a double: integral ones written as integers, as Go's JSON writes them.
fn number(f: f64) -> Json {
    if f.fract() == 0.0 && f.abs() < 9.2e18 {
        return Json::from(f as i64);
    }
    serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number)
}

/// The largest integer a double holds exactly, and so a JSON number (cel-go's `isJSONSafe`).
const MAX_JSON_SAFE: i64 = (1 << 53) - 1;

/// cel-go's `ConvertToNative(*structpb.Value)` of a value, then its JSON (protojson's).
fn json_value(value: &Value) -> Result<Json, String> {
    let converted = match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) if (-MAX_JSON_SAFE..=MAX_JSON_SAFE).contains(i) => number(*i as f64),
        Value::Int(i) => Json::String(i.to_string()),
        Value::Uint(u) if *u <= MAX_JSON_SAFE as u64 => number(*u as f64),
        Value::Uint(u) => Json::String(u.to_string()),
        Value::Double(d) => json_number(*d)?,
        Value::String(s) => Json::String(s.to_string()),
        Value::Bytes(b) => Json::String(base64(b)),
        // As `string(t)` and `string(d)` write them (RFC 3339, seconds with `s`).
        Value::Timestamp(..) | Value::Duration(_) => match super::conversions::to_string(value) {
            Ok(Value::String(s)) => Json::String(s.to_string()),
            _ => return Err(conversion_error(value, "*structpb.Value")),
        },
        Value::List(items) => Json::Array(items.iter().map(json_value).collect::<Result<_, _>>()?),
        Value::Map(map) => {
            let mut fields = JsonMap::new();
            for (key, item) in map.entries() {
                let Value::String(key) = key else {
                    return Err(conversion_error(key, "string"));
                };
                fields.insert(key.to_string(), json_value(item)?);
            }
            Json::Object(fields)
        }
        Value::Optional(Some(inner)) => json_value(inner)?,
        Value::Object(object) => structpb(&Native::Map(object.to_native()?))?,
        other => return Err(conversion_error(other, "*structpb.Value")),
    };
    Ok(converted)
}

/// Bytes as the JSON string of their base64, as cel-go and `structpb.NewValue` write them.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A double as a JSON number: protojson refuses NaN and the infinities.
fn json_number(d: f64) -> Result<Json, String> {
    if d.is_finite() {
        return Ok(number(d));
    }
    let written = if d.is_nan() { "NaN".to_string() } else { super::format::go_float(d) };
    Err(format!(
        "json: error calling MarshalJSON for type *structpb.Value: proto: google.protobuf.Value.number_value: invalid {written} value"
    ))
}

/// `structpb.NewValue` of a Go value, then its JSON.
fn structpb(value: &Native) -> Result<Json, String> {
    Ok(match value {
        Native::Nil => Json::Null,
        Native::Bool(b) => Json::Bool(*b),
        Native::Int(i) => json_number(*i as f64)?,
        Native::Uint(u) => json_number(*u as f64)?,
        Native::Float(f) => json_number(*f)?,
        Native::String(s) => Json::String(s.to_string()),
        Native::Bytes(b) => Json::String(base64(b)),
        Native::List(items) => Json::Array(items.iter().map(structpb).collect::<Result<_, _>>()?),
        Native::Map(fields) => {
            let fields: BTreeMap<&String, Json> =
                fields.iter().map(|(k, v)| Ok((k, structpb(v)?))).collect::<Result<_, String>>()?;
            Json::Object(fields.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        other => return Err(format!("proto: invalid type: {}", other.go_type())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::{Declarations, PER_CALL_LIMIT, evaluate};

    fn value_of(source: &str) -> Value {
        let declarations = Declarations::admission(&["object"]).with_patch_types();
        let program = Program::compile_declared(source, &declarations).expect("compiles");
        evaluate(&program, &[("object", Value::Null)], PER_CALL_LIMIT).value.expect("evaluates")
    }

    #[test]
    fn an_apply_configuration_is_the_objects_fields_in_json() {
        let value = value_of("Object{spec: Object.spec{replicas: 2, labels: {'a': 'b'}, args: ['x']}}");
        let json = apply_configuration(&value).unwrap();
        assert_eq!(
            Json::Object(json),
            serde_json::json!({"spec": {"replicas": 2, "labels": {"a": "b"}, "args": ["x"]}})
        );
    }

    #[test]
    fn nested_type_names_must_be_their_field_paths() {
        let value = value_of("Object{spec: Object.status{}}");
        let error = apply_configuration(&value).unwrap_err();
        assert_eq!(
            error,
            "type mismatch: unexpected type name \"Object.status\", expected \"Object.spec\", which matches field name path from root Object type"
        );
        assert_eq!(
            apply_configuration(&Value::Int(1)).unwrap_err(),
            "unsupported return type from ApplyConfiguration expression: int"
        );
    }

    #[test]
    fn a_json_patch_is_its_operations_with_their_values_as_json() {
        let value = value_of(
            "[JSONPatch{op: 'add', path: '/a', value: [dyn(1), dyn(2.5), dyn('x')]}, JSONPatch{op: 'move', from: '/a', path: '/b'}]",
        );
        let ops = json_patch(&value).unwrap();
        assert_eq!(
            Json::Array(ops),
            serde_json::json!([{"op": "add", "path": "/a", "value": [1, 2.5, "x"]}, {"op": "move", "path": "/b", "from": "/a"}])
        );
        assert!(json_patch(&Value::Int(1)).unwrap_err().ends_with("should evaluate to array"));
    }
}
