//! Ten thousand watchers (issue 36): 10,000 watches of one namespace on one server, over HTTP/2
//! (100 connections of 100 streams, as the aggregator multiplexes them) and then over HTTP/1.1
//! (a connection each). For each: the memory an idle watcher costs, in use
//! (`farm_apiserver_heap_allocated_bytes`, what the allocator has handed out) and in RSS (which
//! also holds the pages the opening used and the allocator keeps), each with every watch open,
//! less before, over 10,000 (the server's own gauge of open watches says when they are open), then the fan-out of 100 creates, 200 ms apart: from a create's acknowledgement
//! to the moment the last watcher has its event (p50, p99), every event counted at every watcher.
//! The idle RSS is read once the allocator has returned the pages the opening used.
//! `WATCHERS` sets another number. [`watch_list`] (`BENCH_ONLY=watchlist`): 100 informers
//! starting at once with streaming lists over 100,000 llamas, and the peak RSS they add.

use super::{LLAMAS, Target, llama, rss_mb, start, status_mb};
use hdrhistogram::Histogram;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WRITES: usize = 100;
/// Between creates: long enough for one create's fan-out to end before the next (on two cores
/// shared with the 10,000 watchers' client), so the latency is one fan-out's, not a queue's.
const WRITE_GAP: Duration = Duration::from_millis(200);
const STREAMS_PER_CONNECTION: usize = 100;

/// The number in a frame's `"name":"f000123"` (the bench's creates), read without parsing the frame.
fn written(frame: &[u8]) -> Option<usize> {
    const NAME: &[u8] = br#""name":"f"#;
    let at = frame.windows(NAME.len()).position(|w| w == NAME)? + NAME.len();
    let digits = frame[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&frame[at..at + digits]).ok()?.parse().ok()
}

/// The server's RSS once the allocator has returned the pages that opening the watches used and
/// freed: jemalloc keeps freed pages for 10 s (`dirty_decay_ms`) and lets them go gradually, so
/// the RSS is read after that, and then each second until it no longer falls.
pub(super) async fn settled_rss_mb(pid: u32) -> f64 {
    tokio::time::sleep(Duration::from_secs(11)).await;
    let mut last = rss_mb(pid);
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = rss_mb(pid);
        if now > last - 0.05 {
            return now.min(last);
        }
        last = now;
    }
    last
}

/// A sample of the server's `/metrics` (0 when absent).
pub(super) async fn metric(target: &Target, client: &reqwest::Client, series: &str) -> f64 {
    let text = client.get(target.url("/metrics")).send().await.expect("scrape").text().await.expect("metrics");
    text.lines()
        .find(|l| l.rsplit_once(' ').is_some_and(|(name, _)| name == series))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0.0)
}

const OPEN_WATCHES: &str = "apiserver_longrunning_requests{resource=\"llamas\"}";
const HEAP: &str = "farm_apiserver_heap_allocated_bytes";

/// What one run measured: per idle watcher, the server's RSS and its memory in use (bytes), and
/// the fan-out latencies (µs).
struct Measured {
    rss_per_watcher: f64,
    heap_per_watcher: f64,
    latencies: Histogram<u64>,
}

/// One run: `watchers` watches over connections of `streams` each.
async fn run(binary: &Path, watchers: usize, streams: usize) -> Measured {
    let (farm, _) = start(binary, &[]).await;
    let target = farm.target.clone();
    let pid = farm.child.id();
    let probe = target.client(false);
    let (before, heap_before) = (rss_mb(pid), metric(&target, &probe, HEAP).await);
    let http2 = streams > 1;
    let clients: Vec<reqwest::Client> = (0..watchers.div_ceil(streams)).map(|_| target.client(http2)).collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let url = target.url(&format!("{LLAMAS}/watchers/llamas?watch=true"));
    let opened = Arc::new(tokio::sync::Semaphore::new(0));
    let mut tasks = Vec::new();
    for w in 0..watchers {
        let (client, url, tx, opened) = (clients[w / streams].clone(), url.clone(), tx.clone(), opened.clone());
        tasks.push(tokio::spawn(async move {
            let mut response = client.get(url).send().await.expect("watch");
            assert_eq!(response.status(), 200);
            opened.add_permits(1);
            let (mut buffer, mut seen) = (Vec::new(), 0);
            while seen < WRITES {
                let Ok(Some(chunk)) = response.chunk().await else { break };
                buffer.extend_from_slice(&chunk);
                while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                    if let Some(i) = written(&buffer[..end]) {
                        let _ = tx.send((i, Instant::now()));
                        seen += 1;
                    }
                    buffer.drain(..=end);
                }
            }
        }));
    }
    drop(tx);
    let _ = opened.acquire_many(u32::try_from(watchers).expect("watchers")).await.expect("open");
    while metric(&target, &probe, OPEN_WATCHES).await < watchers as f64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let heap_per_watcher = (metric(&target, &probe, HEAP).await - heap_before) / watchers as f64;
    let rss_per_watcher = (settled_rss_mb(pid).await - before) * 1024.0 * 1024.0 / watchers as f64;
    let writer = target.client(false);
    let mut acked = Vec::new();
    for i in 0..WRITES {
        let r = writer.post(target.url(&format!("{LLAMAS}/watchers/llamas"))).json(&llama(&format!("f{i:06}")));
        assert_eq!(r.send().await.expect("create").status(), 201);
        acked.push(Instant::now());
        tokio::time::sleep(WRITE_GAP).await;
    }
    let (mut last, mut counts) = (vec![None::<Instant>; WRITES], vec![0usize; WRITES]);
    while let Some((i, at)) = rx.recv().await {
        counts[i] += 1;
        last[i] = Some(last[i].map_or(at, |l: Instant| l.max(at)));
    }
    for task in tasks {
        task.await.expect("watcher");
    }
    let mut latencies = Histogram::<u64>::new(3).expect("histogram");
    for i in 0..WRITES {
        assert_eq!(counts[i], watchers, "every watcher saw write {i}");
        let delay = last[i].map_or(Duration::ZERO, |l| l.saturating_duration_since(acked[i]));
        latencies.record(delay.as_micros() as u64).expect("record");
    }
    Measured { rss_per_watcher, heap_per_watcher, latencies }
}

/// Runs both transports at 100, 1,000 and `WATCHERS` (10,000) watchers, prints their rows and
/// writes them to `target/watchers.csv` for the chart.
pub async fn fan_out(binary: &Path) {
    let most: usize = std::env::var("WATCHERS").ok().and_then(|w| w.parse().ok()).unwrap_or(10_000);
    println!("watchers of one namespace, {WRITES} creates {} ms apart", WRITE_GAP.as_millis());
    println!(
        "| watchers | transport | memory in use per idle watcher | RSS per idle watcher | fan-out p50 ms | fan-out p99 ms | max ms |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    let mut csv = String::from("watchers,transport,heap_bytes_per_watcher,rss_bytes_per_watcher,p50_ms,p99_ms\n");
    let sizes = [100, 1_000, most].into_iter().filter(|n| *n <= most);
    for watchers in sizes.collect::<std::collections::BTreeSet<_>>() {
        for (name, streams) in [("HTTP/2", STREAMS_PER_CONNECTION), ("HTTP/1.1", 1)] {
            let m = run(binary, watchers, streams).await;
            let ms = |q: f64| m.latencies.value_at_quantile(q) as f64 / 1000.0;
            println!(
                "| {watchers} | {name} | {:.0} B | {:.0} B | {:.1} | {:.1} | {:.1} |",
                m.heap_per_watcher,
                m.rss_per_watcher,
                ms(0.5),
                ms(0.99),
                m.latencies.max() as f64 / 1000.0
            );
            csv.push_str(&format!(
                "{watchers},{name},{:.0},{:.0},{:.2},{:.2}\n",
                m.heap_per_watcher,
                m.rss_per_watcher,
                ms(0.5),
                ms(0.99)
            ));
        }
    }
    super::write_figures("watchers.csv", &csv);
}

/// Informers starting at once with streaming lists (WatchList, `sendInitialEvents=true`) over
/// `LLAMAS_LISTED` llamas: the peak growth of the server's RSS while `INFORMERS` streams send
/// every llama and the initial-events-end bookmark, over the informers.
pub async fn watch_list(binary: &Path) {
    const INFORMERS: usize = 100;
    const LLAMAS_LISTED: usize = 100_000;
    let (farm, _) = start(binary, &[]).await;
    let pid = farm.child.id();
    super::fill(&farm.target, &format!("{LLAMAS}/informed/llamas"), LLAMAS_LISTED, llama, "l").await;
    let probe = farm.target.client(false);
    let filled = settled_rss_mb(pid).await;
    let heap = metric(&farm.target, &probe, HEAP).await;
    let reset = std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok();
    let url = farm.target.url(&format!(
        "{LLAMAS}/informed/llamas?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    ));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..INFORMERS {
        let (client, url) = (farm.target.client(false), url.clone());
        tasks.push(tokio::spawn(async move {
            let mut response = client.get(url).send().await.expect("watch");
            assert_eq!(response.status(), 200);
            let (mut frames, mut bytes, mut tail) = (0usize, 0usize, Vec::new());
            while let Ok(Some(chunk)) = response.chunk().await {
                bytes += chunk.len();
                frames += chunk.iter().filter(|b| **b == b'\n').count();
                // The bookmark follows every llama; it may straddle two chunks, so the end of the
                // last chunk is kept and searched with this one.
                if frames >= LLAMAS_LISTED {
                    tail.extend_from_slice(&chunk);
                    if tail.windows(18).any(|w| w == b"initial-events-end") {
                        return (frames, bytes);
                    }
                }
                tail = chunk[chunk.len().saturating_sub(32)..].to_vec();
            }
            panic!("the stream ended before its initial-events-end bookmark");
        }));
    }
    let (mut frames, mut bytes) = (0, 0);
    for task in tasks {
        let (f, b) = task.await.expect("informer");
        assert!(f > LLAMAS_LISTED, "every llama, then the bookmark");
        frames += f;
        bytes += b;
    }
    let took = started.elapsed();
    let peak = status_mb(pid, "VmHWM:");
    println!(
        "WatchList: {INFORMERS} informers at once over {LLAMAS_LISTED} llamas, {frames} frames, {:.2} GB in {:.1} s; every one saw the initial-events-end bookmark",
        bytes as f64 / 1e9,
        took.as_secs_f64()
    );
    if reset {
        println!(
            "  RSS {filled:.1} MB before (memory in use {:.1} MB), peak {peak:.1} MB while streaming: {:+.2} MB per informer",
            heap / 1e6,
            (peak - filled) / INFORMERS as f64
        );
    }
}
