//! cel-go's lists extension at Kubernetes' version (3: `slice`, `flatten`, `sort`, `sortBy`,
//! `distinct`, `reverse`, `lists.range`) and its sets extension (`sets.contains`,
//! `sets.equivalent`, `sets.intersects`), with their error messages and cost trackers.

use super::error::EvalError;
use super::value::Value;
use std::cmp::Ordering;

type Eval = Result<Value, EvalError>;

/// `@sortByAssociatedKeys`: the step `sortBy` expands to.
pub const SORT_BY_KEYS: &str = "@sortByAssociatedKeys";

/// cel-go's maximum size of `lists.range` (none: Kubernetes sets none).
const LIST_CREATE_COST: u64 = super::functions::LIST_CREATE_COST;

/// Whether `function` is a member function of lists here with `args` arguments.
pub fn is_member(function: &str, args: usize) -> bool {
    matches!(
        (function, args),
        ("flatten" | "sort" | "distinct" | "reverse", 0) | ("flatten" | SORT_BY_KEYS, 1) | ("slice", 2)
    )
}

/// Whether `function` is a global function here with `args` arguments.
pub fn is_global(function: &str, args: usize) -> bool {
    matches!((function, args), ("lists.range", 1) | ("sets.contains" | "sets.equivalent" | "sets.intersects", 2))
}

/// Calls a global function of this module.
pub fn call_global(function: &str, args: &[&Value]) -> Option<Eval> {
    let result = match (function, args) {
        ("lists.range", [Value::Int(n)]) if *n < 0 => {
            Err(EvalError::new(format!("lists.range: size must be non-negative, got {n}")))
        }
        ("lists.range", [Value::Int(n)]) => Ok(Value::list((0..*n).map(Value::Int).collect())),
        ("sets.contains", [Value::List(a), Value::List(b)]) => Ok(Value::Bool(contains_all(a, b))),
        ("sets.equivalent", [Value::List(a), Value::List(b)]) => {
            Ok(Value::Bool(contains_all(a, b) && contains_all(b, a)))
        }
        ("sets.intersects", [Value::List(a), Value::List(b)]) => {
            Ok(Value::Bool(a.iter().any(|x| b.iter().any(|y| y.equals(x)))))
        }
        _ => return None,
    };
    Some(result)
}

fn contains_all(list: &[Value], sub: &[Value]) -> bool {
    sub.iter().all(|x| list.iter().any(|y| y.equals(x)))
}

/// Calls a member function of a list.
pub fn call_member(function: &str, target: &Value, args: &[&Value]) -> Option<Eval> {
    let Value::List(items) = target else { return None };
    let result = match (function, args) {
        ("reverse", []) => Ok(Value::list(items.iter().rev().cloned().collect())),
        ("distinct", []) => Ok(distinct(items)),
        ("flatten", []) => flatten(items, 1).map(Value::list),
        ("flatten", [Value::Int(depth)]) => flatten(items, *depth).map(Value::list),
        ("slice", [Value::Int(start), Value::Int(end)]) => slice(items, *start, *end),
        ("sort", []) => sort_by_keys(items, items),
        (SORT_BY_KEYS, [Value::List(keys)]) => sort_by_keys(items, keys),
        _ => return None,
    };
    Some(result)
}

fn distinct(items: &[Value]) -> Value {
    let mut unique: Vec<Value> = Vec::with_capacity(items.len());
    for item in items {
        if !unique.iter().any(|seen| item.equals(seen)) {
            unique.push(item.clone());
        }
    }
    Value::list(unique)
}

fn flatten(items: &[Value], depth: i64) -> Result<Vec<Value>, EvalError> {
    if depth < 0 {
        return Err(EvalError::new("level must be non-negative"));
    }
    let mut flat = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::List(nested) if depth > 0 => flat.extend(flatten(nested, depth - 1)?),
            other => flat.push(other.clone()),
        }
    }
    Ok(flat)
}

fn slice(items: &[Value], start: i64, end: i64) -> Eval {
    if start < 0 || end < 0 {
        return Err(EvalError::new(format!("cannot slice({start}, {end}), negative indexes not supported")));
    }
    if start > end {
        return Err(EvalError::new(format!(
            "cannot slice({start}, {end}), start index must be less than or equal to end index"
        )));
    }
    if items.len() < end as usize {
        return Err(EvalError::new(format!("cannot slice({start}, {end}), list is length {}", items.len())));
    }
    Ok(Value::list(items[start as usize..end as usize].to_vec()))
}

/// Sorts `items` by `keys` (the same list for `sort`): keys of one comparable type, a stable
/// order of equal keys as Go's sort.Slice gives for small lists is not promised by cel-go either.
fn sort_by_keys(items: &[Value], keys: &[Value]) -> Eval {
    if items.len() != keys.len() {
        return Err(EvalError::new(format!(
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but got {} and {} elements respectively",
            items.len(),
            keys.len()
        )));
    }
    let Some(first) = keys.first() else { return Ok(Value::list(Vec::new())) };
    if !comparable(first) {
        return Err(EvalError::new("list elements must be comparable"));
    }
    if keys.iter().any(|k| k.type_of() != first.type_of()) {
        return Err(EvalError::new("list elements must have the same type"));
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| super::functions::compare(&keys[a], &keys[b]).unwrap_or(Ordering::Equal));
    Ok(Value::list(order.into_iter().map(|i| items[i].clone()).collect()))
}

fn comparable(value: &Value) -> bool {
    matches!(
        value,
        Value::Int(_)
            | Value::Uint(_)
            | Value::Double(_)
            | Value::Bool(_)
            | Value::String(_)
            | Value::Bytes(_)
            | Value::Timestamp(..)
            | Value::Duration(_)
    )
}

/// The cost trackers of the lists and sets extensions (cel-go's), given the call's arguments
/// (target first) and result; `None` for other functions.
pub fn call_cost(function: &str, args: &[&Result<Value, EvalError>], result: Option<&Value>) -> Option<u64> {
    let size = super::functions::actual_size;
    let arg = |i: usize| args.get(i).copied();
    let allocating = |factor: f64, n: u64| (n as f64 * factor) as u64 + 1 + LIST_CREATE_COST;
    let cost = match function {
        "slice" | "lists.range" | "reverse" => allocating(1.0, result.map_or(1, super::functions::value_size)),
        "flatten" => {
            let depth = match arg(1) {
                Some(Ok(Value::Int(d))) => *d as f64,
                _ => 1.0,
            };
            allocating(if depth < 0.0 { 1.0 } else { depth }, size(arg(0)))
        }
        "distinct" | "sort" => self_compare(arg(0)),
        SORT_BY_KEYS => self_compare(arg(1)),
        "sets.contains" | "sets.intersects" => 1 + size(arg(0)) * size(arg(1)),
        "sets.equivalent" => 1 + ((size(arg(0)) * size(arg(1))) as f64 * 2.0) as u64,
        _ => return None,
    };
    Some(cost)
}

/// cel-go's trackListSelfCompare: a worst-case O(n²) over the list.
fn self_compare(list: Option<&Result<Value, EvalError>>) -> u64 {
    let Some(Ok(Value::List(items))) = list else { return 1 + LIST_CREATE_COST };
    let n = items.len() as u64;
    let textual = matches!(items.first(), Some(Value::String(_) | Value::Bytes(_)));
    let factor = if textual { 2.1 } else { 2.0 };
    ((n * n) as f64 * factor) as u64 + 1 + LIST_CREATE_COST
}
