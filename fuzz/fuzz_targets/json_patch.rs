//! Applies arbitrary bytes as a JSON patch (RFC 6902) to a stored Llama, as PATCH with
//! `application/json-patch+json` does (`Patch::parse`, `Patch::apply`), then decodes and validates
//! the result in every `fieldValidation` mode. Checks that nothing panics, a body that is no JSON
//! patch is a 400 and an operation that does not decode or apply a 422 (both once applied, as the
//! kube-apiserver reads a patch only after finding the object), and every later error is a 4xx.
#![no_main]

mod common;

use common::{decode_patched, stored_llama};
use farm_apiserver::api::patch::{Patch, PatchType};
use farm_apiserver::api::query::FieldValidation;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::LazyLock;

static STORED: LazyLock<Value> = LazyLock::new(stored_llama);

fuzz_target!(|data: &[u8]| {
    let patch = Patch::parse(PatchType::Json, data, FieldValidation::Warn)
        .unwrap_or_else(|e| panic!("reading a JSON patch never fails: {e}"));
    match patch.apply(&STORED) {
        Ok(patched) => decode_patched(&patched),
        Err(err) => {
            let code = err.code().as_u16();
            assert!(code == 400 || code == 422, "a malformed JSON patch (400) or one that cannot apply (422): {err}");
        }
    }
});
