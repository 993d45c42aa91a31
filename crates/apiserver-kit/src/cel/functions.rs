//! CEL's standard functions and operators as cel-go defines them (overflow-checked integers,
//! numbers compared across types, conversions), how a value is selected or indexed, and what
//! each call costs at run time (cel-go's default cost of a call).

use super::error::EvalError;
use super::value::Value;
use super::{collections, kubernetes, lists, strings, timestamps};
use std::cmp::Ordering;
use std::sync::Arc;

/// The cost of building a list and a map (cel-go's `ListCreateBaseCost`, `MapCreateBaseCost`).
pub const LIST_CREATE_COST: u64 = 10;
pub const MAP_CREATE_COST: u64 = 30;
/// The cost of building a struct (cel-go's `StructCreateBaseCost`).
pub const STRUCT_CREATE_COST: u64 = 40;
/// cel-go's `StringTraversalCostFactor` and `RegexStringLengthCostFactor`.
const TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;

type Eval = Result<Value, EvalError>;

const CONVERSIONS: &[&str] =
    &["int", "uint", "double", "string", "bytes", "bool", "dyn", "type", "duration", "timestamp"];

/// Whether the environment declares `function` for a call of this shape.
pub fn is_declared(function: &str, member: bool, args: usize) -> bool {
    match (function, member, args) {
        (
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" | "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" | "@in",
            false,
            2,
        ) => true,
        ("-_" | "!_" | "@not_strictly_false", false, 1) => true,
        ("size", false, 1) | ("size", true, 0) => true,
        ("contains" | "startsWith" | "endsWith" | "matches", true, 1) | ("matches", false, 2) => true,
        (conversion, false, 1) if CONVERSIONS.contains(&conversion) => true,
        ("strings.quote", false, 1) | (super::macros::MAP_INSERT, false, 2 | 3) => true,
        // Declared with a mutation's types only: the checker refuses it otherwise.
        ("jsonpatch.escapeKey", false, 1) => true,
        (_, true, n) => {
            strings::is_member(function, n)
                || lists::is_member(function, n)
                || collections::is_member(function, n)
                || timestamps::is_member(function, n)
                || kubernetes::is_member(function, n)
                || super::authz::is_member(function, n)
        }
        (_, false, n) => {
            lists::is_global(function, n) || collections::is_global(function, n) || kubernetes::is_global(function, n)
        }
    }
}

pub fn is_conversion(function: &str) -> bool {
    CONVERSIONS.contains(&function)
}

/// Calls `function` (with `target` for a member call) on values that are not errors.
pub fn call(function: &str, target: Option<&Value>, args: &[&Value]) -> Eval {
    match (function, target, args) {
        (super::macros::MAP_INSERT, None, [Value::Map(map), rest @ ..]) => map_insert(map, rest),
        (_, None, _) if kubernetes::is_global(function, args.len()) => {
            kubernetes::call_global(function, args).unwrap_or_else(|| Err(EvalError::no_such_overload()))
        }
        (_, None, _) if collections::is_global(function, args.len()) => {
            collections::call_global(function, args).unwrap_or_else(|| Err(EvalError::no_such_overload()))
        }
        (_, None, [value]) if is_conversion(function) => convert(function, value),
        (_, None, [left, right]) => binary(function, left, right),
        ("-_", None, [value]) => negate(value),
        ("!_", None, [Value::Bool(b)]) => Ok(Value::Bool(!b)),
        ("@not_strictly_false", None, [value]) => Ok(Value::Bool(!matches!(value, Value::Bool(false)))),
        ("size", None, [value]) => size(value).map(Value::Int),
        ("size", Some(value), []) => size(value).map(Value::Int),
        (_, Some(Value::String(s)), [Value::String(arg)]) if CORE_STRING_MEMBERS.contains(&function) => {
            string_member(function, s, arg)
        }
        ("strings.quote", None, [Value::String(s)]) => Ok(Value::string(&strings::quote(s))),
        ("jsonpatch.escapeKey", None, [Value::String(s)]) => Ok(Value::string(&super::objects::escape_key(s))),
        (_, Some(target), _) => strings::call(function, target, args)
            .or_else(|| lists::call_member(function, target, args))
            .or_else(|| collections::call_member(function, target, args))
            .or_else(|| timestamps::call(function, target, args))
            .or_else(|| kubernetes::call_member(function, target, args))
            .unwrap_or_else(|| Err(EvalError::no_such_overload())),
        (_, None, _) => lists::call_global(function, args).unwrap_or_else(|| Err(EvalError::no_such_overload())),
    }
}

/// The standard library's member functions of strings.
const CORE_STRING_MEMBERS: &[&str] = &["contains", "startsWith", "endsWith", "matches"];

/// What a call may build, for the calls whose result can be far larger than their arguments
/// (`lists.range(n)`, `replace` of an empty string): an evaluation cancels such a call before
/// it builds a result past its remaining budget. `lists.range` costs its result's size, so
/// cel-go would cancel it right after; a `replace` past 64 MiB is cancelled here where cel-go
/// would build it (its cost counts only the input).
pub fn result_size(function: &str, target: Option<&Value>, args: &[&Value]) -> u64 {
    const REPLACE_LIMIT: u64 = 64 << 20;
    match (function, target, args) {
        ("lists.range", None, [Value::Int(n)]) => (*n).max(0) as u64,
        ("replace", Some(Value::String(s)), [Value::String(old), Value::String(new), ..]) if old.is_empty() => {
            let grown = (s.chars().count() as u64 + 1).saturating_mul(new.len() as u64);
            if grown > REPLACE_LIMIT { u64::MAX } else { 0 }
        }
        _ => 0,
    }
}

/// `cel.@mapInsert(map, key, value)` and `cel.@mapInsert(map, entries)`: a key already there
/// is an error.
fn map_insert(map: &super::value::Map, rest: &[&Value]) -> Eval {
    let added: Vec<(Value, Value)> = match rest {
        [key, value] => vec![((*key).clone(), (*value).clone())],
        [Value::Map(entries)] => entries.entries().cloned().collect(),
        _ => return Err(EvalError::no_such_overload()),
    };
    let mut entries: Vec<(Value, Value)> = map.entries().cloned().collect();
    for (key, value) in added {
        if entries.iter().any(|(k, _)| k.equals(&key)) {
            return Err(EvalError::new(format!("insert failed: key {} already exists", key.display())));
        }
        entries.push((key, value));
    }
    Ok(Value::Map(Arc::new(super::value::Map::new(entries)?)))
}

fn binary(function: &str, left: &Value, right: &Value) -> Eval {
    match function {
        "_==_" => Ok(Value::Bool(left.equal(right)?)),
        "_!=_" => Ok(Value::Bool(!left.equal(right)?)),
        "_<_" => compare(left, right).map(|o| Value::Bool(o == Ordering::Less)),
        "_<=_" => compare(left, right).map(|o| Value::Bool(o != Ordering::Greater)),
        "_>_" => compare(left, right).map(|o| Value::Bool(o == Ordering::Greater)),
        "_>=_" => compare(left, right).map(|o| Value::Bool(o != Ordering::Less)),
        "@in" => contains_element(right, left),
        "matches" => match (left, right) {
            (Value::String(s), Value::String(re)) => matches(s, re),
            _ => Err(EvalError::no_such_overload()),
        },
        _ => super::arithmetic::apply(function, left, right),
    }
}

/// `<` and its kin: numbers across types, strings, bytes, bools, timestamps, durations.
pub(super) fn compare(left: &Value, right: &Value) -> Result<Ordering, EvalError> {
    use Value::*;
    let ordering = match (left, right) {
        // cel-go: a NaN double on the left (or beside another double) cannot be ordered; an int
        // or uint beside a NaN compares equal to it (its compareDoubleInt).
        (Double(a), Double(b)) if a.is_nan() || b.is_nan() => return Err(nan()),
        (Double(a), _) if a.is_nan() => return Err(nan()),
        (Int(_) | Uint(_) | Double(_), Int(_) | Uint(_) | Double(_)) => {
            left.compare_numbers(right).unwrap_or(Ordering::Equal)
        }
        (String(a), String(b)) => a.cmp(b),
        (Bytes(a), Bytes(b)) => a.cmp(b),
        (Bool(a), Bool(b)) => a.cmp(b),
        (Timestamp(a, _), Timestamp(b, _)) => a.cmp(b),
        (Duration(a), Duration(b)) => a.cmp(b),
        _ => return Err(EvalError::no_such_overload()),
    };
    Ok(ordering)
}

fn nan() -> EvalError {
    EvalError::new("NaN values cannot be ordered")
}

fn contains_element(container: &Value, element: &Value) -> Eval {
    match container {
        Value::List(items) => Ok(Value::Bool(items.iter().any(|item| item.equals(element)))),
        Value::Map(map) => Ok(Value::Bool(map.get(element).is_some())),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn negate(value: &Value) -> Eval {
    match value {
        Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(EvalError::overflow),
        Value::Double(d) => Ok(Value::Double(-d)),
        Value::Duration(d) => d.checked_neg().map(Value::Duration).ok_or_else(EvalError::overflow),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn size(value: &Value) -> Result<i64, EvalError> {
    let n = match value {
        Value::String(s) => s.chars().count(),
        Value::Bytes(b) => b.len(),
        Value::List(items) => items.len(),
        Value::Map(map) => map.len(),
        _ => return Err(EvalError::no_such_overload()),
    };
    Ok(n as i64)
}

fn string_member(function: &str, s: &str, arg: &str) -> Eval {
    match function {
        "contains" => Ok(Value::Bool(s.contains(arg))),
        "startsWith" => Ok(Value::Bool(s.starts_with(arg))),
        "endsWith" => Ok(Value::Bool(s.ends_with(arg))),
        "matches" => matches(s, arg),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn matches(s: &str, pattern: &str) -> Eval {
    let re = regex::Regex::new(pattern).map_err(|e| EvalError::new(format!("error parsing regexp: {e}")))?;
    Ok(Value::Bool(re.is_match(s)))
}

/// A type conversion (`int(x)`, `string(x)`, `type(x)`, ...).
pub fn convert(function: &str, value: &Value) -> Eval {
    match function {
        "dyn" => Ok(value.clone()),
        // An Object's or a JSONPatch's type is a `type(T)` whose name is `type` there.
        "type" if matches!(value, Value::Object(_) | Value::JsonPatch(_)) => Ok(Value::Type(super::value::Type::Type)),
        "type" => Ok(Value::Type(value.type_of())),
        "int" => super::conversions::to_int(value),
        "uint" => super::conversions::to_uint(value),
        "double" => super::conversions::to_double(value),
        "string" => super::conversions::to_string(value),
        "bytes" => match value {
            Value::Bytes(_) => Ok(value.clone()),
            Value::String(s) => Ok(Value::Bytes(Arc::from(s.as_bytes()))),
            _ => Err(EvalError::no_such_overload()),
        },
        "bool" => super::conversions::to_bool(value),
        "duration" => super::conversions::to_duration(value),
        "timestamp" => super::conversions::to_timestamp(value),
        _ => Err(EvalError::no_such_overload()),
    }
}

/// `value.field` (`field` true) or `value[key]`; with `optional`, `.?field` and `[?key]`.
pub fn select(value: &Value, key: &Value, optional: bool, field: bool) -> Eval {
    if let Value::Optional(inner) = value {
        return match inner {
            None => Ok(Value::Optional(None)),
            Some(inner) => select(inner, key, true, field),
        };
    }
    let found = match (value, key) {
        (Value::JsonPatch(patch), Value::String(name)) => {
            // cel-go's JSONPatchVal is an indexer: `.?name` tests the field first (`IsSet`).
            if optional && !patch.is_set(name)? {
                return Ok(Value::Optional(None));
            }
            let found = patch.get(name)?;
            return Ok(if optional { Value::Optional(Some(Arc::new(found))) } else { found });
        }
        (Value::Map(map), _) => map.get(key).cloned(),
        (Value::Opaque(opaque), Value::String(name)) if field => match &**opaque {
            super::value::Opaque::Authz(authz) => super::authz::select(authz, name),
            _ => None,
        },
        (Value::List(items), _) if !field => list_index(items, key)?,
        _ if optional => None,
        _ => return Err(EvalError::no_such_key(key)),
    };
    match (found, optional) {
        (Some(found), false) => Ok(found),
        (Some(found), true) => Ok(Value::Optional(Some(Arc::new(found)))),
        (None, true) => Ok(Value::Optional(None)),
        (None, false) if matches!(value, Value::List(_)) => {
            Err(EvalError::new(format!("index out of bounds: {}", key.display())))
        }
        (None, false) => Err(EvalError::no_such_key(key)),
    }
}

/// The element at an integral index (int, uint, or a double without a fraction).
fn list_index(items: &[Value], key: &Value) -> Result<Option<Value>, EvalError> {
    let index = match key {
        Value::Int(i) => *i,
        Value::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
        Value::Double(d) if d.fract() == 0.0 => *d as i64,
        Value::Double(_) => return Err(EvalError::new(format!("unsupported index value {}", key.display()))),
        _ => return Err(EvalError::new(format!("unsupported index type '{}' in list", key.type_of().name()))),
    };
    Ok(usize::try_from(index).ok().and_then(|i| items.get(i)).cloned())
}

/// The Go type cel-go names in some errors (`got 'types.Int', expected iterable type`).
pub fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "types.Null",
        Value::Bool(_) => "types.Bool",
        Value::Int(_) => "types.Int",
        Value::Uint(_) => "types.Uint",
        Value::Double(_) => "types.Double",
        Value::String(_) => "types.String",
        Value::Bytes(_) => "types.Bytes",
        Value::List(_) => "*types.baseList",
        Value::Map(_) => "*types.baseMap",
        Value::Timestamp(..) => "types.Timestamp",
        Value::Duration(_) => "types.Duration",
        Value::Type(_) => "*types.Type",
        Value::Optional(_) => "*types.Optional",
        Value::Opaque(_) => "*cel.Opaque",
        Value::Object(_) => "*dynamic.ObjectVal",
        Value::JsonPatch(_) => "*mutation.JSONPatchVal",
    }
}

/// cel-go's `actualSize`: a string's code points, a list's or map's entries, the bytes of
/// bytes; one for anything else, errors included.
pub(super) fn actual_size(value: Option<&Eval>) -> u64 {
    match value {
        Some(Ok(value)) => value_size(value),
        _ => 1,
    }
}

/// [`actual_size`] of a value.
pub(super) fn value_size(value: &Value) -> u64 {
    size(value).map_or(1, |n| n as u64)
}

/// A traversal of `size` units: a tenth of it, rounded up (`StringTraversalCostFactor`).
pub(super) fn traversal(size: u64) -> u64 {
    (size as f64 * TRAVERSAL).ceil() as u64
}

/// cel-go's cost of matching a regular expression of `pattern` units against `text` units.
fn regex_cost(text: u64, pattern: u64) -> u64 {
    ((1 + text) as f64 * TRAVERSAL).ceil() as u64 * (pattern as f64 * REGEX_LENGTH).ceil() as u64
}

/// Kubernetes' cost of its functions and of the strings extension's it prices, by function name
/// (k8s.io/apiserver's `CostEstimator.CallCost`, consulted before cel-go's defaults).
fn kubernetes_call_cost(function: &str, args: &[&Eval]) -> Option<u64> {
    let arg = |i: usize| args.get(i).copied();
    let cost = match function {
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes" => {
            arg(0).map_or(0, |v| v.as_ref().map_or(1, traversal_cost))
        }
        "lowerAscii" | "upperAscii" | "substring" | "trim" | "jsonpatch.escapeKey" => traversal(actual_size(arg(0))),
        "replace" | "split" => (actual_size(arg(0)) as f64 * 2.0 * TRAVERSAL).ceil() as u64,
        "find" | "findAll" if args.len() >= 2 => regex_cost(actual_size(arg(0)), actual_size(arg(1))),
        _ => return None,
    };
    Some(cost)
}

/// Kubernetes' `traversalCost`: a string's or bytes' length (bytes) a tenth, rounded down; a
/// list's or map's the sum of its elements' (keys and values); anything else one.
fn traversal_cost(value: &Value) -> u64 {
    match value {
        Value::String(s) => (s.len() as f64 * TRAVERSAL) as u64,
        Value::Bytes(b) => (b.len() as f64 * TRAVERSAL) as u64,
        Value::List(items) => items.iter().map(traversal_cost).sum(),
        Value::Map(map) => map.entries().map(|(k, v)| traversal_cost(k) + traversal_cost(v)).sum(),
        _ => 1,
    }
}

/// What a call of `function` costs, given its arguments (the target first for a member call)
/// and its result, in cel-go's order: the extensions' cost trackers, then Kubernetes'
/// `CostEstimator`, then cel-go's defaults.
pub fn call_cost(function: &str, args: &[&Eval], result: Option<&Value>) -> u64 {
    let arg = |i: usize| args.get(i).copied();
    if function == "join" {
        // Kubernetes reads `join`'s cost from its result.
        return (result.map_or(1, value_size) as f64 * 2.0 * TRAVERSAL).ceil() as u64;
    }
    let tracked = collections::call_cost(function, args, result)
        .or_else(|| kubernetes_call_cost(function, args))
        .or_else(|| kubernetes::call_cost(function, args));
    if let Some(cost) = tracked {
        return cost;
    }
    match function {
        "startsWith" | "endsWith" => traversal(actual_size(arg(1))),
        "strings.quote" => traversal(actual_size(arg(0))),
        "@in" if matches!(arg(1), Some(Ok(Value::List(_)))) => actual_size(arg(1)),
        "_==_" | "_!=_" => traversal(actual_size(arg(0)).min(actual_size(arg(1)))),
        // Reached only when the static types resolved the string or bytes overload.
        "_<_" | "_<=_" | "_>_" | "_>=_" => traversal(actual_size(arg(0)).min(actual_size(arg(1)))),
        "_+_" => traversal(actual_size(arg(0)) + actual_size(arg(1))),
        "matches" => regex_cost(actual_size(arg(0)), actual_size(arg(1))),
        "contains" => traversal(actual_size(arg(0))) * traversal(actual_size(arg(1))),
        "string" if matches!(arg(0), Some(Ok(Value::Bytes(_)))) => traversal(actual_size(arg(0))),
        "bytes" if matches!(arg(0), Some(Ok(Value::String(_)))) => traversal(actual_size(arg(0))),
        _ => 1,
    }
}
