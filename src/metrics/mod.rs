//! Prometheus metrics, served at `/metrics` (behind authentication and authorization like every
//! other non-resource path) in the OpenMetrics text format through the `prometheus-client` crate.
//!
//! Names follow the kube-apiserver's where one exists (`apiserver_request_total`,
//! `apiserver_request_duration_seconds`, `apiserver_current_inflight_requests`,
//! `apiserver_longrunning_requests`, `apiserver_storage_objects`,
//! `apiserver_terminated_watchers_total`, `authentication_attempts`, …), so dashboards and
//! alerts written for Kubernetes API servers work unchanged; the rest are `farm_apiserver_*`.
//!
//! Counters and histograms move as things happen; gauges of state held elsewhere (requests in
//! flight, store sizes, the Pod cache, the serving certificate, the process) are read when
//! scraped, from the [`Sources`] registered at start.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// Labels of one served request. Static strings and a number: counting a request allocates
/// nothing.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The kube-apiserver's verb label: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`,
    /// `DELETE`, `DELETECOLLECTION` for resources; the HTTP method otherwise.
    pub verb: &'static str,
    /// The resource (`llamas`, `farmpods`), empty for non-resource paths.
    pub resource: &'static str,
    /// The HTTP status code.
    pub code: u16,
}

/// A label naming a resource.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabel {
    /// The resource.
    pub resource: &'static str,
}

/// A label naming an outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    /// The outcome.
    pub result: &'static str,
}

/// A float gauge.
pub type FloatGauge = Gauge<f64, AtomicU64>;

/// Buckets of `apiserver_request_duration_seconds`, the kube-apiserver's.
const DURATION_BUCKETS: [f64; 21] =
    [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0];

/// Every metric of the server.
pub struct Metrics {
    registry: Registry,
    /// Requests served, by verb, resource and code.
    pub requests: Family<RequestLabels, Counter>,
    /// Time to the response head, by verb, resource and code.
    pub request_duration: Family<RequestLabels, Histogram>,
    /// Requests in flight now (watches excluded).
    pub inflight: Gauge,
    /// Open watches by resource.
    pub watches: Family<ResourceLabel, Gauge>,
    /// Watch events sent, by resource.
    pub watch_events: Family<ResourceLabel, Counter>,
    /// Watchers dropped for falling behind, by resource.
    pub watchers_dropped: Family<ResourceLabel, Counter>,
    /// Objects stored, by resource.
    pub storage_objects: Family<ResourceLabel, Gauge>,
    /// Events held for watches and paging (memory storage), by resource.
    pub watch_history: Family<ResourceLabel, Gauge>,
    /// 1 when the Pod cache has synced with the cluster.
    pub pod_cache_synced: Gauge,
    /// FarmPods in the cache.
    pub pod_cache_objects: Gauge,
    /// Seconds since the Pod cache last heard from the cluster.
    pub pod_cache_last_event_age: FloatGauge,
    /// Authentication outcomes: `success`, `failure`, `error`.
    pub authentication: Family<ResultLabel, Counter>,
    /// Authorization decisions: `allowed`, `denied`, `error`.
    pub authorization: Family<ResultLabel, Counter>,
    /// TokenReview cache lookups: `hit`, `miss`.
    pub token_cache: Family<ResultLabel, Counter>,
    /// SubjectAccessReview cache lookups: `hit`, `miss`.
    pub authorization_cache: Family<ResultLabel, Counter>,
    /// When the serving certificate expires (Unix seconds).
    pub certificate_expiry: FloatGauge,
    /// Resident memory.
    pub resident_memory: Gauge,
    /// CPU time used.
    pub cpu_seconds: Counter<f64, AtomicU64>,
    /// Open file descriptors.
    pub open_fds: Gauge,
    /// The open file descriptor limit.
    pub max_fds: Gauge,
    /// When the process started (Unix seconds).
    pub start_time: FloatGauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(false)
    }
}

impl Metrics {
    /// Every metric, registered, at zero; the Pod cache's only when there is one.
    pub fn new(pod_cache: bool) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register("apiserver_request", "Requests served, by verb, resource and HTTP code", requests.clone());
        let request_duration = Family::<RequestLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(DURATION_BUCKETS)) as fn() -> Histogram,
        );
        registry.register_with_unit(
            "apiserver_request_duration",
            "Time from a request's arrival to its response head, by verb, resource and HTTP code",
            Unit::Seconds,
            request_duration.clone(),
        );
        let inflight = Gauge::default();
        registry.register(
            "apiserver_current_inflight_requests",
            "Requests being served now (watches excluded), limited by --max-requests-inflight",
            inflight.clone(),
        );
        let watches = Family::<ResourceLabel, Gauge>::default();
        registry.register("apiserver_longrunning_requests", "Open watches, by resource", watches.clone());
        let watch_events = Family::<ResourceLabel, Counter>::default();
        registry.register("apiserver_watch_events", "Watch events sent, by resource", watch_events.clone());
        let watchers_dropped = Family::<ResourceLabel, Counter>::default();
        registry.register(
            "apiserver_terminated_watchers",
            "Watchers dropped because they fell behind (their buffer filled), by resource",
            watchers_dropped.clone(),
        );
        let storage_objects = Family::<ResourceLabel, Gauge>::default();
        registry.register("apiserver_storage_objects", "Objects stored, by resource", storage_objects.clone());
        let watch_history = Family::<ResourceLabel, Gauge>::default();
        registry.register(
            "farm_apiserver_watch_history_events",
            "Events kept in memory for watches, paging and exact reads, by resource",
            watch_history.clone(),
        );
        let pod_cache_synced = Gauge::default();
        let pod_cache_objects = Gauge::default();
        let pod_cache_last_event_age = FloatGauge::default();
        if pod_cache {
            registry.register(
                "farm_apiserver_pod_cache_synced",
                "1 when the Pod cache holds the cluster's Pods, 0 before",
                pod_cache_synced.clone(),
            );
            registry.register(
                "farm_apiserver_pod_cache_objects",
                "FarmPods in the Pod cache",
                pod_cache_objects.clone(),
            );
            registry.register_with_unit(
                "farm_apiserver_pod_cache_last_event_age",
                "Time since the Pod cache last heard from the cluster (a list, an event or a bookmark)",
                Unit::Seconds,
                pod_cache_last_event_age.clone(),
            );
        }
        let authentication = Family::<ResultLabel, Counter>::default();
        registry.register(
            "authentication_attempts",
            "Authentication attempts by result: success, failure (no valid credential) or error",
            authentication.clone(),
        );
        let authorization = Family::<ResultLabel, Counter>::default();
        registry.register(
            "farm_apiserver_authorization_decisions",
            "Authorization decisions by result: allowed, denied or error (aggregated mode)",
            authorization.clone(),
        );
        let token_cache = Family::<ResultLabel, Counter>::default();
        registry.register(
            "farm_apiserver_token_review_cache_lookups",
            "TokenReview cache lookups by result: hit or miss (aggregated mode)",
            token_cache.clone(),
        );
        let authorization_cache = Family::<ResultLabel, Counter>::default();
        registry.register(
            "farm_apiserver_subject_access_review_cache_lookups",
            "SubjectAccessReview cache lookups by result: hit or miss (aggregated mode)",
            authorization_cache.clone(),
        );
        let certificate_expiry = FloatGauge::default();
        registry.register_with_unit(
            "farm_apiserver_serving_certificate_expiration_timestamp",
            "When the serving certificate in use expires, in Unix time",
            Unit::Seconds,
            certificate_expiry.clone(),
        );
        let resident_memory = Gauge::default();
        registry.register_with_unit(
            "process_resident_memory",
            "Resident memory size",
            Unit::Bytes,
            resident_memory.clone(),
        );
        let cpu_seconds = Counter::<f64, AtomicU64>::default();
        registry.register_with_unit(
            "process_cpu",
            "User and system CPU time spent",
            Unit::Seconds,
            cpu_seconds.clone(),
        );
        let open_fds = Gauge::default();
        registry.register("process_open_fds", "Open file descriptors", open_fds.clone());
        let max_fds = Gauge::default();
        registry.register("process_max_fds", "The limit of open file descriptors", max_fds.clone());
        let start_time = FloatGauge::default();
        registry.register_with_unit(
            "process_start_time",
            "When the process started, in Unix time",
            Unit::Seconds,
            start_time.clone(),
        );
        Self {
            registry,
            requests,
            request_duration,
            inflight,
            watches,
            watch_events,
            watchers_dropped,
            storage_objects,
            watch_history,
            pod_cache_synced,
            pod_cache_objects,
            pod_cache_last_event_age,
            authentication,
            authorization,
            token_cache,
            authorization_cache,
            certificate_expiry,
            resident_memory,
            cpu_seconds,
            open_fds,
            max_fds,
            start_time,
        }
    }

    /// Counts one `result` in `family`.
    pub fn count(family: &Family<ResultLabel, Counter>, result: &'static str) {
        family.get_or_create(&ResultLabel { result }).inc();
    }

    /// The label of `resource`.
    pub fn resource(resource: &'static str) -> ResourceLabel {
        ResourceLabel { resource }
    }

    /// The registry in the text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    /// Reads the process's own figures from `/proc/self`.
    pub fn read_process(&self) {
        let Ok(me) = procfs::process::Process::myself() else { return };
        if let Ok(stat) = me.stat() {
            let ticks = procfs::ticks_per_second() as f64;
            // A counter only moves forward: add what was used since the last scrape.
            let used = (stat.utime + stat.stime) as f64 / ticks;
            let counted = self.cpu_seconds.get();
            if used > counted {
                self.cpu_seconds.inc_by(used - counted);
            }
            let page = procfs::page_size();
            self.resident_memory.set(i64::try_from(stat.rss.saturating_mul(page)).unwrap_or(i64::MAX));
            if let Ok(boot) = procfs::boot_time_secs() {
                self.start_time.set(boot as f64 + stat.starttime as f64 / ticks);
            }
        }
        if let Ok(count) = me.fd_count() {
            self.open_fds.set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        if let Ok(limits) = me.limits() {
            let max = match limits.max_open_files.soft_limit {
                procfs::process::LimitValue::Value(v) => i64::try_from(v).unwrap_or(i64::MAX),
                procfs::process::LimitValue::Unlimited => i64::MAX,
            };
            self.max_fds.set(max);
        }
    }
}

/// A source of gauges read at scrape time.
#[async_trait::async_trait]
pub trait Source: Send + Sync {
    /// Sets the gauges this source owns in `metrics`.
    async fn read(&self, metrics: &Metrics);
}

/// The sources read at every scrape.
pub type Sources = Vec<Arc<dyn Source>>;

/// Refreshes every scrape-time gauge, then encodes.
pub async fn scrape(metrics: &Metrics, sources: &Sources) -> Result<String, std::fmt::Error> {
    metrics.read_process();
    for source in sources {
        source.read(metrics).await;
    }
    metrics.encode()
}
