//! Limits a public-facing server needs, applied to every non-health request: a cap on requests
//! in flight (429 `Status` with `Retry-After` beyond it) and a request timeout (504 `Status`),
//! neither of which applies to watches, which are long-running by design (as in the
//! kube-apiserver's `--max-requests-inflight` and `--request-timeout`). Body size is limited where
//! bodies are read; header size, header count and the header read timeout are set on the HTTP
//! server itself (`crate::server`).

use crate::api::query::Query;
use crate::machinery::error::Error;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// The limits in force.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Permits for requests in flight.
    inflight: Arc<Semaphore>,
    /// How many permits there are, to tell how many are taken.
    max_inflight: usize,
    /// How long a request (not a watch) may take.
    timeout: Duration,
}

impl Limits {
    /// At most `max_inflight` requests at once, each within `timeout`.
    pub fn new(max_inflight: usize, timeout: Duration) -> Self {
        let max_inflight = max_inflight.max(1);
        Self { inflight: Arc::new(Semaphore::new(max_inflight)), max_inflight, timeout }
    }

    /// Requests (not watches) being handled now; shutdown waits for this to reach 0.
    pub fn in_flight(&self) -> usize {
        self.max_inflight.saturating_sub(self.inflight.available_permits())
    }
}

/// Whether a request is a watch (long-running).
fn is_watch(request: &Request) -> bool {
    Query::parse(request.uri().query()).flag("watch")
}

/// Middleware enforcing [`Limits`].
pub async fn enforce(limits: Limits, request: Request, next: Next) -> Response {
    if is_watch(&request) {
        return next.run(request).await;
    }
    let Ok(_permit) = limits.inflight.clone().try_acquire_owned() else {
        return Error::TooManyRequests { message: "Too many requests, please try again later.".into(), retry_after: 1 }
            .into_response();
    };
    match tokio::time::timeout(limits.timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => Error::Timeout.into_response(),
    }
}
