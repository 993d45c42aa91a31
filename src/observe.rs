//! The outermost middleware: every request (health and refused ones included) is timed, counted
//! in `apiserver_request_total` and `apiserver_request_duration_seconds`, and logged: one line at
//! debug for every request, at info for a 4xx and at warn for a 5xx, with verb, path, user,
//! status, and for failures the Status reason and message (`error`), and the duration.
//!
//! Only the method and the path are logged, never a header, the query or a body, so a bearer
//! token, a client certificate or anything else a client sends cannot reach the log. The
//! duration is the time to the response head: for a watch, until its stream starts.

use crate::api::error::Failure;
use crate::api::query::Query;
use crate::auth::attributes::{self, Attributes};
use crate::metrics::{Metrics, RequestLabels};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Where authentication records who made the request, for the request log.
#[derive(Clone, Debug, Default)]
pub struct RequestUser(Arc<OnceLock<String>>);

impl RequestUser {
    /// Records the user's name (the first record wins).
    pub fn set(&self, name: &str) {
        let _ = self.0.set(name.to_string());
    }

    fn name(&self) -> &str {
        self.0.get().map(String::as_str).unwrap_or("-")
    }
}

/// The kube-apiserver's `verb` and `resource` metric labels of a request. Both come from what
/// the client sent, so only served resources and standard methods become label values (any
/// other resource is left empty, any other method is `OTHER`): no client can grow the number of
/// series.
pub fn labels(method: &http::Method, attributes: &Attributes, served: &[&str]) -> (String, String) {
    match attributes {
        Attributes::Resource { verb, resource, .. } if served.contains(&resource.as_str()) => {
            let verb = match verb.as_str() {
                "create" => "POST".to_string(),
                "update" => "PUT".to_string(),
                other => other.to_uppercase(),
            };
            (verb, resource.clone())
        }
        _ => {
            let standard = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"];
            let verb = if standard.contains(&method.as_str()) { method.as_str() } else { "OTHER" };
            (verb.to_string(), String::new())
        }
    }
}

/// The middleware; `served` names the resources this server serves.
pub async fn observe(metrics: Arc<Metrics>, served: Arc<[&'static str]>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let attributes = attributes::attributes(&method, &path, &Query::parse(request.uri().query()));
    let (verb, resource) = labels(&method, &attributes, &served);
    let user = RequestUser::default();
    request.extensions_mut().insert(user.clone());
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let status = response.status();
    let labels = RequestLabels { verb, resource, code: status.as_u16().to_string() };
    metrics.requests.get_or_create(&labels).inc();
    metrics.request_duration.get_or_create(&labels).observe(elapsed.as_secs_f64());
    let failure = response.extensions().get::<Failure>();
    let reason = failure.map(|f| f.reason).unwrap_or_default();
    let error = failure.map(|f| f.message.as_str()).unwrap_or_default();
    // Microsecond precision is plenty, and prints short.
    let duration_ms = elapsed.as_micros() as f64 / 1000.0;
    let (verb, user, code) = (labels.verb.as_str(), user.name(), status.as_u16());
    if status.is_server_error() {
        tracing::warn!(verb, %path, user, status = code, reason, error, duration_ms, "request failed");
    } else if status.is_client_error() {
        tracing::info!(verb, %path, user, status = code, reason, error, duration_ms, "request refused");
    } else {
        tracing::debug!(verb, %path, user, status = code, duration_ms, "request");
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(method: &str, path: &str, query: &str) -> (String, String) {
        let method: http::Method = method.parse().unwrap();
        labels(&method, &attributes::attributes(&method, path, &Query::parse(Some(query))), &["llamas"])
    }

    #[test]
    fn labels_follow_the_kube_apiserver() {
        let one = "/apis/farm.example.com/v1alpha/namespaces/default/llamas/dolly";
        let all = "/apis/farm.example.com/v1alpha/namespaces/default/llamas";
        assert_eq!(label("GET", one, ""), ("GET".into(), "llamas".into()));
        assert_eq!(label("GET", all, ""), ("LIST".into(), "llamas".into()));
        assert_eq!(label("GET", all, "watch=true"), ("WATCH".into(), "llamas".into()));
        assert_eq!(label("POST", all, ""), ("POST".into(), "llamas".into()));
        assert_eq!(label("PUT", one, ""), ("PUT".into(), "llamas".into()));
        assert_eq!(label("PATCH", one, ""), ("PATCH".into(), "llamas".into()));
        assert_eq!(label("DELETE", one, ""), ("DELETE".into(), "llamas".into()));
        assert_eq!(label("DELETE", all, ""), ("DELETECOLLECTION".into(), "llamas".into()));
        assert_eq!(label("GET", "/metrics", ""), ("GET".into(), String::new()));
    }

    #[test]
    fn clients_cannot_invent_label_values() {
        let other = "/apis/farm.example.com/v1alpha/namespaces/default/made-up-1234";
        assert_eq!(label("GET", other, ""), ("GET".into(), String::new()));
        assert_eq!(label("BREW", "/apis", ""), ("OTHER".into(), String::new()));
    }
}
