//! What the CEL reference tests share: tools/cel-oracle (k8s.io/apiserver's policy compiler)
//! run over a batch of requests, our evaluation of the same request in the oracle's shape, and
//! the comparison of both.

#![allow(dead_code, reason = "each test binary uses its own part of this module")]

use apiserver_kit::cel::{PER_CALL_LIMIT, Program, Value, evaluate};
use serde_json::{Value as Json, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// The variables of an admission policy's expressions (k8s.io/apiserver's, without the
/// authorizer).
pub const VARIABLES: &[&str] = &["object", "oldObject", "params", "request", "namespace", "variables"];

/// The oracle's path (built once by the workspace's script).
pub fn oracle() -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/control-plane.sh");
    let out = Command::new("bash").arg(script).arg("cel-oracle").output().expect("bash runs");
    assert!(out.status.success(), "cel-oracle: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("a path").trim().to_string()
}

/// The oracle's answers to `requests`, in order.
pub fn reference(requests: &[Json]) -> Vec<Json> {
    let mut child =
        Command::new(oracle()).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("the oracle starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(lines.as_bytes()));
    let answers: Vec<Json> = BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map(|line| deep_json(&line.expect("a line")))
        .collect();
    writer.join().expect("writer").expect("written");
    assert!(child.wait().expect("exit").success());
    answers
}

/// JSON as deep as the values of deep expressions (past serde_json's default 128 levels).
fn deep_json(text: &str) -> Json {
    use serde::Deserialize;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    Json::deserialize(&mut deserializer).expect("JSON")
}

/// Our answer in the oracle's shape.
pub fn ours(request: &Json) -> Json {
    let source = request["expression"].as_str().expect("expression");
    let program = match Program::compile(source, VARIABLES) {
        Ok(program) => program,
        Err(error) => return json!({"compileError": error.to_string()}),
    };
    let mut variables: Vec<(&str, Value)> =
        VARIABLES.iter().map(|name| (*name, Value::from_json(&request[*name]))).collect();
    variables.retain(|(name, _)| *name != "variables");
    variables.push(("variables", Value::from_json(&json!({}))));
    let evaluation = evaluate(&program, &variables, PER_CALL_LIMIT);
    match evaluation.value {
        Ok(value) => json!({"value": value.to_tagged_json(), "type": value.type_of().name(), "cost": evaluation.cost}),
        Err(error) => json!({"error": error.to_string(), "cost": evaluation.cost}),
    }
}

/// What is compared: a compile error only by its presence (the checker's wording is not ours
/// yet); a value or an error and the cost exactly.
pub fn comparable(answer: &Json) -> Json {
    match answer.get("compileError") {
        Some(_) => json!({"compileError": true}),
        None => doubles_as_floats(answer.clone()),
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
