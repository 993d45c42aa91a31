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

use crate::exchange::{Answer, Header, Request};
use crate::subject::{Subject, member_mut};
use serde_json::Value;

/// One allowed difference.
pub struct Allowed {
    /// What differs, for the report.
    pub name: &'static str,
    /// Why, and since which Kubernetes version the kube-apiserver does the same (when it does).
    pub reason: &'static str,
    /// The headers whose values it allows to differ (and checks itself); every other header of
    /// the two answers must be the same.
    pub headers: &'static [Header],
    /// Whether it judges only its `headers`: the answers are then compared as if those headers
    /// were the same, and what else differs needs an entry of its own.
    pub headers_only: bool,
    /// After a write it allows, the fields of the object in which the two sides' next reads
    /// may differ ([`WHOLE`]: the whole read, where one side wrote and the other refused). Each
    /// side's read must still show what that side answered to the write.
    pub stored: &'static [Path],
    /// How often it fires in the run of each subject it names, on the hand-written corpus and
    /// on the generated requests of the default run ([`crate::FIXED_SEED`],
    /// [`crate::DEFAULT_GENERATED`]); in another subject's default run it never fires.
    pub expected: &'static [Expected],
    /// How many of every 1,000 generated requests it may explain in a run of another seed or
    /// size (see `Allowed::generated_bound`).
    pub per_thousand: usize,
    /// Whether this entry explains the difference between the answers to `request`.
    pub applies: fn(subject: &Subject, request: &Request, tested: &Answer, reference: &Answer) -> bool,
}

/// A field of an object, by the names leading to it (`["metadata", "managedFields"]`).
pub type Path = &'static [&'static str];

/// The whole read: one side wrote what the other refused.
pub const WHOLE: &[Path] = &[&[]];

/// How often an entry fires in one subject's default run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The subject, by plural.
    pub subject: &'static str,
    /// Times on the hand-written corpus (the corpus is the same each run).
    pub corpus: usize,
    /// Times on the default run's generated requests.
    pub generated: usize,
    /// How far a count may stray from `corpus` and `generated`, for an entry whose answers
    /// depend on timing (the order of the reference's watch cache); 0 for the others.
    pub slack: usize,
}

/// An entry's expected counts in the default run of `subject`.
const fn seen(subject: &'static str, corpus: usize, generated: usize) -> Expected {
    Expected { subject, corpus, generated, slack: 0 }
}

impl Expected {
    /// The same counts, each within `slack`.
    const fn within(self, slack: usize) -> Self {
        Expected { slack, ..self }
    }

    /// The counts `count` stands for, within the slack: the bounds a default run must keep.
    pub fn around(self, count: usize) -> (usize, usize) {
        (count.saturating_sub(self.slack), count + self.slack)
    }
}

const MANAGED_FIELDS: Path = &["metadata", "managedFields"];
const STATUS: Path = &["status"];

/// The annotation client-side `kubectl apply` records its configuration in.
pub(crate) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

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

/// Whether our Content-Type is the reference's with the `as`, `v` and `g` parameters naming what
/// our answer is (a Table or metadata-only object, list or watch event), as current Kubernetes
/// writes it (`application/json;as=Table;v=v1;g=meta.k8s.io`), where 1.20 names only the media
/// type.
fn names_what_it_sent(tested: &Answer, reference: &Answer) -> bool {
    let body = &tested.body;
    let sent = if body.is_array() { &body[0]["object"] } else { body };
    let (Some(kind), Some(version)) =
        (sent["kind"].as_str(), sent["apiVersion"].as_str().and_then(|v| v.strip_prefix("meta.k8s.io/")))
    else {
        return false;
    };
    let of_metadata = ["Table", "PartialObjectMetadata", "PartialObjectMetadataList"].contains(&kind);
    of_metadata && tested.content_type == format!("{};as={kind};v={version};g=meta.k8s.io", reference.content_type)
}

/// The page on names that a Table's Name column links: 1.20's, and current Kubernetes'.
pub(crate) const OLD_NAMES_LINK: &str = "http://kubernetes.io/docs/user-guide/identifiers#names";
pub(crate) const NAMES_LINK: &str = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// Whether `body` is a Table, or a watch's events (one or more) each carrying a Table.
fn is_table(body: &Value) -> bool {
    let events = body.as_array().filter(|events| !events.is_empty());
    body["kind"] == "Table" || events.is_some_and(|events| events.iter().all(|e| e["object"]["kind"] == "Table"))
}

/// A body with 1.20's link on names replaced by current Kubernetes' (a Table's Name column).
fn with_current_names_link(body: &Value) -> Value {
    serde_json::from_str(&body.to_string().replace(OLD_NAMES_LINK, NAMES_LINK)).unwrap_or_else(|_| body.clone())
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

/// The two answers are the same refusal (a `Status` of the same code, reason, details and
/// causes) but for the wording of their messages.
fn only_wording(tested: &Answer, reference: &Answer) -> bool {
    tested.code == reference.code
        && tested.code >= 400
        && tested.body["kind"] == "Status"
        && reason(tested) == reason(reference)
        && without_messages(&tested.body) == without_messages(&reference.body)
}

/// Whether the request's query has `name`.
fn has_param(request: &Request, name: &str) -> bool {
    request.query.split('&').any(|p| p.split('=').next() == Some(name))
}

/// The field a Warning of an unknown field names (`299 - "unknown field \"spec.horns\""`, the
/// quotes of the warning's text escaped in the header).
fn unknown_field(warning: &str) -> Option<&str> {
    warning.split_once("unknown field \\\"")?.1.split("\\\"").next()
}

/// Whether every warning of `answer` says that the version of the request is deprecated (which
/// both sides send for a request under it).
fn only_deprecations(answer: &Answer) -> bool {
    answer.warnings.iter().all(|w| w.contains(" is deprecated; use "))
}

/// Whether each of our warnings that the reference does not send is one of an unknown field
/// whose name the request's body has, there is at least one, and the others are the
/// reference's.
fn warns_of_unknown_fields_of_the_body(request: &Request, tested: &Answer, reference: &Answer) -> bool {
    let body = request.body_text();
    let (unknown, others): (Vec<&String>, Vec<&String>) =
        tested.warnings.iter().partition(|w| unknown_field(w).is_some());
    let named_in_body = |warning: &&String| {
        unknown_field(warning).and_then(|f| f.rsplit('.').next()).is_some_and(|name| {
            let name = name.split('[').next().unwrap_or(name);
            // A member of a JSON or YAML body, or a step of a JSON patch's path.
            [format!("\"{name}\""), format!("{name}:"), format!("/{name}")].iter().any(|form| body.contains(form))
        })
    };
    !unknown.is_empty()
        && unknown.iter().all(named_in_body)
        && others.into_iter().cloned().collect::<Vec<_>>() == reference.warnings
}

/// Whether `request` is an apply the reference answered with a 500 whose message starts with
/// `words`.
fn apply_failed_on_reference(request: &Request, reference: &Answer, words: &str) -> bool {
    request.has_header("content-type", "apply-patch") && reference.code == 500 && message(reference).starts_with(words)
}

fn text(answer: &Answer) -> String {
    answer.body.to_string()
}

/// Both answers are watches whose events (two or more) are the same but for their order.
fn same_events_in_another_order(request: &Request, tested: &Answer, reference: &Answer) -> bool {
    let sorted = |answer: &Answer| {
        let mut events: Vec<String> = answer.body.as_array().into_iter().flatten().map(Value::to_string).collect();
        events.sort();
        events
    };
    request.is_watch()
        && tested.code == 200
        && reference.code == 200
        && sorted(tested).len() >= 2
        && sorted(tested) == sorted(reference)
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

/// Both answers are lists whose items (two or more) are the same but for their order.
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
    tested.code == 200
        && reference.code == 200
        && without_items(tested) == without_items(reference)
        && sorted(tested).len() >= 2
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

/// Whether our causes (without messages) are the reference's, in order, but for a field we
/// find missing (`FieldValueRequired`) where 1.20 refuses the null sent for it.
fn alike_but_required_for_null(ours: &[Value], theirs: &[Value]) -> bool {
    ours.len() == theirs.len()
        && ours.iter().zip(theirs).all(|(o, t)| *o == cause_without_message(t) || required_for_null(o, t))
}

/// Whether our cause finds a field missing (`FieldValueRequired`) where 1.20's refuses the null
/// sent for it.
fn required_for_null(ours: &Value, theirs: &Value) -> bool {
    ours["field"] == theirs["field"] && ours["reason"] == "FieldValueRequired" && refuses_null(theirs)
}

/// A cause's message.
fn message_of(cause: &Value) -> &str {
    cause["message"].as_str().unwrap_or_default()
}

/// Whether a cause is a 1.20 CRD's refusal of a null as being of type null.
fn refuses_null(cause: &Value) -> bool {
    let message = message_of(cause);
    message.contains("must be of type") && message.contains("\"null\"")
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

/// Whether two bodies are the same but for what the entry on status fields in managedFields
/// allows (a Table's rows carry their objects' managedFields).
fn same_but_for_status_in_managed_fields(ours: &Value, theirs: &Value) -> bool {
    managed_fields_without_status(ours) == managed_fields_without_status(theirs) && subresources_only_of_status(ours)
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

/// Whether every member of `part` (at any depth; lists and other values whole) is in `whole`
/// with the same value.
fn holds(whole: &Value, part: &Value) -> bool {
    match (whole, part) {
        (Value::Object(whole), Value::Object(part)) => {
            part.iter().all(|(key, value)| whole.get(key).is_some_and(|w| holds(w, value)))
        }
        (whole, part) => whole == part,
    }
}

/// The values at a field path of a cause (`spec.zones[0]`, `status.conditions[1].message`); a
/// list stepped into without an index (1.20's `status.conditions.message`) gives its items'.
fn values_at<'a>(object: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut at = vec![object];
    for step in path.split('.') {
        let (name, indices) = step.split_once('[').unwrap_or((step, ""));
        let named = at.into_iter().flat_map(|value| match value {
            Value::Array(items) if !name.is_empty() => items.iter().filter_map(|item| item.get(name)).collect(),
            _ if name.is_empty() => vec![value],
            _ => value.get(name).into_iter().collect::<Vec<_>>(),
        });
        at = named
            .filter_map(|value| {
                let mut indices = indices.split('[').filter(|i| !i.is_empty());
                indices.try_fold(value, |v, i| v.get(i.trim_end_matches(']').parse::<usize>().ok()?))
            })
            .collect();
    }
    at
}

/// Whether `answer` is a write's object of the subject, answered 200 or 201.
fn wrote(subject: &Subject, answer: &Answer) -> bool {
    (answer.code == 200 || answer.code == 201) && answer.body["kind"] == subject.kind
}

/// The body a request sent, read as JSON or YAML.
fn applied(request: &Request) -> Option<Value> {
    let text = request.body_text();
    serde_json::from_str(&text).ok().or_else(|| serde_saphyr::from_str::<Value>(&text).ok())
}

/// The configuration an apply sent (JSON or YAML), without the fields named by `unknown`
/// warnings and without the status (which a write of the object does not apply).
fn applied_known_fields(request: &Request, warnings: &[String]) -> Option<Value> {
    let mut applied = applied(request)?;
    for field in warnings.iter().filter_map(|w| unknown_field(w)) {
        let (parent, last) = field.rsplit_once('.').unwrap_or(("", field));
        let parent = if parent.is_empty() {
            Some(&mut applied)
        } else {
            parent.split('.').try_fold(&mut applied, |at, n| at.get_mut(n))
        };
        if let Some(map) = parent.and_then(Value::as_object_mut) {
            map.remove(last);
        }
    }
    if let Some(map) = applied.as_object_mut() {
        map.remove("status");
    }
    // The resourceVersion sent is a precondition, not a value; empty lists and maps of the
    // metadata are left out of an object, as Go's encoding leaves them.
    if let Some(metadata) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
        metadata
            .retain(|_, v| !(v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(|m| m.is_empty())));
    }
    Some(applied)
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

/// Whether `reference` is one of 1.20's 500s for a client's mistake (by the table below).
fn failed_on_a_client_mistake(request: &Request, reference: &Answer) -> bool {
    refusals_of_a_client_mistake(request, reference).next().is_some()
}

/// The refusals the tested server may answer `request` with where the reference's answer is
/// one of 1.20's 500s for a client's mistake (none for another answer).
fn refusals_of_a_client_mistake<'a>(
    request: &Request,
    reference: &'a Answer,
) -> impl Iterator<Item = &'static (u16, &'static str)> + 'a {
    let read = request.method == reqwest::Method::GET;
    CLIENT_MISTAKES_1_20_FAILS
        .iter()
        .filter(move |(theirs, _, _)| reference.code == 500 && message(reference).contains(theirs))
        .flat_map(move |(_, reads, writes)| if read { reads.iter() } else { writes.iter() })
}

/// Refusals by code and reason.
type Refusals = &'static [(u16, &'static str)];

/// kube-apiserver 1.20's 500s for a client's mistake (a phrase of its message), and the code
/// and reason the tested server answers the same mistake with: to a read, and to a write.
const CLIENT_MISTAKES_1_20_FAILS: &[(&str, Refusals, Refusals)] = &[
    // resourceVersion=bogus or -1 on a read: 400. A write carrying resourceVersion "bogus":
    // the precondition cannot hold (409), or the patched object is of another type first (422).
    // An apply carrying it: the decoder's 400.
    ("strconv.ParseUint: parsing", &[(400, "BadRequest")], &[(400, "BadRequest"), (409, "Conflict"), (422, "Invalid")]),
    ("resourceVersion should not be set on objects to be created", &[], &[(400, "BadRequest")]),
    // A create without apiVersion (ours: 400), a patch that empties it (ours: the patcher's 422
    // for a result of another type).
    ("Object 'apiVersion' is missing in", &[], &[(400, "BadRequest"), (422, "Invalid")]),
    ("Invalid JSON Patch", &[], &[(400, "BadRequest")]),
    ("couldn't get version/kind; json parse error", &[], &[(400, "BadRequest")]),
    ("is registered for version", &[], &[(400, "BadRequest")]),
    // An apply whose values do not match the schema (ours: 400 or 422 as a write of that body,
    // 409 when its conflicts come first) or that declares no type.
    ("failed to create typed patch object", &[], &[(400, "BadRequest"), (409, "Conflict"), (422, "Invalid")]),
    // A list's representation asked of one object (a GET of an object accepting only
    // PartialObjectMetadataList): ours is the 406 of a representation it cannot give.
    ("content is not a list", &[(406, "NotAcceptable")], &[]),
];

pub const ON_PURPOSE: &[Allowed] = &[
    Allowed {
        name: "the order of a list served from the watch cache",
        headers: &[],
        headers_only: false,
        stored: &[],
        // The herd's list, always; each of the five lists of three llamas (resourceVersion 0,
        // 1, $LISTRV, with NotOlderThan) by chance: 1.20's cache iterates a Go map from a random
        // bucket and slot, and where the hash seed of the kube-apiserver's run put those three
        // decides how often that is key order. Runs have seen all five and none.
        expected: &[seen("llamas", 4, 0).within(3)],
        per_thousand: 0,
        reason: "kube-apiserver 1.20 serves a list with resourceVersion=0 or NotOlderThan from its watch cache in no order; current Kubernetes' B-tree watch cache (1.32), like etcd and the tested server, in key order.",
        applies: |_, request, tested, reference| {
            has_param(request, "resourceVersion") && same_items_in_another_order(tested, reference)
        },
    },
    Allowed {
        name: "the order of a watch's initial ADDED events",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 2, 0).within(2)],
        per_thousand: 5,
        reason: "A watch without a resourceVersion starts with an ADDED event per object, in no promised order: the kube-apiserver's watch cache sends them in its own; the tested server in key order.",
        applies: |_, request, tested, reference| same_events_in_another_order(request, tested, reference),
    },
    Allowed {
        name: "the wording of an error message (code, reason, details and causes equal)",
        headers: &[],
        headers_only: false,
        stored: &[],
        // Within 2: a refusal whose causes 1.20 happens to list in our order (Go's map order) counts
        // here, else under the entry on the same set of causes.
        expected: &[seen("llamas", 82, 54).within(2), seen("regions", 0, 54).within(2)],
        per_thousand: 92,
        reason: "Parse errors name their cause in Go's words in the reference (`strconv.ParseInt: parsing \"x\": invalid syntax`, json-iterator's byte offsets, `unable to parse requirement: found ''`); the tested server says the same in its own. Clients act on the code, reason and causes' fields, never on this text.",
        applies: |_, _, tested, reference| only_wording(tested, reference),
    },
    Allowed {
        name: "Warning headers for unknown fields",
        headers: &[Header::Warning],
        headers_only: true,
        stored: &[],
        expected: &[seen("llamas", 13, 1)],
        per_thousand: 1,
        reason: "Kubernetes 1.27 made fieldValidation=Warn the default: unknown and duplicate fields are dropped with a Warning header. 1.20 drops them silently.",
        applies: |_, request, tested, reference| warns_of_unknown_fields_of_the_body(request, tested, reference),
    },
    Allowed {
        name: "a merge patch to a version not served: the reference's extra Warning of every field of the object as unknown",
        headers: &[Header::Warning],
        headers_only: true,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
        per_thousand: 1,
        reason: "kube-apiserver 1.37 decodes a patched custom resource whose apiVersion names a version the CRD does not serve against no schema, so its pruning warns of each top-level field as unknown (`unknown field \"spec\"`) before the apiVersion is refused (422). The tested server refuses the apiVersion alone, with the same 422.",
        applies: |s, request, tested, reference| {
            let body: Option<Value> = request.body.as_deref().and_then(|b| serde_json::from_slice(b).ok());
            let version = body.as_ref().and_then(|b| b["apiVersion"].as_str()).and_then(|v| v.rsplit_once('/'));
            let unserved = version.is_some_and(|(_, v)| !s.versions.contains(&v));
            let extra: Vec<&String> = reference.warnings.iter().filter(|w| !tested.warnings.contains(w)).collect();
            request.has_header("content-type", "merge-patch")
                && unserved
                && (tested.code, reference.code) == (422, 422)
                && tested.warnings.iter().all(|w| reference.warnings.contains(w))
                && !extra.is_empty()
                && extra.iter().all(|w| unknown_field(w).is_some_and(|f| !f.contains('.')))
        },
    },
    Allowed {
        name: "fieldValidation=Strict: our 400 strict decoding error where 1.20 ignores the parameter and drops the unknown fields",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 2, 0)],
        per_thousand: 1,
        reason: "fieldValidation (Ignore, Warn, Strict) is Kubernetes 1.25 (beta) / 1.27 (GA): under Strict an unknown field is a 400 `strict decoding error`, when the body is decoded, before validation and before the object is looked up. 1.20 ignores the parameter, drops the field and writes (the suite's Strict writes are dry runs), or answers what the later checks find: validation (422), a name already taken (409 AlreadyExists, found on Regions, seed 655981761648979599), a stale resourceVersion (409 Conflict), a missing object (404).",
        applies: |s, request, tested, reference| {
            let dry_run = request.query.split('&').any(|p| p == "dryRun=All");
            let written = dry_run && wrote(s, reference);
            let later = [(422, "Invalid"), (409, "AlreadyExists"), (409, "Conflict"), (404, "NotFound")];
            let named = message(tested)
                .strip_prefix("strict decoding error: unknown field \"")
                .and_then(|f| f.split('"').next());
            let in_body = named.and_then(|f| f.rsplit('.').next()).is_some_and(|n| request.body_text().contains(n));
            query_value(request, "fieldValidation") == Some("Strict")
                && refused_as(tested, 400, "BadRequest", "strict decoding error: unknown field")
                && in_body
                && (written || later.iter().any(|&(code, why)| refused_as(reference, code, why, "")))
        },
    },
    Allowed {
        name: "an unsupported fieldValidation value: our 422 naming it where 1.20 ignores the parameter",
        headers: &[],
        headers_only: false,
        stored: WHOLE,
        expected: &[seen("llamas", 3, 4), seen("regions", 0, 7)],
        per_thousand: 6,
        reason: "Since Kubernetes 1.25 a fieldValidation other than Ignore, Warn or Strict is an Invalid options object (422, one FieldValueNotSupported cause on `fieldValidation`), before the body is read; 1.20 ignores the parameter and answers the request as it would without it.",
        applies: |s, request, tested, reference| {
            let value = query_value(request, "fieldValidation");
            let ours = causes_without_messages(tested, |c| c["field"] == "fieldValidation");
            let refused = causes_without_messages(tested, |c| c["field"] != "fieldValidation");
            // What the reference answers a write without the parameter: the write, or a refusal
            // of the body, its type, the object's absence or its conflicts.
            let as_without = wrote(s, reference)
                || failed_on_a_client_mistake(request, reference)
                || [
                    (400, "BadRequest"),
                    (404, "NotFound"),
                    (409, "Conflict"),
                    (409, "AlreadyExists"),
                    (415, "UnsupportedMediaType"),
                    (422, "Invalid"),
                ]
                .iter()
                .any(|&(code, why)| refused_as(reference, code, why, ""));
            value.is_some_and(|v| !["Ignore", "Warn", "Strict"].contains(&v))
                && refused_as(tested, 422, "Invalid", "")
                && refused == [serde_json::json!({"field": "fieldValidation", "reason": "FieldValueNotSupported"})]
                // No other mistake of the options, and the reference answered the request as it
                // would without the parameter; or the options' other mistakes, refused alike.
                && if ours.is_empty() {
                    as_without
                } else {
                    refused_as(reference, 422, "Invalid", "") && ours == causes_without_messages(reference, |_| false)
                }
        },
    },
    Allowed {
        name: "sendInitialEvents: our watch list (initial ADDED events, then the initial-events-end bookmark) or our 422 for its misuse, where 1.20 ignores the parameter",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 3, 0)],
        per_thousand: 0,
        reason: "Watch lists (sendInitialEvents=true with resourceVersionMatch=NotOlderThan and bookmarks) are Kubernetes 1.27 (alpha); sendInitialEvents on a list, or on a watch without those, is a 422 there. 1.20 ignores the parameter, so it lists or watches as without it, and refuses resourceVersionMatch on a watch.",
        applies: |s, request, tested, reference| {
            if query_value(request, "sendInitialEvents").is_none() {
                return false;
            }
            let forbidden_causes = |answer: &Answer, fields: &[&str]| {
                let causes = causes_of(answer);
                !causes.is_empty()
                    && causes.iter().all(|c| {
                        c["reason"] == "FieldValueForbidden" && c["field"].as_str().is_some_and(|f| fields.contains(&f))
                    })
            };
            let misused = refused_as(tested, 422, "Invalid", "")
                && reference.code == 200
                && forbidden_causes(tested, &["sendInitialEvents", "resourceVersionMatch", "allowWatchBookmarks"]);
            // The corpus watches a namespace with objects: the initial events are never none.
            let events = tested.body.as_array().cloned().unwrap_or_default();
            let watch_list = request.is_watch()
                && tested.code == 200
                && events.split_last().is_some_and(|(last, initial)| {
                    last["type"] == "BOOKMARK"
                        && last["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"
                        && !initial.is_empty()
                        && initial.iter().all(|e| e["type"] == "ADDED" && e["object"]["kind"] == s.kind)
                })
                && refused_as(reference, 422, "Invalid", "")
                && forbidden_causes(reference, &["resourceVersionMatch"]);
            misused || watch_list
        },
    },
    Allowed {
        name: "a field selector on a selectable field of the spec: our list or watch of the objects that match it, where 1.20 refuses the field (400)",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 2, 0)],
        per_thousand: 0,
        reason: "CRD selectableFields are Kubernetes 1.30 (1.32 GA); the tested server declares spec fields selectable (farm-apiserver's Llamas: spec.color), which 1.20 cannot, so it refuses the selector with 400 `field label not supported`.",
        applies: |s, request, tested, reference| {
            let Some((field, wanted)) = field_selector(request, s.selectable_fields) else { return false };
            let objects: Vec<Value> = if request.is_watch() {
                let events = tested.body.as_array().into_iter().flatten();
                events
                    .map(|e| {
                        if e["type"] == "ADDED" || e["type"] == "MODIFIED" { e["object"].clone() } else { Value::Null }
                    })
                    .collect()
            } else if tested.body["kind"] == s.list_kind() {
                tested.body["items"].as_array().cloned().unwrap_or_default()
            } else {
                Vec::new()
            };
            // The corpus selects objects it made: a list, or a watch's initial events, are never
            // empty; a watch from a resourceVersion sends only the changes after it, and the
            // corpus makes none before that watch ends.
            let from_a_version =
                request.is_watch() && query_value(request, "resourceVersion").is_some_and(|v| v != "0");
            tested.code == 200
                && (!objects.is_empty() || from_a_version)
                && objects.iter().all(|o| o["kind"] == s.kind && wanted(string_at(o, &field)))
                && refused_as(reference, 400, "BadRequest", "")
                && message(reference) == format!("field label not supported: {field}")
        },
    },
    Allowed {
        name: "managedFields: our status fields recorded only by status writes (with `subresource: status`), where 1.20 also records them for writes of the object",
        headers: &[],
        headers_only: false,
        stored: &[MANAGED_FIELDS],
        expected: &[seen("llamas", 31, 2), seen("regions", 3, 1)],
        per_thousand: 4,
        reason: "Kubernetes 1.22 (reset fields) stopped recording in managedFields what a write of the main resource dropped from the status, and keyed the entries of status writes by `subresource: status`; 1.20 does neither. Compared: everything else, and managedFields with the entries of one manager, operation and version merged and their status fields left out.",
        applies: |_, _, tested, reference| {
            tested.code == reference.code && same_but_for_status_in_managed_fields(&tested.body, &reference.body)
        },
    },
    Allowed {
        name: "managedFields after a write of /status that carried spec fields: the status writer's spec fields as 1.20 records them (from the object before its spec is reset)",
        headers: &[],
        headers_only: false,
        stored: &[MANAGED_FIELDS],
        expected: &[seen("llamas", 2, 0)],
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
        headers: &[],
        headers_only: false,
        stored: &[STATUS, MANAGED_FIELDS],
        expected: &[seen("llamas", 1, 0)],
        per_thousand: 0,
        reason: "Since Kubernetes 1.22 (reset fields) the fields a write of /status cannot change are dropped before the apply, so they conflict with no one; 1.20 reports a conflict over them.",
        applies: |s, request, tested, reference| {
            let conflicts = causes_of(reference);
            let applied_status = applied(request).and_then(|a| a.get("status").cloned());
            request.path.ends_with("/status")
                && request.has_header("content-type", "apply-patch")
                && tested.code == 200
                && tested.body["kind"] == s.kind
                && applied_status.is_none_or(|status| holds(&tested.body["status"], &status))
                && refused_as(reference, 409, "Conflict", "Apply failed with ")
                && !conflicts.is_empty()
                && conflicts.iter().all(|c| {
                    c["reason"] == "FieldManagerConflict"
                        && c["field"].as_str().is_some_and(|f| !f.starts_with(".status"))
                })
        },
    },
    Allowed {
        name: "Audit-Id of a watch: ours where 1.20 sends none",
        reason: "Audited, kube-apiserver 1.20 gives an answer the request's Audit-Id when the answer's status is written through its audit filter: a proxied answer gets it, watches included, but its own watch of a CRD none. Current Kubernetes echoes it on every answer, once, from its outermost filter (WithAuditInit), audited or not, as the tested server does on its own (and the aggregator keeps one).",
        headers: &[Header::AuditId],
        headers_only: true,
        stored: &[],
        expected: &[seen("llamas", 19, 26), seen("regions", 0, 36)],
        per_thousand: 45,
        applies: |_, request, tested, reference| {
            // The reference's watch (200) is what lacks it; ours may have refused the watch.
            request.is_watch() && reference.code == 200 && tested.audit_ids == 1 && reference.audit_ids == 0
        },
    },
    Allowed {
        name: "Content-Type of Table and metadata-only answers",
        headers: &[Header::ContentType],
        headers_only: true,
        stored: &[],
        expected: &[seen("llamas", 29, 0), seen("regions", 2, 0)],
        per_thousand: 0,
        reason: "Current Kubernetes names what it sent in the Content-Type (`application/json;as=Table;v=v1;g=meta.k8s.io`); 1.20 wrote `application/json`.",
        applies: |_, _, tested, reference| names_what_it_sent(tested, reference),
    },
    Allowed {
        name: "the Name column of a Table: its description links the page on names where 1.20 links the old one",
        reason: "Kubernetes 1.21 moved the page on names that the description of a Table's Name column links (`https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names`); 1.20 links the old page (`http://kubernetes.io/docs/user-guide/identifiers#names`). Compared: everything else.",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 21, 0)],
        per_thousand: 0,
        applies: |_, _, tested, reference| {
            is_table(&tested.body)
                && tested.code == reference.code
                && reference.body.to_string().contains(OLD_NAMES_LINK)
                && same_but_for_status_in_managed_fields(&tested.body, &with_current_names_link(&reference.body))
        },
    },
    Allowed {
        name: "a Table column of a list: our items joined by commas, where a CRD's printer column prints the list as JSON",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("regions", 2, 0)],
        per_thousand: 0,
        reason: "A CRD's printer column of a list (`jsonPath: .spec.zones`) prints the list as JSON (`[\"west-a\",\"west-b\"]`); a server's own columns can say it as kubectl's built-in columns do (`west-a,west-b`), which the example's Regions do. Compared: everything else, managedFields as the entry on status fields in them says.",
        applies: |_, _, tested, reference| {
            let joined = with_lists_joined(&with_current_names_link(&reference.body));
            tested.body["kind"] == "Table"
                && tested.code == reference.code
                && joined != with_current_names_link(&reference.body)
                && same_but_for_status_in_managed_fields(&tested.body, &joined)
        },
    },
    Allowed {
        name: "paths and methods no resource serves: our 404 or 405 Status where a CRD's group answers text, a discovery document, or treats the method as another verb",
        headers: &[Header::ContentType, Header::Warning],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 36, 0), seen("regions", 2, 0)],
        per_thousand: 0,
        reason: "A CRD's group answers an unknown path with the text `404 page not found` (with or without the version's deprecation Warning), serves its discovery document to any method, treats a POST to an object or a PUT to a collection as a create or an update, and ignores path segments after a subresource. Built-in groups (and servers on k8s.io/apiserver, whose routes are go-restful's) answer a 404 NotFound or 405 MethodNotAllowed Status, which the tested server does.",
        applies: |s, request, tested, reference| {
            let text_404 = reference.code == 404
                && reference.body == "404 page not found"
                && reference.content_type == "text/plain; charset=utf-8"
                && tested.content_type == "application/json";
            // The version's deprecation is warned of by a CRD for any path under it, by the
            // tested server for the paths it serves.
            let generic = |code: u16, why: &str, text: &str| {
                tested.code == code
                    && (tested.content_type == reference.content_type || text_404)
                    && only_deprecations(tested)
                    && only_deprecations(reference)
                    && reason(tested) == why
                    && message(tested) == text
                    && tested.body["details"].as_object().is_some_and(|d| d.is_empty())
            };
            let not_found = generic(404, "NotFound", "the server could not find the requested resource");
            let not_allowed =
                generic(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
            let discovery = reference.code == 200 && reference.body["kind"] == "APIResourceList";
            let named = s.is_object_path(&request.path);
            let collection = s.is_collection_path(&request.path);
            let collection_not_allowed = reference.code == 405
                && reason(reference) == "MethodNotAllowed"
                && reference.body["details"]["kind"] == s.plural;
            // Taken for a create or an update: written, or refused as one.
            let as_another_verb = wrote(s, reference)
                || [
                    (400, "BadRequest"),
                    (404, "NotFound"),
                    (409, "AlreadyExists"),
                    (409, "Conflict"),
                    (422, "Invalid"),
                ]
                .iter()
                .any(|&(code, why)| refused_as(reference, code, why, ""));
            let other_verb = ((request.method == reqwest::Method::POST && named)
                || (request.method == reqwest::Method::PUT && collection))
                && as_another_verb;
            let resource_not_found = reference.code == 404
                && reason(reference) == "NotFound"
                && reference.body["details"]["kind"] == s.plural;
            (not_found
                && (text_404 || resource_not_found || (reference.code == 200 && request.path.contains("/status/"))))
                || (not_allowed && (text_404 || discovery || collection_not_allowed || other_verb))
        },
    },
    Allowed {
        name: "protobuf: our 415 for a protobuf body where 1.20 reads it as protobuf (400), and our 406 written as JSON where 1.20 writes it as protobuf",
        headers: &[Header::ContentType],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 6, 0)],
        per_thousand: 0,
        reason: "The tested server reads and writes JSON and YAML only (a client offering protobuf also offers JSON: kubectl, client-go); a CRD reads a protobuf body (and refuses it, 400, as custom resources have no protobuf form) and answers an Accept of protobuf alone with a 406 Status in protobuf.",
        applies: |_, request, tested, reference| {
            let body_in_protobuf = request.has_header("content-type", "protobuf")
                && refused_as(tested, 415, "UnsupportedMediaType", "")
                && tested.content_type == reference.content_type
                && refused_as(reference, 400, "BadRequest", "")
                && message(reference).contains("does not appear to be a protobuf message");
            let accept_protobuf_only =
                request.headers.iter().any(|(n, v)| n == "accept" && v == "application/vnd.kubernetes.protobuf")
                    && refused_as(tested, 406, "NotAcceptable", "only the following media types are accepted: ")
                    && tested.content_type == "application/json"
                    && reference.code == 406
                    && reference.content_type == "application/vnd.kubernetes.protobuf";
            body_in_protobuf || accept_protobuf_only
        },
    },
    Allowed {
        name: "a JSON body labelled protobuf on a create: our 415 where kube-apiserver 1.37 resets the stream",
        headers: &[Header::ContentType, Header::Warning, Header::CacheControl, Header::AuditId],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
        per_thousand: 0,
        reason: "kube-apiserver 1.37 gives up on a custom resource's create whose body is labelled `application/vnd.kubernetes.protobuf` (custom resources have no protobuf form) without an answer: its handler fails and the HTTP/2 stream is reset (1.20 answered 400). The tested server refuses the media type with a 415 Status naming the types it reads, as it does on every other path.",
        applies: |_, request, tested, reference| {
            request.method == reqwest::Method::POST
                && request.has_header("content-type", "protobuf")
                && reference.code == Answer::RESET
                && refused_as(tested, 415, "UnsupportedMediaType", "the body of the request was in an unknown format")
        },
    },
    Allowed {
        name: "a kind or apiVersion other than the resource's",
        headers: &[],
        headers_only: false,
        stored: &[STATUS, MANAGED_FIELDS],
        expected: &[seen("llamas", 7, 1), seen("regions", 0, 2)],
        per_thousand: 4,
        reason: "A built-in resource's decoder refuses a body of another kind or version as BadRequest (`the kind in the data (Alpaca) does not match the expected kind (Llama)`) before it looks the object up, and its patcher refuses such a patched object as an Invalid `patch` (422), as the tested server does. A CRD decodes any kind: it first answers what else is wrong (404, a missing resourceVersion), then refuses the kind as Invalid (422, `kind: Invalid value`), and a write of its status keeps the stored kind.",
        applies: |s, request, tested, reference| {
            let refused_type =
                |text: &str| text.contains("does not match the expected") || text.contains("is missing in");
            let by_decoder = refused_as(tested, 400, "BadRequest", "") && refused_type(message(tested));
            let cause = &tested.body["details"]["causes"][0];
            let by_patcher = refused_as(tested, 422, "Invalid", "")
                && causes_of(tested).len() == 1
                && cause["field"] == "patch"
                && cause["message"].as_str().is_some_and(refused_type);
            // What a CRD answers first: the object's absence, a name other than the URL's (its
            // decoder took the body), a missing resourceVersion, the
            // kind or apiVersion (Invalid, with causes on those fields only, or none when the
            // patched object lost both); or, for a write of the status, the write.
            let refused_fields = ["kind", "apiVersion", "metadata.resourceVersion"];
            let reference_first = refused_as(reference, 404, "NotFound", "")
                || refused_as(reference, 400, "BadRequest", "the name of the object (")
                || (refused_as(reference, 422, "Invalid", "")
                    && causes_of(reference)
                        .iter()
                        .all(|c| c["field"].as_str().is_some_and(|f| refused_fields.contains(&f))))
                || (request.path.ends_with("/status") && wrote(s, reference));
            (by_decoder || by_patcher) && reference_first
        },
    },
    Allowed {
        name: "an empty PartialObjectMetadataList",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
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
                && tested.body["items"] == Value::Array(Vec::new())
                && reference.body["items"].is_null()
                && with_empty_items(tested) == with_empty_items(reference)
        },
    },
    Allowed {
        name: "a limit with resourceVersion=0",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
        per_thousand: 0,
        reason: "The kube-apiserver serves a list at resourceVersion=0 from its watch cache and ignores its limit there (which the API conventions allow); the tested server honours the limit and sends a continue token.",
        applies: |_, request, tested, reference| {
            let items = |answer: &Answer| answer.body["items"].as_array().cloned().unwrap_or_default();
            let limit = query_value(request, "limit").and_then(|l| l.parse::<usize>().ok());
            // Our page: `limit` items of the reference's whole list (in its own order), and a token.
            request.query.contains("resourceVersion=0")
                && limit.is_some_and(|l| l > 0 && items(tested).len() == l && items(reference).len() > l)
                && tested.code == 200
                && reference.code == 200
                && tested.body["metadata"]["continue"].is_string()
                && items(tested).iter().all(|item| items(reference).contains(item))
        },
    },
    Allowed {
        name: "a watch from a resourceVersion before the reference's window: its 410 Expired event where ours sends the events since",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
        per_thousand: 0,
        reason: "A watch from an old resourceVersion gets 410 Expired once it is older than the server's window of events: the kube-apiserver's watch cache starts when the CRD is established, the tested server's window holds the events since it started; both send 410 for what has left theirs.",
        applies: |s, request, tested, reference| {
            let expired = |answer: &Answer| answer.body[0]["object"]["code"] == 410;
            let namespace = request.path.split('/').skip_while(|s| *s != "namespaces").nth(1);
            // The corpus wrote to the namespace since that resourceVersion: never no events.
            let events_of_the_namespace = tested.body.as_array().is_some_and(|events| {
                !events.is_empty()
                    && events.iter().all(|e| {
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
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
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
        headers: &[],
        headers_only: false,
        stored: WHOLE,
        expected: &[seen("llamas", 1, 0), seen("regions", 0, 1)],
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
            // What we wrote has the empty string where the reference refused a null.
            let empty = Value::String(String::new());
            let kept_empty = causes_of(reference).iter().filter(|c| empty_as_null(c)).all(|c| {
                // 1.20 names a list for its item: the item is in the list.
                let at = c["field"].as_str().map(|f| values_at(&tested.body, f)).unwrap_or_default();
                at.iter().any(|v| **v == empty || v.as_array().is_some_and(|items| items.contains(&empty)))
            });
            request.body_text().contains(r#""""#)
                && refused_as(reference, 422, "Invalid", "")
                && causes(reference, true).len() < causes(reference, false).len()
                && if causes(reference, true).is_empty() {
                    (wrote(s, tested) && kept_empty) || taken
                } else {
                    refused_as(tested, 422, "Invalid", "") && causes(reference, true) == causes(tested, false)
                }
        },
    },
    Allowed {
        name: "the same set of causes, in another order or repeated",
        headers: &[],
        headers_only: false,
        stored: &[],
        // 4 to 8 on the corpus: four refusals repeat a cause, always; four list two or three
        // causes in Go's map order (an empty spec, a negative weight, two apply conflicts),
        // each now and then in another order than ours (runs saw 0 to 2 of them).
        expected: &[seen("llamas", 6, 0).within(2), seen("regions", 0, 1).within(2)],
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
        name: "an apply the reference cannot type: our 200/201 object (unknown fields dropped with a Warning, the status not applied) where the reference answers 500",
        headers: &[Header::Warning],
        headers_only: false,
        stored: WHOLE,
        expected: &[seen("llamas", 1, 1), seen("regions", 0, 1)],
        per_thousand: 2,
        reason: "kube-apiserver 1.20 answers an apply carrying a field its schema does not declare, or a status that is not an object, with a 500 (`failed to create typed patch object`). So does current Kubernetes (apimachinery's `structuredmerge.go` still wraps structured-merge-diff's typing error as a 500). The tested server applies it as its other writes take such a body: an unknown field is dropped with a Warning (fieldValidation=Warn, Kubernetes 1.27) and owned by nobody, and the status, which a write of the object resets (Kubernetes 1.22), is not applied.",
        applies: |s, request, tested, reference| {
            // What we wrote holds every field the configuration sent but those our Warnings
            // name as unknown and the status.
            let unknown_only =
                tested.warnings.iter().all(|w| unknown_field(w).is_some() || reference.warnings.contains(w));
            // Why 1.20 could not type it: a field its schema does not declare, which we warned
            // of, or a status that is not an object (`.status: expected map`).
            // (Since 1.2x the message names the object: `… object (/name; group/version, Kind=K): …`.)
            let why = message(reference).strip_prefix("failed to create typed patch object").unwrap_or_default();
            let why = match why.strip_prefix(" (") {
                Some(rest) => rest.split_once("): ").map_or("", |(_, why)| why),
                None => why.strip_prefix(": ").unwrap_or_default(),
            };
            // (Warned of, unless the request said fieldValidation=Ignore.)
            let ignore = query_value(request, "fieldValidation") == Some("Ignore");
            let undeclared_field =
                why.strip_suffix(": field not declared in schema").map(|f| f.trim_start_matches('.'));
            let undeclared = undeclared_field
                .is_some_and(|field| ignore || tested.warnings.iter().any(|w| unknown_field(w) == Some(field)));
            let untyped_status = why.starts_with(".status: expected map");
            let mut dropped = tested.warnings.clone();
            dropped.extend(undeclared_field.map(|f| format!("unknown field \\\"{f}\\\"")));
            let known = applied_known_fields(request, &dropped);
            apply_failed_on_reference(request, reference, "failed to create typed patch object")
                && (undeclared || untyped_status)
                && wrote(s, tested)
                && unknown_only
                && known.is_some_and(|k| holds(&tested.body, &k))
        },
    },
    Allowed {
        name: "the order of verbs in discovery",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 2, 0), seen("regions", 1, 0)],
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
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 17, 5), seen("regions", 0, 7)],
        per_thousand: 15,
        reason: "kube-apiserver 1.20 answers some malformed requests (an unparsable resourceVersion, a list's representation asked of one object, a merge patch that is `null`, an apply that does not match the schema, a resourceVersion on a create) with a 500; the tested server answers the client's mistake with the 4xx of `CLIENT_MISTAKES_1_20_FAILS`, each listed with the reference's message.",
        applies: |_, request, tested, reference| {
            refusals_of_a_client_mistake(request, reference).any(|&(code, why)| refused_as(tested, code, why, ""))
        },
    },
    Allowed {
        name: "a full last page without a continue token",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
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
            let limit = query_value(request, "limit").and_then(|l| l.parse::<usize>().ok());
            let items = tested.body["items"].as_array().map_or(0, Vec::len);
            // A full page: as many items as the limit.
            limit.is_some_and(|l| l > 0 && items == l)
                && tested.code == 200
                && tested.body["metadata"].get("continue").is_none()
                && reference.body["metadata"]["continue"].is_string()
                && without_continue(tested) == without_continue(reference)
        },
    },
    Allowed {
        name: "DELETE: our answer the deleted object where a CRD answers a Success Status naming it",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 11, 17), seen("regions", 1, 18)],
        per_thousand: 32,
        reason: "The tested server answers a delete with the deleted object and the resourceVersion of its deletion, as the kube-apiserver does for Pods and Services (ReturnDeletedObject), so a client can match its delete with the watch's DELETED event; for a CRD (and ConfigMaps) it answers a `Success` Status. kubectl, client-go and kube-rs (`Either<K, Status>`) accept both.",
        applies: |s, request, tested, reference| {
            let metadata = &tested.body["metadata"];
            // Deleted at once, or (with finalizers) marked for deletion.
            let finalizers = metadata["finalizers"].as_array().is_some_and(|f| !f.is_empty());
            let deletion_marked = metadata.get("deletionTimestamp").is_some() == finalizers;
            let details = &reference.body["details"];
            request.method == reqwest::Method::DELETE
                && tested.code == reference.code
                && (tested.code == 200 || tested.code == 202)
                && tested.body["kind"] == s.kind
                && deletion_marked
                && reference.body["kind"] == "Status"
                && reference.body["status"] == "Success"
                && details["kind"] == s.plural
                && details["group"] == s.group
                && details["name"] == metadata["name"]
                && details["uid"] == metadata["uid"]
        },
    },
    Allowed {
        name: "managedFields: an applied or written empty map (`spec: {}`) recorded as owned, where 1.20 records nothing for it",
        headers: &[],
        headers_only: false,
        stored: &[MANAGED_FIELDS],
        expected: &[seen("llamas", 2, 0)],
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
        headers: &[],
        headers_only: false,
        stored: &[MANAGED_FIELDS],
        expected: &[seen("llamas", 1, 2), seen("regions", 0, 2)],
        per_thousand: 2,
        reason: "kube-apiserver 1.20 clears every managedFields entry of an object when a write carries a value its schema cannot type (a status that is not an object, which the write drops anyway); the tested server keeps them, as later versions do.",
        applies: |_, _, tested, reference| {
            reference.body["metadata"].get("managedFields").is_none()
                && tested.body["metadata"]["managedFields"].as_array().is_some_and(|m| !m.is_empty())
                && without_managed_fields(&tested.body) == without_managed_fields(&reference.body)
        },
    },
    Allowed {
        name: "export=true: our object with its creationTimestamp, namespace, resourceVersion and uid where 1.20 strips them",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
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
        headers: &[],
        headers_only: false,
        stored: WHOLE,
        expected: &[seen("llamas", 2, 0)],
        per_thousand: 1,
        reason: "A built-in resource reads `\"color\": null` as an unset field (a required one is then missing); a 1.20 CRD refuses a null for a field its schema does not make nullable as being of type null.",
        applies: |s, request, tested, reference| {
            let causes =
                |answer: &Answer, skip_nulls: bool| causes_without_messages(answer, |c| skip_nulls && refuses_null(c));
            // We wrote the object without the fields sent as null.
            let unset = causes_of(reference)
                .iter()
                .all(|c| c["field"].as_str().is_some_and(|f| values_at(&tested.body, f).is_empty()));
            let sent_null = request.body_text().contains("null");
            let only_nulls_refused = wrote(s, tested)
                && unset
                && refused_as(reference, 422, "Invalid", "")
                && !causes_of(reference).is_empty()
                && causes_of(reference).iter().all(refuses_null);
            let other_causes_equal = refused_as(tested, 422, "Invalid", "")
                && refused_as(reference, 422, "Invalid", "")
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
            // A string field 1.20 refuses as null that we do not refuse: sent as null (unset to
            // us) or as "" (the entry on empty strings).
            let theirs: Vec<Value> = theirs
                .into_iter()
                .filter(|t| {
                    let string_null = refuses_null(t) && message_of(t).contains("must be of type string");
                    !string_null || ours.iter().any(|o| o["field"] == t["field"])
                })
                .collect();
            let required_not_null = refused_as(tested, 422, "Invalid", "")
                && refused_as(reference, 422, "Invalid", "")
                && ours.len() == theirs.len()
                && ours.iter().zip(&theirs).any(|(f, r)| required_for_null(f, r))
                && ours.iter().zip(&theirs).all(|(f, r)| field_reason(f) == field_reason(r) || required_for_null(f, r));
            sent_null && (only_nulls_refused || other_causes_equal || required_not_null)
        },
    },
    Allowed {
        name: "integers beyond 2^53 in a number field: our float64 value where a CRD keeps the int64",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
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
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0), seen("regions", 1, 0)],
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
            // Since 1.2x both sides refuse it by its format (int64, a float64 read): ours with that
            // one cause; the reference's names the field's last segment in its message and adds
            // a cause on the status (`Checked value must be of type integer with format int64`).
            let by_format = |cause: &Value| {
                cause["reason"] == "FieldValueTypeInvalid"
                    && cause["message"].as_str().is_some_and(|m| m.ends_with("must be of type int64: \"float64\""))
            };
            let same_field = |c: &Value| c["field"] == cause["field"] && by_format(c);
            let by_schema = tested.code == 422 && causes_of(tested).len() == 1 && by_format(cause);
            (by_decoder || by_patcher)
                && refused_as(reference, 422, "Invalid", "")
                && causes_of(reference).iter().any(overflow)
                || by_schema && refused_as(reference, 422, "Invalid", "") && causes_of(reference).iter().any(same_field)
        },
    },
    Allowed {
        name: "an item of a list named by its index (`spec.zones[0]`), where 1.20 names the list",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("regions", 1, 0)],
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
        headers: &[],
        headers_only: false,
        stored: WHOLE,
        expected: &[seen("regions", 1, 0)],
        per_thousand: 6,
        reason: "A custom resource's metadata is validated from its unstructured form, whose labels read as no labels at all when one of them is not a string (a `null` in an applied configuration), so 1.20 stores invalid label keys as empty labels, or refuses only the body's other mistakes (with a conversion webhook the converted object's metadata is validated, as the entry on invalid labels through a webhook says). A built-in resource decodes the null as an empty value and validates the keys, as the tested server does.",
        applies: |s, request, tested, reference| {
            let applied: Value = serde_json::from_str(&request.body_text()).unwrap_or_default();
            let null_label = applied["metadata"]["labels"].as_object().is_some_and(|l| l.values().any(Value::is_null));
            let labels = |c: &Value| c["field"] == "metadata.labels";
            let ours_but_labels = causes_without_messages(tested, labels);
            // The other mistakes of the body refused alike; or none, and the reference wrote it.
            // (A field sent as null is missing to us, of type null to 1.20: the entry on nulls.)
            let rest_alike = if refused_as(reference, 422, "Invalid", "") {
                alike_but_required_for_null(&ours_but_labels, &causes_of(reference))
            } else {
                wrote(s, reference) && ours_but_labels.is_empty()
            };
            request.has_header("content-type", "apply-patch")
                && null_label
                && refused_as(tested, 422, "Invalid", "")
                && causes_of(tested).iter().any(labels)
                && rest_alike
        },
    },
    Allowed {
        name: "server-side apply by a manager whose last apply was at another version: our write where 1.20 answers 500 `failed to prune fields`",
        headers: &[],
        headers_only: false,
        stored: WHOLE,
        expected: &[seen("llamas", 1, 0)],
        per_thousand: 10,
        reason: "structured-merge-diff prunes what an applier stopped sending at the version of its last apply, converting the merged object there; 1.20's field manager converts it without the webhook's conversion and fails on the fields of the other version (kubernetes/kubernetes#117260 and #117356 report the same step failing with webhooks in 1.27). The tested server converts as the resource does and prunes.",
        applies: |s, request, tested, reference| {
            // Our write, at the version asked for, holds what the configuration sent.
            let version = s
                .versions
                .iter()
                .enumerate()
                .find_map(|(i, v)| request.path.starts_with(crate::subject::Subject::placeholder(i)).then_some(*v));
            let at_version = version.is_some_and(|v| tested.body["apiVersion"] == format!("{}/{v}", s.group));
            apply_failed_on_reference(request, reference, "failed to prune fields")
                && wrote(s, tested)
                && at_version
                && applied_known_fields(request, &tested.warnings).is_some_and(|k| holds(&tested.body, &k))
        },
    },
    Allowed {
        name: "an apply with an invalid label: our 422 where 1.20, converting by webhook, answers 500 with the same cause",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0)],
        per_thousand: 5,
        reason: "1.20 converts an applied configuration through the CRD's conversion webhook and validates the converted object's metadata there, so an invalid label key fails as the webhook's 500 `returned invalid metadata` (the same CRD with `strategy: None` answers 422, as the tested server does, from validation).",
        applies: |_, request, tested, reference| {
            let cause = tested.body["details"]["causes"][0]["message"].as_str().unwrap_or("<none>");
            apply_failed_on_reference(request, reference, "conversion webhook for ")
                && refused_as(tested, 422, "Invalid", "")
                && causes_of(tested).len() == 1
                && message(reference).contains("returned invalid metadata: metadata.labels")
                && message(reference).ends_with(cause)
        },
    },
    Allowed {
        name: "an empty last-applied annotation: ours left empty by kubectl's server-side apply where 1.20 writes the configuration in it",
        headers: &[],
        headers_only: false,
        stored: &[&["metadata", "annotations", LAST_APPLIED]],
        expected: &[seen("llamas", 1, 0)],
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
pub fn no_longer_seen(seen: &std::collections::BTreeMap<&'static str, (usize, usize)>) -> Vec<&'static str> {
    TO_FIX_LABELS.iter().map(|(name, _)| *name).filter(|name| !seen.contains_key(name)).collect()
}

/// Whether `request` and its answers show a known defect; its name.
pub fn to_fix(subject: &Subject, request: &Request, tested: &Answer, reference: &Answer) -> Option<&'static str> {
    let by_label = TO_FIX_LABELS.iter().find(|(_, labels)| labels.contains(&request.label.as_str()));
    by_label.map(|(name, _)| *name).or_else(|| {
        let applies = |a: &&Allowed| {
            tested.header_difference(reference, a.headers).is_none() && (a.applies)(subject, request, tested, reference)
        };
        TO_FIX.iter().find(applies).map(|a| a.name)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    pub(crate) use super::{NAMES_LINK, OLD_NAMES_LINK};

    fn status(code: u16, reason: &str, message: &str) -> Answer {
        Answer::json(code, serde_json::json!({"kind": "Status", "code": code, "reason": reason, "message": message}))
    }

    #[test]
    fn strict_decoding_is_allowed_where_1_20_answers_a_later_check_instead() {
        let request = Request::new("create", reqwest::Method::POST, "{gv}/widgets")
            .query("fieldValidation=Strict")
            .json(&serde_json::json!({"spec": {"horns": 2}}));
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
    fn a_client_mistake_1_20_fails_is_allowed_only_as_the_refusal_it_names_for_reads_or_writes() {
        let entry = ON_PURPOSE.iter().find(|e| e.name.starts_with("a client's mistake")).unwrap();
        let theirs = status(500, "", "resourceVersion: Invalid value: \"bogus\": strconv.ParseUint: parsing \"bogus\"");
        let allowed = |method: reqwest::Method, ours: &Answer| {
            let request = Request::new("rv", method, "{gv}/widgets/w").query("resourceVersion=bogus");
            (entry.applies)(&crate::subject::tests::WIDGETS, &request, ours, &theirs)
        };
        assert!(allowed(reqwest::Method::GET, &status(400, "BadRequest", "invalid resource version")));
        assert!(!allowed(reqwest::Method::GET, &status(409, "Conflict", "")), "a read has no precondition");
        assert!(allowed(reqwest::Method::PUT, &status(409, "Conflict", "")));
        assert!(!allowed(reqwest::Method::PUT, &status(400, "Invalid", "")), "another reason");
    }

    #[test]
    fn list_indices_leave_field_paths() {
        assert_eq!(without_list_indices("spec.zones[0]"), "spec.zones");
        assert_eq!(without_list_indices("a[12].b[3].c"), "a.b.c");
        assert_eq!(without_list_indices("a[x].b[]"), "a[x].b[]");
        assert_eq!(without_list_indices("plain"), "plain");
    }
}
