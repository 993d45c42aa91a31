//! Applying PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902), both through the
//! `json-patch` crate. Strategic merge patch is refused with 415, as for custom resources, and
//! server-side apply is not served yet.

use super::error::{Error, Result};
use serde_json::Value;

/// The patch types this server applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`
    Merge,
    /// `application/json-patch+json`
    Json,
}

const ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json";

impl PatchType {
    /// Reads the patch type from the request's `Content-Type`.
    pub fn from_headers(headers: &http::HeaderMap) -> Result<Self> {
        match super::decode::media_type(headers).as_str() {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/json-patch+json" => Ok(Self::Json),
            other => Err(Error::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format ({}) - accepted media types include: {ACCEPTED}",
                if other.is_empty() { "no Content-Type" } else { other }
            ))),
        }
    }
}

/// A parsed patch, ready to apply to any number of documents (a conflict retry re-applies it).
#[derive(Clone, Debug)]
pub enum Patch {
    /// A merge patch document.
    Merge(Value),
    /// A list of JSON patch operations.
    Json(json_patch::Patch),
}

impl Patch {
    /// Parses the body for `kind`: 400 when it is not JSON or not a valid patch.
    pub fn parse(kind: PatchType, body: &[u8]) -> Result<Self> {
        match kind {
            PatchType::Merge => {
                let value: Value = serde_json::from_slice(body)
                    .map_err(|e| Error::BadRequest(format!("error decoding patch: {e}")))?;
                if !value.is_object() {
                    return Err(Error::BadRequest("Invalid JSON Patch".to_string()));
                }
                Ok(Self::Merge(value))
            }
            PatchType::Json => serde_json::from_slice(body)
                .map(Self::Json)
                .map_err(|e| Error::BadRequest(format!("error decoding patch: {e}"))),
        }
    }

    /// Applies the patch to a copy of `current`; a JSON patch whose operation cannot apply is 422.
    pub fn apply(&self, current: &Value) -> Result<Value> {
        let mut doc = current.clone();
        match self {
            Self::Merge(patch) => json_patch::merge(&mut doc, patch),
            Self::Json(ops) => {
                json_patch::patch(&mut doc, ops).map_err(|e| Error::Unprocessable(e.to_string()))?;
            }
        }
        Ok(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_sets_and_removes_fields() {
        let p = Patch::parse(PatchType::Merge, br#"{"spec":{"weight":3,"color":null}}"#).unwrap();
        let out = p.apply(&json!({"spec": {"weight": 1, "color": "white"}})).unwrap();
        assert_eq!(out, json!({"spec": {"weight": 3}}));
    }

    #[test]
    fn a_failed_json_patch_test_is_unprocessable() {
        let p = Patch::parse(PatchType::Json, br#"[{"op":"test","path":"/spec/weight","value":9}]"#).unwrap();
        let err = p.apply(&json!({"spec": {"weight": 1}})).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
    }

    #[test]
    fn malformed_patches_are_bad_requests() {
        assert_eq!(Patch::parse(PatchType::Json, b"{").unwrap_err().code(), 400);
        assert_eq!(Patch::parse(PatchType::Json, br#"[{"op":"jump"}]"#).unwrap_err().code(), 400);
        assert_eq!(Patch::parse(PatchType::Merge, b"[1]").unwrap_err().code(), 400);
    }

    #[test]
    fn strategic_merge_patch_is_unsupported() {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::CONTENT_TYPE, "application/strategic-merge-patch+json".parse().unwrap());
        assert_eq!(PatchType::from_headers(&h).unwrap_err().code(), http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
}
