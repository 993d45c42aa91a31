//! Merging an applied configuration into an object, and removing fields from one, driven by the
//! schema's shapes, as structured-merge-diff's `typed` package does it (merge.go, remove.go and
//! `Set.EnsureNamedFieldsAreMembers`): the operations server-side apply is made of.
//!
//! [`merge`] keeps the right-hand side's value of every leaf (scalar, atomic object or list),
//! merges objects key by key and `set`/`map` lists entry by entry, ordering entries as the
//! right-hand side orders the ones it has, with the left-hand side's others kept where they stood.

use super::fieldpath::{ElementIndex, PathElement, Set};
use super::shape::{ListKind, Schema, Shape, field_schema, shape};
use super::typed::entry_element;
use serde_json::{Map, Value};

/// `rhs` merged into `lhs` (see the module documentation).
pub fn merge(lhs: &Value, rhs: &Value, schema: &Schema) -> Value {
    merge_node(Some(lhs), Some(rhs), Some(schema)).unwrap_or(Value::Null)
}

fn merge_node(lhs: Option<&Value>, rhs: Option<&Value>, schema: Option<&Schema>) -> Option<Value> {
    let sample = rhs.or(lhs)?;
    let keep_rhs = || rhs.or(lhs).cloned();
    match shape(schema, sample) {
        Shape::Scalar | Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => keep_rhs(),
        Shape::Object { fields, extra, .. } => {
            let (l, r) = (lhs.and_then(Value::as_object), rhs.and_then(Value::as_object));
            if l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty) {
                return keep_rhs();
            }
            let mut out = Map::new();
            let keys: std::collections::BTreeSet<&String> = l.into_iter().chain(r).flat_map(Map::keys).collect();
            for key in keys {
                let child = field_schema(fields, extra, key);
                if let Some(v) = merge_node(l.and_then(|m| m.get(key)), r.and_then(|m| m.get(key)), child) {
                    out.insert(key.clone(), v);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Shape::List { items, kind } => {
            let (l, r) = (lhs.and_then(Value::as_array), rhs.and_then(Value::as_array));
            if l.is_none_or(Vec::is_empty) && r.is_none_or(Vec::is_empty) {
                return keep_rhs();
            }
            let (l, r) = (l.map(Vec::as_slice).unwrap_or_default(), r.map(Vec::as_slice).unwrap_or_default());
            let out = merge_entries(l, r, kind, items);
            (!out.is_empty()).then_some(Value::Array(out))
        }
    }
}

/// The entries of a `set` or `map` list, each named, in order.
fn named<'v>(entries: &'v [Value], kind: &ListKind) -> Vec<(PathElement, &'v Value)> {
    entries.iter().filter_map(|e| Some((entry_element(kind, e)?, e))).collect()
}

/// The first entry of `side` named `element`, through `index`, the index of its names.
fn find<'v>(side: &[(PathElement, &'v Value)], index: &ElementIndex, element: &PathElement) -> Option<&'v Value> {
    index.first(element).and_then(|i| side.get(i)).map(|(_, value)| *value)
}

/// The name of entry `i` of `side`.
fn name_at<'s>(side: &'s [(PathElement, &Value)], i: usize) -> Option<&'s PathElement> {
    side.get(i).map(|(name, _)| name)
}

/// Merges two lists entry by entry (structured-merge-diff's `visitListItems`): walking both, an
/// entry both have is merged in place; one only the left has stays where it was unless the
/// right has it later; the right's own entries come in its order. Names are looked up through
/// an index of each side's names (the first entry of a repeated name is the one merged).
fn merge_entries(lhs: &[Value], rhs: &[Value], kind: &ListKind, items: Option<&Schema>) -> Vec<Value> {
    let (left, right) = (named(lhs, kind), named(rhs, kind));
    let left_index = ElementIndex::of(left.iter().map(|(name, _)| name));
    let right_index = ElementIndex::of(right.iter().map(|(name, _)| name));
    let merge_named = |pe| merge_node(find(&left, &left_index, pe), find(&right, &right_index, pe), items);
    let shared: Vec<&PathElement> = right.iter().map(|(e, _)| e).filter(|e| left_index.contains(e)).collect();
    let mut shared = shared.into_iter().peekable();
    let mut merged_right = ElementIndex::new();
    let mut out = Vec::new();
    let (mut li, mut ri) = (0, 0);
    while li < left.len() || ri < right.len() {
        if let (Some(pe), Some(right_pe)) = (name_at(&left, li), name_at(&right, ri)) {
            if pe == right_pe {
                merged_right.push(pe);
                out.extend(merge_named(pe));
                li += 1;
                ri += 1;
                shared.next();
                continue;
            }
            if right_index.contains(pe) && shared.peek().is_some_and(|next| *next != pe) {
                li += 1;
                continue;
            }
        }
        if let Some((pe, value)) = left.get(li) {
            if !right_index.contains(pe) {
                out.extend(merge_node(Some(value), None, items));
                li += 1;
                continue;
            }
            // Past the right's end every name it has is merged; asking only `merged_right` could
            // stop the walk where equality is not transitive (integers beyond 2^53, floats).
            if ri >= right.len() || merged_right.contains(pe) {
                li += 1;
            }
        }
        if let Some(pe) = name_at(&right, ri) {
            merged_right.push(pe);
            out.extend(merge_named(pe));
            ri += 1;
            if shared.peek().is_some_and(|next| *next == pe) {
                shared.next();
            }
        }
    }
    out
}

/// `value` without the fields of `set` (structured-merge-diff's `RemoveItems`): a member goes
/// with everything below it; an object or list left empty goes too.
pub fn remove_items(value: &Value, set: &Set, schema: &Schema) -> Value {
    remove_node(value, set, Some(schema)).unwrap_or(Value::Null)
}

fn remove_node(value: &Value, set: &Set, schema: Option<&Schema>) -> Option<Value> {
    match shape(schema, value) {
        Shape::Scalar | Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => {
            Some(value.clone())
        }
        Shape::Object { fields, extra, .. } => {
            let Some(map) = value.as_object().filter(|m| !m.is_empty()) else { return Some(value.clone()) };
            let mut out = Map::new();
            for (key, child) in map {
                let element = PathElement::Field(key.clone());
                if set.has(std::slice::from_ref(&element)) {
                    continue;
                }
                let kept = match set.child(&element) {
                    Some(below) => remove_node(child, below, field_schema(fields, extra, key)),
                    None => Some(child.clone()),
                };
                out.extend(kept.map(|v| (key.clone(), v)));
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Shape::List { items, kind } => {
            let Some(entries) = value.as_array().filter(|l| !l.is_empty()) else { return Some(value.clone()) };
            let mut out = Vec::new();
            for (element, entry) in named(entries, kind) {
                if set.has(std::slice::from_ref(&element)) {
                    continue;
                }
                match set.child(&element) {
                    Some(below) => out.extend(remove_node(entry, below, items)),
                    None => out.push(entry.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
    }
}

/// `set` with every declared field that has members below it made a member too
/// (`EnsureNamedFieldsAreMembers`), so that removing the set removes those fields whole.
pub fn ensure_named_fields_are_members(set: &Set, schema: &Schema) -> Set {
    ensure_node(set, Some(schema))
}

/// One walk along the set's steps, in order: each keeps its membership, and a declared field
/// with members below it becomes a member too.
fn ensure_node(set: &Set, schema: Option<&Schema>) -> Set {
    let declared = schema.and_then(Schema::fields);
    let extra = schema.and_then(Schema::extra);
    let items = schema.and_then(Schema::items);
    let mut out = Set::new();
    for (element, member, below) in set.entries() {
        if below.is_empty() {
            out.attach(element.clone(), member, Set::new());
            continue;
        }
        let (child_schema, declared_field) = match element {
            PathElement::Field(name) => {
                (field_schema(declared, extra, name), declared.is_some_and(|d| d.contains_key(name)))
            }
            PathElement::Key(_) => (items, false),
            _ => (None, false),
        };
        out.attach(element.clone(), member || declared_field, ensure_node(below, child_schema));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structured_merge::typed::tests::{list_schema, listed_object};
    use crate::structured_merge::typed::to_field_set;
    use proptest::prelude::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::compile(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "weight": {"type": "number"}, "height": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "names": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            }},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object", "properties": {"type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"}}}},
            }},
        }}))
    }

    #[test]
    fn leaves_take_the_right_side_and_objects_merge_key_by_key() {
        let live = json!({"spec": {"weight": 1, "height": 2, "tags": ["a", "b"]}});
        let config = json!({"spec": {"weight": 5, "tags": ["c"]}});
        assert_eq!(merge(&live, &config, &schema()), json!({"spec": {"weight": 5, "height": 2, "tags": ["c"]}}));
    }

    #[test]
    fn keyed_lists_merge_entry_by_entry_in_the_right_side_s_order() {
        let live = json!({"status": {"conditions": [
            {"type": "A", "status": "True"}, {"type": "B", "status": "True"}, {"type": "C", "status": "True"}]}});
        let config = json!({"status": {"conditions": [{"type": "C", "reason": "x"}, {"type": "D", "status": "False"}, {"type": "A", "status": "False"}]}});
        let merged = merge(&live, &config, &schema());
        let order: Vec<&str> =
            merged["status"]["conditions"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(order, ["B", "C", "D", "A"]);
        assert_eq!(merged["status"]["conditions"][1], json!({"type": "C", "status": "True", "reason": "x"}));
        assert_eq!(merged["status"]["conditions"][3], json!({"type": "A", "status": "False"}));
        let sets = merge(&json!({"spec": {"names": ["x", "y"]}}), &json!({"spec": {"names": ["z", "x"]}}), &schema());
        assert_eq!(sets["spec"]["names"], json!(["z", "x", "y"]));
    }

    #[test]
    fn removing_a_set_drops_members_whole_and_empty_parents() {
        let object = json!({"spec": {"weight": 1, "height": 2}, "status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B"}]}});
        let mut set = Set::new();
        set.insert(&[PathElement::Field("spec".into()), PathElement::Field("weight".into())]);
        set.insert(&[PathElement::Field("spec".into()), PathElement::Field("height".into())]);
        set.insert(&[
            PathElement::Field("status".into()),
            PathElement::Field("conditions".into()),
            PathElement::key(vec![("type".into(), json!("A"))]),
        ]);
        assert_eq!(remove_items(&object, &set, &schema()), json!({"status": {"conditions": [{"type": "B"}]}}));
    }

    #[test]
    fn named_fields_with_members_below_become_members() {
        let set = to_field_set(&json!({"spec": {"weight": 1}, "status": {"conditions": [{"type": "A"}]}}), &schema());
        let ensured = ensure_named_fields_are_members(&set, &schema());
        assert_eq!(
            ensured.to_fields_v1(),
            json!({"f:spec": {".": {}, "f:weight": {}}, "f:status": {".": {}, "f:conditions": {".": {}, "k:{\"type\":\"A\"}": {".": {}, "f:type": {}}}}})
        );
    }

    proptest! {
        /// Merging through indexes of the entries' names gives what the linear search gave, and
        /// so does making the named fields of a field set members.
        #[test]
        fn indexed_merges_are_the_linear_ones(live in listed_object(), config in listed_object()) {
            let schema = list_schema();
            let merged = merge(&live, &config, &schema);
            prop_assert_eq!(&merged, &reference::merge_node(Some(&live), Some(&config), Some(&schema)).unwrap_or(Value::Null));
            let set = to_field_set(&merged, &schema);
            let ensured = ensure_named_fields_are_members(&set, &schema);
            let expected = reference::ensure_node(&set, Some(&schema));
            prop_assert_eq!(&ensured, &expected);
            prop_assert_eq!(ensured.to_fields_v1(), expected.to_fields_v1());
        }

        /// From the second merge of a configuration on, merging it again changes nothing (the
        /// first merge may change what the second finds: see the test below).
        #[test]
        fn a_second_merge_is_a_fixed_point(live in listed_object(), config in listed_object()) {
            let schema = list_schema();
            let twice = merge(&merge(&live, &config, &schema), &config, &schema);
            prop_assert_eq!(merge(&twice, &config, &schema), twice);
        }
    }

    #[test]
    fn a_first_merge_drops_entries_without_a_name_and_what_they_leave_empty() {
        let (live, config) = (json!({"status": {"conditions": [{}]}, "spec": {"weight": 1}}), json!({"status": {}}));
        let once = merge(&live, &config, &schema());
        assert_eq!(once, json!({"spec": {"weight": 1}}), "the status, emptied, goes");
        let twice = merge(&once, &config, &schema());
        assert_eq!(twice, json!({"spec": {"weight": 1}, "status": {}}), "then comes back as the configuration has it");
        assert_eq!(merge(&twice, &config, &schema()), twice);
    }

    #[test]
    fn a_merge_ends_where_equality_of_numbers_is_not_transitive() {
        // 2^53 + 1 equals the float 2^53 (compared as doubles), which equals 2^53; the two
        // integers differ. The walk once waited forever for the second to be merged.
        let live = json!({"spec": {"names": [9007199254740992_i64, 9007199254740993_i64]}});
        let config = json!({"spec": {"names": [9007199254740992.0]}});
        let merged = merge(&live, &config, &schema());
        assert_eq!(merged["spec"]["names"], json!([9007199254740992.0]));
    }

    /// The linear algorithms these replaced, kept as the reference the new ones must agree with.
    mod reference {
        use super::super::*;

        pub fn merge_node(lhs: Option<&Value>, rhs: Option<&Value>, schema: Option<&Schema>) -> Option<Value> {
            let sample = rhs.or(lhs)?;
            let keep_rhs = || rhs.or(lhs).cloned();
            match shape(schema, sample) {
                Shape::Scalar | Shape::Object { atomic: true, .. } | Shape::List { kind: ListKind::Atomic, .. } => {
                    keep_rhs()
                }
                Shape::Object { fields, extra, .. } => {
                    let (l, r) = (lhs.and_then(Value::as_object), rhs.and_then(Value::as_object));
                    if l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty) {
                        return keep_rhs();
                    }
                    let mut out = Map::new();
                    let keys: std::collections::BTreeSet<&String> =
                        l.into_iter().chain(r).flat_map(Map::keys).collect();
                    for key in keys {
                        let child = field_schema(fields, extra, key);
                        if let Some(v) = merge_node(l.and_then(|m| m.get(key)), r.and_then(|m| m.get(key)), child) {
                            out.insert(key.clone(), v);
                        }
                    }
                    (!out.is_empty()).then_some(Value::Object(out))
                }
                Shape::List { items, kind } => {
                    let (l, r) = (lhs.and_then(Value::as_array), rhs.and_then(Value::as_array));
                    if l.is_none_or(Vec::is_empty) && r.is_none_or(Vec::is_empty) {
                        return keep_rhs();
                    }
                    let (l, r) = (l.map(Vec::as_slice).unwrap_or_default(), r.map(Vec::as_slice).unwrap_or_default());
                    let out = merge_entries(l, r, kind, items);
                    (!out.is_empty()).then_some(Value::Array(out))
                }
            }
        }

        fn find<'v>(side: &[(PathElement, &'v Value)], element: &PathElement) -> Option<&'v Value> {
            side.iter().find(|(name, _)| name == element).map(|(_, value)| *value)
        }

        fn merge_entries(lhs: &[Value], rhs: &[Value], kind: &ListKind, items: Option<&Schema>) -> Vec<Value> {
            let (left, right) = (named(lhs, kind), named(rhs, kind));
            let shared: Vec<&PathElement> = right.iter().map(|(e, _)| e).filter(|e| find(&left, e).is_some()).collect();
            let mut shared = shared.into_iter().peekable();
            let mut merged_right: Vec<&PathElement> = Vec::new();
            let mut out = Vec::new();
            let (mut li, mut ri) = (0, 0);
            while li < left.len() || ri < right.len() {
                if li < left.len() && ri < right.len() {
                    let pe = &left[li].0;
                    if *pe == right[ri].0 {
                        merged_right.push(pe);
                        out.extend(merge_node(find(&left, pe), find(&right, pe), items));
                        li += 1;
                        ri += 1;
                        shared.next();
                        continue;
                    }
                    if find(&right, pe).is_some() && shared.peek().is_some_and(|next| *next != pe) {
                        li += 1;
                        continue;
                    }
                }
                if li < left.len() {
                    let pe = &left[li].0;
                    if find(&right, pe).is_none() {
                        out.extend(merge_node(Some(left[li].1), None, items));
                        li += 1;
                        continue;
                    } else if merged_right.contains(&pe) {
                        li += 1;
                    }
                }
                if ri < right.len() {
                    let pe = &right[ri].0;
                    merged_right.push(pe);
                    out.extend(merge_node(find(&left, pe), find(&right, pe), items));
                    ri += 1;
                    if shared.peek().is_some_and(|next| *next == pe) {
                        shared.next();
                    }
                }
            }
            out
        }

        pub fn ensure_node(set: &Set, schema: Option<&Schema>) -> Set {
            let declared = schema.and_then(Schema::fields);
            let extra = schema.and_then(Schema::extra);
            let items = schema.and_then(Schema::items);
            let mut out = Set::new();
            for (element, child) in set.children() {
                let child_schema = match element {
                    PathElement::Field(name) => field_schema(declared, extra, name),
                    PathElement::Key(_) => items,
                    _ => None,
                };
                if let PathElement::Field(name) = element
                    && declared.is_some_and(|d| d.contains_key(name))
                {
                    out.insert(std::slice::from_ref(element));
                }
                let below = ensure_node(child, child_schema);
                if !below.is_empty() {
                    out.set_child(element.clone(), below);
                }
            }
            for member in set.members() {
                out.insert(std::slice::from_ref(member));
            }
            out
        }
    }
}
