//! Stalled watchers (issue 36, `BENCH_ONLY=stalled`): 1,000 watches over HTTP/1.1 whose clients
//! never read a byte, while 100,000 updates go to 1,000 llamas of their namespace (32
//! connections). Each watcher's socket fills, then its buffer of events (`--watch-buffer-size`,
//! 10,000 here), then the server drops it. Printed after every 20,000 updates: the server's
//! memory in use (`farm_apiserver_heap_allocated_bytes`) and RSS against before the watches
//! opened, per stalled watcher, and how many the server has dropped
//! (`apiserver_terminated_watchers_total`). Since the store drops a dropped watcher's buffered
//! events with it, what a stalled watcher holds stops growing once it is dropped: its
//! connection, its TLS state and what hyper had taken of its stream, whatever the writes.

use super::watchers::metric;
use super::{LLAMAS, fill, llama, rss_mb, start};
use std::path::Path;
use std::time::Duration;

const WATCHERS: usize = 1_000;
const LLAMAS_UPDATED: usize = 1_000;
const UPDATES: usize = 100_000;
const STEP: usize = 20_000;
const WRITERS: usize = 32;
const HEAP: &str = "farm_apiserver_heap_allocated_bytes";
const OPEN: &str = "apiserver_longrunning_requests{resource=\"llamas\"}";
const DROPPED: &str = "apiserver_terminated_watchers_total{resource=\"llamas\"}";

/// Runs the bench and prints its table.
pub async fn stalled(binary: &Path) {
    let (farm, _) = start(binary, &[]).await;
    let (target, pid) = (farm.target.clone(), farm.child.id());
    let path = format!("{LLAMAS}/stalled/llamas");
    fill(&target, &path, LLAMAS_UPDATED, llama, "l").await;
    let probe = target.client(false);
    let (rss_before, heap_before) = (rss_mb(pid), metric(&target, &probe, HEAP).await);
    // One connection each, and the answers held unread: their clients never take a byte.
    let client = target.client(false);
    let mut held = Vec::new();
    for _ in 0..WATCHERS {
        let response = client.get(target.url(&format!("{path}?watch=true"))).send().await.expect("watch");
        assert_eq!(response.status(), 200);
        held.push(response);
    }
    while metric(&target, &probe, OPEN).await < WATCHERS as f64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "{WATCHERS} stalled watchers (HTTP/1.1, never reading) under {UPDATES} updates of {LLAMAS_UPDATED} llamas; memory against before they opened, per watcher"
    );
    println!("| updates | memory in use per watcher | RSS per watcher | watchers dropped |");
    println!("|---:|---:|---:|---:|");
    let per_watcher = |now: f64, before: f64| (now - before) / WATCHERS as f64;
    let report = |updates: usize, heap: f64, rss: f64, dropped: f64| {
        println!(
            "| {updates} | {:.1} KB | {:.1} KB | {dropped:.0} |",
            per_watcher(heap, heap_before) / 1e3,
            per_watcher(rss, rss_before) * 1024.0 * 1024.0 / 1e3
        );
    };
    report(0, metric(&target, &probe, HEAP).await, rss_mb(pid), metric(&target, &probe, DROPPED).await);
    for done in (STEP..=UPDATES).step_by(STEP) {
        update(&target, &path, done - STEP..done).await;
        report(done, metric(&target, &probe, HEAP).await, rss_mb(pid), metric(&target, &probe, DROPPED).await);
    }
    drop(held);
}

/// Updates number `range`, each a merge patch of llama `i % LLAMAS_UPDATED`'s weight, over
/// `WRITERS` connections.
async fn update(target: &super::Target, path: &str, range: std::ops::Range<usize>) {
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let (client, base, path) = (target.client(false), target.clone(), path.to_string());
        let numbers = (range.start + writer..range.end).step_by(WRITERS);
        tasks.push(tokio::spawn(async move {
            for i in numbers {
                // Each round over the llamas gives each a new weight, so every update is an event.
                let patch = serde_json::json!({"spec": {"weight": (i / LLAMAS_UPDATED) % 500 + 1}});
                let request = client
                    .patch(base.url(&llama_path(&path, i % LLAMAS_UPDATED)))
                    .header("content-type", "application/merge-patch+json")
                    .body(patch.to_string());
                let r = request.send().await.expect("update");
                assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
            }
        }));
    }
    for task in tasks {
        task.await.expect("update task");
    }
}

/// The path of llama number `i` of `path` (named as `fill` names them).
fn llama_path(path: &str, i: usize) -> String {
    format!("{path}/l{i:06}")
}
