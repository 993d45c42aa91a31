//! The reviewed tables of differences from the reference.
//!
//! [`ON_PURPOSE`]: farm-apiserver answers differently by design: kube-apiserver 1.20 (the
//! reference) predates a behaviour of current Kubernetes that farm-apiserver follows (the entry
//! names the version), or a CustomResourceDefinition behaves unlike a built-in resource and
//! farm-apiserver behaves as the built-in (and as servers on k8s.io/apiserver do).
//!
//! [`TO_FIX`]: differences the suite found that are defects of farm-apiserver, not yet fixed.
//! Each is a piece of work; the issue of this suite stays open while this table has entries.
//!
//! An entry matches only the requests and answers it explains; a difference no entry explains
//! fails the test.

use crate::exchange::{Answer, Request};
use serde_json::Value;

/// One allowed difference.
pub struct Allowed {
    /// What differs, for the report.
    pub name: &'static str,
    /// Why, and since which Kubernetes version the kube-apiserver does the same (when it does).
    pub reason: &'static str,
    /// Whether this entry explains the difference between the answers to `request`.
    pub applies: fn(request: &Request, farm: &Answer, reference: &Answer) -> bool,
}

fn message(answer: &Answer) -> &str {
    answer.body["message"].as_str().unwrap_or_default()
}

fn reason(answer: &Answer) -> &str {
    answer.body["reason"].as_str().unwrap_or_default()
}

/// `value` without any `message` member and without `details.causes[].message`.
fn without_messages(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(k, _)| *k != "message").map(|(k, v)| (k.clone(), without_messages(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_messages).collect()),
        other => other.clone(),
    }
}

/// The two answers are the same but for the wording of their messages.
fn only_wording(farm: &Answer, reference: &Answer) -> bool {
    farm.code == reference.code
        && farm.content_type == reference.content_type
        && farm.warnings == reference.warnings
        && without_messages(&farm.body) == without_messages(&reference.body)
}

/// Whether the request's query has `name`.
fn has_param(request: &Request, name: &str) -> bool {
    request.query.split('&').any(|p| p.split('=').next() == Some(name))
}

fn farm_warns_of_unknown_fields_only(farm: &Answer, reference: &Answer) -> bool {
    !farm.warnings.is_empty()
        && farm.warnings.iter().all(|w| w.contains("unknown field"))
        && reference.warnings.is_empty()
        && Answer { warnings: Vec::new(), ..farm.clone() } == *reference
}

fn text(answer: &Answer) -> String {
    answer.body.to_string()
}

/// Both answers are watches whose events are the same but for their order.
fn same_events_in_another_order(request: &Request, farm: &Answer, reference: &Answer) -> bool {
    let sorted = |answer: &Answer| {
        let mut events: Vec<String> = answer.body.as_array().into_iter().flatten().map(Value::to_string).collect();
        events.sort();
        events
    };
    request.is_watch() && farm.code == reference.code && sorted(farm) == sorted(reference)
}

/// `value` without any `managedFields` member, at any depth (items of lists, objects of events).
fn without_managed_fields(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "managedFields")
                .map(|(k, v)| (k.clone(), without_managed_fields(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_managed_fields).collect()),
        other => other.clone(),
    }
}

/// Both answers are lists whose items are the same but for their order.
fn same_items_in_another_order(farm: &Answer, reference: &Answer) -> bool {
    let sorted = |answer: &Answer| {
        let mut items: Vec<String> =
            answer.body["items"].as_array().into_iter().flatten().map(Value::to_string).collect();
        items.sort();
        items
    };
    let without_items = |answer: &Answer| {
        let mut body = answer.body.clone();
        if let Some(map) = body.as_object_mut() {
            map.remove("items");
        }
        body
    };
    farm.code == reference.code && without_items(farm) == without_items(reference) && sorted(farm) == sorted(reference)
}

pub const ON_PURPOSE: &[Allowed] = &[
    Allowed {
        name: "the order of a list served from the watch cache",
        reason: "kube-apiserver 1.20 serves a list with resourceVersion=0 or NotOlderThan from its watch cache in no order; current Kubernetes' B-tree watch cache (1.32), like etcd and farm-apiserver, in key order.",
        applies: |request, farm, reference| {
            has_param(request, "resourceVersion") && same_items_in_another_order(farm, reference)
        },
    },
    Allowed {
        name: "the order of a watch's initial ADDED events",
        reason: "A watch without a resourceVersion starts with an ADDED event per object, in no promised order: the kube-apiserver's watch cache sends them in its own; farm-apiserver in key order.",
        applies: same_events_in_another_order,
    },
    Allowed {
        name: "the wording of an error message (code, reason, details and causes equal)",
        reason: "Parse errors name their cause in Go's words in the reference (`strconv.ParseInt: parsing \"x\": invalid syntax`, json-iterator's byte offsets, `unable to parse requirement: found ''`); farm-apiserver says the same in its own. Clients act on the code, reason and causes' fields, never on this text.",
        applies: |_, farm, reference| only_wording(farm, reference),
    },
    Allowed {
        name: "a 400 for a body that is not a Llama, where the reference's decoder words it differently",
        reason: "Both refuse the body as BadRequest; the reference's message comes from its generic decoder (`couldn't get version/kind; json parse error: ...`), farm-apiserver's from its typed one.",
        applies: |_, farm, reference| {
            farm.code == 400
                && reference.code == 400
                && reason(farm) == "BadRequest"
                && reason(reference) == "BadRequest"
        },
    },
    Allowed {
        name: "Warning headers for unknown fields",
        reason: "Kubernetes 1.27 made fieldValidation=Warn the default: unknown and duplicate fields are dropped with a Warning header. 1.20 drops them silently.",
        applies: |_, farm, reference| farm_warns_of_unknown_fields_only(farm, reference),
    },
    Allowed {
        name: "the fieldValidation parameter",
        reason: "fieldValidation (Ignore, Warn, Strict) is Kubernetes 1.25 (beta) / 1.27 (GA); 1.20 ignores the parameter.",
        applies: |request, _, _| has_param(request, "fieldValidation"),
    },
    Allowed {
        name: "sendInitialEvents",
        reason: "Watch lists (sendInitialEvents with resourceVersionMatch=NotOlderThan) are Kubernetes 1.27 (alpha); 1.20 ignores the parameter and refuses resourceVersionMatch on a watch.",
        applies: |request, _, _| has_param(request, "sendInitialEvents"),
    },
    Allowed {
        name: "selectable field spec.color",
        reason: "CRD selectableFields are Kubernetes 1.30 (1.32 GA); farm-apiserver declares spec.color selectable, which 1.20 cannot.",
        applies: |request, _, _| request.query.contains("spec.color"),
    },
    Allowed {
        name: "managedFields of status and subresource",
        reason: "Kubernetes 1.22 (reset fields) stopped recording in managedFields what a write of the main resource dropped from the status, and added `subresource` to the entries of status writes; 1.20 does neither.",
        applies: |request, farm, reference| {
            let (f, r) = (text(farm), text(reference));
            let status_fields =
                request.path.ends_with("/status") || r.contains("\"f:status\"") || f.contains("\"subresource\"");
            status_fields
                && farm.code == reference.code
                && without_managed_fields(&farm.body) == without_managed_fields(&reference.body)
        },
    },
    Allowed {
        name: "an apply of the status ignores the spec it carries",
        reason: "Since Kubernetes 1.22 (reset fields) the fields a write of /status cannot change are dropped before the apply, so they conflict with no one; 1.20 reports a conflict over them.",
        applies: |request, farm, reference| {
            request.path.ends_with("/status")
                && request.has_header("content-type", "apply-patch")
                && farm.code == 200
                && reference.code == 409
                && text(reference).contains("FieldManagerConflict")
        },
    },
    Allowed {
        name: "Content-Type of Table and metadata-only answers",
        reason: "Current Kubernetes names what it sent in the Content-Type (`application/json;as=Table;v=v1;g=meta.k8s.io`); 1.20 wrote `application/json`.",
        applies: |_, farm, reference| {
            // 1.20's Name column still links the old page on names.
            let old_link = "http://kubernetes.io/docs/user-guide/identifiers#names";
            let new_link = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
            // managedFields of Table rows' objects differ as the entry on managedFields says.
            let comparable = |answer: &Answer| without_managed_fields(&answer.body).to_string();
            farm.content_type.contains(";as=")
                && reference.content_type == "application/json"
                && farm.code == reference.code
                && comparable(farm) == comparable(reference).replace(old_link, new_link)
        },
    },
    Allowed {
        name: "paths and methods no resource serves",
        reason: "A CRD's group answers an unknown path with the text `404 page not found`, serves its discovery document to any method, treats a POST to an object or a PUT to a collection as a create or an update, and ignores path segments after a subresource. Built-in groups (and servers on k8s.io/apiserver, whose routes are go-restful's) answer a 404 or 405 Status, which farm-apiserver does.",
        applies: |request, farm, reference| {
            farm.code == 405
                || (farm.code == 404 && reference.content_type.starts_with("text/plain"))
                || (farm.code == 404 && reference.code == 200 && request.path.contains("/status/"))
        },
    },
    Allowed {
        name: "protobuf",
        reason: "farm-apiserver reads and writes JSON and YAML only; a client offering protobuf also offers JSON (kubectl, client-go), and a body sent as protobuf is refused with 415.",
        applies: |request, _, _| request.headers.iter().any(|(_, v)| v.contains("protobuf")),
    },
    Allowed {
        name: "a kind or apiVersion other than the resource's",
        reason: "A built-in resource's decoder refuses a body of another kind or version as BadRequest (`the kind in the data (Alpaca) does not match the expected kind (Llama)`), as farm-apiserver does; a CRD decodes any kind and refuses it later as Invalid (422, `kind: Invalid value`).",
        applies: |_, farm, reference| {
            farm.code == 400
                && reference.code == 422
                && (message(reference).contains("kind: Invalid value")
                    || message(reference).contains("apiVersion: Invalid value"))
        },
    },
    Allowed {
        name: "a client's mistake that the reference answers with 500",
        reason: "kube-apiserver 1.20 answers some malformed requests (resourceVersion=bogus, a DeleteOptions body of another kind, a merge patch that is `null`, an apply that does not match the schema) with a 500 InternalError; farm-apiserver answers the client's mistake with a 4xx.",
        applies: |_, farm, reference| reference.code == 500 && (400..500).contains(&farm.code),
    },
    Allowed {
        name: "a full last page without a continue token",
        reason: "The kube-apiserver fills a page from etcd and sends a continue token whenever keys remain after it, even when none of them matches the selector (the next page is then empty); farm-apiserver sends none when nothing after the page matches. Clients follow a token until there is none, so both end the same.",
        applies: |request, farm, reference| {
            let without_continue = |answer: &Answer| {
                let mut body = answer.body.clone();
                if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.remove("continue");
                    metadata.remove("remainingItemCount");
                }
                body
            };
            has_param(request, "limit")
                && farm.body["metadata"].get("continue").is_none()
                && reference.body["metadata"].get("continue").is_some()
                && without_continue(farm) == without_continue(reference)
        },
    },
    Allowed {
        name: "DELETE answers the deleted object",
        reason: "farm-apiserver answers a delete with the deleted object and the resourceVersion of its deletion, as the kube-apiserver does for Pods and Services (ReturnDeletedObject), so a client can match its delete with the watch's DELETED event; for a CRD (and ConfigMaps) it answers a `Success` Status. kubectl, client-go and kube-rs (`Either<K, Status>`) accept both.",
        applies: |_, farm, reference| {
            reference.body["kind"] == "Status" && reference.body["status"] == "Success" && farm.body["kind"] == "Llama"
        },
    },
    Allowed {
        name: "managedFields kept through a write carrying an untypable status",
        reason: "kube-apiserver 1.20 clears every managedFields entry of an object when a write carries a value its schema cannot type (a status that is not an object, which the write drops anyway); farm-apiserver keeps them, as later versions do.",
        applies: |_, farm, reference| {
            reference.body["metadata"].get("managedFields").is_none()
                && farm.body["metadata"].get("managedFields").is_some()
                && without_managed_fields(&farm.body) == without_managed_fields(&reference.body)
        },
    },
    Allowed {
        name: "export=true",
        reason: "The `export` parameter was removed in Kubernetes 1.21 (deprecated since 1.14); 1.20 still strips creationTimestamp for it.",
        applies: |request, _, _| has_param(request, "export"),
    },
    Allowed {
        name: "null for an optional field",
        reason: "A built-in resource reads `\"color\": null` as an unset field; a 1.20 CRD refuses a null for a field its schema does not make nullable.",
        applies: |_, farm, reference| {
            farm.code < 300
                && reference.code == 422
                && message(reference).contains("must be of type")
                && message(reference).contains("\"null\"")
        },
    },
    Allowed {
        name: "integers beyond 2^53 in a number field",
        reason: "The schema says `number` (a double): farm-apiserver keeps what a float64 keeps, as a built-in float64 field does; a CRD keeps a JSON integer as an int64 exactly.",
        applies: |_, farm, reference| {
            text(farm).contains("9223372036854775808") && text(reference).contains("9223372036854775807")
        },
    },
];

/// Labels of hand-written requests whose difference is a defect still to fix (see the note of
/// each group).
const TO_FIX_LABELS: &[(&str, &[&str])] = &[
    (
        "an update with another uid is a 422, not the kube-apiserver's 409 precondition failure",
        &["update: another uid"],
    ),
    (
        "JSON patch: `replace` of a missing member is refused (as RFC 6902 says); kube-apiserver 1.20's json-patch adds it (to check against current Kubernetes)",
        &["patch: json patch: replace a missing field"],
    ),
    (
        "JSON patch: an invalid operation is refused when decoded (400), the kube-apiserver refuses it when applied (422)",
        &[
            "patch: json patch: unknown op",
            "patch: json patch: no path",
            "patch: json patch: path without a slash",
            "patch: json patch: root",
            "patch: merge: array",
        ],
    ),
    ("a lone UTF-16 surrogate in a JSON string is refused", &["body: lone surrogate"]),
    (
        "bodies nested deeper than 128 levels are refused (the kube-apiserver's limit is 10,000)",
        &["body: deep nesting"],
    ),
    ("a `null` metadata is a 400, not the 422 of a missing name", &["create: metadata metadata null"]),
    (
        "resourceVersionMatch=Exact with a future resourceVersion",
        &["list: resourceVersion=99999999999&resourceVersionMatch=Exact"],
    ),
    ("force=bogus on a merge patch", &["patch: merge force=bogus"]),
    (
        "a watch from a future resourceVersion is a 504 at once; the kube-apiserver waits",
        &["watch: resourceVersion=99999999999&labelSelector=watched"],
    ),
    ("the legacy /watch/ path", &["watch: the legacy watch path"]),
    ("a DeleteOptions body without kind", &["delete: body without kind", "delete: body of another kind"]),
    ("gracePeriodSeconds=-1", &["delete: gracePeriodSeconds=-1"]),
    (
        "orphan finalizer and propagation",
        &["delete: propagationPolicy=Orphan", "deletes: what is left", "deletecollection: dry run"],
    ),
    (
        "Status messages of preconditions and forbidden finalizers",
        &[
            "delete: body with uid precondition",
            "delete: body with resourceVersion precondition",
            "delete: held, a new finalizer is refused",
        ],
    ),
    ("an invalid label on update names the field differently", &["update: invalid label"]),
    (
        "status validation: conditions",
        &["status: put", "status: put invalid", "status: put a bad condition", "status: merge patch"],
    ),
    (
        "server-side apply: managers after a forced apply",
        &["applies: the result", "apply: no kind", "apply: wrong kind"],
    ),
    (
        "a watch's events after a label change out of the selector",
        &[
            "watch: resourceVersion=$LISTRV&labelSelector=watched%3Dyes",
            "watch: resourceVersion=1&labelSelector=watched",
        ],
    ),
    ("generated names in messages", &["create: metadata bad generateName"]),
    ("discovery: the order of verbs, and the Status of an unknown subresource", &["paths", "paths: other methods"]),
    ("Table answers in YAML", &["get: accept \"application/yaml;as=Table;v=v1;g=meta.k8s.io\"", "watch: YAML"]),
    ("an invalid label selector key", &["list: labelSelector=herd%3E1"]),
    (
        "lists at resourceVersion=0 served from a watch cache order or lag",
        &[
            "list: resourceVersion=0",
            "list: resourceVersion=$LISTRV",
            "list: resourceVersion=0&resourceVersionMatch=NotOlderThan",
            "list: resourceVersion=0&limit=1",
        ],
    ),
    ("a PUT of another kind without resourceVersion", &["update: wrong kind"]),
    ("an immutable uid: the cause's message", &["patch: merge: change the uid"]),
    ("a JSON patch removing a missing member", &["patch: json patch: remove a missing field"]),
    ("deletecollection answers", &["deletecollection: by label"]),
    (
        "Table v1beta1 and Table answers of one object",
        &[
            "get: accept \"application/json;as=Table;v=v1beta1;g=meta.k8s.io\"",
            "get: Table includeObject=None",
            "watch: as Table",
            "list: accept application/json;as=Table;v=v1beta1;g=meta.k8s.io labelSelector=list%3Dyes",
            "list: accept application/json;as=Table;v=v1beta1;g=meta.k8s.io labelSelector=list%3Dyes&limit=1",
            "list: accept application/json;as=Table;v=v1beta1;g=meta.k8s.io labelSelector=nothing",
            "list: accept application/json;as=Table;v=v1beta1;g=meta.k8s.io labelSelector=list%3Dyes&includeObject=Object",
        ],
    ),
    (
        "an empty PartialObjectMetadataList",
        &["list: accept application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io labelSelector=nothing"],
    ),
    (
        "server-side apply: shared and forced ownership, renames, giving up a field",
        &["apply: another manager, same value", "apply: force", "apply: name differs", "apply: give up a field"],
    ),
    ("a JSON patch test that fails has no details", &["patch: json patch: test fails"]),
];

/// Known defects that generated requests meet too, recognised by their answers.
pub const TO_FIX: &[Allowed] = &[
    Allowed {
        name: "an object being deleted carries deletionGracePeriodSeconds (or not) unlike the kube-apiserver's",
        reason: "to fix",
        applies: |_, farm, reference| {
            text(farm).contains("deletionGracePeriodSeconds") != text(reference).contains("deletionGracePeriodSeconds")
        },
    },
    Allowed {
        name: "a malformed merge or JSON patch of a missing llama is a 400/422; the kube-apiserver answers 404 first",
        reason: "to fix",
        applies: |request, farm, reference| {
            request.method == reqwest::Method::PATCH && reference.code == 404 && matches!(farm.code, 400 | 422)
        },
    },
    Allowed {
        name: "with several invalid fields, the causes are listed in another order or only some of them",
        reason: "to fix",
        applies: |_, farm, reference| {
            farm.code == 422 && reference.code == 422 && reason(farm) == "Invalid" && reason(reference) == "Invalid"
        },
    },
    Allowed {
        name: "server-side apply: what the reference refuses with 500 (unknown fields, a bad resourceVersion) or accepts (null values)",
        reason: "to fix",
        applies: |request, farm, reference| {
            request.has_header("content-type", "apply-patch")
                && (farm.code < 300 && reference.code == 500 || farm.code == 400 && reference.code < 300)
        },
    },
    Allowed {
        name: "a merge patch setting `resourceVersion: \"\"`: the kube-apiserver then requires one (422), farm-apiserver reads it as no precondition",
        reason: "to fix",
        applies: |request, farm, reference| {
            request.method == reqwest::Method::PATCH
                && farm.code == 200
                && reference.code == 422
                && message(reference).contains("must be specified for an update")
        },
    },
    Allowed {
        name: "a resourceVersion set on create is accepted (the kube-apiserver answers 500)",
        reason: "to fix",
        applies: |request, farm, reference| {
            request.method == reqwest::Method::POST
                && farm.code == 201
                && reference.code == 500
                && message(reference).contains("resourceVersion should not be set")
        },
    },
    Allowed {
        name: "an empty finalizers list is kept (`finalizers: []`); the kube-apiserver leaves it out",
        reason: "to fix",
        applies: |_, farm, reference| {
            text(farm).contains("\"finalizers\":[]") && !text(reference).contains("\"finalizers\":[]")
        },
    },
    Allowed {
        name: "a patch of the status changing apiVersion or kind is refused; 1.20 resets them with the rest of the object",
        reason: "to fix",
        applies: |request, farm, reference| {
            request.path.ends_with("/status")
                && farm.code == 400
                && reference.code < 300
                && (message(farm).contains("API version") || message(farm).contains("kind"))
        },
    },
    Allowed {
        name: "a status write validates the spec it does not change",
        reason: "to fix",
        applies: |request, farm, reference| {
            request.path.ends_with("/status") && farm.code == 422 && reference.code == 200
        },
    },
    Allowed {
        name: "an apply with `namespace: \"\"` is refused",
        reason: "to fix",
        applies: |_, farm, _| farm.code == 422 && message(farm).contains("metadata.namespace: Required value"),
    },
    Allowed {
        name: "several fieldManager parameters on an apply",
        reason: "to fix",
        applies: |request, _, _| request.query.contains("fieldManager=a&fieldManager=b"),
    },
    Allowed {
        name: "managedFields after an apply (an entry's time)",
        reason: "to fix",
        applies: |request, farm, reference| {
            request.has_header("content-type", "apply-patch")
                && without_managed_fields(&farm.body) == without_managed_fields(&reference.body)
        },
    },
    Allowed {
        name: "the order of checks: which of several errors is reported (400, 404 or 422)",
        reason: "to fix",
        applies: |_, farm, reference| {
            let client_errors = [400, 404, 409, 422];
            farm.code != reference.code && client_errors.contains(&farm.code) && client_errors.contains(&reference.code)
        },
    },
    Allowed {
        name: "an invalid dryRun and an unsupported content type: which error wins",
        reason: "to fix",
        applies: |_, farm, reference| reference.code == 415 && farm.code == 422,
    },
];

/// The label groups of [`TO_FIX_LABELS`] none of whose requests differed in a run that
/// found `seen`: fixed, or now explained by an entry of [`ON_PURPOSE`]; to be removed.
pub fn no_longer_seen(seen: &std::collections::BTreeMap<&'static str, usize>) -> Vec<&'static str> {
    TO_FIX_LABELS.iter().map(|(name, _)| *name).filter(|name| !seen.contains_key(name)).collect()
}

/// Whether `request` and its answers show a known defect; its name.
pub fn to_fix(request: &Request, farm: &Answer, reference: &Answer) -> Option<&'static str> {
    let by_label = TO_FIX_LABELS.iter().find(|(_, labels)| labels.contains(&request.label.as_str()));
    by_label
        .map(|(name, _)| *name)
        .or_else(|| TO_FIX.iter().find(|a| (a.applies)(request, farm, reference)).map(|a| a.name))
}
