//! Decodes arbitrary bytes as a Llama create or update body, as the handlers do (`parse_json`,
//! then `decode_object` in every `fieldValidation` mode), and validates whatever decodes as the
//! registry does (`object_meta` and `Llama::validate`). Checks that nothing panics, every error is
//! a 4xx, and:
//! - the modes agree: Ignore and Warn accept the same bodies, Ignore never warns, and Strict
//!   accepts exactly the bodies Warn accepts without warnings;
//! - an accepted object, encoded as a GET would return it (`machinery::json`, Go's numbers),
//!   decodes again strictly and encodes to the same JSON (a read-modify-write round trip changes
//!   nothing; the first encoding may lose what the wire format does not keep, e.g. the
//!   fractional seconds of a `metav1.Time`);
//! - its stored form (`Stored`) writes the same JSON, decodes back to it, and its index (read from
//!   the bytes by `json_scan`) gives the object's name, namespace, labels, selectable field and
//!   resourceVersion.
#![no_main]

mod common;

use common::{NAMESPACE, assert_client_error, validate};
use farm_apiserver::api::decode::{decode_object, parse_json};
use farm_apiserver::api::query::FieldValidation;
use farm_apiserver::machinery::json;
use farm_apiserver::machinery::stored::Stored;
use farm_apiserver::resources::llama::Llama;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let value = match parse_json(data, "Llama") {
        Ok(value) => value,
        Err(err) => return assert_client_error(&err),
    };
    let ignore = decode_object::<Llama>(&value, NAMESPACE, FieldValidation::Ignore);
    let warn = decode_object::<Llama>(&value, NAMESPACE, FieldValidation::Warn);
    let strict = decode_object::<Llama>(&value, NAMESPACE, FieldValidation::Strict);
    for err in [&ignore, &warn, &strict].into_iter().filter_map(|r| r.as_ref().err()) {
        assert_client_error(err);
    }
    match (&ignore, &warn) {
        (Ok(i), Ok(w)) => {
            assert!(i.warnings.is_empty(), "Ignore warned: {:?}", i.warnings);
            assert_eq!(i.object, w.object, "Ignore and Warn decoded different objects");
            match &strict {
                Ok(s) => {
                    assert!(w.warnings.is_empty(), "Strict accepted what Warn warned about: {:?}", w.warnings);
                    assert_eq!(s.object, w.object, "Strict and Warn decoded different objects");
                }
                Err(err) => assert!(!w.warnings.is_empty(), "Strict refused what Warn accepted silently: {err}"),
            }
        }
        (Err(_), Err(_)) => assert!(strict.is_err(), "Strict accepted what Warn refused"),
        _ => panic!("Ignore and Warn disagree: {:?} / {:?}", ignore.as_ref().err(), warn.as_ref().err()),
    }
    let Ok(decoded) = ignore else { return };
    let _ = validate(&decoded.object);
    let encoded = json::to_value(&decoded.object).unwrap_or_else(|e| panic!("a decoded Llama serializes: {e}"));
    let again = decode_object::<Llama>(&encoded, NAMESPACE, FieldValidation::Strict)
        .unwrap_or_else(|e| panic!("an encoded Llama does not decode again: {e}\n{encoded}"));
    let reencoded = json::to_value(&again.object).unwrap_or_else(|e| panic!("a decoded Llama serializes: {e}"));
    assert_eq!(reencoded, encoded, "a GET/PUT round trip changed the object");
    stored_as_itself(again.object);
});

/// The stored form of an accepted object is its compact JSON and decodes back to it, and its
/// index (read from those bytes by the JSON scanner) says what the object says.
fn stored_as_itself(object: Llama) {
    let stored = Stored::new(object.clone()).unwrap_or_else(|e| panic!("a valid Llama is stored: {e}"));
    assert_eq!(&stored.json()[..], json::to_vec(&object).unwrap_or_default().as_slice(), "stored bytes");
    assert_eq!(stored.decode().ok().as_ref(), Some(&object), "a stored Llama decodes back");
    let meta = &object.metadata;
    assert_eq!(stored.name(), meta.name.as_deref().unwrap_or_default());
    assert_eq!(stored.namespace(), meta.namespace.as_deref().unwrap_or_default());
    for (key, value) in meta.labels.iter().flatten() {
        assert_eq!(stored.label(key).as_deref(), Some(value.as_str()), "label {key:?}");
    }
    let color = stored.field("spec.color");
    assert_eq!(color.as_deref(), Some(object.spec.color.as_deref().unwrap_or_default()), "spec.color");
    let version = meta.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0);
    assert_eq!(stored.resource_version(), version);
}
