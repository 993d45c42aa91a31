//! Periodic compaction of etcd's history, coordinated between replicas as the kube-apiserver's
//! compactor does (`k8s.io/apiserver/pkg/storage/etcd3/compact.go`).
//!
//! Every interval each replica proposes, in a transaction on one shared key, to compact to the
//! revision it saw one interval earlier; the key's version acts as a logical clock, so only one
//! replica wins per interval and the others adopt its clock. History therefore always covers at
//! least one interval: watches and paged lists younger than that never get 410.

use etcd_client::{Client, CompactionOptions, Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use std::time::Duration;

/// Starts compacting every `interval` until `stopping` is cancelled. `key` is the shared clock.
pub fn start(client: Client, key: String, interval: Duration, stopping: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        let mut kv = client.kv_client();
        // The clock: the version of `key` this replica last saw; 0 = the key does not exist.
        let mut clock = 0i64;
        // The revision seen at the previous tick: the next compaction target.
        let mut target = 0i64;
        loop {
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = stopping.cancelled() => return,
            }
            match step(&mut kv, &key, clock, target).await {
                Ok((next_clock, revision)) => {
                    clock = next_clock;
                    target = revision;
                }
                Err(error) => tracing::warn!(%error, "etcd compaction failed; retrying next interval"),
            }
        }
    });
}

/// One round: claims the clock tick `clock` by writing `target` to `key`; on winning, compacts
/// to `target`. Returns the clock to use next and the current revision (the next target).
async fn step(
    kv: &mut etcd_client::KvClient,
    key: &str,
    clock: i64,
    target: i64,
) -> Result<(i64, i64), etcd_client::Error> {
    let txn = Txn::new()
        .when([Compare::version(key, CompareOp::Equal, clock)])
        .and_then([TxnOp::put(key, target.to_string(), None)])
        .or_else([TxnOp::get(key, None)]);
    let response = kv.txn(txn).await?;
    let current = response.header().map(|h| h.revision()).unwrap_or_default();
    if !response.succeeded() {
        // Another replica won this tick: adopt its clock and try again next interval.
        let theirs = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.version()),
            _ => None,
        });
        return Ok((theirs.unwrap_or(clock), current));
    }
    if target > 0 {
        match kv.compact(target, Some(CompactionOptions::new().with_physical())).await {
            Ok(_) => tracing::info!(revision = target, "compacted etcd's history"),
            // Someone compacted further already (etcd's own auto-compaction): nothing to do.
            Err(etcd_client::Error::GRpcStatus(s)) if s.code() == tonic::Code::OutOfRange => {}
            Err(error) => return Err(error),
        }
    }
    Ok((clock + 1, current))
}
