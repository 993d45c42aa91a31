//! Ratcheting (k8s.io/apiserver's `CorrelatedObject`, on since CRDValidationRatcheting went GA):
//! on an update, a rule that fails on a value the update left as it was is a warning, not an
//! error. A value correlates with the old object's when the path to it does: through object
//! properties and map entries by name, through `x-kubernetes-list-type: map` items by their
//! keys; not through the items of other lists. A value that does not correlate is judged by its
//! nearest ancestor that does.

use super::schema;
use serde_json::Value;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// A value of the new object and the old one it correlates with, under their schema, with
/// whether they are equal worked out once.
pub struct Correlated<'a> {
    new: &'a Value,
    old: &'a Value,
    schema: &'a Value,
    equal: OnceCell<bool>,
    children: RefCell<HashMap<Child, Option<Rc<Correlated<'a>>>>>,
    /// The old items of a map list, by key (made when an item is first correlated).
    old_items: OnceCell<MapList<'a>>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Child {
    Key(String),
    Index(usize),
}

impl<'a> Correlated<'a> {
    /// The whole new object and the old one, under the resource's schema.
    pub fn new(new: &'a Value, old: &'a Value, schema: &'a Value) -> Rc<Correlated<'a>> {
        Rc::new(Correlated::of(new, old, schema))
    }

    fn of(new: &'a Value, old: &'a Value, schema: &'a Value) -> Correlated<'a> {
        let (equal, old_items, children) = (OnceCell::new(), OnceCell::new(), RefCell::default());
        Correlated { new, old, schema, equal, children, old_items }
    }

    /// The field or map entry `name`, when both objects have it and the schema declares it.
    pub fn key(&self, name: &str) -> Option<Rc<Correlated<'a>>> {
        self.child(Child::Key(name.to_string()), || {
            let (new, old) = (self.new.get(name)?, self.old.get(name)?);
            let (Value::Object(_), Value::Object(_)) = (self.new, self.old) else { return None };
            let declared = schema::properties(self.schema).and_then(|p| p.get(name));
            let schema = declared.or_else(|| schema::additional_properties(self.schema))?;
            Some(Correlated::of(new, old, schema))
        })
    }

    /// The item `index` of the new list, when it correlates with an old item (a map list's item
    /// of the same keys).
    pub fn index(&self, index: usize) -> Option<Rc<Correlated<'a>>> {
        self.child(Child::Index(index), || {
            let (Value::Array(new), Value::Array(old)) = (self.new, self.old) else { return None };
            let item = new.get(index)?;
            if schema::list_type(self.schema) != "map" {
                return None;
            }
            let old_items = self.old_items.get_or_init(|| MapList::new(self.schema, old));
            Some(Correlated::of(item, old_items.get(item)?, schema::items(self.schema)?))
        })
    }

    fn child(&self, at: Child, make: impl FnOnce() -> Option<Correlated<'a>>) -> Option<Rc<Correlated<'a>>> {
        if let Some(known) = self.children.borrow().get(&at) {
            return known.clone();
        }
        let made = make().map(Rc::new);
        self.children.borrow_mut().insert(at, made.clone());
        made
    }

    /// Whether the new value equals the old one (`CachedDeepEqual`): objects and maps entry by
    /// correlated entry, map lists item by correlated item, anything else as JSON.
    pub fn equal(&self) -> bool {
        *self.equal.get_or_init(|| match (self.new, self.old) {
            (Value::Array(new), Value::Array(old)) => {
                if new.len() != old.len() {
                    return false;
                }
                if schema::list_type(self.schema) != "map" {
                    return new == old;
                }
                (0..new.len()).all(|i| self.index(i).is_some_and(|child| child.equal()))
            }
            (Value::Object(new), Value::Object(old)) => {
                new.len() == old.len() && new.keys().all(|k| self.key(k).is_some_and(|child| child.equal()))
            }
            (new, old) => new == old,
        })
    }
}

/// The items of a map list by their keys (`MakeMapList`): the first item of each key. What
/// transition rules of a map list's items see as `oldSelf`, and what ratcheting correlates.
pub struct MapList<'a> {
    keys: Vec<&'a str>,
    items: HashMap<String, &'a Value>,
}

impl<'a> MapList<'a> {
    /// `items` of the list `schema`; empty unless it is a map list with keys.
    pub fn new(schema: &'a Value, items: &'a [Value]) -> MapList<'a> {
        let keys = schema::list_map_keys(schema);
        let mut list = MapList { keys, items: HashMap::new() };
        if schema::type_of(schema) != "array" || schema::list_type(schema) != "map" || list.keys.is_empty() {
            return list;
        }
        for item in items {
            if let Some(key) = list.key_of(item) {
                list.items.entry(key).or_insert(item);
            }
        }
        list
    }

    /// The item of the same keys as `item`.
    pub fn get(&self, item: &Value) -> Option<&'a Value> {
        self.items.get(&self.key_of(item)?).copied()
    }

    /// The keys' values of `item`, written so that values of different types differ (as Go's
    /// map keys do: `1` is not `1.0`), each a scalar; `None` when one is missing or not scalar.
    fn key_of(&self, item: &Value) -> Option<String> {
        let mut out = String::new();
        for key in &self.keys {
            let value = item.get(key)?;
            match value {
                Value::Bool(_) | Value::String(_) => out.push_str(&value.to_string()),
                Value::Number(n) if n.is_f64() && self.keys.len() > 1 => {
                    out.push_str(&format!("{:.6}f", n.as_f64().unwrap_or_default()));
                }
                Value::Number(n) if n.is_f64() => out.push_str(&format!("{n}f")),
                Value::Number(n) => out.push_str(&n.to_string()),
                _ => return None,
            }
            out.push('\0');
        }
        Some(out)
    }
}

/// Where the walk of the rules is, for ratcheting: the correlated value, or else the nearest
/// correlated ancestor (`ratchetingOptions`).
#[derive(Clone, Default)]
pub struct Ratchet<'a> {
    current: Option<Rc<Correlated<'a>>>,
    parent: Option<Rc<Correlated<'a>>>,
}

impl<'a> Ratchet<'a> {
    /// At the root of an update's objects; [`Ratchet::default`] for a create (nothing ratchets).
    pub fn root(correlated: Rc<Correlated<'a>>) -> Ratchet<'a> {
        Ratchet { current: Some(correlated), parent: None }
    }

    /// Whether an error found here is a warning: the value (or its nearest correlated ancestor)
    /// is unchanged.
    pub fn unchanged(&self) -> bool {
        match (&self.current, &self.parent) {
            (Some(current), _) => current.equal(),
            (None, parent) => parent.as_ref().is_some_and(|p| p.equal()),
        }
    }

    /// At the field or map entry `name`. The root's `apiVersion` and `kind` never ratchet: both
    /// objects are converted to the request's version.
    pub fn key(&self, name: &str) -> Ratchet<'a> {
        let Some(current) = &self.current else { return self.clone() };
        if self.parent.is_none() && (name == "apiVersion" || name == "kind") {
            return Ratchet::default();
        }
        Ratchet { current: current.key(name), parent: Some(current.clone()) }
    }

    /// At the item `index`.
    pub fn index(&self, index: usize) -> Ratchet<'a> {
        let Some(current) = &self.current else { return self.clone() };
        Ratchet { current: current.index(index), parent: Some(current.clone()) }
    }

    /// The same place for the rules of an `allOf` branch, which Kubernetes does not correlate:
    /// only the nearest correlated ancestor is kept.
    pub fn uncorrelated(&self) -> Ratchet<'a> {
        Ratchet { current: None, parent: self.parent.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            "tags": {"type": "array", "items": {"type": "string"}},
        }})
    }

    #[test]
    fn unchanged_values_correlate_by_name_and_map_list_keys() {
        let schema = schema();
        let old = json!({"spec": {"x": 1, "y": 2}, "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}],
            "tags": ["t"]});
        let new = json!({"spec": {"x": 1, "y": 3}, "ports": [{"name": "b", "port": 2}, {"name": "a", "port": 5}],
            "tags": ["t"]});
        let root = Ratchet::root(Correlated::new(&new, &old, &schema));
        assert!(!root.unchanged());
        assert!(root.key("spec").key("x").unchanged());
        assert!(!root.key("spec").key("y").unchanged());
        assert!(root.key("ports").index(0).unchanged(), "b moved but is unchanged");
        assert!(!root.key("ports").index(1).unchanged());
        assert!(root.key("tags").unchanged());
        assert!(root.key("tags").index(0).unchanged(), "an atomic list's item: by the list");
        assert!(!root.key("kind").unchanged());
        assert!(!Ratchet::default().unchanged(), "a create ratchets nothing");
    }

    #[test]
    fn a_value_the_old_object_lacks_is_judged_by_its_parent() {
        let schema = schema();
        let (old, new) = (json!({"spec": {"x": 1}}), json!({"spec": {"x": 1, "y": 2}}));
        let root = Ratchet::root(Correlated::new(&new, &old, &schema));
        assert!(!root.key("spec").key("y").unchanged());
        let undeclared = json!({"spec": {"x": 1}, "other": 1});
        let root = Ratchet::root(Correlated::new(&undeclared, &undeclared, &schema));
        assert!(!root.unchanged(), "a field the schema does not declare does not correlate");
    }
}
