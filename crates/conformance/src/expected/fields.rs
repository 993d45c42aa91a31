//! Field sets as server-side apply keeps them (paths of `f:<name>`, `k:{<key>}` and
//! `v:<value>` elements, written as managedFields' `fieldsV1`), and the managedFields a write
//! leaves, by structured-merge-diff's rules: an update's writer owns what it added or changed,
//! which the others lose, and nobody owns what it removed; an apply's writer owns its
//! configuration's fields, a forced apply takes the fields it changed from the others (an
//! apply that is not forced must conflict there), and nobody owns what it removed.

use super::patch::item_key;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// A path to a field: `["f:spec", "f:weight"]`.
pub type FieldPath = Vec<String>;

/// Each field of an object by its path, with its value where it is a leaf (`None` for a map,
/// a list or an item of a keyed list that has members).
pub type Fields = BTreeMap<FieldPath, Option<Value>>;

/// The fields of `object`; a map or keyed list is a field of its own with `containers` (as an
/// update records them), and only through its members without (as an apply's configuration
/// does); the items of a keyed list always are.
pub fn fields_of(object: &Value, containers: bool) -> Fields {
    let mut fields = Fields::new();
    if let Value::Object(members) = object {
        walk(members, &[], containers, &mut fields);
    }
    fields
}

fn walk(members: &Map<String, Value>, prefix: &[String], containers: bool, out: &mut Fields) {
    for (name, value) in members {
        let path = [prefix, &[format!("f:{name}")]].concat();
        match value {
            Value::Object(inner) if !inner.is_empty() => {
                if containers {
                    out.insert(path.clone(), None);
                }
                walk(inner, &path, containers, out);
            }
            Value::Array(items) if !items.is_empty() && items.iter().all(|i| item_key(name, i).is_some()) => {
                if containers {
                    out.insert(path.clone(), None);
                }
                for item in items {
                    let at = [path.clone(), vec![item_key(name, item).unwrap_or_default()]].concat();
                    match item {
                        Value::Object(inner) => {
                            out.insert(at.clone(), None);
                            walk(inner, &at, containers, out);
                        }
                        leaf => drop(out.insert(at, Some(leaf.clone()))),
                    }
                }
            }
            leaf => drop(out.insert(path, Some(leaf.clone()))),
        }
    }
}

/// Leaves out of `fields` what no manager owns: the type, the metadata the server keeps, and
/// the fields a write of `subresource` resets (the status for a write of the object;
/// everything but the status for a write of `status`).
pub fn without_unowned(mut fields: Fields, subresource: Option<&str>) -> Fields {
    const SERVERS: [&str; 10] = [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ];
    fields.retain(|path, _| {
        let first = path[0].as_str();
        let servers = path.len() >= 2 && first == "f:metadata" && SERVERS.iter().any(|s| path[1] == format!("f:{s}"));
        let reset = match subresource {
            Some(_) => first != "f:status",
            None => first == "f:status",
        };
        let type_or_metadata = path.len() == 1 && ["f:apiVersion", "f:kind", "f:metadata"].contains(&first);
        !(servers || reset || type_or_metadata)
    });
    fields
}

/// One managedFields entry: who wrote, how, and the fields it owns.
#[derive(Clone, Debug)]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub subresource: String,
    pub owned: BTreeSet<FieldPath>,
}

impl Entry {
    /// Whether the entry is the one `writer` writes: an applier's has one entry whatever its
    /// version, an updater's one per version.
    fn is(&self, writer: &Entry) -> bool {
        (&self.manager, &self.operation, &self.subresource) == (&writer.manager, &writer.operation, &writer.subresource)
            && (self.operation == "Apply" || self.api_version == writer.api_version)
    }

    /// The entries of an object's managedFields.
    pub fn all_of(object: Option<&Value>) -> Vec<Entry> {
        let entries = object.and_then(|o| o["metadata"]["managedFields"].as_array());
        let text = |entry: &Value, field: &str| entry[field].as_str().unwrap_or_default().to_string();
        let entry = |e: &Value| Entry {
            manager: text(e, "manager"),
            operation: text(e, "operation"),
            api_version: text(e, "apiVersion"),
            subresource: text(e, "subresource"),
            owned: parse(&e["fieldsV1"], &[]),
        };
        entries.into_iter().flatten().map(entry).collect()
    }

    /// The entry as managedFields shows it (its time a placeholder, as answers' are).
    pub fn to_json(&self) -> Value {
        let mut entry = json!({"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
            "fieldsType": "FieldsV1", "fieldsV1": render(&self.owned), "time": "<time>"});
        if !self.subresource.is_empty() {
            entry["subresource"] = json!(self.subresource);
        }
        entry
    }
}

/// The paths of a `fieldsV1` tree under `prefix`.
fn parse(tree: &Value, prefix: &[String]) -> BTreeSet<FieldPath> {
    let mut paths = BTreeSet::new();
    for (name, inner) in tree.as_object().into_iter().flatten().filter(|(name, _)| *name != ".") {
        let path = [prefix, std::slice::from_ref(name)].concat();
        let members = inner.as_object().map_or(0, Map::len);
        if members == 0 || inner.get(".").is_some() {
            paths.insert(path.clone());
        }
        paths.extend(parse(inner, &path));
    }
    paths
}

/// `paths` as a `fieldsV1` tree: a path that has members in the set is marked `"."`.
fn render(paths: &BTreeSet<FieldPath>) -> Value {
    let mut tree = json!({});
    for path in paths {
        let mut at = &mut tree;
        for element in path {
            at = &mut at[element.as_str()];
            if at.is_null() {
                *at = json!({});
            }
        }
    }
    for path in paths {
        let node = path.iter().fold(&mut tree, |at, element| &mut at[element.as_str()]);
        if node.as_object().is_some_and(|members| !members.is_empty()) {
            node["."] = json!({});
        }
    }
    tree
}

/// What a write changed: the fields it added, changed and removed.
struct Comparison {
    added_or_changed: BTreeSet<FieldPath>,
    removed: BTreeSet<FieldPath>,
}

fn compare(old: &Fields, new: &Fields) -> Comparison {
    let added_or_changed = new.iter().filter(|(path, value)| old.get(*path) != Some(*value)).map(|(p, _)| p.clone());
    let removed = old.keys().filter(|path| !new.contains_key(*path)).cloned();
    Comparison { added_or_changed: added_or_changed.collect(), removed: removed.collect() }
}

/// The managedFields after an update by `writer` that changed `old` into `new`.
pub fn after_update(mut entries: Vec<Entry>, writer: Entry, old: &Fields, new: &Fields) -> Vec<Entry> {
    let comparison = compare(old, new);
    for entry in entries.iter_mut().filter(|e| !e.is(&writer)) {
        entry.owned.retain(|path| !comparison.added_or_changed.contains(path) && !comparison.removed.contains(path));
    }
    let mut owned = entries.iter().find(|e| e.is(&writer)).map(|e| e.owned.clone()).unwrap_or_default();
    owned.extend(comparison.added_or_changed);
    owned.retain(|path| !comparison.removed.contains(path));
    entries.retain(|e| !e.is(&writer));
    entries.push(Entry { owned, ..writer });
    entries.retain(|e| !e.owned.is_empty());
    entries
}

/// The managedFields after `writer`'s apply (owning `writer.owned`) changed `old` into `new`,
/// or the managers it must have conflicted with.
pub fn after_apply(
    mut entries: Vec<Entry>,
    writer: Entry,
    force: bool,
    old: &Fields,
    new: &Fields,
) -> Result<Vec<Entry>, String> {
    let comparison = compare(old, new);
    let others = entries.iter_mut().filter(|e| !e.is(&writer));
    let mut conflicts = Vec::new();
    for entry in others {
        let taken: BTreeSet<FieldPath> = entry.owned.intersection(&comparison.added_or_changed).cloned().collect();
        if !taken.is_empty() {
            conflicts.push(format!("{} ({taken:?})", entry.manager));
        }
        entry.owned.retain(|path| !taken.contains(path) && !comparison.removed.contains(path));
    }
    if !force && !conflicts.is_empty() {
        return Err(format!("the apply must have conflicted with {}", conflicts.join(", ")));
    }
    entries.retain(|e| !e.is(&writer));
    entries.push(writer);
    entries.retain(|e| !e.owned.is_empty());
    Ok(entries)
}

/// The paths `writer` applied before and no longer applies that no other entry owns: what its
/// apply removes.
pub fn no_longer_applied(entries: &[Entry], writer: &Entry) -> Vec<FieldPath> {
    let Some(last) = entries.iter().find(|e| e.is(writer)) else { return Vec::new() };
    let owned_by_others = |path: &FieldPath| entries.iter().any(|e| !e.is(writer) && e.owned.contains(path));
    last.owned.iter().filter(|p| !writer.owned.contains(*p) && !owned_by_others(p)).cloned().collect()
}

/// Removes the field at `path` from `object`.
pub fn remove(object: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let parent = parents.iter().try_fold(object, |at, element| step(at, element));
    match (parent, last.strip_prefix("f:")) {
        (Some(Value::Object(map)), Some(name)) => drop(map.remove(name)),
        (Some(Value::Array(items)), None) => {
            let name = parents.last().and_then(|p| p.strip_prefix("f:")).unwrap_or_default().to_string();
            items.retain(|item| item_key(&name, item).as_deref() != Some(last.as_str()));
        }
        _ => {}
    }
}

/// The value at one path element below `at`.
fn step<'a>(at: &'a mut Value, element: &str) -> Option<&'a mut Value> {
    match element.strip_prefix("f:") {
        Some(name) => at.get_mut(name),
        None => {
            let Value::Array(items) = at else { return None };
            items.iter_mut().find(|item| item_key_anywhere(item).as_deref() == Some(element))
        }
    }
}

/// An item's key under any of the keyed lists' names.
fn item_key_anywhere(item: &Value) -> Option<String> {
    ["ownerReferences", "conditions", "finalizers"]
        .iter()
        .find_map(|name| item_key(name, item).filter(|key| key.starts_with("k:") == item.is_object()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&[&str]]) -> BTreeSet<FieldPath> {
        paths.iter().map(|p| p.iter().map(|e| e.to_string()).collect()).collect()
    }

    #[test]
    fn an_update_marks_the_maps_it_made_and_an_apply_only_their_members() {
        let object = json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
            "spec": {"w": 1}, "status": {"s": 1}});
        let created = without_unowned(fields_of(&object, true), None);
        let rendered = render(&created.keys().cloned().collect());
        assert_eq!(rendered, json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {".": {}, "f:w": {}}}));
        let applied = without_unowned(fields_of(&object, false), None);
        let rendered = render(&applied.keys().cloned().collect());
        assert_eq!(rendered, json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:w": {}}}));
        assert_eq!(parse(&rendered, &[]), applied.keys().cloned().collect());
        let status = without_unowned(fields_of(&object, false), Some("status"));
        assert_eq!(status.keys().cloned().collect::<BTreeSet<_>>(), set(&[&["f:status", "f:s"]]));
    }

    #[test]
    fn keyed_lists_own_their_items_by_key() {
        let object = json!({"metadata": {"finalizers": ["a/x"]}, "status": {"conditions": [{"type": "Ready"}]}});
        let fields = fields_of(&object, true);
        let rendered = render(&fields.keys().cloned().collect());
        assert_eq!(rendered["f:metadata"]["f:finalizers"], json!({".": {}, "v:\"a/x\"": {}}));
        assert_eq!(rendered["f:status"]["f:conditions"]["k:{\"type\":\"Ready\"}"], json!({".": {}, "f:type": {}}));
        let mut removed = object.clone();
        remove(&mut removed, &["f:status".into(), "f:conditions".into(), "k:{\"type\":\"Ready\"}".into()]);
        remove(&mut removed, &["f:metadata".into(), "f:finalizers".into(), "v:\"a/x\"".into()]);
        assert_eq!(removed, json!({"metadata": {"finalizers": []}, "status": {"conditions": []}}));
    }

    fn entry(manager: &str, operation: &str, owned: &[&[&str]]) -> Entry {
        let (api_version, subresource) = ("g/v1".to_string(), String::new());
        Entry { manager: manager.into(), operation: operation.into(), api_version, subresource, owned: set(owned) }
    }

    #[test]
    fn a_writer_takes_what_it_changed_and_nobody_keeps_what_it_removed() {
        let old = fields_of(&json!({"spec": {"w": 1, "h": 2, "c": "x"}}), true);
        let new = fields_of(&json!({"spec": {"w": 5, "h": 2}}), true);
        let creator =
            entry("creator", "Update", &[&["f:spec"], &["f:spec", "f:w"], &["f:spec", "f:h"], &["f:spec", "f:c"]]);
        let after = after_update(vec![creator.clone()], entry("editor", "Update", &[]), &old, &new);
        let owned: Vec<(&str, BTreeSet<FieldPath>)> =
            after.iter().map(|e| (e.manager.as_str(), e.owned.clone())).collect();
        assert_eq!(
            owned,
            [("creator", set(&[&["f:spec"], &["f:spec", "f:h"]])), ("editor", set(&[&["f:spec", "f:w"]]))]
        );
        let applier = entry("applier", "Apply", &[&["f:spec", "f:w"]]);
        let conflict = after_apply(vec![creator.clone()], applier.clone(), false, &old, &new);
        assert!(conflict.is_err_and(|why| why.contains("creator")), "an unforced apply changing creator's field");
        let forced = after_apply(vec![creator], applier, true, &old, &new).expect("forced");
        assert_eq!(forced[0].owned, set(&[&["f:spec"], &["f:spec", "f:h"]]));
    }
}
