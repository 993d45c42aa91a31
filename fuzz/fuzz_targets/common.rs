//! What the body-decoding and patch targets share: the decoder's `fieldValidation` modes, a stored
//! Llama to patch, and the registry's validation of a decoded object.

#![allow(dead_code, reason = "each target uses its own part of this module")]

use farm_apiserver::api::decode::{decode_object, parse_json};
use farm_apiserver::api::query::FieldValidation;
use farm_apiserver::machinery::error::{Error, FieldError};
use farm_apiserver::machinery::strategy::Strategy;
use farm_apiserver::machinery::validation::object_meta;
use farm_apiserver::resources::llama::Llama;
use serde_json::{Value, json};

/// The request's namespace.
pub const NAMESPACE: &str = "default";

/// Every `fieldValidation` mode the decoder supports.
pub const MODES: [FieldValidation; 3] = [FieldValidation::Ignore, FieldValidation::Warn, FieldValidation::Strict];

/// A Llama as the registry serializes the stored object before patching it.
pub fn stored_llama() -> Value {
    let body = json!({
        "apiVersion": "farm.example.com/v1alpha",
        "kind": "Llama",
        "metadata": {
            "name": "dolly",
            "namespace": NAMESPACE,
            "uid": "6a3e5f0c-0c1a-4c55-9f5e-1d2b3c4d5e6f",
            "resourceVersion": "42",
            "generation": 1,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "web", "tier": "a"},
            "annotations": {"farm.example.com/note": "a calm llama"},
            "finalizers": ["farm.example.com/shear"]
        },
        "spec": {"weight": 120.5, "height": 170, "color": "white"}
    });
    let llama = decode_object::<Llama>(&body, NAMESPACE, FieldValidation::Strict)
        .unwrap_or_else(|e| panic!("the base Llama must decode: {e}"))
        .object;
    assert!(validate(&llama).is_empty(), "the base Llama must be valid");
    serde_json::to_value(&llama).unwrap_or_else(|e| panic!("a Llama serializes: {e}"))
}

/// The registry's validation of a decoded object: metadata, then the resource's own fields.
pub fn validate(llama: &Llama) -> Vec<FieldError> {
    let mut errors = object_meta(&llama.metadata, true);
    errors.extend(llama.validate());
    errors
}

/// What PATCH does with the patched document: decode it in every mode, validate what decodes, and
/// check that any error is a client error (4xx), never a 500. Also checks that the document, as
/// JSON, parses as a request body (no deeper than serde_json allows), so it could be PUT back.
pub fn decode_patched(patched: &Value) {
    let text = patched.to_string();
    if let Err(err) = parse_json(text.as_bytes(), "Llama") {
        panic!("a patched document does not parse as a request body: {err}");
    }
    for mode in MODES {
        match decode_object::<Llama>(patched, NAMESPACE, mode) {
            Ok(decoded) => {
                let _ = validate(&decoded.object);
            }
            Err(err) => assert_client_error(&err),
        }
    }
}

/// Asserts that `err` answers with a 4xx code.
pub fn assert_client_error(err: &Error) {
    assert!(err.code().is_client_error(), "{} for a bad request: {err}", err.code());
}
