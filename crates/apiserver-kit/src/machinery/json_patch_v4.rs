//! JSON patches (RFC 6902) applied as the kube-apiserver applies a MutatingAdmissionPolicy's
//! JSONPatch mutations: with `gopkg.in/evanphx/json-patch.v4` v4.13.0's `Patch.Apply` and its
//! defaults (negative indices count from the end of an array, no limit on what `copy` adds),
//! its results and its error texts, quirks included. k8s.io/apiserver's
//! `pkg/admission/plugin/policy/mutating/patch/json_patch.go` wraps an error as `JSON Patch:
//! <error>`, except a failed `test` (`PatchError::test_failed`), which leaves the object as it
//! was, without an error.
//!
//! The library decodes the document into its own containers, a `partialDoc` (a map) or a
//! `partialArray`, whose members are raw JSON decoded when a path goes through them, and encodes
//! the result back; numbers are never re-encoded, so serde_json's numbers are kept as they are.
//! Its quirks, which this port keeps:
//!
//! - A `null` inside a decoded object or array is a nil member, which reads like a missing key:
//!   `test` of a missing key or a `null` member passes without a value and fails with one (a
//!   present `"value": null` is the JSON null, as Kubernetes builds its operations), `copy` from
//!   a missing key adds `null`, `replace` of a missing key adds it.
//! - A `null` a patch put in place is a node whose raw JSON is `null`: it decodes as an empty
//!   (nil) map, so `test` finds it equal to `null`, `{}` and (compared with an array) `[]`, and
//!   adding below it panics in Go (`assignment to entry in nil map`), as does adding anything to
//!   the document `null` or to one that `replace` of `""` made `null`.
//! - `test` compares scalars by their JSON text (`1` is not `1.0`); comparing arrays of the same
//!   length where one holds a `null` at a place compared, or testing `""` without a value, or
//!   replacing `""` without one, dereferences a nil pointer in Go.
//! - What precedes a path's first `/` is never read (`a/b` is `/b`), `""` is the root only for
//!   `replace` and `test`, `~1` and `~0` are decoded once from left to right, and indices are Go's
//!   `strconv.Atoi` (`+1` and `01` are 1).
//!
//! Go's panics surface here as errors with [`PatchError::panicked`] set and the panic's value
//! as its message (the kube-apiserver answers such a request with a 500 that names no cause).
//! Operations are objects with the fields Kubernetes gives a `jsonpatch.Operation`: `op`,
//! `path`, `from` (which Kubernetes leaves out when empty) and `value`; a field of another type
//! reads as Go's `json.Unmarshal` reads it into a string (`null` is `""`), and an operation that
//! is not an object has no fields. The functions recurse as deep as the document and the values
//! nest (as serde_json's own drop of them does). Checked against the library by
//! tests/json_patch_v4.rs.

use super::error::go_quote;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Why a patch does not apply: Go's `err.Error()`, and whether Kubernetes ignores it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PatchError {
    /// The error's text, as Go's `err.Error()` (for a panic, its value as `fmt.Sprint` prints it).
    pub message: String,
    /// Whether it is a failed `test` (`errors.Is(err, jsonpatch.ErrTestFailed)`): Kubernetes
    /// then leaves the object unchanged and reports nothing.
    pub test_failed: bool,
    /// Whether the library panics here instead of returning an error.
    pub panicked: bool,
}

impl PatchError {
    fn new(message: String) -> Self {
        Self { message, test_failed: false, panicked: false }
    }

    fn panic(message: String) -> Self {
        Self { message, test_failed: false, panicked: true }
    }

    fn test_failed(path: &str) -> Self {
        Self { message: format!("testing value {path} failed: test failed"), test_failed: true, panicked: false }
    }

    /// `fmt.Errorf("<prefix>%w", err)`; a panic stays as it is.
    fn wrap(self, prefix: String) -> Self {
        if self.panicked { self } else { Self { message: prefix + &self.message, ..self } }
    }
}

/// The nil pointer dereference of `lazyNode.equal` and of `replace` without a value.
const NIL_DEREFERENCE: &str = "runtime error: invalid memory address or nil pointer dereference";

/// `ErrMissing`'s text.
const MISSING: &str = "missing value";

/// A non-nil `*lazyNode`. JSON null inside a decoded container is a nil one, [`Slot`]'s `None`.
#[derive(Debug, Clone)]
enum Node {
    /// Raw JSON `null` (a value the patch put in place, or the whole document): it decodes as a
    /// nil `partialDoc`, which reads as empty and panics when written to.
    Null,
    Object(BTreeMap<String, Slot>),
    Array(Vec<Slot>),
    /// A string, number or boolean, compared by its JSON text.
    Scalar(Value),
}

/// A member of a container: `None` is Go's nil `*lazyNode`.
type Slot = Option<Node>;

impl Node {
    fn from_json(value: &Value) -> Self {
        match value {
            Value::Null => Self::Null,
            Value::Object(map) => Self::Object(map.iter().map(|(key, member)| (key.clone(), slot(member))).collect()),
            Value::Array(items) => Self::Array(items.iter().map(slot).collect()),
            scalar => Self::Scalar(scalar.clone()),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, member)| (key.clone(), member.as_ref().map_or(Value::Null, Self::to_json)))
                    .collect(),
            ),
            Self::Array(items) => {
                Value::Array(items.iter().map(|item| item.as_ref().map_or(Value::Null, Self::to_json)).collect())
            }
            Self::Scalar(scalar) => scalar.clone(),
        }
    }
}

/// A member as a decoded container holds it: `null` is nil.
fn slot(value: &Value) -> Slot {
    (!value.is_null()).then(|| Node::from_json(value))
}

/// `doc` patched by `operations`, as `jsonpatch.Patch.Apply` patches its JSON: the operations in
/// order, the first error stopping them (see the [module](self) for the library's ways).
pub fn apply(doc: &Value, operations: &[Value]) -> Result<Value, PatchError> {
    let mut root = match doc {
        Value::Object(_) | Value::Array(_) | Value::Null => Node::from_json(doc),
        other => {
            let kind = go_json_kind(other);
            return Err(PatchError::new(format!(
                "json: cannot unmarshal {kind} into Go value of type jsonpatch.partialDoc"
            )));
        }
    };
    for operation in operations {
        let op = Operation(operation.as_object());
        match op.kind().as_str() {
            "add" => add(&mut root, &op),
            "remove" => remove(&mut root, &op),
            "replace" => replace(&mut root, &op),
            "move" => move_value(&mut root, &op),
            "test" => test(&mut root, &op),
            "copy" => copy(&mut root, &op),
            kind => Err(PatchError::new(format!("Unexpected kind: {kind}"))),
        }?;
    }
    Ok(root.to_json())
}

/// What `encoding/json` calls a value that does not decode into a Go type.
pub(crate) fn go_json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A `jsonpatch.Operation`: its fields, each a raw message Kubernetes made.
struct Operation<'a>(Option<&'a Map<String, Value>>);

impl Operation<'_> {
    fn field(&self, name: &str) -> Option<&Value> {
        self.0.and_then(|fields| fields.get(name))
    }

    /// `Operation.Kind`: `unknown` when missing or not a string, `""` for `null`.
    fn kind(&self) -> String {
        match self.field("op") {
            Some(Value::String(op)) => op.clone(),
            Some(Value::Null) => String::new(),
            _ => "unknown".to_string(),
        }
    }

    /// `Operation.Path` (or `From`): the field's string, or Go's error text.
    fn string_field(&self, name: &str, missing: &str) -> Result<String, PatchError> {
        match self.field(name) {
            Some(Value::String(text)) => Ok(text.clone()),
            Some(Value::Null) => Ok(String::new()),
            Some(other) => {
                let kind = go_json_kind(other);
                Err(PatchError::new(format!("json: cannot unmarshal {kind} into Go value of type string")))
            }
            None => Err(PatchError::new(missing.to_string())),
        }
    }

    fn path(&self) -> Result<String, PatchError> {
        self.string_field("path", "operation missing path field: missing value")
    }

    fn from(&self) -> Result<String, PatchError> {
        self.string_field("from", "operation, missing from field: missing value")
    }

    /// `Operation.value`: nil when missing; `null` is a node holding raw `null`.
    fn value(&self) -> Option<Node> {
        self.field("value").map(Node::from_json)
    }
}

/// The RFC 6901 decoding of a reference token (`strings.NewReplacer("~1", "/", "~0", "~")`).
fn decode_key(token: &str) -> String {
    let mut decoded = String::with_capacity(token.len());
    let mut rest = token;
    while let Some(tilde) = rest.find('~') {
        decoded.push_str(&rest[..tilde]);
        let after = &rest[tilde + 1..];
        match after.as_bytes().first() {
            Some(b'1') => decoded.push('/'),
            Some(b'0') => decoded.push('~'),
            _ => {
                decoded.push('~');
                rest = after;
                continue;
            }
        }
        rest = &after[1..];
    }
    decoded.push_str(rest);
    decoded
}

/// `findObject`: the container holding the path's last token, and that token decoded. The
/// first segment is never read; a path without `/` has none.
fn find_object<'a>(root: &'a mut Node, path: &str) -> Option<(&'a mut Node, String)> {
    let split: Vec<&str> = path.split('/').collect();
    let (key, parents) = split.split_last()?;
    let parents = parents.get(1..)?;
    let mut doc = root;
    for part in parents {
        let next = member_mut(doc, &decode_key(part)).ok()??;
        // A scalar does not decode into a partialDoc.
        if let Node::Scalar(_) = next {
            return None;
        }
        doc = next;
    }
    Some((doc, decode_key(key)))
}

/// Go's `strconv.Atoi`, with its error's text.
fn atoi(text: &str) -> Result<i64, PatchError> {
    let error = |why: &str| PatchError::new(format!("strconv.Atoi: parsing {}: {why}", go_quote(text)));
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() {
        return Err(error("invalid syntax"));
    }
    let mut magnitude: u64 = 0;
    for digit in digits.bytes() {
        if !digit.is_ascii_digit() {
            return Err(error("invalid syntax"));
        }
        magnitude = magnitude
            .checked_mul(10)
            .and_then(|tens| tens.checked_add(u64::from(digit - b'0')))
            .ok_or_else(|| error("value out of range"))?;
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude).ok_or_else(|| error("value out of range"))
    } else {
        i64::try_from(magnitude).map_err(|_| error("value out of range"))
    }
}

fn invalid_index(index: i64) -> PatchError {
    PatchError::new(format!("Unable to access invalid index: {index}: invalid index referenced"))
}

fn go_len(items: &[Slot]) -> i64 {
    i64::try_from(items.len()).unwrap_or(i64::MAX)
}

/// An index known to lie in `0..len` as a `usize`.
fn position(index: i64) -> Result<usize, PatchError> {
    usize::try_from(index).map_err(|_| invalid_index(index))
}

/// A negative `index` counted from the end of `len` items (`-1` the last), as v4's arrays count it.
fn from_end(index: i64, len: i64) -> Result<i64, PatchError> {
    match index {
        _ if index >= 0 => Ok(index),
        _ if index < -len => Err(invalid_index(index)),
        _ => Ok(index + len),
    }
}

/// `index` (perhaps from the end) as a position among `len`.
fn index_within(index: i64, len: i64) -> Result<usize, PatchError> {
    let index = from_end(index, len)?;
    if index >= len {
        return Err(invalid_index(index));
    }
    position(index)
}

/// The index `partialArray.get` reads.
fn get_index(key: &str, items: &[Slot]) -> Result<usize, PatchError> {
    index_within(atoi(key)?, go_len(items))
}

/// `container.get(key)`, for a path going through it.
fn member_mut<'a>(container: &'a mut Node, key: &str) -> Result<Option<&'a mut Node>, PatchError> {
    match container {
        Node::Object(map) => Ok(map.get_mut(key).and_then(Option::as_mut)),
        Node::Array(items) => {
            let index = get_index(key, items)?;
            Ok(items.get_mut(index).and_then(Option::as_mut))
        }
        Node::Null | Node::Scalar(_) => Ok(None),
    }
}

/// `container.get(key)`: the member (`None` for a missing key or a nil member).
fn get<'a>(container: &'a Node, key: &str) -> Result<Option<&'a Node>, PatchError> {
    match container {
        Node::Object(map) => Ok(map.get(key).and_then(Option::as_ref)),
        Node::Array(items) => {
            let index = get_index(key, items)?;
            Ok(items.get(index).and_then(Option::as_ref))
        }
        Node::Null | Node::Scalar(_) => Ok(None),
    }
}

fn nil_map_assignment() -> PatchError {
    PatchError::panic("assignment to entry in nil map".to_string())
}

/// `container.set(key, value)`, after `get` found the key (`replace`).
fn set(container: &mut Node, key: &str, value: Slot) -> Result<(), PatchError> {
    match container {
        Node::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Node::Array(items) => {
            let len = go_len(items);
            let index = from_end(atoi(key)?, len)?;
            let out_of_range =
                || PatchError::panic(format!("runtime error: index out of range [{index}] with length {len}"));
            let member = usize::try_from(index).ok().and_then(|at| items.get_mut(at)).ok_or_else(out_of_range)?;
            *member = value;
            Ok(())
        }
        Node::Null | Node::Scalar(_) => Err(nil_map_assignment()),
    }
}

/// `container.add(key, value)`: an object's key set, or a value inserted into an array (`-`
/// appends; an index may be the array's length, or negative from one past its end).
fn add_member(container: &mut Node, key: &str, value: Slot) -> Result<(), PatchError> {
    let items = match container {
        Node::Object(map) => {
            map.insert(key.to_string(), value);
            return Ok(());
        }
        Node::Array(items) => items,
        Node::Null | Node::Scalar(_) => return Err(nil_map_assignment()),
    };
    if key == "-" {
        items.push(value);
        return Ok(());
    }
    let index = atoi(key).map_err(|err| err.wrap(format!("value was not a proper array index: '{key}': ")))?;
    // One more place than items: the end.
    items.insert(index_within(index, go_len(items) + 1)?, value);
    Ok(())
}

/// `container.remove(key)`, returning what it removed.
fn remove_member(container: &mut Node, key: &str) -> Result<Slot, PatchError> {
    let items = match container {
        Node::Object(map) => {
            return map
                .remove(key)
                .ok_or_else(|| PatchError::new(format!("Unable to remove nonexistent key: {key}: {MISSING}")));
        }
        Node::Array(items) => items,
        Node::Null | Node::Scalar(_) => {
            return Err(PatchError::new(format!("Unable to remove nonexistent key: {key}: {MISSING}")));
        }
    };
    Ok(items.remove(index_within(atoi(key)?, go_len(items))?))
}

fn add(root: &mut Node, op: &Operation) -> Result<(), PatchError> {
    let path = op.path().map_err(|_| PatchError::new(format!("add operation failed to decode path: {MISSING}")))?;
    let Some((container, key)) = find_object(root, &path) else {
        return Err(PatchError::new(format!(
            "add operation does not apply: doc is missing path: \"{path}\": {MISSING}"
        )));
    };
    add_member(container, &key, op.value()).map_err(|err| err.wrap(format!("error in add for path: '{path}': ")))
}

fn remove(root: &mut Node, op: &Operation) -> Result<(), PatchError> {
    let path = op.path().map_err(|_| PatchError::new(format!("remove operation failed to decode path: {MISSING}")))?;
    let Some((container, key)) = find_object(root, &path) else {
        return Err(PatchError::new(format!(
            "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
        )));
    };
    remove_member(container, &key).map_err(|err| err.wrap(format!("error in remove for path: '{path}': ")))?;
    Ok(())
}

fn replace(root: &mut Node, op: &Operation) -> Result<(), PatchError> {
    let path = op.path().map_err(|err| err.wrap("replace operation failed to decode path: ".to_string()))?;
    if path.is_empty() {
        return match op.value() {
            None => Err(PatchError::panic(NIL_DEREFERENCE.to_string())),
            // fmt.Errorf("...: %w", nil), the err of a path that decoded.
            Some(Node::Scalar(_)) => {
                Err(PatchError::new("replace operation value must be object or array: %!w(<nil>)".to_string()))
            }
            Some(value) => {
                *root = value;
                Ok(())
            }
        };
    }
    let Some((container, key)) = find_object(root, &path) else {
        return Err(PatchError::new(format!(
            "replace operation does not apply: doc is missing path: {path}: {MISSING}"
        )));
    };
    if get(container, &key).is_err() {
        return Err(PatchError::new(format!(
            "replace operation does not apply: doc is missing key: {path}: {MISSING}"
        )));
    }
    set(container, &key, op.value()).map_err(|err| err.wrap(format!("error in remove for path: '{path}': ")))
}

fn move_value(root: &mut Node, op: &Operation) -> Result<(), PatchError> {
    let from = op.from().map_err(|err| err.wrap("move operation failed to decode from: ".to_string()))?;
    let Some((container, key)) = find_object(root, &from) else {
        return Err(PatchError::new(format!(
            "move operation does not apply: doc is missing from path: {from}: {MISSING}"
        )));
    };
    let in_move = |err: PatchError| err.wrap(format!("error in move for path: '{key}': "));
    get(container, &key).map_err(in_move)?;
    // What remove takes out is what get found.
    let value = remove_member(container, &key).map_err(in_move)?;
    let path = op.path().map_err(|err| err.wrap("move operation failed to decode path: ".to_string()))?;
    let Some((container, key)) = find_object(root, &path) else {
        return Err(PatchError::new(format!(
            "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
        )));
    };
    add_member(container, &key, value).map_err(|err| err.wrap(format!("error in move for path: '{path}': ")))
}

fn copy(root: &mut Node, op: &Operation) -> Result<(), PatchError> {
    let from = op.from().map_err(|err| err.wrap("copy operation failed to decode from: ".to_string()))?;
    let Some((container, key)) = find_object(root, &from) else {
        return Err(PatchError::new(format!(
            "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
        )));
    };
    let value = get(container, &key).map_err(|err| err.wrap(format!("error in copy for from: '{from}': ")))?.cloned();
    let path = op.path().map_err(|_| PatchError::new(format!("copy operation failed to decode path: {MISSING}")))?;
    let Some((container, key)) = find_object(root, &path) else {
        return Err(PatchError::new(format!(
            "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
        )));
    };
    add_member(container, &key, value).map_err(|err| err.wrap("error while adding value during copy: ".to_string()))
}

fn test(root: &mut Node, op: &Operation) -> Result<(), PatchError> {
    let path = op.path().map_err(|err| err.wrap("test operation failed to decode path: ".to_string()))?;
    let expected = op.value();
    if path.is_empty() {
        return if equal(root, expected.as_ref())? { Ok(()) } else { Err(PatchError::test_failed(&path)) };
    }
    let Some((container, key)) = find_object(root, &path) else {
        return Err(PatchError::new(format!("test operation does not apply: is missing path: {path}: {MISSING}")));
    };
    let found = get(container, &key).map_err(|err| err.wrap(format!("error in test for path: '{path}': ")))?;
    let passed = match (found, expected.as_ref()) {
        // A missing or nil member passes only without a value (Kubernetes' values are never nil).
        (None, expected) => expected.is_none(),
        (Some(_), None) => false,
        (Some(found), expected) => equal(found, expected)?,
    };
    if passed { Ok(()) } else { Err(PatchError::test_failed(&path)) }
}

/// `lazyNode.equal`: the document's `node` against the operation's value `other` (nil is
/// `None`, dereferenced: a panic). A raw `null` on either side decodes as an empty object, and
/// on the value's side also as an empty array; scalars compare by their JSON text.
fn equal(node: &Node, other: Option<&Node>) -> Result<bool, PatchError> {
    let other = other.ok_or_else(|| PatchError::panic(NIL_DEREFERENCE.to_string()))?;
    match node {
        Node::Scalar(mine) => Ok(matches!(other, Node::Scalar(theirs) if same_text(mine, theirs))),
        Node::Null | Node::Object(_) => {
            let empty = BTreeMap::new();
            let mine = if let Node::Object(map) = node { map } else { &empty };
            match other {
                Node::Null => Ok(mine.is_empty()),
                Node::Object(theirs) => equal_objects(mine, theirs),
                Node::Array(_) | Node::Scalar(_) => Ok(false),
            }
        }
        Node::Array(mine) => {
            let theirs: &[Slot] = match other {
                Node::Null => &[],
                Node::Array(theirs) => theirs,
                Node::Object(_) | Node::Scalar(_) => return Ok(false),
            };
            if mine.len() != theirs.len() {
                return Ok(false);
            }
            for (item, their_item) in mine.iter().zip(theirs) {
                let item = item.as_ref().ok_or_else(|| PatchError::panic(NIL_DEREFERENCE.to_string()))?;
                if !equal(item, their_item.as_ref())? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

/// The object branch of `lazyNode.equal`. Go visits the members in its maps' random order, so
/// where one member's comparison panics and another's is false, either may come first there;
/// here they come in key order.
fn equal_objects(mine: &BTreeMap<String, Slot>, theirs: &BTreeMap<String, Slot>) -> Result<bool, PatchError> {
    if mine.len() != theirs.len() {
        return Ok(false);
    }
    for (key, member) in mine {
        let Some(their_member) = theirs.get(key) else {
            return Ok(false);
        };
        match (member, their_member) {
            (None, None) => continue,
            (Some(member), Some(their_member)) => {
                if !equal(member, Some(their_member))? {
                    return Ok(false);
                }
            }
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// Whether two scalars have the same JSON text (Go compares the compacted raw messages).
fn same_text(mine: &Value, theirs: &Value) -> bool {
    match (mine, theirs) {
        (Value::Number(mine), Value::Number(theirs)) => mine.to_string() == theirs.to_string(),
        _ => mine == theirs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(doc: Value, ops: Value) -> Value {
        let ops = ops.as_array().cloned().unwrap_or_default();
        match apply(&doc, &ops) {
            Ok(doc) => doc,
            Err(err) => panic!("{ops:?} failed: {err:?}"),
        }
    }

    /// The error of a patch that fails (neither a failed test nor a panic).
    fn error(doc: Value, ops: Value) -> String {
        let err = failure(doc, ops);
        assert!(!err.test_failed && !err.panicked, "{err:?}");
        err.message
    }

    fn failure(doc: Value, ops: Value) -> PatchError {
        let ops = ops.as_array().cloned().unwrap_or_default();
        apply(&doc, &ops).expect_err("the patch fails")
    }

    fn panics(doc: Value, ops: Value) -> String {
        let err = failure(doc, ops);
        assert!(err.panicked && !err.test_failed, "{err:?}");
        err.message
    }

    fn test_fails(doc: Value, path: &str, value: Option<Value>) -> bool {
        let mut op = json!({"op": "test", "path": path});
        if let Some(value) = value {
            op["value"] = value;
        }
        match apply(&doc, &[op]) {
            Ok(result) => {
                assert_eq!(result, doc);
                false
            }
            Err(err) => {
                assert!(err.test_failed, "{err:?}");
                assert_eq!(err.message, format!("testing value {path} failed: test failed"));
                true
            }
        }
    }

    #[test]
    fn add_sets_keys_and_inserts_into_arrays() {
        assert_eq!(
            patched(json!({"foo": "bar"}), json!([{"op": "add", "path": "/baz", "value": "qux"}])),
            json!({"foo": "bar", "baz": "qux"})
        );
        assert_eq!(patched(json!({"a": 1}), json!([{"op": "add", "path": "/a", "value": 2}])), json!({"a": 2}));
        let ops = json!([
            {"op": "add", "path": "/foo/1", "value": "qux"},
            {"op": "add", "path": "/foo/-", "value": ["abc"]},
            {"op": "add", "path": "/foo/-1", "value": "end"},
            {"op": "add", "path": "/foo/-6", "value": "start"},
            {"op": "add", "path": "/foo/+1", "value": 1},
            {"op": "add", "path": "/foo/07", "value": 7}
        ]);
        assert_eq!(
            patched(json!({"foo": ["bar", "baz"]}), ops),
            json!({"foo": ["start", 1, "bar", "qux", "baz", ["abc"], "end", 7]})
        );
        assert_eq!(patched(json!({"a": []}), json!([{"op": "add", "path": "/a/0"}])), json!({"a": [null]}));
        assert_eq!(patched(json!({}), json!([{"op": "add", "path": "/", "value": 1}])), json!({"": 1}));
        assert_eq!(patched(json!([1]), json!([{"op": "add", "path": "/0", "value": 0}])), json!([0, 1]));
        // The first segment is never read.
        assert_eq!(patched(json!({}), json!([{"op": "add", "path": "x/y", "value": 2}])), json!({"y": 2}));
    }

    #[test]
    fn add_errors() {
        let doc = json!({"foo": ["bar"], "s": "t"});
        let add = |path: &str| error(doc.clone(), json!([{"op": "add", "path": path, "value": 1}]));
        assert_eq!(add("/baz/bat"), "add operation does not apply: doc is missing path: \"/baz/bat\": missing value");
        assert_eq!(add("/s/x"), "add operation does not apply: doc is missing path: \"/s/x\": missing value");
        assert_eq!(add(""), "add operation does not apply: doc is missing path: \"\": missing value");
        assert_eq!(
            add("/foo/2"),
            "error in add for path: '/foo/2': Unable to access invalid index: 2: invalid index referenced"
        );
        assert_eq!(
            add("/foo/-3"),
            "error in add for path: '/foo/-3': Unable to access invalid index: -3: invalid index referenced"
        );
        assert_eq!(
            add("/foo/x"),
            "error in add for path: '/foo/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            error(json!({}), json!([{"op": "add", "pathz": "/a", "value": 1}])),
            "add operation failed to decode path: missing value"
        );
        assert_eq!(
            error(json!({}), json!([{"op": "add", "path": 1, "value": 1}])),
            "add operation failed to decode path: missing value"
        );
        // A null path is "".
        assert_eq!(
            error(json!({}), json!([{"op": "add", "path": null}])),
            "add operation does not apply: doc is missing path: \"\": missing value"
        );
    }

    #[test]
    fn remove_takes_keys_and_items_out() {
        assert_eq!(
            patched(json!({"baz": "qux", "foo": "bar"}), json!([{"op": "remove", "path": "/baz"}])),
            json!({"foo": "bar"})
        );
        assert_eq!(
            patched(json!({"qux": {"baz": 1, "bar": null}}), json!([{"op": "remove", "path": "/qux/bar"}])),
            json!({"qux": {"baz": 1}})
        );
        assert_eq!(
            patched(json!({"foo": ["bar", "qux", "baz"]}), json!([{"op": "remove", "path": "/foo/-2"}])),
            json!({"foo": ["bar", "baz"]})
        );
    }

    #[test]
    fn remove_errors() {
        let doc = json!({"a": {"b": {"d": 1}}, "l": [1]});
        let remove = |path: &str| error(doc.clone(), json!([{"op": "remove", "path": path}]));
        assert_eq!(
            remove("/a/b/c"),
            "error in remove for path: '/a/b/c': Unable to remove nonexistent key: c: missing value"
        );
        assert_eq!(remove("/x/y"), "remove operation does not apply: doc is missing path: \"/x/y\": missing value");
        assert_eq!(
            remove("/l/1"),
            "error in remove for path: '/l/1': Unable to access invalid index: 1: invalid index referenced"
        );
        assert_eq!(
            remove("/l/-2"),
            "error in remove for path: '/l/-2': Unable to access invalid index: -2: invalid index referenced"
        );
        assert_eq!(remove("/l/-"), "error in remove for path: '/l/-': strconv.Atoi: parsing \"-\": invalid syntax");
        assert_eq!(
            error(json!({}), json!([{"op": "remove"}])),
            "remove operation failed to decode path: missing value"
        );
    }

    #[test]
    fn replace_sets_what_get_finds() {
        assert_eq!(
            patched(json!({"foo": ["bar", "qux"]}), json!([{"op": "replace", "path": "/foo/-1", "value": "bum"}])),
            json!({"foo": ["bar", "bum"]})
        );
        // A missing key is added.
        assert_eq!(patched(json!({}), json!([{"op": "replace", "path": "/a", "value": 1}])), json!({"a": 1}));
        assert_eq!(patched(json!({"a": 1}), json!([{"op": "replace", "path": "/a"}])), json!({"a": null}));
        assert_eq!(patched(json!({"a": 1}), json!([{"op": "replace", "path": "", "value": [2]}])), json!([2]));
        assert_eq!(patched(json!({"a": 1}), json!([{"op": "replace", "path": "", "value": null}])), json!(null));
    }

    #[test]
    fn replace_errors() {
        let doc = json!({"foo": ["bar", "baz"], "name": {}});
        let replace = |path: &str| error(doc.clone(), json!([{"op": "replace", "path": path, "value": 1}]));
        assert_eq!(replace("/foo/2"), "replace operation does not apply: doc is missing key: /foo/2: missing value");
        assert_eq!(replace("/foo/-"), "replace operation does not apply: doc is missing key: /foo/-: missing value");
        assert_eq!(replace("/x/bar"), "replace operation does not apply: doc is missing path: /x/bar: missing value");
        assert_eq!(replace(""), "replace operation value must be object or array: %!w(<nil>)");
        assert_eq!(
            error(json!({}), json!([{"op": "replace"}])),
            "replace operation failed to decode path: operation missing path field: missing value"
        );
        assert_eq!(
            error(json!({}), json!([{"op": "replace", "path": [1]}])),
            "replace operation failed to decode path: json: cannot unmarshal array into Go value of type string"
        );
        assert_eq!(panics(json!({}), json!([{"op": "replace", "path": ""}])), NIL_DEREFERENCE);
    }

    #[test]
    fn move_takes_out_then_adds() {
        assert_eq!(
            patched(
                json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
                json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}])
            ),
            json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}})
        );
        let doc = json!({"foo": ["all", "grass", "cows", "eat"]});
        assert_eq!(
            patched(doc.clone(), json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}])),
            json!({"foo": ["all", "cows", "eat", "grass"]})
        );
        assert_eq!(patched(doc, json!([{"op": "move", "from": "/foo/0", "path": "/foo/0"}]))["foo"][0], "all");
    }

    #[test]
    fn move_errors() {
        let doc = json!({"a": {"b": [1]}});
        let move_to = |from: &str, path: &str| error(doc.clone(), json!([{"op": "move", "from": from, "path": path}]));
        assert_eq!(
            move_to("/a/c", "/a/e"),
            "error in move for path: 'c': Unable to remove nonexistent key: c: missing value"
        );
        assert_eq!(
            move_to("/a/b/1", "/a/b/2"),
            "error in move for path: '1': Unable to access invalid index: 1: invalid index referenced"
        );
        assert_eq!(move_to("/a/b/-", "/x"), "error in move for path: '-': strconv.Atoi: parsing \"-\": invalid syntax");
        assert_eq!(move_to("", "/x"), "move operation does not apply: doc is missing from path: : missing value");
        assert_eq!(
            move_to("/a", "/a/b"),
            "move operation does not apply: doc is missing destination path: /a/b: missing value"
        );
        assert_eq!(
            move_to("/a/b/0", "/a/b/1"),
            "error in move for path: '/a/b/1': Unable to access invalid index: 1: invalid index referenced"
        );
        assert_eq!(
            error(json!({}), json!([{"op": "move", "path": "/a"}])),
            "move operation failed to decode from: operation, missing from field: missing value"
        );
        assert_eq!(
            error(json!({"a": 1}), json!([{"op": "move", "from": "/a"}])),
            "move operation failed to decode path: operation missing path field: missing value"
        );
    }

    #[test]
    fn copy_copies_what_get_finds() {
        assert_eq!(
            patched(json!({"foo": ["bar"]}), json!([{"op": "copy", "path": "/foo/0", "from": "/foo"}])),
            json!({"foo": [["bar"], "bar"]})
        );
        assert_eq!(
            patched(json!({"a": {"b": 1}}), json!([{"op": "copy", "from": "/a", "path": "/a/c"}])),
            json!({"a": {"b": 1, "c": {"b": 1}}})
        );
        // A missing key copies as null.
        assert_eq!(patched(json!({}), json!([{"op": "copy", "from": "/x", "path": "/y"}])), json!({"y": null}));
        // No limit on what copies add.
        let long = "A".repeat(49);
        assert_eq!(
            patched(
                json!({"foo": ["A", long]}),
                json!([{"op": "copy", "path": "/foo/-", "from": "/foo/1"}, {"op": "copy", "path": "/foo/-", "from": "/foo/1"}])
            ),
            json!({"foo": ["A", long, long, long]})
        );
    }

    #[test]
    fn copy_errors() {
        let doc = json!({"foo": ["bar"]});
        let copy_to = |from: &str, path: &str| error(doc.clone(), json!([{"op": "copy", "from": from, "path": path}]));
        assert_eq!(
            copy_to("/foo/0", "/foo/2"),
            "error while adding value during copy: Unable to access invalid index: 2: invalid index referenced"
        );
        assert_eq!(
            copy_to("/foo/99999999999999999999", "/x"),
            "error in copy for from: '/foo/99999999999999999999': strconv.Atoi: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(
            copy_to("/x/y", "/z"),
            "copy operation does not apply: doc is missing from path: /x/y: missing value"
        );
        assert_eq!(
            copy_to("/foo", "/x/y"),
            "copy operation does not apply: doc is missing destination path: /x/y: missing value"
        );
        assert_eq!(
            error(doc.clone(), json!([{"op": "copy", "path": "/x"}])),
            "copy operation failed to decode from: operation, missing from field: missing value"
        );
        assert_eq!(
            error(doc, json!([{"op": "copy", "from": "/foo", "path": false}])),
            "copy operation failed to decode path: missing value"
        );
    }

    #[test]
    fn test_compares_as_the_library() {
        let doc = json!({"baz": "qux", "foo": ["a", 2, "c"], "n": null, "o": {}, "l": [], "f": 1.0, "~/": 1});
        assert!(!test_fails(doc.clone(), "/baz", Some(json!("qux"))));
        assert!(!test_fails(doc.clone(), "/foo/1", Some(json!(2))));
        assert!(!test_fails(doc.clone(), "/foo/-1", Some(json!("c"))));
        assert!(test_fails(doc.clone(), "/foo/1", Some(json!("c"))));
        assert!(test_fails(doc.clone(), "/foo/1", Some(json!(2.0))));
        assert!(test_fails(doc.clone(), "/f", Some(json!(1))));
        assert!(!test_fails(doc.clone(), "/~0~1", Some(json!(1))));
        assert!(!test_fails(doc.clone(), "", Some(doc.clone())));
        // A missing key and a null member pass without a value, fail with one, null included.
        assert!(!test_fails(doc.clone(), "/missing", None));
        assert!(!test_fails(doc.clone(), "/n", None));
        assert!(test_fails(doc.clone(), "/missing", Some(json!(null))));
        assert!(test_fails(doc.clone(), "/n", Some(json!(null))));
        assert!(test_fails(doc.clone(), "/o", None));
        // Raw null decodes as an empty object, or an empty array beside one.
        assert!(!test_fails(doc.clone(), "/o", Some(json!(null))));
        assert!(!test_fails(doc.clone(), "/l", Some(json!(null))));
        assert!(test_fails(doc.clone(), "/l", Some(json!({}))));
        assert!(test_fails(json!(null), "", Some(json!([]))));
        assert!(!test_fails(json!(null), "", Some(json!({}))));
        let added = json!([{"op": "add", "path": "/b", "value": null}, {"op": "test", "path": "/b", "value": {}}]);
        assert_eq!(patched(json!({}), added), json!({"b": null}));
    }

    #[test]
    fn test_errors_and_panics() {
        let doc = json!({"a": [null, 1], "s": "t"});
        let test =
            |path: &str, value: Value| failure(doc.clone(), json!([{"op": "test", "path": path, "value": value}]));
        assert_eq!(
            test("/x/y", json!(1)).message,
            "test operation does not apply: is missing path: /x/y: missing value"
        );
        assert_eq!(
            test("/a/2", json!(1)).message,
            "error in test for path: '/a/2': Unable to access invalid index: 2: invalid index referenced"
        );
        assert_eq!(
            test("/a/é", json!(1)).message,
            "error in test for path: '/a/é': strconv.Atoi: parsing \"é\": invalid syntax"
        );
        assert_eq!(
            error(doc.clone(), json!([{"op": "test", "path": 2}])),
            "test operation failed to decode path: json: cannot unmarshal number into Go value of type string"
        );
        // A nil item of arrays compared, a root test without a value: nil dereferenced.
        assert!(test("/a", json!([null, 1])).panicked);
        assert!(test("/a", json!([0, 1])).panicked);
        assert!(test("/a", json!([null])).test_failed);
        assert_eq!(panics(doc, json!([{"op": "test", "path": ""}])), NIL_DEREFERENCE);
    }

    #[test]
    fn documents_and_kinds() {
        assert_eq!(patched(json!(null), json!([])), json!(null));
        assert_eq!(
            error(json!(5), json!([])),
            "json: cannot unmarshal number into Go value of type jsonpatch.partialDoc"
        );
        assert_eq!(
            error(json!("s"), json!([])),
            "json: cannot unmarshal string into Go value of type jsonpatch.partialDoc"
        );
        assert_eq!(
            error(json!(true), json!([])),
            "json: cannot unmarshal bool into Go value of type jsonpatch.partialDoc"
        );
        assert_eq!(error(json!({}), json!([{"op": "nope"}])), "Unexpected kind: nope");
        assert_eq!(error(json!({}), json!([{"op": 1}])), "Unexpected kind: unknown");
        assert_eq!(error(json!({}), json!([{"path": "/a"}])), "Unexpected kind: unknown");
        assert_eq!(error(json!({}), json!([{"op": null}])), "Unexpected kind: ");
        assert_eq!(error(json!({}), json!(["add"])), "Unexpected kind: unknown");
        // The first error stops the patch.
        assert_eq!(
            error(json!({}), json!([{"op": "remove", "path": "/a"}, {"op": "nope"}])),
            "error in remove for path: '/a': Unable to remove nonexistent key: a: missing value"
        );
    }

    #[test]
    fn writing_below_raw_null_panics() {
        let nil_map = "assignment to entry in nil map";
        assert_eq!(panics(json!(null), json!([{"op": "add", "path": "/a", "value": 1}])), nil_map);
        let ops = json!([{"op": "add", "path": "/b", "value": null}, {"op": "replace", "path": "/b/c", "value": 1}]);
        assert_eq!(panics(json!({}), ops), nil_map);
        let ops = json!([{"op": "replace", "path": "", "value": null}, {"op": "remove", "path": "/a"}]);
        assert_eq!(
            error(json!({"a": 1}), ops),
            "error in remove for path: '/a': Unable to remove nonexistent key: a: missing value"
        );
        // A null member read from the document is nil: no path goes through it.
        let ops = json!([{"op": "add", "path": "/b/c", "value": 1}]);
        assert_eq!(
            error(json!({"b": null}), ops),
            "add operation does not apply: doc is missing path: \"/b/c\": missing value"
        );
    }

    #[test]
    fn keys_and_indices_decode_as_go() {
        assert_eq!(decode_key("a~1b~0c"), "a/b~c");
        assert_eq!(decode_key("~01"), "~1");
        assert_eq!(decode_key("~~1~"), "~/~");
        assert_eq!(decode_key("~2"), "~2");
        assert_eq!(atoi("-0").ok(), Some(0));
        assert_eq!(atoi("+12").ok(), Some(12));
        assert_eq!(atoi("007").ok(), Some(7));
        assert_eq!(atoi("-9223372036854775808").ok(), Some(i64::MIN));
        assert_eq!(
            atoi("9223372036854775808").map_err(|err| err.message),
            Err("strconv.Atoi: parsing \"9223372036854775808\": value out of range".to_string())
        );
        assert_eq!(atoi("").map_err(|err| err.message), Err("strconv.Atoi: parsing \"\": invalid syntax".to_string()));
        assert_eq!(
            atoi("+").map_err(|err| err.message),
            Err("strconv.Atoi: parsing \"+\": invalid syntax".to_string())
        );
        assert_eq!(
            atoi("1\n").map_err(|err| err.message),
            Err("strconv.Atoi: parsing \"1\\n\": invalid syntax".to_string())
        );
    }
}
