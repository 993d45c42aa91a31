//! Applies arbitrary bytes as a JSON patch (RFC 6902) to a stored Llama, as PATCH with
//! `application/json-patch+json` does (`Patch::parse`, `Patch::apply`), then decodes and validates
//! the result in every `fieldValidation` mode. Checks that nothing panics, a malformed patch is a
//! 400, a patch that cannot apply is a 422, and every later error is a 4xx.
#![no_main]

mod common;

use common::{decode_patched, stored_llama};
use farm_apiserver::api::patch::{Patch, PatchType};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::LazyLock;

static STORED: LazyLock<Value> = LazyLock::new(stored_llama);

fuzz_target!(|data: &[u8]| {
    let patch = match Patch::parse(PatchType::Json, data) {
        Ok(patch) => patch,
        Err(err) => return assert_eq!(err.code(), 400, "a malformed JSON patch: {err}"),
    };
    match patch.apply(&STORED) {
        Ok(patched) => decode_patched(&patched),
        Err(err) => assert_eq!(err.code(), 422, "a JSON patch that cannot apply: {err}"),
    }
});
