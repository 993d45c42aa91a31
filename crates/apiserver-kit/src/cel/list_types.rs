//! `==` and `+` of the lists a schema declares `x-kubernetes-list-type: set` or `map`, as
//! k8s.io/apiserver's `unstructuredSetList` and `unstructuredMapList` answer them: equality
//! ignores the order of the items (a map list's items matched by their keys), `+` is a union of
//! sets and a merge of map lists (an item of the right side replaces the left side's item of
//! the same keys in its place, others are appended), and the result keeps its list type.
//!
//! Their quirks are kept: a set's items must be scalars (`listSet operations are only supported
//! on lists of scalar values`), two items are the same set item only when they have one type
//! and one value (`1` and `1.0` are two), and a decoded map list reads the keys of the other
//! side's items in their JSON, by their CEL identifiers (so a key whose name needs escaping
//! reads as absent, and an item CEL built matches nothing), while a list `+` made reads them as
//! CEL does.

use super::error::EvalError;
use super::value::{List, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How `==` and `+` read a list.
#[derive(Clone, Debug, Default)]
pub enum ListKind {
    /// A sequence: `x-kubernetes-list-type: atomic`, unset, and every list CEL builds.
    #[default]
    Atomic,
    /// `x-kubernetes-list-type: set`.
    Set,
    /// `x-kubernetes-list-type: map`.
    Map(Arc<MapKeys>),
}

/// A map list's keys (`x-kubernetes-list-map-keys`), and whether the list is a decoded
/// object's (its items' keys read in their JSON) or one `+` made (read as CEL reads them).
#[derive(Debug)]
pub struct MapKeys {
    /// The keys' names, and their CEL identifiers (the name when it has none).
    keys: Vec<(String, String)>,
    decoded: bool,
}

impl MapKeys {
    /// The keys of a decoded map list: `(name, identifier)` of each.
    pub fn decoded(keys: Vec<(String, String)>) -> MapKeys {
        MapKeys { keys, decoded: true }
    }

    fn merged(&self) -> Arc<MapKeys> {
        Arc::new(MapKeys { keys: self.keys.clone(), decoded: false })
    }

    /// An item's key, as `refValMapKey` (or, for `decoded` of another item, `toMapKey`) makes it;
    /// `None` when it has none (`toMapKey` of an item that is not a decoded object).
    fn of(&self, item: &Value, decoded: bool) -> Option<Vec<Scalar>> {
        let Value::Map(map) = item else {
            return (!decoded).then(|| vec![Scalar::Absent; self.keys.len()]);
        };
        if decoded && !map.is_native() {
            return None;
        }
        let part = |(name, identifier): &(String, String)| {
            // The JSON of an item holds names: an identifier that is not its name finds nothing.
            let found = (!decoded || name == identifier).then(|| map.get_str(identifier)).flatten();
            found.map_or(Scalar::Absent, Scalar::of)
        };
        Some(self.keys.iter().map(part).collect())
    }
}

/// A key part or a set item as a Go map key: its type and value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Scalar {
    Absent,
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(u64),
    String(Arc<str>),
    Bytes(Arc<[u8]>),
    Timestamp(i128, i32),
    Duration(i64),
    Other(String),
}

impl Scalar {
    fn of(value: &Value) -> Scalar {
        match value {
            Value::Null => Scalar::Null,
            Value::Bool(b) => Scalar::Bool(*b),
            Value::Int(i) => Scalar::Int(*i),
            Value::Uint(u) => Scalar::Uint(*u),
            // Go's `0.0 == -0.0` as a map key.
            Value::Double(d) => Scalar::Double(if *d == 0.0 { 0 } else { d.to_bits() }),
            Value::String(s) => Scalar::String(s.clone()),
            Value::Bytes(b) => Scalar::Bytes(b.clone()),
            Value::Timestamp(at, offset) => Scalar::Timestamp(*at, *offset),
            Value::Duration(d) => Scalar::Duration(*d),
            other => Scalar::Other(format!("{other:?}")),
        }
    }

    /// A set item's key: `setElementKey`, which refuses lists and maps.
    fn of_set_item(value: &Value) -> Result<Scalar, EvalError> {
        match value {
            Value::List(_) | Value::Map(_) => {
                Err(EvalError::new("listSet operations are only supported on lists of scalar values"))
            }
            other => Ok(Scalar::of(other)),
        }
    }
}

/// `left == right`, as `left`'s kind compares (cel-go's `left.Equal(right)`).
pub fn equal(left: &List, right: &List) -> Result<bool, EvalError> {
    match left.kind() {
        ListKind::Atomic => atomic_equal(left, right),
        ListKind::Set => set_equal(left, right),
        ListKind::Map(keys) => map_list_equal(keys, left, right),
    }
}

/// `left + right`.
pub fn add(left: &List, right: &List) -> Result<Value, EvalError> {
    match left.kind() {
        ListKind::Atomic => Ok(Value::list(left.iter().chain(right.iter()).cloned().collect())),
        ListKind::Set => {
            let mut items = left.to_vec();
            let mut seen: HashSet<Scalar> = left.iter().map(Scalar::of_set_item).collect::<Result<_, _>>()?;
            for item in right.iter() {
                if seen.insert(Scalar::of_set_item(item)?) {
                    items.push(item.clone());
                }
            }
            Ok(Value::kind_list(items, ListKind::Set))
        }
        ListKind::Map(keys) => {
            let mut items = left.to_vec();
            let mut positions: HashMap<Vec<Scalar>, usize> = HashMap::new();
            for (i, item) in left.iter().enumerate() {
                positions.extend(keys.of(item, false).map(|key| (key, i)));
            }
            for item in right.iter() {
                match keys.of(item, false).and_then(|key| positions.get(&key).copied()) {
                    Some(position) => items[position] = item.clone(),
                    None => items.push(item.clone()),
                }
            }
            Ok(Value::kind_list(items, ListKind::Map(keys.merged())))
        }
    }
}

/// Item by item; a decoded list's answer is its first item that is not equal (or an error),
/// a list CEL built ignores errors (cel-go's `baseList`).
fn atomic_equal(left: &List, right: &List) -> Result<bool, EvalError> {
    if left.len() != right.len() {
        return Ok(false);
    }
    for (a, b) in left.iter().zip(right.iter()) {
        match a.equal(b) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(error) if left.is_native() => return Err(error),
            Err(_) => {}
        }
    }
    Ok(true)
}

fn set_equal(left: &List, right: &List) -> Result<bool, EvalError> {
    if left.len() != right.len() {
        return Ok(false);
    }
    let set: HashSet<Scalar> = left.iter().map(Scalar::of_set_item).collect::<Result<_, _>>()?;
    let mut seen = HashSet::with_capacity(set.len());
    for item in right.iter() {
        let key = Scalar::of_set_item(item)?;
        if !set.contains(&key) {
            return Ok(false);
        }
        seen.insert(key);
    }
    Ok(seen.len() == set.len())
}

fn map_list_equal(keys: &MapKeys, left: &List, right: &List) -> Result<bool, EvalError> {
    if left.len() != right.len() {
        return Ok(false);
    }
    // A key that repeats keeps its last item, as a Go map assigned in order does.
    let mut by_key: HashMap<Vec<Scalar>, &Value> = HashMap::with_capacity(left.len());
    for item in left.iter() {
        by_key.extend(keys.of(item, keys.decoded).map(|key| (key, item)));
    }
    let mut seen = HashSet::with_capacity(by_key.len());
    for item in right.iter() {
        let Some((key, found)) = keys.of(item, keys.decoded).and_then(|key| by_key.get_key_value(&key)) else {
            return Ok(false);
        };
        if !found.equal(item)? {
            return Ok(false);
        }
        seen.insert(key);
    }
    Ok(seen.len() == by_key.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::value::Map;

    fn strings(items: &[&str]) -> Vec<Value> {
        items.iter().map(|s| Value::string(s)).collect()
    }

    fn set(items: &[&str]) -> List {
        match Value::kind_list(strings(items), ListKind::Set) {
            Value::List(list) => list,
            _ => unreachable!(),
        }
    }

    fn port(name: &str, number: i64) -> Value {
        let entries = vec![(Value::string("name"), Value::string(name)), (Value::string("port"), Value::Int(number))];
        Value::Map(Arc::new(Map::native(entries)))
    }

    fn ports(items: Vec<Value>) -> List {
        let keys = MapKeys::decoded(vec![("name".into(), "name".into())]);
        match Value::kind_list(items, ListKind::Map(Arc::new(keys))) {
            Value::List(list) => list,
            _ => unreachable!(),
        }
    }

    #[test]
    fn sets_are_equal_in_any_order_and_add_as_a_union() {
        assert!(equal(&set(&["a", "b"]), &set(&["b", "a"])).unwrap());
        assert!(!equal(&set(&["a", "b"]), &set(&["a", "c"])).unwrap());
        let Value::List(plain) = Value::list(strings(&["b", "a"])) else { unreachable!() };
        assert!(equal(&set(&["a", "b"]), &plain).unwrap(), "the left side's kind decides");
        assert!(!equal(&plain, &set(&["a", "b"])).unwrap());
        let Value::List(union) = add(&set(&["a", "b"]), &plain).unwrap() else { unreachable!() };
        assert_eq!(union.len(), 2);
        let Value::List(more) = add(&union, &set(&["c", "a"])).unwrap() else { unreachable!() };
        assert_eq!(more.iter().map(Value::display).collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    #[test]
    fn a_set_of_lists_is_an_error() {
        let Value::List(lists) = Value::kind_list(vec![Value::list(vec![])], ListKind::Set) else { unreachable!() };
        let error = equal(&lists, &lists).unwrap_err();
        assert_eq!(error.to_string(), "listSet operations are only supported on lists of scalar values");
    }

    #[test]
    fn map_lists_match_items_by_key_and_merge_in_place() {
        let left = ports(vec![port("http", 80), port("https", 443)]);
        assert!(equal(&left, &ports(vec![port("https", 443), port("http", 80)])).unwrap());
        assert!(!equal(&left, &ports(vec![port("https", 443), port("http", 8080)])).unwrap());
        let Value::List(merged) = add(&left, &ports(vec![port("metrics", 9090), port("http", 8080)])).unwrap() else {
            unreachable!()
        };
        let numbers: Vec<String> = merged.iter().map(|p| p.to_tagged_json()["map"][1][1]["int"].to_string()).collect();
        assert_eq!(numbers, ["\"8080\"", "\"443\"", "\"9090\""]);
    }
}
