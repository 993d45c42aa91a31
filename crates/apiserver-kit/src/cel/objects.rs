//! The values of a MutatingAdmissionPolicy's object types, as k8s.io/apiserver's
//! `mutation.DynamicTypeResolver` makes them: `Object` and `Object.<field path>` (its
//! `dynamic.ObjectVal`: any field, of any value) and `JSONPatch` (its `JSONPatchVal`: `op`,
//! `path`, `from` strings and a `value`), built by struct literals (`Object.spec{replicas: 2}`).
//!
//! cel-go reads them through Go: an Object's field is selected from its Go value (`Value()`,
//! which converts its fields with `convertField`), equality is `reflect.DeepEqual` of the fields,
//! a JSONPatch's fields must be Go strings. `Native` is that Go value, so that a selection, an
//! error's `%T` and the conversions of [`super::mutation`] come out as there. A list or map is
//! `[]any`/`map[string]any` when it is a decoded object's ([`super::value::List::is_native`]),
//! its CEL values (`[]ref.Val`, `map[ref.Val]ref.Val`) when CEL built it: cel-go backs the lists
//! some functions return with other Go slices (`split`'s `[]string`), taken here as `[]ref.Val`.

use super::error::EvalError;
use super::value::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The name of the root object type and the prefix of the others (`Object.spec`).
pub const OBJECT: &str = "Object";
/// The name of the JSON patch operation type.
pub const JSON_PATCH: &str = "JSONPatch";

/// Whether the resolver of patch types knows `name` (`Object`, `Object.a.b`, `JSONPatch`).
pub fn is_patch_type(name: &str) -> bool {
    name == JSON_PATCH || name == OBJECT || name.strip_prefix(OBJECT).is_some_and(|rest| rest.starts_with('.'))
}

/// An `Object` value: its type name and its fields (a Go map there, sorted by name here).
#[derive(Debug, Clone)]
pub struct Object {
    type_name: Arc<str>,
    fields: BTreeMap<String, Value>,
}

/// A `JSONPatch` value: an operation of a JSON patch, an unset string field empty.
#[derive(Debug, Clone, Default)]
pub struct JsonPatch {
    /// `op`: `add`, `remove`, `replace`, `move`, `copy` or `test`.
    pub op: String,
    /// `path`, a JSON pointer.
    pub path: String,
    /// `from`, a JSON pointer (`move`, `copy`).
    pub from: String,
    /// `value`, when set.
    pub value: Option<Value>,
}

/// A Go value that cel-go's conversions see (a CEL value's `Value()`, `convertField`'s result).
#[derive(Debug, Clone)]
pub(crate) enum Native {
    Nil,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    String(Arc<str>),
    Bytes(Arc<[u8]>),
    /// `time.Time`: nanoseconds since the epoch and the offset it was written with.
    Time(i128, i32),
    /// `time.Duration`.
    Duration(i64),
    /// `structpb.NullValue`, what cel-go's `null` is in Go.
    NullEnum,
    /// `[]any`.
    List(Vec<Native>),
    /// `map[string]any`, by key.
    Map(BTreeMap<String, Native>),
    /// A CEL value that stays one in Go (`[]ref.Val`, `map[ref.Val]ref.Val`, a JSONPatch, a
    /// library's value).
    Cel(Value),
    /// A `*types.Err`: an Object whose fields could not be converted.
    Error(String),
}

impl Native {
    /// Go's `%T` of the value.
    pub(crate) fn go_type(&self) -> String {
        let name = match self {
            Native::Nil => "<nil>",
            Native::Bool(_) => "bool",
            Native::Int(_) => "int64",
            Native::Uint(_) => "uint64",
            Native::Float(_) => "float64",
            Native::String(_) => "string",
            Native::Bytes(_) => "[]uint8",
            Native::Time(..) => "time.Time",
            Native::Duration(_) => "time.Duration",
            Native::NullEnum => "structpb.NullValue",
            Native::List(_) => "[]interface {}",
            Native::Map(_) => "map[string]interface {}",
            Native::Error(_) => "*types.Err",
            Native::Cel(value) => return cel_go_type(value).to_string(),
        };
        name.to_string()
    }
}

/// The Go type of a CEL value that stays one in Go.
fn cel_go_type(value: &Value) -> &'static str {
    match value {
        Value::List(_) => "[]ref.Val",
        Value::Map(_) => "map[ref.Val]ref.Val",
        Value::JsonPatch(_) => "*mutation.JSONPatchVal",
        Value::Opaque(opaque) => opaque_go_type(opaque),
        other => super::functions::go_type_name(other),
    }
}

/// The Go type of a library's value there (its `Value()`).
fn opaque_go_type(opaque: &super::value::Opaque) -> &'static str {
    use super::value::Opaque;
    match opaque {
        Opaque::Ip(_) => "netip.Addr",
        Opaque::Cidr(_) => "netip.Prefix",
        Opaque::Url(_) => "*url.URL",
        Opaque::Semver(_) => "semver.Version",
        Opaque::Format(_) => "cel.Format",
        Opaque::Quantity(_) => "*resource.Quantity",
        Opaque::Authz(_) => "*cel.Opaque",
    }
}

/// cel-go's `Value()` of `value`: Go's own values, lists and maps CEL built left CEL values.
pub(crate) fn native(value: &Value) -> Native {
    match value {
        Value::Null => Native::NullEnum,
        Value::Bool(b) => Native::Bool(*b),
        Value::Int(i) => Native::Int(*i),
        Value::Uint(u) => Native::Uint(*u),
        Value::Double(d) => Native::Float(*d),
        Value::String(s) => Native::String(s.clone()),
        Value::Bytes(b) => Native::Bytes(b.clone()),
        Value::Timestamp(nanos, offset) => Native::Time(*nanos, *offset),
        Value::Duration(nanos) => Native::Duration(*nanos),
        Value::List(items) if items.is_native() => Native::List(items.iter().map(decoded).collect()),
        Value::Map(map) if map.is_native() => Native::Map(decoded_entries(map)),
        Value::Type(t) => Native::String(Arc::from(t.name())),
        Value::Optional(None) => Native::Nil,
        Value::Optional(Some(inner)) => native(inner),
        Value::Opaque(_) => Native::Cel(value.clone()),
        Value::Object(object) => match object.to_native() {
            Ok(fields) => Native::Map(fields),
            Err(error) => Native::Error(error),
        },
        other => Native::Cel(other.clone()),
    }
}

/// An element of a decoded object's list or map: JSON's null is Go's nil there.
fn decoded(value: &Value) -> Native {
    match value {
        Value::Null => Native::Nil,
        other => native(other),
    }
}

fn decoded_entries(map: &Map) -> BTreeMap<String, Native> {
    map.entries().map(|(k, v)| (k.display(), decoded(v))).collect()
}

/// k8s.io/apiserver's `convertField`: a list CEL built becomes `[]any` of its elements'
/// `Value()`, a map CEL built `map[string]any` (its keys must be strings), a decoded list or map
/// converted element by element; anything else its `Value()`.
pub(crate) fn convert_field(value: &Value) -> Result<Native, String> {
    match value {
        Value::List(items) if !items.is_native() => Ok(Native::List(items.iter().map(native).collect())),
        Value::List(items) => Ok(Native::List(items.iter().map(convert_field).collect::<Result<_, _>>()?)),
        Value::Map(map) => {
            let mut fields = BTreeMap::new();
            for (key, item) in map.entries() {
                let Value::String(key) = key else {
                    return Err(format!("map key {} is of type {}, not string", go_quote(key), key_go_type(key)));
                };
                let item = if map.is_native() { convert_field(item)? } else { native(item) };
                fields.insert(key.to_string(), item);
            }
            Ok(Native::Map(fields))
        }
        other => Ok(native(other)),
    }
}

/// Go's `%T` of a CEL map key.
fn key_go_type(key: &Value) -> &'static str {
    super::functions::go_type_name(key)
}

/// Go's `%q` of a CEL value that is not a string (a map key): an integer as a quoted character.
fn go_quote(value: &Value) -> String {
    let code = match value {
        Value::Int(i) => u32::try_from(*i).ok(),
        Value::Uint(u) => u32::try_from(*u).ok(),
        Value::Bool(b) => return format!("%!q(types.Bool={b})"),
        _ => None,
    };
    match code.and_then(char::from_u32) {
        Some(c) if !c.is_control() => format!("'{c}'"),
        Some(c) if (c as u32) < 0x80 => format!("'\\x{:02x}'", c as u32),
        Some(c) => format!("'\\u{:04x}'", c as u32),
        None => "'\u{fffd}'".to_string(),
    }
}

/// cel-go's `NativeToValue` of what [`native`] or [`convert_field`] made.
pub(crate) fn to_value(native: &Native) -> Result<Value, EvalError> {
    Ok(match native {
        Native::Nil | Native::NullEnum => Value::Null,
        Native::Bool(b) => Value::Bool(*b),
        Native::Int(i) => Value::Int(*i),
        Native::Uint(u) => Value::Uint(*u),
        Native::Float(f) => Value::Double(*f),
        Native::String(s) => Value::String(s.clone()),
        Native::Bytes(b) => Value::Bytes(b.clone()),
        Native::Time(nanos, offset) => Value::Timestamp(*nanos, *offset),
        Native::Duration(nanos) => Value::Duration(*nanos),
        Native::List(items) => Value::native_list(items.iter().map(to_value).collect::<Result<_, _>>()?),
        Native::Map(fields) => {
            let entries = fields.iter().map(|(k, v)| Ok((Value::string(k), to_value(v)?)));
            Value::Map(Arc::new(Map::native(entries.collect::<Result<_, EvalError>>()?)))
        }
        // A library's Go value is no CEL value to cel-go's adapter.
        Native::Cel(Value::Opaque(opaque)) => {
            let message = format!("unsupported conversion to ref.Val: ({}){}", opaque_go_type(opaque), opaque.text());
            return Err(EvalError::new(message));
        }
        Native::Cel(value) => value.clone(),
        Native::Error(error) => return Err(EvalError::new(error.clone())),
    })
}

impl Object {
    /// The object of type `type_name` with `fields`.
    pub fn new(type_name: &str, fields: impl IntoIterator<Item = (String, Value)>) -> Object {
        Object { type_name: Arc::from(type_name), fields: fields.into_iter().collect() }
    }

    /// Its type's name (`Object.spec`).
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// Its fields, by name.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// `ObjectVal.ConvertToNative` to `map[string]any`: each field through `convertField`.
    pub(crate) fn to_native(&self) -> Result<BTreeMap<String, Native>, String> {
        let mut fields = BTreeMap::new();
        for (name, value) in &self.fields {
            let converted = convert_field(value).map_err(|e| format!("fail to convert field {name:?}: {e}"))?;
            fields.insert(name.clone(), converted);
        }
        Ok(fields)
    }

    /// `o.name` as cel-go selects a field of the Go map of an object typed `Object` (its
    /// `fieldQualifier`): a missing field is null. `o.?name` is always none: its presence test
    /// looks for a Go map in the object itself, which is none.
    pub(crate) fn select(&self, name: &str, optional: bool) -> Result<Value, EvalError> {
        if optional {
            return Ok(Value::Optional(None));
        }
        let fields = match native(&Value::Object(Arc::new(self.clone()))) {
            Native::Map(fields) => Some(fields),
            _ => None,
        };
        let found = fields.as_ref().and_then(|fields| fields.get(name));
        match found {
            Some(found) => to_value(found),
            None if fields.is_some() => Ok(Value::Null),
            None => Err(EvalError::new(format!("cannot get field {name:?}"))),
        }
    }

    /// `has(o.name)`: whether the Go map of the object has the key.
    pub(crate) fn has(&self, name: &str) -> bool {
        matches!(native(&Value::Object(Arc::new(self.clone()))), Native::Map(fields) if fields.contains_key(name))
    }

    /// `ObjectVal.Equal`: the same type name and `reflect.DeepEqual` fields.
    pub(crate) fn equals(&self, other: &Object) -> bool {
        self.type_name == other.type_name
            && self.fields.len() == other.fields.len()
            && self.fields.iter().all(|(k, v)| other.fields.get(k).is_some_and(|w| deep_equal(v, w)))
    }

    /// The tagged JSON of tools/cel-oracle: `{"object": name, "fields": {name: tagged}}`.
    pub(crate) fn to_tagged_json(&self) -> serde_json::Value {
        let fields: serde_json::Map<String, serde_json::Value> =
            self.fields.iter().map(|(k, v)| (k.clone(), v.to_tagged_json())).collect();
        serde_json::json!({"object": &*self.type_name, "fields": fields})
    }
}

/// Go's `reflect.DeepEqual` of two CEL values: of the same Go type and contents. A list is never
/// deeply equal to another (cel-go's lists hold functions, which are unequal).
fn deep_equal(a: &Value, b: &Value) -> bool {
    use Value::*;
    match (a, b) {
        (Null, Null) => true,
        (Bool(x), Bool(y)) => x == y,
        (Int(x), Int(y)) => x == y,
        (Uint(x), Uint(y)) => x == y,
        (Double(x), Double(y)) => x == y,
        (String(x), String(y)) => x == y,
        (Bytes(x), Bytes(y)) => x == y,
        (Timestamp(x, o), Timestamp(y, p)) => x == y && o == p,
        (Duration(x), Duration(y)) => x == y,
        (Type(x), Type(y)) => x == y,
        (Map(x), Map(y)) => {
            x.is_native() == y.is_native()
                && x.len() == y.len()
                && x.entries().all(|(k, v)| y.entries().any(|(l, w)| deep_equal(k, l) && deep_equal(v, w)))
        }
        (Optional(x), Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => deep_equal(x, y),
            _ => false,
        },
        (Object(x), Object(y)) => x.equals(y),
        (JsonPatch(x), JsonPatch(y)) => {
            x.op == y.op
                && x.path == y.path
                && x.from == y.from
                && match (&x.value, &y.value) {
                    (None, None) => true,
                    (Some(v), Some(w)) => deep_equal(v, w),
                    _ => false,
                }
        }
        _ => false,
    }
}

impl JsonPatch {
    /// `JSONPatchType.Val`: each field's value must be a Go string, but `value`'s; fields in
    /// order of their names (a Go map's order there: which of several wrong fields is reported
    /// varies).
    pub(crate) fn new(fields: BTreeMap<String, Value>) -> Result<JsonPatch, EvalError> {
        let mut patch = JsonPatch::default();
        for (name, value) in fields {
            let target = match name.as_str() {
                "op" => &mut patch.op,
                "path" => &mut patch.path,
                "from" => &mut patch.from,
                "value" => {
                    patch.value = Some(value);
                    continue;
                }
                _ => return Err(EvalError::new(format!("unexpected JSONPatchType field: {name}"))),
            };
            match native(&value) {
                Native::String(s) => *target = s.to_string(),
                other => {
                    let go_type = other.go_type();
                    return Err(EvalError::new(format!("unexpected type {go_type} for JSONPatchType '{name}' field")));
                }
            }
        }
        Ok(patch)
    }

    /// `p.name` (`JSONPatchVal.Get`): an unset string field is empty, an unset value null.
    pub(crate) fn get(&self, name: &str) -> Result<Value, EvalError> {
        match name {
            "op" => Ok(Value::string(&self.op)),
            "path" => Ok(Value::string(&self.path)),
            "from" => Ok(Value::string(&self.from)),
            "value" => Ok(self.value.clone().unwrap_or(Value::Null)),
            _ => Err(EvalError::new(format!("unsupported indexer: {name}"))),
        }
    }

    /// `has(p.name)` (`JSONPatchVal.IsSet`): a string field is set when it is not empty.
    pub(crate) fn is_set(&self, name: &str) -> Result<bool, EvalError> {
        match name {
            "op" => Ok(!self.op.is_empty()),
            "path" => Ok(!self.path.is_empty()),
            "from" => Ok(!self.from.is_empty()),
            "value" => Ok(self.value.is_some()),
            _ => Err(EvalError::new(format!("unsupported field: {name}"))),
        }
    }

    /// `JSONPatchVal.Equal`: the same strings, and values both unset or equal (CEL equality).
    pub(crate) fn equals(&self, other: &JsonPatch) -> bool {
        self.op == other.op
            && self.path == other.path
            && self.from == other.from
            && match (&self.value, &other.value) {
                (None, None) => true,
                (Some(v), Some(w)) => v.equals(w),
                _ => false,
            }
    }

    /// The tagged JSON of tools/cel-oracle: `{"jsonPatch": {"op", "path", "from", "value"}}`.
    pub(crate) fn to_tagged_json(&self) -> serde_json::Value {
        let mut fields = serde_json::json!({"op": self.op, "path": self.path, "from": self.from});
        if let (Some(value), Some(fields)) = (&self.value, fields.as_object_mut()) {
            fields.insert("value".to_string(), value.to_tagged_json());
        }
        serde_json::json!({"jsonPatch": fields})
    }
}

/// A struct literal's value (cel-go's `provider.NewValue`): a JSONPatch, or an Object of that
/// type name; a field given twice keeps its last value.
pub(crate) fn construct(type_name: &str, fields: Vec<(Arc<str>, Value)>) -> Result<Value, EvalError> {
    let fields: BTreeMap<String, Value> = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if type_name == JSON_PATCH {
        return Ok(Value::JsonPatch(Arc::new(JsonPatch::new(fields)?)));
    }
    Ok(Value::Object(Arc::new(Object { type_name: Arc::from(type_name), fields })))
}

/// `jsonpatch.escapeKey(k)`: `~` written `~0` and `/` written `~1` (RFC 6901).
pub(crate) fn escape_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_types_are_object_its_paths_and_json_patch() {
        assert!(is_patch_type("Object") && is_patch_type("Object.spec.x") && is_patch_type("JSONPatch"));
        assert!(!is_patch_type("Objects") && !is_patch_type("object") && !is_patch_type("JSONPatch.x"));
    }

    #[test]
    fn escaped_keys_follow_rfc_6901() {
        assert_eq!(escape_key("a/b~c"), "a~1b~0c");
        assert_eq!(escape_key("~1"), "~01");
    }

    #[test]
    fn a_json_patch_field_must_be_a_go_string() {
        let fields = BTreeMap::from([("op".to_string(), Value::Int(1))]);
        let error = JsonPatch::new(fields).unwrap_err();
        assert_eq!(error.to_string(), "unexpected type int64 for JSONPatchType 'op' field");
        let fields = BTreeMap::from([("op".to_string(), Value::Type(super::super::value::Type::Int))]);
        assert_eq!(JsonPatch::new(fields).map(|p| p.op).ok().as_deref(), Some("int"));
    }

    #[test]
    fn an_object_field_reads_through_go_values() {
        let inner = Object::new("Object.spec", [("a".to_string(), Value::Int(1))]);
        let object = Object::new("Object", [("spec".to_string(), Value::Object(Arc::new(inner)))]);
        let spec = object.select("spec", false).unwrap();
        assert!(matches!(&spec, Value::Map(map) if map.is_native() && matches!(map.get_str("a"), Some(Value::Int(1)))));
        assert!(object.has("spec") && !object.has("status"));
        assert!(matches!(object.select("status", false), Ok(Value::Null)));
    }

    #[test]
    fn objects_are_deeply_equal_but_for_their_lists() {
        let make = |v: Value| Object::new("Object", [("a".to_string(), v)]);
        assert!(make(Value::Int(1)).equals(&make(Value::Int(1))));
        assert!(!make(Value::Int(1)).equals(&make(Value::Double(1.0))));
        assert!(!make(Value::list(vec![])).equals(&make(Value::list(vec![]))));
    }
}
