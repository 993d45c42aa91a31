//! The body of a list in any compact representation (objects, `PartialObjectMetadata`, Table
//! rows), written item by item after the list's head: objects are the stored encodings copied
//! into it (converted there for another version), never decoded and encoded again. Written whole
//! with its length while it stays under [`compression::THRESHOLD_BYTES`]; past that, the part
//! written is the first chunk and the rest is written to the socket as it is encoded, a chunk at
//! a time, gzipped as it goes for a client that accepts it. The server holds the list's snapshot
//! (a pointer per object) and one chunk, whatever the list's size; a client that reads slowly is
//! written to as fast as it reads, and one that goes away stops the encoding.

use super::compression;
use crate::machinery::error::{Error, Result};
use crate::machinery::stored::Stored;
use crate::machinery::strategy::Strategy;
use crate::machinery::version::Served;
use axum::body::Body;
use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::Serialize;
use std::io::Write;
use std::sync::Arc;

/// How much of a streamed list is encoded at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// A list's body and whether it is gzipped.
pub struct ListBody {
    /// The body.
    pub body: Body,
    /// Whether it is gzipped (the answer's `Content-Encoding`).
    pub gzipped: bool,
}

/// The head of a list: everything but its items, which follow it.
#[derive(Serialize)]
struct ListHead<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    metadata: &'a ListMeta,
}

/// `{"apiVersion":…,"kind":…,"metadata":{…},"items":[`: a list up to its items.
pub fn list_head(api_version: &str, kind: &str, metadata: &ListMeta) -> Result<Vec<u8>> {
    open_array(&ListHead { api_version, kind, metadata }, "items")
}

/// `head` (an object with at least one field) encoded, up to the `[` of its last field `array`.
pub fn open_array<T: Serialize>(head: &T, array: &str) -> Result<Vec<u8>> {
    let mut out = serde_json::to_vec(head).map_err(|e| Error::Internal(format!("encoding a list: {e}")))?;
    out.pop(); // the head's closing brace
    out.push(b',');
    serde_json::to_writer(&mut out, array).map_err(|e| Error::Internal(format!("encoding a list: {e}")))?;
    out.extend_from_slice(b":[");
    Ok(out)
}

/// The body of the list with `metadata` of `items` (hub objects, written at version `V`).
pub fn list_body<K: Strategy, V: Served<K>>(
    metadata: &ListMeta,
    items: Vec<Arc<Stored<K>>>,
    gzip: bool,
) -> Result<ListBody> {
    let head = list_head(&V::api_version(&()), V::info().list_kind, metadata)?;
    streamed(head, items, V::write_from_hub, gzip)
}

/// The body of a list: `head` (up to its items' `[`), each of `items` as `write` appends it,
/// then `]}`. Whole while under the compression threshold, else streamed and then gzipped when
/// `gzip`.
pub fn streamed<K: Send + Sync + 'static, W: WriteItem<K>>(
    head: Vec<u8>,
    items: Vec<Arc<Stored<K>>>,
    write: W,
    gzip: bool,
) -> Result<ListBody> {
    let threshold = usize::try_from(compression::THRESHOLD_BYTES).unwrap_or(usize::MAX);
    let mut chunks = Chunks { items, next: 0, closed: false, write };
    let mut out = head;
    out.reserve(chunks.estimate(threshold));
    if let Some(written) = chunks.write_next(&mut out, threshold + 1) {
        written?;
    }
    if chunks.closed {
        return Ok(ListBody { body: Body::from(out), gzipped: false });
    }
    let plain = Plain { first: Some(out), chunks };
    let body = match gzip {
        false => Body::from_stream(futures::stream::iter(plain)),
        true => {
            let encoder = flate2::write::GzEncoder::new(Vec::new(), compression::level());
            Body::from_stream(futures::stream::iter(Gzipped { plain, encoder: Some(encoder) }))
        }
    };
    Ok(ListBody { body, gzipped: gzip })
}

/// Appends one item of a list to the buffer.
pub trait WriteItem<K>: FnMut(&Arc<Stored<K>>, &mut Vec<u8>) -> Result<()> + Send + 'static {}

impl<K, F: FnMut(&Arc<Stored<K>>, &mut Vec<u8>) -> Result<()> + Send + 'static> WriteItem<K> for F {}

/// The items of a list, written a chunk at a time, then the list's end.
struct Chunks<K, W> {
    items: Vec<Arc<Stored<K>>>,
    next: usize,
    closed: bool,
    write: W,
}

impl<K, W: WriteItem<K>> Chunks<K, W> {
    /// About how many bytes the items take (their stored lengths), counted up to `most`.
    fn estimate(&self, most: usize) -> usize {
        let mut total = 2;
        for object in &self.items {
            total += object.json_len() + 1;
            if total > most {
                return most;
            }
        }
        total
    }

    /// Appends items to `out` until it holds `limit` bytes, and the list's end after the last;
    /// `None` once that end is written.
    fn write_next(&mut self, out: &mut Vec<u8>, limit: usize) -> Option<Result<()>> {
        if self.closed {
            return None;
        }
        while out.len() < limit
            && let Some(object) = self.items.get(self.next)
        {
            if self.next > 0 {
                out.push(b',');
            }
            if let Err(e) = (self.write)(object, out) {
                self.closed = true;
                return Some(Err(e));
            }
            self.next += 1;
        }
        if self.next == self.items.len() {
            out.extend_from_slice(b"]}");
            self.closed = true;
        }
        Some(Ok(()))
    }
}

/// What a streamed body yields: a chunk, or the error that cuts it short (the status line is
/// sent: the client sees a body that ends before the list does).
type Chunk = std::result::Result<Bytes, std::io::Error>;

fn cut_short(error: Error) -> std::io::Error {
    tracing::error!(%error, "a streamed list was cut short");
    std::io::Error::other(error.to_string())
}

/// A streamed list, as it is: the part written before it was known to be large, then chunks.
struct Plain<K, W> {
    first: Option<Vec<u8>>,
    chunks: Chunks<K, W>,
}

impl<K, W: WriteItem<K>> Iterator for Plain<K, W> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        if let Some(first) = self.first.take() {
            return Some(Ok(Bytes::from(first)));
        }
        let mut out = Vec::with_capacity(CHUNK_BYTES + 4096);
        match self.chunks.write_next(&mut out, CHUNK_BYTES)? {
            Ok(()) => Some(Ok(Bytes::from(out))),
            Err(e) => Some(Err(cut_short(e))),
        }
    }
}

/// A streamed list, gzipped as it goes: [`Plain`]'s chunks through the encoder.
struct Gzipped<K, W> {
    plain: Plain<K, W>,
    /// Taken when the stream ends.
    encoder: Option<flate2::write::GzEncoder<Vec<u8>>>,
}

impl<K, W: WriteItem<K>> Iterator for Gzipped<K, W> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        // Chunks go into the encoder until it gives out compressed bytes (it keeps a window's
        // worth before it does), or the list ends.
        loop {
            let encoder = self.encoder.as_mut()?;
            match self.plain.next() {
                Some(Ok(chunk)) => {
                    if let Err(e) = encoder.write_all(&chunk) {
                        return Some(Err(e));
                    }
                    if !encoder.get_ref().is_empty() {
                        return Some(Ok(Bytes::from(std::mem::take(encoder.get_mut()))));
                    }
                }
                Some(Err(e)) => return Some(Err(e)),
                None => return self.encoder.take().map(|e| e.finish().map(Bytes::from)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::testing::{Widget, widget};
    use futures::StreamExt;

    fn widgets(count: usize) -> Vec<Arc<Stored<Widget>>> {
        (0..count).map(|i| Arc::new(Stored::new(widget("shop", &format!("widget-{i:05}"), 1.5)).unwrap())).collect()
    }

    /// The chunks of `body`, as a client reads them.
    async fn chunks(body: Body) -> Vec<Bytes> {
        body.into_data_stream().map(|c| c.unwrap()).collect().await
    }

    #[tokio::test]
    async fn a_large_list_is_streamed_in_chunks_and_gzipped_as_it_goes_into_the_same_list() {
        let metadata = ListMeta { resource_version: Some("9".into()), ..Default::default() };
        let items = widgets(3_000);
        let whole = {
            let mut out = list_head("test.example.com/v1", "WidgetList", &metadata).unwrap();
            let write = <Widget as Served<Widget>>::write_from_hub;
            let mut chunks = Chunks { items: items.clone(), next: 0, closed: false, write };
            chunks.write_next(&mut out, usize::MAX).unwrap().unwrap();
            out
        };
        assert!(whole.len() > 4 * CHUNK_BYTES);
        let decoded: serde_json::Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(decoded["items"].as_array().unwrap().len(), 3_000);
        let streamed = list_body::<Widget, Widget>(&metadata, items.clone(), false).unwrap();
        assert!(!streamed.gzipped);
        let parts = chunks(streamed.body).await;
        let threshold = compression::THRESHOLD_BYTES as usize;
        assert!(parts.len() > 4, "streamed in chunks");
        assert!((threshold..threshold + 4096).contains(&parts[0].len()), "the part written before it was known large");
        assert!(parts[1..].iter().all(|c| c.len() < CHUNK_BYTES + 4096), "then chunks of at most ~64 KiB");
        assert_eq!(parts.concat(), whole);
        let gzipped = list_body::<Widget, Widget>(&metadata, items, true).unwrap();
        assert!(gzipped.gzipped);
        let parts = chunks(gzipped.body).await;
        assert!(parts.len() > 1, "compressed bytes leave before the list is encoded");
        assert_eq!(compression::gunzip(&parts.concat()).unwrap(), whole);
    }

    #[tokio::test]
    async fn a_small_list_is_written_whole_with_its_length_and_never_gzipped() {
        let listed = list_body::<Widget, Widget>(&ListMeta::default(), widgets(3), true).unwrap();
        assert!(!listed.gzipped);
        assert_eq!(axum::body::HttpBody::size_hint(&listed.body).exact().map(|n| n > 0), Some(true));
        let empty = list_body::<Widget, Widget>(&ListMeta::default(), Vec::new(), false).unwrap();
        let text = axum::body::to_bytes(empty.body, usize::MAX).await.unwrap();
        assert_eq!(&text[..], br#"{"apiVersion":"test.example.com/v1","kind":"WidgetList","metadata":{},"items":[]}"#);
    }
}
