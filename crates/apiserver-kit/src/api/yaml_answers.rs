//! YAML answers: a client whose `Accept` prefers `application/yaml` (with or without `as=Table`
//! or `as=PartialObjectMetadata…` parameters) gets the answer it would have had in JSON written
//! as YAML, errors included, as the kube-apiserver answers. Handlers only ever write JSON: this
//! layer asks them for JSON and converts the body (with the `serde-saphyr` crate). Watches stay
//! JSON streams; a watch asked for in YAML alone gets its 406 in YAML.

use super::negotiate::parse_accept;
use super::query::Query;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The `Accept` to ask the handlers with when the client prefers YAML: the same media type in
/// JSON. `None` when the client prefers JSON (or only offers what YAML cannot serve).
fn json_in_place_of_yaml(accept: Option<&HeaderValue>) -> Option<HeaderValue> {
    for range in parse_accept(accept) {
        if range.accepts_json() {
            return None;
        }
        if (range.kind.as_str(), range.subtype.as_str()) == ("application", "yaml") {
            let params: String = range.params.iter().map(|(k, v)| format!(";{k}={v}")).collect();
            return HeaderValue::from_str(&format!("application/json{params}")).ok();
        }
    }
    None
}

/// The middleware: converts the JSON answer of a request that prefers YAML.
pub async fn answer(mut request: Request, next: Next) -> Response {
    let accept = request.headers().get(header::ACCEPT);
    // Most requests never mention YAML: they skip the parse (the handler negotiates anyway).
    let mentions_yaml = accept.is_some_and(|v| v.as_bytes().windows(4).any(|w| w.eq_ignore_ascii_case(b"yaml")));
    let Some(json) = mentions_yaml.then(|| json_in_place_of_yaml(accept)).flatten() else {
        return next.run(request).await;
    };
    // A watch cannot stream YAML: the handler refuses it (406), and that refusal is written
    // in YAML, as the kube-apiserver writes it.
    let watch = Query::parse(request.uri().query()).flag("watch");
    if !watch {
        request.headers_mut().insert(header::ACCEPT, json);
        // The JSON is read here: it is asked for plain (the YAML is compressed outside, if large).
        request.headers_mut().remove(header::ACCEPT_ENCODING);
    }
    let response = next.run(request).await;
    if watch && response.status().is_success() {
        return response;
    }
    let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let Some(yaml_type) = content_type.strip_prefix("application/json").map(|rest| format!("application/yaml{rest}"))
    else {
        return response;
    };
    let (mut parts, body) = response.into_parts();
    let converted = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => to_yaml(&bytes),
        Err(e) => Err(format!("reading the answer: {e}")),
    };
    match converted {
        Ok(yaml) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            if let Ok(value) = HeaderValue::from_str(&yaml_type) {
                parts.headers.insert(header::CONTENT_TYPE, value);
            }
            Response::from_parts(parts, axum::body::Body::from(yaml))
        }
        Err(message) => crate::machinery::error::Error::Internal(message).into_response(),
    }
}

/// A JSON document written as YAML.
fn to_yaml(json: &[u8]) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_slice(json).map_err(|e| format!("the answer is not JSON: {e}"))?;
    serde_saphyr::to_string(&value).map_err(|e| format!("writing the answer as YAML: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(accept: &str) -> Option<String> {
        let header = HeaderValue::from_str(accept).ok();
        json_in_place_of_yaml(header.as_ref()).map(|v| v.to_str().unwrap_or_default().to_string())
    }

    #[test]
    fn yaml_is_answered_only_when_preferred() {
        assert_eq!(rewritten("application/yaml").as_deref(), Some("application/json"));
        assert_eq!(rewritten("application/json;q=0.5, application/yaml").as_deref(), Some("application/json"));
        assert_eq!(rewritten("application/json, application/yaml"), None);
        assert_eq!(rewritten("*/*"), None);
        assert_eq!(
            rewritten("application/vnd.kubernetes.protobuf, application/yaml").as_deref(),
            Some("application/json")
        );
        assert_eq!(
            rewritten("application/yaml;as=Table;v=v1;g=meta.k8s.io").as_deref(),
            Some("application/json;as=Table;v=v1;g=meta.k8s.io")
        );
    }

    #[test]
    fn json_becomes_yaml() {
        let yaml = to_yaml(br#"{"kind":"Widget","spec":{"weight":120,"color":"yes"}}"#).unwrap_or_default();
        let back: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap_or_default();
        assert_eq!(back, serde_json::json!({"kind": "Widget", "spec": {"weight": 120, "color": "yes"}}));
        assert!(to_yaml(b"{").is_err());
    }
}
