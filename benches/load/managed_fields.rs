//! What managed fields and server-side apply cost: two servers side by side in one run, one as
//! it ships and one with `--managed-fields false` (no managedFields recorded, nothing to send),
//! under the same loads. Each load runs four times, alternating (tracked, untracked, untracked,
//! tracked), and each side's rate is the mean of its two runs, so drift of the shared machine
//! during the run falls on both sides. Apply create and apply update run on the tracked server
//! only, beside its create and update.

use super::{LLAMAS, Stats, Target, fill, llama, load, start};
use std::path::Path;
use std::time::Duration;

/// One measured load: its row name and how to send one request number `i`.
struct Load {
    name: &'static str,
    concurrency: usize,
    request: fn(&Target, &reqwest::Client, u64) -> reqwest::RequestBuilder,
}

fn apply_body(name: &str, weight: u64) -> String {
    format!(
        r#"{{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{{"name":"{name}","labels":{{"herd":"bench"}}}},"spec":{{"weight":{weight},"height":170,"color":"white"}}}}"#
    )
}

fn apply(t: &Target, c: &reqwest::Client, name: &str, weight: u64) -> reqwest::RequestBuilder {
    c.patch(t.url(&format!("{LLAMAS}/applied/llamas/{name}?fieldManager=bench")))
        .header("content-type", "application/apply-patch+yaml")
        .body(apply_body(name, weight))
}

const LOADS: [Load; 4] = [
    Load {
        name: "GET one llama (32 conns)",
        concurrency: 32,
        request: |t, c, _| c.get(t.url(&format!("{LLAMAS}/small/llamas/l000500"))),
    },
    Load {
        name: "LIST 1,000 llamas, JSON (8 conns)",
        concurrency: 8,
        request: |t, c, _| c.get(t.url(&format!("{LLAMAS}/small/llamas"))),
    },
    Load {
        name: "create (32 conns)",
        concurrency: 32,
        request: |t, c, i| c.post(t.url(&format!("{LLAMAS}/create/llamas"))).json(&llama(&format!("c{i}"))),
    },
    Load {
        name: "update, merge patch (32 conns)",
        concurrency: 32,
        request: |t, c, i| {
            c.patch(t.url(&format!("{LLAMAS}/small/llamas/l{:06}", i % 1000)))
                .header("content-type", "application/merge-patch+json")
                .body(format!(r#"{{"spec":{{"weight":{}}}}}"#, 1 + i % 997))
        },
    },
];

const APPLIES: [Load; 2] = [
    Load { name: "apply, creating (32 conns)", concurrency: 32, request: |t, c, i| apply(t, c, &format!("a{i}"), 120) },
    Load {
        name: "apply, updating (32 conns)",
        concurrency: 32,
        request: |t, c, i| apply(t, c, &format!("p{:06}", i % 1000), 1 + i % 997),
    },
];

/// Runs `l` for `phase`; `round` keeps the names a create makes apart from earlier rounds'.
async fn run(target: &Target, l: &Load, phase: Duration, round: u64) -> Stats {
    let t = target.clone();
    let request = l.request;
    load(target, l.concurrency, phase, move |c, i| request(&t, c, round * 1_000_000_000 + i)).await
}

/// Fills both servers alike: 1,000 llamas to read and patch, and 1,000 applied ones to re-apply.
async fn prepare(target: &Target, applies: bool) {
    fill(target, &format!("{LLAMAS}/small/llamas"), 1_000, llama, "l").await;
    if applies {
        let client = target.client(false);
        for i in 0..1_000 {
            let r = apply(target, &client, &format!("p{i:06}"), 120).send().await.expect("apply");
            assert!(r.status().is_success(), "{}", r.text().await.unwrap_or_default());
        }
    }
}

/// Runs the comparison and prints its table.
pub async fn compare(binary: &Path, phase: Duration) {
    let (tracked, _) = start(binary, &[]).await;
    let (untracked, _) = start(binary, &["--managed-fields", "false"]).await;
    prepare(&tracked.target, true).await;
    prepare(&untracked.target, false).await;
    println!("managed fields: as shipped vs --managed-fields false, alternating runs, {} s each", phase.as_secs());
    println!();
    println!(
        "| {:<38} | {:>9} | {:>7} | {:>11} | {:>7} | {:>6} | {:>6} |",
        "operation", "tracked/s", "p99 ms", "untracked/s", "p99 ms", "ratio", "errors"
    );
    println!("|{:-<40}|{:->11}|{:->9}|{:->13}|{:->9}|{:->8}|{:->8}|", "", "", "", "", "", "", "");
    for l in &LOADS {
        let a1 = run(&tracked.target, l, phase, 1).await;
        let b1 = run(&untracked.target, l, phase, 1).await;
        let b2 = run(&untracked.target, l, phase, 2).await;
        let a2 = run(&tracked.target, l, phase, 2).await;
        let (a, b) = ((a1.rate() + a2.rate()) / 2.0, (b1.rate() + b2.rate()) / 2.0);
        let p99 = |x: &Stats, y: &Stats| x.ms(0.99).max(y.ms(0.99));
        let errors = a1.errors + a2.errors + b1.errors + b2.errors;
        println!(
            "| {:<38} | {a:>9.0} | {:>7.2} | {b:>11.0} | {:>7.2} | {:>5.2}x | {errors:>6} |",
            l.name,
            p99(&a1, &a2),
            p99(&b1, &b2),
            a / b.max(f64::MIN_POSITIVE)
        );
    }
    for l in &APPLIES {
        let s = run(&tracked.target, l, phase, 3).await;
        println!(
            "| {:<38} | {:>9.0} | {:>7.2} | {:>11} | {:>7} | {:>6} | {:>6} |",
            l.name,
            s.rate(),
            s.ms(0.99),
            "-",
            "-",
            "-",
            s.errors
        );
    }
    println!();
}
