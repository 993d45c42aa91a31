//! Compressed answers, as the kube-apiserver gives them (APIResponseCompression, on by default
//! since 1.16): a client whose `Accept-Encoding` names `gzip` gets an answer whose body is over
//! 128 KiB gzipped at level 1 (the kube-apiserver's `defaultGzipThresholdBytes` and
//! `defaultGzipContentEncodingLevel`), with `Content-Encoding: gzip` and `Vary: Accept-Encoding`.
//! Smaller answers, and streams (watches), go as they are.
//!
//! Through the aggregator this matters most: the kube-apiserver passes the answer through as it
//! is, so without it a client over a real network waits for every byte of a large list.

use axum::body::Body;
use axum::body::HttpBody as _;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::io::Write;

/// Bodies larger than this are compressed.
pub const THRESHOLD_BYTES: u64 = 128 * 1024;
/// Level 1: the least CPU, at most 1.5x the size of the best level (kubernetes/kubernetes#112296).
const LEVEL: u32 = 1;

/// Whether `Accept-Encoding` names gzip, read as the kube-apiserver reads it: one of its
/// comma-separated tokens, trimmed, is exactly `gzip` (a token with parameters is not).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim() == "gzip")
}

/// The level answers are gzipped at.
pub fn level() -> flate2::Compression {
    flate2::Compression::new(LEVEL)
}

/// `body` gzipped at [`level`].
pub fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(body.len() / 8), level());
    encoder.write_all(body)?;
    encoder.finish()
}

/// `body` as one gzip member of a stream, as the kube-apiserver's `perFlushGzipWriter` writes
/// each flush of a watch: the data in blocks ended by a sync flush, then an empty final block
/// and the trailer. A reader gets the data before it reaches the member's end: Go's gzip
/// reader (a Go client's transport, the aggregator in front) returns the data of a final block
/// only once it has read the next member's header, so a watch's last batch would wait for the
/// next one.
pub fn gzip_member(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(body.len() / 4 + 64), level());
    encoder.write_all(body)?;
    encoder.flush()?;
    encoder.finish()
}

/// `body`, gunzipped (for what reads an answer this server gzipped).
pub fn gunzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut plain = Vec::with_capacity(body.len() * 4);
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(body), &mut plain)?;
    Ok(plain)
}

/// Marks an answer's headers as those of a gzipped body, as the kube-apiserver does.
pub fn mark_gzipped(headers: &mut HeaderMap) {
    headers.remove(header::CONTENT_LENGTH);
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
}

/// The middleware: compresses a large answer for a client that accepts gzip.
pub async fn answer(request: Request, next: Next) -> Response {
    let wanted = accepts_gzip(request.headers());
    let response = next.run(request).await;
    // Only a body whose length is known: a stream (a watch) has none.
    let large = response.body().size_hint().exact().is_some_and(|len| len > THRESHOLD_BYTES);
    if !wanted || !large || response.headers().contains_key(header::CONTENT_ENCODING) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let compressed = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => gzip(&bytes).map_err(|e| format!("compressing the answer: {e}")),
        Err(e) => Err(format!("reading the answer: {e}")),
    };
    match compressed {
        Ok(compressed) => {
            mark_gzipped(&mut parts.headers);
            Response::from_parts(parts, Body::from(compressed))
        }
        Err(message) => crate::machinery::error::Error::Internal(message).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(values: &[&str]) -> bool {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        accepts_gzip(&headers)
    }

    #[test]
    fn gzip_is_accepted_as_the_kube_apiserver_reads_the_header() {
        assert!(accepts(&["gzip"]) && accepts(&["deflate, gzip"]) && accepts(&[" gzip ,br"]));
        assert!(accepts(&["br", "gzip"]), "every Accept-Encoding header counts");
        assert!(!accepts(&[]) && !accepts(&["identity"]) && !accepts(&["gzip;q=1"]) && !accepts(&["x-gzip"]));
    }

    #[test]
    fn what_is_compressed_decompresses_to_itself() {
        let body: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let compressed = gzip(&body).unwrap();
        assert!(compressed.len() < body.len());
        assert_eq!(gunzip(&compressed).unwrap(), body);
        assert!(gunzip(&body).is_err());
    }
}
