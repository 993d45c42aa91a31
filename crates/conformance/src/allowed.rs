//! The reviewed tables of differences from the reference.
//!
//! [`ON_PURPOSE`]: the tested server answers differently by design: a CustomResourceDefinition
//! behaves unlike a built-in resource and the tested server behaves as the built-in (and as
//! servers on k8s.io/apiserver do); or the reference (kube-apiserver 1.37.2) fails where the
//! client made the mistake (its 500s, a reset stream), and the tested server answers the mistake;
//! or the reference words or orders the same answer otherwise.
//!
//! [`TO_FIX`]: differences the suite found that are defects of the tested server, not yet fixed.
//! Each is a piece of work; the issue of this suite stays open while this table has entries.
//!
//! An entry matches only the requests and answers it explains; a difference no entry explains
//! fails the test.

use crate::exchange::{Answer, Header, Request};
use crate::expected::unknown_field;
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
    /// side's read must still show what that side answered to the write; where ours wrote and
    /// the reference refused, ours must show what [`crate::expected`] computes the write must
    /// store, and the reference's the object before it, whatever the entry names.
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

/// The whole read, where one side wrote what the other refused (where both wrote or both
/// refused, the reads are compared whole).
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

/// A Table, or a watch's events of Tables, with each cell that is a JSON list of strings (a
/// CRD's printer column of a list) written as its items joined by commas.
fn with_lists_joined(body: &Value) -> Value {
    if let Value::Array(events) = body {
        let joined = events.iter().map(|event| {
            let mut event = event.clone();
            if let Some(object) = member_mut(&mut event, &["object"]) {
                *object = with_lists_joined(object);
            }
            event
        });
        return Value::Array(joined.collect());
    }
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

/// Whether every warning of `answer` says that the version of the request is deprecated (which
/// both sides send for a request under it).
fn only_deprecations(answer: &Answer) -> bool {
    answer.warnings.iter().all(|w| w.contains(" is deprecated; use "))
}

/// Whether `request` is an apply the reference answered with a 500 whose message starts with
/// `words`.
fn apply_failed_on_reference(request: &Request, reference: &Answer, words: &str) -> bool {
    request.has_header("content-type", "apply-patch") && reference.code == 500 && message(reference).starts_with(words)
}

fn text(answer: &Answer) -> String {
    answer.body.to_string()
}

/// Whether `answer` is a Status of `code` and `why` whose message begins with `message`.
fn refused_as(answer: &Answer, code: u16, why: &str, message: &str) -> bool {
    answer.code == code && reason(answer) == why && self::message(answer).starts_with(message)
}

/// The causes of an answer, each once, in the order they first appear.
fn distinct_causes(answer: &Answer) -> Vec<Value> {
    each_once(causes_of(answer))
}

/// `causes` with each repeated one left out, in the order they first appear.
fn each_once(causes: Vec<Value>) -> Vec<Value> {
    let mut seen = Vec::new();
    for cause in causes {
        if !seen.contains(&cause) {
            seen.push(cause);
        }
    }
    seen
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

/// `answer` without the cause a CRD's strategy adds when an error keeps its validation rules from
/// running (`<nil>: … some validation rules were not checked because the object was invalid`):
/// it follows from the blocking cause an entry explains, which the other side may not have.
fn without_rules_not_checked(answer: &Answer) -> Answer {
    let mut answer = answer.clone();
    if let Some(causes) = answer.body.pointer_mut("/details/causes").and_then(Value::as_array_mut) {
        causes.retain(|c| !message_of(c).contains("some validation rules were not checked"));
    }
    answer
}

/// Whether a cause is a 1.20 CRD's refusal of a null as being of type null.
fn refuses_null(cause: &Value) -> bool {
    let message = message_of(cause);
    message.contains("must be of type") && message.contains("\"null\"")
}

/// The value of the request's query parameter `name` (the first, when repeated).
fn query_value<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.query.split('&').find_map(|p| p.split_once('=').filter(|(n, _)| *n == name).map(|(_, v)| v))
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
    crate::expected::body_of(request)
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
    // metadata are left out of an object, as Go's encoding leaves them, and so is an empty
    // namespace (a cluster-scoped object has none); a label or annotation applied as `null` is
    // stored as an empty string, as Go reads `null` into a string.
    if let Some(metadata) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
        if metadata.get("namespace").is_some_and(|n| n == "") {
            metadata.remove("namespace");
        }
        for texts in ["labels", "annotations"] {
            for value in metadata.get_mut(texts).and_then(Value::as_object_mut).into_iter().flat_map(|m| m.values_mut())
            {
                if value.is_null() {
                    *value = Value::String(String::new());
                }
            }
        }
        metadata
            .retain(|_, v| !(v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(|m| m.is_empty())));
    }
    Some(applied)
}

/// The refusals the tested server may answer `request` with where the reference's answer is
/// one of 1.20's 500s for a client's mistake (none for another answer).
fn refusals_of_a_client_mistake<'a>(
    request: &Request,
    reference: &'a Answer,
) -> impl Iterator<Item = &'static (u16, &'static str)> + 'a {
    let read = request.method == reqwest::Method::GET;
    CLIENT_MISTAKES_THE_REFERENCE_FAILS
        .iter()
        .filter(move |(theirs, _, _)| reference.code == 500 && message(reference).contains(theirs))
        .flat_map(move |(_, reads, writes)| if read { reads.iter() } else { writes.iter() })
}

/// `value` without any `managedFields` member, at any depth.
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

/// Refusals by code and reason.
type Refusals = &'static [(u16, &'static str)];

/// kube-apiserver 1.37's 500s for a client's mistake (a phrase of its message), and the code
/// and reason the tested server answers the same mistake with: to a read, and to a write.
const CLIENT_MISTAKES_THE_REFERENCE_FAILS: &[(&str, Refusals, Refusals)] = &[
    // resourceVersion=bogus or -1 on a read: 400. A write carrying resourceVersion "bogus":
    // the precondition cannot hold (409), or the patched object is of another type first (422).
    // An apply carrying it: the decoder's 400.
    ("strconv.ParseUint: parsing", &[(400, "BadRequest")], &[(400, "BadRequest"), (409, "Conflict"), (422, "Invalid")]),
    ("resourceVersion should not be set on objects to be created", &[], &[(400, "BadRequest")]),
    // An apply whose values do not match the schema (ours: 400 or 422 as a write of that body,
    // 409 when its conflicts come first) or that declares no type.
    ("failed to create typed patch object", &[], &[(400, "BadRequest"), (409, "Conflict"), (422, "Invalid")]),
    // A list's representation asked of one object (a GET of an object accepting only
    // PartialObjectMetadataList): ours is the 406 of a representation it cannot give.
    ("content is not a list", &[(406, "NotAcceptable")], &[]),
    // A patch that empties `apiVersion`: ours is the patcher's 422 (the patched object is of no
    // type), the reference's decoder fails on it.
    ("Object 'apiVersion' is missing in", &[], &[(422, "Invalid")]),
];

pub const ON_PURPOSE: &[Allowed] = &[
    Allowed {
        name: "the wording of an error message (code, reason, details and causes equal)",
        headers: &[],
        headers_only: false,
        stored: &[],
        // Within 2: a refusal whose causes the reference happens to list in our order (Go's map
        // order) counts here, else under the entry on the same set of causes. (At the rate of a
        // random seed of 5,000 against 1.37.2: 1,511 of 13,814.)
        expected: &[seen("llamas", 112, 57).within(2), seen("regions", 0, 69).within(2)],
        per_thousand: 110,
        reason: "Parse errors name their cause in Go's words in the reference (`strconv.ParseInt: parsing \"x\": invalid syntax`, json-iterator's byte offsets, `unable to parse requirement: found ''`); the tested server says the same in its own. Clients act on the code, reason and causes' fields, never on this text.",
        applies: |_, _, tested, reference| only_wording(tested, reference),
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
        name: "a Table column of a list: our items joined by commas, where a CRD's printer column prints the list as JSON",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("regions", 2, 5)],
        per_thousand: 12,
        reason: "A CRD's printer column of a list (`jsonPath: .spec.zones`) prints the list as JSON (`[\"west-a\",\"west-b\"]`), in a Table and in a watch's Table events; a server's own columns can say it as kubectl's built-in columns do (`west-a,west-b`), which the example's Regions do. Compared: everything else.",
        applies: |_, request, tested, reference| {
            let joined = with_lists_joined(&reference.body);
            let tables = |answer: &Answer| match &answer.body {
                Value::Array(events) => request.is_watch() && events.iter().any(|e| e["object"]["kind"] == "Table"),
                body => body["kind"] == "Table",
            };
            tables(tested) && tested.code == reference.code && joined != reference.body && tested.body == joined
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
        name: "protobuf: our 415 for a protobuf body where the reference reads it as protobuf (400), and our 406 written as JSON where the reference writes it as protobuf",
        headers: &[Header::ContentType],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 5, 0)],
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
        expected: &[seen("llamas", 6, 0), seen("regions", 0, 0)],
        per_thousand: 4,
        reason: "A built-in resource's decoder refuses a body of another kind or version as BadRequest (`the kind in the data (Alpaca) does not match the expected kind (Llama)`) before it looks the object up, and its patcher refuses such a patched object as an Invalid `patch` (422), as the tested server does. A CRD decodes any kind: it first answers what else is wrong (404, a create of an object that exists, a missing resourceVersion), then refuses the kind as Invalid (422, `kind: Invalid value`), and a write of its status keeps the stored kind.",
        applies: |s, request, tested, reference| {
            let refused_type =
                |text: &str| text.contains("does not match the expected") || text.contains("is missing in");
            let by_decoder = refused_as(tested, 400, "BadRequest", "") && refused_type(message(tested));
            let cause = &tested.body["details"]["causes"][0];
            let by_patcher = refused_as(tested, 422, "Invalid", "")
                && causes_of(tested).len() == 1
                && cause["field"] == "patch"
                && cause["message"].as_str().is_some_and(refused_type);
            // What a CRD answers first: the object's absence, a name or namespace other than the
            // URL's (its decoder took the body), a missing or stale resourceVersion, the
            // kind or apiVersion (Invalid, with causes on those fields only, or none when the
            // patched object lost both); or, for a write of the status, the write.
            let refused_fields = ["kind", "apiVersion", "metadata.resourceVersion"];
            let reference_first = refused_as(reference, 404, "NotFound", "")
                || (request.method == reqwest::Method::POST && refused_as(reference, 409, "AlreadyExists", ""))
                || refused_as(reference, 400, "BadRequest", "the name of the object (")
                || refused_as(reference, 400, "BadRequest", "the namespace of the provided object does not match")
                || (refused_as(reference, 409, "Conflict", "Operation cannot be fulfilled on ")
                    && message(reference).contains("the object has been modified"))
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
        expected: &[seen("llamas", 1, 2)],
        per_thousand: 5,
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
        name: "a watch asking only for a PartialObjectMetadataList: our 406 where the reference's stream ends at its first event",
        headers: &[Header::ContentEncoding],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 0, 2), seen("regions", 0, 6)],
        per_thousand: 15,
        reason: "A watch's events carry one object each. kube-apiserver 1.37.2 accepts `as=PartialObjectMetadataList` when it negotiates a watch's media type, then cannot make a list of the first event's object (`you requested PartialObjectMetadataList, but the requested object is not a list`) and ends the stream without writing it: a 200 that never carries an event (a streaming list the client asked gzipped says `Content-Encoding: gzip` for its empty body). The tested server refuses the representation it cannot give, 406 NotAcceptable, as both refuse it for one object (a client's `as=PartialObjectMetadata` for the watch gets the events as metadata on both sides).",
        applies: |_, request, tested, reference| {
            request.is_watch()
                && request.has_header("accept", "as=PartialObjectMetadataList")
                && !request.has_header("accept", "as=PartialObjectMetadata;")
                && refused_as(tested, 406, "NotAcceptable", "only the following media types are accepted")
                && reference.code == 200
                && reference.body.is_null()
                // A streaming list the client asked gzipped is gzipped from its start (its
                // Content-Encoding sent before the first event fails); our refusal is not.
                && tested.content_encoding.is_empty()
                && (reference.content_encoding.is_empty() || reference.content_encoding == "gzip")
        },
    },
    Allowed {
        name: "a limit with resourceVersion=0",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 2, 0)],
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
        name: "the same set of causes, in another order or repeated",
        headers: &[],
        headers_only: false,
        stored: &[],
        // 4 to 8 on the corpus: four refusals repeat a cause, always; four list two or three
        // causes in Go's map order (an empty spec, a negative weight, two apply conflicts),
        // each now and then in another order than ours (runs saw 0 to 2 of them).
        expected: &[seen("llamas", 5, 0).within(2), seen("regions", 0, 1).within(2)],
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
        expected: &[seen("llamas", 1, 0), seen("regions", 0, 0)],
        per_thousand: 2,
        reason: "kube-apiserver 1.20 answers an apply carrying a field its schema does not declare, or a status that is not an object, with a 500 (`failed to create typed patch object`). So does current Kubernetes (apimachinery's `structuredmerge.go` still wraps structured-merge-diff's typing error as a 500). The tested server applies it as its other writes take such a body: an unknown field is dropped with a Warning (fieldValidation=Warn, Kubernetes 1.27) and owned by nobody, and the status, which a write of the object resets (Kubernetes 1.22), is not applied.",
        applies: |s, request, tested, reference| {
            // What we wrote holds every field the configuration sent but those our Warnings
            // name as unknown and the status; our other Warnings are the strategy's, of the
            // write the reference never made (a finalizer without a domain).
            let unknown_only = tested.warnings.iter().all(|w| {
                unknown_field(w).is_some()
                    || reference.warnings.contains(w)
                    || w.contains("prefer a domain-qualified finalizer name")
            });
            // Why 1.20 could not type it: a field its schema does not declare, which we warned
            // of, or a status that is not an object (`.status: expected map`).
            // (Since 1.2x the message names the object: `… object (/name; group/version, Kind=K): …`.)
            let why = message(reference).strip_prefix("failed to create typed patch object").unwrap_or_default();
            let why = match why.strip_prefix(" (") {
                Some(rest) => rest.split_once("): ").map_or("", |(_, why)| why),
                None => why.strip_prefix(": ").unwrap_or_default(),
            };
            // One reason, or several listed after `errors:`, one a line.
            let whys: Vec<&str> = match why.strip_prefix("errors:") {
                Some(list) => list.lines().map(str::trim).filter(|l| !l.is_empty()).collect(),
                None => vec![why],
            };
            // (Warned of, unless the request said fieldValidation=Ignore.)
            let ignore = query_value(request, "fieldValidation") == Some("Ignore");
            fn undeclared_field(why: &str) -> Option<&str> {
                why.strip_suffix(": field not declared in schema").map(|f| f.trim_start_matches('.'))
            }
            let explained = |why: &str| {
                let undeclared = undeclared_field(why)
                    .is_some_and(|field| ignore || tested.warnings.iter().any(|w| unknown_field(w) == Some(field)));
                undeclared || why.starts_with(".status: expected map")
            };
            let mut dropped = tested.warnings.clone();
            dropped
                .extend(whys.iter().filter_map(|w| undeclared_field(w)).map(|f| format!("unknown field \\\"{f}\\\"")));
            let known = applied_known_fields(request, &dropped);
            apply_failed_on_reference(request, reference, "failed to create typed patch object")
                && !whys.is_empty()
                && whys.iter().all(|why| explained(why))
                && wrote(s, tested)
                && unknown_only
                && known.is_some_and(|k| holds(&tested.body, &k))
        },
    },
    Allowed {
        name: "managedFields kept through a write carrying an untypable status",
        headers: &[],
        headers_only: false,
        stored: &[MANAGED_FIELDS],
        expected: &[seen("llamas", 0, 0), seen("regions", 0, 0)],
        per_thousand: 1,
        reason: "The kube-apiserver (1.20 and 1.37 alike) does not record a write that carries a value its schema cannot type, a status that is not an object (which the write then drops): its field manager fails (`[SHOULD NOT HAPPEN] failed to update managedFields`, `FieldManager.UpdateNoErrors`) and removes the object's managedFields, so a create stores none and an update keeps the entries the object had, without the writer's. The tested server types the object once the fields the write resets are dropped, and records the write.",
        applies: |_, request, tested, reference| {
            let entries =
                |answer: &Answer| answer.body["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
            let (ours, theirs) = (entries(tested), entries(reference));
            // A write carries the status it could not type; the read after it has no body.
            let untypable =
                applied(request).is_some_and(|b| b.get("status").is_some_and(|s| !s.is_object() && !s.is_null()));
            (untypable || request.method == reqwest::Method::GET)
                && ours.len() > theirs.len()
                && theirs.iter().all(|entry| ours.contains(entry))
                && without_managed_fields(&tested.body) == without_managed_fields(&reference.body)
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
        name: "a client's mistake that the reference answers with 500: our 4xx, by the table of its 500s",
        headers: &[Header::Warning],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 8, 8), seen("regions", 0, 6)],
        per_thousand: 20,
        reason: "kube-apiserver 1.37 (as 1.20 did) answers some malformed requests (an unparsable resourceVersion, a list's representation asked of one object, an apply that does not match the schema, a resourceVersion on a create, a patch that empties apiVersion) with a 500; the tested server answers the client's mistake with the 4xx of `CLIENT_MISTAKES_THE_REFERENCE_FAILS`, each listed with the reference's message, and warns of the unknown fields its decoder found first (the reference failed before it warned of any).",
        applies: |_, request, tested, reference| {
            // Our Warnings: the unknown fields our decoder found before our refusal; the
            // reference's 500 came before its decoder warned of any.
            let warned_unknown =
                tested.warnings.iter().all(|w| unknown_field(w).is_some() || reference.warnings.contains(w));
            warned_unknown
                && refusals_of_a_client_mistake(request, reference)
                    .any(|&(code, why)| refused_as(tested, code, why, ""))
        },
    },
    Allowed {
        name: "a full last page without a continue token",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 1, 0), seen("regions", 0, 1)],
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
        expected: &[seen("llamas", 11, 11), seen("regions", 1, 12)],
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
        name: "null for a field",
        headers: &[],
        headers_only: false,
        stored: WHOLE,
        expected: &[seen("llamas", 2, 0)],
        per_thousand: 1,
        reason: "A built-in resource reads `\"color\": null` as an unset field (a required one is then missing); a 1.20 CRD refuses a null for a field its schema does not make nullable as being of type null (and, its schema having validation rules, adds that they were not checked).",
        applies: |s, request, tested, reference| {
            let (tested, reference) = (&without_rules_not_checked(tested), &without_rules_not_checked(reference));
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
            // (Each cause once: the reference may repeat the metadata's, as the entry on the
            // order of causes says.)
            let other_causes_equal = refused_as(tested, 422, "Invalid", "")
                && refused_as(reference, 422, "Invalid", "")
                && causes(reference, false).len() > causes(tested, false).len()
                && each_once(causes(reference, true)) == each_once(causes(tested, false));
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
        // The write, and the corpus's read after it.
        expected: &[seen("llamas", 2, 0)],
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
        expected: &[seen("llamas", 1, 0), seen("regions", 1, 1)],
        per_thousand: 6,
        reason: "A built-in resource decodes an int64 field as an int64, and beyond its range the decoder refuses the body before validation: 400 BadRequest `Pod in version \"v1\" cannot be handled as a Pod: … ReadInt64: overflow` (the reference's own answer for a Pod's activeDeadlineSeconds); for a patch whose result does not decode, the patcher's 422 Invalid with one cause on `patch`. A CRD reads a JSON integer beyond int64 as a float, which its schema then refuses as `must be of type integer: \"number\"` (422). The tested server decodes as a built-in resource does.",
        applies: |_, _, tested, reference| {
            // (The cause both add, the schema having validation rules, that they were not checked.)
            let (tested, reference) = (&without_rules_not_checked(tested), &without_rules_not_checked(reference));
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
        name: "a number an integer field cannot hold: the reference's extra cause on the field `<nil>`",
        headers: &[],
        headers_only: false,
        stored: &[],
        expected: &[seen("llamas", 0, 0), seen("regions", 0, 1)],
        per_thousand: 3,
        reason: "For a number with a fraction or beyond int64 in an integer field, kube-openapi's number validator checks that it fits the field's format (`Checked value must be of type integer with format int64 in spec.capacity`) besides the type validator's FieldValueTypeInvalid; apiextensions-apiserver turns that error, which names no field, into a cause on the field `<nil>` with the value `\"\"` (so does 1.37.2). The tested server gives the type error alone, on its field; the other causes are the same set.",
        applies: |_, _, tested, reference| {
            let fieldless = |c: &Value| {
                c["field"] == "<nil>"
                    && c["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("Invalid value: \"\": Checked value must be of type integer"))
            };
            let set = |causes: Vec<Value>| {
                let mut set: Vec<String> = causes.iter().filter(|c| !fieldless(c)).map(Value::to_string).collect();
                set.sort();
                set
            };
            refused_as(tested, 422, "Invalid", "")
                && refused_as(reference, 422, "Invalid", "")
                && causes_of(reference).iter().any(fieldless)
                && !causes_of(tested).iter().any(fieldless)
                && set(causes_of(tested)) == set(causes_of(reference))
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

    fn status(code: u16, reason: &str, message: &str) -> Answer {
        Answer::json(code, serde_json::json!({"kind": "Status", "code": code, "reason": reason, "message": message}))
    }

    #[test]
    fn a_client_mistake_the_reference_fails_is_allowed_only_as_the_refusal_it_names_for_reads_or_writes() {
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
}
