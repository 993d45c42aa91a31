//! CEL expressions are input (admission policies, schemas' validation rules): any text either
//! fails to compile or evaluates, over an object, to a value or an error within its cost limit,
//! and never panics, overflows the stack or runs without bound. With the mutation types declared
//! (MutatingAdmissionPolicies' `Object{…}` and `JSONPatch{…}`), as both conversions of a value
//! to what a policy applies.

#![no_main]

use farm_apiserver::cel::{Declarations, Program, Value, evaluate, mutation};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// A small limit: every evaluation stops soon, and the limit's own path is exercised.
const LIMIT: u64 = 20_000;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    let declarations = Declarations::admission(&["object", "oldObject"]).with_patch_types();
    let Ok(program) = Program::compile_declared(source, &declarations) else { return };
    let object = Value::from_json(&json!({
        "metadata": {"name": "dolly", "labels": {"team": "wool"}},
        "spec": {"weight": 120, "height": 170.5, "tags": ["a", "b"], "when": "2026-11-29T20:00:00Z"},
    }));
    let evaluation = evaluate(&program, &[("object", object), ("oldObject", Value::Null)], LIMIT);
    // A value comes within the limit; an error says what went wrong.
    match &evaluation.value {
        Ok(value) => {
            assert!(evaluation.cost <= LIMIT, "a value past the limit: {}", evaluation.cost);
            // Whatever the value, the conversions answer with JSON or a message.
            let _ = mutation::apply_configuration(value);
            let _ = mutation::json_patch(value);
        }
        Err(error) => assert!(!error.message().is_empty()),
    }
});
