//! The outermost middleware: every request (health and refused ones included) is timed, counted
//! in `apiserver_request_total` and `apiserver_request_duration_seconds`, and logged: one line at
//! debug for every request, at info for a 4xx and at warn for a 5xx, with verb, path, user,
//! status, and for failures the Status reason and message (`error`), and the duration. An
//! `Audit-ID` the request carries comes back in the response, as the kube-apiserver returns it
//! with or without an audit log.
//!
//! Only the method and the path are logged, never a header, the query or a body, so a bearer
//! token, a client certificate or anything else a client sends cannot reach the log. The
//! duration is the time to the response head: for a watch, until its stream starts.

use crate::api::query::Query;
use crate::auth::RequestUser;
use crate::auth::attributes::resource_path;
use crate::machinery::error::Failure;
use crate::machinery::verb::Verb;
use crate::metrics::{Metrics, RequestLabels};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;

/// The kube-apiserver's `verb` and `resource` metric labels of a request, read from its method,
/// path and query without allocating (the path and verb rules are the authorization
/// attributes'). Both come from what the client sent, so only served resources and standard
/// methods become label values (any other resource is left empty, any other method is `OTHER`):
/// no client can grow the number of series.
pub fn labels(
    method: &http::Method,
    path: &str,
    query: Option<&str>,
    served: &[&'static str],
) -> (&'static str, &'static str) {
    let watch = || query.is_some_and(|q| q.contains("watch")) && Query::parse(query).flag("watch");
    let resource_request = resource_path(path).and_then(|p| {
        let resource = served.iter().find(|s| **s == p.resource)?;
        Some((Verb::of_request(method, !p.name.is_empty(), watch())?, *resource))
    });
    let Some((verb, resource)) = resource_request else {
        const STANDARD: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"];
        let verb = STANDARD.iter().find(|m| **m == method.as_str()).copied().unwrap_or("OTHER");
        return (verb, "");
    };
    (verb.metric_label(), resource)
}

/// The middleware; `served` names the resources this server serves.
pub async fn observe(metrics: Arc<Metrics>, served: Arc<[&'static str]>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    // A `Uri` clone shares its bytes: the path is kept for the log line without a copy.
    let uri = request.uri().clone();
    let path = uri.path();
    let (verb, resource) = labels(&method, path, uri.query(), &served);
    let user = RequestUser::default();
    request.extensions_mut().insert(user.clone());
    let audit_id = request.headers().get(crate::audit::AUDIT_ID).cloned();
    let mut response = next.run(request).await;
    if user.front_proxied() {
        // The aggregator answers its client with its own `Audit-Id` (the ID it sent us) and
        // adds ours to it: k8s.io/apiserver's servers send it twice; one is what it means.
        response.headers_mut().remove(crate::audit::AUDIT_ID);
    } else if let Some(id) = audit_id {
        response.headers_mut().entry(crate::audit::AUDIT_ID).or_insert(id);
    }
    let elapsed = started.elapsed();
    let status = response.status();
    let labels = RequestLabels { verb, resource, code: status.as_u16() };
    metrics.requests.get_or_create(&labels).inc();
    metrics.request_duration.get_or_create(&labels).observe(elapsed.as_secs_f64());
    let failure = response.extensions().get::<Failure>();
    let reason = failure.map(|f| f.reason).unwrap_or_default();
    let error = failure.map(|f| f.message.as_str()).unwrap_or_default();
    // Microsecond precision is plenty, and prints short.
    let duration_ms = elapsed.as_micros() as f64 / 1000.0;
    let (user, code) = (user.name(), status.as_u16());
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

    fn label(method: &str, path: &str, query: &str) -> (&'static str, &'static str) {
        let method: http::Method = method.parse().unwrap();
        labels(&method, path, Some(query), &["widgets"])
    }

    #[test]
    fn labels_follow_the_kube_apiserver() {
        let one = "/apis/example.com/v1beta1/namespaces/default/widgets/dolly";
        let all = "/apis/example.com/v1beta1/namespaces/default/widgets";
        assert_eq!(label("GET", one, ""), ("GET", "widgets"));
        assert_eq!(label("GET", all, ""), ("LIST", "widgets"));
        assert_eq!(label("GET", all, "watch=true"), ("WATCH", "widgets"));
        assert_eq!(label("POST", all, ""), ("POST", "widgets"));
        assert_eq!(label("PUT", one, ""), ("PUT", "widgets"));
        assert_eq!(label("PATCH", one, ""), ("PATCH", "widgets"));
        assert_eq!(label("DELETE", one, ""), ("DELETE", "widgets"));
        assert_eq!(label("DELETE", all, ""), ("DELETECOLLECTION", "widgets"));
        assert_eq!(label("GET", "/metrics", ""), ("GET", ""));
    }

    #[test]
    fn verbs_agree_with_the_authorization_attributes() {
        use crate::auth::attributes::{Attributes, attributes};
        let one = "/apis/example.com/v1beta1/namespaces/default/widgets/dolly";
        let all = "/apis/example.com/v1beta1/widgets";
        for (method, path, query) in [
            ("GET", one, ""),
            ("GET", all, ""),
            ("GET", all, "watch=1"),
            ("GET", all, "watch=false"),
            ("POST", all, ""),
            ("PUT", one, ""),
            ("PATCH", one, ""),
            ("DELETE", one, ""),
            ("DELETE", all, ""),
        ] {
            let m: http::Method = method.parse().unwrap();
            let Attributes::Resource { verb, resource, .. } = attributes(&m, path, &Query::parse(Some(query))) else {
                panic!("{path} is a resource path")
            };
            let expected = match verb.as_str() {
                "create" => "POST".to_string(),
                "update" => "PUT".to_string(),
                other => other.to_uppercase(),
            };
            assert_eq!(label(method, path, query), (expected.as_str(), resource.as_str()), "{method} {path}?{query}");
        }
    }

    #[test]
    fn clients_cannot_invent_label_values() {
        let other = "/apis/example.com/v1beta1/namespaces/default/made-up-1234";
        assert_eq!(label("GET", other, ""), ("GET", ""));
        assert_eq!(label("BREW", "/apis", ""), ("OTHER", ""));
    }
}
