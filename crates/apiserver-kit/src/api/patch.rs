//! Applying PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902), both through the
//! `json-patch` crate. Strategic merge patch is refused with 415, as for custom resources.
//! Server-side apply (`application/apply-patch+yaml`) is recognised here and run by the registry
//! (`Registry::apply`); its body is YAML or JSON ([`apply_configuration`]).
//!
//! A JSON patch is applied one operation at a time, and an operation that would nest the object
//! deeper than a request body may nest ([`MAX_DEPTH`]) or make the patch's copies add more than
//! [`MAX_COPY_BYTES`] in all is refused with 422 before it runs. Without these bounds a small patch
//! grows the object exponentially with `copy`, or nests it so deep that cloning, decoding or
//! dropping it overflows the worker's stack, which aborts the server.

use super::query::FieldValidation;
use crate::machinery::error::{Error, Result};
use crate::machinery::json_patch_v4::go_json_kind;
use crate::machinery::resource::ApiResource;
use serde_json::Value;

/// How deep a patched object may nest arrays and objects: as deep as a request body may
/// (serde_json's limit), so that what a PATCH stores can be sent back with PUT.
pub const MAX_DEPTH: usize = 127;

/// How many bytes (as JSON) the `copy` operations of one JSON patch may add in all: the request
/// body limit, as the kube-apiserver limits them (`--max-request-bytes` for `JSONPatchMaxCopyBytes`).
pub const MAX_COPY_BYTES: usize = super::decode::MAX_BODY_BYTES;

/// The patch types this server applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`
    Merge,
    /// `application/json-patch+json`
    Json,
    /// `application/apply-patch+yaml`: server-side apply.
    Apply,
}

/// The patch types of custom resources, without and with server-side apply.
const ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json";
const ACCEPTED_WITH_APPLY: &str =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

impl PatchType {
    /// Reads the patch type from the request's `Content-Type`; `apply` says whether server-side
    /// apply is served.
    pub fn from_headers(headers: &http::HeaderMap, apply: bool) -> Result<Self> {
        match super::decode::media_type(headers).as_str() {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/json-patch+json" => Ok(Self::Json),
            "application/apply-patch+yaml" if apply => Ok(Self::Apply),
            _ => Err(Error::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                if apply { ACCEPTED_WITH_APPLY } else { ACCEPTED }
            ))),
        }
    }
}

/// A parsed patch, ready to apply to any number of documents (a conflict retry re-applies it).
///
/// As the kube-apiserver (since 1.31, `validateAndTranscodePatch`), a body that is not JSON at all
/// is refused before the object is looked up (400 `invalid JSON patch`); the rest of the body is
/// judged only when the patch is applied, that is once the object was found: a patch of the
/// wrong shape for a missing object is a 404. Its errors are those of Kubernetes'
/// `evanphx/json-patch`: a body that is no patch is a 400, an operation that does not decode or
/// apply a 422 with empty details.
#[derive(Clone, Debug)]
pub enum Patch {
    /// A merge patch document (an object, or an array that replaces the document).
    Merge(Value),
    /// A list of JSON patch operations.
    Json(json_patch::Patch),
    /// JSON patch operations that do not decode (an unknown `op`, no `path`, a path without a
    /// leading slash): a 422 when applied, with this message.
    InvalidOperations(String),
    /// A body that is no patch of its type: a 400 when applied, with this message.
    Malformed(String),
}

impl Patch {
    /// Reads the body for `kind`: one that is not JSON is refused now (400); what else is wrong
    /// with it is kept for [`Patch::apply`] to report.
    /// Where fields are validated (`Warn`, the default, or `Strict`), a merge patch is decoded
    /// into an object as the kube-apiserver decodes it since 1.27: one that is no object is 400.
    pub fn parse(kind: PatchType, body: &[u8], validation: FieldValidation) -> Result<Self> {
        let value = match super::decode::json_from_slice(body) {
            Ok(value) => value,
            Err(_) => return Err(Error::BadRequest("invalid JSON patch".into())),
        };
        Ok(match (kind, value) {
            (PatchType::Apply, _) => return Err(Error::Internal("an apply is not a patch document".into())),
            (PatchType::Merge, value @ Value::Object(_)) => Self::Merge(value),
            (PatchType::Merge, value) if validation != FieldValidation::Ignore && !value.is_null() => {
                Self::Malformed(format!(
                    "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    go_json_kind(&value)
                ))
            }
            (PatchType::Merge, value @ Value::Array(_)) => Self::Merge(value),
            (PatchType::Merge, _) => Self::Malformed("Invalid JSON Patch".to_string()),
            // Go decodes `null` as no operations.
            (PatchType::Json, Value::Null) => Self::Json(json_patch::Patch(Vec::new())),
            // Values deeper than the copy keeps would be applied cut: no such value fits in an
            // object anyway (one placed at the shallowest path nests past `MAX_DEPTH`, 422).
            (PatchType::Json, Value::Array(_)) if crate::machinery::json_depth::max_depth(body) > MAX_DEPTH => {
                Self::InvalidOperations(format!(
                    "the patch nests deeper than {MAX_DEPTH} levels: an operation's value would nest the object deeper than {MAX_DEPTH}"
                ))
            }
            (PatchType::Json, value @ Value::Array(_)) => match serde_json::from_value(value) {
                Ok(ops) => Self::Json(ops),
                Err(e) => Self::InvalidOperations(format!("invalid JSON patch operation: {e}")),
            },
            (PatchType::Json, other) => Self::Malformed(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                crate::machinery::schema_validation::json_type(&other)
            )),
        })
    }

    /// Whether applying the patch can change `metadata.managedFields`: a merge patch only when it
    /// names them, a JSON patch always (its paths are not read ahead).
    pub fn may_change_managed_fields(&self) -> bool {
        match self {
            Self::Merge(patch) => patch.get("metadata").and_then(|m| m.get("managedFields")).is_some(),
            Self::Json(_) => true,
            Self::InvalidOperations(_) | Self::Malformed(_) => false,
        }
    }

    /// Applies the patch to a copy of `current`; a JSON patch whose operation cannot apply, or
    /// would exceed [`MAX_DEPTH`] or [`MAX_COPY_BYTES`], is 422.
    pub fn apply(&self, current: &Value) -> Result<Value> {
        let mut doc = current.clone();
        match self {
            Self::Merge(patch) => json_patch::merge(&mut doc, patch),
            Self::Json(ops) => apply_json_patch(&mut doc, ops)?,
            Self::InvalidOperations(message) => return Err(Error::Unprocessable(message.clone())),
            Self::Malformed(message) => return Err(Error::BadRequest(message.clone())),
        }
        Ok(doc)
    }
}

/// How many arrays and objects nest in `value` (0 for a scalar). Recursion is bounded: documents
/// are parsed with serde_json's limit and patched within [`MAX_DEPTH`].
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Counts the bytes written to it, failing once they pass `limit` so a large value stops early.
struct ByteCount {
    bytes: usize,
    limit: usize,
}

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len();
        if self.bytes > self.limit {
            return Err(std::io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The size of `value` as JSON, or some size above `limit` when it is larger.
fn json_size(value: &Value, limit: usize) -> usize {
    let mut count = ByteCount { bytes: 0, limit };
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.bytes,
        Err(_) => limit.saturating_add(1),
    }
}

/// Applies `ops` in order, checking each against [`MAX_DEPTH`] and [`MAX_COPY_BYTES`] before it
/// runs (see the module documentation).
fn apply_json_patch(doc: &mut Value, ops: &json_patch::Patch) -> Result<()> {
    use json_patch::PatchOperation as Op;
    let failed = |i: usize, path: &str, why: String| {
        Error::Unprocessable(format!("operation '/{i}' failed at path '{path}': {why}"))
    };
    // An upper bound of the document's depth, exact to begin with.
    let mut bound = depth(doc);
    let mut copied = 0usize;
    for (i, op) in ops.iter().enumerate() {
        // How deep the document nests where the operation puts a value, at most.
        let placed = match op {
            Op::Add(op) => Some(op.path.count() + depth(&op.value)),
            Op::Replace(op) => Some(op.path.count() + depth(&op.value)),
            // A moved value nests at most `bound - from.count()` deep below where it was. Not
            // measuring it keeps a move O(path); a patch that moves values deeper a hundred times
            // over may be refused early.
            Op::Move(op) => Some((op.path.count() + bound).saturating_sub(op.from.count())),
            Op::Copy(op) => match doc.pointer(op.from.as_str()) {
                Some(source) => {
                    copied = copied.saturating_add(json_size(source, MAX_COPY_BYTES - copied));
                    if copied > MAX_COPY_BYTES {
                        return Err(failed(
                            i,
                            op.path.as_str(),
                            format!(
                                "unable to complete the copy: the copies would add more than {MAX_COPY_BYTES} bytes"
                            ),
                        ));
                    }
                    Some(op.path.count() + depth(source))
                }
                // The operation below fails and says why.
                None => None,
            },
            Op::Remove(_) | Op::Test(_) => None,
        };
        if let Some(placed) = placed {
            if placed > MAX_DEPTH {
                return Err(failed(
                    i,
                    op.path().as_str(),
                    format!("the patched object would nest more than {MAX_DEPTH} levels deep"),
                ));
            }
            bound = bound.max(placed);
        }
        let run = replace_as_add(doc, op);
        let op = run.as_ref().unwrap_or(op);
        json_patch::patch(doc, std::slice::from_ref(op)).map_err(|e| failed(i, e.path.as_str(), e.kind.to_string()))?;
    }
    Ok(())
}

/// A `replace` of a member missing from an object, as an `add`: Kubernetes' JSON patch library
/// (`evanphx/json-patch` v4, every release since 1.14) sets the member where RFC 6902 would
/// fail, and clients rely on it. Missing array items and parents still fail.
fn replace_as_add(doc: &Value, op: &json_patch::PatchOperation) -> Option<json_patch::PatchOperation> {
    let json_patch::PatchOperation::Replace(replace) = op else { return None };
    let parent = replace.path.parent()?;
    let missing = doc.pointer(replace.path.as_str()).is_none();
    (missing && doc.pointer(parent.as_str()).is_some_and(Value::is_object)).then(|| {
        json_patch::PatchOperation::Add(json_patch::AddOperation {
            path: replace.path.clone(),
            value: replace.value.clone(),
        })
    })
}

/// Reads the body of an apply: a YAML (or JSON, which is YAML) object, `null` and an empty
/// document being an empty one; 400 otherwise, in the kube-apiserver's words. JSON, what
/// kubectl, client-go and kube-rs send, takes the fast path.
pub fn apply_configuration(body: &[u8]) -> Result<Value> {
    let invalid = |e| Error::BadRequest(format!("error decoding YAML: error converting YAML to JSON: {e}"));
    let parsed = match super::decode::json_from_slice(body) {
        // Read as YAML by the kube-apiserver, JSON too must hold only what YAML may.
        Ok(_) if let Some(message) = super::yaml::control_characters(body) => return Err(invalid(message)),
        Ok(value) => value,
        Err(_) => super::yaml::to_json(body, invalid)?,
    };
    let go_type = match parsed {
        value @ Value::Object(_) => return Ok(value),
        Value::Null => return Ok(Value::Object(serde_json::Map::new())),
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
    };
    Err(Error::BadRequest(format!(
        "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {go_type} into Go value of type map[string]interface {{}}"
    )))
}

/// Refuses an apply configuration that is not a `K`: first its `apiVersion`, in the
/// kube-apiserver's words, then its `kind` as a create's body (where the kube-apiserver answers
/// 500 "no corresponding type", a 400 says what the client got wrong).
pub fn check_apply_type<K: ApiResource>(config: &Value) -> Result<()> {
    let version = config.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let expected = K::api_version(&());
    if version != expected {
        return Err(Error::BadRequest(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {expected}"
        )));
    }
    super::decode::check_kind::<K>(config).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_sets_and_removes_fields() {
        let p =
            Patch::parse(PatchType::Merge, br#"{"spec":{"weight":3,"color":null}}"#, FieldValidation::Warn).unwrap();
        let out = p.apply(&json!({"spec": {"weight": 1, "color": "white"}})).unwrap();
        assert_eq!(out, json!({"spec": {"weight": 3}}));
    }

    #[test]
    fn a_failed_json_patch_test_is_unprocessable() {
        let p =
            Patch::parse(PatchType::Json, br#"[{"op":"test","path":"/spec/weight","value":9}]"#, FieldValidation::Warn)
                .unwrap();
        let err = p.apply(&json!({"spec": {"weight": 1}})).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
    }

    /// The code `body`, a patch of type `kind`, gets when it is read or applied to a widget.
    fn code_when_applied(kind: PatchType, body: &str) -> u16 {
        Patch::parse(kind, body.as_bytes(), FieldValidation::Warn)
            .and_then(|patch| patch.apply(&json!({"spec": {"weight": 1}})))
            .map_or_else(|e| e.code().as_u16(), |_| 200)
    }

    #[test]
    fn a_body_that_is_not_json_is_refused_as_it_is_read() {
        for kind in [PatchType::Json, PatchType::Merge] {
            for body in ["[1,", "", "z`&", "{\"a\": 1} x"] {
                let err = Patch::parse(kind, body.as_bytes(), FieldValidation::Warn).unwrap_err();
                assert_eq!((err.code().as_u16(), err.to_string()), (400, "invalid JSON patch".into()), "{body}");
            }
        }
    }

    #[test]
    fn malformed_patches_are_refused_when_applied_as_kubernetes_json_patch_refuses_them() {
        for (kind, body, code) in [
            (PatchType::Json, "[1,", 400),
            (PatchType::Json, "{}", 400),
            (PatchType::Json, "null", 200),
            (PatchType::Json, r#"[{"op":"jump","path":"/spec"}]"#, 422),
            (PatchType::Json, r#"[{"op":"add","value":1}]"#, 422),
            (PatchType::Json, r#"[{"op":"add","path":"spec","value":1}]"#, 422),
            (PatchType::Merge, "null", 400),
            (PatchType::Merge, "1", 400),
            (PatchType::Merge, "[1,", 400),
            // Decoded into an object where fields are validated (the default).
            (PatchType::Merge, "[1]", 400),
        ] {
            assert_eq!(code_when_applied(kind, body), code, "{kind:?} {body}");
        }
        // Without validation an array replaces the document, which then is no object (the
        // caller's 422).
        let ignored = Patch::parse(PatchType::Merge, b"[1]", FieldValidation::Ignore).unwrap();
        assert!(ignored.apply(&json!({})).is_ok());
        let refused = Patch::parse(PatchType::Merge, b"[1]", FieldValidation::Strict).unwrap();
        assert_eq!(
            refused.apply(&json!({})).unwrap_err().to_string(),
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        let invalid =
            Patch::parse(PatchType::Json, br#"[{"op":"jump","path":"/spec"}]"#, FieldValidation::Warn).unwrap();
        let status = invalid.apply(&json!({})).unwrap_err().to_status();
        assert_eq!(status.details, Some(Default::default()), "empty details, as the kube-apiserver's");
    }

    #[test]
    fn replace_of_a_missing_member_adds_it_as_kubernetes_json_patch_does() {
        let p = Patch::parse(
            PatchType::Json,
            br#"[{"op":"replace","path":"/spec/color","value":"red"}]"#,
            FieldValidation::Warn,
        )
        .unwrap();
        assert_eq!(p.apply(&json!({"spec": {}})).unwrap(), json!({"spec": {"color": "red"}}));
        for missing in [r#"/spec/items/3"#, r#"/status/phase"#] {
            let body = format!(r#"[{{"op":"replace","path":"{missing}","value":1}}]"#);
            assert_eq!(code_when_applied(PatchType::Json, &body), 422, "{missing}");
        }
    }

    #[test]
    fn a_json_patch_error_names_the_operation_that_failed() {
        let p = Patch::parse(
            PatchType::Json,
            br#"[{"op":"replace","path":"/spec/weight","value":2},{"op":"remove","path":"/spec/horns"}]"#,
            FieldValidation::Warn,
        )
        .unwrap();
        let err = p.apply(&json!({"spec": {"weight": 1}})).unwrap_err();
        assert_eq!(err.to_string(), "operation '/1' failed at path '/spec/horns': path is invalid");
    }

    /// A Widget as the registry serializes it before patching.
    fn stored() -> Value {
        json!({
            "apiVersion": "test.example.com/v1alpha",
            "kind": "Widget",
            "metadata": {"name": "dolly", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"weight": 120.5, "height": 170, "color": "white"}
        })
    }

    /// `{"x":{"x":...}}`, `levels` objects deep (braces written as escapes, so that tools
    /// counting braces in the source see them balanced).
    fn chain(levels: usize) -> String {
        let (open, close) = ("\u{7b}", "\u{7d}");
        format!("{}{open}{}", format!("{open}\"x\":").repeat(levels - 1), close.repeat(levels))
    }

    #[test]
    fn a_json_patch_may_nest_as_deep_as_a_request_body_and_no_deeper() {
        // A chain of 100 objects at /spec/x, then a chain of `levels` in its innermost object:
        // 102 levels above that one.
        let nest = |levels: usize| {
            let body = format!(
                r#"[{{"op":"add","path":"/spec/x","value":{}}},{{"op":"add","path":"/spec/x{}/y","value":{}}}]"#,
                chain(100),
                "/x".repeat(99),
                chain(levels)
            );
            Patch::parse(PatchType::Json, body.as_bytes(), FieldValidation::Warn).unwrap().apply(&stored())
        };
        let patched = nest(MAX_DEPTH - 102).unwrap();
        assert_eq!(depth(&patched), MAX_DEPTH);
        serde_json::from_str::<Value>(&patched.to_string()).expect("what PATCH stores can be PUT back");
        let err = nest(MAX_DEPTH - 101).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            err.to_string(),
            format!(
                "operation '/1' failed at path '/spec/x{}/y': the patched object would nest more than 127 levels deep",
                "/x".repeat(99)
            )
        );
    }

    /// Runs `f` on a thread with a tokio worker's stack (2 MiB), where the server applies patches.
    fn on_a_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new().stack_size(2 * 1024 * 1024).spawn(f).unwrap().join().unwrap()
    }

    #[test]
    fn json_patches_that_nest_the_object_thousands_deep_are_refused_instead_of_overflowing_the_stack() {
        // Run through the json_patch fuzz target (fuzz/), both bodies, under the 3 MiB limit,
        // aborted the process with a stack overflow when the patched object was cloned or dropped.
        // 1. Adds, each nesting 120 levels below the last: 159 operations, ~19,000 levels.
        let mut adds = Vec::new();
        let mut path = "/spec/x".to_string();
        for _ in 0..159 {
            adds.push(format!(r#"{{"op":"add","path":"{path}","value":{}}}"#, chain(120)));
            path.push_str(&"/x".repeat(120));
        }
        // 2. Copies of a chain into its own deepest object, doubling it: 20 operations, 2^20 levels.
        let mut copies = vec![r#"{"op":"add","path":"/spec/x","value":{}}"#.to_string()];
        for doubling in 0..20 {
            let leaf = "/x".repeat(1 << doubling);
            copies.push(format!(r#"{{"op":"copy","from":"/spec/x","path":"/spec/x{leaf}"}}"#));
        }
        for ops in [adds, copies] {
            let body = format!("[{}]", ops.join(","));
            assert!(body.len() < super::super::decode::MAX_BODY_BYTES);
            let err = on_a_worker_stack(move || {
                let patch = Patch::parse(PatchType::Json, body.as_bytes(), FieldValidation::Warn).unwrap();
                patch.apply(&stored()).map(drop).unwrap_err()
            });
            assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
            assert!(err.to_string().ends_with("the patched object would nest more than 127 levels deep"), "{err}");
        }
    }

    #[test]
    fn json_patch_copies_that_double_the_object_are_refused_before_they_exhaust_memory() {
        // Run through the json_patch fuzz target (fuzz/), 80 copies of /spec into itself (3.6 KiB)
        // grew it like the Fibonacci numbers and used up the fuzzer's 2 GiB within 40.
        let ops: Vec<String> = (0..80)
            .map(|i| format!(r#"{{"op":"copy","from":"/spec","path":"/spec/{}"}}"#, if i % 2 == 0 { "a" } else { "b" }))
            .collect();
        let patch =
            Patch::parse(PatchType::Json, format!("[{}]", ops.join(",")).as_bytes(), FieldValidation::Warn).unwrap();
        let err = patch.apply(&stored()).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert!(err.to_string().ends_with("the copies would add more than 3145728 bytes"), "{err}");
        // A few copies of the same kind are fine.
        let few = Patch::parse(PatchType::Json, format!("[{}]", ops[..4].join(",")).as_bytes(), FieldValidation::Warn)
            .unwrap();
        assert_eq!(few.apply(&stored()).unwrap()["spec"]["b"]["a"]["weight"], 120.5);
    }

    #[test]
    fn strategic_merge_patch_is_unsupported() {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::CONTENT_TYPE, "application/strategic-merge-patch+json".parse().unwrap());
        assert_eq!(PatchType::from_headers(&h, true).unwrap_err().code(), http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    #[test]
    fn apply_is_a_patch_type_only_where_it_is_served() {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::CONTENT_TYPE, "application/apply-patch+yaml; charset=utf-8".parse().unwrap());
        assert_eq!(PatchType::from_headers(&h, true).unwrap(), PatchType::Apply);
        let err = PatchType::from_headers(&h, false).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert!(
            err.to_string().ends_with("include: application/json-patch+json, application/merge-patch+json"),
            "{err}"
        );
    }
}
