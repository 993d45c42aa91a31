//! Field paths and field sets, the vocabulary of managed fields and server-side apply, ported from
//! the `fieldpath` package of sigs.k8s.io/structured-merge-diff (element.go, set.go,
//! serialize.go, serialize-pe.go), which no Rust crate provides.
//!
//! A [`PathElement`] names one step into an object: a field (`f:spec`), an entry of a list keyed
//! by some of its fields (`k:{"type":"Ready"}`), an entry of a list of scalars by its value
//! (`v:"orphan"`), or a list position (`i:0`). A [`Set`] is a tree of such steps; a node is a
//! member when the path to it is in the set, and may also have children. `FieldsV1`, the form
//! `metadata.managedFields[].fieldsV1` stores, writes each step as a JSON key whose value holds its
//! children, with `".": {}` marking a node that is a member and has children too.

use litemap::LiteMap;
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// One step of a field path.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of an object, or a key of a map: `f:name`.
    Field(String),
    /// The entry of an associative list whose key fields have these values, sorted by name:
    /// `k:{"type":"Ready"}`.
    Key(Vec<(String, Value)>),
    /// The entry of a list of scalars (a set) with this value: `v:"orphan"`.
    Value(Value),
    /// A position in a list that has no keys: `i:0`.
    Index(usize),
}

/// Total order of JSON values as structured-merge-diff's `value.Compare` defines it: numbers
/// (compared numerically), then strings, booleans, lists, maps, and null last.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => x.as_f64().unwrap_or(0.0).total_cmp(&y.as_f64().unwrap_or(0.0)),
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            x.iter().zip(y).map(|(x, y)| compare_values(x, y)).find(|o| o.is_ne()).unwrap_or(x.len().cmp(&y.len()))
        }
        (Value::Object(x), Value::Object(y)) => {
            let x: Vec<(&String, &Value)> = x.iter().collect();
            let y: Vec<(&String, &Value)> = y.iter().collect();
            compare_fields(&x, &y)
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Compares two field lists sorted by name, pair by pair, then by length.
fn compare_fields<K: AsRef<str>, V: std::borrow::Borrow<Value>>(a: &[(K, V)], b: &[(K, V)]) -> Ordering {
    for ((ka, va), (kb, vb)) in a.iter().zip(b) {
        let by_name = ka.as_ref().cmp(kb.as_ref());
        if by_name.is_ne() {
            return by_name;
        }
        let by_value = compare_values(va.borrow(), vb.borrow());
        if by_value.is_ne() {
            return by_value;
        }
    }
    a.len().cmp(&b.len())
}

impl Ord for PathElement {
    /// Fields, then keys, then values, then indexes, as `PathElement.Compare` orders them.
    fn cmp(&self, other: &Self) -> Ordering {
        use PathElement::{Field, Index, Key, Value as V};
        let rank = |e: &PathElement| match e {
            Field(_) => 0,
            Key(_) => 1,
            V(_) => 2,
            Index(_) => 3,
        };
        match (self, other) {
            (Field(a), Field(b)) => a.cmp(b),
            (Key(a), Key(b)) => compare_fields(a, b),
            (V(a), V(b)) => compare_values(a, b),
            (Index(a), Index(b)) => a.cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for PathElement {}

impl PathElement {
    /// The element of an associative-list entry, from its key fields (sorted here).
    pub fn key(mut fields: Vec<(String, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        Self::Key(fields)
    }

    /// The `FieldsV1` key of this element.
    pub fn serialize(&self) -> String {
        match self {
            Self::Field(name) => ["f:", name].concat(),
            Self::Key(fields) => {
                let entries: Vec<String> =
                    fields.iter().map(|(name, value)| format!("{}:{value}", Value::String(name.clone()))).collect();
                format!("k:{{{}}}", entries.join(","))
            }
            Self::Value(value) => format!("v:{value}"),
            Self::Index(index) => format!("i:{index}"),
        }
    }

    /// Reads a `FieldsV1` key; `Ok(None)` for an element type this version does not know (skipped,
    /// as structured-merge-diff skips it).
    pub fn parse(text: &str) -> Result<Option<Self>, String> {
        let Some((kind, rest)) = text.split_at_checked(2) else {
            return Err(format!("{text:?}: a path element has at least 2 characters"));
        };
        let json = |rest: &str| serde_json::from_str::<Value>(rest).map_err(|e| format!("{text:?}: {e}"));
        match kind {
            "f:" => Ok(Some(Self::Field(rest.to_string()))),
            "v:" => Ok(Some(Self::Value(json(rest)?))),
            "k:" => match json(rest)? {
                Value::Object(fields) => Ok(Some(Self::key(fields.into_iter().collect()))),
                _ => Err(format!("{text:?}: a key element holds a JSON object")),
            },
            "i:" => rest.parse().map(|i| Some(Self::Index(i))).map_err(|e| format!("{text:?}: {e}")),
            _ if kind.ends_with(':') => Ok(None),
            _ => Err(format!("{text:?}: missing colon")),
        }
    }
}

impl std::fmt::Display for PathElement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Field(name) => write!(f, ".{name}"),
            Self::Key(fields) => {
                let entries: Vec<String> = fields.iter().map(|(name, value)| format!("{name}={value}")).collect();
                write!(f, "[{}]", entries.join(","))
            }
            Self::Value(value) => write!(f, "[={value}]"),
            Self::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A path: the steps from the object's root.
pub type Path = Vec<PathElement>;

/// Writes a path as structured-merge-diff's `Path.String` does: `.spec.containers[name="app"]`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of field paths, as a tree: each step below a node is an entry of one sorted map
/// (a [`LiteMap`], a sorted `Vec`), which keeps the small sets of an object cheap to build and
/// combine. structured-merge-diff keeps `Members` and `Children` apart; here one entry holds
/// both, and an entry that is neither a member nor has members below it is never kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    nodes: LiteMap<PathElement, Node>,
}

/// One step of a [`Set`]: whether the path to it is a member, and the paths below it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Node {
    member: bool,
    below: Set,
}

impl Node {
    fn is_empty(&self) -> bool {
        !self.member && self.below.nodes.is_empty()
    }
}

impl Set {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a set from nodes, keeping only those that hold a member.
    fn of(nodes: impl Iterator<Item = (PathElement, Node)>) -> Set {
        let mut set = Set::new();
        for (element, node) in nodes.filter(|(_, n)| !n.is_empty()) {
            set.nodes.insert(element, node);
        }
        set
    }

    /// Adds `path` (not its parents). The empty path, the whole object, is never tracked.
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((first, rest)) = path.split_first() else { return };
        let node = match self.nodes.get_mut(first) {
            Some(node) => node,
            None => {
                self.nodes.insert(first.clone(), Node::default());
                let Some(node) = self.nodes.get_mut(first) else { return };
                node
            }
        };
        if rest.is_empty() {
            node.member = true;
        } else {
            node.below.insert(rest);
        }
    }

    /// Adds `element` (a member itself when `member`) with `below` under it, merged into what is
    /// there; nothing when neither holds a member. Building a set bottom-up this way copies no
    /// path, and appends when elements come in order.
    pub fn attach(&mut self, element: PathElement, member: bool, below: Set) {
        if !member && below.is_empty() {
            return;
        }
        match self.nodes.get_mut(&element) {
            Some(node) => {
                node.member |= member;
                node.below.merge(below);
            }
            None => {
                self.nodes.insert(element, Node { member, below });
            }
        }
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.nodes.get(last).is_some_and(|n| n.member),
            [first, rest @ ..] => self.nodes.get(first).is_some_and(|n| n.below.has(rest)),
        }
    }

    /// Whether `element` (a path of length one) is a member.
    fn has_member(&self, element: &PathElement) -> bool {
        self.nodes.get(element).is_some_and(|n| n.member)
    }

    /// The members of this node (paths of length one).
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.nodes.iter().filter(|(_, n)| n.member).map(|(e, _)| e)
    }

    /// The nodes below this one that have members below them, with their sets.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.nodes.iter().filter(|(_, n)| !n.below.nodes.is_empty()).map(|(e, n)| (e, &n.below))
    }

    /// The set below `element`, if it has members.
    pub fn child(&self, element: &PathElement) -> Option<&Set> {
        self.nodes.get(element).map(|n| &n.below).filter(|below| !below.nodes.is_empty())
    }

    /// Puts `set` below `element`, replacing what was there.
    pub fn set_child(&mut self, element: PathElement, set: Set) {
        let member = self.has_member(&element);
        let node = Node { member, below: set };
        if node.is_empty() {
            self.nodes.remove(&element);
        } else {
            self.nodes.insert(element, node);
        }
    }

    /// Whether the set has no member at all.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The paths in either set.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.merge(other.clone());
        out
    }

    /// Adds every path of `other`.
    pub fn merge(&mut self, other: Set) {
        for (element, theirs) in other.nodes.into_tuple_vec() {
            match self.nodes.get_mut(&element) {
                Some(mine) => {
                    mine.member |= theirs.member;
                    mine.below.merge(theirs.below);
                }
                None => {
                    self.nodes.insert(element, theirs);
                }
            }
        }
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &Set) -> Set {
        Set::of(self.nodes.iter().filter_map(|(element, mine)| {
            let theirs = other.nodes.get(element)?;
            let node = Node { member: mine.member && theirs.member, below: mine.below.intersection(&theirs.below) };
            Some((element.clone(), node))
        }))
    }

    /// The paths of `self` that `other` lacks; a parent stays even when `other` has its
    /// children (structured-merge-diff's `Difference`).
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.remove(other);
        out
    }

    /// Removes the paths of `other` (see [`Set::difference`]).
    pub fn remove(&mut self, other: &Set) {
        self.remove_where(other, false);
    }

    /// Like [`Set::difference`], but a member of `other` also removes everything below it.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.remove_recursive(other);
        out
    }

    /// Removes the paths of `other` and everything below its members (see
    /// [`Set::recursive_difference`]).
    pub fn remove_recursive(&mut self, other: &Set) {
        self.remove_where(other, true);
    }

    fn remove_where(&mut self, other: &Set, recursive: bool) {
        if other.is_empty() || self.is_empty() {
            return;
        }
        for (element, mine) in self.nodes.iter_mut() {
            let Some(theirs) = other.nodes.get(element) else { continue };
            if recursive && theirs.member {
                *mine = Node::default();
                continue;
            }
            mine.member &= !theirs.member;
            mine.below.remove_where(&theirs.below, recursive);
        }
        self.nodes.retain(|_, node| !node.is_empty());
    }

    /// Every member path, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (element, node) in self.nodes.iter() {
            prefix.push(element.clone());
            if node.member {
                out.push(prefix.clone());
            }
            node.below.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The set as `FieldsV1` JSON.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.fields_v1_contents(false))
    }

    fn fields_v1_contents(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !self.nodes.is_empty() {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        for (element, node) in self.nodes.iter() {
            out.insert(element.serialize(), Value::Object(node.below.fields_v1_contents(node.member)));
        }
        out
    }

    /// Reads `FieldsV1` JSON; an error names the key that is not a path element.
    pub fn from_fields_v1(value: &Value) -> Result<Set, String> {
        let Value::Object(map) = value else { return Err("fieldsV1 must be a JSON object".into()) };
        let mut set = Set::new();
        for (key, child) in map {
            if key == "." {
                continue;
            }
            let Some(element) = PathElement::parse(key)? else { continue };
            let Value::Object(grandchildren) = child else {
                return Err(format!("{key:?}: the value of a path element must be a JSON object"));
            };
            let member = grandchildren.is_empty() || grandchildren.contains_key(".");
            let node = Node { member, below: Set::from_fields_v1(child)? };
            if !node.is_empty() {
                set.nodes.insert(element, node);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A fieldsV1 written by the kube-apiserver 1.20 for a custom resource.
    fn from_the_kube_apiserver() -> Value {
        json!({"f:metadata":{"f:labels":{".":{},"f:herd":{}}},"f:spec":{".":{},"f:height":{},"f:weight":{}},"f:status":{}})
    }

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn fields_v1_round_trips() {
        let set = Set::from_fields_v1(&from_the_kube_apiserver()).unwrap();
        assert!(set.has(&[field("spec")]) && set.has(&[field("spec"), field("weight")]));
        assert!(set.has(&[field("metadata"), field("labels")]) && !set.has(&[field("metadata")]));
        assert!(set.has(&[field("status")]));
        assert_eq!(set.to_fields_v1(), from_the_kube_apiserver());
    }

    #[test]
    fn every_element_kind_serializes_and_parses() {
        let keyed = PathElement::key(vec![("type".into(), json!("Ready")), ("port".into(), json!(80))]);
        assert_eq!(keyed.serialize(), r#"k:{"port":80,"type":"Ready"}"#);
        for element in [keyed, PathElement::Value(json!("orphan")), PathElement::Index(3), field("a.b")] {
            assert_eq!(PathElement::parse(&element.serialize()).unwrap(), Some(element));
        }
        assert_eq!(PathElement::parse("x:whatever").unwrap(), None, "unknown kinds are skipped");
        assert!(PathElement::parse("f").is_err() && PathElement::parse("fx").is_err());
        assert!(PathElement::parse("k:[1]").is_err() && PathElement::parse("i:-1").is_err());
    }

    #[test]
    fn elements_order_as_structured_merge_diff_orders_them() {
        let mut elements = [
            PathElement::Index(0),
            PathElement::Value(json!(null)),
            PathElement::Value(json!("a")),
            PathElement::Value(json!(2)),
            PathElement::key(vec![("k".into(), json!("b"))]),
            PathElement::key(vec![("k".into(), json!("a"))]),
            field("b"),
            field("a"),
        ];
        elements.sort();
        let shown: Vec<String> = elements.iter().map(PathElement::serialize).collect();
        assert_eq!(shown, ["f:a", "f:b", r#"k:{"k":"a"}"#, r#"k:{"k":"b"}"#, "v:2", r#"v:"a""#, "v:null", "i:0"]);
    }

    #[test]
    fn set_operations_follow_structured_merge_diff() {
        let set = |paths: &[&[&str]]| {
            let mut s = Set::new();
            for p in paths {
                s.insert(&p.iter().map(|f| field(f)).collect::<Vec<_>>());
            }
            s
        };
        let a = set(&[&["spec"], &["spec", "weight"], &["spec", "height"]]);
        let b = set(&[&["spec", "weight"], &["status"]]);
        assert_eq!(a.union(&b), set(&[&["spec"], &["spec", "weight"], &["spec", "height"], &["status"]]));
        assert_eq!(a.intersection(&b), set(&[&["spec", "weight"]]));
        assert_eq!(a.difference(&b), set(&[&["spec"], &["spec", "height"]]));
        assert_eq!(
            a.difference(&set(&[&["spec"]])),
            set(&[&["spec", "weight"], &["spec", "height"]]),
            "parent - child"
        );
        assert_eq!(a.recursive_difference(&set(&[&["spec"]])), Set::new());
        assert!(set(&[]).is_empty() && !b.is_empty());
        let paths: Vec<String> = a.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(paths, [".spec", ".spec.height", ".spec.weight"]);
    }

    #[test]
    fn a_step_with_nothing_left_below_it_is_dropped_so_equal_sets_compare_equal() {
        let mut a = Set::new();
        a.insert(&[field("spec"), field("weight")]);
        a.insert(&[field("status")]);
        let mut only_status = Set::new();
        only_status.insert(&[field("status")]);
        let mut removed = a.clone();
        removed.remove(&a.difference(&only_status));
        assert_eq!(removed, only_status, "no empty `spec` step is left behind");
        assert_eq!(removed.child(&field("spec")), None);
        let mut recursive = a.clone();
        recursive.remove_recursive(&a);
        assert!(recursive.is_empty() && recursive == Set::new());
        let mut replaced = a.clone();
        replaced.set_child(field("spec"), Set::new());
        assert_eq!(replaced, only_status);
        let mut merged = only_status.clone();
        merged.merge(a.clone());
        assert_eq!(merged, a);
    }
}
