//! Each entry of the tables proven: an example of the two answers it allows, taken whole from a
//! run against the reference (`examples.jsonl`, kept in step with the tables by `make
//! conformance-examples` from a run's `conformance-<plural>-allowed.jsonl`), and a near miss of
//! that example it must refuse (a wrong code or reason, a missing cause, a wrong stored field, a
//! header it does not name).

use crate::allowed::{self, Allowed};
use crate::exchange::{Answer, Request};
use crate::subject::{Subject, Values};
use crate::tally::explaining;
use serde_json::{Value, json};

/// One allowed difference seen in a run: the entries that explained it, the subject, the
/// request and both answers.
#[derive(serde::Deserialize)]
struct Example {
    entries: Vec<String>,
    subject: String,
    request: Request,
    ours: Answer,
    reference: Answer,
}

const EXAMPLES: &str = include_str!("examples.jsonl");

fn object(name: &str, version: &str) -> Value {
    json!({"apiVersion": version, "kind": "Object", "metadata": {"name": name}})
}

fn no_fields(_: &str) -> Option<&'static [&'static str]> {
    None
}

/// The farm server's Llamas, as far as the entries look at them.
const LLAMAS: Subject = Subject {
    group: "farm.example.com",
    reference_group: "ref.example.com",
    kind: "Llama",
    plural: "llamas",
    namespaced: true,
    versions: &["v1alpha", "v1"],
    object,
    fields: &[crate::subject::Field { path: no_fields, values: Values::Number }],
    statuses: Vec::new,
    selectable_fields: &["spec.color"],
    unrenamed: &[],
};

/// The example server's Regions, likewise.
const REGIONS: Subject = Subject {
    group: "ops.example.com",
    reference_group: "crd.ops.example.com",
    kind: "Region",
    plural: "regions",
    namespaced: false,
    versions: &["v1"],
    ..LLAMAS
};

fn subject(plural: &str) -> &'static Subject {
    static SUBJECTS: [Subject; 2] = [LLAMAS, REGIONS];
    SUBJECTS.iter().find(|s| s.plural == plural).unwrap_or_else(|| panic!("no subject {plural}"))
}

/// A change of an example that its entry must refuse.
type Miss = fn(&mut Request, &mut Answer, &mut Answer);

/// The first cause of an answer, to change.
fn first_cause(answer: &mut Answer) -> &mut Value {
    &mut answer.body["details"]["causes"][0]
}

/// Our object with a label the reference's does not have.
fn another_label(_: &mut Request, ours: &mut Answer, _: &mut Answer) {
    ours.body["metadata"]["labels"]["near"] = json!("miss");
}

/// Each entry's near miss, by the start of its name: what it changes, and the change.
const NEAR_MISSES: &[(&str, &str, Miss)] = &[
    ("the order of a list", "an item of ours missing", |_, o, _| {
        o.body["items"].as_array_mut().map(Vec::pop);
    }),
    ("the order of a watch", "an event of ours missing", |_, o, _| {
        o.body.as_array_mut().map(Vec::pop);
    }),
    ("the wording", "another reason", |_, o, _| o.body["reason"] = json!("Conflict")),
    ("Warning headers", "a Warning of a field the body does not have", |_, o, _| {
        o.warnings.push(r#"299 - "unknown field \"spec.nowhere\"""#.into());
    }),
    ("fieldValidation=Strict", "the reference failed (500)", |_, _, r| {
        *r = Answer::json(500, json!({"kind": "Status", "code": 500, "reason": "InternalError"}));
    }),
    ("an unsupported fieldValidation", "our cause of another reason", |_, o, _| {
        o.body["details"]["causes"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .for_each(|c| c["reason"] = json!("FieldValueInvalid"));
    }),
    ("sendInitialEvents", "our refusal with other causes, or our watch list without its initial events", |_, o, _| {
        if o.code == 422 {
            first_cause(o)["reason"] = json!("FieldValueInvalid");
        } else if let Some(events) = o.body.as_array_mut() {
            events.retain(|e| e["type"] == "BOOKMARK");
        }
    }),
    ("a field selector", "the reference refused another field", |_, _, r| {
        r.body["message"] = json!("field label not supported: spec.other");
    }),
    ("managedFields: our status fields", "our object with another label", another_label),
    ("managedFields after a write of /status", "our object with another label", another_label),
    ("an apply of the status", "the reference's conflict over the status", |_, _, r| {
        r.body["details"]["causes"][0]["field"] = json!(".status.phase");
    }),
    ("Audit-Id of a watch", "our watch with two Audit-Ids", |_, o, _| o.audit_ids = 2),
    ("Content-Type of Table", "our Content-Type naming another version", |_, o, _| {
        o.content_type = o.content_type.replace(";v=v1", ";v=v2");
    }),
    ("the Name column", "our Table with another description", |_, o, _| {
        o.body = serde_json::from_str(&o.body.to_string().replace(allowed::tests::NAMES_LINK, "elsewhere")).unwrap();
    }),
    ("a Table column of a list", "our cell of the list with another item", |_, o, _| {
        o.body["rows"][0]["cells"][1] = json!("east-a");
    }),
    ("paths and methods", "our Status with another message", |_, o, _| o.body["message"] = json!("no such thing")),
    ("protobuf", "our answer in YAML", |_, o, _| o.content_type = "application/yaml".into()),
    ("a kind or apiVersion", "the reference's conflict (409)", |_, _, r| {
        *r = Answer::json(409, json!({"kind": "Status", "code": 409, "reason": "Conflict"}));
    }),
    ("an empty PartialObjectMetadataList", "our list with an item", |_, o, _| o.body["items"] = json!([{}])),
    ("a limit with resourceVersion=0", "our page without a continue token", |_, o, _| {
        if let Some(m) = o.body["metadata"].as_object_mut() {
            m.remove("continue");
        }
    }),
    ("a watch from a resourceVersion before", "our watch without events", |_, o, _| o.body = json!([])),
    ("resourceVersionMatch=Exact", "our retry after 2 s", |_, o, _| o.body["details"]["retryAfterSeconds"] = json!(2)),
    ("an empty string", "the reference refused no empty string", |_, _, r| {
        r.body["details"]["causes"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .for_each(|c| c["message"] = json!("Required value"));
    }),
    ("the same set of causes", "our extra cause", |_, o, _| {
        let extra = json!({"field": "spec.extra", "reason": "FieldValueInvalid", "message": "extra"});
        if let Some(c) = o.body["details"]["causes"].as_array_mut() {
            c.push(extra);
        }
    }),
    ("an apply the reference cannot type", "our Warning of something else", |_, o, _| {
        o.warnings.push(r#"299 - "something else""#.into());
    }),
    ("an apply the reference cannot type", "1.20 could not type a value of the wrong type", |_, _, r| {
        r.body["message"] = json!("failed to create typed patch object: .spec.weight: expected numeric (int or float)");
    }),
    ("the order of verbs", "a verb of ours missing", |_, o, _| {
        o.body["resources"][0]["verbs"].as_array_mut().map(Vec::pop);
    }),
    ("a client's mistake", "our refusal of another reason", |_, o, _| o.body["reason"] = json!("Unknown")),
    ("a full last page", "our page not full", |_, o, _| {
        o.body["items"].as_array_mut().map(Vec::pop);
    }),
    ("DELETE", "our deleted object of another uid", |_, o, _| o.body["metadata"]["uid"] = json!("another")),
    ("managedFields: an applied or written empty map", "our object with another label", another_label),
    ("managedFields kept", "our managedFields empty", |_, o, _| o.body["metadata"]["managedFields"] = json!([])),
    ("export=true", "our object with another label", another_label),
    ("null for a field", "the reference refused something else too", |_, o, r| {
        let other = json!({"field": "spec.other", "reason": "FieldValueInvalid", "message": "Invalid value: 1"});
        if let Some(c) = r.body["details"]["causes"].as_array_mut() {
            c.push(other);
        }
        if o.code == 422 {
            first_cause(o)["field"] = json!("spec.elsewhere");
        }
    }),
    ("null for a field", "no cause on either side", |_, o, r| {
        o.body["details"]["causes"] = json!([]);
        r.body["details"]["causes"] = json!([]);
    }),
    ("integers beyond 2^53", "our float written otherwise", |_, o, _| {
        o.body =
            serde_json::from_str(&o.body.to_string().replace("9223372036854776000", "9223372036854775808")).unwrap();
    }),
    ("an integer beyond int64", "the reference refused no integer", |_, _, r| r.body["details"]["causes"] = json!([])),
    ("an item of a list named by its index", "our cause on another field", |_, o, _| {
        first_cause(o)["field"] = json!("spec.other[0]");
    }),
    ("an apply whose labels carry a null", "our refusal without a cause on the labels", |_, o, _| {
        if let Some(c) = o.body["details"]["causes"].as_array_mut() {
            c.retain(|c| c["field"] != "metadata.labels");
        }
    }),
    ("server-side apply by a manager", "our object at another version", |_, o, _| {
        o.body["apiVersion"] = json!("elsewhere/v9");
    }),
    ("server-side apply by a manager", "our answer of another kind", |_, o, _| o.body["kind"] = json!("Alpaca")),
    ("an apply with an invalid label", "our second cause", |_, o, _| {
        let extra = json!({"field": "spec.extra", "reason": "FieldValueInvalid", "message": "extra"});
        if let Some(c) = o.body["details"]["causes"].as_array_mut() {
            c.push(extra);
        }
    }),
    ("an empty last-applied annotation", "our record not empty", |_, o, _| {
        o.body["metadata"]["annotations"][allowed::LAST_APPLIED] = json!("{}");
    }),
];

/// The near misses of `entry` (one at least).
fn near_misses(entry: &Allowed) -> Vec<(&'static str, Miss)> {
    let found: Vec<_> = NEAR_MISSES
        .iter()
        .filter(|(start, _, _)| entry.name.starts_with(start))
        .map(|(_, what, miss)| (*what, *miss))
        .collect();
    assert!(!found.is_empty(), "no near miss for the entry {:?}", entry.name);
    found
}

fn explains(entry: &Allowed, subject: &Subject, request: &Request, ours: &Answer, reference: &Answer) -> bool {
    let on_purpose = explaining(subject, request, ours, reference);
    on_purpose.is_some_and(|entries| entries.iter().any(|e| e.name == entry.name))
        || allowed::to_fix(subject, request, ours, reference) == Some(entry.name)
}

#[test]
fn each_entry_allows_its_example_and_refuses_a_near_miss_of_it() {
    let examples: Vec<Example> = EXAMPLES.lines().map(|line| serde_json::from_str(line).expect("an example")).collect();
    let mut failures = Vec::new();
    for entry in allowed::ON_PURPOSE.iter().chain(allowed::TO_FIX) {
        // The example it explains with the fewest other entries.
        let explained = examples.iter().filter(|e| e.entries.iter().any(|name| name == entry.name));
        let Some(example) = explained.min_by_key(|e| e.entries.len()) else {
            failures.push(format!("no example: {}", entry.name));
            continue;
        };
        let subject = subject(&example.subject);
        if !explains(entry, subject, &example.request, &example.ours, &example.reference) {
            failures.push(format!("its example is not allowed: {}", entry.name));
        }
        for (what, miss) in near_misses(entry) {
            let (mut request, mut ours, mut reference) =
                (example.request.clone(), example.ours.clone(), example.reference.clone());
            miss(&mut request, &mut ours, &mut reference);
            if explains(entry, subject, &request, &ours, &reference) {
                failures.push(format!("the near miss ({what}) is allowed: {}", entry.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn each_near_miss_and_example_names_an_entry_of_the_tables() {
    let names: Vec<&str> = allowed::ON_PURPOSE.iter().chain(allowed::TO_FIX).map(|e| e.name).collect();
    let stale_misses = NEAR_MISSES.iter().filter(|(start, _, _)| !names.iter().any(|n| n.starts_with(start)));
    let stale: Vec<String> = stale_misses.map(|(start, what, _)| format!("near miss ({what}): {start}")).collect();
    let examples = EXAMPLES.lines().map(|line| serde_json::from_str::<Example>(line).expect("an example"));
    let stale_examples = examples.flat_map(|e| e.entries).filter(|name| !names.contains(&name.as_str()));
    let stale: Vec<String> = stale.into_iter().chain(stale_examples.map(|n| format!("example: {n}"))).collect();
    assert!(stale.is_empty(), "no such entry (remove them):\n{}", stale.join("\n"));
}
