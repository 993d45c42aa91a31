//! Applies arbitrary bytes as a JSON patch (RFC 6902) to a stored Llama, as PATCH with
//! `application/json-patch+json` does (`Patch::parse`, `Patch::apply`), then decodes and validates
//! the result in every `fieldValidation` mode. Checks that nothing panics, a body that is not JSON
//! is refused as it is read (400 `invalid JSON patch`, before the object is looked up, as the
//! kube-apiserver refuses it), one that is no JSON patch is a 400 and an operation that does not
//! decode or apply a 422 (both once applied), and every later error is a 4xx.
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
    let patch = match Patch::parse(PatchType::Json, data, FieldValidation::Warn) {
        Ok(patch) => patch,
        Err(err) => {
            assert_eq!((err.code().as_u16(), err.to_string().as_str()), (400, "invalid JSON patch"), "{err}");
            assert!(serde_json::from_slice::<Value>(data).is_err(), "refused JSON as no JSON");
            return;
        }
    };
    match patch.apply(&STORED) {
        Ok(patched) => decode_patched(&patched),
        Err(err) => {
            let code = err.code().as_u16();
            assert!(code == 400 || code == 422, "a malformed JSON patch (400) or one that cannot apply (422): {err}");
        }
    }
});
