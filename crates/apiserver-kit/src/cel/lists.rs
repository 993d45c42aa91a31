//! Functions of lists and optionals: Kubernetes' lists library (`isSorted`, `sum`, `min`,
//! `max`, `indexOf`, `lastIndexOf`) and cel-go's optional types (`optional.of`, `hasValue`,
//! `value`, `first`, `last`, `optional.unwrap`; `or` and `orValue` are steps of the plan).

use super::error::EvalError;
use super::value::Value;
use std::cmp::Ordering;
use std::sync::Arc;

type Eval = Result<Value, EvalError>;

/// Whether `function` is a member function of lists or optionals with `args` arguments.
pub fn is_member(function: &str, args: usize) -> bool {
    matches!(
        (function, args),
        ("isSorted" | "sum" | "min" | "max" | "hasValue" | "value" | "first" | "last" | "unwrapOpt", 0)
            | ("indexOf" | "lastIndexOf", 1)
    )
}

/// Whether `function` is a global function of this module with `args` arguments.
pub fn is_global(function: &str, args: usize) -> bool {
    matches!(
        (function, args),
        ("optional.none", 0) | ("optional.of" | "optional.ofNonZeroValue" | "optional.unwrap", 1)
    )
}

/// Calls a global function of this module.
pub fn call_global(function: &str, args: &[&Value]) -> Option<Eval> {
    let result = match (function, args) {
        ("optional.none", []) => Ok(Value::Optional(None)),
        ("optional.of", [value]) => Ok(some((*value).clone())),
        ("optional.ofNonZeroValue", [value]) => {
            Ok(if is_zero(value) { Value::Optional(None) } else { some((*value).clone()) })
        }
        ("optional.unwrap", [Value::List(items)]) => unwrap(items),
        _ => return None,
    };
    Some(result)
}

/// Calls a member function of a list or an optional.
pub fn call_member(function: &str, target: &Value, args: &[&Value]) -> Option<Eval> {
    let result = match (function, target, args) {
        ("hasValue", Value::Optional(inner), []) => Ok(Value::Bool(inner.is_some())),
        ("value", Value::Optional(Some(inner)), []) => Ok((**inner).clone()),
        ("value", Value::Optional(None), []) => Err(EvalError::new("optional.none() dereference")),
        ("first", Value::List(items), []) => Ok(items.first().cloned().map_or(Value::Optional(None), some)),
        ("last", Value::List(items), []) => Ok(items.last().cloned().map_or(Value::Optional(None), some)),
        ("unwrapOpt", Value::List(items), []) => unwrap(items),
        ("isSorted", Value::List(items), []) => is_sorted(items),
        ("sum", Value::List(items), []) => sum(items),
        ("min", Value::List(items), []) => extreme(items, "min", Ordering::Greater),
        ("max", Value::List(items), []) => extreme(items, "max", Ordering::Less),
        ("indexOf", Value::List(items), [item]) => {
            Ok(Value::Int(items.iter().position(|v| v.equals(item)).map_or(-1, |i| i as i64)))
        }
        ("lastIndexOf", Value::List(items), [item]) => {
            Ok(Value::Int(items.iter().rposition(|v| v.equals(item)).map_or(-1, |i| i as i64)))
        }
        _ => return None,
    };
    Some(result)
}

fn some(value: Value) -> Value {
    Value::Optional(Some(Arc::new(value)))
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z), in nanoseconds from the Unix epoch.
const ZERO_TIME: i128 = -62_135_596_800_000_000_000;

/// cel-go's zero values: null, false, 0, "", empty bytes, lists and maps, a zero duration, Go's
/// zero time (not the epoch), an Object without fields; an optional, even an empty one, is not.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(items) => items.is_empty(),
        Value::Map(map) => map.is_empty(),
        Value::Duration(d) => *d == 0,
        Value::Timestamp(t, _) => *t == ZERO_TIME,
        // A mutation's Object is zero without fields (`ObjectVal.IsZeroValue`).
        Value::Object(object) => object.fields().next().is_none(),
        Value::Optional(_) | Value::Type(_) | Value::Opaque(_) | Value::JsonPatch(_) => false,
    }
}

fn unwrap(items: &[Value]) -> Eval {
    let mut values = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Optional(Some(inner)) => values.push((**inner).clone()),
            Value::Optional(None) => {}
            _ => return Err(EvalError::no_such_overload()),
        }
    }
    Ok(Value::list(values))
}

fn order(a: &Value, b: &Value) -> Result<Ordering, EvalError> {
    super::functions::compare(a, b)
}

fn is_sorted(items: &[Value]) -> Eval {
    for pair in items.windows(2) {
        if order(&pair[0], &pair[1])? == Ordering::Greater {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

/// The sum of a list's numbers or durations, from an int 0 (cel-go dispatches a list whose type
/// is not known statically to the first overload, `list(int)`).
fn sum(items: &[Value]) -> Eval {
    let mut total = match items.first() {
        Some(Value::Uint(_)) => Value::Uint(0),
        Some(Value::Double(_)) => Value::Double(0.0),
        Some(Value::Duration(_)) => Value::Duration(0),
        _ => Value::Int(0),
    };
    for item in items {
        total = super::arithmetic::apply("_+_", &total, item)?;
    }
    Ok(total)
}

/// `min` (replacing the current when it compares greater) or `max`.
fn extreme(items: &[Value], name: &str, replace_when: Ordering) -> Eval {
    let Some(mut best) = items.first() else {
        return Err(EvalError::new(format!("{name} called on empty list")));
    };
    for item in &items[1..] {
        if order(best, item)? == replace_when {
            best = item;
        }
    }
    Ok(best.clone())
}
