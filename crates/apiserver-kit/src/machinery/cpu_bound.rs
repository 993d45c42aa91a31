//! Work of one request that keeps a core busy for long (decoding, server-side apply, encoding an
//! object of megabytes), run so that the runtime's other tasks keep their worker: on tokio's
//! multi-thread runtime, [`tokio::task::block_in_place`] hands this worker's queue to another
//! thread while the work runs on this one, so `/readyz` and small requests are not queued
//! behind it. Below [`THRESHOLD`] bytes the work runs as it is: handing the worker over costs a
//! thread wake-up, more than a small request's whole work.

use super::error::{Error, Result};
use std::future::Future;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    /// Cancelled when the request being handled is given up (its timeout, its client gone).
    static GIVEN_UP: CancellationToken;
}

/// The size of a body or stored object from which its work is handed off (about 10 ms of
/// server-side apply on a list of that size).
pub const THRESHOLD: usize = 64 * 1024;

/// Whether work on `bytes` bytes is handed off here: it is large, and this thread is a worker
/// of a multi-thread runtime (`block_in_place` panics on a current-thread one).
fn hands_off(bytes: usize) -> bool {
    bytes >= THRESHOLD
        && Handle::try_current().is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::MultiThread)
}

/// Runs `work`, on `bytes` bytes, off the runtime's worker when it is large.
pub fn run<R>(bytes: usize, work: impl FnOnce() -> R) -> R {
    if hands_off(bytes) { tokio::task::block_in_place(work) } else { work() }
}

/// Runs `request`, whose handling `given_up` cancels: work [`run_async`] hands off stops at
/// its next await once it is, as the request's task itself would.
pub async fn cancellable<F: Future>(given_up: CancellationToken, request: F) -> F::Output {
    GIVEN_UP.scope(given_up, request).await
}

/// Runs `work`, a request's handling of a body of `bytes` bytes, off the runtime's worker when it
/// is large: its awaits (etcd, webhooks) are then driven on this thread by `Handle::block_on`,
/// their I/O by the runtime. Cancelling the request's task cannot reach into this thread, so the
/// work watches the request's [`cancellable`] token instead: given up (504 sent), it stops at
/// its next await, and a write stores nothing after its timeout, as when it is not handed off.
pub async fn run_async<R>(bytes: usize, work: impl Future<Output = Result<R>>) -> Result<R> {
    if !hands_off(bytes) {
        return work.await;
    }
    let given_up = GIVEN_UP.try_with(CancellationToken::clone).unwrap_or_default();
    tokio::task::block_in_place(|| {
        Handle::current().block_on(async {
            tokio::select! {
                biased;
                () = given_up.cancelled() => Err(Error::Timeout),
                done = work => done,
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn large_work_leaves_the_worker_to_the_other_tasks() {
        // On the only worker, work that waits for another task would wait forever if it kept
        // the worker; handed off, the other task runs meanwhile.
        let on_the_worker = tokio::spawn(async {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let other = tokio::spawn(async move { tx.send(()) });
            let seen = run(THRESHOLD, || rx.recv_timeout(std::time::Duration::from_secs(60)));
            assert!(seen.is_ok(), "the other task never ran while the work held the worker");
            assert!(other.await.is_ok());
            run_async(THRESHOLD, async {
                tokio::task::yield_now().await;
                Ok(7)
            })
            .await
            .ok()
        });
        assert_eq!(on_the_worker.await.ok().flatten(), Some(7));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn handed_off_work_stops_at_its_next_await_once_its_request_is_given_up() {
        let given_up = CancellationToken::new();
        let (reached, reached_rx) = tokio::sync::oneshot::channel::<()>();
        let stored = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let written = stored.clone();
        let request = tokio::spawn(cancellable(given_up.clone(), async move {
            run_async(THRESHOLD, async move {
                let _ = reached.send(());
                // An etcd write that never answers, then what would follow it.
                std::future::pending::<()>().await;
                written.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            })
            .await
        }));
        assert!(reached_rx.await.is_ok(), "the work started");
        given_up.cancel();
        let ended = tokio::time::timeout(std::time::Duration::from_secs(60), request).await.ok().and_then(Result::ok);
        assert!(matches!(ended, Some(Err(Error::Timeout))), "{ended:?}");
        assert!(!stored.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_current_thread_runtime_runs_the_work_in_place() {
        assert_eq!(run(THRESHOLD * 10, || 1), 1);
        assert_eq!(run_async(THRESHOLD * 10, async { Ok(2) }).await.ok(), Some(2));
    }
}
