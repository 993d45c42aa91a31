//! Chunked lists: the `continue` token (pages are cut by each store: `store/pages.rs` in memory,
//! etcd's key ranges).
//!
//! The token is the kube-apiserver's: base64url (no padding) of
//! `{"v":"meta.k8s.io/v1","rv":R,"start":"<namespace>/<name>\u0000"}`. Every page of a paged list
//! is read at the first page's revision `R` (rebuilt from the event history), so objects that
//! exist for the whole paging come back exactly once. Once `R` falls out of the history the token
//! is 410 `Expired`, and the Status carries an inconsistent-continuation token (`rv: -1`) that
//! reads the remainder from the latest state, as the kube-apiserver offers.

use super::error::{Error, Result};
use super::key::ObjectKey;
use base64::Engine;
use serde::{Deserialize, Serialize};

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: i64,
    start: String,
}

/// A decoded continue token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Continue {
    /// The revision every page is read at; `None` for an inconsistent continuation (latest state).
    pub revision: Option<u64>,
    /// Items with keys after this one come next.
    pub after: ObjectKey,
}

fn invalid(why: impl std::fmt::Display) -> Error {
    Error::BadRequest(format!("continue key is not valid: {why}"))
}

impl Continue {
    /// Encodes the token for the page after `after`, read at `revision` (`None`: latest).
    pub fn encode(revision: Option<u64>, after: &ObjectKey) -> String {
        let token = Token {
            v: TOKEN_VERSION.into(),
            rv: revision.map(|r| r as i64).unwrap_or(-1),
            start: format!("{}/{}\u{0}", after.namespace, after.name),
        };
        let json = serde_json::to_vec(&token).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    /// Decodes a token for a list of `namespace` (or all namespaces); garbage is 400.
    pub fn decode(raw: &str, namespace: Option<&str>) -> Result<Self> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(raw.trim_end_matches('='))
            .map_err(|e| invalid(format!("not base64: {e}")))?;
        let token: Token = serde_json::from_slice(&bytes).map_err(|e| invalid(format!("not a continue token: {e}")))?;
        if token.v != TOKEN_VERSION {
            return Err(invalid(format!("incorrect encoded start resourceVersion (version {})", token.v)));
        }
        let revision = match token.rv {
            -1 => None,
            rv if rv > 0 => Some(rv as u64),
            rv => return Err(invalid(format!("incorrect encoded start resourceVersion {rv}"))),
        };
        let start = token.start.strip_suffix('\u{0}').unwrap_or(&token.start);
        let Some((ns, name)) = start.split_once('/') else {
            return Err(invalid("the start key names no namespace"));
        };
        if name.is_empty() || name.contains('/') || namespace.is_some_and(|n| n != ns) {
            return Err(invalid("the start key is outside the listed collection"));
        }
        Ok(Self { revision, after: ObjectKey::new(ns, name) })
    }
}

/// The message of an expired continue token.
pub const EXPIRED_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_are_scoped_to_the_namespace() {
        let key = ObjectKey::new("default", "dolly");
        let raw = Continue::encode(Some(42), &key);
        assert_eq!(
            Continue::decode(&raw, Some("default")).unwrap(),
            Continue { revision: Some(42), after: key.clone() }
        );
        assert_eq!(Continue::decode(&raw, None).unwrap().after, key);
        assert_eq!(Continue::decode(&raw, Some("other")).unwrap_err().code(), 400);
        let latest = Continue::encode(None, &key);
        assert_eq!(Continue::decode(&latest, None).unwrap().revision, None);
    }

    #[test]
    fn garbage_tokens_are_bad_requests_not_panics() {
        use base64::Engine;
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        for raw in [
            "!!!".to_string(),
            enc("not json"),
            enc(r#"{"v":"meta.k8s.io/v2","rv":1,"start":"a/b\u0000"}"#),
            enc(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a/b\u0000"}"#),
            enc(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"nokey"}"#),
            enc(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"a/b/c"}"#),
        ] {
            assert_eq!(Continue::decode(&raw, None).unwrap_err().code(), 400, "{raw}");
        }
    }
}
