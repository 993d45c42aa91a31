//! `/healthz`, `/livez` and `/readyz`, with per-check detail on `?verbose` and one check at
//! `/<endpoint>/<check>`, in the kube-apiserver's plain-text format. These stay open to
//! unauthenticated callers, as on the kube-apiserver.

use crate::api::extract::PathParams;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A readiness check: `Err` with the reason when it fails.
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The health state the checks read.
#[derive(Default)]
pub struct Health {
    /// Set when shutdown begins: readiness fails so load balancers stop sending traffic.
    shutting_down: AtomicBool,
    /// Named readiness checks that fail `/readyz` (etcd).
    required: Vec<(Cow<'static, str>, Check)>,
    /// Named informational readiness checks, reported by `/readyz?verbose` and
    /// `/readyz/<name>` without failing `/readyz` itself: the server keeps serving what does
    /// not depend on them (the Pod cache).
    informational: Vec<(Cow<'static, str>, Check)>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health").field("shutting_down", &self.shutting_down).finish_non_exhaustive()
    }
}

impl Health {
    /// Adds a readiness check that fails `/readyz` while it fails.
    pub fn with_required(mut self, name: impl Into<Cow<'static, str>>, check: Check) -> Self {
        self.required.push((name.into(), check));
        self
    }

    /// Adds an informational readiness check.
    pub fn with_informational(mut self, name: impl Into<Cow<'static, str>>, check: Check) -> Self {
        self.informational.push((name.into(), check));
        self
    }

    /// Marks the server as shutting down.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// The checks of one endpoint: name, result, and whether a failure fails the endpoint.
    fn checks(&self, endpoint: Endpoint) -> Vec<(&str, Result<(), String>, bool)> {
        let mut checks = vec![("ping", Ok(()), true), ("store", Ok(()), true)];
        if endpoint == Endpoint::Readyz {
            let shutdown =
                if self.shutting_down.load(Ordering::SeqCst) { Err("shutting down".to_string()) } else { Ok(()) };
            checks.push(("shutdown", shutdown, true));
            for (name, check) in &self.required {
                checks.push((name.as_ref(), check(), true));
            }
            for (name, check) in &self.informational {
                checks.push((name.as_ref(), check(), false));
            }
        }
        checks
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    fn name(self) -> &'static str {
        match self {
            Self::Healthz => "healthz",
            Self::Livez => "livez",
            Self::Readyz => "readyz",
        }
    }
}

fn text(code: StatusCode, body: String) -> Response {
    let mut response = (code, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    response
}

fn report(health: &Health, endpoint: Endpoint, only: Option<&str>, verbose: bool) -> Response {
    let checks: Vec<_> =
        health.checks(endpoint).into_iter().filter(|(name, _, _)| only.is_none_or(|o| o == *name)).collect();
    if checks.is_empty() {
        return crate::machinery::error::Error::PathNotFound.into_response();
    }
    // A check asked for by name fails when it fails, informational or not.
    let failing: Vec<&str> =
        checks.iter().filter(|(_, r, counts)| r.is_err() && (*counts || only.is_some())).map(|(n, _, _)| *n).collect();
    let failed = !failing.is_empty();
    if !failed && (only.is_some() || !verbose) {
        return text(StatusCode::OK, "ok".into());
    }
    let mut body = String::new();
    for (name, result, counts) in &checks {
        match (result, counts) {
            (Ok(()), _) => body.push_str(&format!("[+]{name} ok\n")),
            (Err(_), true) => body.push_str(&format!("[-]{name} failed: reason withheld\n")),
            (Err(reason), false) => {
                body.push_str(&format!("[-]{name} not ready (does not fail {}): {reason}\n", endpoint.name()))
            }
        }
    }
    if failed {
        for (name, result, _) in &checks {
            if let Err(reason) = result {
                tracing::info!(endpoint = endpoint.name(), check = name, reason, "health check failed");
            }
        }
        body.push_str(&format!("{} check failed\n", endpoint.name()));
        let mut response = text(StatusCode::INTERNAL_SERVER_ERROR, body);
        // What the request log says of the 500: the checks that failed (their reasons are
        // logged above, and withheld from the body).
        let message = format!("{} check failed: {}", endpoint.name(), failing.join(", "));
        response.extensions_mut().insert(crate::machinery::error::Failure { reason: "", message });
        response
    } else {
        body.push_str(&format!("{} check passed\n", endpoint.name()));
        text(StatusCode::OK, body)
    }
}

fn verbose(raw: &Option<String>) -> bool {
    crate::api::query::Query::parse(raw.as_deref()).get("verbose").is_some()
}

/// The health routes.
pub fn routes(health: Arc<Health>) -> Router {
    let mut router = Router::new();
    for endpoint in [Endpoint::Healthz, Endpoint::Livez, Endpoint::Readyz] {
        router = router
            .route(
                &format!("/{}", endpoint.name()),
                get(move |State(h): State<Arc<Health>>, RawQuery(q): RawQuery| async move {
                    report(&h, endpoint, None, verbose(&q))
                }),
            )
            .route(
                &format!("/{}/{{check}}", endpoint.name()),
                get(
                    move |State(h): State<Arc<Health>>,
                          PathParams(check): PathParams<String>,
                          RawQuery(q): RawQuery| async move {
                        report(&h, endpoint, Some(&check), verbose(&q))
                    },
                ),
            );
    }
    router.with_state(health)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::error::Failure;

    #[test]
    fn a_failed_endpoint_tells_the_request_log_which_checks_failed() {
        let down: Check = Arc::new(|| Err("etcd is down".to_string()));
        let health = Health::default().with_required("etcd", down.clone()).with_informational("pod-cache", down);
        let response = report(&health, Endpoint::Readyz, None, false);
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let failure = response.extensions().get::<Failure>().expect("a failure for the request log");
        assert_eq!(failure.message, "readyz check failed: etcd", "informational checks do not fail it");
        let one = report(&health, Endpoint::Readyz, Some("pod-cache"), false);
        assert_eq!(
            one.extensions().get::<Failure>().map(|f| f.message.as_str()),
            Some("readyz check failed: pod-cache")
        );
        assert!(report(&health, Endpoint::Livez, None, false).extensions().get::<Failure>().is_none());
    }
}
