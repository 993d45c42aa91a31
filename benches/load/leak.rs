//! The leak check (`BENCH_ONLY=leak`, and last in a full `make bench`): the soak's kind of load
//! (tests/soak: writers creating, updating, merge-patching and deleting llamas of a bounded
//! pool, listers and pagers, watchers re-watching from their last resourceVersion, every request
//! audited at `Metadata` to a rotated file, the soak's history and timeouts; the benchmark's
//! watch buffer) against the release binary, long enough to see a leak of 200 bytes per write.
//!
//! Everything the server holds under this load is bounded (at most [`POOL`] llamas, a history of
//! [`HISTORY`] events, bounded watch buffers and audit queue), so after a warm-up of
//! [`WARM_UP`] writes (the history filled several times over) its RSS must stop growing with the
//! writes. The RSS is sampled twice a second against the number of acknowledged writes, and the
//! growth per write is the least-squares slope of RSS over writes across the next
//! `LEAK_WRITES` writes (default [`WRITES`]): the allocator's own ups and downs (a few MB)
//! average out over hundreds of MB of traffic, and the slope's standard error says how small a
//! leak the run could see. The check fails when the slope exceeds [`LIMIT`] bytes per write (a
//! 200-byte leak is twice that), and also when the run could not have seen a 200-byte leak
//! (three standard errors above [`LIMIT`]): a longer run is then needed, not a pass.
//!
//! `LEAK_CALIBRATE=1` shows that the check sees what it claims: one write in eight then creates
//! a llama that is never deleted (outside the pool), so the server keeps a few hundred bytes per
//! write for real, and the check must fail.
//!
//! The soak in `make test` (a debug run of 20 s, 90 s in CI: a few hundred to a few thousand
//! writes after its warm-up) cannot see leaks this small; its RSS bound catches growth of
//! kilobytes per write only, and prints what it could see (see tests/soak/model.rs).

use super::{LLAMAS, Target, rss_mb, start};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Namespaces and names per namespace of the pool, as the soak's.
const NAMESPACES: [&str; 3] = ["leak-a", "leak-b", "leak-c"];
const NAMES: usize = 40;
const POOL: usize = NAMESPACES.len() * NAMES;
/// `--watch-history-size`, as the soak's.
const HISTORY: u64 = 10_000;
/// Writes before the measurement starts: the history filled five times.
const WARM_UP: u64 = 5 * HISTORY;
/// Writes measured, unless `LEAK_WRITES` says otherwise.
const WRITES: u64 = 300_000;
/// The largest growth per write that passes, in bytes: half the leak the check must see.
const LIMIT: f64 = 100.0;
const WRITERS: usize = 4;

/// What the load's tasks share.
struct Shared {
    target: Target,
    /// Acknowledged writes (2xx answers to creates, updates, patches and deletes).
    writes: AtomicU64,
    /// Answers that are neither a success nor one of the expected races: must stay 0.
    unexpected: AtomicU64,
    stop: AtomicBool,
    /// `LEAK_CALIBRATE=1`: keep a llama for good one write in eight.
    calibrate: bool,
}

/// Runs the check and prints its verdict; panics when it fails.
pub async fn check(binary: &Path) {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.yaml");
    let policy_text =
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n";
    std::fs::write(&policy, policy_text).expect("policy");
    let (policy, log) = (policy.display().to_string(), dir.path().join("audit.log").display().to_string());
    let history = HISTORY.to_string();
    let flags = [
        "--audit-policy-file",
        &policy,
        "--audit-log-path",
        &log,
        "--audit-log-maxsize",
        "20",
        "--audit-log-maxbackup",
        "1",
        "--watch-history-size",
        &history,
        "--watch-bookmark-interval-seconds",
        "1",
        "--min-request-timeout-seconds",
        "3",
    ];
    let (farm, _) = start(binary, &flags).await;
    let measured: u64 = std::env::var("LEAK_WRITES").ok().and_then(|s| s.parse().ok()).unwrap_or(WRITES);
    let shared = Arc::new(Shared {
        target: farm.target.clone(),
        writes: AtomicU64::new(0),
        unexpected: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        calibrate: std::env::var("LEAK_CALIBRATE").is_ok_and(|v| v == "1"),
    });
    let mut tasks = Vec::new();
    for i in 0..WRITERS {
        tasks.push(tokio::spawn(writer(shared.clone(), i as u64)));
    }
    tasks.push(tokio::spawn(lister(shared.clone())));
    for selector in ["", "labelSelector=herd%3Da&allowWatchBookmarks=true&"] {
        tasks.push(tokio::spawn(watcher(shared.clone(), selector)));
    }
    let started = Instant::now();
    let samples = sample(&shared, farm.child.id(), measured).await;
    shared.stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await.expect("load task");
    }
    verdict(&samples, started.elapsed(), shared.unexpected.load(Ordering::SeqCst));
}

/// Waits out the warm-up, then samples (acknowledged writes, RSS in bytes) twice a second until
/// `measured` more writes are acknowledged.
async fn sample(shared: &Shared, pid: u32, measured: u64) -> Vec<(f64, f64)> {
    let mut samples = Vec::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(500));
    loop {
        ticker.tick().await;
        let writes = shared.writes.load(Ordering::SeqCst);
        if writes < WARM_UP {
            continue;
        }
        samples.push(((writes - WARM_UP) as f64, rss_mb(pid) * 1024.0 * 1024.0));
        if writes >= WARM_UP + measured {
            return samples;
        }
    }
}

/// The least-squares slope of `y` over `x` and its standard error.
fn slope(samples: &[(f64, f64)]) -> (f64, f64) {
    let n = samples.len() as f64;
    let (mx, my) = (samples.iter().map(|s| s.0).sum::<f64>() / n, samples.iter().map(|s| s.1).sum::<f64>() / n);
    let sxx: f64 = samples.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let sxy: f64 = samples.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let b = sxy / sxx;
    let residuals: f64 = samples.iter().map(|(x, y)| (y - my - b * (x - mx)).powi(2)).sum();
    (b, (residuals / (n - 2.0) / sxx).sqrt())
}

/// Prints what the run saw and panics when it saw a leak, or could not have seen one.
fn verdict(samples: &[(f64, f64)], took: Duration, unexpected: u64) {
    let (growth, error) = slope(samples);
    let mb = |bytes: f64| bytes / 1024.0 / 1024.0;
    let (first, last) = (samples[0], samples[samples.len() - 1]);
    println!(
        "leak check: {:.0} writes measured after {WARM_UP} of warm-up ({:.0} s in all, {} samples); RSS {:.1} MB -> \
         {:.1} MB (min {:.1}, max {:.1}); growth {growth:.1} ± {error:.1} bytes per write (limit {LIMIT}); \
         {unexpected} unexpected answers",
        last.0,
        took.as_secs_f64(),
        samples.len(),
        mb(first.1),
        mb(last.1),
        mb(samples.iter().map(|s| s.1).fold(f64::MAX, f64::min)),
        mb(samples.iter().map(|s| s.1).fold(0.0, f64::max)),
    );
    assert_eq!(unexpected, 0, "the load met unexpected answers: the leak check measured something else");
    assert!(growth <= LIMIT, "LEAK: the server's RSS grows by {growth:.0} bytes per write (limit {LIMIT})");
    assert!(
        growth + 3.0 * error <= LIMIT,
        "inconclusive: this run could not see a leak of 200 bytes per write (growth {growth:.0} ± {error:.0}); \
         set LEAK_WRITES higher than {:.0}",
        last.0
    );
    println!("leak check: passed: no leak of 200 bytes per write (or more) under the soak's load");
}

/// A llama of the pool with a fresh weight and a random herd.
fn body(rng: &mut StdRng, namespace: &str, name: &str, weight: u64) -> Value {
    let herd = ["a", "b", "c"][rng.random_range(0..3)];
    json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": name, "namespace": namespace, "labels": {"herd": herd}},
        "spec": {"weight": weight, "height": rng.random_range(50..250), "color": "white"}})
}

/// Creates, updates (GET, then PUT with its resourceVersion), merge-patches and deletes random
/// llamas of the pool until stopped, as the soak's writers do; the races between writers (409,
/// 404) are expected answers.
async fn writer(shared: Arc<Shared>, seed: u64) {
    let client = shared.target.client(true);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut weight = seed * 1_000_000_000;
    while !shared.stop.load(Ordering::SeqCst) {
        let key = rng.random_range(0..POOL);
        let (namespace, name) = (NAMESPACES[key / NAMES], format!("llama-{:03}", key % NAMES));
        let one = shared.target.url(&format!("{LLAMAS}/{namespace}/llamas/{name}"));
        weight += 1;
        let request = match rng.random_range(0..10) {
            // Calibration: a llama kept for good, one write in eight.
            _ if shared.calibrate && rng.random_range(0..8) == 0 => {
                let kept = format!("kept-{seed}-{weight}");
                let path = format!("{LLAMAS}/leak-kept/llamas");
                client.post(shared.target.url(&path)).json(&body(&mut rng, "leak-kept", &kept, weight))
            }
            0..=2 => client
                .post(shared.target.url(&format!("{LLAMAS}/{namespace}/llamas")))
                .json(&body(&mut rng, namespace, &name, weight)),
            3..=4 => {
                let Ok(current) = client.get(&one).send().await else { continue };
                let Ok(mut current) = current.json::<Value>().await else { continue };
                if current["kind"] != "Llama" {
                    continue;
                }
                current["spec"]["weight"] = json!(weight);
                client.put(&one).json(&current)
            }
            5..=7 => client
                .patch(&one)
                .header("content-type", "application/merge-patch+json")
                .body(json!({"spec": {"weight": weight}}).to_string()),
            _ => client.delete(&one),
        };
        let Ok(answer) = request.send().await else {
            shared.unexpected.fetch_add(1, Ordering::SeqCst);
            continue;
        };
        let code = answer.status().as_u16();
        let _ = answer.bytes().await;
        match code {
            200 | 201 => {
                shared.writes.fetch_add(1, Ordering::SeqCst);
            }
            404 | 409 => {}
            _ => {
                shared.unexpected.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

/// LISTs everything and pages through it (`limit=25`) until stopped, as the soak's listers and
/// pagers do.
async fn lister(shared: Arc<Shared>) {
    let client = shared.target.client(true);
    let all = "/apis/farm.example.com/v1alpha/llamas";
    while !shared.stop.load(Ordering::SeqCst) {
        let mut token = String::new();
        for query in ["", "?limit=25"] {
            let mut url = shared.target.url(&format!("{all}{query}"));
            loop {
                let Ok(answer) = client.get(&url).send().await else { break };
                let Ok(page) = answer.json::<Value>().await else { break };
                token.clear();
                token.push_str(page["metadata"]["continue"].as_str().unwrap_or_default());
                if token.is_empty() {
                    break;
                }
                url = shared.target.url(&format!("{all}?limit=25&continue={token}"));
            }
        }
    }
}

/// Watches every namespace with `query` from its last resourceVersion, re-watching when the
/// server ends the stream and re-listing after a 410, until stopped.
async fn watcher(shared: Arc<Shared>, query: &'static str) {
    let client = shared.target.client(true);
    let all = "/apis/farm.example.com/v1alpha/llamas";
    let mut from = String::new();
    while !shared.stop.load(Ordering::SeqCst) {
        if from.is_empty() {
            let Ok(answer) = client.get(shared.target.url(all)).send().await else { continue };
            let Ok(list) = answer.json::<Value>().await else { continue };
            from = list["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
            continue;
        }
        let url = shared.target.url(&format!("{all}?{query}watch=true&resourceVersion={from}"));
        let Ok(mut stream) = client.get(url).send().await else { continue };
        let mut buffer = Vec::new();
        loop {
            // Wakes up now and then to see whether the check is over.
            let chunk = match tokio::time::timeout(Duration::from_secs(1), stream.chunk()).await {
                Err(_) if shared.stop.load(Ordering::SeqCst) => return,
                Err(_) => continue,
                Ok(Ok(Some(chunk))) => chunk,
                Ok(_) => break,
            };
            buffer.extend_from_slice(&chunk);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let event: Value = serde_json::from_slice(&line).unwrap_or_default();
                match event["object"]["metadata"]["resourceVersion"].as_str() {
                    _ if event["type"] == "ERROR" => from.clear(),
                    Some(rv) => from = rv.to_string(),
                    None => {}
                }
            }
        }
    }
}
