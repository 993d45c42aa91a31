//! Parses arbitrary text as a `labelSelector`, as list, watch and deletecollection do
//! (`parse_label_selector`). Checks that nothing panics, a refusal is a 400, and a selector that
//! parses prints as text that parses back to the same selector, selecting the same objects, as
//! kube-core's own matching selects them (where kube-core can say the selector).
#![no_main]

use farm_apiserver::machinery::selector::parse_label_selector;
use kube::core::SelectorExt;
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let selector = match parse_label_selector(input) {
        Ok(selector) => selector,
        Err(err) => return assert_eq!(err.code(), 400, "{input:?}: {err}"),
    };
    let printed = selector.to_string();
    let reparsed = parse_label_selector(&printed)
        .unwrap_or_else(|e| panic!("{input:?} printed as {printed:?}, which does not parse: {e}"));
    assert_eq!(reparsed.to_string(), printed, "{input:?} printed as {printed:?}");
    assert_eq!(reparsed.is_empty(), selector.is_empty());
    // The same answer for objects with no labels, and for labels made of the input's own words.
    assert_eq!(reparsed.matches(None), selector.matches(None), "{input:?}");
    let words: Vec<&str> = input.split(|c: char| !c.is_ascii_alphanumeric() && !"-_./".contains(c)).collect();
    let labels: BTreeMap<String, String> =
        words.chunks(2).map(|kv| (kv[0].to_string(), kv.get(1).copied().unwrap_or_default().to_string())).collect();
    assert_eq!(reparsed.matches(Some(&labels)), selector.matches(Some(&labels)), "{input:?} with {labels:?}");
    // Matching is kube-core's (`SelectorExt`), which clients use, wherever kube-core can say the
    // selector (it has no numeric comparisons); kube-core prints it as we do.
    if let Some(theirs) = selector.to_selector() {
        assert_eq!(theirs.to_string(), printed, "{input:?}");
        assert_eq!(selector.matches(Some(&labels)), theirs.matches(&labels), "{input:?} with {labels:?}");
    }
});
