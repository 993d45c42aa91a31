//! The reviewed differences between farm-apiserver's OpenAPI documents and the kube-apiserver's
//! for the equivalent CustomResourceDefinition, each with its reason.
//!
//! An entry names the place (`at`: the segments of the path into the document, `*` for any one
//! segment, `prefix*` for a segment that starts so), the value on each side there, and how many
//! places it explains in the v2 comparison and in the v3 one. A difference no entry explains fails
//! the test, and so does an entry that explains more or fewer places than it says (none: stale).
//!
//! The reasons are those of the conformance suite: kube-apiserver 1.20 (the reference) predates a
//! change of Kubernetes that farm-apiserver follows (the entry names the version); or a CRD is
//! published unlike a built-in resource and farm-apiserver publishes as the built-in does (and as
//! servers on k8s.io/apiserver do); or, in the v3 comparison, OpenAPI v3 has no way to say it.

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
        name: "the later text of allowWatchBookmarks",
        at: &["paths", "*", "**", "parameters", "query:allowWatchBookmarks", "description"],
        ours: Present,
        reference: Present,
        times: (3, 3),
        reason: "Kubernetes dropped the sentence about the WatchBookmarks feature gate after 1.20 (the gate, \
                 GA in 1.17, is gone); farm-apiserver has no such gate",
    },
    Allowed {
        name: "sendInitialEvents",
        at: &["paths", "*", "**", "parameters", "query:sendInitialEvents"],
        ours: Present,
        reference: Absent,
        times: (3, 3),
        reason: "ListOptions.sendInitialEvents (watch lists) came in Kubernetes 1.27; the CRD builder publishes \
                 every ListOptions field since, on list and deletecollection",
    },
    Allowed {
        name: "fieldValidation",
        at: &["paths", "*", "*", "parameters", "query:fieldValidation"],
        ours: Present,
        reference: Absent,
        times: (5, 5),
        reason: "server-side field validation came in Kubernetes 1.23 and is on by default since 1.25 \
                 (ServerSideFieldValidation beta), when the CRD builder publishes the parameter on create, \
                 update and patch",
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
        name: "LlamaList is an object",
        at: &["definitions", "com.example.farm.v1alpha.LlamaList", "type"],
        ours: Is(r#""object""#),
        reference: Absent,
        times: (1, 1),
        reason: "built-in lists (PodList) say type: object; the CRD builder leaves the list's type out",
    },
    Allowed {
        name: "descriptions of meta.k8s.io fields reworded since 1.20",
        at: &["definitions", "io.k8s.apimachinery.pkg.apis.meta.v1.*", "properties", "*", "description"],
        ours: Present,
        reference: Present,
        times: (13, 13),
        reason: "farm-apiserver publishes the meta.k8s.io/v1 texts of Kubernetes 1.33 (its API level, through \
                 k8s-openapi), reworded since 1.20 (selfLink no longer populated since 1.20, new links for \
                 names and UIDs, longer texts for annotations, labels, names, namespaces and managedFields' time)",
    },
    Allowed {
        name: "ObjectMeta.clusterName",
        at: &["definitions", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "properties", "clusterName"],
        ours: Absent,
        reference: Present,
        times: (1, 1),
        reason: "Kubernetes removed metadata.clusterName, never persisted, in 1.24 and 1.25 \
                 (kubernetes/kubernetes#108717, #109602)",
    },
    Allowed {
        name: "ManagedFieldsEntry.subresource",
        at: &["definitions", "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry", "properties", "subresource"],
        ours: Present,
        reference: Absent,
        times: (1, 1),
        reason: "managedFields entries name the subresource since Kubernetes 1.22; farm-apiserver writes it",
    },
    Allowed {
        name: "DeleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential",
        at: &[
            "definitions",
            "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
            "properties",
            "ignoreStoreReadErrorWithClusterBreakingPotential",
        ],
        ours: Present,
        reference: Absent,
        times: (1, 1),
        reason: "a DeleteOptions field of Kubernetes 1.32, in the 1.33 schema farm-apiserver publishes",
    },
    Allowed {
        name: "v3: no schemes",
        at: &["paths", "*", "*", "schemes"],
        ours: Absent,
        reference: Is(r#"["https"]"#),
        times: (0, 11),
        reason: "OpenAPI v3 has no schemes (servers replace them, and the kube-apiserver's v3 documents list \
                 none)",
    },
    Allowed {
        name: "v3: no media types for a request without a body",
        at: &["paths", "*", "get", "consumes"],
        ours: Absent,
        reference: Is(JSON_YAML),
        times: (0, 4),
        reason: "OpenAPI v3 names the media types of a request in its requestBody, which a GET has not",
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
