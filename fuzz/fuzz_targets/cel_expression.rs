//! CEL expressions are input (admission policies, schemas' validation rules): any text either
//! fails to compile or evaluates, over an object, to a value or an error within its cost limit,
//! and never panics, overflows the stack or runs without bound.

#![no_main]

use farm_apiserver::cel::{Program, Value, evaluate};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// A small limit: every evaluation stops soon, and the limit's own path is exercised.
const LIMIT: u64 = 20_000;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    let Ok(program) = Program::compile(source, &["object", "oldObject"]) else { return };
    let object = Value::from_json(&json!({
        "metadata": {"name": "dolly", "labels": {"team": "wool"}},
        "spec": {"weight": 120, "height": 170.5, "tags": ["a", "b"], "when": "2026-11-29T20:00:00Z"},
    }));
    let evaluation = evaluate(&program, &[("object", object), ("oldObject", Value::Null)], LIMIT);
    // A value comes within the limit; an error says what went wrong.
    match &evaluation.value {
        Ok(_) => assert!(evaluation.cost <= LIMIT, "a value past the limit: {}", evaluation.cost),
        Err(error) => assert!(!error.message().is_empty()),
    }
});
