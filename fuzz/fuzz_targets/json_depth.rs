//! Scans arbitrary bytes, wrapped 200 arrays deep, as a request body that nests deeper than
//! serde_json reads (`json_depth::shallow`), and checks that the scan agrees with serde_json on
//! whether the bytes are JSON (serde_json reads them wrapped 60 deep, within its limit: wrapped in
//! more brackets than a short input can close, validity no longer depends on how many), and that
//! the copy it hands on parses within serde_json's limit and keeps the wrapping down to the depth
//! it keeps, where the next container is copied empty.
#![no_main]

use farm_apiserver::machinery::json_depth::{self, KEPT_DEPTH};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 50 {
        return;
    }
    let wrapped = |levels: usize| [&b"[".repeat(levels), data, &b"]".repeat(levels)].concat();
    let deep = wrapped(200);
    let scanned = json_depth::shallow(&deep);
    let parsed = serde_json::from_slice::<serde_json::Value>(&wrapped(60));
    match (scanned.is_ok(), parsed.is_ok()) {
        (true, false) => assert!(lenient(data), "the scan accepted {:?}", String::from_utf8_lossy(data)),
        (false, true) => panic!("the scan refused {:?}", String::from_utf8_lossy(data)),
        _ => {}
    }
    if let Ok(copy) = scanned {
        let value: serde_json::Value = serde_json::from_slice(&copy)
            .unwrap_or_else(|e| panic!("the copy does not parse ({e}): {:?}", String::from_utf8_lossy(&copy)));
        let mut depth = 0;
        let mut inner = &value;
        while let Some(first) = inner.get(0) {
            inner = first;
            depth += 1;
        }
        // The container that starts just below the kept depth is copied, empty.
        assert_eq!(depth, KEPT_DEPTH, "{:?}", String::from_utf8_lossy(&copy));
        assert!(inner.as_array().is_some_and(Vec::is_empty), "{:?}", String::from_utf8_lossy(&copy));
    }
});

/// Whether serde_json may refuse what the scan lets pass on purpose: strings that are not UTF-8
/// or hold an escaped lone surrogate (Go reads both, as U+FFFD).
fn lenient(data: &[u8]) -> bool {
    std::str::from_utf8(data).is_err() || data.windows(2).any(|w| w == b"\\u")
}
