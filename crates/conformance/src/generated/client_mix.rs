//! The well-formed requests of a real client mix, which random mutations all but never make:
//! updates carrying the object's current resourceVersion (as controllers write), writes and
//! server-side applies of `/status`, valid JSON patches, collections deleted by label, deletes
//! with a `DeleteOptions` body (preconditions, propagation, grace, dry run), streaming lists
//! (`sendInitialEvents` with `resourceVersionMatch`, as client-go's informers list), and reads
//! asking for a Table, metadata only, YAML or gzip.

use crate::subject::Subject;
use proptest::prelude::*;
use serde_json::{Value, json};

/// The verbs of this module, and how often a generated case is each, of about 100 (the other
/// verbs of [`super`] share the rest): valid JSON patches are over a tenth of all requests.
pub const VERBS: &[(&str, u32)] = &[
    ("update-current", 8),
    ("json-patch", 16),
    ("status-current", 5),
    ("status-apply", 4),
    ("deletecollection-label", 3),
    // client-go's informers since 1.32: a streaming list (WatchList).
    ("watch-list", 3),
];

/// What a read asks its answer to be: the `Accept` header (empty: none) and whether it asks for
/// gzip.
#[derive(Clone, Debug)]
pub struct Accept {
    pub accept: &'static str,
    pub gzip: bool,
}

/// `Accept` of a read: mostly none; JSON, YAML, a Table, or metadata only (of one object, or of
/// a list) otherwise; one read in four asks for gzip.
pub fn accept() -> impl Strategy<Value = Accept> {
    let accept = prop::sample::select(vec![
        "",
        "",
        "",
        "",
        "",
        "",
        "application/json",
        "application/yaml",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    ]);
    (accept, prop::bool::weighted(0.25)).prop_map(|(accept, gzip)| Accept { accept, gzip })
}

/// A `DeleteOptions` body of a delete, or none (half of them).
pub fn delete_options() -> impl Strategy<Value = Option<Value>> {
    let typed = |options: Value| {
        let mut options = options;
        options["apiVersion"] = json!("v1");
        options["kind"] = json!("DeleteOptions");
        options
    };
    prop::sample::select(vec![
        None,
        None,
        None,
        None,
        Some(typed(json!({"preconditions": {"resourceVersion": "$RV"}}))),
        Some(json!({"preconditions": {"uid": "$UID"}})),
        Some(json!({"preconditions": {"uid": "bogus"}})),
        Some(json!({"preconditions": {"resourceVersion": "1"}})),
        Some(typed(json!({"propagationPolicy": "Foreground"}))),
        Some(json!({"gracePeriodSeconds": 0})),
        Some(typed(json!({"dryRun": ["All"]}))),
    ])
}

/// A valid JSON patch of the object `name` at `version`: the first field replaced with a valid
/// value, a label added or removed, or the name tested before a replace.
pub fn json_patch(subject: &Subject, name: &str, version: &str, value: u32) -> Value {
    let pointer = subject.fields.first().map(|f| f.pointer(version)).filter(|p| !p.is_empty());
    let label = json!({"op": "add", "path": "/metadata/labels/patched", "value": "yes"});
    // Without a first field at this version, a label is what the patch changes.
    let replace = pointer.map_or(label.clone(), |path| json!({"op": "replace", "path": path, "value": value}));
    match value % 4 {
        0 => json!([replace]),
        1 => json!([label]),
        2 => json!([{"op": "remove", "path": "/metadata/labels/gen"}]),
        _ => json!([{"op": "test", "path": "/metadata/name", "value": name}, replace]),
    }
}

/// A valid object `name` at `version` carrying the resourceVersion the side last saw, its first
/// field `value`; with the subject's first status when it is a write of `/status`.
pub fn current(subject: &Subject, name: &str, version: &str, value: u32, status: bool) -> Value {
    let mut object = (subject.object)(name, version);
    object["metadata"]["labels"] = json!({"gen": "yes", "case": super::CASE});
    object["metadata"]["resourceVersion"] = json!("$RV");
    if let Some(field) = subject.fields.first() {
        field.set(&mut object, version, json!(value));
    }
    if status && let Some(first) = (subject.statuses)().into_iter().next() {
        object["status"] = first;
    }
    object
}

/// A server-side apply of `/status`: the object's identity and the subject's first status.
pub fn status_configuration(subject: &Subject, name: &str, version: &str) -> Value {
    let object = (subject.object)(name, version);
    let mut configuration =
        json!({"apiVersion": object["apiVersion"], "kind": object["kind"], "metadata": {"name": name}});
    if let Some(first) = (subject.statuses)().into_iter().next() {
        configuration["status"] = first;
    }
    configuration
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_patches_and_current_objects_are_well_formed() {
        let subject = &crate::subject::tests::WIDGETS;
        for value in 1..5 {
            let patch = json_patch(subject, "w", "v1", value);
            assert!(
                patch
                    .as_array()
                    .is_some_and(|ops| ops.iter().all(|op| op["path"].as_str().is_some_and(|p| p.starts_with('/'))))
            );
        }
        let object = current(subject, "w", "v1", 7, true);
        assert_eq!(object["metadata"]["resourceVersion"], "$RV");
        let weights: u32 = VERBS.iter().map(|(_, w)| w).sum();
        assert!(weights < 100);
    }
}
