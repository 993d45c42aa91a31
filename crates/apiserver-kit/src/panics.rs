//! A handler's panic answered as a 500 `Status`, not a cut connection: the middleware just
//! inside [`crate::observe`] runs each request's future under `catch_unwind`, so a panic in a
//! handler (or anything it awaits on the request's task) becomes a 500 `InternalError` for that
//! request alone, counted in `<prefix>_request_panics_total` by verb and resource and logged at
//! error with the request's audit ID, as k8s.io/apiserver's `WithPanicRecovery` logs and
//! answers a panic (its answer is a plain-text 500; ours is a `Status`, like every other).
//!
//! A request without an `Audit-Id` gets one here, before the audit log reads it, so the log line
//! of a panic and the audit event of the same request carry the same ID.

use crate::audit::AUDIT_ID;
use crate::machinery::error::Error;
use crate::metrics::{Metrics, PanicLabels};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use http::HeaderValue;
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// What the client reads when its request panicked.
const MESSAGE: &str = "This request caused apiserver to panic. Look in the logs for details.";

/// The middleware; `served` names the resources this server serves (for the metric's labels).
pub async fn recover(metrics: Arc<Metrics>, served: Arc<[&'static str]>, mut request: Request, next: Next) -> Response {
    let audit_id = match request.headers().get(AUDIT_ID).filter(|v| !v.is_empty()) {
        Some(id) => id.clone(),
        None => {
            let id = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()).unwrap_or(HeaderValue::from_static(""));
            request.headers_mut().insert(AUDIT_ID, id.clone());
            id
        }
    };
    let (method, uri) = (request.method().clone(), request.uri().clone());
    let payload = match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => return response,
        Err(payload) => payload,
    };
    let (verb, resource) = crate::observe::labels(&method, uri.path(), uri.query(), &served);
    metrics.request_panics.get_or_create(&PanicLabels { verb, resource }).inc();
    tracing::error!(
        audit_id = audit_id.to_str().unwrap_or_default(),
        verb,
        path = %uri.path(),
        panic = panic_message(payload.as_ref()),
        "request handler panicked; answered 500"
    );
    let mut response = Error::Internal(MESSAGE.into()).into_response();
    response.headers_mut().insert(AUDIT_ID, audit_id);
    response
}

/// The text a panic was raised with (`panic!("…")` gives a `&str` or a `String`).
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(message) = payload.downcast_ref::<&str>() {
        message
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message
    } else {
        "(not a string)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_message_is_read_from_either_string_type() {
        let borrowed = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        let owned = std::panic::catch_unwind(|| panic!("formatted {}", 7)).unwrap_err();
        let other = std::panic::catch_unwind(|| std::panic::panic_any(7_u8)).unwrap_err();
        assert_eq!(panic_message(borrowed.as_ref()), "plain");
        assert_eq!(panic_message(owned.as_ref()), "formatted 7");
        assert_eq!(panic_message(other.as_ref()), "(not a string)");
    }
}
