//! `BENCH_ONLY=lists`: how the cost of a write grows with the lists it carries, and whether the
//! largest accepted write starves other requests.
//!
//! For 1,000, 10,000 and 100,000 finalizers (a `set` list, which server-side apply merges entry
//! by entry; 100,000 is about 2.4 MB, near the 3 MiB body limit) it times, over a few runs each:
//! a create carrying them; a server-side apply of them to that object by a second manager (every
//! entry compared, owned twice and merged); and a JSON patch adding one more. It prints each
//! time and its growth over the size ten times smaller (target: at most 15× for 10× the entries,
//! what O(n log n) gives with room to spare; a quadratic algorithm gives 100×).
//!
//! While the largest apply runs, a second client asks `/readyz` and GETs a small llama in turn,
//! and the slowest of those answers is printed (target: under 100 ms).

use super::{LLAMAS, Target, start};
use std::path::Path;
use std::time::{Duration, Instant};

/// The list sizes measured.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// Runs per measurement (the median is printed).
const RUNS: usize = 3;

/// Runs the benchmark against a fresh server.
pub async fn grow(binary: &Path) {
    let (farm, _) = start(binary, &[]).await;
    let target = &farm.target;
    let client = target.client(true);
    let small = target.url(&format!("{LLAMAS}/default/llamas"));
    let created = client.post(&small).json(&llama("small", &[])).send().await.expect("create");
    assert_eq!(created.status(), 201, "the small llama");
    println!("| finalizers | create ms | growth | apply ms | growth | JSON patch ms | growth |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut previous: Option<[f64; 3]> = None;
    let mut within = true;
    for size in SIZES {
        let times = [create(target, size).await, apply(target, size).await, patch(target, size).await];
        let growth = previous.map(|p| [times[0] / p[0], times[1] / p[1], times[2] / p[2]]);
        within &= growth.is_none_or(|g| g.iter().all(|x| *x <= 15.0));
        let shown = |i: usize| growth.map_or("–".to_string(), |g| format!("{:.1}×", g[i]));
        println!(
            "| {size} | {:.1} | {} | {:.1} | {} | {:.1} | {} |",
            times[0],
            shown(0),
            times[1],
            shown(1),
            times[2],
            shown(2)
        );
        previous = Some(times);
    }
    println!("growth within 15× for 10× the entries: {}", if within { "yes" } else { "NO" });
    let slowest = starved(target, SIZES[SIZES.len() - 1]).await;
    println!(
        "slowest /readyz or GET while an apply of {} finalizers ran: {:.1} ms (target: under 100 ms)",
        SIZES[SIZES.len() - 1],
        slowest.as_secs_f64() * 1000.0
    );
}

/// A llama named `name` with `finalizers`.
fn llama(name: &str, finalizers: &[String]) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": name, "finalizers": finalizers},
        "spec": {"weight": 1.0, "height": 1.0}
    })
}

fn finalizers(size: usize, prefix: &str) -> Vec<String> {
    (0..size).map(|i| format!("farm.example.com/{prefix}{i}")).collect()
}

/// The median, in milliseconds, of `RUNS` timings of `request(run)`, each of which must succeed.
async fn median<F: AsyncFnMut(usize) -> reqwest::Response>(what: &str, mut request: F) -> f64 {
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..RUNS {
        let started = Instant::now();
        let response = request(run).await;
        let elapsed = started.elapsed();
        let status = response.status();
        assert!(status.is_success(), "{what}: {status} {}", response.text().await.unwrap_or_default());
        times.push(elapsed.as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}

/// Creates llamas with `size` finalizers.
async fn create(target: &Target, size: usize) -> f64 {
    let client = target.client(true);
    let url = target.url(&format!("{LLAMAS}/create-{size}/llamas"));
    let entries = finalizers(size, "f");
    median("create", async |run| {
        let body = serde_json::to_vec(&llama(&format!("c{run}"), &entries)).expect("JSON");
        client.post(&url).header("content-type", "application/json").body(body).send().await.expect("create")
    })
    .await
}

/// Applies `size` finalizers (half of them already there, half new) to llamas that have `size`.
async fn apply(target: &Target, size: usize) -> f64 {
    let client = target.client(true);
    let namespace = format!("apply-{size}");
    let entries = finalizers(size, "f");
    for run in 0..RUNS {
        let body = serde_json::to_vec(&llama(&format!("a{run}"), &entries)).expect("JSON");
        let url = target.url(&format!("{LLAMAS}/{namespace}/llamas"));
        let created = client.post(&url).header("content-type", "application/json").body(body).send().await;
        assert_eq!(created.expect("create").status(), 201);
    }
    let applied: Vec<String> = entries[size / 2..].iter().cloned().chain(finalizers(size / 2, "g")).collect();
    median("apply", async |run| {
        let url = target.url(&format!("{LLAMAS}/{namespace}/llamas/a{run}?fieldManager=bench&force=true"));
        let body = serde_json::to_vec(&llama(&format!("a{run}"), &applied)).expect("JSON");
        let request = client.patch(url).header("content-type", "application/apply-patch+yaml").body(body);
        request.send().await.expect("apply")
    })
    .await
}

/// Adds one finalizer by JSON patch to the llamas that [`create`] made with `size`.
async fn patch(target: &Target, size: usize) -> f64 {
    let client = target.client(true);
    median("JSON patch", async |run| {
        let url = target.url(&format!("{LLAMAS}/create-{size}/llamas/c{run}"));
        let body = r#"[{"op": "add", "path": "/metadata/finalizers/-", "value": "farm.example.com/one-more"}]"#;
        client.patch(url).header("content-type", "application/json-patch+json").body(body).send().await.expect("patch")
    })
    .await
}

/// The slowest answer to `/readyz` or a small GET, asked in turn from another client while an
/// apply of `size` finalizers runs.
async fn starved(target: &Target, size: usize) -> Duration {
    let (writer, reader) = (target.client(true), target.client(false));
    let entries = finalizers(size, "s");
    let url = target.url(&format!("{LLAMAS}/starve/llamas/big?fieldManager=bench"));
    let body = serde_json::to_vec(&llama("big", &entries)).expect("JSON");
    let write = tokio::spawn(async move {
        let request = writer.patch(url).header("content-type", "application/apply-patch+yaml").body(body);
        request.send().await.expect("the large apply").status()
    });
    let (readyz, small) = (target.url("/readyz"), target.url(&format!("{LLAMAS}/default/llamas/small")));
    let mut slowest = Duration::ZERO;
    let mut asked = 0;
    while !write.is_finished() || asked < 2 {
        for url in [&readyz, &small] {
            let started = Instant::now();
            let answer = reader.get(url.as_str()).send().await.expect("a read");
            assert!(answer.status().is_success(), "{url}: {}", answer.status());
            slowest = slowest.max(started.elapsed());
            asked += 1;
        }
    }
    let status = write.await.expect("the writer");
    assert!(status.is_success(), "the large apply: {status}");
    slowest
}
