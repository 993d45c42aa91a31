//! What managed fields and server-side apply cost: two servers side by side in one run, one as
//! it ships and one with `--managed-fields false` (no managedFields recorded, nothing to send),
//! under the same loads. Each load runs in [`ROUNDS`] rounds of four runs, alternating (tracked,
//! untracked, untracked, tracked), so drift of the shared machine during the run falls on both
//! sides. Beside each side's rate, the table gives the server's own CPU time per request (from
//! `/proc`), which the load generator and other processes sharing the cores do not move. Apply
//! create and apply update run on the tracked server only, beside its create and update.

use super::{Farm, LLAMAS, Stats, Target, fill, llama, load, start};
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

/// Which of the 1,000 llamas request `i` (worker `i / 1,000,000`, its request `i % 1,000,000`)
/// updates: the workers start 31 apart and move in step, so no two of them write one llama at
/// once; a conflict, and the retry it causes, would measure contention rather than cost.
fn updated(i: u64) -> u64 {
    (i % 1_000_000 + 31 * (i / 1_000_000 % 1_000)) % 1_000
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
            c.patch(t.url(&format!("{LLAMAS}/small/llamas/l{:06}", updated(i))))
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
        request: |t, c, i| apply(t, c, &format!("p{:06}", updated(i)), 1 + i % 997),
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

/// Alternation rounds per load: each runs tracked, untracked, untracked, tracked.
const ROUNDS: u64 = 2;

/// One side's runs of a load, summed.
#[derive(Default)]
struct Side {
    requests: u64,
    errors: u64,
    seconds: f64,
    /// The server's CPU time (user + system) during the runs.
    cpu_seconds: f64,
    p99_ms: f64,
}

impl Side {
    fn add(&mut self, stats: &Stats, cpu_seconds: f64) {
        self.requests += stats.requests.saturating_sub(stats.errors);
        self.errors += stats.errors;
        self.seconds += stats.elapsed.as_secs_f64();
        self.cpu_seconds += cpu_seconds;
        self.p99_ms = self.p99_ms.max(stats.ms(0.99));
    }

    fn rate(&self) -> f64 {
        self.requests as f64 / self.seconds.max(f64::MIN_POSITIVE)
    }

    /// The server's CPU time per request: unlike the rate, not moved by what else the shared
    /// machine runs meanwhile (the load generator included).
    fn cpu_us(&self) -> f64 {
        self.cpu_seconds * 1e6 / self.requests.max(1) as f64
    }
}

/// The CPU time `farm` has used so far, in seconds.
fn cpu_seconds(farm: &Farm) -> f64 {
    let Ok(stat) = procfs::process::Process::new(farm.child.id() as i32).and_then(|p| p.stat()) else { return 0.0 };
    (stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64
}

/// Runs `l` on `farm` for `phase`, adding what it measured to `side`.
async fn measure(farm: &Farm, l: &Load, phase: Duration, round: u64, side: &mut Side) {
    let before = cpu_seconds(farm);
    let stats = run(&farm.target, l, phase, round).await;
    side.add(&stats, cpu_seconds(farm) - before);
}

/// Runs the comparison and prints its table.
pub async fn compare(binary: &Path, phase: Duration) {
    let (tracked, _) = start(binary, &[]).await;
    let (untracked, _) = start(binary, &["--managed-fields", "false"]).await;
    prepare(&tracked.target, true).await;
    prepare(&untracked.target, false).await;
    println!(
        "managed fields: as shipped vs --managed-fields false, {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    println!(
        "(rate ratio: tracked/untracked requests per second; CPU ratio: untracked/tracked server CPU per request)"
    );
    println!();
    println!(
        "| {:<34} | {:>9} | {:>11} | {:>6} | {:>8} | {:>8} | {:>6} | {:>6} | {:>6} |",
        "operation", "tracked/s", "untracked/s", "ratio", "CPU µs", "untr. µs", "CPU", "p99 ms", "errors"
    );
    println!(
        "|{:-<36}|{:->11}|{:->13}|{:->8}|{:->10}|{:->10}|{:->8}|{:->8}|{:->8}|",
        "", "", "", "", "", "", "", "", ""
    );
    for l in &LOADS {
        let (mut a, mut b) = (Side::default(), Side::default());
        for round in 0..ROUNDS {
            measure(&tracked, l, phase, 4 * round + 1, &mut a).await;
            measure(&untracked, l, phase, 4 * round + 2, &mut b).await;
            measure(&untracked, l, phase, 4 * round + 3, &mut b).await;
            measure(&tracked, l, phase, 4 * round + 4, &mut a).await;
        }
        println!(
            "| {:<34} | {:>9.0} | {:>11.0} | {:>5.2}x | {:>8.1} | {:>8.1} | {:>5.2}x | {:>6.2} | {:>6} |",
            l.name,
            a.rate(),
            b.rate(),
            a.rate() / b.rate().max(f64::MIN_POSITIVE),
            a.cpu_us(),
            b.cpu_us(),
            b.cpu_us() / a.cpu_us().max(f64::MIN_POSITIVE),
            a.p99_ms,
            a.errors + b.errors
        );
    }
    for l in &APPLIES {
        let mut a = Side::default();
        measure(&tracked, l, phase, 4 * ROUNDS + 1, &mut a).await;
        println!(
            "| {:<34} | {:>9.0} | {:>11} | {:>6} | {:>8.1} | {:>8} | {:>6} | {:>6.2} | {:>6} |",
            l.name,
            a.rate(),
            "-",
            "-",
            a.cpu_us(),
            "-",
            "-",
            a.p99_ms,
            a.errors
        );
    }
    println!();
}
