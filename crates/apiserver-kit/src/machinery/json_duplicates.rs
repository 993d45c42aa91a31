//! The fields a JSON request body repeats, named as the kube-apiserver's strict decoder
//! (sigs.k8s.io/json) names them: `duplicate field "spec.weight"`, keys joined by dots and list
//! items by their index (`spec.zones[0].name`), each path once, at most 100.
//!
//! serde_json keeps the last of repeated keys silently (as Go does), so the repeats are found in
//! the bytes. A body whose parsed value holds as many members as the bytes separate with a colon
//! repeats nothing, which one pass over the bytes tells; only a body that repeats a key (or one
//! whose deepest containers the parser was handed empty) is scanned for paths. The scan keeps its
//! stack on the heap: a body may nest as deep as Go reads it.

use serde_json::Value;
use std::collections::HashSet;

/// How many repeated paths are reported (sigs.k8s.io/json keeps as many strict errors).
pub const MAX_REPORTED: usize = 100;

/// The paths of the fields `bytes` (which parsed into `value`) repeats, in the order their
/// repeats appear.
pub fn duplicate_fields(bytes: &[u8], value: &Value) -> Vec<String> {
    if separators(bytes) == members(value) { Vec::new() } else { scan(bytes) }
}

/// How many `:` stand outside strings: one per member of every object.
fn separators(bytes: &[u8]) -> usize {
    let (mut count, mut in_string, mut escaped) = (0, false, false);
    for &b in bytes {
        match (in_string, b) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b':') => count += 1,
            _ => {}
        }
    }
    count
}

/// How many members the objects of `value` hold in all.
fn members(value: &Value) -> usize {
    match value {
        Value::Object(map) => map.len() + map.values().map(members).sum::<usize>(),
        Value::Array(items) => items.iter().map(members).sum(),
        _ => 0,
    }
}

/// One open container of the scan.
enum Frame {
    /// An object: the keys it has had, the member being read, whether a key comes next.
    Object { keys: HashSet<String>, key: String, expecting_key: bool },
    /// A list: the index of the item being read.
    List(usize),
}

/// Where the scan stands: its open containers and what it found.
#[derive(Default)]
struct Scan {
    stack: Vec<Frame>,
    found: Vec<String>,
}

impl Scan {
    /// The path of `key` in the innermost object, as sigs.k8s.io/json writes it.
    fn path_of(&self, key: &str) -> String {
        let mut path = String::new();
        let parents = self.stack.len().saturating_sub(1);
        for frame in &self.stack[..parents] {
            match frame {
                Frame::Object { key, .. } => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                }
                Frame::List(index) => path.push_str(&format!("[{index}]")),
            }
        }
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        path
    }

    /// A string at `text` (its quotes included): a key when the innermost object expects one.
    fn string(&mut self, text: &[u8]) {
        let Some(Frame::Object { expecting_key: true, .. }) = self.stack.last() else { return };
        let key: String = serde_json::from_slice(text).unwrap_or_default();
        let path = self.path_of(&key);
        if let Some(Frame::Object { keys, key: current, expecting_key }) = self.stack.last_mut() {
            if !keys.insert(key.clone()) && self.found.len() < MAX_REPORTED && !self.found.contains(&path) {
                self.found.push(path);
            }
            *current = key;
            *expecting_key = false;
        }
    }

    /// A `,`: the next item of a list, or the next member of an object.
    fn next(&mut self) {
        match self.stack.last_mut() {
            Some(Frame::List(index)) => *index += 1,
            Some(Frame::Object { expecting_key, .. }) => *expecting_key = true,
            None => {}
        }
    }
}

/// Every repeated path of `bytes`, found by walking its tokens. Input that is not JSON gives
/// what was found up to where it stops making sense (the parser has refused it anyway).
fn scan(bytes: &[u8]) -> Vec<String> {
    let mut scan = Scan::default();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => scan.stack.push(Frame::Object { keys: HashSet::new(), key: String::new(), expecting_key: true }),
            b'[' => scan.stack.push(Frame::List(0)),
            b'}' | b']' => drop(scan.stack.pop()),
            b',' => scan.next(),
            b'"' => {
                let end = string_end(bytes, at);
                scan.string(&bytes[at..end]);
                at = end;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    scan.found
}

/// The index just past the string that starts at `start` (its opening quote).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn found(text: &str) -> Vec<String> {
        let value: Value = serde_json::from_str(text).unwrap();
        duplicate_fields(text.as_bytes(), &value)
    }

    #[test]
    fn repeated_keys_are_named_by_their_path() {
        assert!(found(r#"{"a": 1, "b": {"c": ":", "d": [1, {"e": 2}]}}"#).is_empty());
        assert_eq!(found(r#"{"spec": {"weight": 1, "weight": 2}}"#), ["spec.weight"]);
        assert_eq!(found(r#"{"metadata": {}, "metadata": {"name": "x"}}"#), ["metadata"]);
        assert_eq!(found(r#"{"s": {"z": [{"n": 1}, {"n": 1, "n": 2, "n": 3}]}}"#), ["s.z[1].n"], "each path once");
        assert_eq!(found(r#"{"a\"b": 1, "a\u0022b": 2, "x": {"y": 1}, "x": {"y": 2, "y": 3}}"#), ["a\"b", "x", "x.y"]);
    }

    #[test]
    fn at_most_a_hundred_are_named() {
        let body = format!("{{{}}}", (0..300).map(|i| format!(r#""k{}": {i}"#, i % 150)).collect::<Vec<_>>().join(","));
        assert_eq!(found(&body).len(), MAX_REPORTED);
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf =
            prop_oneof![Just(Value::Null), any::<i32>().prop_map(Value::from), "[a-z:\"]{0,4}".prop_map(Value::from)];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c:\"]{1,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn a_body_without_repeats_has_none(value in json()) {
            let text = serde_json::to_string_pretty(&value).unwrap();
            prop_assert!(duplicate_fields(text.as_bytes(), &value).is_empty());
            prop_assert!(scan(text.as_bytes()).is_empty());
        }

        #[test]
        fn a_repeated_top_level_key_is_found(value in json(), key in "[a-c]{1,2}") {
            let text = format!(r#"{{"{key}": 1, "{key}": {value}}}"#);
            let parsed: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(duplicate_fields(text.as_bytes(), &parsed), vec![key]);
        }
    }
}
