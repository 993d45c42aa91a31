//! Objects seen through their schema, as structured-merge-diff's `typed` package sees them: which
//! fields an object sets ([`to_field_set`]) and which fields differ between two versions of it
//! ([`compare`]), the two questions managed fields and server-side apply ask.
//!
//! The schema is the published one, compiled into its shapes ([`super::shape`]): `set` list
//! entries are named by value (`v:`), `map` list entries by their key fields (`k:`).

use super::fieldpath::{ElementIndex, PathElement, Set, sort_by_element};
use super::shape::{ListKind, Schema, Shape, field_schema, shape};
use serde_json::{Map, Value};

/// The path element naming `entry` of a `set` or `map` list; `None` for an entry that cannot be
/// named (a map entry missing a key field, or a set entry that is not a scalar).
pub(crate) fn entry_element(kind: &ListKind, entry: &Value) -> Option<PathElement> {
    match kind {
        ListKind::Atomic => None,
        ListKind::Set => (!entry.is_object() && !entry.is_array()).then(|| PathElement::Value(entry.clone())),
        ListKind::Map(keys) => {
            let fields = keys
                .iter()
                .map(|k| entry.get(k).filter(|v| !v.is_null()).map(|v| (k.clone(), v.clone())))
                .collect::<Option<Vec<_>>>()?;
            Some(PathElement::key(fields))
        }
    }
}

/// Every field `value` sets, as structured-merge-diff's `ToFieldSet`: scalars and atomic values
/// are members; an object's fields are walked (a field is a member itself when it is null, an
/// empty object, or an undeclared key of a map); list entries are members and are walked. An
/// unknown field (a key an object neither declares nor keeps) is no member: the decoder drops it.
pub fn to_field_set(value: &Value, schema: &Schema) -> Set {
    fields_of(value, Some(schema)).1
}

/// Whether `value` is a leaf (a member wherever it is), and the fields it sets below it. The set
/// is built from the leaves up, a list's entries sorted once (see [`Set::of_entries`]).
fn fields_of(value: &Value, schema: Option<&Schema>) -> (bool, Set) {
    match shape(schema, value) {
        Shape::Scalar | Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => {
            (true, Set::new())
        }
        Shape::Object { fields, extra, closed, .. } => {
            let mut below = Set::new();
            for (key, child) in value.as_object().into_iter().flatten() {
                let declared = fields.is_some_and(|f| f.contains_key(key));
                // An unknown field is dropped from what is written: nobody owns it.
                if closed && !declared {
                    continue;
                }
                let (leaf, set) = fields_of(child, field_schema(fields, extra, key));
                let member = leaf || child.is_null() || child.as_object().is_some_and(Map::is_empty) || !declared;
                // The keys of a map come sorted, as the elements sort: each is appended.
                below.attach(PathElement::Field(key.clone()), member, set);
            }
            (false, below)
        }
        Shape::List { items, kind } => {
            let entries = value.as_array().into_iter().flatten().filter_map(|entry| {
                let element = entry_element(kind, entry)?;
                Some((element, true, fields_of(entry, items).1))
            });
            (false, Set::of_entries(entries.collect()))
        }
    }
}

/// Whether two values are equal as structured-merge-diff's `value.Equals` has it: numbers by
/// value (`120` equals `120.0`), lists and maps element by element.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| values_equal(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

/// What changed from one version of an object to the next.
#[derive(Debug, Default, PartialEq)]
pub struct Comparison {
    /// Fields only the new version sets.
    pub added: Set,
    /// Fields both set, to different values.
    pub modified: Set,
    /// Fields only the old version sets.
    pub removed: Set,
}

impl Comparison {
    /// Whether nothing changed.
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Puts the comparison `below` a node named by `element`, and the node itself in the set of
    /// its `change`. The name is made only when the node changed or something below it did:
    /// most fields of an update do not, and their names are not copied.
    fn attach(&mut self, element: impl FnOnce() -> PathElement, change: Option<Change>, below: Comparison) {
        let targets = [
            (&mut self.added, change == Some(Change::Added), below.added),
            (&mut self.modified, change == Some(Change::Modified), below.modified),
            (&mut self.removed, change == Some(Change::Removed), below.removed),
        ];
        let mut left = targets.iter().filter(|(_, member, set)| *member || !set.is_empty()).count();
        if left == 0 {
            return;
        }
        let mut element = Some(element());
        for (set, member, below) in targets.into_iter().filter(|(_, member, set)| *member || !set.is_empty()) {
            left -= 1;
            // The last set to take the element takes it; the others take copies.
            let named = if left == 0 { element.take() } else { element.clone() };
            if let Some(named) = named {
                set.attach(named, member, below);
            }
        }
    }
}

/// What happened to one node between two versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Added,
    Modified,
    Removed,
}

/// Compares `old` with `new` field by field, as structured-merge-diff's `Compare`: an atomic
/// value (scalar, atomic object or list, or an object or list empty on both sides) is one leaf;
/// an object is compared key by key and a `set`/`map` list entry by entry; a node present on one
/// side only is added or removed along with everything below it.
pub fn compare(old: &Value, new: &Value, schema: &Schema) -> Comparison {
    compare_node(Some(old), Some(new), Some(schema)).0
}

/// Compares one node: the changes below it (paths relative to it), and its own change. The sets
/// are built from the leaves up, so no path is copied.
fn compare_node(old: Option<&Value>, new: Option<&Value>, schema: Option<&Schema>) -> (Comparison, Option<Change>) {
    let mut below = Comparison::default();
    let Some(sample) = new.or(old) else { return (below, None) };
    let leaf = match shape(schema, sample) {
        Shape::Scalar | Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => true,
        Shape::Object { fields, extra, .. } => {
            let (o, n) = (old.and_then(Value::as_object), new.and_then(Value::as_object));
            if o.is_none_or(Map::is_empty) && n.is_none_or(Map::is_empty) {
                true
            } else {
                for (key, o, n) in join_fields(o, n) {
                    let (sub, change) = compare_node(o, n, field_schema(fields, extra, key));
                    below.attach(|| PathElement::Field(key.clone()), change, sub);
                }
                false
            }
        }
        Shape::List { items, kind } => {
            let (o, n) = (old.and_then(Value::as_array), new.and_then(Value::as_array));
            if o.is_none_or(Vec::is_empty) && n.is_none_or(Vec::is_empty) {
                true
            } else {
                let (o, n) = (o.map(Vec::as_slice).unwrap_or_default(), n.map(Vec::as_slice).unwrap_or_default());
                compare_entries(o, n, items, kind, &mut below);
                false
            }
        }
    };
    let change = match (old, new) {
        (None, Some(_)) => Some(Change::Added),
        (Some(_), None) => Some(Change::Removed),
        (Some(o), Some(n)) if leaf && !values_equal(o, n) => Some(Change::Modified),
        _ => None,
    };
    (below, change)
}

/// Every node of `value` below its root, each a member: what [`compare`] finds added when the
/// old version is an empty object (a create), without comparing anything.
pub fn added(value: &Value, schema: &Schema) -> Set {
    added_below(value, Some(schema))
}

/// The nodes below `value`, as `compare_node(None, Some(value), …)` finds them.
fn added_below(value: &Value, schema: Option<&Schema>) -> Set {
    let mut below = Set::new();
    match shape(schema, value) {
        Shape::Scalar | Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => {}
        Shape::Object { fields, extra, .. } => {
            for (key, child) in value.as_object().into_iter().flatten() {
                let sub = added_below(child, field_schema(fields, extra, key));
                below.attach(PathElement::Field(key.clone()), true, sub);
            }
        }
        Shape::List { items, kind } => {
            let groups = group_entries(kind, value.as_array().map(Vec::as_slice).unwrap_or_default());
            let entries = groups.into_iter().map(|(element, entries)| {
                // A name that repeats is one value: the entry, not what is below it.
                let sub = match entries.as_slice() {
                    [single] => added_below(single, items),
                    _ => Set::new(),
                };
                (element, true, sub)
            });
            below = Set::of_entries(entries.collect());
        }
    }
    below
}

/// The fields of two objects in key order, each with its value on either side: a merge of the
/// two sorted maps.
fn join_fields<'v>(
    old: Option<&'v Map<String, Value>>,
    new: Option<&'v Map<String, Value>>,
) -> impl Iterator<Item = (&'v String, Option<&'v Value>, Option<&'v Value>)> {
    let mut old = old.into_iter().flatten().peekable();
    let mut new = new.into_iter().flatten().peekable();
    std::iter::from_fn(move || match (old.peek(), new.peek()) {
        (Some((ko, _)), Some((kn, _))) if ko == kn => {
            let ((key, o), (_, n)) = (old.next()?, new.next()?);
            Some((key, Some(o), Some(n)))
        }
        (Some((ko, _)), Some((kn, _))) if ko > kn => new.next().map(|(key, n)| (key, None, Some(n))),
        (Some(_), _) => old.next().map(|(key, o)| (key, Some(o), None)),
        (None, _) => new.next().map(|(key, n)| (key, None, Some(n))),
    })
}

/// The entries of a `set` or `map` list grouped by name, in order of first appearance: an entry
/// joins the first group whose name equals its own, found through an index of the groups' names.
fn group_entries<'v>(kind: &ListKind, entries: &'v [Value]) -> Vec<(PathElement, Vec<&'v Value>)> {
    let named: Vec<(PathElement, &Value)> =
        entries.iter().filter_map(|entry| Some((entry_element(kind, entry)?, entry))).collect();
    // Each group: the position in `named` of the entry that opened it, and its entries.
    let mut groups: Vec<(usize, Vec<&Value>)> = Vec::new();
    {
        let mut openers = ElementIndex::new();
        for (position, (element, entry)) in named.iter().enumerate() {
            match openers.first(element).and_then(|group| groups.get_mut(group)) {
                Some((_, values)) => values.push(*entry),
                None => {
                    openers.push(element);
                    groups.push((position, vec![*entry]));
                }
            }
        }
    }
    let mut names: Vec<Option<PathElement>> = named.into_iter().map(|(element, _)| Some(element)).collect();
    groups.into_iter().filter_map(|(opener, values)| Some((names.get_mut(opener)?.take()?, values))).collect()
}

/// A change to the node of a list entry named by the element: its own change and those below it.
type EntryChange<'n> = (&'n PathElement, Option<Change>, Comparison);

/// Compares the entries of a `set` or `map` list by their names; an entry whose name repeats
/// counts as one value (modified when the repeated runs differ). Names are looked up through
/// indexes, and the changes sorted by name once, so that each is appended to its set.
fn compare_entries(old: &[Value], new: &[Value], items: Option<&Schema>, kind: &ListKind, below: &mut Comparison) {
    let (old, new) = (group_entries(kind, old), group_entries(kind, new));
    let old_index = ElementIndex::of(old.iter().map(|(e, _)| e));
    let new_index = ElementIndex::of(new.iter().map(|(e, _)| e));
    let mut names: Vec<&PathElement> = old.iter().map(|(e, _)| e).collect();
    names.extend(new.iter().map(|(e, _)| e).filter(|e| !old_index.contains(e)));
    let empty = Vec::new();
    let mut changes = Vec::new();
    for name in names {
        let o = old_index.first(name).and_then(|i| old.get(i)).map_or(&empty, |(_, values)| values);
        let n = new_index.first(name).and_then(|i| new.get(i)).map_or(&empty, |(_, values)| values);
        compare_named(name, o, n, items, &mut changes);
    }
    for (name, change, sub) in sort_by_element(changes, &|(name, _, _)| *name) {
        below.attach(|| name.clone(), change, sub);
    }
}

/// Adds to `changes` what changed from the entries `o` to the entries `n`, all named `name`.
fn compare_named<'n>(
    name: &'n PathElement,
    o: &[&Value],
    n: &[&Value],
    items: Option<&Schema>,
    changes: &mut Vec<EntryChange<'n>>,
) {
    let mut record = |(sub, change): (Comparison, Option<Change>)| {
        if change.is_some() || !sub.is_same() {
            changes.push((name, change, sub));
        }
    };
    let own = match (o.len(), n.len()) {
        (0..=1, 0..=1) => compare_node(o.first().copied(), n.first().copied(), items),
        (2.., 2..) => {
            let same = o.len() == n.len() && o.iter().zip(n).all(|(a, b)| values_equal(a, b));
            (Comparison::default(), (!same).then_some(Change::Modified))
        }
        // A repeated name on one side only: the run is removed (added), and the single entry
        // on the other side, if any, added (removed) with everything below it.
        (2.., _) => {
            if let Some(first) = n.first() {
                record(compare_node(None, Some(first), items));
            }
            (Comparison::default(), Some(Change::Removed))
        }
        _ => {
            if let Some(first) = o.first() {
                record(compare_node(Some(first), None, items));
            }
            (Comparison::default(), Some(Change::Added))
        }
    };
    record(own);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::compile(&json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            }},
            "spec": {"type": "object", "properties": {
                "weight": {"type": "number"}, "height": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
            }},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object", "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}},
            }},
        }}))
    }

    #[test]
    fn a_create_adds_every_node_below_what_existed_as_the_kube_apiserver_records_it() {
        let old = json!({"metadata": {}});
        let new = json!({"metadata": {"labels": {"herd": "north"}}, "spec": {"weight": 1, "height": 2}});
        let c = compare(&old, &new, &schema());
        // What kube-apiserver 1.20 wrote for the same create (apart from the status it then dropped).
        assert_eq!(
            c.added.to_fields_v1(),
            json!({"f:metadata":{"f:labels":{".":{},"f:herd":{}}},"f:spec":{".":{},"f:height":{},"f:weight":{}}})
        );
        assert!(c.modified.is_empty() && c.removed.is_empty());
    }

    #[test]
    fn changes_are_sorted_into_added_modified_and_removed() {
        let old = json!({"spec": {"weight": 1, "height": 2, "tags": ["a"]}, "metadata": {"finalizers": ["x", "y"]}});
        let new = json!({"spec": {"weight": 5, "tags": ["a", "b"]}, "metadata": {"finalizers": ["y", "z"]}});
        let c = compare(&old, &new, &schema());
        assert_eq!(
            c.modified.to_fields_v1(),
            json!({"f:spec":{"f:tags":{},"f:weight":{}}}),
            "an atomic list is one leaf"
        );
        assert_eq!(c.added.to_fields_v1(), json!({"f:metadata":{"f:finalizers":{"v:\"z\"":{}}}}));
        assert_eq!(
            c.removed.to_fields_v1(),
            json!({"f:metadata":{"f:finalizers":{"v:\"x\"":{}}},"f:spec":{"f:height":{}}})
        );
        assert!(compare(&new, &new, &schema()).is_same());
    }

    #[test]
    fn what_a_create_adds_is_what_comparing_with_an_empty_object_finds() {
        let objects = [
            json!({}),
            json!({"metadata": {"labels": {"herd": "north"}, "finalizers": ["x", "y", "x"]}, "spec": {}}),
            json!({"spec": {"weight": 1, "tags": ["a"], "extra": {"deep": {"er": [1, {"a": null}]}}}, "kind": null}),
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"status": "no key"},
                {"type": "Fed"}, {"type": "Fed", "status": "twice"}]}, "metadata": {"finalizers": [{"not": "a scalar"}]}}),
            json!({"spec": [], "metadata": {"labels": {}}, "status": {"conditions": []}}),
        ];
        for object in objects {
            assert_eq!(added(&object, &schema()), compare(&json!({}), &object, &schema()).added, "{object}");
        }
    }

    #[test]
    fn numbers_compare_by_value() {
        let c = compare(&json!({"spec": {"weight": 120.0}}), &json!({"spec": {"weight": 120}}), &schema());
        assert!(c.is_same(), "{c:?}");
        assert!(!values_equal(&json!([1, 2]), &json!([1.0, 2.5])));
    }

    #[test]
    fn map_lists_are_compared_entry_by_entry_by_their_keys() {
        let old = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Fed", "status": "True"}]}});
        let new =
            json!({"status": {"conditions": [{"type": "Fed", "status": "True"}, {"type": "Ready", "status": "True"}]}});
        let c = compare(&old, &new, &schema());
        assert_eq!(
            c.modified.to_fields_v1(),
            json!({"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:status":{}}}}})
        );
        assert!(c.added.is_empty() && c.removed.is_empty(), "order alone is no change: {c:?}");
    }

    #[test]
    fn the_field_set_of_an_object_names_leaves_and_list_entries_but_no_unknown_field() {
        let object = json!({
            "metadata": {"labels": {"herd": "north"}, "finalizers": ["orphan"], "colour": "red"},
            "spec": {"weight": 1, "tags": ["a", "b"], "horns": {"left": 1}},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "x"}]},
            "extra": {"free": {"form": 1}},
        });
        assert_eq!(
            to_field_set(&object, &schema()).to_fields_v1(),
            json!({
                "f:metadata": {"f:finalizers": {"v:\"orphan\"": {}}, "f:labels": {"f:herd": {}}},
                "f:spec": {"f:tags": {}, "f:weight": {}},
                "f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}}},
            })
        );
    }

    /// A schema of `set` and `map` lists, one map list's entries holding more of both.
    pub(crate) fn list_schema() -> Schema {
        let set = json!({"type": "array", "items": {}, "x-kubernetes-list-type": "set"});
        Schema::compile(&json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {
                "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
            "spec": {"type": "object", "properties": {
                "tags": set, "atomic": {"type": "array", "items": {}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"],
                    "items": {"type": "object", "properties": {"name": {}, "port": {}, "value": {}, "tags": set,
                        "hosts": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["ip"],
                            "items": {"type": "object", "properties": {"ip": {}, "value": {}}}}}}},
            }},
        }}))
    }

    /// A few scalars, so that lists repeat them; `1` and `1.0` are one name.
    fn scalar() -> impl Strategy<Value = Value> {
        prop::sample::select(vec![json!("a"), json!("b"), json!(1), json!(1.0), json!(2), json!(true), Value::Null])
    }

    /// An entry of a set: mostly a scalar, sometimes a value that names no entry.
    fn set_entry() -> impl Strategy<Value = Value> {
        prop_oneof![6 => scalar(), 1 => Just(json!({"x": 1})), 1 => Just(json!([1]))]
    }

    /// An object of the fields that are `Some`.
    fn object_of(fields: Vec<(&str, Option<Value>)>) -> Value {
        Value::Object(fields.into_iter().filter_map(|(name, value)| Some((name.to_string(), value?))).collect())
    }

    /// Maybe a list of fewer than `most` entries.
    fn list(entry: impl Strategy<Value = Value>, most: usize) -> impl Strategy<Value = Option<Value>> {
        prop::option::of(prop::collection::vec(entry, 0..most).prop_map(Value::Array))
    }

    /// An entry of the `ports` map list: keys sometimes missing, repeated, or numbers written two ways.
    fn port() -> impl Strategy<Value = Value> {
        let host = (prop::option::of(scalar()), prop::option::of(scalar()))
            .prop_map(|(ip, value)| object_of(vec![("ip", ip), ("value", value)]));
        let name = prop::option::of(prop::sample::select(vec![json!("a"), json!("b")]));
        let number = prop::option::of(prop::sample::select(vec![json!(1), json!(1.0), json!(2)]));
        (name, number, prop::option::of(scalar()), list(host, 4), list(set_entry(), 4)).prop_map(
            |(name, port, value, hosts, tags)| {
                object_of(vec![("name", name), ("port", port), ("value", value), ("hosts", hosts), ("tags", tags)])
            },
        )
    }

    /// An object of [`list_schema`], small enough that its lists repeat names.
    pub(crate) fn listed_object() -> impl Strategy<Value = Value> {
        let metadata = (list(set_entry(), 6), prop::option::of(scalar()))
            .prop_map(|(finalizers, labels)| object_of(vec![("finalizers", finalizers), ("labels", labels)]));
        let spec = (list(set_entry(), 6), list(scalar(), 3), list(port(), 6))
            .prop_map(|(tags, atomic, ports)| object_of(vec![("tags", tags), ("atomic", atomic), ("ports", ports)]));
        (prop::option::of(metadata), prop::option::of(spec), prop::option::of(scalar())).prop_map(
            |(metadata, spec, extra)| object_of(vec![("metadata", metadata), ("spec", spec), ("extra", extra)]),
        )
    }

    /// Both sets, and what they write as `FieldsV1` (which tells `1` from `1.0`), are equal.
    fn same_sets(a: &Set, b: &Set) -> Result<(), TestCaseError> {
        prop_assert_eq!(a, b);
        prop_assert_eq!(a.to_fields_v1(), b.to_fields_v1());
        Ok(())
    }

    proptest! {
        /// The field sets and comparisons built through indexes and sorted once are the ones the
        /// linear searches built.
        #[test]
        fn indexed_field_sets_and_comparisons_are_the_linear_ones(old in listed_object(), new in listed_object()) {
            let schema = list_schema();
            same_sets(&to_field_set(&new, &schema), &reference::to_field_set(&new, &schema))?;
            same_sets(&added(&new, &schema), &reference::added(&new, &schema))?;
            let (mine, theirs) = (compare(&old, &new, &schema), reference::compare(&old, &new, &schema));
            same_sets(&mine.added, &theirs.added)?;
            same_sets(&mine.modified, &theirs.modified)?;
            same_sets(&mine.removed, &theirs.removed)?;
        }

        /// Entries are grouped as the linear search grouped them, even where equality is not
        /// transitive (`2^53 + 1` equals the float `2^53`, which equals `2^53`).
        #[test]
        fn entries_group_as_the_linear_search_grouped_them(
            entries in prop::collection::vec(prop::sample::select(vec![
                json!(9007199254740992_i64), json!(9007199254740993_i64), json!(9007199254740992.0),
                json!(1), json!(1.0), json!(-0.0), json!(0), json!("a"), json!({"x": 1}),
            ]), 0..12),
        ) {
            let shown = |groups: Vec<(PathElement, Vec<&Value>)>| -> Vec<(String, Vec<Value>)> {
                groups.into_iter().map(|(e, values)| (e.serialize(), values.into_iter().cloned().collect())).collect()
            };
            prop_assert_eq!(
                shown(group_entries(&ListKind::Set, &entries)),
                shown(reference::group_entries(&ListKind::Set, &entries))
            );
        }
    }

    /// The quadratic algorithms these replaced, kept as the reference the new ones must agree with.
    mod reference {
        use super::super::*;
        use crate::structured_merge::fieldpath::Path;

        /// [`to_field_set`], inserting every path from the root.
        pub fn to_field_set(value: &Value, schema: &Schema) -> Set {
            let mut set = Set::new();
            walk_fields(value, Some(schema), &mut Vec::new(), &mut set);
            set
        }

        fn walk_fields(value: &Value, schema: Option<&Schema>, path: &mut Path, set: &mut Set) {
            match shape(schema, value) {
                Shape::Scalar => set.insert(path),
                Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => set.insert(path),
                Shape::Object { fields, extra, closed, .. } => {
                    for (key, child) in value.as_object().into_iter().flatten() {
                        let declared = fields.is_some_and(|f| f.contains_key(key));
                        if closed && !declared {
                            continue;
                        }
                        path.push(PathElement::Field(key.clone()));
                        walk_fields(child, field_schema(fields, extra, key), path, set);
                        if child.is_null() || child.as_object().is_some_and(Map::is_empty) || !declared {
                            set.insert(path);
                        }
                        path.pop();
                    }
                }
                Shape::List { items, kind } => {
                    for entry in value.as_array().into_iter().flatten() {
                        let Some(element) = entry_element(kind, entry) else { continue };
                        path.push(element);
                        walk_fields(entry, items, path, set);
                        set.insert(path);
                        path.pop();
                    }
                }
            }
        }

        /// [`compare`], grouping and finding entries by linear search.
        pub fn compare(old: &Value, new: &Value, schema: &Schema) -> Comparison {
            compare_node(Some(old), Some(new), Some(schema)).0
        }

        fn compare_node(
            old: Option<&Value>,
            new: Option<&Value>,
            schema: Option<&Schema>,
        ) -> (Comparison, Option<Change>) {
            let mut below = Comparison::default();
            let Some(sample) = new.or(old) else { return (below, None) };
            let leaf = match shape(schema, sample) {
                Shape::Scalar | Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => true,
                Shape::Object { fields, extra, .. } => {
                    let (o, n) = (old.and_then(Value::as_object), new.and_then(Value::as_object));
                    if o.is_none_or(Map::is_empty) && n.is_none_or(Map::is_empty) {
                        true
                    } else {
                        for (key, o, n) in join_fields(o, n) {
                            let (sub, change) = compare_node(o, n, field_schema(fields, extra, key));
                            below.attach(|| PathElement::Field(key.clone()), change, sub);
                        }
                        false
                    }
                }
                Shape::List { items, kind } => {
                    let (o, n) = (old.and_then(Value::as_array), new.and_then(Value::as_array));
                    if o.is_none_or(Vec::is_empty) && n.is_none_or(Vec::is_empty) {
                        true
                    } else {
                        let (o, n) =
                            (o.map(Vec::as_slice).unwrap_or_default(), n.map(Vec::as_slice).unwrap_or_default());
                        compare_entries(o, n, items, kind, &mut below);
                        false
                    }
                }
            };
            let change = match (old, new) {
                (None, Some(_)) => Some(Change::Added),
                (Some(_), None) => Some(Change::Removed),
                (Some(o), Some(n)) if leaf && !values_equal(o, n) => Some(Change::Modified),
                _ => None,
            };
            (below, change)
        }

        /// [`added`], attaching list entries in the order they come.
        pub fn added(value: &Value, schema: &Schema) -> Set {
            added_below(value, Some(schema))
        }

        fn added_below(value: &Value, schema: Option<&Schema>) -> Set {
            let mut below = Set::new();
            match shape(schema, value) {
                Shape::Scalar | Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => {}
                Shape::Object { fields, extra, .. } => {
                    for (key, child) in value.as_object().into_iter().flatten() {
                        let sub = added_below(child, field_schema(fields, extra, key));
                        below.attach(PathElement::Field(key.clone()), true, sub);
                    }
                }
                Shape::List { items, kind } => {
                    for (element, entries) in
                        group_entries(kind, value.as_array().map(Vec::as_slice).unwrap_or_default())
                    {
                        let sub = match entries.as_slice() {
                            [single] => added_below(single, items),
                            _ => Set::new(),
                        };
                        below.attach(element, true, sub);
                    }
                }
            }
            below
        }

        /// [`super::group_entries`], each entry looking for its group among all the groups.
        pub fn group_entries<'v>(kind: &ListKind, entries: &'v [Value]) -> Vec<(PathElement, Vec<&'v Value>)> {
            let mut groups: Vec<(PathElement, Vec<&Value>)> = Vec::new();
            for entry in entries {
                let Some(element) = entry_element(kind, entry) else { continue };
                match groups.iter_mut().find(|(e, _)| *e == element) {
                    Some((_, values)) => values.push(entry),
                    None => groups.push((element, vec![entry])),
                }
            }
            groups
        }

        fn compare_entries(
            old: &[Value],
            new: &[Value],
            items: Option<&Schema>,
            kind: &ListKind,
            below: &mut Comparison,
        ) {
            let (old, new) = (group_entries(kind, old), group_entries(kind, new));
            let mut names: Vec<&PathElement> = old.iter().map(|(e, _)| e).collect();
            names.extend(new.iter().map(|(e, _)| e).filter(|e| !old.iter().any(|(o, _)| o == *e)));
            let empty = Vec::new();
            for name in names {
                let find = |groups: &[(PathElement, Vec<&Value>)]| groups.iter().position(|(e, _)| e == name);
                let o = find(&old).map_or(&empty, |i| &old[i].1);
                let n = find(&new).map_or(&empty, |i| &new[i].1);
                let (sub, change) = match (o.len(), n.len()) {
                    (0..=1, 0..=1) => compare_node(o.first().copied(), n.first().copied(), items),
                    (2.., 2..) => {
                        let same = o.len() == n.len() && o.iter().zip(n).all(|(a, b)| values_equal(a, b));
                        (Comparison::default(), (!same).then_some(Change::Modified))
                    }
                    (2.., _) => {
                        if let Some(first) = n.first() {
                            let (sub, change) = compare_node(None, Some(first), items);
                            below.attach(|| name.clone(), change, sub);
                        }
                        (Comparison::default(), Some(Change::Removed))
                    }
                    _ => {
                        if let Some(first) = o.first() {
                            let (sub, change) = compare_node(Some(first), None, items);
                            below.attach(|| name.clone(), change, sub);
                        }
                        (Comparison::default(), Some(Change::Added))
                    }
                };
                below.attach(|| name.clone(), change, sub);
            }
        }
    }
}
