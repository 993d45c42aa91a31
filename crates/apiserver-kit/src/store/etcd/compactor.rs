//! Periodic compaction of etcd's history, coordinated between replicas as the kube-apiserver's
//! compactor does (`k8s.io/apiserver/pkg/storage/etcd3/compact.go`).
//!
//! Every interval each replica proposes, in a transaction on one shared key, to compact to the
//! revision it saw one interval earlier; the key's version acts as a logical clock, so only one
//! replica wins per interval and the others adopt its clock. History therefore always covers at
//! least one interval: watches and paged lists younger than that never get 410.

use super::client::{EtcdClient, first_read, get_op, put_op, version_is};
use std::time::Duration;

/// Starts compacting every `interval` until `stopping` is cancelled. `key` is the shared clock.
pub fn start(client: EtcdClient, key: String, interval: Duration, stopping: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        // The clock: the version of `key` this replica last saw; 0 = the key does not exist.
        let mut clock = 0i64;
        // The revision seen at the previous tick: the next compaction target.
        let mut target = 0i64;
        loop {
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = stopping.cancelled() => return,
            }
            match step(&client, &key, clock, target).await {
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
async fn step(client: &EtcdClient, key: &str, clock: i64, target: i64) -> Result<(i64, i64), tonic::Status> {
    let claim = [version_is(key, clock)];
    let response = client.txn(claim.into(), vec![put_op(key, target.to_string())], vec![get_op(key)]).await?;
    let current = response.header.as_ref().map(|h| h.revision).unwrap_or_default();
    if !response.succeeded {
        // Another replica won this tick: adopt its clock and try again next interval.
        let theirs = first_read(&response).and_then(|read| read.kvs.first()).map(|kv| kv.version);
        return Ok((theirs.unwrap_or(clock), current));
    }
    if target > 0 {
        match client.compact(target).await {
            Ok(()) => tracing::info!(revision = target, "compacted etcd's history"),
            // Someone compacted further already (etcd's own auto-compaction): nothing to do.
            Err(status) if status.code() == tonic::Code::OutOfRange => {}
            Err(error) => return Err(error),
        }
    }
    Ok((clock + 1, current))
}
