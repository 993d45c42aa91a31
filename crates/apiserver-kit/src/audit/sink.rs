//! Where events go, off the request path: requests hand their event lines to a bounded queue
//! without waiting, and one thread writes them to the log (a rotated file, or standard output
//! for `-`) in batches: everything queued, then a flush, then 5 ms for more to gather. A full queue drops the event and counts it
//! in `apiserver_audit_error_total{plugin="buffered"}`; a failed write counts in
//! `{plugin="log"}`. [`Sink::stop`] writes and flushes everything queued before it, for a
//! graceful shutdown.

use super::rotate::RotatingFile;
use crate::metrics::Metrics;
use std::io::Write;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Where the lines are written.
pub enum Output {
    /// Standard output (`--audit-log-path -`), buffered: lines go out at each flush.
    Stdout(std::io::BufWriter<std::io::Stdout>),
    /// A file, rotated.
    File(RotatingFile),
}

impl Output {
    fn write_all(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Self::Stdout(stdout) => stdout.write_all(line),
            Self::File(file) => file.write_all(line),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Stdout(stdout) => stdout.flush(),
            Self::File(file) => file.flush(),
        }
    }
}

/// How long the writer lets lines gather after writing what was queued.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

enum Message {
    Line(Vec<u8>),
    /// Write what is queued, flush, then answer.
    Stop(oneshot::Sender<()>),
}

/// The queue's sending side.
pub struct Sink {
    sender: mpsc::Sender<Message>,
    metrics: Arc<Metrics>,
}

impl Sink {
    /// Starts the writer thread over `output`, with a queue of `capacity` lines.
    pub fn start(mut output: Output, capacity: usize, metrics: Arc<Metrics>) -> std::io::Result<Self> {
        let (sender, mut receiver) = mpsc::channel(capacity.max(1));
        let errors = metrics.clone();
        std::thread::Builder::new().name("audit-log".into()).spawn(move || {
            let write = |output: &mut Output, line: &[u8]| {
                if let Err(e) = output.write_all(line) {
                    errors.audit_errors.get_or_create(&crate::metrics::PluginLabel { plugin: "log" }).inc();
                    tracing::warn!(error = %e, "writing the audit log failed; the event is lost");
                }
            };
            // Wait for a line, take every line queued, flush, then let lines gather for a
            // moment: under load the writer wakes a few hundred times a second, not once per
            // event.
            while let Some(mut message) = receiver.blocking_recv() {
                loop {
                    match message {
                        Message::Line(line) => write(&mut output, &line),
                        Message::Stop(done) => {
                            while let Ok(Message::Line(line)) = receiver.try_recv() {
                                write(&mut output, &line);
                            }
                            let _ = output.flush();
                            let _ = done.send(());
                            return;
                        }
                    }
                    match receiver.try_recv() {
                        Ok(next) => message = next,
                        Err(_) => break,
                    }
                }
                let _ = output.flush();
                std::thread::sleep(GATHER);
            }
            let _ = output.flush();
        })?;
        Ok(Self { sender, metrics })
    }

    /// Queues `line` without waiting; drops and counts it when the queue is full.
    pub fn send(&self, line: Vec<u8>) {
        self.metrics.audit_events.inc();
        if self.sender.try_send(Message::Line(line)).is_err() {
            self.metrics.audit_errors.get_or_create(&crate::metrics::PluginLabel { plugin: "buffered" }).inc();
        }
    }

    /// Writes and flushes every line queued so far, then stops the writer.
    pub async fn stop(&self) {
        let (done, stopped) = oneshot::channel();
        if self.sender.send(Message::Stop(done)).await.is_ok() {
            let _ = stopped.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::rotate::Limits;

    #[tokio::test]
    async fn lines_are_written_in_order_and_stop_flushes_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let limits = Limits { max_bytes: 1 << 20, max_backups: 0, max_age: std::time::Duration::ZERO };
        let metrics = Arc::new(Metrics::default());
        let sink = Sink::start(Output::File(RotatingFile::open(&path, limits).unwrap()), 100, metrics.clone()).unwrap();
        for i in 0..50 {
            sink.send(format!("{i}\n").into_bytes());
        }
        sink.stop().await;
        let written: Vec<usize> = std::fs::read_to_string(&path).unwrap().lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(written, (0..50).collect::<Vec<_>>());
        assert_eq!(metrics.audit_events.get(), 50);
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts() {
        let metrics = Arc::new(Metrics::default());
        // No writer reads this queue: it fills at once.
        let (sender, _receiver) = mpsc::channel(2);
        let sink = Sink { sender, metrics: metrics.clone() };
        for _ in 0..5 {
            sink.send(b"x\n".to_vec());
        }
        let dropped = metrics.audit_errors.get_or_create(&crate::metrics::PluginLabel { plugin: "buffered" }).get();
        assert_eq!((metrics.audit_events.get(), dropped), (5, 3));
    }
}
