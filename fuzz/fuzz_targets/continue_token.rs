//! The `continue` token of chunked lists (`Continue::decode`, `Continue::encode`). Checks that:
//! - decoding arbitrary text never panics, and garbage is a 400;
//! - a token that decodes re-encodes to one that decodes to the same values;
//! - for every value the server can put in a token (a revision from 1 to `i64::MAX` or none for
//!   an inconsistent continuation, and an object key: namespace and non-empty name without '/'),
//!   encoding then decoding gives back the same values, and the token is refused for another
//!   namespace.
#![no_main]

use farm_apiserver::machinery::paging::Continue;
use farm_apiserver::store::ObjectKey;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

fn round_trip(u: &mut Unstructured<'_>) -> Result<()> {
    let revision = if u.arbitrary()? { Some(u.int_in_range(1..=i64::MAX as u64)?) } else { None };
    let namespace: String = u.arbitrary()?;
    let name: String = u.arbitrary()?;
    if namespace.contains('/') || name.contains('/') || name.is_empty() {
        return Ok(());
    }
    let after = ObjectKey::new(namespace.as_str(), name.as_str());
    let token = Continue::encode(revision, &after);
    let expected = Continue { revision, after };
    for scope in [None, Some(namespace.as_str())] {
        match Continue::decode(&token, scope) {
            Ok(decoded) => assert_eq!(decoded, expected, "token {token:?} in {scope:?}"),
            Err(err) => panic!("{expected:?} encoded as {token:?}, which does not decode in {scope:?}: {err}"),
        }
    }
    let elsewhere = format!("{namespace}x");
    assert!(Continue::decode(&token, Some(&elsewhere)).is_err(), "{token:?} decoded in {elsewhere:?}");
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    if let Ok(raw) = std::str::from_utf8(data) {
        for scope in [None, Some("default")] {
            match Continue::decode(raw, scope) {
                Ok(decoded) => {
                    let again = Continue::encode(decoded.revision, &decoded.after);
                    let redecoded = Continue::decode(&again, scope)
                        .unwrap_or_else(|e| panic!("{raw:?} decoded to {decoded:?}, re-encoded as {again:?}: {e}"));
                    assert_eq!(redecoded, decoded, "{raw:?} re-encoded as {again:?}");
                }
                Err(err) => assert_eq!(err.code(), 400, "{raw:?}: {err}"),
            }
        }
    }
    let _ = round_trip(&mut Unstructured::new(data));
});
