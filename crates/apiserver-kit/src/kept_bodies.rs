//! A request's body outlives its answer: whatever answers a request that carries a body (a 413
//! over the size limit, a 429 of the in-flight limit, any refusal before the body is read), the
//! body is let go only once the answer has been sent. Over HTTP/2, letting go of a body the
//! client is still sending resets its stream; before the answer is complete that reset is
//! `CANCEL`, and the client never sees the answer; after it, hyper's h2 sends `NO_ERROR`, which
//! tells the client the answer stands (RFC 9113 §8.1), as Go's HTTP/2 server does.
//!
//! The handler reads the body through a proxy sharing it with this layer, which hands what is
//! left of it to the answer's body; that drops it after its last frame is sent.

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

type Shared = Arc<Mutex<Option<Body>>>;

/// The middleware.
pub async fn keep(request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let shared: Shared = Arc::new(Mutex::new(Some(body)));
    let response = next.run(Request::from_parts(parts, Body::new(Proxy(shared.clone())))).await;
    let Some(kept) = shared.lock().take() else { return response };
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(KeptUntilSent { body, _kept: kept }))
}

/// The request's body as the handler reads it.
struct Proxy(Shared);

impl HttpBody for Proxy {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        match self.0.lock().as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.lock().as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.0.lock().as_ref().map(HttpBody::size_hint).unwrap_or_else(|| SizeHint::with_exact(0))
    }
}

/// An answer's body, holding the request's until it is dropped.
struct KeptUntilSent {
    body: Body,
    _kept: Body,
}

impl HttpBody for KeptUntilSent {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
