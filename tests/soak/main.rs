//! Soak test: the real server binary under sustained, concurrent load for `SOAK_SECONDS` (default
//! 20, so a plain `cargo test` stays short; `make soak` runs it for 60 s).
//!
//! Writers (each on its own connection) create, update (PUT with a resourceVersion), merge-patch
//! and delete random llamas from a bounded pool of names in three namespaces; every acknowledged
//! write is recorded with the resourceVersion of its response, and the only failures allowed are
//! the expected races (409 `AlreadyExists`, 409 `Conflict` on a stale resourceVersion, 404
//! `NotFound` on a name deleted meanwhile). Listers run full LISTs, pagers page with `limit` and
//! `continue`, and watchers (cluster-wide and per namespace, with and without bookmarks, with and
//! without a label selector, one of them reading slowly) watch from a LIST's resourceVersion and
//! re-watch from their last resourceVersion whenever the server ends their stream (timeout or a
//! full buffer), as an informer does.
//!
//! The model is the acknowledged writes in resourceVersion order. The test proves that:
//! 1. the store equals the model at the end (a final LIST per namespace and cluster-wide: names,
//!    resourceVersions, spec and labels), every revision belongs to an acknowledged write, and
//!    every write's response is consistent with the state it changed;
//! 2. every LIST and every paging (all pages at one resourceVersion, no object twice) returned
//!    exactly the model's state at its resourceVersion;
//! 3. every watcher's concatenated stream, across re-watches, equals the model's events for its
//!    namespace and selector after its start, with no gap, no duplicate, in order, selector
//!    transitions included (starts matching: `ADDED`, stops matching: `DELETED`), and bookmarks
//!    never go back;
//! 4. the server's RSS stays flat after a warm-up (see [`RSS_SLACK_FRACTION`]): a bound that
//!    catches gross growth (a response, a watcher or a connection kept for good); it prints the
//!    smallest leak per write it could have seen in the run, which in a debug run is kilobytes
//!    (tens of them at 20 s). Small leaks (200 bytes per write) are the leak check's, in `make bench`
//!    (benches/load/leak.rs), which runs this load long enough against the release binary;
//! 5. nothing but the expected errors happened (every operation and error class is counted and
//!    printed);
//! 6. the audit log, with every request at `Metadata` to a rotated file, read from its files
//!    after the server stopped, holds exactly one `ResponseComplete` event for every request
//!    the soak's clients saw answered.
//!
//! It runs twice: Llamas in memory, and in a real etcd of its own (the RSS is the server's; with
//! etcd, revisions start at etcd's own, and a bookmark carries the last event's revision). A third
//! run stores in a three-member etcd cluster and kills its leader with SIGKILL a third of the way
//! in ([`outage`]): 503s are expected until etcd is whole again and a write has been acknowledged since, writes answered 503 are looked up in etcd's own
//! history and join the model when they committed, and everything above must still hold.
//!
//! `SOAK_SEED` fixes the random choices (the interleaving still varies); the seed is printed.
//!
//! The parts: [`model`] (the name pool and what the model keeps), [`bookkeeping`] (what the
//! tasks share, HTTP), [`writers`], [`listers`] (listers and pagers), [`watchers`], [`rss`], and
//! [`checks`], one function per property above.

#[path = "../common/mod.rs"]
mod common;

mod bookkeeping;
mod checks;
mod listers;
mod model;
mod outage;
mod rss;
mod watchers;
mod writers;

use bookkeeping::*;
use checks::*;
use listers::*;
use model::*;
use outage::*;
use rss::*;
use watchers::*;
use writers::*;

use common::etcd::{EtcdCluster, unique_prefix};
use common::{Backend, Server, llama_path, llamas};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

#[rstest::rstest]
#[case::memory(Backend::Memory)]
#[case::etcd(Backend::Etcd)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn under_sustained_load_lists_pages_watches_and_the_final_state_match_the_acknowledged_writes_and_memory_stays_flat(
    #[case] backend: Backend,
) {
    let audit = tempfile::tempdir().expect("a directory for the audit log");
    let flags = soak_flags(audit.path());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = Arc::new(Server::start_isolated(backend, &flags).await);
    soak(server, &format!("{backend:?}"), audit.path(), None).await;
}

/// The same soak on a three-member etcd cluster whose leader is killed a third of the way in
/// (see [`outage`]): the model, extended by the writes answered 503 that etcd's history shows
/// committed, still holds, and the outage ends (etcd whole again, a write acknowledged since).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn through_a_kill_of_the_etcd_leader_lists_pages_watches_and_the_final_state_still_match_the_committed_writes() {
    let audit = tempfile::tempdir().expect("a directory for the audit log");
    let flags = soak_flags(audit.path());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let cluster = EtcdCluster::start(3);
    let prefix = unique_prefix();
    let server = Arc::new(Server::start_on_endpoints(&cluster.endpoints(), &prefix, &flags).await);
    let kill = Some(LeaderKill::new(cluster, prefix));
    soak(server, "a three-member etcd cluster, its leader killed", audit.path(), kill).await;
}

/// The server's flags: every request audited at `Metadata` to a rotated file in `audit` (one
/// event for each request the soak made, none dropped), and the history, buffer and timeouts of
/// [`model`].
fn soak_flags(audit: &std::path::Path) -> Vec<String> {
    let policy = audit.join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
    )
    .expect("the audit policy");
    vec![
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", audit.join("audit.log").display()),
        // Rotated every 5 MB, every backup kept: each event the server wrote can be counted.
        "--audit-log-maxsize=5".to_string(),
        "--audit-log-maxbackup=0".to_string(),
        format!("--watch-history-size={HISTORY}"),
        format!("--watch-buffer-size={WATCH_BUFFER}"),
        format!("--watch-bookmark-interval-seconds={BOOKMARK_INTERVAL}"),
        format!("--min-request-timeout-seconds={MIN_REQUEST_TIMEOUT}"),
    ]
}

/// Waits for `server`, sent SIGTERM, to exit: 0, and so with every audit event written.
async fn stopped(mut server: Server, problems: &mut Vec<String>) {
    match server.exit_status(common::EVENT_DEADLINE).await {
        Some(status) if status.success() => {}
        Some(status) => problems.push(format!("the server's graceful stop ended with {status}")),
        None => problems.push(format!("the server did not exit within {:?} of SIGTERM", common::EVENT_DEADLINE)),
    }
}

/// Runs the soak against `server` (on `storage`, auditing to the directory `audit`), with the
/// etcd fault `fault` if any.
async fn soak(server: Arc<Server>, storage: &str, audit: &std::path::Path, mut fault: Option<LeaderKill>) {
    let seconds: u64 = match std::env::var("SOAK_SECONDS") {
        Ok(s) => s.parse().expect("SOAK_SECONDS is a whole number of seconds"),
        Err(_) => 20,
    };
    let seed: u64 = std::env::var("SOAK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!(
        "soak: {seconds} s (SOAK_SECONDS, default 20), SOAK_SEED={seed}; {WRITERS} writers, {LISTERS} listers, \
         {PAGERS} pagers, {} watchers; {POOL} names in {} namespaces; history {HISTORY}, watch buffer {WATCH_BUFFER}",
        watch_specs().len(),
        NAMESPACES.len()
    );
    println!("storage: {storage}");
    let pid = server.pid();
    let rss_empty = rss_bytes(pid).expect("the server's VmRSS");
    let shared = Arc::new(Shared {
        server: server.clone(),
        counts: Mutex::default(),
        failures: Mutex::default(),
        failure_total: AtomicU64::new(0),
        weights: AtomicU64::new(0),
        acknowledged: AtomicU64::new(0),
        in_etcd_outage: AtomicBool::new(false),
        ambiguous: Mutex::default(),
        requests: AtomicU64::new(0),
    });

    // The store's revision before the first write: 0 in memory, etcd's own (1 when new) in etcd.
    let base_rv = shared.current_rv(&server.client).await.expect("the revision of the empty store");
    let prefill_started = Instant::now();
    let mut writes = prefill(&shared, seed).await;
    let prefill_writes = writes.len();
    let rss_prefilled = rss_bytes(pid).expect("the server's VmRSS");
    println!(
        "prefill: {prefill_writes} writes in {:.1} s; server RSS {} empty, {} with a full history",
        prefill_started.elapsed().as_secs_f64(),
        mb(rss_empty),
        mb(rss_prefilled)
    );
    let counts_before = shared.counts.lock().unwrap().clone();

    let (stop_load_tx, stop_load) = watch::channel(false);
    let (stop_watch_tx, stop_watch) = watch::channel(false);
    let rss = tokio::spawn(sample_rss(pid, shared.clone(), stop_load.clone()));
    let specs = watch_specs();
    let watchers: Vec<_> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let progress = Arc::new(WatchProgress::default());
            // Staggered starts, so the watchers start at different resourceVersions.
            let delay = Duration::from_millis(150 * i as u64);
            let task = tokio::spawn(watcher(
                shared.clone(),
                *spec,
                delay,
                seed.wrapping_add(300 + i as u64),
                progress.clone(),
                stop_watch.clone(),
            ));
            (*spec, progress, task)
        })
        .collect();
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| tokio::spawn(writer(shared.clone(), i, seed.wrapping_add(i as u64), stop_load.clone())))
        .collect();
    let listers: Vec<_> = (0..LISTERS)
        .map(|i| tokio::spawn(lister(shared.clone(), i, seed.wrapping_add(100 + i as u64), stop_load.clone())))
        .collect();
    let pagers: Vec<_> = (0..PAGERS)
        .map(|i| tokio::spawn(pager(shared.clone(), i, seed.wrapping_add(200 + i as u64), stop_load.clone())))
        .collect();

    // The run's length: the main task only looks in now and then (and drives the etcd fault).
    let duration = Duration::from_secs(seconds);
    while started.elapsed() < duration && !shared.failed() {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Some(kill) = fault.as_mut() {
            kill.tick(&shared, started.elapsed(), duration).await;
        }
    }
    stop_load_tx.send(true).expect("stop");
    for w in writers {
        writes.extend(w.await.expect("writer task"));
    }
    let elapsed = started.elapsed();
    let mut observations = Vec::new();
    for t in listers.into_iter().chain(pagers) {
        observations.extend(t.await.expect("lister or pager task"));
    }
    let samples = rss.await.expect("RSS sampler");
    let mut problems: Vec<String> = Vec::new();
    if let Some(kill) = &fault {
        let ambiguous = std::mem::take(&mut *shared.ambiguous.lock().unwrap());
        match resolve_ambiguous(kill, base_rv, &mut writes, &ambiguous).await {
            Ok(committed) => println!(
                "writes answered 503 during the etcd outage: {}, of which {committed} committed (etcd's history)",
                ambiguous.len()
            ),
            Err(e) => problems.push(e),
        }
        kill.check(&mut problems);
    }
    let state = check_model(&mut writes, base_rv, &mut problems);
    let last_rv = writes.last().map_or(0, |w| w.obj.rv);
    check_final_lists(&shared, &state, last_rv, &mut problems).await;
    // The last scrape, while the server runs: the watchers' check stops it.
    let metrics = server.scrape().await;
    let (events_delivered, watch_lines) =
        check_watchers(&server, watchers, stop_watch_tx, &writes, &mut observations, &mut problems).await;
    check_lists(&mut observations, &writes, &mut problems);
    let rss = check_rss(&samples, elapsed, rss_prefilled, &mut problems);
    let answered = shared.requests.load(Ordering::SeqCst);
    let counts = shared.counts.lock().unwrap().clone();
    let failure_total = shared.failure_total.load(Ordering::SeqCst);
    let failures = shared.failures.lock().unwrap().clone();
    drop(shared);
    let server = Arc::try_unwrap(server).ok().expect("every task that used the server has ended");
    stopped(server, &mut problems).await;
    check_audit(audit, answered, &metrics, &mut problems);

    let soak_count =
        |what: &str| counts.get(what).copied().unwrap_or(0) - counts_before.get(what).copied().unwrap_or(0);
    println!("operations and outcomes during the soak (prefill excluded):");
    for what in counts.keys() {
        println!("  {:>9}  {what}", soak_count(what));
    }
    println!("  {failure_total:>9}  unexpected errors");
    for line in &watch_lines {
        println!("{line}");
    }
    let requests: u64 = [
        "create 201",
        "create 409 AlreadyExists (expected)",
        "get 200",
        "get 404 NotFound (expected)",
        "update 200",
        "update 409 Conflict (expected)",
        "update 404 NotFound (expected)",
        "patch 200",
        "patch 404 NotFound (expected)",
        "patch 409 Conflict (expected)",
        "delete 200",
        "delete 404 NotFound (expected)",
        "delete 409 Conflict (expected)",
        "list 200",
        "list page",
    ]
    .iter()
    .map(|w| soak_count(w))
    .sum();
    let acknowledged = writes.len() - prefill_writes;
    let secs = elapsed.as_secs_f64();
    println!(
        "LISTs and pagings checked against the model: {}; server RSS during the soak: min {}, max {}, last {} \
         (warm-up max {}, bound {})",
        observations.len(),
        mb(rss.min),
        mb(rss.max),
        mb(rss.last),
        mb(rss.warm_max),
        mb(rss.bound)
    );
    println!(
        "SOAK SUMMARY: {secs:.0} s, {WRITERS} writers/{LISTERS} listers/{PAGERS} pagers/{} watchers: {:.0} requests/s \
         ({:.0} acknowledged writes/s), {events_delivered} watch events delivered, {failure_total} unexpected errors, \
         server RSS {}–{} (last {})",
        specs.len(),
        requests as f64 / secs,
        acknowledged as f64 / secs,
        mb(rss.min),
        mb(rss.max),
        mb(rss.last)
    );

    if failure_total > 0 || !problems.is_empty() {
        let mut report = String::new();
        if failure_total > 0 {
            report.push_str(&format!("{failure_total} unexpected errors during the run (first {}):\n", failures.len()));
            for f in &failures {
                report.push_str(&format!("  - {f}\n"));
            }
        }
        if !problems.is_empty() {
            report.push_str(&format!("{} check(s) failed:\n", problems.len()));
            for p in &problems {
                report.push_str(&format!("  - {p}\n"));
            }
        }
        panic!("the soak failed (SOAK_SEED={seed}):\n{report}");
    }
}
