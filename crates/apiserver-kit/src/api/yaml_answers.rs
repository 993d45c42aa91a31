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
        // Deep answers are written where the recursion has room (a debug build's YAML writer
        // needs more stack per level than an async worker has for a hundred and more levels).
        Ok(bytes) if crate::machinery::json_depth::max_depth(&bytes) > SHALLOW => {
            super::yaml::on_deep_stack("yaml-writer", || to_yaml(&bytes)).unwrap_or_else(|e| Err(e.to_string()))
        }
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

/// Answers nesting at most this deep are written on the worker's own stack.
const SHALLOW: usize = 32;

/// A JSON document written as YAML. The JSON is the server's own answer, so it nests no deeper
/// than what the server stores (at most [`PARSED_AS_IS`](crate::machinery::json_depth::PARSED_AS_IS)
/// levels) plus the few levels of a list or Table around it: serde_json's limit of 128, meant for
/// untrusted input, would refuse a list of legal objects, so it is lifted here.
fn to_yaml(json: &[u8]) -> Result<String, String> {
    use serde::Deserialize;
    let mut reader = serde_json::Deserializer::from_slice(json);
    reader.disable_recursion_limit();
    let value = serde_json::Value::deserialize(&mut reader).map_err(|e| format!("the answer is not JSON: {e}"))?;
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

    #[test]
    fn a_list_of_the_deepest_objects_the_server_keeps_becomes_yaml() {
        let depth = crate::machinery::json_depth::PARSED_AS_IS;
        let object = format!("{}{{}}{}", r#"{"a":"#.repeat(depth - 1), "}".repeat(depth - 1));
        let list = format!(r#"{{"kind":"List","items":[{object}]}}"#);
        assert!(crate::machinery::json_depth::max_depth(list.as_bytes()) > SHALLOW);
        let yaml = crate::api::yaml::on_deep_stack("yaml-writer", || to_yaml(list.as_bytes())).unwrap().unwrap();
        assert_eq!(yaml.matches("a:").count(), depth - 1, "{yaml}");
    }
}
