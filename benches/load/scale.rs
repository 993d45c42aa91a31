//! How each cost grows with the collection (issue 36): one server, memory storage (etcd with
//! `SCALE_STORAGE=etcd`, on the control plane's etcd, reads from the watch cache), filled in
//! steps to 1,000, 10,000, 100,000 and 1,000,000 llamas (`SCALE_MAX` stops earlier). At each size:
//! RSS per llama, the create rate (a phase of creates into another namespace of the same store), GET of one llama, a LIST whose label
//! selector matches none (it tests every object), the first `limit=500` page, and the whole list
//! paged 500 at a time with continue tokens (each page's latency and the total). The peak RSS
//! while one unpaged LIST is answered and read: as a Table (kubectl's) at 100,000, as JSON at the
//! largest size.
//!
//! Prints one table of the figures and writes them to `target/scale-<storage>.csv`.

use super::{ControlPlane, LLAMAS, Stats, TABLE, Target, fill_range, llama, load, rss_mb, start, status_mb};
use hdrhistogram::Histogram;
use std::path::Path;
use std::time::{Duration, Instant};

const PATH: &str = "/scale/llamas";
const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// Where the create phase at each size writes (the same set of objects, another namespace, so
/// the llamas of `PATH` stay the size measured).
const CREATED: &str = "/scale-create/llamas";

/// One size's figures.
struct Row {
    size: usize,
    create_rate: f64,
    /// How many the create phase created.
    created: u64,
    bytes_per_llama: f64,
    get: Stats,
    selector_list: Stats,
    first_page: Stats,
    pages: Histogram<u64>,
    paged_list: Duration,
}

/// What the pager reads of a page.
#[derive(serde::Deserialize)]
struct Page {
    metadata: PageMeta,
    items: Vec<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct PageMeta {
    #[serde(rename = "continue")]
    continue_: Option<String>,
}

/// Every page of the list, 500 at a time: each page's latency (µs) and the total time.
async fn paged_list(target: &Target, expected: usize) -> (Histogram<u64>, Duration) {
    let client = target.client(false);
    let mut latencies = Histogram::<u64>::new(3).expect("histogram");
    let (mut seen, mut token) = (0, None::<String>);
    let started = Instant::now();
    loop {
        let mut url = target.url(&format!("{LLAMAS}{PATH}?limit=500"));
        if let Some(token) = &token {
            url.push_str(&format!("&continue={token}"));
        }
        let t = Instant::now();
        let body = client.get(url).send().await.expect("page").bytes().await.expect("page body");
        latencies.record(t.elapsed().as_micros() as u64).expect("record");
        // Only what paging needs is read (the items are skipped, not built): the client's own
        // parsing is not the server's cost.
        let page: Page = serde_json::from_slice(&body).expect("page JSON");
        seen += page.items.len();
        match page.metadata.continue_ {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, expected, "the paged list holds every llama once");
    (latencies, started.elapsed())
}

/// Measures one size, the store holding `size` llamas.
async fn measure(target: &Target, size: usize, bytes_per_llama: f64, phase: Duration) -> Row {
    // Creates for a phase into the same store (it grows by the phase's creates, from `size`).
    let t = target.clone();
    let creates = load(target, 32, phase, move |c, i| {
        let name = format!("s{size}-{i}");
        c.post(t.url(&format!("{LLAMAS}{CREATED}"))).json(&llama(&name))
    })
    .await;
    let (create_rate, created) = (creates.rate(), creates.requests - creates.errors);
    let get_target = target.clone();
    let get = load(target, 4, phase, move |c, i| {
        c.get(get_target.url(&format!("{LLAMAS}/scale/llamas/l{:07}", i as usize % size)))
    })
    .await;
    let t = target.clone();
    let selector_list =
        load(target, 2, phase, move |c, _| c.get(t.url(&format!("{LLAMAS}{PATH}?labelSelector=app%3Dnone")))).await;
    let t = target.clone();
    let first_page = load(target, 1, phase, move |c, _| c.get(t.url(&format!("{LLAMAS}{PATH}?limit=500")))).await;
    let (pages, paged_list) = paged_list(target, size).await;
    Row { size, create_rate, created, bytes_per_llama, get, selector_list, first_page, pages, paged_list }
}

/// The peak RSS growth while one unpaged LIST of everything is answered and read (streamed, never
/// held by the client), and the answer's size.
async fn unpaged_list_peak(target: &Target, pid: u32, accept: &str) -> Option<(f64, f64)> {
    let before = rss_mb(pid);
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").ok()?;
    let request = target.client(false).get(target.url(&format!("{LLAMAS}{PATH}"))).header("accept", accept);
    let mut answer = request.send().await.expect("list");
    assert_eq!(answer.status(), 200);
    let mut bytes = 0usize;
    while let Some(chunk) = answer.chunk().await.expect("list body") {
        bytes += chunk.len();
    }
    Some((status_mb(pid, "VmHWM:") - before, bytes as f64 / 1e6))
}

/// Runs the steps and prints the table.
pub async fn grow(binary: &Path, phase: Duration) {
    let max: usize = std::env::var("SCALE_MAX").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    // SCALE_STORAGE=etcd: the same steps with etcd storage (the control plane's etcd) behind the
    // watch cache.
    let control_plane = match std::env::var("SCALE_STORAGE").as_deref() {
        Ok("etcd") => match ControlPlane::up() {
            Some(cp) => Some(cp),
            None => return println!("BENCH_ONLY=scale SCALE_STORAGE=etcd: skipped, the control plane cannot run here"),
        },
        _ => None,
    };
    let storage = if control_plane.is_some() { "etcd" } else { "memory" };
    let flags = match &control_plane {
        Some(cp) => vec!["--storage", "etcd", "--etcd-endpoints", &cp.etcd, "--etcd-prefix", "/farm-scale"],
        None => Vec::new(),
    };
    let (farm, _) = start(binary, &flags).await;
    let pid = farm.child.id();
    let empty = rss_mb(pid);
    let mut rows = Vec::new();
    let (mut stored, mut tables) = (0, None);
    for size in SIZES.into_iter().filter(|s| *s <= max) {
        fill_range(&farm.target, &format!("{LLAMAS}{PATH}"), stored..size, |i| llama(&format!("l{i:07}"))).await;
        stored = size;
        tokio::time::sleep(Duration::from_millis(500)).await;
        // The store holds the earlier create phases' llamas too.
        let held = size as u64 + rows.iter().map(|r: &Row| r.created).sum::<u64>();
        let bytes_per_llama = (rss_mb(pid) - empty) * 1024.0 * 1024.0 / held as f64;
        rows.push(measure(&farm.target, size, bytes_per_llama, phase).await);
        if size == 100_000 {
            tables = unpaged_list_peak(&farm.target, pid, TABLE).await;
        }
    }
    print_table(&rows, storage, empty);
    if let Some((peak, answer)) = tables {
        println!("unpaged Table LIST of 100000 llamas ({answer:.0} MB): peak RSS {peak:+.1} MB while answering");
    }
    if let Some((peak, answer)) = unpaged_list_peak(&farm.target, pid, "application/json").await {
        println!(
            "unpaged LIST of all {stored} llamas ({answer:.0} MB of JSON): peak RSS {peak:+.1} MB while answering"
        );
    }
    write_csv(&rows, storage);
    if control_plane.is_some() {
        cache_ready(binary, &flags, stored).await;
    }
}

/// etcd mode: a second server started on the same etcd prefix, and the time from its start until
/// its watch cache holds the `stored` llamas (the cache's history gauge appears once it has
/// listed), beside the time until `/readyz` answers (readiness does not wait for the cache: until
/// it has listed, reads go to etcd).
async fn cache_ready(binary: &Path, flags: &[&str], stored: usize) {
    let started = Instant::now();
    let (second, ready) = start(binary, flags).await;
    let probe = second.target.client(false);
    let history = "farm_apiserver_watch_history_events{resource=\"llamas\"}";
    // A list that etcd's compaction overtakes starts again (the cache logs it); give up after
    // five minutes rather than wait on a compacting etcd for ever.
    let listed = loop {
        let text = probe.get(second.target.url("/metrics")).send().await.expect("scrape").text().await.expect("text");
        if text.lines().any(|l| l.starts_with(history)) {
            break Some(started.elapsed());
        }
        if started.elapsed() > Duration::from_secs(300) {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let filled = listed.map_or_else(
        || "not filled within 300 s".to_string(),
        |t| format!("filled {:.2} s after start", t.as_secs_f64()),
    );
    println!(
        "a second server on the same etcd: /readyz after {:.2} s, its watch cache of {stored} llamas {filled}",
        ready.as_secs_f64()
    );
}

fn print_table(rows: &[Row], storage: &str, empty: f64) {
    println!(
        "scale: one server, {storage} storage, {empty:.1} MB RSS empty; rates over 4 (GET), 2 (selector LIST), 1 (pages) connections"
    );
    println!(
        "| llamas | create/s | RSS B/llama | GET/s | GET p99 ms | LIST selector/s | first page p50 ms | page p50 ms | page p99 ms | page max ms | paged list s |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            r.size,
            r.create_rate,
            r.bytes_per_llama,
            r.get.rate(),
            r.get.ms(0.99),
            r.selector_list.rate(),
            r.first_page.ms(0.5),
            r.pages.value_at_quantile(0.5) as f64 / 1000.0,
            r.pages.value_at_quantile(0.99) as f64 / 1000.0,
            r.pages.max() as f64 / 1000.0,
            r.paged_list.as_secs_f64()
        );
    }
}

/// The figures as CSV beside the build, for the chart.
fn write_csv(rows: &[Row], storage: &str) {
    let mut csv = String::from(
        "llamas,create_per_s,rss_bytes_per_llama,get_per_s,selector_list_per_s,first_page_ms,page_p50_ms,paged_list_s\n",
    );
    for r in rows {
        csv.push_str(&format!(
            "{},{:.0},{:.0},{:.0},{:.2},{:.3},{:.3},{:.3}\n",
            r.size,
            r.create_rate,
            r.bytes_per_llama,
            r.get.rate(),
            r.selector_list.rate(),
            r.first_page.ms(0.5),
            r.pages.value_at_quantile(0.5) as f64 / 1000.0,
            r.paged_list.as_secs_f64()
        ));
    }
    super::write_figures(&format!("scale-{storage}.csv"), &csv);
}
