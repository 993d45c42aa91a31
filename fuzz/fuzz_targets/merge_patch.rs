//! Applies arbitrary bytes as a JSON merge patch (RFC 7386) to a stored Llama, as PATCH with
//! `application/merge-patch+json` does (`Patch::parse`, with and without field validation,
//! `Patch::apply`), then decodes and validates
//! the result in every `fieldValidation` mode. Checks that nothing panics, a body that is not JSON
//! is refused as it is read (400 `invalid JSON patch`), one that is no merge patch is a 400 when
//! applied, every error is a 4xx, and applying a patch a second time changes nothing (merge
//! patches are idempotent).
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
    // Read as a write validating its fields reads it (an object, or 400), and as one that does not.
    for validation in [FieldValidation::Warn, FieldValidation::Ignore] {
        let patch = match Patch::parse(PatchType::Merge, data, validation) {
            Ok(patch) => patch,
            Err(err) => {
                assert_eq!((err.code().as_u16(), err.to_string().as_str()), (400, "invalid JSON patch"), "{err}");
                return;
            }
        };
        let patched = match patch.apply(&STORED) {
            Ok(patched) => patched,
            // A body that is no merge patch is refused once applied, with a 400.
            Err(err) => {
                assert_eq!(err.code(), 400, "a body that is no merge patch: {err}");
                continue;
            }
        };
        let twice =
            patch.apply(&patched).unwrap_or_else(|e| panic!("a merge patch that applied once must apply again: {e}"));
        assert_eq!(twice, patched, "applying a merge patch twice is not the same as once");
        decode_patched(&patched);
    }
});
