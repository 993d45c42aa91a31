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

/// One sample: when, the server's RSS, and the writes acknowledged by then.
pub(crate) type RssSample = (Duration, u64, u64);

/// Samples the server's RSS and the acknowledged writes every second until `stop`.
pub(crate) async fn sample_rss(pid: u32, shared: Arc<Shared>, stop: watch::Receiver<bool>) -> Vec<RssSample> {
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    while !*stop.borrow() {
        ticker.tick().await;
        if let Some(rss) = rss_bytes(pid) {
            samples.push((started.elapsed(), rss, shared.acknowledged.load(Ordering::SeqCst)));
        }
    }
    samples
}
