//! The reviewed tables of differences from the reference.
//!
//! [`ON_PURPOSE`]: the tested server answers differently by design: kube-apiserver 1.20 (the
//! reference) predates a behaviour of current Kubernetes that the tested server follows (the entry
//! names the version), or a CustomResourceDefinition behaves unlike a built-in resource and
//! the tested server behaves as the built-in (and as servers on k8s.io/apiserver do).
//!
//! [`TO_FIX`]: differences the suite found that are defects of the tested server, not yet fixed.
//! Each is a piece of work; the issue of this suite stays open while this table has entries.
//!
//! An entry matches only the requests and answers it explains; a difference no entry explains
//! fails the test.

use crate::exchange::{Answer, Request};
use crate::subject::{Subject, member_mut};
use serde_json::Value;

/// One allowed difference.
pub struct Allowed {
    /// What differs, for the report.
    pub name: &'static str,
    /// Why, and since which Kubernetes version the kube-apiserver does the same (when it does).
    pub reason: &'static str,
    /// The subjects (by plural) whose run must see it fire: their hand-written corpus has a
    /// request it explains. In a run of another subject it is only bounded.
    pub seen_in: &'static [&'static str],
    /// How many requests of the hand-written corpus it may explain.
    pub corpus: usize,
    /// How many of every 1,000 generated requests it may explain (see `Allowed::generated_bound`).
    pub per_thousand: usize,
    /// Whether this entry explains the difference between the answers to `request`.
    pub applies: fn(subject: &Subject, request: &Request, tested: &Answer, reference: &Answer) -> bool,
}

/// The farm server's Llamas, whose corpus exercises most entries.
const LLAMAS: &[&str] = &["llamas"];

/// The annotation client-side `kubectl apply` records its configuration in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn message(answer: &Answer) -> &str {
    answer.body["message"].as_str().unwrap_or_default()
}

fn reason(answer: &Answer) -> &str {
    answer.body["reason"].as_str().unwrap_or_default()
}

/// A `Status` body without its `message` and its causes' (an object's own fields called
/// `message`, such as a condition's, stay).
fn without_messages(value: &Value) -> Value {
    let mut value = value.clone();
    if value["kind"] == "Status" {
        if let Some(map) = value.as_object_mut() {
            map.remove("message");
        }
        for cause in value["details"]["causes"].as_array_mut().into_iter().flatten() {
            if let Some(cause) = cause.as_object_mut() {
                cause.remove("message");
            }
        }
    }
    value
}

/// A `Status` body without its message and its causes.
fn without_messages_or_causes(value: &Value) -> Value {
    let mut body = without_messages(value);
    if let Some(details) = body.get_mut("details").and_then(Value::as_object_mut) {
        details.remove("causes");
    }
    body
}

/// Whether two answers are the same Table or metadata-only answer but for the Content-Type
/// naming it (current Kubernetes) or not (1.20).
fn same_but_for_the_content_type(tested: &Answer, reference: &Answer) -> bool {
    // 1.20's Name column still links the old page on names.
    let old_link = "http://kubernetes.io/docs/user-guide/identifiers#names";
    let new_link = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
    // managedFields of Table rows' objects differ as the entry on managedFields says.
    let comparable = |answer: &Answer| without_managed_fields(&answer.body).to_string();
    tested.content_type.contains(";as=")
        && tested.content_type.split(';').next() == Some(reference.content_type.as_str())
        && tested.code == reference.code
        && comparable(tested) == comparable(reference).replace(old_link, new_link)
}

/// A Table with each cell that is a JSON list of strings (a CRD's printer column of a list)
/// written as its items joined by commas.
fn with_lists_joined(body: &Value) -> Value {
    let mut body = body.clone();
    for row in member_mut(&mut body, &["rows"]).and_then(Value::as_array_mut).into_iter().flatten() {
        for cell in member_mut(row, &["cells"]).and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(items) = cell.as_str().and_then(|text| serde_json::from_str::<Vec<String>>(text).ok()) {
                *cell = Value::String(items.join(","));
            }
        }
    }
    body
}

/// A cause without its message.
fn cause_without_message(cause: &Value) -> Value {
    let mut cause = cause.clone();
    if let Some(map) = cause.as_object_mut() {
        map.remove("message");
    }
    cause
}

/// The causes of a `Status` answer, as they are (none for another answer).
fn causes_of(answer: &Answer) -> Vec<Value> {
    answer.body["details"]["causes"].as_array().cloned().unwrap_or_default()
}

/// The causes of a `Status` answer without their messages, leaving out those `skip` picks.
fn causes_without_messages(answer: &Answer, skip: impl Fn(&Value) -> bool) -> Vec<Value> {
    causes_of(answer).iter().filter(|c| !skip(c)).map(cause_without_message).collect()
}

/// The two answers are the same but for the wording of their messages.
fn only_wording(tested: &Answer, reference: &Answer) -> bool {
    tested.code == reference.code
        && tested.content_type == reference.content_type
        && tested.warnings == reference.warnings
        && without_messages(&tested.body) == without_messages(&reference.body)
}

/// Whether the request's query has `name`.
fn has_param(request: &Request, name: &str) -> bool {
    request.query.split('&').any(|p| p.split('=').next() == Some(name))
}

/// An answer's warnings but v1alpha's deprecation, which both sides send alike.
fn warnings_of(answer: &Answer) -> Vec<&String> {
    answer.warnings.iter().filter(|w| !w.contains(" is deprecated; use ")).collect()
}

fn farm_warns_of_unknown_fields_only(tested: &Answer, reference: &Answer) -> bool {
    !warnings_of(tested).is_empty()
        && warnings_of(tested).iter().all(|w| w.contains("unknown field"))
        && warnings_of(reference).is_empty()
        && Answer { warnings: reference.warnings.clone(), ..tested.clone() } == *reference
}

/// Whether `request` is an apply the reference answered with a 500 whose message starts with
/// `words`.
fn apply_failed_on_reference(request: &Request, reference: &Answer, words: &str) -> bool {
    request.has_header("content-type", "apply-patch") && reference.code == 500 && message(reference).starts_with(words)
}

fn text(answer: &Answer) -> String {
    answer.body.to_string()
}

/// Both answers are watches whose events are the same but for their order.
fn same_events_in_another_order(request: &Request, tested: &Answer, reference: &Answer) -> bool {
    let sorted = |answer: &Answer| {
        let mut events: Vec<String> = answer.body.as_array().into_iter().flatten().map(Value::to_string).collect();
        events.sort();
        events
    };
    request.is_watch() && tested.code == reference.code && sorted(tested) == sorted(reference)
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
fn same_items_in_another_order(tested: &Answer, reference: &Answer) -> bool {
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
    tested.code == reference.code
        && without_items(tested) == without_items(reference)
        && sorted(tested) == sorted(reference)
}

/// Whether `answer` is a Status of `code` and `why` whose message begins with `message`.
fn refused_as(answer: &Answer, code: u16, why: &str, message: &str) -> bool {
    answer.code == code && reason(answer) == why && self::message(answer).starts_with(message)
}

/// The causes of an answer, each once, in the order they first appear.
fn distinct_causes(answer: &Answer) -> Vec<Value> {
    let mut seen = Vec::new();
    for cause in causes_of(answer) {
        if !seen.contains(&cause) {
            seen.push(cause);
        }
    }
    seen
}

/// Whether a cause is a 1.20 CRD's refusal of a null as being of type null.
fn refuses_null(cause: &Value) -> bool {
    cause["message"].as_str().is_some_and(|m| m.contains("must be of type") && m.contains("\"null\""))
}

/// A field path without the indices of list items (`spec.zones[0]` is `spec.zones`).
fn without_list_indices(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(open) = rest.find('[') {
        let (before, after) = rest.split_at(open);
        out.push_str(before);
        match after.find(']').filter(|&close| close > 1 && after[1..close].bytes().all(|b| b.is_ascii_digit())) {
            Some(close) => rest = &after[close + 1..],
            None => {
                out.push('[');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The value of the request's query parameter `name` (the first, when repeated).
fn query_value<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.query.split('&').find_map(|p| p.split_once('=').filter(|(n, _)| *n == name).map(|(_, v)| v))
}

/// The field of the request's field selector and a test of that field's value, when it selects
/// by one of `fields` alone; `None` otherwise (no selector, another field, or more than one).
fn field_selector(request: &Request, fields: &[&str]) -> Option<(String, impl Fn(&str) -> bool)> {
    let selector = query_value(request, "fieldSelector")?.replace("%3D", "=").replace("%21", "!");
    let terms: Vec<(String, String, bool)> = selector
        .split(',')
        .map(|term| {
            let (field, value, equal) = match term.split_once("!=") {
                Some((f, v)) => (f, v, false),
                None => term.split_once("==").or_else(|| term.split_once('=')).map(|(f, v)| (f, v, true))?,
            };
            fields.contains(&field).then(|| (field.to_string(), value.to_string(), equal))
        })
        .collect::<Option<_>>()?;
    let field = terms.first()?.0.clone();
    if terms.iter().any(|(f, _, _)| *f != field) {
        return None;
    }
    Some((field, move |actual: &str| terms.iter().all(|(_, value, equal)| (actual == value) == *equal)))
}

/// The string at the dotted `field` (`spec.color`) of `object` (empty when absent).
fn string_at<'a>(object: &'a Value, field: &str) -> &'a str {
    field.split('.').fold(object, |at, name| &at[name]).as_str().unwrap_or_default()
}

/// `value` with every `managedFields` (at any depth) as kube-apiserver 1.20 would record it for
/// the same writes, minus the status: the entries of one manager, operation and apiVersion merged
/// (1.20 has no `subresource` to tell them apart), their status fields left out, empty ones
/// dropped, sorted.
fn managed_fields_without_status(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v =
                        if k == "managedFields" { merged_without_status(v) } else { managed_fields_without_status(v) };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(managed_fields_without_status).collect()),
        other => other.clone(),
    }
}

fn merged_without_status(entries: &Value) -> Value {
    let mut merged: std::collections::BTreeMap<(String, String, String), Value> = Default::default();
    for entry in entries.as_array().into_iter().flatten() {
        let key = |field: &str| entry[field].as_str().unwrap_or_default().to_string();
        let slot = merged.entry((key("manager"), key("operation"), key("apiVersion"))).or_insert_with(|| {
            let mut first = entry.clone();
            if let Some(map) = first.as_object_mut() {
                map.remove("subresource");
                map.insert("fieldsV1".into(), Value::Object(Default::default()));
            }
            first
        });
        union_into(&mut slot["fieldsV1"], &entry["fieldsV1"]);
    }
    let entries = merged.into_values().filter_map(|mut entry| {
        entry["fieldsV1"].as_object_mut()?.remove("f:status");
        entry["fieldsV1"].as_object().filter(|f| !f.is_empty())?;
        Some(entry)
    });
    Value::Array(entries.collect())
}

/// Whether the managedFields entries `ours` and `theirs` are the same but for their spec fields
/// (the entries compared by manager, operation and apiVersion, in order; an entry of spec
/// fields alone, which 1.20 makes for a status writer that sent only spec fields, left out).
fn same_but_for_spec(ours: &Value, theirs: &Value) -> bool {
    let without_spec = |entries: &Value| -> Vec<Value> {
        let entries = entries.as_array().cloned().unwrap_or_default();
        entries
            .into_iter()
            .filter_map(|mut entry| {
                let fields = member_mut(&mut entry, &["fieldsV1"]).and_then(Value::as_object_mut)?;
                fields.remove("f:spec");
                (!fields.is_empty()).then_some(entry)
            })
            .collect()
    };
    ours.is_array() && without_spec(ours) == without_spec(theirs)
}

/// `value` with each object's managedFields (at any depth) recorded as structured-merge-diff
/// v4.0.2 (Kubernetes 1.20) records them: without the leaves (`{}`) whose field in the object is
/// itself an object, that is an empty map recorded as owned; entries left empty are dropped.
fn without_leaves_of_maps(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out: serde_json::Map<String, Value> =
                map.iter().map(|(k, v)| (k.clone(), without_leaves_of_maps(v))).collect();
            if let Some(entries) = map.get("metadata").and_then(|m| m.get("managedFields")).and_then(Value::as_array) {
                let entries = entries.iter().filter_map(|entry| {
                    let mut entry = entry.clone();
                    let fields = entry.get_mut("fieldsV1")?;
                    prune_leaves_of_maps(fields, value);
                    fields.as_object().filter(|f| !f.is_empty())?;
                    Some(entry)
                });
                out["metadata"]["managedFields"] = Value::Array(entries.collect());
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(without_leaves_of_maps).collect()),
        other => other.clone(),
    }
}

/// Removes from the field set `fields` (of the object `object`) every `f:` leaf whose field is an
/// object, and every `f:` member left empty by that.
fn prune_leaves_of_maps(fields: &mut Value, object: &Value) {
    let Some(members) = fields.as_object_mut() else { return };
    members.retain(|key, set| {
        let Some(field) = key.strip_prefix("f:").and_then(|name| object.get(name)) else { return true };
        let was_leaf = set.as_object().is_some_and(|s| s.is_empty());
        if was_leaf {
            return !field.is_object();
        }
        prune_leaves_of_maps(set, field);
        set.as_object().is_none_or(|s| !s.is_empty())
    });
}

/// Adds the field set `from` to `into`.
fn union_into(into: &mut Value, from: &Value) {
    let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) else { return };
    for (key, value) in from {
        union_into(into.entry(key.clone()).or_insert_with(|| Value::Object(Default::default())), value);
    }
}

/// Whether each managedFields entry of `value` (at any depth) naming a subresource names the
/// status and records status and metadata fields only.
fn subresources_only_of_status(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().all(|(k, v)| {
            if k != "managedFields" {
                return subresources_only_of_status(v);
            }
            // A status write changes the status, and may change the metadata (labels, finalizers).
            v.as_array().into_iter().flatten().filter(|e| e.get("subresource").is_some()).all(|e| {
                e["subresource"] == "status"
                    && e["fieldsV1"].as_object().is_some_and(|f| f.keys().all(|k| k == "f:status" || k == "f:metadata"))
            })
        }),
        Value::Array(items) => items.iter().all(subresources_only_of_status),
        _ => true,
    }
}

/// The metadata fields kube-apiserver 1.20 leaves out of an object read with `export=true`.
const EXPORT_STRIPS: [&str; 4] = ["creationTimestamp", "namespace", "resourceVersion", "uid"];

/// kube-apiserver 1.20's 500s for a client's mistake (a phrase of its message), and the codes
/// the tested server answers the same mistake with.
const CLIENT_MISTAKES_1_20_FAILS: &[(&str, &[u16])] = &[
    // resourceVersion=bogus or -1 on a read; an update carrying resourceVersion "bogus" (ours:
    // the precondition cannot hold, 409; or the patched object is of another type first, 422).
    ("strconv.ParseUint: parsing", &[400, 409, 422]),
    ("resourceVersion should not be set on objects to be created", &[400]),
    // A create without apiVersion (ours: 400), a patch that empties it (ours: the patcher's 422
    // for a result of another type).
    ("Object 'apiVersion' is missing in", &[400, 422]),
    ("Invalid JSON Patch", &[400]),
    ("couldn't get version/kind; json parse error", &[400]),
    ("is registered for version", &[400]),
    // An apply whose values do not match the schema (ours: 400 or 422 as a write of that body,
    // 409 when its conflicts come first) or that declares no type.
    ("failed to create typed patch object", &[400, 409, 422]),
    // A list's representation asked of one object (a GET of an object accepting only
    // PartialObjectMetadataList): ours is the 406 of a representation it cannot give.
    ("content is not a list", &[406]),
];

pub const ON_PURPOSE: &[Allowed] = &[
    Allowed {
        name: "the order of a list served from the watch cache",
        seen_in: LLAMAS,
        corpus: 6,
        per_thousand: 0,
        reason: "kube-apiserver 1.20 serves a list with resourceVersion=0 or NotOlderThan from its watch cache in no order; current Kubernetes' B-tree watch cache (1.32), like etcd and the tested server, in key order.",
        applies: |_, request, tested, reference| {
            has_param(request, "resourceVersion") && same_items_in_another_order(tested, reference)
        },
    },
    Allowed {
        name: "the order of a watch's initial ADDED events",
        seen_in: LLAMAS,
        corpus: 6,
        per_thousand: 5,
        reason: "A watch without a resourceVersion starts with an ADDED event per object, in no promised order: the kube-apiserver's watch cache sends them in its own; the tested server in key order.",
        applies: |_, request, tested, reference| same_events_in_another_order(request, tested, reference),
    },
    Allowed {
        name: "the wording of an error message (code, reason, details and causes equal)",
        seen_in: LLAMAS,
        corpus: 80,
        per_thousand: 92,
        reason: "Parse errors name their cause in Go's words in the reference (`strconv.ParseInt: parsing \"x\": invalid syntax`, json-iterator's byte offsets, `unable to parse requirement: found ''`); the tested server says the same in its own. Clients act on the code, reason and causes' fields, never on this text.",
        applies: |_, _, tested, reference| only_wording(tested, reference),
    },
    Allowed {
        name: "Warning headers for unknown fields",
        seen_in: LLAMAS,
        corpus: 7,
        per_thousand: 1,
        reason: "Kubernetes 1.27 made fieldValidation=Warn the default: unknown and duplicate fields are dropped with a Warning header. 1.20 drops them silently.",
        applies: |_, _, tested, reference| farm_warns_of_unknown_fields_only(tested, reference),
    },
    Allowed {
        name: "fieldValidation=Strict: our 400 strict decoding error where 1.20 ignores the parameter and drops the unknown fields",
        seen_in: LLAMAS,
        corpus: 2,
        per_thousand: 1,
        reason: "fieldValidation (Ignore, Warn, Strict) is Kubernetes 1.25 (beta) / 1.27 (GA): under Strict an unknown field is a 400 `strict decoding error`, when the body is decoded, before validation and before the object is looked up. 1.20 ignores the parameter, drops the field and writes (the suite's Strict writes are dry runs), or answers what the later checks find: validation (422), a name already taken (409 AlreadyExists, found on Regions, seed 655981761648979599), a stale resourceVersion (409 Conflict), a missing object (404).",
        applies: |s, request, tested, reference| {
            let written = (200..300).contains(&reference.code) && reference.body["kind"] == s.kind;
            let later = [(422, "Invalid"), (409, "AlreadyExists"), (409, "Conflict"), (404, "NotFound")];
            query_value(request, "fieldValidation") == Some("Strict")
                && refused_as(tested, 400, "BadRequest", "strict decoding error: unknown field")
                && (written || later.iter().any(|&(code, why)| refused_as(reference, code, why, "")))
        },
    },
    Allowed {
        name: "an unsupported fieldValidation value: our 422 naming it where 1.20 ignores the parameter",
        seen_in: LLAMAS,
        corpus: 3,
        per_thousand: 6,
        reason: "Since Kubernetes 1.25 a fieldValidation other than Ignore, Warn or Strict is an Invalid options object (422, one FieldValueNotSupported cause on `fieldValidation`), before the body is read; 1.20 ignores the parameter and answers the request as it would without it.",
        applies: |_, request, tested, reference| {
            let value = query_value(request, "fieldValidation");
            let ours = causes_without_messages(tested, |c| c["field"] == "fieldValidation");
            let refused = causes_without_messages(tested, |c| c["field"] != "fieldValidation");
            value.is_some_and(|v| !["Ignore", "Warn", "Strict"].contains(&v))
                && tested.code == 422
                && refused == [serde_json::json!({"field": "fieldValidation", "reason": "FieldValueNotSupported"})]
                // The options' other mistakes, refused alike; or none, and the reference answered
                // the request as it would without the parameter.
                && if reference.code == 422 && reason(reference) == reason(tested) && reference.body["details"]["kind"] == tested.body["details"]["kind"] {
                    ours == causes_without_messages(reference, |_| false)
                } else {
                    ours.is_empty()
                }
        },
    },
    Allowed {
        name: "sendInitialEvents: our watch list (initial ADDED events, then the initial-events-end bookmark) or our 422 for its misuse, where 1.20 ignores the parameter",
        seen_in: LLAMAS,
        corpus: 3,
        per_thousand: 0,
        reason: "Watch lists (sendInitialEvents=true with resourceVersionMatch=NotOlderThan and bookmarks) are Kubernetes 1.27 (alpha); sendInitialEvents on a list, or on a watch without those, is a 422 there. 1.20 ignores the parameter, so it lists or watches as without it, and refuses resourceVersionMatch on a watch.",
        applies: |s, request, tested, reference| {
            if query_value(request, "sendInitialEvents").is_none() {
                return false;
            }
            let forbidden_causes = |fields: &[&str]| {
                let causes = causes_of(tested);
                !causes.is_empty()
                    && causes.iter().all(|c| {
                        c["reason"] == "FieldValueForbidden" && c["field"].as_str().is_some_and(|f| fields.contains(&f))
                    })
            };
            let misused = tested.code == 422
                && reference.code == 200
                && forbidden_causes(&["sendInitialEvents", "resourceVersionMatch", "allowWatchBookmarks"]);
            let events = tested.body.as_array().cloned().unwrap_or_default();
            let watch_list = request.is_watch()
                && tested.code == 200
                && events.split_last().is_some_and(|(last, initial)| {
                    last["type"] == "BOOKMARK"
                        && last["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"
                        && initial.iter().all(|e| e["type"] == "ADDED" && e["object"]["kind"] == s.kind)
                })
                && reference.code == 422
                && causes_of(reference).iter().all(|c| c["field"] == "resourceVersionMatch");
            misused || watch_list
        },
    },
    Allowed {
        name: "a field selector on a selectable field of the spec: our list or watch of the objects that match it, where 1.20 refuses the field (400)",
        seen_in: LLAMAS,
        corpus: 2,
        per_thousand: 0,
        reason: "CRD selectableFields are Kubernetes 1.30 (1.32 GA); the tested server declares spec fields selectable (farm-apiserver's Llamas: spec.color), which 1.20 cannot, so it refuses the selector with 400 `field label not supported`.",
        applies: |s, request, tested, reference| {
            let Some((field, wanted)) = field_selector(request, s.selectable_fields) else { return false };
            let objects: Vec<Value> = if request.is_watch() {
                tested.body.as_array().into_iter().flatten().map(|e| e["object"].clone()).collect()
            } else {
                tested.body["items"].as_array().cloned().unwrap_or_default()
            };
            tested.code == 200
                && objects.iter().all(|o| o["kind"] == s.kind && wanted(string_at(o, &field)))
                && reference.code == 400
                && message(reference) == format!("field label not supported: {field}")
        },
    },
    Allowed {
        name: "managedFields: our status fields recorded only by status writes (with `subresource: status`), where 1.20 also records them for writes of the object",
        seen_in: LLAMAS,
        corpus: 37,
        per_thousand: 4,
        reason: "Kubernetes 1.22 (reset fields) stopped recording in managedFields what a write of the main resource dropped from the status, and keyed the entries of status writes by `subresource: status`; 1.20 does neither. Compared: everything else, and managedFields with the entries of one manager, operation and version merged and their status fields left out.",
        applies: |_, _, tested, reference| {
            tested.code == reference.code
                && managed_fields_without_status(&tested.body) == managed_fields_without_status(&reference.body)
                && subresources_only_of_status(&tested.body)
        },
    },
    Allowed {
        name: "managedFields after a write of /status that carried spec fields: the status writer's spec fields as 1.20 records them (from the object before its spec is reset)",
        seen_in: LLAMAS,
        corpus: 2,
        per_thousand: 1,
        reason: "A write of /status drops what it carries of the spec. Since Kubernetes 1.22 (reset fields) the field manager sees the object after the spec is reset; 1.20 sees it before, so it records spec fields the write set, and forgets spec fields the write removed, for that writer. Compared: everything else, and managedFields as in the entry above but for their spec fields.",
        applies: |_, request, tested, reference| {
            let (ours, theirs) =
                (managed_fields_without_status(&tested.body), managed_fields_without_status(&reference.body));
            request.path.ends_with("/status")
                && request.body_text().contains("spec")
                && tested.code == reference.code
                && subresources_only_of_status(&tested.body)
                && without_managed_fields(&tested.body) == without_managed_fields(&reference.body)
                && same_but_for_spec(&ours["metadata"]["managedFields"], &theirs["metadata"]["managedFields"])
        },
    },
    Allowed {
        name: "an apply of the status carrying other fields: our 200 object where 1.20 answers 409 over those other fields",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 0,
        reason: "Since Kubernetes 1.22 (reset fields) the fields a write of /status cannot change are dropped before the apply, so they conflict with no one; 1.20 reports a conflict over them.",
        applies: |s, request, tested, reference| {
            let conflicts = causes_of(reference);
            request.path.ends_with("/status")
                && request.has_header("content-type", "apply-patch")
                && tested.code == 200
                && tested.body["kind"] == s.kind
                && reference.code == 409
                && !conflicts.is_empty()
                && conflicts.iter().all(|c| {
                    c["reason"] == "FieldManagerConflict"
                        && c["field"].as_str().is_some_and(|f| !f.starts_with(".status"))
                })
        },
    },
    Allowed {
        name: "Content-Type of Table and metadata-only answers",
        seen_in: LLAMAS,
        corpus: 21,
        per_thousand: 0,
        reason: "Current Kubernetes names what it sent in the Content-Type (`application/json;as=Table;v=v1;g=meta.k8s.io`); 1.20 wrote `application/json`.",
        applies: |_, _, tested, reference| same_but_for_the_content_type(tested, reference),
    },
    Allowed {
        name: "a Table column of a list: our items joined by commas, where a CRD's printer column prints the list as JSON",
        seen_in: &["regions"],
        corpus: 2,
        per_thousand: 0,
        reason: "A CRD's printer column of a list (`jsonPath: .spec.zones`) prints the list as JSON (`[\"west-a\",\"west-b\"]`); a server's own columns can say it as kubectl's built-in columns do (`west-a,west-b`), which the example's Regions do. Compared: everything else, the Content-Type as the entry above says.",
        applies: |_, _, tested, reference| {
            let joined = Answer { body: with_lists_joined(&reference.body), ..reference.clone() };
            tested.body["kind"] == "Table"
                && joined.body != reference.body
                && (*tested == joined || same_but_for_the_content_type(tested, &joined))
        },
    },
    Allowed {
        name: "paths and methods no resource serves: our 404 or 405 Status where a CRD's group answers text, a discovery document, or treats the method as another verb",
        seen_in: LLAMAS,
        corpus: 36,
        per_thousand: 0,
        reason: "A CRD's group answers an unknown path with the text `404 page not found`, serves its discovery document to any method, treats a POST to an object or a PUT to a collection as a create or an update, and ignores path segments after a subresource. Built-in groups (and servers on k8s.io/apiserver, whose routes are go-restful's) answer a 404 NotFound or 405 MethodNotAllowed Status, which the tested server does.",
        applies: |s, request, tested, reference| {
            let generic = |code: u16, why: &str, text: &str| {
                tested.code == code
                    && reason(tested) == why
                    && message(tested) == text
                    && tested.body["details"].as_object().is_some_and(|d| d.is_empty())
            };
            let not_found = generic(404, "NotFound", "the server could not find the requested resource");
            let not_allowed =
                generic(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
            let text_404 = reference.code == 404 && reference.body == "404 page not found";
            let discovery = reference.code == 200 && reference.body["kind"] == "APIResourceList";
            let named = s.is_object_path(&request.path);
            let collection = s.is_collection_path(&request.path);
            let collection_not_allowed = reference.code == 405
                && reason(reference) == "MethodNotAllowed"
                && reference.body["details"]["kind"] == s.plural;
            let other_verb = (request.method == reqwest::Method::POST && named)
                || (request.method == reqwest::Method::PUT && collection);
            let resource_not_found = reference.code == 404
                && reason(reference) == "NotFound"
                && reference.body["details"]["kind"] == s.plural;
            (not_found
                && (text_404 || resource_not_found || (reference.code == 200 && request.path.contains("/status/"))))
                || (not_allowed
                    && (text_404 || discovery || collection_not_allowed || (other_verb && reference.code < 500)))
        },
    },
    Allowed {
        name: "protobuf: our 415 for a protobuf body where 1.20 reads it as protobuf (400), and our 406 written as JSON where 1.20 writes it as protobuf",
        seen_in: LLAMAS,
        corpus: 6,
        per_thousand: 0,
        reason: "The tested server reads and writes JSON and YAML only (a client offering protobuf also offers JSON: kubectl, client-go); a CRD reads a protobuf body (and refuses it, 400, as custom resources have no protobuf form) and answers an Accept of protobuf alone with a 406 Status in protobuf.",
        applies: |_, request, tested, reference| {
            let body_in_protobuf = request.has_header("content-type", "protobuf")
                && tested.code == 415
                && reason(tested) == "UnsupportedMediaType"
                && reference.code == 400
                && message(reference).contains("does not appear to be a protobuf message");
            let accept_protobuf_only =
                request.headers.iter().any(|(n, v)| n == "accept" && v == "application/vnd.kubernetes.protobuf")
                    && tested.code == 406
                    && reason(tested) == "NotAcceptable"
                    && reference.code == 406
                    && reference.content_type == "application/vnd.kubernetes.protobuf";
            body_in_protobuf || accept_protobuf_only
        },
    },
    Allowed {
        name: "a kind or apiVersion other than the resource's",
        seen_in: LLAMAS,
        corpus: 7,
        per_thousand: 4,
        reason: "A built-in resource's decoder refuses a body of another kind or version as BadRequest (`the kind in the data (Alpaca) does not match the expected kind (Llama)`) before it looks the object up, and its patcher refuses such a patched object as an Invalid `patch` (422), as the tested server does. A CRD decodes any kind: it first answers what else is wrong (404, a missing resourceVersion), then refuses the kind as Invalid (422, `kind: Invalid value`), and a write of its status keeps the stored kind.",
        applies: |_, request, tested, reference| {
            let refused_type =
                |text: &str| text.contains("does not match the expected") || text.contains("is missing in");
            let by_decoder = tested.code == 400 && refused_type(message(tested));
            let cause = &tested.body["details"]["causes"][0];
            let by_patcher =
                tested.code == 422 && cause["field"] == "patch" && cause["message"].as_str().is_some_and(refused_type);
            (by_decoder || by_patcher)
                && ((400..500).contains(&reference.code) || (request.path.ends_with("/status") && reference.code < 300))
        },
    },
    Allowed {
        name: "an empty PartialObjectMetadataList",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 0,
        reason: "The kube-apiserver writes the nil slice of an empty metadata-only list as `\"items\": null` (every version so far); the tested server writes `[]`, as for every other list. client-go and kube-rs read both as empty.",
        applies: |_, _, tested, reference| {
            let with_empty_items = |answer: &Answer| {
                let mut body = answer.body.clone();
                if let Some(map) = body.as_object_mut() {
                    map.insert("items".into(), Value::Array(Vec::new()));
                }
                body
            };
            tested.body["kind"] == "PartialObjectMetadataList"
                && reference.body["items"].is_null()
                && with_empty_items(tested) == with_empty_items(reference)
        },
    },
    Allowed {
        name: "a limit with resourceVersion=0",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 0,
        reason: "The kube-apiserver serves a list at resourceVersion=0 from its watch cache and ignores its limit there (which the API conventions allow); the tested server honours the limit and sends a continue token.",
        applies: |_, request, tested, reference| {
            let items = |answer: &Answer| answer.body["items"].as_array().cloned().unwrap_or_default();
            request.query.contains("resourceVersion=0")
                && has_param(request, "limit")
                && tested.code == 200
                && reference.code == 200
                && items(tested).len() < items(reference).len()
                && items(tested).iter().all(|item| items(reference).contains(item))
        },
    },
    Allowed {
        name: "a watch from a resourceVersion before the reference's window: its 410 Expired event where ours sends the events since",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 0,
        reason: "A watch from an old resourceVersion gets 410 Expired once it is older than the server's window of events: the kube-apiserver's watch cache starts when the CRD is established, the tested server's window holds the events since it started; both send 410 for what has left theirs.",
        applies: |s, request, tested, reference| {
            let expired = |answer: &Answer| answer.body[0]["object"]["code"] == 410;
            let namespace = request.path.split('/').skip_while(|s| *s != "namespaces").nth(1);
            let events_of_the_namespace = tested.body.as_array().is_some_and(|events| {
                events.iter().all(|e| {
                    ["ADDED", "MODIFIED", "DELETED"].contains(&e["type"].as_str().unwrap_or_default())
                        && e["object"]["kind"] == s.kind
                        && e["object"]["metadata"]["namespace"].as_str() == namespace
                })
            });
            request.is_watch()
                && tested.code == 200
                && reference.code == 200
                && expired(reference)
                && reference.body.as_array().is_some_and(|events| events.len() == 1)
                && events_of_the_namespace
        },
    },
    Allowed {
        name: "resourceVersionMatch=Exact at a future resourceVersion: our 504 Too large resource version where 1.20 passes etcd's error on as a 500",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 0,
        reason: "Both sides fail the read (the only difference of the tables where ours is a 5xx, allowed only because the reference's is too): kube-apiserver 1.20 passes etcd's `required revision is a future revision` on as a 500; the tested server answers it as the kube-apiserver answers every other read of a future resourceVersion (1.20 included), 504 Timeout `Too large resource version` with retryAfterSeconds 1.",
        applies: |_, request, tested, reference| {
            query_value(request, "resourceVersionMatch") == Some("Exact")
                && refused_as(tested, 504, "Timeout", "Timeout: Too large resource version: ")
                && tested.body["details"]["retryAfterSeconds"] == 1
                && reference.code == 500
                && message(reference).contains("required revision is a future revision")
        },
    },
    Allowed {
        name: "an empty string where the schema wants a string",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 1,
        reason: "kube-apiserver 1.20 refuses an empty string (a condition's `message`, a `color`) as `null` (`must be of type string: \"null\"`), though the schema only asks for a string (and metav1.Condition says a message may be empty); later versions accept it, as the tested server does, and then answer what comes after validation (a create of a name already taken: 409 AlreadyExists). Found on Regions too (seed 11487498181896365225).",
        applies: |s, request, tested, reference| {
            let empty_as_null = |cause: &Value| {
                cause["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Invalid value: \"null\": ") && m.contains("must be of type string"))
            };
            let causes = |answer: &Answer, skip: bool| causes_without_messages(answer, |c| skip && empty_as_null(c));
            // An empty string in the body (a field's value, or a list's item). When it was all
            // the reference refused, our write succeeded, or our create met what the
            // kube-apiserver checks after validation (the name is taken, 409); otherwise we
            // refused the rest alike.
            let taken = request.method == reqwest::Method::POST && refused_as(tested, 409, "AlreadyExists", "");
            request.body_text().contains(r#""""#)
                && reference.code == 422
                && causes(reference, true).len() < causes(reference, false).len()
                && if causes(reference, true).is_empty() {
                    ((200..300).contains(&tested.code) && tested.body["kind"] == s.kind) || taken
                } else {
                    tested.code == 422 && causes(reference, true) == causes(tested, false)
                }
        },
    },
    Allowed {
        name: "the same set of causes, in another order or repeated",
        seen_in: LLAMAS,
        corpus: 6,
        per_thousand: 1,
        reason: "A CRD's schema validator walks an object's properties, and server-side apply its managers' conflicts, in Go's map order, which is random; the tested server lists them in the schema's order and by manager. The causes (and the message listing them) are the same set. A CRD's update also validates the object's metadata in more than one place (its strategy, its schema validator, the generic store), each adding the same cause; a built-in resource, like the tested server, lists each cause once.",
        applies: |_, _, tested, reference| {
            // The set of causes (repeated ones counted once), with or without their messages.
            let causes = |answer: &Answer, with_messages: bool| -> Vec<String> {
                let all = if with_messages { causes_of(answer) } else { causes_without_messages(answer, |_| false) };
                let mut set: Vec<String> = all.iter().map(Value::to_string).collect();
                set.sort();
                set.dedup();
                set
            };
            tested.code == reference.code
                && tested.code >= 400
                && !causes(tested, true).is_empty()
                && without_messages_or_causes(&tested.body) == without_messages_or_causes(&reference.body)
                && (causes(tested, true) == causes(reference, true)
                    || causes(tested, false) == causes(reference, false))
        },
    },
    Allowed {
        name: "an apply the reference cannot type: our 200/201 object (unknown fields dropped with a Warning, the status not applied) where 1.20 answers 500",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 2,
        reason: "kube-apiserver 1.20 answers an apply carrying a field its schema does not declare, or a status that is not an object, with a 500 (`failed to create typed patch object`). The tested server applies it as its other writes take such a body: an unknown field is dropped with a Warning (fieldValidation=Warn, Kubernetes 1.27) and the status, which a write of the object resets (Kubernetes 1.22), is not applied.",
        applies: |s, request, tested, reference| {
            apply_failed_on_reference(request, reference, "failed to create typed patch object")
                && (tested.code == 200 || tested.code == 201)
                && tested.body["kind"] == s.kind
                && warnings_of(tested).iter().all(|w| w.contains("unknown field"))
        },
    },
    Allowed {
        name: "the order of verbs in discovery",
        seen_in: LLAMAS,
        corpus: 2,
        per_thousand: 0,
        reason: "k8s.io/apiserver lists a resource's verbs sorted (as for every built-in resource); the CRD handler lists them in its own order.",
        applies: |_, _, tested, reference| {
            let sorted_verbs = |answer: &Answer| {
                let mut body = answer.body.clone();
                for resource in
                    member_mut(&mut body, &["resources"]).and_then(Value::as_array_mut).into_iter().flatten()
                {
                    if let Some(verbs) = member_mut(resource, &["verbs"]).and_then(Value::as_array_mut) {
                        verbs.sort_by_key(Value::to_string);
                    }
                }
                body
            };
            tested.body["kind"] == "APIResourceList"
                && tested.code == reference.code
                && sorted_verbs(tested) == sorted_verbs(reference)
        },
    },
    Allowed {
        name: "a client's mistake that 1.20 answers with 500: our 4xx, by the table of its 500s",
        seen_in: LLAMAS,
        corpus: 17,
        per_thousand: 15,
        reason: "kube-apiserver 1.20 answers some malformed requests (an unparsable resourceVersion, a list's representation asked of one object, a merge patch that is `null`, an apply that does not match the schema, a resourceVersion on a create) with a 500; the tested server answers the client's mistake with the 4xx of `CLIENT_MISTAKES_1_20_FAILS`, each listed with the reference's message.",
        applies: |_, _, tested, reference| {
            reference.code == 500
                && CLIENT_MISTAKES_1_20_FAILS.iter().any(|(theirs, codes)| {
                    message(reference).contains(theirs) && codes.contains(&tested.code) && !reason(tested).is_empty()
                })
        },
    },
    Allowed {
        name: "a full last page without a continue token",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 3,
        reason: "The kube-apiserver fills a page from etcd and sends a continue token whenever keys remain after it, even when none of them matches the selector (the next page is then empty); the tested server sends none when nothing after the page matches. Clients follow a token until there is none, so both end the same.",
        applies: |_, request, tested, reference| {
            let without_continue = |answer: &Answer| {
                let mut body = answer.body.clone();
                if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.remove("continue");
                    metadata.remove("remainingItemCount");
                }
                body
            };
            has_param(request, "limit")
                && tested.body["metadata"].get("continue").is_none()
                && reference.body["metadata"].get("continue").is_some()
                && without_continue(tested) == without_continue(reference)
        },
    },
    Allowed {
        name: "DELETE: our answer the deleted object where a CRD answers a Success Status naming it",
        seen_in: LLAMAS,
        corpus: 11,
        per_thousand: 32,
        reason: "The tested server answers a delete with the deleted object and the resourceVersion of its deletion, as the kube-apiserver does for Pods and Services (ReturnDeletedObject), so a client can match its delete with the watch's DELETED event; for a CRD (and ConfigMaps) it answers a `Success` Status. kubectl, client-go and kube-rs (`Either<K, Status>`) accept both.",
        applies: |s, request, tested, reference| {
            request.method == reqwest::Method::DELETE
                && tested.code == reference.code
                && tested.body["kind"] == s.kind
                && reference.body["kind"] == "Status"
                && reference.body["status"] == "Success"
                && reference.body["details"]["kind"] == s.plural
                && reference.body["details"]["name"] == tested.body["metadata"]["name"]
        },
    },
    Allowed {
        name: "managedFields: an applied or written empty map (`spec: {}`) recorded as owned, where 1.20 records nothing for it",
        seen_in: LLAMAS,
        corpus: 2,
        per_thousand: 2,
        reason: "structured-merge-diff v4.0.3 (Kubernetes 1.21, kubernetes-sigs/structured-merge-diff 2e74c28) records a field whose value is an empty map in the writer's field set (`f:spec: {}`), so that removing it from an apply removes the map; v4.0.2, in 1.20, records nothing for it. Compared: everything else, and managedFields with each leaf that stands for an object of the answer (an empty map) left out, entries left empty dropped.",
        applies: |_, _, tested, reference| {
            tested.code == reference.code
                && tested.body != reference.body
                && without_leaves_of_maps(&tested.body) == without_leaves_of_maps(&reference.body)
        },
    },
    Allowed {
        name: "managedFields kept through a write carrying an untypable status",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 2,
        reason: "kube-apiserver 1.20 clears every managedFields entry of an object when a write carries a value its schema cannot type (a status that is not an object, which the write drops anyway); the tested server keeps them, as later versions do.",
        applies: |_, _, tested, reference| {
            reference.body["metadata"].get("managedFields").is_none()
                && tested.body["metadata"].get("managedFields").is_some()
                && without_managed_fields(&tested.body) == without_managed_fields(&reference.body)
        },
    },
    Allowed {
        name: "export=true: our object with its creationTimestamp, namespace, resourceVersion and uid where 1.20 strips them",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 0,
        reason: "The `export` parameter was removed in Kubernetes 1.21 (deprecated since 1.14) and is ignored since; 1.20 still strips the fields of `EXPORT_STRIPS` for it.",
        applies: |_, request, tested, reference| {
            let mut stripped = tested.body.clone();
            if let Some(metadata) = member_mut(&mut stripped, &["metadata"]).and_then(Value::as_object_mut) {
                for field in EXPORT_STRIPS {
                    metadata.remove(field);
                }
            }
            has_param(request, "export")
                && tested.code == reference.code
                && tested.body["metadata"].get("creationTimestamp").is_some()
                && stripped == reference.body
        },
    },
    Allowed {
        name: "null for a field",
        seen_in: LLAMAS,
        corpus: 2,
        per_thousand: 1,
        reason: "A built-in resource reads `\"color\": null` as an unset field (a required one is then missing); a 1.20 CRD refuses a null for a field its schema does not make nullable as being of type null.",
        applies: |s, _, tested, reference| {
            let causes =
                |answer: &Answer, skip_nulls: bool| causes_without_messages(answer, |c| skip_nulls && refuses_null(c));
            let only_nulls_refused = (200..300).contains(&tested.code)
                && tested.body["kind"] == s.kind
                && reference.code == 422
                && !causes_of(reference).is_empty()
                && causes_of(reference).iter().all(refuses_null);
            let other_causes_equal = tested.code == 422
                && reference.code == 422
                && causes(reference, false).len() > causes(tested, false).len()
                && causes(reference, true) == causes(tested, false);
            // A required field sent as null: missing to the tested server, of type null to the CRD.
            let field_reason = |c: &Value| (c["field"].clone(), c["reason"].clone());
            // (Each cause once: 1.20 may repeat the metadata's, as the entry on the order of causes says.)
            // In the order of their fields: 1.20 lists a CRD's causes in Go's map order.
            let by_field = |mut causes: Vec<Value>| {
                causes.sort_by_key(|c| c["field"].to_string());
                causes
            };
            let (ours, theirs) = (by_field(distinct_causes(tested)), by_field(distinct_causes(reference)));
            let required_not_null = tested.code == 422
                && reference.code == 422
                && ours.len() == theirs.len()
                && ours.iter().zip(&theirs).all(|(f, r)| {
                    field_reason(f) == field_reason(r)
                        || (f["field"] == r["field"] && f["reason"] == "FieldValueRequired" && refuses_null(r))
                });
            only_nulls_refused || other_causes_equal || required_not_null
        },
    },
    Allowed {
        name: "integers beyond 2^53 in a number field: our float64 value where a CRD keeps the int64",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 0,
        reason: "The schema says `number` (a double): the tested server keeps what a float64 keeps, as a built-in float64 field does, and writes it as Go's encoding/json writes that float64 (2^63-1 reads back `9223372036854776000`, its shortest digits); a CRD keeps a JSON integer as an int64 exactly.",
        applies: |_, _, tested, reference| {
            let ours = text(tested);
            ours.contains("9223372036854776000")
                && tested.code == reference.code
                && ours.replace("9223372036854776000", "N") == text(reference).replace("9223372036854775807", "N")
        },
    },
    Allowed {
        name: "an integer beyond int64 in an integer field: our 400 (or the patcher's 422 on `patch`) as a built-in resource's decoder answers, where a CRD reads it as a number and refuses its type (422)",
        seen_in: &["llamas", "regions"],
        corpus: 1,
        per_thousand: 6,
        reason: "A built-in resource decodes an int64 field as an int64, and beyond its range the decoder refuses the body before validation: 400 BadRequest `Pod in version \"v1\" cannot be handled as a Pod: … ReadInt64: overflow` (the reference's own answer for a Pod's activeDeadlineSeconds); for a patch whose result does not decode, the patcher's 422 Invalid with one cause on `patch`. A CRD reads a JSON integer beyond int64 as a float, which its schema then refuses as `must be of type integer: \"number\"` (422). The tested server decodes as a built-in resource does.",
        applies: |_, _, tested, reference| {
            let by_decoder =
                refused_as(tested, 400, "BadRequest", "") && message(tested).contains(" cannot be handled as a ");
            let cause = &tested.body["details"]["causes"][0];
            let by_patcher = tested.code == 422
                && causes_of(tested).len() == 1
                && cause["field"] == "patch"
                && cause["message"].as_str().is_some_and(|m| m.contains(" cannot be handled as a "));
            let refusal = if by_decoder { message(tested) } else { cause["message"].as_str().unwrap_or_default() };
            let overflow = |cause: &Value| {
                cause["message"].as_str().is_some_and(|m| m.contains("must be of type integer: \"number\""))
                    && cause["field"]
                        .as_str()
                        .is_some_and(|f| refusal.contains(&format!("{f}: invalid value: integer")))
            };
            (by_decoder || by_patcher) && reference.code == 422 && causes_of(reference).iter().any(overflow)
        },
    },
    Allowed {
        name: "an item of a list named by its index (`spec.zones[0]`), where 1.20 names the list",
        seen_in: &["regions"],
        corpus: 1,
        per_thousand: 6,
        reason: "Since Kubernetes 1.24 (kube-openapi d5a90d6 and 4c65bda, \"Set path for all specific validators\" and \"Use JSONPath syntax for path indices\") a CRD's schema validator names an item of a list by its index; 1.20's names the list (`spec.zones in body must be of type string`). Compared: everything but the messages, and the causes as sets with the indices left out of our fields.",
        applies: |_, _, tested, reference| {
            let causes = |answer: &Answer, without_indices: bool| {
                let mut causes: Vec<String> = causes_without_messages(answer, |_| false)
                    .into_iter()
                    .map(|mut cause| {
                        if let Some(field) = cause["field"].as_str().filter(|_| without_indices) {
                            cause["field"] = Value::String(without_list_indices(field));
                        }
                        cause.to_string()
                    })
                    .collect();
                causes.sort();
                causes
            };
            tested.code == 422
                && reference.code == 422
                && causes(tested, false) != causes(reference, false)
                && causes(tested, true) == causes(reference, false)
                && without_messages_or_causes(&tested.body) == without_messages_or_causes(&reference.body)
        },
    },
    Allowed {
        name: "an apply whose labels carry a null: our 422 for the invalid label keys, where a 1.20 CRD without conversion skips the labels' validation and stores them",
        seen_in: &["regions"],
        corpus: 1,
        per_thousand: 6,
        reason: "A custom resource's metadata is validated from its unstructured form, whose labels read as no labels at all when one of them is not a string (a `null` in an applied configuration), so 1.20 stores invalid label keys as empty labels, or refuses only the body's other mistakes (with a conversion webhook the converted object's metadata is validated, as the entry on invalid labels through a webhook says). A built-in resource decodes the null as an empty value and validates the keys, as the tested server does.",
        applies: |_, request, tested, reference| {
            let applied: Value = serde_json::from_str(&request.body_text()).unwrap_or_default();
            let null_label = applied["metadata"]["labels"].as_object().is_some_and(|l| l.values().any(Value::is_null));
            let labels = |c: &Value| c["field"] == "metadata.labels";
            let ours_but_labels = causes_without_messages(tested, labels);
            // The other mistakes of the body refused alike; or none, and the reference wrote it.
            let rest_alike = if reference.code == 422 {
                ours_but_labels == causes_without_messages(reference, |_| false)
            } else {
                (200..300).contains(&reference.code) && ours_but_labels.is_empty()
            };
            request.has_header("content-type", "apply-patch")
                && null_label
                && tested.code == 422
                && causes_of(tested).iter().any(labels)
                && rest_alike
        },
    },
    Allowed {
        name: "server-side apply by a manager whose last apply was at another version: our write where 1.20 answers 500 `failed to prune fields`",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 10,
        reason: "structured-merge-diff prunes what an applier stopped sending at the version of its last apply, converting the merged object there; 1.20's field manager converts it without the webhook's conversion and fails on the fields of the other version (kubernetes/kubernetes#117260 and #117356 report the same step failing with webhooks in 1.27). The tested server converts as the resource does and prunes.",
        applies: |_, request, tested, reference| {
            apply_failed_on_reference(request, reference, "failed to prune fields") && (200..300).contains(&tested.code)
        },
    },
    Allowed {
        name: "an apply with an invalid label: our 422 where 1.20, converting by webhook, answers 500 with the same cause",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 5,
        reason: "1.20 converts an applied configuration through the CRD's conversion webhook and validates the converted object's metadata there, so an invalid label key fails as the webhook's 500 `returned invalid metadata` (the same CRD with `strategy: None` answers 422, as the tested server does, from validation).",
        applies: |_, request, tested, reference| {
            let cause = tested.body["details"]["causes"][0]["message"].as_str().unwrap_or("<none>");
            apply_failed_on_reference(request, reference, "conversion webhook for ")
                && tested.code == 422
                && message(reference).contains("returned invalid metadata: metadata.labels")
                && message(reference).ends_with(cause)
        },
    },
    Allowed {
        name: "an empty last-applied annotation: ours left empty by kubectl's server-side apply where 1.20 writes the configuration in it",
        seen_in: LLAMAS,
        corpus: 1,
        per_thousand: 0,
        reason: "Since Kubernetes 1.22 (\"Respect annotation size limit for SSA last-applied\") an empty kubectl.kubernetes.io/last-applied-configuration is how a user opts out of server-side applies keeping it current; 1.20 rewrote the annotation whenever it was present.",
        applies: |_, request, tested, reference| {
            let record = |answer: &Answer| answer.body["metadata"]["annotations"][LAST_APPLIED].clone();
            let without_record = |answer: &Answer| {
                let mut body = answer.body.clone();
                if let Some(annotations) =
                    member_mut(&mut body, &["metadata", "annotations"]).and_then(Value::as_object_mut)
                {
                    annotations.remove(LAST_APPLIED);
                }
                body
            };
            request.has_header("content-type", "apply-patch")
                && request.query.split('&').any(|p| p == "fieldManager=kubectl")
                && tested.code == reference.code
                && record(tested) == ""
                && record(reference).as_str().is_some_and(|r| serde_json::from_str::<Value>(r).is_ok())
                && without_record(tested) == without_record(reference)
        },
    },
];

/// Labels of hand-written requests whose difference is a defect still to fix (see the note of
/// each group).
const TO_FIX_LABELS: &[(&str, &[&str])] = &[];

/// Known defects that generated requests meet too, recognised by their answers.
pub const TO_FIX: &[Allowed] = &[];

/// The label groups of `TO_FIX_LABELS` none of whose requests differed in a run that
/// found `seen`: fixed, or now explained by an entry of [`ON_PURPOSE`]; to be removed.
pub fn no_longer_seen(seen: &std::collections::BTreeMap<&'static str, usize>) -> Vec<&'static str> {
    TO_FIX_LABELS.iter().map(|(name, _)| *name).filter(|name| !seen.contains_key(name)).collect()
}

/// Whether `request` and its answers show a known defect; its name.
pub fn to_fix(subject: &Subject, request: &Request, tested: &Answer, reference: &Answer) -> Option<&'static str> {
    let by_label = TO_FIX_LABELS.iter().find(|(_, labels)| labels.contains(&request.label.as_str()));
    by_label
        .map(|(name, _)| *name)
        .or_else(|| TO_FIX.iter().find(|a| (a.applies)(subject, request, tested, reference)).map(|a| a.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> Answer {
        let body = serde_json::json!({"kind": "Status", "code": code, "reason": reason, "message": message});
        Answer {
            code,
            content_type: "application/json".into(),
            content_encoding: String::new(),
            warnings: vec![],
            body,
        }
    }

    #[test]
    fn strict_decoding_is_allowed_where_1_20_answers_a_later_check_instead() {
        let request = Request::new("create", reqwest::Method::POST, "{gv}/widgets").query("fieldValidation=Strict");
        let ours = status(400, "BadRequest", "strict decoding error: unknown field \"spec.horns\"");
        let entry = ON_PURPOSE.iter().find(|e| e.name.starts_with("fieldValidation=Strict")).unwrap();
        let allowed = |reference: &Answer| (entry.applies)(&crate::subject::tests::WIDGETS, &request, &ours, reference);
        assert!(allowed(&status(422, "Invalid", "Widget \"w\" is invalid")));
        assert!(allowed(&status(409, "AlreadyExists", "widgets \"w\" already exists")));
        assert!(allowed(&status(404, "NotFound", "widgets \"w\" not found")));
        assert!(!allowed(&status(500, "InternalError", "")), "no check after decoding answers a 500");
        assert!(!allowed(&status(400, "BadRequest", "")), "1.20 read the same body");
        let without = Request { query: String::new(), ..request };
        assert!(!(entry.applies)(&crate::subject::tests::WIDGETS, &without, &ours, &status(422, "Invalid", "")));
    }

    #[test]
    fn list_indices_leave_field_paths() {
        assert_eq!(without_list_indices("spec.zones[0]"), "spec.zones");
        assert_eq!(without_list_indices("a[12].b[3].c"), "a.b.c");
        assert_eq!(without_list_indices("a[x].b[]"), "a[x].b[]");
        assert_eq!(without_list_indices("plain"), "plain");
    }
}
