//! CEL values as k8s.io/apiserver's policies see them: an object decoded from JSON as the
//! kube-apiserver decodes it (integers `int`, other numbers `double`), and cel-go's
//! heterogeneous equality and ordering of numbers.

use super::error::EvalError;
use super::list_types::ListKind;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// A CEL value.
#[derive(Clone, Debug)]
pub enum Value {
    /// `null`.
    Null,
    /// `true`, `false`.
    Bool(bool),
    /// A 64-bit integer (`1`, and JSON's integers).
    Int(i64),
    /// An unsigned 64-bit integer (`1u`).
    Uint(u64),
    /// A double (`1.5`, and JSON's other numbers).
    Double(f64),
    /// A string.
    String(Arc<str>),
    /// Bytes (`b'abc'`).
    Bytes(Arc<[u8]>),
    /// A list.
    List(List),
    /// A map (and a JSON object).
    Map(Arc<Map>),
    /// Nanoseconds since the Unix epoch, within 0001-01-01 and 9999-12-31 (UTC), and the offset
    /// from UTC (seconds) it was written with: Go's `time.Time` keeps it, and `string(t)`
    /// writes it.
    Timestamp(i128, i32),
    /// Nanoseconds, within Go's `time.Duration`.
    Duration(i64),
    /// A type (`type(x)`, `int`).
    Type(Type),
    /// An optional value (`optional.of(x)`, `a.?b`): none or one value.
    Optional(Option<Arc<Value>>),
    /// A value of one of Kubernetes' libraries (an IP, a CIDR, a URL, a version, a format).
    Opaque(Arc<Opaque>),
    /// An object of a mutation's `Object` types (`Object.spec{replicas: 1}`), with
    /// [`Declarations::with_patch_types`](super::Declarations::with_patch_types).
    Object(Arc<super::objects::Object>),
    /// A `JSONPatch{op: 'add', path: '/x', value: 1}`, with patch types.
    JsonPatch(Arc<super::objects::JsonPatch>),
}

/// A list's items, and whether they are Go's own values there (cel-go's list of a decoded
/// object holds `[]any`; the lists CEL builds hold CEL values, which a mutation's conversions
/// tell apart: [`super::mutation`]).
#[derive(Clone, Debug)]
pub struct List {
    items: Arc<[Value]>,
    native: bool,
    kind: ListKind,
}

impl List {
    /// Whether the list is a decoded object's (JSON's), not one CEL built.
    pub fn is_native(&self) -> bool {
        self.native
    }

    /// How `==` and `+` read it: its schema's `x-kubernetes-list-type`.
    pub(crate) fn kind(&self) -> &ListKind {
        &self.kind
    }
}

impl std::ops::Deref for List {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        &self.items
    }
}

/// The values of Kubernetes' CEL libraries.
#[derive(Clone, Debug)]
pub enum Opaque {
    /// `net.IP`.
    Ip(std::net::IpAddr),
    /// `net.CIDR`.
    Cidr(super::network::Cidr),
    /// `kubernetes.URL`.
    Url(super::urls::Url),
    /// `kubernetes.Semver`.
    Semver(super::semver::Semver),
    /// `kubernetes.NamedFormat`.
    Format(super::formats::NamedFormat),
    /// `kubernetes.Quantity`.
    Quantity(super::quantity::Quantity),
    /// The authorizer library's values.
    Authz(super::authz::Authz),
}

impl Opaque {
    /// The type's name (`net.IP`, `kubernetes.URL`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Opaque::Ip(_) => "net.IP",
            Opaque::Cidr(_) => "net.CIDR",
            Opaque::Url(_) => "kubernetes.URL",
            Opaque::Semver(_) => super::semver::TYPE_NAME,
            Opaque::Format(_) => super::formats::TYPE_NAME,
            Opaque::Quantity(_) => "kubernetes.Quantity",
            Opaque::Authz(authz) => authz.type_name(),
        }
    }

    /// How the value reads (Go's `%v` of it, as tools/cel-oracle writes it).
    pub fn text(&self) -> String {
        match self {
            Opaque::Ip(ip) => super::network::ip_string(ip),
            Opaque::Cidr(cidr) => cidr.to_string(),
            Opaque::Url(url) => url.to_string(),
            Opaque::Semver(version) => version.to_string(),
            Opaque::Format(format) => format.to_string(),
            Opaque::Quantity(quantity) => quantity.canonical(),
            Opaque::Authz(authz) => authz.type_name().to_string(),
        }
    }

    fn equals(&self, other: &Opaque) -> bool {
        match (self, other) {
            (Opaque::Ip(a), Opaque::Ip(b)) => a == b,
            (Opaque::Cidr(a), Opaque::Cidr(b)) => a == b,
            (Opaque::Url(a), Opaque::Url(b)) => a == b,
            (Opaque::Semver(a), Opaque::Semver(b)) => a == b,
            (Opaque::Format(a), Opaque::Format(b)) => a == b,
            (Opaque::Quantity(a), Opaque::Quantity(b)) => a.compare(b).is_eq(),
            (Opaque::Authz(a), Opaque::Authz(b)) => a == b,
            _ => false,
        }
    }
}

/// The type of a value, as `type(x)` answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // each variant is the type of the value variant of its name
pub enum Type {
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List,
    Map,
    Timestamp,
    Duration,
    Type,
    Optional,
    Named(&'static str),
    /// A mutation's object type (`Object.spec`, `JSONPatch`).
    Object(Arc<str>),
}

impl Type {
    /// The name cel-go gives the type (`type(1) == int`).
    pub fn name(&self) -> &str {
        match self {
            Type::Null => "null_type",
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Uint => "uint",
            Type::Double => "double",
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::List => "list",
            Type::Map => "map",
            Type::Timestamp => "google.protobuf.Timestamp",
            Type::Duration => "google.protobuf.Duration",
            Type::Type => "type",
            Type::Optional => "optional_type",
            Type::Named(name) => name,
            Type::Object(name) => name,
        }
    }

    /// The type an identifier names in expressions (`int`, `list`, `null_type`,
    /// `google.protobuf.Duration`, `net.IP`, ...).
    pub fn named(name: &str) -> Option<Type> {
        [
            Type::Null,
            Type::Bool,
            Type::Int,
            Type::Uint,
            Type::Double,
            Type::String,
            Type::Bytes,
            Type::List,
            Type::Map,
            Type::Timestamp,
            Type::Duration,
            Type::Type,
            Type::Optional,
            Type::Named("net.IP"),
            Type::Named("net.CIDR"),
        ]
        .into_iter()
        .find(|t| t.name() == name)
    }
}

/// A map: its entries in insertion order, keys unique under CEL equality.
#[derive(Debug, Default)]
pub struct Map {
    entries: Vec<(Value, Value)>,
    /// Whether it is a decoded object's (cel-go's `map[string]any`), not one CEL built.
    native: bool,
}

impl Map {
    /// A map of `entries`; a key that repeats keeps its last value, as cel-go's map literals do.
    /// A key of a type maps cannot have is an error.
    pub fn new(entries: Vec<(Value, Value)>) -> Result<Map, EvalError> {
        let mut map = Map { entries: Vec::with_capacity(entries.len()), native: false };
        for (key, value) in entries {
            key.check_map_key()?;
            match map.entries.iter_mut().find(|(k, _)| k.equals(&key)) {
                Some(entry) => entry.1 = value,
                None => map.entries.push((key, value)),
            }
        }
        Ok(map)
    }

    /// The value at `key`: numeric keys match across int, uint and double.
    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k.equals(key)).map(|(_, v)| v)
    }

    /// The value at a string key.
    pub fn get_str(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| matches!(k, Value::String(s) if &**s == key)).map(|(_, v)| v)
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keys, in insertion order.
    pub fn keys(&self) -> impl Iterator<Item = &Value> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The entries, in insertion order.
    pub fn entries(&self) -> impl Iterator<Item = &(Value, Value)> {
        self.entries.iter()
    }

    /// Whether the map is a decoded object's (JSON's), not one CEL built.
    pub fn is_native(&self) -> bool {
        self.native
    }

    /// cel-go's `Equal` of maps: a decoded object's map answers with its first value that is not
    /// equal (or an error), a map CEL built ignores errors (cel-go's `baseMap`).
    fn equal(&self, other: &Map) -> Result<bool, EvalError> {
        if self.len() != other.len() {
            return Ok(false);
        }
        for (key, value) in self.entries() {
            let Some(other_value) = other.get(key) else { return Ok(false) };
            match value.equal(other_value) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(error) if self.native => return Err(error),
                Err(_) => {}
            }
        }
        Ok(true)
    }

    /// A decoded object's map of string keys (the keys unique).
    pub(crate) fn native(entries: Vec<(Value, Value)>) -> Map {
        Map { entries, native: true }
    }
}

impl Value {
    /// A string value.
    pub fn string(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    /// A list value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(List { items: Arc::from(items), native: false, kind: ListKind::Atomic })
    }

    /// A decoded object's list.
    pub(crate) fn native_list(items: Vec<Value>) -> Value {
        Value::List(List { items: Arc::from(items), native: true, kind: ListKind::Atomic })
    }

    /// A list of a schema's list type: a decoded object's, or one `+` made of it.
    pub(crate) fn kind_list(items: Vec<Value>, kind: ListKind) -> Value {
        Value::List(List { items: Arc::from(items), native: true, kind })
    }

    /// JSON as the kube-apiserver decodes an object for its policies: integers that fit `int`,
    /// every other number `double`.
    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::string(s),
            serde_json::Value::Array(items) => Value::native_list(items.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(fields) => Value::Map(Arc::new(Map::native(
                fields.iter().map(|(k, v)| (Value::string(k), Value::from_json(v))).collect(),
            ))),
        }
    }

    /// The value's type.
    pub fn type_of(&self) -> Type {
        match self {
            Value::Null => Type::Null,
            Value::Bool(_) => Type::Bool,
            Value::Int(_) => Type::Int,
            Value::Uint(_) => Type::Uint,
            Value::Double(_) => Type::Double,
            Value::String(_) => Type::String,
            Value::Bytes(_) => Type::Bytes,
            Value::List(_) => Type::List,
            Value::Map(_) => Type::Map,
            Value::Timestamp(..) => Type::Timestamp,
            Value::Duration(_) => Type::Duration,
            Value::Type(_) => Type::Type,
            Value::Optional(_) => Type::Optional,
            Value::Opaque(value) => Type::Named(value.type_name()),
            Value::Object(object) => Type::Object(object.type_name().into()),
            Value::JsonPatch(_) => Type::Object(super::objects::JSON_PATCH.into()),
        }
    }

    fn check_map_key(&self) -> Result<(), EvalError> {
        match self {
            Value::Bool(_) | Value::Int(_) | Value::Uint(_) | Value::String(_) => Ok(()),
            other => Err(EvalError::new(format!("unsupported key type: {}", other.type_of().name()))),
        }
    }

    /// cel-go's `Equal`, an error read as unequal (only set lists have errors: see
    /// [`Value::equal`]).
    pub fn equals(&self, other: &Value) -> bool {
        self.equal(other).unwrap_or(false)
    }

    /// cel-go's `Equal`: numbers compare across int, uint and double; NaN equals nothing; values
    /// of different types are unequal; lists compare as their list type does
    /// (`x-kubernetes-list-type: set` and `map` lists ignore order), whose errors a decoded
    /// object's lists and maps pass on.
    pub fn equal(&self, other: &Value) -> Result<bool, EvalError> {
        match (self, other) {
            (Value::List(a), Value::List(b)) => super::list_types::equal(a, b),
            (Value::Map(a), Value::Map(b)) => a.equal(b),
            (Value::Optional(Some(x)), Value::Optional(Some(y))) => x.equal(y),
            _ => Ok(self.equals_scalar(other)),
        }
    }

    fn equals_scalar(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Int(_) | Uint(_) | Double(_), Int(_) | Uint(_) | Double(_)) => {
                self.compare_numbers(other) == Some(Ordering::Equal)
            }
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Timestamp(a, _), Timestamp(b, _)) => a == b,
            (Duration(a), Duration(b)) => a == b,
            (Type(a), Type(b)) => a == b,
            (Opaque(a), Opaque(b)) => a.equals(b),
            (Object(a), Object(b)) => a.equals(b),
            (JsonPatch(a), JsonPatch(b)) => a.equals(b),
            (Optional(None), Optional(None)) => true,
            _ => false,
        }
    }

    /// The order of two numbers of any numeric types; `None` when either is NaN or not a number.
    pub fn compare_numbers(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        match (self, other) {
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (Uint(a), Uint(b)) => Some(a.cmp(b)),
            (Double(a), Double(b)) => a.partial_cmp(b),
            (Int(a), Uint(b)) => Some(if *a < 0 { Ordering::Less } else { (*a as u64).cmp(b) }),
            (Uint(_), Int(_)) => other.compare_numbers(self).map(Ordering::reverse),
            (Double(d), Int(i)) => compare_double_int(*d, *i),
            (Int(_), Double(_)) => other.compare_numbers(self).map(Ordering::reverse),
            (Double(d), Uint(u)) => compare_double_uint(*d, *u),
            (Uint(_), Double(_)) => other.compare_numbers(self).map(Ordering::reverse),
            _ => None,
        }
    }

    /// How a value reads in an error message (`no such key: spec`).
    pub fn display(&self) -> String {
        match self {
            Value::String(s) => s.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Uint(u) => u.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Double(d) => super::format::go_float(*d),
            other => format!("{other:?}"),
        }
    }

    /// The tagged JSON of tools/cel-oracle (`{"int": "5"}`, `{"list": [...]}`, map entries sorted
    /// by their keys' JSON): what the differential tests compare.
    pub fn to_tagged_json(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Value::Null => json!({"null": null}),
            Value::Bool(b) => json!({"bool": b}),
            Value::Int(i) => json!({"int": i.to_string()}),
            Value::Uint(u) => json!({"uint": u.to_string()}),
            Value::Double(d) if d.is_finite() => json!({"double": d}),
            Value::Double(d) => json!({"double": super::format::go_float(*d)}),
            Value::String(s) => json!({"string": &**s}),
            Value::Bytes(b) => {
                use base64::Engine;
                json!({"bytes": base64::engine::general_purpose::STANDARD.encode(b)})
            }
            Value::List(items) => json!({"list": items.iter().map(Value::to_tagged_json).collect::<Vec<_>>()}),
            Value::Map(map) => {
                let mut entries: Vec<(String, serde_json::Value, serde_json::Value)> = map
                    .entries()
                    .map(|(k, v)| (k.to_tagged_json().to_string(), k.to_tagged_json(), v.to_tagged_json()))
                    .collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                json!({"map": entries.into_iter().map(|(_, k, v)| json!([k, v])).collect::<Vec<_>>()})
            }
            Value::Timestamp(nanos, _) => json!({"timestamp": super::format::rfc3339(*nanos, 0)}),
            Value::Duration(nanos) => json!({"duration": super::format::go_duration(*nanos)}),
            Value::Type(t) => json!({"type": t.name()}),
            Value::Optional(None) => json!({"optional": null}),
            Value::Optional(Some(v)) => json!({"optional": v.to_tagged_json()}),
            Value::Opaque(value) => json!({"opaque": value.type_name(), "string": value.text()}),
            Value::Object(object) => object.to_tagged_json(),
            Value::JsonPatch(patch) => patch.to_tagged_json(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// cel-go's compareDoubleInt: a double beyond int's range is less or greater than every int.
fn compare_double_int(d: f64, i: i64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d < i64::MIN as f64 {
        return Some(Ordering::Less);
    }
    if d >= i64::MAX as f64 {
        return Some(Ordering::Greater);
    }
    d.partial_cmp(&(i as f64))
}

fn compare_double_uint(d: f64, u: u64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d < 0.0 {
        return Some(Ordering::Less);
    }
    if d >= u64::MAX as f64 {
        return Some(Ordering::Greater);
    }
    d.partial_cmp(&(u as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_integers_are_ints_and_other_numbers_doubles() {
        let v = Value::from_json(&json!({"a": 1, "b": 1.5, "c": 1e3, "d": 18446744073709551615u64}));
        let Value::Map(m) = v else { panic!() };
        assert!(matches!(m.get_str("a"), Some(Value::Int(1))));
        assert!(matches!(m.get_str("b"), Some(Value::Double(_))));
        assert!(matches!(m.get_str("c"), Some(Value::Double(_))));
        assert!(matches!(m.get_str("d"), Some(Value::Double(_))));
    }

    #[test]
    fn numbers_are_equal_across_types_and_nan_to_nothing() {
        assert!(Value::Int(1).equals(&Value::Uint(1)));
        assert!(Value::Double(1.0).equals(&Value::Int(1)));
        assert!(!Value::Int(-1).equals(&Value::Uint(u64::MAX)));
        assert!(!Value::Double(f64::NAN).equals(&Value::Double(f64::NAN)));
        assert!(!Value::Int(1).equals(&Value::string("1")));
        assert_eq!(Value::Double(1e19).compare_numbers(&Value::Int(i64::MAX)), Some(Ordering::Greater));
    }

    #[test]
    fn a_repeated_map_key_keeps_its_last_value() {
        let map = Map::new(vec![(Value::string("a"), Value::Int(1)), (Value::string("a"), Value::Int(2))]).unwrap();
        assert_eq!(map.len(), 1);
        assert!(matches!(map.get_str("a"), Some(Value::Int(2))));
    }
}
