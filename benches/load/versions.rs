//! What serving a second version costs: on one server, the same reads at the version llamas are
//! stored at (v1) and at the version they are converted to (v1alpha, [`ab::row_of_loads`],
//! alternating runs), and the watch fan-out to 1,000 watchers all at v1 against half of them at
//! v1alpha. Issue 35 asks that a read at v1alpha keep at least 0.8x the rate at v1, and a split
//! fan-out a p99 at most 1.2x the one at v1 alone.

use super::ab::{self, Load, ROUNDS};
use super::{Target, fill, llama, start};
use std::path::Path;
use std::time::Duration;

const STORED: &str = "/apis/farm.example.com/v1/namespaces/small/llamas";
const CONVERTED: &str = "/apis/farm.example.com/v1alpha/namespaces/small/llamas";

fn get(t: &Target, c: &reqwest::Client, base: &str) -> reqwest::RequestBuilder {
    c.get(t.url(&format!("{base}/l000500")))
}

const LOADS: [(&str, Load, Load); 2] = [
    (
        "GET one llama (32 conns)",
        Load { name: "stored", concurrency: 32, request: |t, c, _| get(t, c, STORED) },
        Load { name: "converted", concurrency: 32, request: |t, c, _| get(t, c, CONVERTED) },
    ),
    (
        "LIST 1,000 llamas (8 conns)",
        Load { name: "stored", concurrency: 8, request: |t, c, _| c.get(t.url(STORED)) },
        Load { name: "converted", concurrency: 8, request: |t, c, _| c.get(t.url(CONVERTED)) },
    ),
];

/// Runs the comparison and prints its table.
pub async fn compare(binary: &Path, phase: Duration) {
    let (farm, _) = start(binary, &[]).await;
    fill(&farm.target, CONVERTED, 1_000, llama, "l").await;
    println!(
        "versions: reads at the stored version (v1) vs the converted one (v1alpha), one server, {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    ab::header("stored", "converted");
    for (name, stored, converted) in &LOADS {
        ab::row_of_loads(&farm, name, stored, converted, phase).await;
    }
    println!();
    let ms = |h: &hdrhistogram::Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let mut p99 = Vec::new();
    for round in 0..ROUNDS {
        for (label, versions) in [("v1", &["v1"][..]), ("split", &["v1", "v1alpha"][..])] {
            let fan = super::fan_out_at(&farm.target, &format!("fan-{label}-{round}"), versions, 1_000, 100).await;
            println!(
                "watch fan-out, 1,000 watchers {label:>5} (round {round}): p50 {:.2} ms, p99 {:.2} ms",
                ms(&fan, 0.5),
                ms(&fan, 0.99)
            );
            p99.push((label, ms(&fan, 0.99)));
        }
    }
    let mean = |l: &str| {
        let of: Vec<f64> = p99.iter().filter(|(x, _)| *x == l).map(|(_, v)| *v).collect();
        of.iter().sum::<f64>() / of.len() as f64
    };
    println!("watch fan-out p99, half the watchers at v1alpha / all at v1: {:.2}x", mean("split") / mean("v1"));
}
