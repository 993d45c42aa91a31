//! Applies arbitrary bytes as a JSON merge patch (RFC 7386) to a stored Llama, as PATCH with
//! `application/merge-patch+json` does (`Patch::parse`, `Patch::apply`), then decodes and validates
//! the result in every `fieldValidation` mode. Checks that nothing panics, every error is a 4xx, a
//! merge patch that parses always applies, and applying it a second time changes nothing (merge
//! patches are idempotent).
#![no_main]

mod common;

use common::{assert_client_error, decode_patched, stored_llama};
use farm_apiserver::api::patch::{Patch, PatchType};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::LazyLock;

static STORED: LazyLock<Value> = LazyLock::new(stored_llama);

fuzz_target!(|data: &[u8]| {
    let patch = match Patch::parse(PatchType::Merge, data) {
        Ok(patch) => patch,
        Err(err) => return assert_client_error(&err),
    };
    let patched = patch.apply(&STORED).unwrap_or_else(|e| panic!("a merge patch that parses must apply: {e}"));
    let twice = patch.apply(&patched).unwrap_or_else(|e| panic!("a merge patch that parses must apply: {e}"));
    assert_eq!(twice, patched, "applying a merge patch twice is not the same as once");
    decode_patched(&patched);
});
