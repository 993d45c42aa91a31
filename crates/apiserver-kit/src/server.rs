//! Assembles the server: TLS material, authentication, the stores and registries of each
//! resource, discovery, OpenAPI and health, behind one axum router served by axum-server on a
//! rustls listener. Shutdown is graceful: readiness fails first (for the shutdown delay), the
//! listener closes, in-flight requests finish, then watches send what was committed and end;
//! connections still open after the grace period are closed.

use crate::api::conversion_webhook::Converter;
use crate::api::discovery::{self, Discovery};
use crate::api::openapi::{Document, Documents};
use crate::audit::Auditor;
use crate::auth::{self, Authenticator};
use crate::health::{self, Health};
use crate::limits::Limits;
use crate::machinery::error::Error as ApiError;
use crate::machinery::identity::Identity;
use crate::metrics::{Metrics, Sources};
use crate::tls;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::handler::Handler;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use metric_sources as sources;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "clap")]
mod args;
mod builder;
mod metric_sources;
mod options;
mod resource;
mod signal;
mod storage;
pub use crate::api::conversion_webhook::WebhookAuthentication;
pub use crate::certificates::ManagedCertificates;
#[cfg(feature = "clap")]
pub use args::{ServerArgs, StorageArgs, StorageKind};
pub use builder::{ApiServer, ApiServerBuilder, BuildError, Listener};
pub use options::{
    AuditOptions, Authentication, CertificateFiles, ClusterConnection, HttpOptions, RequestLimits, ServerOptions,
    ShutdownOptions, TlsOptions, WatchOptions,
};
pub use resource::{MirroredView, StoredResource};
pub use signal::shutdown_signal;
pub use storage::StorageOptions;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The builder's group, versions and resources do not describe an API.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// Certificates could not be made or loaded.
    #[error(transparent)]
    Tls(#[from] tls::Error),
    /// The listener could not be used.
    #[error("listener: {0}")]
    Listener(std::io::Error),
    /// The kubeconfig could not be written.
    #[error("writing the kubeconfig {path}: {source}")]
    Kubeconfig {
        /// Where.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The cluster's configuration could not be read, or names no usable cluster.
    #[error(
        "the cluster: {0} (an aggregated server needs the kubeconfig of its cluster or to run in it; a standalone one needs no cluster)"
    )]
    Cluster(String),
    /// The storage could not be set up.
    #[error("storage: {0}")]
    Storage(String),
    /// The audit policy or log could not be used.
    #[error("audit: {0}")]
    Audit(String),
    /// The server failed while serving.
    #[error("serving: {0}")]
    Serve(std::io::Error),
}

/// Everything the non-resource handlers share.
struct Shared {
    /// The program, as `/version` names it.
    identity: Identity,
    /// Discovery documents.
    discovery: Discovery,
    /// OpenAPI documents, built once.
    openapi: Documents,
    /// `host:port` clients reach this server at, for `/api`'s `serverAddressByClientCIDRs`.
    address: String,
    /// The resources served: the only `resource` label values of request metrics.
    served: Arc<[&'static str]>,
    /// The metrics, and where their scrape-time gauges are read from.
    metrics: Arc<Metrics>,
    sources: Sources,
}

/// A GET-only route whose other methods get a 405 `Status`.
fn get_only<H, T>(handler: H) -> MethodRouter<Arc<Shared>>
where
    H: Handler<T, Arc<Shared>>,
    T: 'static,
{
    get(handler).fallback(|| async { ApiError::MethodNotAllowed })
}

/// Serves an OpenAPI document as `content_type` with its ETag, answering 304 to a matching
/// `If-None-Match`.
fn serve_document(
    document: &Document,
    headers: &HeaderMap,
    cache_control: &'static str,
    content_type: &'static str,
) -> Response {
    let etag = document.etag();
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = document.body.clone().into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        r
    };
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    response
}

/// Refuses OpenAPI requests that accept neither JSON nor anything.
fn accepts_json(headers: &HeaderMap) -> Result<(), ApiError> {
    if crate::api::negotiate::parse_accept(headers.get(header::ACCEPT)).iter().any(|r| r.accepts_json()) {
        Ok(())
    } else {
        Err(ApiError::NotAcceptable("only the following media types are accepted: application/json".into()))
    }
}

/// `/metrics`: the OpenMetrics text format, which Prometheus negotiates and reads.
async fn metrics_text(State(s): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let text = crate::metrics::scrape(&s.metrics, &s.sources).await.map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    Ok(response)
}

/// The media type `/openapi/v2` answers in: for the first range of the `Accept` (by `q`, then
/// order) that is JSON (or a wildcard, as the kube-apiserver gives JSON for `*/*`) or either
/// spelling of gnostic's protobuf, JSON or [`MEDIA_TYPE`](crate::api::openapi_protobuf::MEDIA_TYPE).
fn openapi_v2_media_type(headers: &HeaderMap) -> Result<&'static str, ApiError> {
    use crate::api::openapi_protobuf::{CLIENT_GO_MEDIA_TYPE, MEDIA_TYPE};
    for range in crate::api::negotiate::parse_accept(headers.get(header::ACCEPT)) {
        if range.accepts_json() {
            return Ok("application/json");
        }
        let essence = format!("{}/{}", range.kind, range.subtype);
        if essence == CLIENT_GO_MEDIA_TYPE || essence == MEDIA_TYPE {
            return Ok(MEDIA_TYPE);
        }
    }
    Err(ApiError::NotAcceptable(format!(
        "only the following media types are accepted: application/json, {CLIENT_GO_MEDIA_TYPE}, {MEDIA_TYPE}"
    )))
}

/// `/openapi/v2`: JSON, or protobuf for a client asking for it (kubectl does).
async fn openapi_v2(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let media_type = openapi_v2_media_type(&headers)?;
    let document = if media_type == "application/json" { &s.openapi.v2 } else { &s.openapi.v2_protobuf };
    Ok(serve_document(document, &headers, "no-cache, private", media_type))
}

async fn openapi_v3_index(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Result<Response, ApiError> {
    accepts_json(&headers)?;
    Ok(serve_document(&s.openapi.v3_index, &headers, "no-cache, private", "application/json"))
}

/// `/openapi/v3/apis/<group>/<version>`.
async fn openapi_v3_group_version(
    version: &'static str,
    State(s): State<Arc<Shared>>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    accepts_json(&headers)?;
    let document = s.openapi.v3_group_version(version).ok_or(ApiError::PathNotFound)?;
    let query = crate::api::query::Query::parse(raw.as_deref());
    match query.get("hash") {
        None | Some("") => Ok(serve_document(document, &headers, "no-cache, private", "application/json")),
        Some(hash) if hash == document.hash => {
            Ok(serve_document(document, &headers, "public, immutable, max-age=31536000", "application/json"))
        }
        Some(_) => {
            // A stale hash: send the client to the current document, as the kube-apiserver does.
            let path = crate::api::openapi::v3_group_version_path(s.openapi.group, version);
            let location = format!("/openapi/v3/{path}?hash={}", document.hash);
            let mut r = StatusCode::MOVED_PERMANENTLY.into_response();
            if let Ok(v) = HeaderValue::from_str(&location) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            Ok(r)
        }
    }
}

/// The group's discovery documents (`/apis/<group>`, `/apis/<group>/<version>`) and OpenAPI v3
/// documents (`/openapi/v3/apis/<group>/<version>`), a route for each version served.
fn group_routes(shared: &Shared) -> Router<Arc<Shared>> {
    let group = shared.openapi.group;
    let mut routes = Router::new()
        .route(&format!("/apis/{group}"), get_only(|State(s): State<Arc<Shared>>| async move { s.discovery.group() }));
    for &(version, _) in &shared.openapi.v3_group_versions {
        routes = routes
            .route(
                &format!("/apis/{group}/{version}"),
                get_only(move |State(s): State<Arc<Shared>>| async move { s.discovery.version(version) }),
            )
            .route(
                &format!("/openapi/v3/apis/{group}/{version}"),
                get_only(move |s, q, h| openapi_v3_group_version(version, s, q, h)),
            );
    }
    routes
}

/// What is served without credentials: health, and `/metrics` when the options say so.
struct Open {
    health: Arc<Health>,
    metrics: bool,
}

/// The whole router: health (open), then everything else behind `authenticator`; every request
/// observed (counted, timed, logged).
fn router(
    resource_routes: Router,
    shared: Arc<Shared>,
    open: Open,
    gate: Gate,
    converter: Option<(Converter, WebhookAuthentication)>,
) -> Router {
    let Gate { authenticator, auditor, limits, max_head_bytes } = gate;
    let webhook_limits = limits.clone();
    let metrics = shared.metrics.clone();
    let (observed, recovered) = (metrics.clone(), metrics.clone());
    let served = shared.served.clone();
    let served_recovered = served.clone();
    let non_resource = group_routes(&shared)
        .route("/apis", get_only(|State(s): State<Arc<Shared>>, h: HeaderMap| async move { s.discovery.apis(&h) }))
        .route(
            "/api",
            get_only(|State(s): State<Arc<Shared>>, h: HeaderMap| async move { s.discovery.api(&h, &s.address) }),
        )
        .route("/version", get_only(|State(s): State<Arc<Shared>>| async move { discovery::version_info(&s.identity) }))
        .route("/openapi/v2", get_only(openapi_v2))
        .route("/openapi/v3", get_only(openapi_v3_index));
    let (open_metrics, protected_metrics) = metrics_routes(open.metrics, &shared, &limits);
    let non_resource = non_resource.merge(protected_metrics).with_state(shared);
    let resource_routes = resource_routes.layer(axum::middleware::from_fn(crate::api::yaml_answers::answer));
    // Without an audit log, authentication and authorization are one step.
    let gate = match auditor {
        None => tower::util::Either::Left(axum::middleware::from_fn(move |req, next| {
            auth::require(authenticator.clone(), metrics.clone(), req, next)
        })),
        Some(auditor) => tower::util::Either::Right(axum::middleware::from_fn(move |req, next| {
            crate::audit::gate(auditor.clone(), authenticator.clone(), metrics.clone(), req, next)
        })),
    };
    // One `Router::layer` for the three: each boxes every request's future once more.
    let protected_layers = tower::ServiceBuilder::new()
        // Around every answer, refusals of the limits and of authentication included.
        .layer(axum::middleware::from_fn(crate::api::pretty_answers::answer))
        // Outermost but the indentation, so floods are refused before any authentication work.
        .layer(axum::middleware::from_fn(move |req, next| crate::limits::enforce(limits.clone(), req, next)))
        .layer(gate)
        // Outside the YAML answers: what is compressed is the body the client reads.
        .layer(axum::middleware::from_fn(crate::api::compression::answer));
    let protected =
        non_resource.merge(resource_routes).fallback(|| async { ApiError::PathNotFound }).layer(protected_layers);
    // The kube-apiserver calls conversion webhooks without credentials (unless its webhook
    // kubeconfig gives it a client certificate, which `callers` then checks): the webhook is
    // outside authentication, but within the in-flight limit and the request timeout.
    let webhook = converter
        .map(|(converter, callers)| crate::api::conversion_webhook::routes(converter, callers))
        .unwrap_or_default()
        .layer(axum::middleware::from_fn(move |req, next| crate::limits::enforce(webhook_limits.clone(), req, next)));
    health::routes(open.health)
        .merge(open_metrics)
        .merge(webhook)
        .merge(protected)
        // A body outlives any early answer (the limits', a refusal before it is read).
        .layer(axum::middleware::from_fn(crate::kept_bodies::keep))
        .layer(axum::middleware::from_fn(move |req, next| crate::limits::refuse_large_heads(max_head_bytes, req, next)))
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::panics::recover(recovered.clone(), served_recovered.clone(), req, next)
        }))
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::observe::observe(observed.clone(), served.clone(), req, next)
        }))
}

/// `/metrics`: open (within the limits, outside authentication) when `anonymous`, else among the
/// protected routes; returns (open routes, protected routes).
fn metrics_routes(anonymous: bool, shared: &Arc<Shared>, limits: &Limits) -> (Router, Router<Arc<Shared>>) {
    let route = || Router::new().route("/metrics", get_only(metrics_text));
    if !anonymous {
        return (Router::new(), route());
    }
    let limits = limits.clone();
    let open = route()
        .with_state(shared.clone())
        .layer(axum::middleware::from_fn(move |req, next| crate::limits::enforce(limits.clone(), req, next)));
    (open, Router::new())
}

/// The URL clients use to reach a server bound to `addr`.
pub fn client_url(addr: SocketAddr) -> String {
    let ip = addr.ip();
    match ip {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => format!("https://127.0.0.1:{}", addr.port()),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => format!("https://[::1]:{}", addr.port()),
        std::net::IpAddr::V6(_) => format!("https://[{ip}]:{}", addr.port()),
        std::net::IpAddr::V4(_) => format!("https://{ip}:{}", addr.port()),
    }
}

/// What a graceful shutdown acts on.
struct Drain {
    /// Stops the listener and closes connections.
    handle: axum_server::Handle<SocketAddr>,
    /// Where readiness is failed.
    health: Arc<Health>,
    /// Counts the requests in flight, which must finish before watches end.
    limits: Limits,
    /// Ends the watches.
    stopping: tokio_util::sync::CancellationToken,
    /// `--shutdown-delay-seconds`.
    delay: Duration,
    /// `--shutdown-grace-seconds`.
    grace: Duration,
}

/// After `shutdown`: fail readiness and keep serving for the delay; stop accepting and let
/// in-flight requests finish; once no request (other than watches) has been in flight for a
/// moment, end the watches, which first send every event already committed, so a watcher sees
/// every acknowledged write. Connections still open when the grace period ends are closed.
async fn drain(shutdown: impl Future<Output = ()>, drain: Drain) {
    shutdown.await;
    tracing::info!(
        delay_seconds = drain.delay.as_secs(),
        grace_seconds = drain.grace.as_secs(),
        "shutting down: readiness fails now"
    );
    drain.health.begin_shutdown();
    tokio::time::sleep(drain.delay).await;
    tracing::info!("shutting down: no new connections; waiting for requests in flight");
    drain.handle.graceful_shutdown(Some(drain.grace));
    let deadline = tokio::time::Instant::now() + drain.grace;
    let mut idle_polls = 0;
    // Two idle polls in a row, so a request just read off a connection is counted before this
    // decides nothing is in flight.
    while idle_polls < 2 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(25)).await;
        idle_polls = if drain.limits.in_flight() == 0 { idle_polls + 1 } else { 0 };
    }
    tracing::info!(connections = drain.handle.connection_count(), "shutting down: ending watches");
    drain.stopping.cancel();
}

/// What every request passes before its handler: the limits, authentication, the audit log.
struct Gate {
    authenticator: Authenticator,
    auditor: Option<Arc<Auditor>>,
    limits: Limits,
    /// The largest request head read (`HttpOptions::max_header_bytes`).
    max_head_bytes: usize,
}

/// What [`ApiServer::serve`] has set up before its resources are mounted.
struct Started {
    identity: Identity,
    group: &'static str,
    converter: Option<Converter>,
    /// The URL clients reach the server at.
    url: String,
    /// The listener's certificate (reloaded from files, or managed in a Secret).
    certificate: Arc<tls::ReloadingCertificate>,
    metrics: Arc<Metrics>,
    authenticator: Authenticator,
    auditor: Option<Arc<Auditor>>,
    /// Ends the watches at shutdown.
    stopping: tokio_util::sync::CancellationToken,
}

/// Serves the `mounted` resources on `listener` until `shutdown` completes, then drains gracefully.
async fn serve(
    started: Started,
    mounted: resource::Mounted,
    options: ServerOptions,
    listener: std::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let certificate = started.certificate;
    let standalone = options.authentication.is_standalone();
    let callers = webhook_callers(&options.tls)?;
    let checks_callers = matches!(callers, WebhookAuthentication::ClientCertificate(_));
    let server_config = tls::server_config(certificate.clone(), !standalone || checks_callers)?;
    let limits = Limits::new(options.limits.max_inflight, options.limits.timeout.max(Duration::from_secs(1)));
    let mut metric_sources = mounted.sources;
    metric_sources.push(Arc::new(sources::Inflight(limits.clone())));
    metric_sources.push(Arc::new(sources::Certificate(certificate)));
    let mut served: Vec<&'static str> =
        mounted.versions.iter().flat_map(|(_, descriptors)| descriptors.iter().map(|d| d.info.plural)).collect();
    served.sort_unstable();
    served.dedup();
    let shared = Arc::new(Shared {
        identity: started.identity,
        discovery: Discovery::new(started.group, &mounted.versions),
        openapi: Documents::build(&started.identity, started.group, &mounted.versions),
        address: started.url.trim_start_matches("https://").to_string(),
        served: served.into(),
        metrics: started.metrics,
        sources: metric_sources,
    });
    let health = Arc::new(mounted.health);
    let gate = Gate {
        authenticator: started.authenticator,
        auditor: started.auditor.clone(),
        limits: limits.clone(),
        max_head_bytes: options.http.max_header_bytes,
    };
    let open = Open { health: health.clone(), metrics: options.anonymous_metrics };
    let app = router(mounted.routes, shared, open, gate, started.converter.map(|c| (c, callers)));
    let handle = axum_server::Handle::new();
    let drained = Drain {
        handle: handle.clone(),
        health,
        limits,
        stopping: started.stopping,
        delay: options.shutdown.delay,
        grace: options.shutdown.grace,
    };
    tokio::spawn(drain(shutdown, drained));
    tracing::info!(url = %started.url, standalone, "serving");
    let result = serve_tls(&options.http, listener, server_config, handle, app).await;
    if let Some(auditor) = started.auditor {
        auditor.stop().await;
    }
    result
}

/// Who may call the conversion webhook: the holders of certificates of the CA file configured,
/// or anyone.
fn webhook_callers(options: &TlsOptions) -> Result<WebhookAuthentication, StartError> {
    let Some(path) = &options.conversion_webhook_client_ca else { return Ok(WebhookAuthentication::Anyone) };
    let pem = std::fs::read_to_string(path).map_err(|e| {
        StartError::Tls(tls::Error::Pem(format!("reading the conversion webhook's client CA {}: {e}", path.display())))
    })?;
    match tls::ChainVerifier::new(&pem)? {
        Some(verifier) => Ok(WebhookAuthentication::ClientCertificate(Arc::new(verifier))),
        None => Err(StartError::Tls(tls::Error::Pem(format!("{} holds no certificate", path.display())))),
    }
}

/// Serves `app` over TLS on `listener` with the HTTP/1.1 and HTTP/2 limits of `http`, until
/// `handle` shuts it down.
async fn serve_tls(
    http: &HttpOptions,
    listener: std::net::TcpListener,
    server_config: Arc<rustls::ServerConfig>,
    handle: axum_server::Handle<SocketAddr>,
    app: Router,
) -> Result<(), StartError> {
    listener.set_nonblocking(true).map_err(StartError::Listener)?;
    let rustls = axum_server::tls_rustls::RustlsConfig::from_config(server_config);
    let acceptor = tls::PeerCertificateAcceptor { inner: axum_server::tls_rustls::RustlsAcceptor::new(rustls) };
    let mut server = axum_server::from_tcp(listener).map_err(StartError::Listener)?.acceptor(acceptor);
    server
        .http_builder()
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(http.header_read_timeout.max(Duration::from_secs(1)))
        // Twice the limit: hyper answers a head past its buffer with a bare 431, one past the limit
        // and within the buffer gets `limits::refuse_large_heads`'s Status.
        .max_buf_size(http.max_header_bytes.saturating_mul(2).max(8192))
        .max_headers(http.max_headers);
    server
        .http_builder()
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        // Four times the limit: h2 closes the whole connection past its own limit, and answers a
        // bare 431 just below it; `limits::refuse_large_heads` answers the limit with a Status.
        .max_header_list_size(u32::try_from(http.max_header_bytes.saturating_mul(4)).unwrap_or(u32::MAX));
    let app = tower::ServiceExt::map_request(app, |request| legacy_watch_path(without_trailing_slashes(request)));
    server.handle(handle).serve(axum::ServiceExt::into_make_service(app)).await.map_err(StartError::Serve)
}

/// `request` with `path_and_query` in place of its own (unchanged if it does not parse).
fn with_path_and_query<B>(mut request: axum::http::Request<B>, path_and_query: &str) -> axum::http::Request<B> {
    let mut parts = request.uri().clone().into_parts();
    if let Ok(path_and_query) = path_and_query.parse() {
        parts.path_and_query = Some(path_and_query);
        if let Ok(uri) = axum::http::Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// `request` with a legacy watch path (`/apis/<group>/<version>/watch/...`, deprecated since
/// Kubernetes 1.11 and still served) as the watch it stands for: `watch=true` on the collection,
/// selecting the object by name when the path names one, as the kube-apiserver serves it.
fn legacy_watch_path<B>(request: axum::http::Request<B>) -> axum::http::Request<B> {
    let uri = request.uri();
    let segments: Vec<&str> = uri.path().split('/').collect();
    // ["", "apis", group, version, "watch", ...]
    if segments.len() < 6 || segments[1] != "apis" || segments[4] != "watch" {
        return request;
    }
    let rest = &segments[5..];
    let namespaced = rest.first() == Some(&"namespaces");
    let collection_len = if namespaced { 3 } else { 1 };
    let (collection, name) = match rest.len() {
        n if n == collection_len => (rest, None),
        n if n == collection_len + 1 => (&rest[..collection_len], Some(rest[collection_len])),
        _ => return request,
    };
    let mut query = vec!["watch=true".to_string()];
    if let Some(name) = name {
        // The segment as the client escaped it, decoded, then escaped again as a query value: a
        // `&`, `=` or `%26` in the name stays in the selector and adds no parameter.
        let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
        let selector = format!("metadata.name={name}");
        query.push(form_urlencoded::Serializer::new(String::new()).append_pair("fieldSelector", &selector).finish());
    }
    query.extend(uri.query().map(str::to_string));
    let rewritten = format!("{}/{}?{}", segments[..4].join("/"), collection.join("/"), query.join("&"));
    with_path_and_query(request, &rewritten)
}

/// `request` with the slashes that end its path removed, before routing: the kube-apiserver
/// serves `/apis/`, `.../widgets/` and `.../widgets/blue/` as the paths without them.
fn without_trailing_slashes<B>(request: axum::http::Request<B>) -> axum::http::Request<B> {
    let uri = request.uri();
    let path = uri.path();
    let trimmed = path.trim_end_matches('/');
    if trimmed.len() == path.len() || trimmed.is_empty() {
        return request;
    }
    let rewritten = match uri.query() {
        Some(query) => format!("{trimmed}?{query}"),
        None => trimmed.to_string(),
    };
    with_path_and_query(request, &rewritten)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(uri: &str) -> String {
        let request = axum::http::Request::builder().uri(uri).body(()).unwrap();
        legacy_watch_path(without_trailing_slashes(request)).uri().to_string()
    }

    #[test]
    fn legacy_watch_paths_are_watches_of_the_collection() {
        let gv = "/apis/example.com/v1alpha";
        for (path, served) in [
            ("/watch/widgets", "/widgets?watch=true"),
            ("/watch/namespaces/ns/widgets?labelSelector=a", "/namespaces/ns/widgets?watch=true&labelSelector=a"),
            (
                "/watch/namespaces/ns/widgets/blue/",
                "/namespaces/ns/widgets?watch=true&fieldSelector=metadata.name%3Dblue",
            ),
            ("/namespaces/ns/widgets/blue/", "/namespaces/ns/widgets/blue"),
            ("/watch/namespaces/ns/widgets/blue/status", "/watch/namespaces/ns/widgets/blue/status"),
            (
                "/watch/namespaces/ns/widgets/a&timeoutSeconds=9223372036854775807",
                "/namespaces/ns/widgets?watch=true&fieldSelector=metadata.name%3Da%26timeoutSeconds%3D9223372036854775807",
            ),
            ("/watch/widgets/a%26b%20c", "/widgets?watch=true&fieldSelector=metadata.name%3Da%26b+c"),
        ] {
            assert_eq!(rewritten(&format!("{gv}{path}")), format!("{gv}{served}"), "{path}");
        }
        assert_eq!(rewritten("/api/v1/watch/pods"), "/api/v1/watch/pods");
    }

    #[test]
    fn openapi_v2_is_protobuf_when_preferred_and_json_otherwise() {
        use crate::api::openapi_protobuf::{CLIENT_GO_MEDIA_TYPE, MEDIA_TYPE};
        let negotiated = |accept: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
            openapi_v2_media_type(&headers)
        };
        for (accept, answered) in [
            (CLIENT_GO_MEDIA_TYPE.to_string(), MEDIA_TYPE),
            (MEDIA_TYPE.to_string(), MEDIA_TYPE),
            (format!("application/json, {CLIENT_GO_MEDIA_TYPE}"), "application/json"),
            (format!("{CLIENT_GO_MEDIA_TYPE}, application/json"), MEDIA_TYPE),
            (format!("application/json;q=0.5, {CLIENT_GO_MEDIA_TYPE}"), MEDIA_TYPE),
            ("text/html, */*;q=0.1".to_string(), "application/json"),
            ("application/*".to_string(), "application/json"),
        ] {
            assert_eq!(negotiated(&accept).unwrap(), answered, "{accept}");
        }
        let refused = negotiated("application/vnd.kubernetes.protobuf").unwrap_err().to_string();
        assert!(refused.contains("application/json") && refused.contains(CLIENT_GO_MEDIA_TYPE), "{refused}");
    }
}
