//! Indented answers for people. The kube-apiserver indents every JSON answer it negotiates
//! (objects, lists, Tables, `Status` errors, discovery, `/version`) when the request says
//! `pretty=true` or comes from a browser or a command-line HTTP tool ([`Query::pretty`]);
//! watches and the OpenAPI documents stay compact. Resource handlers indent their own answers
//! (lists of any size); this layer indents the rest, the small answers written compact
//! elsewhere (every layer's `Status` errors, discovery, `/version`), keeping their fields' order
//! (the `serde-transcode` crate copies the JSON from a reader to an indenting writer).

use super::query::{Query, human_client};
use crate::machinery::error::Error;
use crate::machinery::number::PrettyGoFloats;
use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::Body as _;

/// Answers larger than this are left as they are: every answer this layer indents is a few
/// kilobytes, and resource answers of any size are indented by their handlers.
const LARGEST: u64 = 1 << 20;

/// The middleware: indents the JSON answer of a request that asks for it.
pub async fn answer(request: Request, next: Next) -> Response {
    // Most requests neither mention `pretty` nor come from a human's client: no query parse.
    let raw = request.uri().query();
    if !raw.is_some_and(|q| q.contains("pretty")) && !human_client(request.headers()) {
        return next.run(request).await;
    }
    let query = Query::of_request(raw, request.headers());
    let path = request.uri().path();
    let stays_compact = query.flag("watch") || path.starts_with("/watch/") || path.starts_with("/openapi/");
    if stays_compact || !query.pretty() {
        return next.run(request).await;
    }
    indent(next.run(request).await).await
}

/// `response` indented, when it is JSON of a known size, not compressed and not indented yet.
async fn indent(response: Response) -> Response {
    let headers = response.headers();
    let json = headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let size = response.body().size_hint().exact();
    if !json || headers.contains_key(header::CONTENT_ENCODING) || size.is_none_or(|n| n > LARGEST) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, LARGEST as usize).await {
        Ok(bytes) => bytes,
        Err(e) => return Error::Internal(format!("reading the answer: {e}")).into_response(),
    };
    if bytes.starts_with(b"{\n") {
        return Response::from_parts(parts, Body::from(bytes));
    }
    match indented(&bytes) {
        Some(pretty) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(pretty))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// `json` indented by two spaces, numbers written as Go writes them, as the kube-apiserver's
/// indented answers are; `None` when it is not one JSON document.
fn indented(json: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(json.len() * 2);
    let mut reader = serde_json::Deserializer::from_slice(json);
    let mut writer = serde_json::Serializer::with_formatter(&mut out, PrettyGoFloats::default());
    serde_transcode::transcode(&mut reader, &mut writer).ok()?;
    reader.end().ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::indented;

    #[test]
    fn json_is_indented_in_its_own_order() {
        let status =
            br#"{"kind":"Status","apiVersion":"v1","metadata":{},"code":404,"details":{"causes":[{"a":1.5}]}}"#;
        let expected = "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"code\": 404,\n  \
                        \"details\": {\n    \"causes\": [\n      {\n        \"a\": 1.5\n      }\n    ]\n  }\n}";
        assert_eq!(String::from_utf8(indented(status).unwrap_or_default()).unwrap_or_default(), expected);
        assert_eq!(indented(b"[1e21,120]").as_deref(), Some(&b"[\n  1e+21,\n  120\n]"[..]));
        assert_eq!(indented(b"{} {}"), None);
        assert_eq!(indented(b"{\"a\":"), None);
    }
}
