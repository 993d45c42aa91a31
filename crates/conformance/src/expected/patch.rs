//! The changes a request makes to an object, written here from their specifications and not
//! taken from the tested server (nor from the crate it uses): a JSON merge patch (RFC 7386), a
//! JSON patch (RFC 6902), and the merge of an apply configuration into the live object as
//! server-side apply merges it (maps member by member, a `null` unsetting, keyed lists item by
//! item, other lists whole).

use serde_json::{Map, Value};

/// `target` with the merge patch `patch` applied (RFC 7386).
pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    let Value::Object(members) = patch else { return patch.clone() };
    let mut result = target.as_object().cloned().unwrap_or_default();
    for (name, value) in members {
        if value.is_null() {
            result.remove(name);
        } else {
            let merged = merge_patch(result.get(name).unwrap_or(&Value::Null), value);
            result.insert(name.clone(), merged);
        }
    }
    Value::Object(result)
}

/// `target` with the JSON patch `operations` applied (RFC 6902), or why it cannot be.
pub fn json_patch(target: &Value, operations: &Value) -> Result<Value, String> {
    let mut document = target.clone();
    for operation in operations.as_array().ok_or("a JSON patch is not a list")? {
        let op = operation["op"].as_str().ok_or("an operation without `op`")?;
        let path = operation["path"].as_str().ok_or("an operation without `path`")?;
        let value = || operation.get("value").cloned().ok_or(format!("`{op}` without a value"));
        let from = || operation["from"].as_str().ok_or(format!("`{op}` without `from`"));
        match op {
            "add" => add(&mut document, path, value()?)?,
            "remove" => drop(remove(&mut document, path)?),
            "replace" => {
                remove(&mut document, path)?;
                add(&mut document, path, value()?)?;
            }
            "move" => {
                let moved = remove(&mut document, from()?)?;
                add(&mut document, path, moved)?;
            }
            "copy" => {
                let copied = document.pointer(from()?).cloned().ok_or("`copy` from nothing")?;
                add(&mut document, path, copied)?;
            }
            "test" if document.pointer(path) == Some(&value()?) => {}
            "test" => return Err(format!("`test` of {path} failed")),
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    Ok(document)
}

/// The parent of `pointer`'s target and the target's last reference token (unescaped).
fn parent<'a>(document: &'a mut Value, pointer: &str) -> Result<(&'a mut Value, String), String> {
    let (parent, last) = pointer.rsplit_once('/').ok_or(format!("{pointer:?} is no JSON pointer"))?;
    let at = document.pointer_mut(parent).ok_or(format!("no {parent:?} to change"))?;
    Ok((at, last.replace("~1", "/").replace("~0", "~")))
}

fn add(document: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    if pointer.is_empty() {
        *document = value;
        return Ok(());
    }
    match parent(document, pointer)? {
        (Value::Object(map), name) => {
            map.insert(name, value);
        }
        (Value::Array(items), token) if token == "-" => items.push(value),
        (Value::Array(items), token) => {
            let index: usize = token.parse().map_err(|_| format!("{token:?} is no index"))?;
            (index <= items.len()).then(|| items.insert(index, value)).ok_or("an index past the end")?;
        }
        _ => return Err(format!("{pointer:?} is inside a scalar")),
    }
    Ok(())
}

fn remove(document: &mut Value, pointer: &str) -> Result<Value, String> {
    let missing = || format!("nothing at {pointer:?}");
    match parent(document, pointer)? {
        (Value::Object(map), name) => map.remove(&name).ok_or_else(missing),
        (Value::Array(items), token) => {
            let index: usize = token.parse().map_err(|_| missing())?;
            (index < items.len()).then(|| items.remove(index)).ok_or_else(missing)
        }
        _ => Err(missing()),
    }
}

/// The key naming an item of the list `name` in a field set, when it is a keyed list of
/// Kubernetes' conventions: `ownerReferences` by uid, `conditions` by type; a set
/// (`finalizers`) is keyed by the item itself. Any other list is atomic: set whole.
pub fn item_key(name: &str, item: &Value) -> Option<String> {
    let field = |field: &str| item.get(field).map(|v| format!("k:{{\"{field}\":{v}}}"));
    match name {
        "finalizers" => Some(format!("v:{item}")),
        "ownerReferences" => field("uid"),
        "conditions" => field("type"),
        _ => None,
    }
}

/// `live` with the apply configuration `config` merged in: members of maps merged (a `null`
/// unsets), keyed lists merged item by item (the live items in their order, then the new
/// ones), any other value replaced.
pub fn apply_merge(live: &Value, config: &Value) -> Value {
    match (live, config) {
        (Value::Object(live), Value::Object(config)) => {
            let mut result = live.clone();
            for (name, value) in config {
                let merged = match (live.get(name), value) {
                    (_, Value::Null) => None,
                    (Some(Value::Array(old)), Value::Array(new)) if keyed(name, new) => {
                        Some(merge_items(name, old, new))
                    }
                    (Some(old), new) => Some(apply_merge(old, new)),
                    (None, new) => Some(without_nulls(new)),
                };
                match merged {
                    Some(merged) => result.insert(name.clone(), merged),
                    None => result.remove(name),
                };
            }
            Value::Object(result)
        }
        (_, config) => without_nulls(config),
    }
}

fn keyed(name: &str, items: &[Value]) -> bool {
    items.iter().all(|item| item_key(name, item).is_some())
}

fn merge_items(name: &str, live: &[Value], config: &[Value]) -> Value {
    let mut result: Vec<Value> = live.to_vec();
    for item in config {
        let key = item_key(name, item);
        match result.iter_mut().find(|old| item_key(name, old) == key) {
            Some(old) => *old = apply_merge(old, item),
            None => result.push(without_nulls(item)),
        }
    }
    Value::Array(result)
}

/// `value` without the members of its maps that are `null`, at any depth.
pub fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// An empty map, for an object that does not exist yet.
pub fn nothing() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_merge_patch_merges_maps_and_unsets_nulls() {
        let target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        let patch = json!({"a": "z", "c": {"f": null}, "l": [3], "n": {"x": null, "y": 1}});
        assert_eq!(merge_patch(&target, &patch), json!({"a": "z", "c": {"d": "e"}, "l": [3], "n": {"y": 1}}));
        assert_eq!(merge_patch(&target, &json!([1])), json!([1]), "a patch that is no object replaces");
    }

    #[test]
    fn a_json_patch_follows_rfc_6902() {
        let target = json!({"spec": {"w": 1, "l": ["a", "c"]}, "a~b": {"c/d": 1}});
        let ops = json!([
            {"op": "add", "path": "/spec/l/1", "value": "b"},
            {"op": "add", "path": "/spec/l/-", "value": "d"},
            {"op": "replace", "path": "/spec/w", "value": 2},
            {"op": "move", "from": "/a~0b/c~1d", "path": "/moved"},
            {"op": "copy", "from": "/spec/w", "path": "/copied"},
            {"op": "test", "path": "/copied", "value": 2},
            {"op": "remove", "path": "/a~0b"}]);
        let patched = json_patch(&target, &ops).expect("applies");
        assert_eq!(patched, json!({"spec": {"w": 2, "l": ["a", "b", "c", "d"]}, "moved": 1, "copied": 2}));
        for refused in [
            json!([{"op": "replace", "path": "/nothing", "value": 1}]),
            json!([{"op": "remove", "path": "/spec/l/5"}]),
            json!([{"op": "test", "path": "/spec/w", "value": 9}]),
            json!([{"op": "add", "path": "/spec/w/x", "value": 1}]),
            json!({"op": "add"}),
        ] {
            assert!(json_patch(&target, &refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn an_apply_merges_keyed_lists_by_key_and_replaces_others() {
        let live = json!({"metadata": {"finalizers": ["a/x"], "labels": {"k": "v"}},
            "spec": {"w": 1, "zones": ["a"]}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        let config = json!({"metadata": {"finalizers": ["b/y", "a/x"], "labels": {"k": null, "j": "w"}},
            "spec": {"zones": ["b"], "new": {"n": null, "m": 1}},
            "status": {"conditions": [{"type": "Done", "status": "True"}, {"type": "Ready", "status": "True"}]}});
        let merged = apply_merge(&live, &config);
        assert_eq!(
            merged,
            json!({"metadata": {"finalizers": ["a/x", "b/y"], "labels": {"j": "w"}},
                "spec": {"w": 1, "zones": ["b"], "new": {"m": 1}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Done", "status": "True"}]}})
        );
    }
}
