//! What the CEL reference tests share: tools/cel-oracle (k8s.io/apiserver's policy compiler)
//! run over a batch of requests, our evaluation of the same request in the oracle's shape, and
//! the comparison of both.

#![allow(dead_code, reason = "each test binary uses its own part of this module")]

use apiserver_kit::cel::mutation::{apply_configuration, json_patch};
use apiserver_kit::cel::{Declarations, PER_CALL_LIMIT, Program, Stage, Value, evaluate};
use serde_json::{Value as Json, json};

/// The variables the oracle declares (k8s.io/apiserver's admission environment with params,
/// without the authorizer and composition's `variables`), and the fields of a request that
/// hold their values.
pub const VARIABLES: &[(&str, &str)] = &[
    ("object", "object"),
    ("oldObject", "oldObject"),
    ("params", "params"),
    ("request", "request"),
    ("namespaceObject", "namespace"),
];

/// The oracle's path (built once by the workspace's script).
pub fn oracle() -> String {
    super::oracle::path("cel-oracle")
}

/// The oracle's answers to `requests`, in order.
pub fn reference(requests: &[Json]) -> Vec<Json> {
    super::oracle::answers("cel-oracle", requests, deep_json)
}

/// JSON as deep as the values of deep expressions (past serde_json's default 128 levels).
fn deep_json(text: &str) -> Json {
    use serde::Deserialize;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    Json::deserialize(&mut deserializer).expect("JSON")
}

/// Our answer in the oracle's shape; a compile error says which step refused the expression.
pub fn ours(request: &Json) -> Json {
    let source = request["expression"].as_str().expect("expression");
    let names: Vec<&str> = VARIABLES.iter().map(|(name, _)| *name).collect();
    let program = match Program::compile(source, &names) {
        Ok(program) => program,
        Err(error) => return json!({"compileError": error.to_string(), "stage": format!("{:?}", error.stage)}),
    };
    let variables: Vec<(&str, Value)> =
        VARIABLES.iter().map(|(name, field)| (*name, Value::from_json(&request[*field]))).collect();
    let evaluation = evaluate(&program, &variables, PER_CALL_LIMIT);
    match evaluation.value {
        Ok(value) => json!({"value": value.to_tagged_json(), "type": value.type_of().name(), "cost": evaluation.cost}),
        Err(error) => json!({"error": error.to_string(), "cost": evaluation.cost}),
    }
}

/// Whether our answer is the oracle's: a value or an error and the cost exactly; a compile error
/// of the type checker (or of planning) word for word, one of the parser by its presence (the
/// `cel` crate's parser words its errors its own way).
pub fn agree(mine: &Json, theirs: &Json) -> bool {
    match (mine.get("compileError"), theirs.get("compileError")) {
        (Some(_), Some(_)) if mine["stage"] == json!(format!("{:?}", Stage::Parse)) => true,
        (Some(Json::String(mine)), Some(Json::String(theirs))) => {
            theirs.strip_prefix("compilation failed: ").unwrap_or(theirs) == mine
        }
        (None, None) => doubles_as_floats(mine.clone()) == doubles_as_floats(theirs.clone()),
        _ => false,
    }
}

/// `{"double": 341}` (Go) and `{"double": 341.0}` (serde_json) are the same double.
fn doubles_as_floats(value: Json) -> Json {
    match value {
        Json::Object(fields) => Json::Object(
            fields
                .into_iter()
                .map(|(k, v)| match (k.as_str(), &v) {
                    ("double", Json::Number(n)) => (k, json!(n.as_f64())),
                    _ => (k, doubles_as_floats(v)),
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(doubles_as_floats).collect()),
        other => other,
    }
}

/// The object of the tests: a Llama with labels, numbers of both kinds and a list.
pub fn llama() -> Json {
    json!({
        "apiVersion": "farm.example.com/v1", "kind": "Llama",
        "metadata": {"name": "dolly", "namespace": "default", "labels": {"team": "wool", "env": "prod"}},
        "spec": {"weight": 120, "height": 170.5, "color": "white", "tags": ["a", "b", "c"], "friends": []},
    })
}

/// The admission request of the tests (`request`: k8s.io/apiserver's fields of it).
pub fn admission_request() -> Json {
    json!({
        "kind": {"group": "farm.example.com", "version": "v1", "kind": "Llama"},
        "resource": {"group": "farm.example.com", "version": "v1", "resource": "llamas"},
        "name": "dolly", "namespace": "default", "operation": "CREATE", "dryRun": false,
        "userInfo": {"username": "alice", "groups": ["system:authenticated", "farmers"], "extra": {"team": ["wool"]}},
    })
}

/// The namespace of the tests (`namespaceObject`).
pub fn namespace_object() -> Json {
    json!({
        "metadata": {"name": "default", "labels": {"team": "wool"}, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

/// A request of the oracle: `expression` over the Llama, the admission request and the namespace.
pub fn request_for(expression: &str) -> Json {
    json!({"expression": expression, "object": llama(), "request": admission_request(), "namespace": namespace_object()})
}

/// A request of the oracle compiled with a mutation's types.
pub fn mutation_request(expression: &str) -> Json {
    let mut request = request_for(expression);
    request["patchTypes"] = json!(true);
    request
}

/// Our answer to a request compiled with the mutation types (`patchTypes`), in the oracle's
/// shape: with the checked output type and the value's conversions.
pub fn ours_mutating(request: &Json) -> Json {
    let source = request["expression"].as_str().expect("expression");
    let names: Vec<&str> = VARIABLES.iter().map(|(name, _)| *name).collect();
    let declarations = Declarations::admission(&names).with_patch_types();
    let program = match Program::compile_declared(source, &declarations) {
        Ok(program) => program,
        Err(error) => return json!({"compileError": error.to_string(), "stage": format!("{:?}", error.stage)}),
    };
    let variables: Vec<(&str, Value)> =
        VARIABLES.iter().map(|(name, field)| (*name, Value::from_json(&request[*field]))).collect();
    let evaluation = evaluate(&program, &variables, PER_CALL_LIMIT);
    let value = match evaluation.value {
        Ok(value) => value,
        Err(error) => return json!({"error": error.to_string(), "cost": evaluation.cost}),
    };
    let converted = |result: Result<Json, String>| match result {
        Ok(json) => json!({"json": json}),
        Err(error) => json!({"error": error}),
    };
    json!({
        "value": value.to_tagged_json(),
        "type": value.type_of().name(),
        "cost": evaluation.cost,
        "outputType": program.output_type().go_string(),
        "applyConfiguration": converted(apply_configuration(&value).map(Json::Object)),
        "jsonPatch": converted(json_patch(&value).map(Json::Array)),
    })
}

/// JSON numbers as doubles (Go writes a double 2 as `2`), protobuf's errors with a plain
/// space (protobuf-go writes `proto:` with a space or a no-break space, by build), and the
/// type name errors of an object in sorted order (Go finds them in a map's random order).
fn normalized(json: &Json) -> Json {
    match json {
        Json::Number(n) => json!(n.as_f64()),
        Json::String(s) => {
            let s = s.replace("proto:\u{a0}", "proto: ");
            match s.strip_prefix("type mismatch: ") {
                Some(errors) => {
                    let mut errors: Vec<&str> = errors.lines().collect();
                    errors.sort_unstable();
                    Json::String(format!("type mismatch: {}", errors.join("\n")))
                }
                None => Json::String(s),
            }
        }
        Json::Array(items) => Json::Array(items.iter().map(normalized).collect()),
        Json::Object(fields) => Json::Object(fields.iter().map(|(k, v)| (k.clone(), normalized(v))).collect()),
        other => other.clone(),
    }
}

/// Whether our answer to a request with the mutation types is the oracle's: [`agree`], and the
/// output type and conversions alike.
pub fn same_mutation(mine: &Json, theirs: &Json) -> bool {
    let conversions = ["outputType", "applyConfiguration", "jsonPatch"];
    let without = |answer: &Json| {
        let mut answer = answer.clone();
        conversions.iter().for_each(|key| _ = answer.as_object_mut().map(|fields| fields.remove(*key)));
        answer
    };
    agree(&without(mine), &without(theirs))
        && conversions.iter().all(|key| normalized(&mine[*key]) == normalized(&theirs[*key]))
}
