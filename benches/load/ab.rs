//! Same-run A/B comparisons of two servers under the same loads ([`row`]): each load runs in
//! [`ROUNDS`] rounds of four runs, alternating (A, B, B, A), so drift of the shared machine during
//! the run falls on both sides. Beside each side's rate, the table gives the server's own CPU time
//! per request (from `/proc`), which the load generator and other processes sharing the cores do
//! not move.

use super::{Farm, LLAMAS, Stats, Target, llama, load};
use std::time::Duration;

/// One measured load: its row name and how to send one request number `i`.
pub struct Load {
    pub name: &'static str,
    pub concurrency: usize,
    pub request: fn(&Target, &reqwest::Client, u64) -> reqwest::RequestBuilder,
}

/// GET of one of the 1,000 llamas of namespace `small`, which every comparison fills.
pub const GET_ONE_LLAMA: Load = Load {
    name: "GET one llama (32 conns)",
    concurrency: 32,
    request: |t, c, _| c.get(t.url(&format!("{LLAMAS}/small/llamas/l000500"))),
};

/// LIST of the 1,000 llamas of namespace `small`, as JSON.
pub const LIST_1000_LLAMAS: Load = Load {
    name: "LIST 1,000 llamas, JSON (8 conns)",
    concurrency: 8,
    request: |t, c, _| c.get(t.url(&format!("{LLAMAS}/small/llamas"))),
};

/// Creates of new llamas in namespace `create`, named after the request.
pub const CREATE_LLAMA: Load = Load {
    name: "create (32 conns)",
    concurrency: 32,
    request: |t, c, i| c.post(t.url(&format!("{LLAMAS}/create/llamas"))).json(&llama(&format!("c{i}"))),
};

/// Runs `l` for `phase`; `round` keeps the names a create makes apart from earlier rounds'.
async fn run(target: &Target, l: &Load, phase: Duration, round: u64) -> Stats {
    let t = target.clone();
    let request = l.request;
    load(target, l.concurrency, phase, move |c, i| request(&t, c, round * 1_000_000_000 + i)).await
}

/// Alternation rounds per load: each runs A, B, B, A.
pub const ROUNDS: u64 = 2;

/// One side's runs of a load, summed.
#[derive(Default)]
pub struct Side {
    requests: u64,
    errors: u64,
    seconds: f64,
    /// The server's CPU time (user + system) during the runs.
    cpu_seconds: f64,
    p99_ms: f64,
    /// A process the server depends on (its etcd), and the CPU time it spent during the runs.
    companion: Option<u32>,
    companion_seconds: f64,
}

impl Side {
    fn add(&mut self, stats: &Stats, cpu_seconds: f64) {
        self.requests += stats.requests.saturating_sub(stats.errors);
        self.errors += stats.errors;
        self.seconds += stats.elapsed.as_secs_f64();
        self.cpu_seconds += cpu_seconds;
        self.p99_ms = self.p99_ms.max(stats.ms(0.99));
    }

    /// The slowest p99 of its runs, in ms.
    pub fn p99_ms(&self) -> f64 {
        self.p99_ms
    }

    /// The requests that failed.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.seconds.max(f64::MIN_POSITIVE)
    }

    /// The server's CPU time per request: unlike the rate, not moved by what else the shared
    /// machine runs meanwhile (the load generator included).
    pub fn cpu_us(&self) -> f64 {
        self.cpu_seconds * 1e6 / self.requests.max(1) as f64
    }

    /// The companion's CPU time per request.
    pub fn companion_cpu_us(&self) -> f64 {
        self.companion_seconds * 1e6 / self.requests.max(1) as f64
    }
}

/// The CPU time `farm` (and its child processes, nginx's workers) has used so far, in seconds.
fn cpu_seconds(farm: &Farm) -> f64 {
    let pid = farm.child.id();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let children: f64 = children.split_whitespace().filter_map(|c| c.parse().ok()).map(cpu_seconds_of).sum();
    cpu_seconds_of(pid) + children
}

/// The CPU time process `pid` has used so far, in seconds (0 when it cannot be read).
pub fn cpu_seconds_of(pid: u32) -> f64 {
    let Ok(stat) = procfs::process::Process::new(pid as i32).and_then(|p| p.stat()) else { return 0.0 };
    (stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64
}

/// Runs `l` on `farm` for `phase`, adding what it measured to `side`.
pub async fn measure(farm: &Farm, l: &Load, phase: Duration, round: u64, side: &mut Side) {
    let companion = || side.companion.map_or(0.0, cpu_seconds_of);
    let (before, companion_before) = (cpu_seconds(farm), companion());
    let stats = run(&farm.target, l, phase, round).await;
    side.companion_seconds += companion() - companion_before;
    side.add(&stats, cpu_seconds(farm) - before);
}

/// Prints the head of a table comparing servers named `a` and `b`.
pub fn header(a: &str, b: &str) {
    println!("(rate ratio: {a}/{b} requests per second; CPU ratio: {b}/{a} server CPU per request)");
    println!();
    println!(
        "| {:<34} | {:>11} | {:>11} | {:>6} | {:>8} | {:>8} | {:>6} | {:>6} | {:>6} |",
        "operation",
        format!("{a}/s"),
        format!("{b}/s"),
        "ratio",
        "CPU µs",
        format!("{} µs", &b[..b.len().min(5)]),
        "CPU",
        "p99 ms",
        "errors"
    );
    println!(
        "|{:-<36}|{:->13}|{:->13}|{:->8}|{:->10}|{:->10}|{:->8}|{:->8}|{:->8}|",
        "", "", "", "", "", "", "", "", ""
    );
}

/// Measures `l` on `a` and `b` in alternating rounds and prints its row.
pub async fn row(a_farm: &Farm, b_farm: &Farm, l: &Load, phase: Duration) {
    row_with_companion(a_farm, b_farm, None, l, phase).await;
}

/// [`row`], also charging `a`'s requests with the CPU process `companion` (one `a` depends on,
/// such as its etcd) spent during `a`'s runs; returns that per request, in µs.
pub async fn row_with_companion(
    a_farm: &Farm,
    b_farm: &Farm,
    companion: Option<u32>,
    l: &Load,
    phase: Duration,
) -> f64 {
    let a = Side { companion, ..Side::default() };
    let (a, b) = alternate((a_farm, l), (b_farm, l), a, Side::default(), phase).await;
    print_row(l.name, &a, &b);
    a.companion_cpu_us()
}

/// Measures `a_load` on `a_farm` and `b_load` on `b_farm` in alternating rounds and prints
/// their row under `a_load`'s name: the same request to two servers at two paths.
pub async fn row_of_two(a: (&Farm, &Load), b: (&Farm, &Load), phase: Duration) {
    let (a_side, b_side) = alternate(a, b, Side::default(), Side::default(), phase).await;
    print_row(a.1.name, &a_side, &b_side);
}

/// [`ROUNDS`] rounds of A, B, B, A.
async fn alternate(
    a: (&Farm, &Load),
    b: (&Farm, &Load),
    mut a_side: Side,
    mut b_side: Side,
    phase: Duration,
) -> (Side, Side) {
    for round in 0..ROUNDS {
        measure(a.0, a.1, phase, 4 * round + 1, &mut a_side).await;
        measure(b.0, b.1, phase, 4 * round + 2, &mut b_side).await;
        measure(b.0, b.1, phase, 4 * round + 3, &mut b_side).await;
        measure(a.0, a.1, phase, 4 * round + 4, &mut a_side).await;
    }
    (a_side, b_side)
}

/// Measures two loads on one server in alternating rounds (A, B, B, A) and prints their row
/// under `name`: the same request asked two ways (at two versions of the resource, say).
pub async fn row_of_loads(farm: &Farm, name: &str, a_load: &Load, b_load: &Load, phase: Duration) {
    let (mut a, mut b) = (Side::default(), Side::default());
    for round in 0..ROUNDS {
        measure(farm, a_load, phase, 4 * round + 1, &mut a).await;
        measure(farm, b_load, phase, 4 * round + 2, &mut b).await;
        measure(farm, b_load, phase, 4 * round + 3, &mut b).await;
        measure(farm, a_load, phase, 4 * round + 4, &mut a).await;
    }
    print_row(name, &a, &b);
}

/// Prints the row of load `name` measured as `a` and `b`.
fn print_row(name: &str, a: &Side, b: &Side) {
    println!(
        "| {:<34} | {:>11.0} | {:>11.0} | {:>5.2}x | {:>8.1} | {:>8.1} | {:>5.2}x | {:>6.2} | {:>6} |",
        name,
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

/// Measures `l` on `a` alone and prints its row.
pub async fn row_a_only(a_farm: &Farm, l: &Load, phase: Duration) {
    let mut a = Side::default();
    measure(a_farm, l, phase, 4 * ROUNDS + 1, &mut a).await;
    println!(
        "| {:<34} | {:>11.0} | {:>11} | {:>6} | {:>8.1} | {:>8} | {:>6} | {:>6.2} | {:>6} |",
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
