//! Assembles the server: TLS material, authentication, the stores and registries of each
//! resource, discovery, OpenAPI and health, behind one axum router served by axum-server on a
//! rustls listener. Shutdown is graceful: readiness fails first (for the shutdown delay), the
//! listener closes, in-flight requests finish, then watches send what was committed and end;
//! connections still open after the grace period are closed.

use crate::admission::{client::Caller, configurations::Configurations, webhooks::Webhooks};
use crate::api::discovery::{self, Discovery};
use crate::api::handlers;
use crate::api::openapi::{Document, Documents};
use crate::api::registry::{Registry, WatchSettings};
use crate::audit::Auditor;
use crate::auth::delegated::{Delegated, DelegationSettings};
use crate::auth::{self, Authenticator};
use crate::config::{ServeArgs, StorageKind};
use crate::health::{self, Health};
use crate::limits::Limits;
use crate::machinery::error::Error as ApiError;
use crate::machinery::identity::Identity;
use crate::machinery::resource::ResourceDescriptor;
use crate::machinery::strategy::Strategy;
use crate::machinery::version::Served;
use crate::metrics::{Metrics, Sources};
use crate::namespaces::NamespaceCache;
use crate::resources::{farmpod, farmpod::FarmPod, llama, llama::Llama};
use crate::store::etcd::connection::EtcdConfig;
use crate::store::{Revision, memory::MemoryStore};
use crate::{kubeconfig, mirror, tls};
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::handler::Handler;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

mod metric_sources;
mod storage;
use metric_sources as sources;
use storage::{StorageFactory, StorageOptions};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
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
    /// Aggregated mode without a usable cluster configuration.
    #[error("no cluster configuration ({0}); pass --standalone to run without a cluster, or --kubeconfig")]
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

/// Loads the cluster configuration in aggregated mode; the client is used by later features
/// (Pod cache, delegated authentication), but a missing configuration is reported at start.
async fn cluster_config(args: &ServeArgs) -> Result<Option<kube::Config>, StartError> {
    if args.standalone && args.kubeconfig.is_none() {
        return Ok(None);
    }
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| StartError::Cluster(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| StartError::Cluster(e.to_string()))?
        }
        None => kube::Config::incluster().map_err(|e| StartError::Cluster(e.to_string()))?,
    };
    Ok(Some(config))
}

/// A GET-only route whose other methods get a 405 `Status`.
fn get_only<H, T>(handler: H) -> MethodRouter<Arc<Shared>>
where
    H: Handler<T, Arc<Shared>>,
    T: 'static,
{
    get(handler).fallback(|| async { ApiError::MethodNotAllowed })
}

/// Serves an OpenAPI document with its ETag, answering 304 to a matching `If-None-Match`.
fn serve_document(document: &Document, headers: &HeaderMap, cache_control: &'static str) -> Response {
    let etag = document.etag();
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = document.body.clone().into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
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

async fn openapi_v2(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Result<Response, ApiError> {
    accepts_json(&headers)?;
    Ok(serve_document(&s.openapi.v2, &headers, "no-cache, private"))
}

async fn openapi_v3_index(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Result<Response, ApiError> {
    accepts_json(&headers)?;
    Ok(serve_document(&s.openapi.v3_index, &headers, "no-cache, private"))
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
        None | Some("") => Ok(serve_document(document, &headers, "no-cache, private")),
        Some(hash) if hash == document.hash => {
            Ok(serve_document(document, &headers, "public, immutable, max-age=31536000"))
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

/// The versions of the group, the preferred first, with every resource the server can serve at
/// each (FarmPods need a cluster); the checked-in OpenAPI documents describe all of them.
pub fn all_resources() -> Vec<(&'static str, Vec<ResourceDescriptor>)> {
    vec![
        ("v1", vec![ResourceDescriptor::of::<llama::v1::Llama>(), ResourceDescriptor::of::<farmpod::v1::FarmPod>()]),
        (
            "v1alpha",
            vec![
                ResourceDescriptor::deprecated_for::<llama::v1::Llama, Llama>(),
                ResourceDescriptor::deprecated_for::<farmpod::v1::FarmPod, FarmPod>(),
            ],
        ),
    ]
}

/// The storage the command line asks for.
fn storage_options(args: &ServeArgs) -> StorageOptions {
    match args.storage {
        StorageKind::Memory => StorageOptions::Memory,
        StorageKind::Etcd => StorageOptions::Etcd {
            config: EtcdConfig {
                endpoints: args.etcd_endpoints.clone(),
                prefix: args.etcd_prefix.clone(),
                ca_file: args.etcd_cafile.clone(),
                client_cert: args.etcd_certfile.clone().zip(args.etcd_keyfile.clone()),
                request_timeout: Duration::from_secs(args.etcd_request_timeout_seconds.max(1)),
            },
            compaction_interval: (args.etcd_compaction_interval_seconds > 0)
                .then(|| Duration::from_secs(args.etcd_compaction_interval_seconds)),
        },
    }
}

fn watch_settings(
    args: &ServeArgs,
    stopping: &tokio_util::sync::CancellationToken,
    metrics: &Arc<Metrics>,
) -> WatchSettings {
    WatchSettings {
        stopping: stopping.clone(),
        metrics: metrics.clone(),
        buffer: args.watch_buffer_size,
        bookmark_interval: Duration::from_secs(args.watch_bookmark_interval_seconds.max(1)),
        min_request_timeout: Duration::from_secs(args.min_request_timeout_seconds.max(1)),
        ..WatchSettings::default()
    }
}

/// The resources this run serves: their routes, descriptors, readiness checks and metric sources.
struct Resources {
    routes: Router,
    /// The versions of the group, the preferred (the first added) first, with the resources
    /// served at each.
    versions: Vec<(&'static str, Vec<ResourceDescriptor>)>,
    health: Health,
    sources: Sources,
}

impl Resources {
    /// Serves the resource of `registry` at its storage version, `version`.
    fn add<K: Strategy>(&mut self, version: &'static str, registry: Registry<K>) -> Arc<Registry<K>> {
        debug_assert_eq!(K::version(&()), version);
        self.sources.push(Arc::new(sources::StoreSize(registry.store())));
        let registry = Arc::new(registry);
        self.serve::<K, K>(version, registry.clone(), ResourceDescriptor::of::<K>());
        registry
    }

    /// Serves the resource of `registry` at an older `version` too, `V`, deprecated.
    fn add_deprecated<K: Strategy, V: Served<K>>(&mut self, version: &'static str, registry: Arc<Registry<K>>) {
        debug_assert_eq!(V::version(&()), version);
        self.serve::<K, V>(version, registry, ResourceDescriptor::deprecated_for::<K, V>());
    }

    fn serve<K: Strategy, V: Served<K>>(
        &mut self,
        version: &'static str,
        registry: Arc<Registry<K>>,
        descriptor: ResourceDescriptor,
    ) {
        let routes = handlers::routes::<K, V>(registry, descriptor.deprecation.clone());
        self.routes = std::mem::take(&mut self.routes).merge(routes);
        match self.versions.iter_mut().find(|(v, _)| *v == version) {
            Some((_, descriptors)) => descriptors.push(descriptor),
            None => self.versions.push((version, vec![descriptor])),
        }
    }

    /// Llamas, stored at v1, served at v1alpha too.
    fn add_llamas(&mut self, registry: Registry<llama::v1::Llama>) {
        let registry = self.add("v1", registry.served_at::<Llama>());
        self.add_deprecated::<llama::v1::Llama, Llama>("v1alpha", registry);
    }

    /// FarmPods, from a Pod cache of the cluster at `server` started here.
    fn add_farm_pods(&mut self, args: &ServeArgs, server: String, client: kube::Client, settings: WatchSettings) {
        // FarmPods carry the Pods' resourceVersions, so their store has its own revision.
        let store =
            Arc::new(MemoryStore::<farmpod::v1::FarmPod>::new(Arc::new(Revision::default()), args.watch_history_size));
        let source = mirror::Source {
            name: POD_MIRROR.into(),
            project: farmpod::v1::FarmPod::project,
            client,
            server,
            namespace: args.pod_namespace.clone(),
            max_backoff: Duration::from_secs(args.pod_cache_max_backoff_seconds),
        };
        let cache = mirror::start(source, store.clone());
        self.sources.push(Arc::new(sources::MirrorCache {
            gauges: settings.metrics.mirror(POD_MIRROR),
            status: cache.status.clone(),
            store: store.clone(),
        }));
        self.add_farm_pods_registry(Registry::new(store, settings).with_readiness(cache.ready.clone()));
        let status = cache.status.clone();
        self.health =
            std::mem::take(&mut self.health).with_informational("pod-cache", Arc::new(move || status.check()));
    }

    /// FarmPods without a cluster (standalone, no kubeconfig): listed in discovery, as kubectl
    /// expects of a resource it is asked for, and every read answered with a 503 that says how
    /// to serve them.
    fn add_farm_pods_without_cluster(&mut self, args: &ServeArgs, settings: WatchSettings) {
        let store =
            Arc::new(MemoryStore::<farmpod::v1::FarmPod>::new(Arc::new(Revision::default()), args.watch_history_size));
        self.add_farm_pods_registry(Registry::new(store, settings).not_configured(FARM_PODS_NEED_A_CLUSTER));
    }

    fn add_farm_pods_registry(&mut self, registry: Registry<farmpod::v1::FarmPod>) {
        let registry = self.add("v1", registry.served_at::<FarmPod>());
        self.add_deprecated::<farmpod::v1::FarmPod, FarmPod>("v1alpha", registry);
    }
}

/// This program, as `/version`, OpenAPI, its CA, its kubeconfig and its metrics name it.
pub const IDENTITY: Identity = Identity::new("farm-apiserver", env!("CARGO_PKG_VERSION"));

/// The mirror of the cluster's Pods that feeds FarmPods (the `pod cache`).
const POD_MIRROR: &str = "pod";

/// What a read of FarmPods answers when the server has no cluster.
pub const FARM_PODS_NEED_A_CLUSTER: &str = "FarmPods are views of a cluster's Pods, and this server was started \
without a cluster: start it with --kubeconfig PATH (standalone too) or run it in the cluster";

/// The resources in the configured storage (one line each in the list below), and FarmPods: fed
/// by the Pod cache started here when there is a cluster, a 503 saying so when there is none.
/// With a cluster, creates of llamas obey its namespaces' lifecycle and writes of llamas go
/// through its admission webhooks.
async fn resources(
    args: &ServeArgs,
    cluster: Option<(kube::Config, kube::Client)>,
    stopping: &tokio_util::sync::CancellationToken,
    metrics: &Arc<Metrics>,
) -> Result<Resources, StartError> {
    let settings = watch_settings(args, stopping, metrics);
    let (storage, health) =
        StorageFactory::new(&storage_options(args), args.watch_history_size, stopping, Health::default()).await?;
    let mut served = Resources { routes: Router::new(), versions: Vec::new(), health, sources: Sources::new() };
    let mut llamas = Registry::new(storage.store::<llama::v1::Llama>(), settings.clone());
    if !args.managed_fields {
        llamas = llamas.without_managed_fields();
    }
    let Some((config, client)) = cluster else {
        served.add_llamas(llamas);
        served.add_farm_pods_without_cluster(args, settings);
        return Ok(served);
    };
    let namespaces = Arc::new(NamespaceCache::start(client.clone(), stopping.clone()));
    // Aggregated mode only: standalone, even with a kubeconfig for FarmPods, the server is not
    // part of the cluster's API, and its llamas must not wait for the cluster.
    if args.admission_webhooks && !args.standalone {
        let configurations = Configurations::start(client.clone(), stopping.clone());
        let webhooks = Webhooks::new(configurations, Caller::new(client.clone()), namespaces.clone());
        llamas = llamas.with_admission(Arc::new(webhooks));
    }
    served.add_llamas(llamas.with_namespaces(namespaces));
    served.add_farm_pods(args, config.cluster_url.to_string(), client, settings);
    Ok(served)
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

/// The whole router: health (open), then everything else behind `authenticator`; every request
/// observed (counted, timed, logged).
fn router(
    resource_routes: Router,
    shared: Arc<Shared>,
    health: Arc<Health>,
    authenticator: Authenticator,
    auditor: Option<Arc<Auditor>>,
    limits: Limits,
) -> Router {
    let metrics = shared.metrics.clone();
    let observed = metrics.clone();
    let served = shared.served.clone();
    let non_resource = group_routes(&shared)
        .route("/apis", get_only(|State(s): State<Arc<Shared>>, h: HeaderMap| async move { s.discovery.apis(&h) }))
        .route(
            "/api",
            get_only(|State(s): State<Arc<Shared>>, h: HeaderMap| async move { s.discovery.api(&h, &s.address) }),
        )
        .route("/version", get_only(|| async { discovery::version_info(&IDENTITY) }))
        .route("/openapi/v2", get_only(openapi_v2))
        .route("/openapi/v3", get_only(openapi_v3_index))
        .route("/metrics", get_only(metrics_text))
        .with_state(shared);
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
        // Outermost, so floods are refused before any authentication work.
        .layer(axum::middleware::from_fn(move |req, next| crate::limits::enforce(limits.clone(), req, next)))
        .layer(gate)
        // Outside the YAML answers: what is compressed is the body the client reads.
        .layer(axum::middleware::from_fn(crate::api::compression::answer));
    let protected =
        non_resource.merge(resource_routes).fallback(|| async { ApiError::PathNotFound }).layer(protected_layers);
    // The kube-apiserver calls conversion webhooks without credentials; the webhook reads
    // nothing stored.
    let webhook = crate::api::conversion_webhook::routes(crate::resources::llama::conversion::review_object);
    health::routes(health).merge(webhook).merge(protected).layer(axum::middleware::from_fn(move |req, next| {
        crate::observe::observe(observed.clone(), served.clone(), req, next)
    }))
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

/// Runs the server on `listener` until `shutdown` completes, then drains gracefully.
pub async fn run(
    args: ServeArgs,
    listener: std::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let certs = match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(cert), Some(key)) => tls::load(&cert.to_string_lossy(), &key.to_string_lossy())?,
        _ => tls::generate(&IDENTITY.ca_name(), &args.tls_sans)?,
    };
    let cluster = cluster_config(&args).await?;
    let local = listener.local_addr().map_err(StartError::Listener)?;
    let url = client_url(local);

    let metrics =
        Arc::new(Metrics::new(&IDENTITY.metric_prefix(), if cluster.is_some() { &[POD_MIRROR] } else { &[] }));
    let client = match &cluster {
        Some(config) => Some(kube::Client::try_from(config.clone()).map_err(|e| StartError::Cluster(e.to_string()))?),
        None => None,
    };
    let authenticator = authenticator(&args, client.as_ref(), &url, &certs.ca_pem, &metrics)?;

    let certificate = tls::ReloadingCertificate::new(&certs)?;
    if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_private_key_file) {
        let interval = Duration::from_secs(args.tls_reload_interval_seconds.max(1));
        certificate.watch_files(cert.to_string_lossy().into_owned(), key.to_string_lossy().into_owned(), interval);
    }
    let served_certificate = certificate.clone();
    let server_config = tls::server_config(certificate, !args.standalone)?;
    let limits = Limits::new(args.max_requests_inflight, Duration::from_secs(args.request_timeout_seconds.max(1)));
    let stopping = tokio_util::sync::CancellationToken::new();
    let served = resources(&args, cluster.zip(client), &stopping, &metrics).await?;
    let mut metric_sources = served.sources;
    metric_sources.push(Arc::new(sources::Inflight(limits.clone())));
    metric_sources.push(Arc::new(sources::Certificate(served_certificate)));
    let shared = Arc::new(Shared {
        discovery: Discovery::new(crate::resources::GROUP, &served.versions),
        openapi: Documents::build(&IDENTITY, crate::resources::GROUP, &served.versions),
        address: url.trim_start_matches("https://").to_string(),
        served: served.versions[0].1.iter().map(|d| d.info.plural).collect(),
        metrics,
        sources: metric_sources,
    });
    let health = Arc::new(served.health);
    let auditor = auditor(&args, &shared.metrics)?;
    let app = router(served.routes, shared, health.clone(), authenticator, auditor.clone(), limits.clone());

    let handle = axum_server::Handle::new();
    tokio::spawn(drain(
        shutdown,
        Drain {
            handle: handle.clone(),
            health,
            limits,
            stopping,
            delay: Duration::from_secs(args.shutdown_delay_seconds),
            grace: Duration::from_secs(args.shutdown_grace_seconds),
        },
    ));
    tracing::info!(%url, standalone = args.standalone, "serving");
    let served = serve_tls(&args, listener, server_config, handle, app).await;
    if let Some(auditor) = auditor {
        auditor.stop().await;
    }
    served
}

/// The audit log, when `--audit-policy-file` and `--audit-log-path` ask for one. As on the
/// kube-apiserver, one without the other records nothing (a warning says so).
fn auditor(args: &ServeArgs, metrics: &Arc<Metrics>) -> Result<Option<Arc<Auditor>>, StartError> {
    let (policy, path) = match (&args.audit_policy_file, &args.audit_log_path) {
        (None, None) => return Ok(None),
        (Some(policy), Some(path)) => (policy, path),
        (Some(_), None) => {
            tracing::warn!("--audit-policy-file without --audit-log-path: no audit events are written");
            return Ok(None);
        }
        (None, Some(_)) => {
            tracing::warn!("no --audit-policy-file: no audit events are written to --audit-log-path");
            return Ok(None);
        }
    };
    let limits = crate::audit::rotate::Limits {
        max_bytes: match args.audit_log_maxsize {
            0 => u64::MAX,
            megabytes => megabytes.saturating_mul(1024 * 1024),
        },
        max_backups: args.audit_log_maxbackup,
        max_age: Duration::from_secs(args.audit_log_maxage.saturating_mul(86_400)),
    };
    let auditor = Auditor::start(policy, path, limits, metrics.clone()).map_err(StartError::Audit)?;
    tracing::info!(policy = %policy.display(), path, "writing the audit log");
    Ok(Some(Arc::new(auditor)))
}

/// Who may call: the standalone bearer token (written into the kubeconfig when asked), or
/// delegation to the cluster.
fn authenticator(
    args: &ServeArgs,
    client: Option<&kube::Client>,
    url: &str,
    ca_pem: &str,
    metrics: &Arc<Metrics>,
) -> Result<Authenticator, StartError> {
    if args.standalone {
        let token = auth::random_token();
        if let Some(path) = &args.write_kubeconfig {
            kubeconfig::write(path, &kubeconfig::build(IDENTITY.name, url, ca_pem, &token))
                .map_err(|source| StartError::Kubeconfig { path: path.display().to_string(), source })?;
            tracing::info!(path = %path.display(), "wrote kubeconfig");
        }
        return Ok(Authenticator::BearerToken(token.into()));
    }
    let client = client.cloned().ok_or_else(|| StartError::Cluster("aggregated mode needs a cluster".into()))?;
    let settings = DelegationSettings {
        token_ttl: Duration::from_secs(args.authentication_token_cache_ttl_seconds),
        allowed_ttl: Duration::from_secs(args.authorization_allowed_cache_ttl_seconds),
        denied_ttl: Duration::from_secs(args.authorization_denied_cache_ttl_seconds),
        cache_size: 4096,
    };
    let delegated = Delegated::new(client, settings, metrics.clone());
    delegated.watch_config();
    Ok(Authenticator::Delegated(delegated))
}

/// Serves `app` over TLS on `listener` with the HTTP/1.1 and HTTP/2 limits of `args`, until
/// `handle` shuts it down.
async fn serve_tls(
    args: &ServeArgs,
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
        .header_read_timeout(Duration::from_secs(args.header_read_timeout_seconds.max(1)))
        .max_buf_size(args.max_header_bytes.max(8192))
        .max_headers(args.max_headers);
    server
        .http_builder()
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_header_list_size(u32::try_from(args.max_header_bytes).unwrap_or(u32::MAX));
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
        query.push(format!("fieldSelector=metadata.name%3D{name}"));
    }
    query.extend(uri.query().map(str::to_string));
    let rewritten = format!("{}/{}?{}", segments[..4].join("/"), collection.join("/"), query.join("&"));
    with_path_and_query(request, &rewritten)
}

/// `request` with the slashes that end its path removed, before routing: the kube-apiserver
/// serves `/apis/`, `.../llamas/` and `.../llamas/dolly/` as the paths without them.
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
        let gv = "/apis/farm.example.com/v1alpha";
        for (path, served) in [
            ("/watch/llamas", "/llamas?watch=true"),
            ("/watch/namespaces/ns/llamas?labelSelector=a", "/namespaces/ns/llamas?watch=true&labelSelector=a"),
            (
                "/watch/namespaces/ns/llamas/dolly/",
                "/namespaces/ns/llamas?watch=true&fieldSelector=metadata.name%3Ddolly",
            ),
            ("/namespaces/ns/llamas/dolly/", "/namespaces/ns/llamas/dolly"),
            ("/watch/namespaces/ns/llamas/dolly/status", "/watch/namespaces/ns/llamas/dolly/status"),
        ] {
            assert_eq!(rewritten(&format!("{gv}{path}")), format!("{gv}{served}"), "{path}");
        }
        assert_eq!(rewritten("/api/v1/watch/pods"), "/api/v1/watch/pods");
    }
}
