//! Limits a public-facing server needs, applied to every non-health request: a cap on requests
//! in flight (429 `Status` with `Retry-After` beyond it) and a request timeout (504 `Status`),
//! neither of which applies to watches, which are long-running by design (as in the
//! kube-apiserver's `--max-requests-inflight` and `--request-timeout`). Body size is limited where
//! bodies are read; header count and the header read timeout are set on the HTTP server itself
//! (`crate::server`), and the size of a request's head is checked here, on every route
//! ([`refuse_large_heads`]), so that HTTP/2 answers it with a `Status` as HTTP/1.1 does.

use crate::api::query::Query;
use crate::auth::attributes::resource_path;
use crate::machinery::cpu_bound;
use crate::machinery::error::Error;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

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

/// Whether a request is a watch (long-running): a GET with a truthy `watch`. A `watch=1` on any
/// other method is an ordinary request, in flight and timed like any other (the kube-apiserver's
/// long-running check asks for the `watch` verb, which only a GET has).
fn is_watch(request: &Request) -> bool {
    request.method() == http::Method::GET && Query::parse(request.uri().query()).flag("watch")
}

/// Whether a request is a GET of one named object of an API group,
/// `/apis/GROUP/VERSION[/namespaces/NAMESPACE]/RESOURCE/NAME` without a subresource (the
/// kube-apiserver's RequestInfo calls its verb `get`): its work is bounded by one object's size.
fn is_get_of_one(request: &Request) -> bool {
    request.method() == http::Method::GET
        && resource_path(request.uri().path())
            .is_some_and(|p| !p.group.is_empty() && !p.name.is_empty() && p.subresource.is_empty())
}

/// Middleware enforcing [`Limits`].
pub async fn enforce(limits: Limits, request: Request, next: Next) -> Response {
    if is_watch(&request) {
        return next.run(request).await;
    }
    let Ok(permit) = limits.inflight.clone().try_acquire_owned() else {
        return Error::TooManyRequests { message: "Too many requests, please try again later.".into(), retry_after: 1 }
            .into_response();
    };
    // A GET of one object runs on the task hyper serves it on (its connection's with HTTP/1.1,
    // its stream's with HTTP/2): nothing in it computes for long (one object's lookup and
    // encoding), and its waits (etcd, an authorization webhook) are where the timeout fires. A
    // task of its own took a tenth of its CPU (docs/performance.md).
    if is_get_of_one(&request) {
        let handled = async move {
            let _permit = permit;
            next.run(request).await
        };
        return tokio::time::timeout(limits.timeout, handled).await.unwrap_or_else(|_| Error::Timeout.into_response());
    }
    // Any other request runs as a task of its own, which holds the permit until it stops: a handler
    // busy computing cannot keep its timeout from firing (this task is polled elsewhere). At the
    // timeout, or when the client goes, the task is cancelled at its next await, so a request
    // answered 504 writes nothing after and stays counted in flight until it has stopped. Work
    // handed off the runtime's workers (`cpu_bound`) watches the token instead.
    let given_up = CancellationToken::new();
    let task = cpu_bound::cancellable(given_up.clone(), async move {
        let _permit = permit;
        next.run(request).await
    });
    let mut handler = Cancelled(tokio::spawn(task), given_up);
    match tokio::time::timeout(limits.timeout, &mut handler.0).await {
        Ok(Ok(response)) => response,
        // A panic goes on to the layer that answers it (crate::panics).
        Ok(Err(failed)) if failed.is_panic() => std::panic::resume_unwind(failed.into_panic()),
        Ok(Err(failed)) => Error::Internal(format!("the request's task ended: {failed}")).into_response(),
        Err(_) => Error::Timeout.into_response(),
    }
}

/// A request's task, cancelled when this is dropped (after its answer, it has ended anyway),
/// with the token its handed-off work watches.
struct Cancelled(tokio::task::JoinHandle<Response>, CancellationToken);

impl Drop for Cancelled {
    fn drop(&mut self) {
        self.1.cancel();
        self.0.abort();
    }
}

/// The size of a request's head as HTTP/2 counts a header list (RFC 9113 §6.5.2: each field's
/// name and value plus 32 bytes), its method, path and query counted as the pseudo-headers
/// they are.
pub fn head_size(request: &Request) -> usize {
    let target = request.uri().path_and_query().map_or(0, |p| p.as_str().len());
    let pseudo = request.method().as_str().len() + target + 2 * 32;
    pseudo + request.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 32).sum::<usize>()
}

/// Middleware refusing (431 `Status`) a request whose head is larger than `max` bytes. The HTTP
/// server lets larger heads through to here (HTTP/2's decoder up to four times `max`, beyond
/// which it closes the connection), so that the client reads a `Status` rather than a reset.
pub async fn refuse_large_heads(max: usize, request: Request, next: Next) -> Response {
    let size = head_size(&request);
    if size > max {
        return Error::HeadersTooLarge(format!(
            "Request Header Fields Too Large: the request's path, query and headers take {size} bytes, more than the limit of {max}"
        ))
        .into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(uri: &str) -> Request {
        Request::builder().method("GET").uri(uri).body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn a_get_of_one_names_one_object_without_a_subresource() {
        for one in ["/apis/g/v1/namespaces/ns/llamas/dolly", "/apis/g/v1/regions/north", "/apis/g/v1/llamas/dolly?x=1"]
        {
            assert!(is_get_of_one(&get(one)), "{one}");
        }
        let others = [
            "/apis/g/v1/namespaces/ns/llamas",
            "/apis/g/v1/namespaces/ns/llamas/dolly/status",
            "/apis/g/v1/llamas",
            "/apis/g/v1/regions/north/status",
            "/apis/g/v1/namespaces/ns/llamas/",
            "/apis/g/v1/regions//",
            "/apis/g/v1",
            "/apis/g",
            "/api/v1/namespaces/ns/pods/p",
            "/openapi/v3/apis/g/v1",
        ];
        for other in others {
            assert!(!is_get_of_one(&get(other)), "{other}");
        }
        let mut put = get("/apis/g/v1/llamas/dolly");
        *put.method_mut() = http::Method::PUT;
        assert!(!is_get_of_one(&put));
    }

    #[test]
    fn a_head_counts_its_path_query_and_every_header_as_http2_does() {
        let request = Request::builder()
            .method("GET")
            .uri("/apis?watch=1")
            .header("a", "bc")
            .header("a", "d")
            .body(axum::body::Body::empty())
            .unwrap();
        assert_eq!(head_size(&request), 3 + 13 + 64 + (1 + 2 + 32) + (1 + 1 + 32));
    }
}
