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
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};

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

/// Feeds `value` to `state` so that values [`compare_values`] finds equal hash alike: a number
/// as its value as a double (an integer equals a float of the same value), strings, booleans,
/// lists and maps by their contents.
fn hash_value(value: &Value, state: &mut impl Hasher) {
    match value {
        Value::Null => state.write_u8(5),
        Value::Bool(b) => (2u8, b).hash(state),
        Value::Number(n) => (0u8, n.as_f64().unwrap_or(0.0).to_bits()).hash(state),
        Value::String(s) => (1u8, s).hash(state),
        Value::Array(items) => {
            (3u8, items.len()).hash(state);
            items.iter().for_each(|item| hash_value(item, state));
        }
        Value::Object(fields) => {
            (4u8, fields.len()).hash(state);
            for (name, field) in fields {
                name.hash(state);
                hash_value(field, state);
            }
        }
    }
}

/// Feeds `element` to `state` so that equal elements hash alike (see [`hash_value`]).
fn hash_element(element: &PathElement, state: &mut impl Hasher) {
    match element {
        PathElement::Field(name) => (0u8, name).hash(state),
        PathElement::Key(fields) => {
            (1u8, fields.len()).hash(state);
            for (name, value) in fields {
                name.hash(state);
                hash_value(value, state);
            }
        }
        PathElement::Value(value) => {
            state.write_u8(2);
            hash_value(value, state);
        }
        PathElement::Index(index) => (3u8, index).hash(state),
    }
}

/// Whether two numbers are the same as far as [`compare_values`] can tell: both integers of
/// 64 bits with one value, or neither and one double.
fn identical_numbers(a: &Number, b: &Number) -> bool {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => x == y,
        (None, None) => a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits),
        _ => false,
    }
}

/// Whether [`compare_values`] compares anything with `a` as with `b`. Finer than equality,
/// which is not transitive: `2^53 + 1` equals the float `2^53`, which equals `2^53`.
fn identical_values(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => identical_numbers(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| identical_values(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((kx, x), (ky, y))| kx == ky && identical_values(x, y))
        }
        _ => a == b,
    }
}

/// Whether `a` and `b` are the same element as far as its order can tell (see
/// [`identical_values`]).
fn identical(a: &PathElement, b: &PathElement) -> bool {
    match (a, b) {
        (PathElement::Field(x), PathElement::Field(y)) => x == y,
        (PathElement::Key(x), PathElement::Key(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((kx, x), (ky, y))| kx == ky && identical_values(x, y))
        }
        (PathElement::Value(x), PathElement::Value(y)) => identical_values(x, y),
        (PathElement::Index(x), PathElement::Index(y)) => x == y,
        _ => false,
    }
}

/// Answers, for a sequence of path elements, "which is the first one equal to this?" as a
/// linear search does, in constant expected time (structured-merge-diff's `PathElementMap`
/// answers it by binary search). Elements are hashed so that equal ones hash alike, and each
/// hash chains the elements that have it in order; an element identical to one already chained
/// is not chained again, so duplicates cost nothing. A chain holds more than one element only
/// when hashes collide, or for integers beyond 2^53 that differ but round to one double.
pub(crate) struct ElementIndex<'e> {
    hasher: RandomState,
    /// By hash: the first and the last slot of its chain.
    chains: HashMap<u64, (usize, usize)>,
    /// The chained elements, each with its position in the sequence and the next slot of its chain.
    slots: Vec<Slot<'e>>,
    /// How many elements the sequence has.
    len: usize,
}

/// One element chained in an [`ElementIndex`].
struct Slot<'e> {
    element: &'e PathElement,
    position: usize,
    next: Option<usize>,
}

impl<'e> ElementIndex<'e> {
    /// An index of no element.
    pub(crate) fn new() -> Self {
        Self { hasher: RandomState::new(), chains: HashMap::new(), slots: Vec::new(), len: 0 }
    }

    /// An index of `elements`, numbered from 0 in order.
    pub(crate) fn of(elements: impl IntoIterator<Item = &'e PathElement>) -> Self {
        let mut index = Self::new();
        elements.into_iter().for_each(|element| index.push(element));
        index
    }

    fn hash(&self, element: &PathElement) -> u64 {
        let mut state = self.hasher.build_hasher();
        hash_element(element, &mut state);
        state.finish()
    }

    /// The slots chained under `hash`, in order.
    fn chain(&self, hash: u64) -> impl Iterator<Item = &Slot<'e>> {
        let mut next = self.chains.get(&hash).map(|(first, _)| *first);
        std::iter::from_fn(move || {
            let slot = self.slots.get(next?)?;
            next = slot.next;
            Some(slot)
        })
    }

    /// Adds `element` at the end of the sequence.
    pub(crate) fn push(&mut self, element: &'e PathElement) {
        let position = self.len;
        self.len += 1;
        let hash = self.hash(element);
        if self.chain(hash).any(|slot| identical(slot.element, element)) {
            return;
        }
        let slot = self.slots.len();
        self.slots.push(Slot { element, position, next: None });
        match self.chains.get_mut(&hash) {
            Some((_, last)) => {
                let previous = std::mem::replace(last, slot);
                if let Some(previous) = self.slots.get_mut(previous) {
                    previous.next = Some(slot);
                }
            }
            None => {
                self.chains.insert(hash, (slot, slot));
            }
        }
    }

    /// The position of the first element equal to `element`.
    pub(crate) fn first(&self, element: &PathElement) -> Option<usize> {
        self.chain(self.hash(element)).find(|slot| slot.element == element).map(|slot| slot.position)
    }

    /// Whether an element equals `element`.
    pub(crate) fn contains(&self, element: &PathElement) -> bool {
        self.first(element).is_some()
    }
}

/// `items` sorted by their elements, stably (equal ones keep their order), in O(n log n) and
/// O(n) when they come sorted. A merge sort, because the standard library's sorts may panic when
/// the order is not total, and [`PathElement`]'s is not for integers beyond 2^53 mixed with
/// floats (see [`identical_values`]): a request controls those.
pub(crate) fn sort_by_element<T>(items: Vec<T>, element: &impl Fn(&T) -> &PathElement) -> Vec<T> {
    if items.windows(2).all(|pair| element(&pair[0]) <= element(&pair[1])) {
        return items;
    }
    let mut left = items;
    let right = left.split_off(left.len() / 2);
    let (left, right) = (sort_by_element(left, element), sort_by_element(right, element));
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        let from_right = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => element(r) < element(l),
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (None, None) => break,
        };
        out.extend(if from_right { right.next() } else { left.next() });
    }
    out
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

    /// Builds a set from nodes in order, keeping only those that hold a member.
    fn of(nodes: impl Iterator<Item = (PathElement, Node)>) -> Set {
        let mut set = Set::new();
        for (element, node) in nodes.filter(|(_, n)| !n.is_empty()) {
            set.attach(element, node.member, node.below);
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
        // Sets are built in order: the element goes last, after one comparison, no search.
        let Some((element, node)) = self.nodes.try_append(element, Node { member, below }) else { return };
        match self.nodes.get_mut(&element) {
            Some(mine) => {
                mine.member |= node.member;
                mine.below.merge(node.below);
            }
            None => {
                self.nodes.insert(element, node);
            }
        }
    }

    /// The set of `entries` (each an element, whether it is a member, and the set below it),
    /// given in any order, as [`Set::attach`] one by one builds it: sorted first, so that each
    /// is appended rather than shifting the ones after it.
    pub(crate) fn of_entries(entries: Vec<(PathElement, bool, Set)>) -> Set {
        let mut set = Set::new();
        for (element, member, below) in sort_by_element(entries, &|(element, _, _)| element) {
            set.attach(element, member, below);
        }
        set
    }

    /// The steps below this node, in order: each element, whether it is a member, and the set
    /// below it.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&PathElement, bool, &Set)> {
        self.nodes.iter().map(|(element, node)| (element, node.member, &node.below))
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

    /// Adds every path of `other`, in one walk along both sorted maps (where an element is in
    /// both, this set's copy of it is kept).
    pub fn merge(&mut self, other: Set) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other;
            return;
        }
        let mut merged = Vec::with_capacity(self.nodes.len() + other.nodes.len());
        let mut mine = std::mem::take(&mut self.nodes).into_tuple_vec().into_iter().peekable();
        let mut theirs = other.nodes.into_tuple_vec().into_iter().peekable();
        loop {
            let order = match (mine.peek(), theirs.peek()) {
                (Some((a, _)), Some((b, _))) => a.cmp(b),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => break,
            };
            match (mine.next_if(|_| order.is_le()), theirs.next_if(|_| order.is_ge())) {
                (Some((element, mut node)), Some((_, their))) => {
                    node.member |= their.member;
                    node.below.merge(their.below);
                    merged.push((element, node));
                }
                (Some(entry), None) | (None, Some(entry)) => merged.push(entry),
                (None, None) => break,
            }
        }
        self.nodes = LiteMap::from_sorted_store_unchecked(merged);
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
        let mut nodes = Vec::new();
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
                nodes.push((element, node));
            }
        }
        // The keys come in the order of their text, which is not the elements' (`v:10` before
        // `v:9`): sorted first, each is appended. Of two keys naming one element, the last wins.
        let mut set = Set::new();
        for (element, node) in sort_by_element(nodes, &|(element, _)| element) {
            if let Some((element, node)) = set.nodes.try_append(element, node) {
                set.nodes.insert(element, node);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
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

    /// A few elements, so that paths share steps; `1` and `1.0` are one element.
    fn element() -> impl Strategy<Value = PathElement> {
        prop::sample::select(vec![
            field("a"),
            field("b"),
            PathElement::key(vec![("k".into(), json!(1))]),
            PathElement::key(vec![("k".into(), json!(1.0))]),
            PathElement::key(vec![("k".into(), json!("x")), ("j".into(), json!([2]))]),
            PathElement::Value(json!(10)),
            PathElement::Value(json!(9)),
            PathElement::Value(json!("x")),
            PathElement::Index(0),
        ])
    }

    /// A set of up to 8 paths of up to 3 steps.
    fn set() -> impl Strategy<Value = Set> {
        prop::collection::vec(prop::collection::vec(element(), 1..4), 0..8).prop_map(|paths| {
            let mut set = Set::new();
            paths.iter().for_each(|path| set.insert(path));
            set
        })
    }

    /// Elements whose equality is not transitive: `2^53 + 1` equals the float `2^53`, which
    /// equals `2^53`.
    fn number_element() -> impl Strategy<Value = PathElement> {
        prop::sample::select(vec![
            json!(9007199254740992_i64),
            json!(9007199254740993_i64),
            json!(9007199254740992.0),
            json!(1),
            json!(1.0),
            json!(-0.0),
            json!(0),
            json!([1, 9007199254740993_i64]),
            json!([1.0, 9007199254740992.0]),
            json!({"a": 1}),
        ])
        .prop_map(PathElement::Value)
    }

    /// [`Set::merge`] as it was: each element of `other` looked up and inserted in `set`.
    fn merged_one_by_one(set: &mut Set, other: Set) {
        for (element, theirs) in other.nodes.into_tuple_vec() {
            match set.nodes.get_mut(&element) {
                Some(mine) => {
                    mine.member |= theirs.member;
                    merged_one_by_one(&mut mine.below, theirs.below);
                }
                None => {
                    set.nodes.insert(element, theirs);
                }
            }
        }
    }

    /// [`Set::from_fields_v1`] as it was: each key parsed and inserted in turn.
    fn read_one_by_one(value: &Value) -> Set {
        let mut set = Set::new();
        for (key, child) in value.as_object().into_iter().flatten() {
            let Some(element) = PathElement::parse(key).ok().flatten() else { continue };
            let member = child.as_object().is_some_and(|c| c.is_empty() || c.contains_key("."));
            let node = Node { member, below: read_one_by_one(child) };
            if !node.is_empty() {
                set.nodes.insert(element, node);
            }
        }
        set
    }

    proptest! {
        /// A merge in one walk is the merge one element at a time, keeping this set's copy of
        /// an element both have.
        #[test]
        fn merging_in_one_walk_is_merging_one_by_one(a in set(), b in set()) {
            let mut walked = a.clone();
            walked.merge(b.clone());
            let mut one_by_one = a.clone();
            merged_one_by_one(&mut one_by_one, b.clone());
            prop_assert_eq!(&walked, &one_by_one);
            prop_assert_eq!(walked.to_fields_v1(), one_by_one.to_fields_v1());
            prop_assert_eq!(a.union(&b), walked);
        }

        /// Reading `FieldsV1` whose keys sort otherwise than their elements (`v:10`, `v:9`) and
        /// name one element twice (`k:{"k":1}`, `k:{"k":1.0}`) gives the set it gave.
        #[test]
        fn fields_v1_reads_as_it_read_one_key_at_a_time(a in set(), b in set()) {
            let mut fields = a.to_fields_v1();
            if let (Value::Object(mine), Value::Object(theirs)) = (&mut fields, b.to_fields_v1()) {
                mine.extend(theirs.into_iter().map(|(key, value)| (key.replace("1}", "1.0}"), value)));
            }
            let read = Set::from_fields_v1(&fields).unwrap();
            prop_assert_eq!(&read, &read_one_by_one(&fields));
            prop_assert_eq!(read.to_fields_v1(), read_one_by_one(&fields).to_fields_v1());
        }

        /// Entries sorted once then attached make the set that attaching them in turn made.
        #[test]
        fn entries_sorted_once_attach_as_in_turn(entries in prop::collection::vec((element(), any::<bool>(), set()), 0..10)) {
            let mut in_turn = Set::new();
            for (element, member, below) in entries.clone() {
                in_turn.attach(element, member, below);
            }
            let sorted = Set::of_entries(entries);
            prop_assert_eq!(&sorted, &in_turn);
            prop_assert_eq!(sorted.to_fields_v1(), in_turn.to_fields_v1());
        }

        /// The index finds the first equal element as a linear search does, even where
        /// equality is not transitive, and the merge sort sorts as the standard one, stably.
        #[test]
        fn the_index_finds_what_a_linear_search_finds(
            elements in prop::collection::vec(prop_oneof![element(), number_element()], 0..16),
            wanted in prop_oneof![element(), number_element()],
        ) {
            let index = ElementIndex::of(&elements);
            prop_assert_eq!(index.first(&wanted), elements.iter().position(|e| *e == wanted));
            let ordered: Vec<(PathElement, usize)> = elements.iter().cloned().zip(0..).collect();
            // Sorting elements whose order is not total must not panic.
            let _ = sort_by_element(ordered.clone(), &|(e, _)| e);
            let consistent: Vec<(PathElement, usize)> =
                ordered.into_iter().filter(|(e, _)| !matches!(e, PathElement::Value(Value::Number(_) | Value::Array(_)))).collect();
            let mut expected = consistent.clone();
            expected.sort_by(|(a, _), (b, _)| a.cmp(b));
            let sorted = sort_by_element(consistent, &|(e, _)| e);
            let shown = |v: &[(PathElement, usize)]| v.iter().map(|(e, i)| (e.serialize(), *i)).collect::<Vec<_>>();
            prop_assert_eq!(shown(&sorted), shown(&expected));
        }
    }
}
