//! `Accept` header negotiation, as the kube-apiserver does it.
//!
//! A request may ask for the plain object, a `meta.k8s.io` `Table`, or metadata only
//! (`PartialObjectMetadata` for one object and watch events, `PartialObjectMetadataList` for lists).
//! Media ranges are tried by `q` then by order; ranges this server cannot produce (protobuf, CBOR)
//! are skipped, so `application/vnd.kubernetes.protobuf, */*` gets JSON. Only when nothing
//! offered can be served is the answer 406. A client preferring YAML reaches this negotiation
//! asking for JSON: `yaml_answers` converts the answer.

use crate::machinery::error::{Error, Result};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{PartialObjectMeta, TypeMeta};

/// One parsed media range of an `Accept` header.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaRange {
    /// e.g. `application`, or `*`.
    pub kind: String,
    /// e.g. `json`, or `*`.
    pub subtype: String,
    /// Parameters other than `q`, keys lower-cased.
    pub params: Vec<(String, String)>,
    /// Quality, 0 to 1.
    pub q: f32,
}

impl MediaRange {
    /// The value of parameter `name`, if present.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Whether this range accepts JSON (`application/json`, `application/*` or `*/*`).
    pub fn accepts_json(&self) -> bool {
        matches!(
            (self.kind.as_str(), self.subtype.as_str()),
            ("application", "json") | ("application", "*") | ("*", "*")
        )
    }
}

/// Parses an `Accept` header into media ranges, best first; a missing header means `*/*`.
pub fn parse_accept(header: Option<&http::HeaderValue>) -> Vec<MediaRange> {
    let text = header.and_then(|h| h.to_str().ok()).unwrap_or("").trim();
    let text = if text.is_empty() { "*/*" } else { text };
    let mut ranges: Vec<MediaRange> = text
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let essence = pieces.next()?.trim().to_ascii_lowercase();
            let (kind, subtype) = essence.split_once('/')?;
            let mut q = 1.0f32;
            let mut params = Vec::new();
            for p in pieces {
                let (k, v) = p.split_once('=')?;
                let k = k.trim().to_ascii_lowercase();
                let v = v.trim().trim_matches('"').to_string();
                if k == "q" {
                    q = v.parse().unwrap_or(0.0);
                } else {
                    params.push((k, v));
                }
            }
            Some(MediaRange { kind: kind.trim().to_string(), subtype: subtype.trim().to_string(), params, q })
        })
        .filter(|r| r.q > 0.0)
        .collect();
    // A stable sort keeps the client's order among equal qualities.
    ranges.sort_by(|a, b| b.q.partial_cmp(&a.q).unwrap_or(std::cmp::Ordering::Equal));
    ranges
}

/// What a resource request is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    /// The object(s) themselves.
    Object,
    /// A `Table` in the given `meta.k8s.io` version (`v1` or `v1beta1`).
    Table(MetaVersion),
    /// `PartialObjectMetadata` / `PartialObjectMetadataList` in the given version.
    Metadata(MetaVersion),
}

/// `meta.k8s.io` versions a client may ask Table and metadata in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaVersion {
    /// `meta.k8s.io/v1`
    V1,
    /// `meta.k8s.io/v1beta1`
    V1Beta1,
}

impl MetaVersion {
    /// The `apiVersion` string.
    pub fn api_version(self) -> &'static str {
        match self {
            Self::V1 => "meta.k8s.io/v1",
            Self::V1Beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

impl Representation {
    /// The response `Content-Type` for this representation of `target`.
    pub fn content_type(self, _target: Target) -> String {
        // The serializer's media type, without the `as=` parameters that chose the conversion:
        // `WriteObjectNegotiated` writes `application/json` for a Table or metadata answer too
        // (kube-apiserver 1.37 as 1.20).
        "application/json".to_string()
    }
}

/// The kind of response being negotiated: it decides which `as=` values are acceptable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A single object (get, and the object returned by writes).
    Object,
    /// A list.
    List,
    /// A watch stream: events carry objects, so `as=PartialObjectMetadata` applies.
    Watch,
}

const SERVED: &str = "application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";

/// Picks the representation for a resource request, or 406.
pub fn negotiate(accept: Option<&http::HeaderValue>, target: Target) -> Result<Representation> {
    for range in parse_accept(accept) {
        if !range.accepts_json() {
            continue;
        }
        let Some(as_kind) = range.param("as") else {
            return Ok(Representation::Object);
        };
        if range.param("g") != Some("meta.k8s.io") {
            continue;
        }
        let version = match range.param("v") {
            Some("v1") => MetaVersion::V1,
            Some("v1beta1") => MetaVersion::V1Beta1,
            _ => continue,
        };
        match (as_kind, target) {
            ("Table", _) => return Ok(Representation::Table(version)),
            ("PartialObjectMetadata", Target::Object | Target::Watch) | ("PartialObjectMetadataList", Target::List) => {
                return Ok(Representation::Metadata(version));
            }
            _ => continue,
        }
    }
    Err(Error::NotAcceptable(format!("only the following media types are accepted: {SERVED}")))
}

/// The `PartialObjectMetadata` of an object, as carried by metadata-only responses and Table rows.
pub fn partial_metadata(meta: &ObjectMeta) -> PartialObjectMeta {
    partial_metadata_in(meta, MetaVersion::V1)
}

/// [`partial_metadata`] in a given `meta.k8s.io` version.
pub fn partial_metadata_in(meta: &ObjectMeta, version: MetaVersion) -> PartialObjectMeta {
    PartialObjectMeta {
        types: Some(TypeMeta { api_version: version.api_version().into(), kind: "PartialObjectMetadata".into() }),
        metadata: meta.clone(),
        _phantom: std::marker::PhantomData,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(accept: &str, target: Target) -> Result<Representation> {
        negotiate(Some(&http::HeaderValue::from_str(accept).unwrap()), target)
    }

    #[test]
    fn kubectl_get_asks_for_a_table_first() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(pick(accept, Target::List).unwrap(), Representation::Table(MetaVersion::V1));
    }

    #[test]
    fn protobuf_first_with_a_wildcard_gets_json() {
        assert_eq!(pick("application/vnd.kubernetes.protobuf, */*", Target::Object).unwrap(), Representation::Object);
    }

    #[test]
    fn protobuf_only_is_not_acceptable() {
        let err = pick("application/vnd.kubernetes.protobuf", Target::Object).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::NOT_ACCEPTABLE);
    }

    #[test]
    fn metadata_list_only_applies_to_lists() {
        let accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
        assert_eq!(pick(accept, Target::List).unwrap(), Representation::Metadata(MetaVersion::V1));
        assert!(pick(accept, Target::Object).is_err());
    }

    #[test]
    fn q_values_reorder_ranges() {
        let accept = "application/json;q=0.5, application/json;as=Table;v=v1;g=meta.k8s.io";
        assert_eq!(pick(accept, Target::List).unwrap(), Representation::Table(MetaVersion::V1));
    }

    #[test]
    fn missing_accept_means_json() {
        assert_eq!(negotiate(None, Target::List).unwrap(), Representation::Object);
    }
}
