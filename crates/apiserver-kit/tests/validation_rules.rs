//! apiserver-kit's validation rules against apiextensions-apiserver's: each case a schema with
//! `x-kubernetes-validations` and an object (and, for an update, the old object) validated by
//! both, the field errors (their paths and messages) and the ratcheting warnings compared word
//! for word; and schemas whose rules a CustomResourceDefinition would be refused for, the
//! problems compared. The reference is tools/rules-oracle (the validator of custom resources of
//! Kubernetes 1.37.2), built by the workspace's `scripts/control-plane.sh rules-oracle`.
//!
//! The kube-apiserver walks an object's properties in Go's map order, which is random: errors
//! of sibling properties are compared as sets.

mod oracle;

use apiserver_kit::validation_rules::Rules;
use serde_json::{Value as Json, json};

/// The oracle's answers to `requests`, in order.
fn reference(requests: &[Json]) -> Vec<Json> {
    oracle::answers("rules-oracle", requests, oracle::json)
}

/// One case: a name, the schema of the resource, the object and the old object (`null` for a
/// create).
struct Case {
    name: &'static str,
    schema: Json,
    object: Json,
    old: Json,
}

/// A resource's schema whose `spec` is `spec`.
fn with_spec(spec: Json) -> Json {
    json!({"type": "object", "properties": {"spec": spec}})
}

fn create(name: &'static str, spec: Json, object: Json) -> Case {
    Case { name, schema: with_spec(spec), object: json!({"spec": object}), old: Json::Null }
}

fn update(name: &'static str, spec: Json, old: Json, object: Json) -> Case {
    Case { name, schema: with_spec(spec), object: json!({"spec": object}), old: json!({"spec": old}) }
}

/// An object node of `properties` with `rules`.
fn object(properties: Json, rules: Json) -> Json {
    json!({"type": "object", "properties": properties, "x-kubernetes-validations": rules})
}

fn cases() -> Vec<Case> {
    let mut cases = scalars();
    cases.extend(messages_and_reasons());
    cases.extend(collections());
    cases.extend(types_and_formats());
    cases.extend(transitions_and_ratcheting());
    cases.extend(costs());
    cases.extend(list_types());
    cases
}

fn scalars() -> Vec<Case> {
    let int =
        json!({"type": "integer", "x-kubernetes-validations": [{"rule": "self % 2 == 0", "message": "must be even"}]});
    let number = json!({"type": "number", "x-kubernetes-validations": [{"rule": "self < 10.0"}]});
    let string = json!({"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]});
    let boolean = json!({"type": "boolean", "x-kubernetes-validations": [{"rule": "self"}]});
    let spec = json!({"type": "object", "properties": {"i": int, "n": number, "s": string, "b": boolean}});
    vec![
        create("scalars pass", spec.clone(), json!({"i": 2, "n": 1.5, "s": "ab", "b": true})),
        create("an integer fails", spec.clone(), json!({"i": 3})),
        create("a number written as an integer fails", spec.clone(), json!({"n": 12})),
        create("a fraction fails", spec.clone(), json!({"n": 12.5})),
        create("a string fails", spec.clone(), json!({"s": "b\"c"})),
        create("a boolean fails", spec.clone(), json!({"b": false})),
        create("several fail", spec, json!({"i": 1, "s": "x", "b": false})),
        create(
            "an object's rule on its fields",
            object(
                json!({"min": {"type": "integer"}, "max": {"type": "integer"}}),
                json!([{"rule": "self.min <= self.max"}]),
            ),
            json!({"min": 5, "max": 1}),
        ),
        create(
            "a missing field is no such key",
            object(json!({"x": {"type": "integer"}}), json!([{"rule": "self.x > 0"}])),
            json!({}),
        ),
        create(
            "has() guards a missing field",
            object(json!({"x": {"type": "integer"}}), json!([{"rule": "!has(self.x) || self.x > 0"}])),
            json!({}),
        ),
        create(
            "a division by zero",
            object(json!({"x": {"type": "integer"}}), json!([{"rule": "10 / self.x > 1", "message": "ten"}])),
            json!({"x": 0}),
        ),
        create(
            "escaped property names",
            object(
                json!({"a-b": {"type": "integer"}, "namespace": {"type": "string"}, "x__y": {"type": "integer"}}),
                json!([{"rule": "self.a__dash__b == 1 && self.__namespace__ == 'n' && self.x__underscores__y == 2"}]),
            ),
            json!({"a-b": 1, "namespace": "m", "x__y": 2}),
        ),
        create(
            "a nullable null is absent",
            object(
                json!({"x": {"type": "integer", "nullable": true, "x-kubernetes-validations": [{"rule": "self > 0"}]}}),
                json!([{"rule": "!has(self.x)"}]),
            ),
            json!({"x": null}),
        ),
        Case {
            name: "a root rule on the metadata name",
            schema: json!({"type": "object", "x-kubernetes-validations": [
                {"rule": "self.metadata.name.startsWith('a') && self.kind == 'Widget'", "message": "a-names only"}]}),
            object: json!({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "b", "uid": "u"}}),
            old: Json::Null,
        },
    ]
}

fn messages_and_reasons() -> Vec<Case> {
    let with = |rule: Json| object(json!({"x": {"type": "integer"}, "y": {"type": "string"}}), json!([rule]));
    let bad = json!({"x": 7, "y": "why"});
    let case = |name, rule: Json| create(name, with(rule), bad.clone());
    vec![
        case("the default message", json!({"rule": "self.x < 5"})),
        case("a message, trimmed", json!({"rule": "self.x < 5", "message": "  too big  "})),
        case("a message expression", json!({"rule": "self.x < 5", "messageExpression": "'x is ' + string(self.x)"})),
        case(
            "an empty message expression falls back",
            json!({"rule": "self.x < 5", "message": "m", "messageExpression": "' '"}),
        ),
        case(
            "a message expression with a line break falls back",
            json!({"rule": "self.x < 5", "messageExpression": "'a\\nb'"}),
        ),
        case(
            "a failing message expression falls back",
            json!({"rule": "self.x < 5", "messageExpression": "string(1 / (self.x - 7))"}),
        ),
        case(
            "a message expression too long falls back",
            json!({"rule": "self.x < 5", "messageExpression": format!("'{}'", "x".repeat(5121))}),
        ),
        case("forbidden", json!({"rule": "self.x < 5", "reason": "FieldValueForbidden", "message": "no"})),
        case("required", json!({"rule": "self.x < 5", "reason": "FieldValueRequired"})),
        case("duplicate of an object", json!({"rule": "self.x < 5", "reason": "FieldValueDuplicate"})),
        case("invalid", json!({"rule": "self.x < 5", "reason": "FieldValueInvalid", "message": "m"})),
        case("a field path", json!({"rule": "self.x < 5", "fieldPath": ".x", "message": "m"})),
        case("a quoted field path", json!({"rule": "self.x < 5", "fieldPath": "['y']"})),
        create(
            "duplicate of a scalar",
            object(
                json!({"y": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'why'", "reason": "FieldValueDuplicate"}]}}),
                json!([]),
            ),
            bad.clone(),
        ),
        create(
            "a field path into a map",
            object(
                json!({"labels": {"type": "object", "additionalProperties": {"type": "string"}}}),
                json!([{"rule": "!('a.b' in self.labels)", "fieldPath": ".labels['a.b']"}]),
            ),
            json!({"labels": {"a.b": "c"}}),
        ),
    ]
}

fn collections() -> Vec<Case> {
    let map = json!({"type": "object", "additionalProperties": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
        "x-kubernetes-validations": [{"rule": "self.all(k, k.size() < 3)", "message": "short keys"}]});
    let item = json!({"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.port > 0"}]});
    let map_list = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": item});
    let set = json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'x'"}]},
        "x-kubernetes-validations": [{"rule": "size(self) <= 2"}]});
    let atomic = json!({"type": "array", "items": {"type": "integer"}, "x-kubernetes-validations": [{"rule": "self.all(i, i > 0)", "messageExpression": "'all of ' + string(self) + ' must be positive'"}]});
    let spec = json!({"type": "object", "properties": {"m": map, "ports": map_list, "tags": set, "counts": atomic}});
    vec![
        create(
            "collections pass",
            spec.clone(),
            json!({"m": {"a": 1}, "ports": [{"name": "a", "port": 1}], "tags": ["a"], "counts": [1]}),
        ),
        create(
            "collections fail",
            spec.clone(),
            json!({"m": {"abc": -1}, "ports": [{"name": "a", "port": 0}], "tags": ["a", "x", "y"], "counts": [1, -2]}),
        ),
        create(
            "embedded resources",
            json!({"type": "object", "properties": {"template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-validations": [{"rule": "self.kind == 'Pod' && self.metadata.name.startsWith('p')"}]}}}),
            json!({"template": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "q"}}}),
        ),
        create(
            "allOf rules alone",
            json!({"type": "object", "properties": {"x": {"type": "integer"}},
                "allOf": [{"x-kubernetes-validations": [{"rule": "self.x > 1", "message": "branch"}]}]}),
            json!({"x": 1}),
        ),
        create(
            "allOf rules beside others",
            json!({"type": "object", "properties": {"x": {"type": "integer"}},
                "allOf": [{"x-kubernetes-validations": [{"rule": "self.x > 1", "message": "branch"}]}],
                "x-kubernetes-validations": [{"rule": "self.x > 2", "message": "own"}]}),
            json!({"x": 1}),
        ),
    ]
}

fn types_and_formats() -> Vec<Case> {
    let spec = object(
        json!({
            "ios": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [{"rule": "type(self) == int ? self < 5 : self.endsWith('%')"}]},
            "loose": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [{"rule": "self > 1"}]},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "timeout": {"type": "string", "format": "duration"},
            "data": {"type": "string", "format": "byte"},
        }),
        json!([
            {"rule": "!has(self.start) || !has(self.end) || self.start < self.end", "message": "ends before it starts"},
            {"rule": "!has(self.timeout) || self.timeout < duration('1h')"},
            {"rule": "!has(self.data) || size(self.data) == 2"},
            {"rule": "!has(self.day) || self.day.getDayOfWeek() != 0"},
        ]),
    );
    vec![
        create("int-or-string pass", spec.clone(), json!({"ios": 3, "loose": 2})),
        create("int-or-string fail", spec.clone(), json!({"ios": "3"})),
        create("int-or-string no such overload", spec.clone(), json!({"loose": "3"})),
        create(
            "formats fail",
            spec.clone(),
            json!({"start": "2024-01-02T00:00:00Z", "end": "2024-01-01T23:00:00+01:00", "timeout": "2h", "data": "aGVsbG8=",
                "day": "2024-06-02"}),
        ),
        create(
            "formats pass",
            spec,
            json!({"start": "2024-01-02T00:00:00Z", "end": "2024-01-02T00:00:01Z", "timeout": "30m", "data": "aGk=", "day": "2024-06-03"}),
        ),
    ]
}

fn transitions_and_ratcheting() -> Vec<Case> {
    let immutable = object(
        json!({"x": {"type": "integer"}, "y": {"type": "integer"}}),
        json!([{"rule": "self.x == oldSelf.x", "message": "x is immutable"}, {"rule": "self.y < 5"}]),
    );
    let optional = object(
        json!({"x": {"type": "integer"}}),
        json!([{"rule": "oldSelf.hasValue() ? self.x >= oldSelf.value().x : self.x == 0",
        "optionalOldSelf": true, "message": "x may only grow, from 0"}]),
    );
    let item = json!({"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.port >= oldSelf.port", "message": "ports only go up"}, {"rule": "self.port < 100"}]});
    let ports = json!({"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"], "items": item}}});
    let tags = json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self != 'x'"}]}}}});
    let labels = json!({"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "labels are immutable"}, {"rule": "self.size() < 3"}]}}}});
    vec![
        create("a transition rule is not run on a create", immutable.clone(), json!({"x": 1, "y": 1})),
        update("a transition rule on an update", immutable.clone(), json!({"x": 1, "y": 1}), json!({"x": 2, "y": 1})),
        update(
            "an unchanged failure is a warning",
            immutable.clone(),
            json!({"x": 1, "y": 7}),
            json!({"x": 1, "y": 7}),
        ),
        update("a changed failure is an error", immutable, json!({"x": 1, "y": 7}), json!({"x": 1, "y": 8})),
        create("optionalOldSelf on a create", optional.clone(), json!({"x": 1})),
        update("optionalOldSelf on an update", optional, json!({"x": 3}), json!({"x": 2})),
        update(
            "map list items correlate by key",
            ports.clone(),
            json!({"ports": [{"name": "a", "port": 5}, {"name": "b", "port": 200}]}),
            json!({"ports": [{"name": "b", "port": 200}, {"name": "a", "port": 4}, {"name": "c", "port": 300}]}),
        ),
        update(
            "an atomic list's items ratchet by the list",
            tags.clone(),
            json!({"tags": ["x", "y"]}),
            json!({"tags": ["x", "y"]}),
        ),
        update("an atomic list changed", tags, json!({"tags": ["x", "y"]}), json!({"tags": ["x", "z"]})),
        update(
            "map entries correlate by key",
            labels,
            json!({"labels": {"a": "long", "b": "b"}}),
            json!({"labels": {"a": "long", "b": "c", "d": "dddd"}}),
        ),
    ]
}

fn costs() -> Vec<Case> {
    let big: Vec<i64> = (0..1200).collect();
    let quadratic = json!({"type": "array", "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y || x != y))"}, {"rule": "size(self) < 0"}]});
    let row: Vec<i64> = (0..250).collect();
    let rows: Vec<Json> = (0..40).map(|_| json!(row)).collect();
    let row_rule = json!({"type": "array", "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y || x != y))"}]});
    vec![
        create("the per-call limit", json!({"type": "object", "properties": {"l": quadratic}}), json!({"l": big})),
        create(
            "the object's budget",
            json!({"type": "object", "properties": {"rows": {"type": "array", "items": row_rule}}}),
            json!({"rows": rows}),
        ),
    ]
}

/// `==` and `+` of `x-kubernetes-list-type: set` and `map` lists: order ignored, union and merge.
fn list_types() -> Vec<Case> {
    let set = |items: Json, rules: Json| {
        object(
            json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": items,
            "x-kubernetes-validations": rules}}),
            json!([]),
        )
    };
    let strings = set(
        json!({"type": "string"}),
        json!([{"rule": "self == oldSelf", "message": "tags are immutable"},
            {"rule": "self == ['b', 'a'] || self.size() != 2", "message": "two tags are a and b"},
            {"rule": "(self + ['a', 'c']).size() == self.size() + (('c' in self) ? 0 : 1) - (('a' in self) ? 0 : 1)"},
            {"rule": "self + ['c'] == ['c'] + self || !('c' in self)", "message": "a union keeps the left side's order"},
            {"rule": "['z'] + self != self + ['z']", "message": "an atomic left side"}]),
    );
    let numbers =
        set(json!({"type": "number"}), json!([{"rule": "self == oldSelf", "message": "numbers are immutable"}]));
    let lists = set(
        json!({"type": "array", "items": {"type": "string"}}),
        json!([{"rule": "self == oldSelf", "message": "lists are immutable"}]),
    );
    let ports = |keys: Json, rules: Json| {
        let item = json!({"type": "object", "properties": {"name": {"type": "string"}, "port-name": {"type": "string"},
            "protocol": {"type": "string"}, "port": {"type": "integer"}}});
        object(
            json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys,
            "items": item, "x-kubernetes-validations": rules}}),
            json!([]),
        )
    };
    let by_name = ports(
        json!(["name"]),
        json!([{"rule": "self == oldSelf", "message": "ports are immutable"},
            {"rule": "(oldSelf + self).size() == 3", "message": "a merge of three"},
            {"rule": "(oldSelf + self).exists(p, p.name == 'a' && p.port == 8)", "message": "the right side's item wins"},
            {"rule": "(oldSelf + self).map(p, p.name) == ['a', 'b', 'c']", "message": "merged in place"},
            {"rule": "oldSelf + self == self + oldSelf", "message": "a merge is not symmetric"}]),
    );
    let two_keys = ports(json!(["name", "protocol"]), json!([{"rule": "self == oldSelf", "message": "immutable"}]));
    let escaped =
        ports(json!(["port-name"]), json!([{"rule": "self == oldSelf", "message": "immutable by port-name"}]));
    let p = |name: &str, protocol: &str, port: i64| json!({"name": name, "port-name": name, "protocol": protocol, "port": port});
    vec![
        update(
            "a set reordered is unchanged",
            strings.clone(),
            json!({"tags": ["a", "b"]}),
            json!({"tags": ["b", "a"]}),
        ),
        update("a set changed", strings.clone(), json!({"tags": ["a", "b"]}), json!({"tags": ["a", "c"]})),
        update("a set grown", strings, json!({"tags": ["a"]}), json!({"tags": ["c", "a", "d"]})),
        update("a set of numbers reordered", numbers, json!({"tags": [1, 2.5]}), json!({"tags": [2.5, 1]})),
        update("a set of lists", lists, json!({"tags": [["a"], ["b"]]}), json!({"tags": [["b"], ["a"]]})),
        update(
            "a map list reordered",
            by_name.clone(),
            json!({"ports": [p("a", "TCP", 1), p("b", "TCP", 2)]}),
            json!({"ports": [p("b", "TCP", 2), p("a", "TCP", 1)]}),
        ),
        update(
            "a map list merged",
            by_name,
            json!({"ports": [p("a", "TCP", 1), p("b", "TCP", 2)]}),
            json!({"ports": [p("c", "TCP", 3), p("a", "TCP", 8)]}),
        ),
        update(
            "a map list of two keys reordered",
            two_keys.clone(),
            json!({"ports": [p("a", "TCP", 1), p("a", "UDP", 1)]}),
            json!({"ports": [p("a", "UDP", 1), p("a", "TCP", 1)]}),
        ),
        update(
            "a map list of two keys changed",
            two_keys,
            json!({"ports": [p("a", "TCP", 1), p("a", "UDP", 1)]}),
            json!({"ports": [p("a", "UDP", 2), p("a", "TCP", 1)]}),
        ),
        update(
            "a map list keyed by a name CEL escapes",
            escaped,
            json!({"ports": [p("a", "TCP", 1), p("b", "TCP", 2)]}),
            json!({"ports": [p("b", "TCP", 2), p("a", "TCP", 1)]}),
        ),
    ]
}

/// Our answer in the oracle's shape.
fn ours(case: &Case) -> Json {
    let rules = Rules::compile(&case.schema);
    let old = (!case.old.is_null()).then_some(&case.old);
    let outcome = rules.validate(&case.object, old);
    let causes: Vec<Json> =
        outcome.errors.iter().map(|e| json!({"field": e.field, "message": e.cause_message()})).collect();
    json!({"errors": outcome.errors.iter().map(ToString::to_string).collect::<Vec<_>>(), "causes": causes,
        "warnings": outcome.warnings})
}

/// The oracle's answer without what we do not compare (the causes' reasons, by the field errors'
/// kinds elsewhere), each list sorted.
fn comparable(answer: &Json) -> Json {
    let sorted = |field: &str| {
        let mut items: Vec<Json> = answer[field].as_array().cloned().unwrap_or_default();
        for item in &mut items {
            if let Some(map) = item.as_object_mut() {
                map.remove("reason");
            }
        }
        items.sort_by_key(ToString::to_string);
        Json::Array(items)
    };
    json!({"errors": sorted("errors"), "causes": sorted("causes"), "warnings": sorted("warnings")})
}

#[test]
fn objects_are_validated_as_the_kube_apiserver_validates_custom_resources() {
    let cases = cases();
    let requests: Vec<Json> =
        cases.iter().map(|c| json!({"schema": c.schema, "object": c.object, "oldObject": c.old})).collect();
    let answers = reference(&requests);
    let mut differences = Vec::new();
    for (case, answer) in cases.iter().zip(&answers) {
        assert!(answer.get("failure").is_none(), "{}: the oracle failed: {answer}", case.name);
        let (mine, theirs) = (comparable(&ours(case)), comparable(answer));
        if mine != theirs {
            differences.push(format!("{}:\n  ours:   {mine}\n  theirs: {theirs}", case.name));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} cases differ:\n{}",
        differences.len(),
        cases.len(),
        differences.join("\n")
    );
    // Some answers, spelled out.
    let answer = |name: &str| &answers[cases.iter().position(|c| c.name == name).expect("a case")];
    assert_eq!(answer("an integer fails")["errors"], json!(["spec.i: Invalid value: 3: must be even"]));
    assert_eq!(
        answer("an unchanged failure is a warning")["warnings"],
        json!(["spec: Invalid value: failed rule: self.y < 5"])
    );
    let text = |name: &str| answer(name).to_string();
    assert!(
        text("the per-call limit").contains("no further validation rules will be run due to call cost exceeds limit")
    );
    assert!(text("the object's budget").contains("validation failed due to running out of cost budget"));
    assert!(text("map list items correlate by key").contains("ports only go up"));
    assert!(text("int-or-string no such overload").contains("'no such overload': call arguments did not match"));
    assert!(text("formats fail").contains("ends before it starts"));
    assert!(text("a message expression").contains("x is 7"));
    assert!(text("allOf rules beside others").contains("branch"));
}

/// What a definition is refused for: rules that do not compile, of the wrong type, misplaced.
#[test]
fn rules_a_definition_is_refused_for_are_named_as_the_kube_apiserver_names_them() {
    let node = |rules: Json| {
        with_spec(object(
            json!({"x": {"type": "integer"}, "l": {"type": "array",
        "items": {"type": "object", "properties": {"y": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.y == oldSelf.y"}]}}}),
            rules,
        ))
    };
    let schemas = [
        with_spec(object(json!({"x": {"type": "integer"}}), json!([{"rule": "self.nope > 0"}]))),
        with_spec(object(json!({"x": {"type": "integer"}}), json!([{"rule": "self.x"}]))),
        with_spec(object(
            json!({"x": {"type": "integer"}}),
            json!([{"rule": "self.x > 0", "messageExpression": "self.x"}]),
        )),
        with_spec(object(json!({"x": {"type": "integer"}}), json!([{"rule": "self.x > 0", "optionalOldSelf": true}]))),
        with_spec(object(json!({"x": {"type": "integer"}}), json!([{"rule": "self.x > 0", "fieldPath": ".z"}]))),
        with_spec(object(json!({"x": {"type": "integer"}}), json!([{"rule": "self.x > 0", "reason": "Nope"}]))),
        with_spec(object(json!({"x": {"type": "integer"}}), json!([{"rule": "self.x > 0 &&\nself.x < 2"}]))),
        node(json!([])),
        with_spec(object(json!({"x": {"type": "integer"}}), json!([{"rule": "self.x > 0", "message": "fine"}]))),
    ];
    let mut schemas = schemas.to_vec();
    let costly = costly_schemas();
    let refused = costly.iter().filter(|(_, refused)| *refused).count();
    schemas.extend(costly.into_iter().map(|(schema, _)| schema));
    let requests: Vec<Json> = schemas.iter().map(|s| json!({"schema": s})).collect();
    let answers = reference(&requests);
    let mut costs_refused = 0;
    for (schema, answer) in schemas.iter().zip(&answers) {
        let theirs: Vec<String> = serde_json::from_value(answer["problems"].clone()).unwrap_or_default();
        let mine = Rules::compile(schema).problems().to_vec();
        assert_eq!(mine, theirs, "{schema}");
        costs_refused += usize::from(mine.iter().any(|p| p.contains("exceeds budget")));
    }
    assert_eq!(costs_refused, refused, "the costly schemas are refused for their cost, the bounded ones not");
}

/// Schemas whose rules' estimated cost is over a definition's limits, or under them thanks to
/// their bounds, each with whether it is refused for its cost.
fn costly_schemas() -> Vec<(Json, bool)> {
    let strings = |bounds: Json| {
        let mut list = json!({"type": "array", "items": {"type": "string"}});
        if let (Some(list), Some(bounds)) = (list.as_object_mut(), bounds.as_object()) {
            list.extend(bounds.clone());
        }
        list
    };
    let quadratic = json!([{"rule": "self.l.all(x, self.l.exists(y, x == y))"}]);
    let bounded = json!({"type": "array", "maxItems": 20, "items": {"type": "string", "maxLength": 10}});
    let nested = json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}});
    let message = json!([{"rule": "size(self.l) < 5", "messageExpression": "self.l.filter(x, self.l.exists(y, x == y)).join(', ')"}]);
    vec![
        (with_spec(object(json!({"l": strings(json!({}))}), quadratic.clone())), true),
        (with_spec(object(json!({"l": strings(json!({"maxItems": 20}))}), quadratic.clone())), true),
        (with_spec(object(json!({"l": bounded}), quadratic)), false),
        (with_spec(object(json!({"n": nested}), json!([{"rule": "self.n.all(l, l.all(s, s.size() < 10))"}]))), true),
        (with_spec(object(json!({"n": nested}), json!([{"rule": "self.n.all(l, l.size() < 10)"}]))), false),
        (with_spec(object(json!({"l": strings(json!({"maxItems": 100}))}), message)), true),
        (with_spec(many_rules_on_many_items(9000)), true),
        (with_spec(object(json!({"items": {"type": "array", "items": tagged()}}), json!([]))), true),
        (with_spec(many_rules_on_many_items(3000)), false),
        (
            with_spec(json!({"type": "object", "properties": {"m": {"type": "object",
            "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}}}})),
            true,
        ),
        (
            with_spec(object(
                json!({"x": {"type": "integer"}, "l": {"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, x == y))"}]}}),
                json!([{"rule": "self.l.all(x, self.l.exists(y, x == y))"}, {"rule": "self.nope > 0"}]),
            )),
            true,
        ),
        (
            with_spec(object(
                json!({"l": strings(json!({"maxItems": 1500, "items": {"type": "string", "maxLength": 4}}))}),
                json!([{"rule": "self.l.all(x, self.l.exists(y, x == y))"}]),
            )),
            true,
        ),
        (
            with_spec(object(
                json!({"l": strings(json!({"maxItems": 1200, "items": {"type": "string", "maxLength": 4}}))}),
                json!([{"rule": "self.l.all(x, self.l.exists(y, x.startsWith(y)))", "messageExpression": "self.l.join(', ')"}]),
            )),
            true,
        ),
        (root_reading_its_name(strings(json!({}))), true),
        (
            with_spec(object(
                json!({"x": {"type": "integer", "x-kubernetes-validations": [{"rule": " "}]},
            "y": object(json!({"z": {"type": "integer"}}), json!([{"rule": "self.nope"}])), "l": strings(json!({}))}),
                json!([{"rule": "self.l.all(x, self.l.exists(y, x == y))"}]),
            )),
            false,
        ),
        (root_reading_its_name(strings(json!({"maxItems": 50000}))), false),
        (
            json!({"type": "object", "properties": {"items": strings(json!({}))},
            "x-kubernetes-validations": [{"rule": "self.items.all(x, x.contains('a'))"}, {"rule": "self.metadata.name.size() < 64"}]}),
            true,
        ),
    ]
}

/// A resource's root whose rule compares each of its list's strings with its name (at most 253
/// characters: the schema does not declare it).
fn root_reading_its_name(list: Json) -> Json {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"l": list}}},
        "x-kubernetes-validations": [{"rule": "self.spec.l.all(x, x != self.metadata.name)"}]})
}

/// An item with a required name and a few tags, its rules run as many times as such items
/// fit in a request (the smallest, `{"name":""}`, 12 bytes and a comma).
fn tagged() -> Json {
    json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 8},
        "tags": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 8}}},
        "x-kubernetes-validations": [{"rule": "self.tags.all(t, t.matches('^[a-z]+$') && t != self.name)"},
            {"rule": "self.name.matches('^[a-z]+$')"}]})
}

/// A list of up to `max_items` objects with a string of up to 2500 characters, each object
/// with twelve rules of equal cost, some costing more than a hundredth of the total's limit.
fn many_rules_on_many_items(max_items: u64) -> Json {
    let rules: Vec<Json> = "abcdefghijkl".chars().map(|c| json!({"rule": format!("self.s.contains('{c}')")})).collect();
    let item = json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 2500}},
        "x-kubernetes-validations": rules});
    json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": max_items, "items": item}}})
}
