//! A request's body outlives its answer: whatever answers a request that carries a body (a 413
//! over the size limit, a 429 of the in-flight limit, any refusal before the body is read), the
//! body is let go only once the answer has been sent. Over HTTP/2, letting go of a body the
//! client is still sending resets its stream; before the answer is complete that reset is
//! `CANCEL`, and the client never sees the answer; after it, hyper's h2 sends `NO_ERROR`, which
//! tells the client the answer stands (RFC 9113 §8.1), as Go's HTTP/2 server does.
//!
//! Over HTTP/1.1 a body let go unread makes hyper close the connection with the rest of the body
//! still arriving, and the kernel answers that rest with a reset, which may reach the client
//! before it has read the answer (a client still writing then sees a broken pipe, no answer). So
//! there the rest is read and thrown away once the answer is sent, up to [`DRAIN_BYTES`] and
//! [`DRAIN_TIME`], as Go's server reads what is left of a body after its handler (and, past
//! that, closes its side and waits before closing the connection).
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
    let version = request.version();
    let (parts, body) = request.into_parts();
    let shared: Shared = Arc::new(Mutex::new(Some(body)));
    let response = next.run(Request::from_parts(parts, Body::new(Proxy(shared.clone())))).await;
    let Some(kept) = shared.lock().take() else { return response };
    let (parts, body) = response.into_parts();
    let drain = version == http::Version::HTTP_11 || version == http::Version::HTTP_10;
    Response::from_parts(parts, Body::new(KeptUntilSent { body, kept: Some(kept), drain }))
}

/// The most of a request's body read and thrown away after its answer (HTTP/1.1).
pub const DRAIN_BYTES: usize = 16 << 20;

/// The longest a request's body is read after its answer (HTTP/1.1).
pub const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads `body` to its end and throws it away, stopping at [`DRAIN_BYTES`] or [`DRAIN_TIME`].
async fn drain(mut body: Body) {
    let mut read = 0;
    let reading = async {
        while let Some(Ok(frame)) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            read += frame.data_ref().map_or(0, Bytes::len);
            if read > DRAIN_BYTES {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, reading).await;
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

/// An answer's body, holding the request's until it is dropped (then drained over HTTP/1.1).
struct KeptUntilSent {
    body: Body,
    kept: Option<Body>,
    drain: bool,
}

impl Drop for KeptUntilSent {
    fn drop(&mut self) {
        let Some(kept) = self.kept.take().filter(|body| self.drain && !body.is_end_stream()) else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain(kept));
        }
    }
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
