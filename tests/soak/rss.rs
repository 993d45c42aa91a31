//! The server's resident memory, sampled during the run.

use super::*;

pub(crate) fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

pub(crate) fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

pub(crate) async fn sample_rss(pid: u32, stop: watch::Receiver<bool>) -> Vec<(Duration, u64)> {
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    while !*stop.borrow() {
        ticker.tick().await;
        if let Some(rss) = rss_bytes(pid) {
            samples.push((started.elapsed(), rss));
        }
    }
    samples
}
