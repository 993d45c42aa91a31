//! Each entry of the tables proven: an example of the two answers it allows, taken whole from a
//! run against the reference (`examples.jsonl`, kept in step with the tables by `make
//! conformance-examples` from a run's `conformance-<plural>-allowed.jsonl`), and near misses of
//! that example, each changing one thing, that it must refuse (a wrong code or reason, a
//! missing cause, a header it does not name), each judged by the entry itself (its `applies`
//! and the headers it names), not by whichever entry of the table would match first. An entry
//! that allows a write one side made and the other refused is proven on what was stored too:
//! our read after its example must be what the write must have stored, and a near miss of that
//! read is refused.

use crate::allowed::{self, Allowed};
use crate::exchange::{Answer, Request};
use crate::subject::{Subject, Values};
use crate::tally::{Part, Tally};
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

/// Each entry's near miss, by the start of its name: what it changes, and the change.
const NEAR_MISSES: &[(&str, &str, Miss)] = &[
    ("the wording", "another reason", |_, o, _| o.body["reason"] = json!("Conflict")),
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
    ("a watch asking only for a PartialObjectMetadataList", "the reference's stream with an event", |_, _, r| {
        r.body = json!([{"type": "ADDED", "object": {}}]);
    }),
    ("the same set of causes", "our extra cause", |_, o, _| {
        let extra = json!({"field": "spec.extra", "reason": "FieldValueInvalid", "message": "extra"});
        if let Some(c) = o.body["details"]["causes"].as_array_mut() {
            c.push(extra);
        }
    }),
    ("managedFields kept", "our managedFields empty", |_, o, _| o.body["metadata"]["managedFields"] = json!([])),
    ("managedFields kept", "the reference's entry not among ours", |_, _, r| {
        r.body["metadata"]["managedFields"] = json!([{"manager": "other", "operation": "Update"}]);
    }),
    ("managedFields kept", "a write without a status it cannot type", |q, _, _| {
        *q = Request::new("a patch", reqwest::Method::PATCH, "{gv}/regions/r").json(&json!({"status": {}}));
    }),
    ("a number an integer field cannot hold", "our extra cause", |_, o, _| {
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
    ("null for a field", "the reference refused something else too", |_, _, r| {
        let other = json!({"field": "spec.other", "reason": "FieldValueInvalid", "message": "Invalid value: 1"});
        if let Some(c) = r.body["details"]["causes"].as_array_mut() {
            c.push(other);
        }
    }),
    ("null for a field", "our refusal of another field", |_, o, _| first_cause(o)["field"] = json!("spec.elsewhere")),
    ("null for a field", "no null sent", |q, _, _| {
        *q = q.clone().body(q.body_text().replace("null", "1"));
    }),
    ("integers beyond 2^53", "our float written otherwise", |_, o, _| {
        o.body =
            serde_json::from_str(&o.body.to_string().replace("9223372036854776000", "9223372036854775808")).unwrap();
    }),
    ("an integer beyond int64", "the reference refused no integer", |_, _, r| r.body["details"]["causes"] = json!([])),
    ("a merge patch to a version not served", "the reference's extra Warning of a nested field", |_, _, r| {
        r.warnings.push(r#"299 - "unknown field \"spec.weight\"""#.into());
    }),
    ("a JSON body labelled protobuf", "the reference answered (400)", |_, _, r| r.code = 400),
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

/// Whether `entry` itself allows the answers of `example` (changed by a near miss): its
/// `applies`, and the headers it names, once the headers the example's other entries (those
/// judging only headers) allow are made the same, as the tally makes them.
fn explains(entry: &Allowed, example: &Example, request: &Request, ours: &Answer, reference: &Answer) -> bool {
    let subject = subject(&example.subject);
    let mut reference = reference.clone();
    let others = allowed::ON_PURPOSE.iter().filter(|o| o.headers_only && o.name != entry.name);
    for other in others.filter(|o| example.entries.iter().any(|name| name == o.name)) {
        for header in other.headers {
            reference.set_header(*header, ours);
        }
    }
    let headers = entry.headers_only || ours.header_difference(&reference, entry.headers).is_none();
    headers && (entry.applies)(subject, request, ours, &reference)
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
        if !explains(entry, example, &example.request, &example.ours, &example.reference) {
            failures.push(format!("its example is not allowed: {}", entry.name));
        }
        for (what, miss) in near_misses(entry) {
            let (mut request, mut ours, mut reference) =
                (example.request.clone(), example.ours.clone(), example.reference.clone());
            miss(&mut request, &mut ours, &mut reference);
            let changes = [request != example.request, ours != example.ours, reference != example.reference];
            if changes.iter().filter(|changed| **changed).count() != 1 {
                failures.push(format!("the near miss ({what}) changes other than one of the three: {}", entry.name));
            }
            if explains(entry, example, &request, &ours, &reference) {
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

/// The read after a write of an example: 200 with `object`, or the reference's 404, with the
/// headers of `like`.
fn read_after(like: &Answer, object: Option<&Value>) -> Answer {
    let answer = match object {
        Some(object) => Answer::json(200, object.clone()),
        None => Answer::json(
            404,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound"}),
        ),
    };
    Answer { cache_control: like.cache_control.clone(), audit_ids: like.audit_ids, ..answer }
}

#[test]
fn an_entry_allowing_a_write_only_ours_made_holds_our_read_to_what_it_must_store() {
    let examples: Vec<Example> = EXAMPLES.lines().map(|line| serde_json::from_str(line).expect("an example")).collect();
    // Creates, whose objects did not exist before them.
    let creates = examples
        .iter()
        .filter(|e| e.request.method != reqwest::Method::GET && e.ours.code == 201 && e.reference.code >= 400);
    let mut proven = 0;
    for example in creates {
        let subject = subject(&example.subject);
        let replay = |ours_read: Answer| {
            let mut tally = Tally::new(subject, false);
            let none = || Ok(read_after(&example.reference, None));
            tally.corpus_write(&example.request, (none(), none()));
            tally.record(Part::Corpus, &example.request, Ok(example.ours.clone()), Ok(example.reference.clone()));
            let read = tally.read_after(Part::Corpus, &example.request).expect("a read after an allowed write");
            tally.record(Part::Corpus, &read, Ok(ours_read), none());
            tally
        };
        let as_answered = replay(read_after(&example.reference, Some(&example.ours.body)));
        assert!(as_answered.unexplained.is_empty(), "{:?}", as_answered.unexplained);
        assert_eq!(as_answered.stored_as_computed, 1, "{}", example.request.label);
        // Near misses of the read: a field the request did not ask for, one it asked for lost.
        let mut extra = example.ours.body.clone();
        extra["spec"]["extra"] = json!(1);
        let mut lost = example.ours.body.clone();
        if let Some(spec) = lost["spec"].as_object_mut() {
            let first = spec.keys().next().cloned().unwrap_or_default();
            spec.remove(&first);
        }
        for near_miss in [extra, lost] {
            let tally = replay(read_after(&example.reference, Some(&near_miss)));
            assert!(
                tally.unexplained.iter().any(|u| u.contains("not what the write must store")),
                "{}: {:?}",
                example.request.label,
                tally.unexplained
            );
        }
        proven += 1;
    }
    assert!(proven > 0, "no example of a create only ours made");
}
