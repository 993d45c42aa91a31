//! Parses arbitrary text as a Llama `fieldSelector`, as list, watch and deletecollection do
//! (`parse_field_selector` with the resource's selectable fields). The module has no printer, so
//! there is no round trip: checks that nothing panics, a refusal is a 400, and a field the
//! selector pins with `=` (`exact`, which watches of one name use) rules out every object whose
//! field has another value.
#![no_main]

use farm_apiserver::machinery::resource::ApiResource;
use farm_apiserver::machinery::selector::parse_field_selector;
use farm_apiserver::resources::llama::Llama;
use libfuzzer_sys::fuzz_target;

const FIELDS: [&str; 3] = ["metadata.name", "metadata.namespace", "spec.color"];

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let selector = match parse_field_selector(input, Llama::info().selectable_fields) {
        Ok(selector) => selector,
        Err(err) => return assert_eq!(err.code(), 400, "{input:?}: {err}"),
    };
    for field in FIELDS {
        if let Some(pinned) = selector.exact(field) {
            let other = format!("{pinned}x");
            assert!(
                !selector.matches(|f| (f == field).then(|| other.as_str().into())),
                "{input:?} pins {field} to {pinned:?} yet matches {other:?}"
            );
        }
    }
    if selector.is_empty() {
        assert!(selector.matches(|_| None), "{input:?}: an empty selector selects everything");
    }
});
