//! Reads of a whole range (a list without a limit, the watch cache's first list): etcd's
//! answers come in chunks sized by bytes, and the next chunk is asked for before the current
//! one is decoded, so etcd's work and ours overlap. [`fetch`], one chunk asked again in halves
//! when it is too large for gRPC, serves the chunks of pages too.
//!
//! Why chunks by bytes, and big: etcd counts (3.5) or collects (3.4) every remaining key of the
//! range for each chunk it serves, so a list of n keys in chunks of c visits about n²/2c keys
//! in etcd's index. With the 1,000-object chunks of a page, the watch cache's first list of
//! 100,000 objects spent 3.4 s waiting for etcd; with 10,000 (the kube-apiserver's cacher reads
//! 10,000 a chunk), 1.0 s.

use super::client::EtcdClient;
use super::connection::api_error;
use super::grpc::etcdserverpb::{RangeRequest, RangeResponse};
use super::grpc::mvccpb::KeyValue;
use super::{etcd_revision, header_revision, key_after, stored};
use crate::machinery::error::{Error, Result};
use crate::machinery::resource::ApiResource;
use crate::machinery::stored::Stored;
use std::sync::Arc;

/// How many objects the first chunk asks for, before the size of one is known.
const FIRST_CHUNK: usize = 1000;

/// The size of the answer later chunks aim at (etcd's answers are allowed up to the client's
/// 64 MiB; two are held at once, one being decoded while the next arrives).
const CHUNK_BYTES: usize = 16 << 20;

/// The most objects one chunk asks for, however small they are.
const MAX_CHUNK: usize = 100_000;

/// Chunks of fewer objects are decoded where they arrive, not on a blocking thread.
const DECODED_IN_PLACE: usize = 256;

/// Every object of `[start, end)` at etcd revision `at` (0: now) that `selects` selects, in key
/// order, with the revision read at.
pub(super) async fn read<K: ApiResource>(
    client: &EtcdClient,
    mut start: Vec<u8>,
    end: Vec<u8>,
    mut at: i64,
    selects: &(dyn Fn(&Stored<K>) -> bool + Sync),
) -> Result<(Vec<Arc<Stored<K>>>, i64)> {
    let mut items = Vec::new();
    let mut chunk = FIRST_CHUNK;
    let mut response = fetch(client, &mut chunk, &start, &end, &mut at).await?;
    loop {
        chunk = next_chunk(&response, chunk);
        let next = match response.kvs.last().filter(|_| response.more) {
            Some(last) => {
                start = key_after(&last.key);
                Some(&start)
            }
            None => None,
        };
        let (decoded, fetched) = tokio::join!(decode::<K>(response.kvs), async {
            match next {
                Some(start) => Some(fetch(client, &mut chunk, start, &end, &mut at).await),
                None => None,
            }
        });
        items.extend(decoded?.into_iter().filter(|object| selects(object)));
        match fetched {
            Some(fetched) => response = fetched?,
            None => return Ok((items, at)),
        }
    }
}

/// One chunk of at most `chunk` objects of `[start, end)` at etcd revision `at`; an answer too
/// large for gRPC's limits is asked for again in halves (`chunk` keeps the size that passed).
/// A read at 0 (now) sets `at` to the revision read, so later chunks read the same snapshot.
pub(super) async fn fetch(
    client: &EtcdClient,
    chunk: &mut usize,
    start: &[u8],
    end: &[u8],
    at: &mut i64,
) -> Result<RangeResponse> {
    loop {
        let request = RangeRequest {
            key: start.to_vec(),
            range_end: end.to_vec(),
            limit: i64::try_from(*chunk).unwrap_or(i64::MAX),
            revision: *at,
            ..Default::default()
        };
        match client.range(request).await {
            Ok(response) => {
                if *at == 0 {
                    *at = etcd_revision(header_revision(response.header.as_ref())?)?;
                }
                return Ok(response);
            }
            Err(status) if *chunk > 1 && too_large(&status) => *chunk /= 2,
            Err(status) => return Err(api_error(status)),
        }
    }
}

/// Whether etcd refused to send, or the client to receive, an answer for its size.
fn too_large(status: &tonic::Status) -> bool {
    let message = status.message();
    match status.code() {
        tonic::Code::OutOfRange => message.contains("message length too large"),
        tonic::Code::ResourceExhausted => message.contains("larger than max"),
        _ => false,
    }
}

/// The size of the chunk after `response`: as many objects as fit in [`CHUNK_BYTES`] at the
/// answer's average size, never more than twice the last chunk (so one large object among
/// small ones cannot ask for an answer over the limits at once).
fn next_chunk(response: &RangeResponse, last: usize) -> usize {
    let count = response.kvs.len();
    if count == 0 {
        return last;
    }
    let bytes: usize = response.kvs.iter().map(|kv| kv.key.len() + kv.value.len()).sum();
    let fits = CHUNK_BYTES / (bytes / count).max(1);
    fits.clamp(1, MAX_CHUNK).min(last.saturating_mul(2))
}

/// The stored forms of `kvs`; a large chunk is decoded on a blocking thread, so the runtime's
/// workers go on serving while it is.
async fn decode<K: ApiResource>(kvs: Vec<KeyValue>) -> Result<Vec<Arc<Stored<K>>>> {
    let small = kvs.len() < DECODED_IN_PLACE;
    let all = move || kvs.iter().map(stored::<K>).collect::<Result<Vec<_>>>();
    if small {
        return all();
    }
    tokio::task::spawn_blocking(all).await.map_err(|e| Error::Internal(format!("decoding a list from etcd: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(sizes: &[usize]) -> RangeResponse {
        let kvs = sizes.iter().map(|size| KeyValue {
            key: vec![b'k'; 10],
            value: vec![b'v'; size - 10],
            ..Default::default()
        });
        RangeResponse { kvs: kvs.collect(), ..Default::default() }
    }

    #[test]
    fn chunks_grow_to_the_bytes_aimed_at_at_most_twice_at_a_time() {
        // 400-byte objects: 16 MiB holds 41,943; from 1,000 the chunk doubles towards it.
        let small = answer(&[400; 1000]);
        assert_eq!(next_chunk(&small, 1000), 2000);
        assert_eq!(next_chunk(&small, 32_000), 41_943);
        // Tiny objects stop at the most one chunk asks for.
        assert_eq!(next_chunk(&answer(&[20; 100]), 80_000), MAX_CHUNK);
        // Large ones shrink it at once, never below one.
        assert_eq!(next_chunk(&answer(&[1 << 20; 4]), 1000), 16);
        assert_eq!(next_chunk(&answer(&[64 << 20]), 1000), 1);
        // An empty answer keeps the size.
        assert_eq!(next_chunk(&answer(&[]), 1234), 1234);
    }

    #[test]
    fn answers_too_large_for_grpc_are_told_from_other_errors() {
        let client = tonic::Status::out_of_range(
            "Error, decoded message length too large: found 70000000 bytes, the limit is: 67108864 bytes",
        );
        let server = tonic::Status::resource_exhausted("grpc: trying to send message larger than max (9 vs. 4)");
        assert!(too_large(&client) && too_large(&server));
        assert!(!too_large(&tonic::Status::out_of_range("etcdserver: mvcc: required revision has been compacted")));
        assert!(!too_large(&tonic::Status::resource_exhausted("etcdserver: mvcc: database space exceeded")));
        assert!(!too_large(&tonic::Status::unavailable("message length too large")));
    }
}
