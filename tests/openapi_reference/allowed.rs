//! The reviewed differences between farm-apiserver's OpenAPI documents and the kube-apiserver's
//! for the equivalent CustomResourceDefinition, each with its reason.
//!
//! An entry names the place (`at`: the segments of the path into the document, `*` for any one
//! segment, `prefix*` for a segment that starts so), the value on each side there, and how many
//! places it explains in the v2 comparison and in the v3 one. A difference no entry explains fails
//! the test, and so does an entry that explains more or fewer places than it says (none: stale).
//!
//! The reasons: a CRD is published unlike a built-in resource and farm-apiserver publishes as the
//! built-in does (and as servers on k8s.io/apiserver do); the reference (kube-apiserver 1.37)
//! documents a feature farm-apiserver does not serve (the entry says which, and whether it is a
//! gap); or an aggregated server cannot know what the reference lists of its cluster.

/// What one side of an allowed difference holds at its place.
pub enum Side {
    /// Nothing.
    Absent,
    /// Something (whatever it is; the place names the field).
    Present,
    /// This JSON value.
    Is(&'static str),
}

use Side::{Absent, Is, Present};

/// One allowed difference.
pub struct Allowed {
    /// What differs, for the report.
    pub name: &'static str,
    /// Where, as segments of the path into the compared document.
    pub at: &'static [&'static str],
    /// farm-apiserver's side, and the reference's.
    pub ours: Side,
    pub reference: Side,
    /// How many places it explains in the v2 comparison, and in the v3 one.
    pub times: (usize, usize),
    /// Why farm-apiserver publishes it so.
    pub reason: &'static str,
}

const JSON_YAML: &str = r#"["application/json", "application/yaml"]"#;
const WATCH_STREAM: &str = "built-in list operations list application/json;stream=watch (the media type of a watch's \
                            answer); the CRD builder lists JSON and YAML only";

/// Every reviewed difference.
pub const ALLOWED: &[Allowed] = &[
    Allowed {
        name: "discovery paths of the group",
        at: &["paths", "/apis/farm.example.com/*"],
        ours: Present,
        reference: Absent,
        times: (2, 1),
        reason: "a built-in group publishes get<Group>APIGroup and get<Group><Version>APIResources (as does \
                 every server on k8s.io/apiserver); the kube-apiserver publishes no path for a CRD's group",
    },
    Allowed {
        name: "\"list or watch\" in the description of a list",
        at: &["paths", "*", "get", "description"],
        ours: Is(r#""list or watch objects of kind Llama""#),
        reference: Is(r#""list objects of kind Llama""#),
        times: (2, 2),
        reason: "a built-in list operation, which also serves watch=true, says \"list or watch objects of \
                 kind Pod\"; the CRD builder says \"list\"",
    },
    Allowed {
        name: "a list also produces the watch stream",
        at: &["paths", "*", "get", "produces"],
        ours: Is(r#"["application/json", "application/yaml", "application/json;stream=watch"]"#),
        reference: Is(JSON_YAML),
        times: (2, 0),
        reason: WATCH_STREAM,
    },
    Allowed {
        name: "a list also produces the watch stream (v3, unordered)",
        at: &["paths", "*", "get", "produces"],
        ours: Is(r#"["application/json", "application/json;stream=watch", "application/yaml"]"#),
        reference: Is(JSON_YAML),
        times: (0, 2),
        reason: WATCH_STREAM,
    },
    Allowed {
        name: "deletecollection takes DeleteOptions",
        at: &["paths", "/apis/farm.example.com/v1alpha/namespaces/{namespace}/llamas", "delete", "parameters", "*"],
        ours: Present,
        reference: Absent,
        times: (5, 5),
        reason: "the built-in installer documents deletecollection's DeleteOptions (the body and dryRun, \
                 gracePeriodSeconds, orphanDependents, propagationPolicy), which the kube-apiserver honours \
                 for a CRD too; the CRD builder lists ListOptions only",
    },
    Allowed {
        name: "deletecollection answers the deleted llamas",
        at: &[
            "paths",
            "/apis/farm.example.com/v1alpha/namespaces/{namespace}/llamas",
            "delete",
            "responses",
            "200",
            "schema",
            "$ref",
        ],
        ours: Is(r##""#/definitions/com.example.farm.v1alpha.LlamaList""##),
        reference: Is(r##""#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status""##),
        times: (1, 1),
        reason: "both servers answer deletecollection with the deleted objects as a LlamaList (the conformance \
                 suite compares these answers); the kube-apiserver documents a Status, for CRDs and built-ins \
                 alike, which neither server sends",
    },
    Allowed {
        name: "DELETE answers the llama",
        at: &[
            "paths",
            "/apis/farm.example.com/v1alpha/namespaces/{namespace}/llamas/{name}",
            "delete",
            "responses",
            "*",
            "schema",
            "$ref",
        ],
        ours: Is(r##""#/definitions/com.example.farm.v1alpha.Llama""##),
        reference: Is(r##""#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status""##),
        times: (2, 2),
        reason: "farm-apiserver answers a DELETE with the deleted object (200) or the object that stays for its \
                 dependents (202), as built-in Pods do and document (200 and 202: Pod); for a CRD the \
                 kube-apiserver answers a Success Status (200) and documents Status for both codes",
    },
    Allowed {
        name: "deletecollection takes a DeleteOptions body (v3)",
        at: &["paths", "/apis/farm.example.com/v1alpha/namespaces/{namespace}/llamas", "delete", "consumes"],
        ours: Is(JSON_YAML),
        reference: Absent,
        times: (0, 1),
        reason: "as in v2 (the body parameter): farm-apiserver documents the DeleteOptions body of a \
                 deletecollection, which the kube-apiserver reads for a CRD too; its v3 document gives that \
                 operation no requestBody",
    },
    Allowed {
        name: "DeleteOptions' group-version-kinds",
        at: &["definitions", "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "x-kubernetes-group-version-kind"],
        ours: Absent,
        reference: Present,
        times: (1, 1),
        reason: "the kube-apiserver lists DeleteOptions under every group version its cluster serves \
                 (`admission.k8s.io/v1`, ...); an aggregated server's document does not know the cluster's groups",
    },
    Allowed {
        name: "shardSelector",
        at: &["paths", "*", "**", "parameters", "query:shardSelector"],
        ours: Absent,
        reference: Present,
        times: (3, 3),
        reason: "ListOptions.shardSelector is alpha in Kubernetes 1.37 (feature gate ShardedListAndWatch, off by \
                 default: the kube-apiserver documents it and ignores it); farm-apiserver serves no sharded lists",
    },
    Allowed {
        name: "ignoreStoreReadErrorWithClusterBreakingPotential on DELETE",
        at: &["paths", "*", "delete", "parameters", "query:ignoreStoreReadErrorWithClusterBreakingPotential"],
        ours: Absent,
        reference: Present,
        times: (1, 1),
        reason: "the unsafe deletion of an object that cannot be read (Kubernetes 1.32, feature gate \
                 AllowUnsafeMalformedObjectDeletion): farm-apiserver stores nothing it cannot read back and \
                 offers no such deletion (the field stays in the DeleteOptions schema it publishes)",
    },
    Allowed {
        name: "v3: metadata defaults to {}",
        at: &["definitions", "com.example.farm.v1alpha.*", "properties", "metadata", "default"],
        ours: Is("{}"),
        reference: Absent,
        times: (0, 2),
        reason: "the kube-apiserver's v3 documents (1.27 and later) give a built-in kind's metadata default: {}",
    },
];

/// Whether `pattern` names the place `at`: segment by segment, `*` for any one segment,
/// `prefix*` for one that starts so, `**` for any number of segments (none included).
pub fn names(pattern: &[&str], at: &[String]) -> bool {
    match (pattern.split_first(), at.split_first()) {
        (None, None) => true,
        (Some((&"**", rest)), _) => names(rest, at) || (!at.is_empty() && names(pattern, &at[1..])),
        (Some((p, rest)), Some((a, at_rest))) => {
            let segment = match p.strip_suffix('*') {
                Some(prefix) => a.starts_with(prefix),
                None => p == a,
            };
            segment && names(rest, at_rest)
        }
        _ => false,
    }
}

impl Side {
    /// Whether `value` (None: absent) is what this side says.
    pub fn holds(&self, value: Option<&serde_json::Value>) -> bool {
        match (self, value) {
            (Absent, None) | (Present, Some(_)) => true,
            (Is(text), Some(value)) => serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| &v == value),
            _ => false,
        }
    }
}

#[test]
fn every_entry_names_a_place_and_its_values_parse() {
    for entry in ALLOWED {
        assert!(!entry.at.is_empty() && entry.times != (0, 0), "{}", entry.name);
        for side in [&entry.ours, &entry.reference] {
            if let Is(text) = side {
                assert!(serde_json::from_str::<serde_json::Value>(text).is_ok(), "{}: {text}", entry.name);
            }
        }
    }
}
