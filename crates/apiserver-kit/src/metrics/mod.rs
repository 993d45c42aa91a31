//! Prometheus metrics, served at `/metrics` (behind authentication and authorization like every
//! other non-resource path) in the OpenMetrics text format through the `prometheus-client` crate.
//!
//! Names follow the kube-apiserver's where one exists (`apiserver_request_total`,
//! `apiserver_request_duration_seconds`, `apiserver_current_inflight_requests`,
//! `apiserver_longrunning_requests`, `apiserver_storage_objects`,
//! `apiserver_terminated_watchers_total`, `authentication_attempts`, …), so dashboards and
//! alerts written for Kubernetes API servers work unchanged; the rest are `<prefix>_*` (from the server's `Identity`).
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
    /// The resource (`widgets`), empty for non-resource paths.
    pub resource: &'static str,
    /// The HTTP status code.
    pub code: u16,
}

/// Labels of a request whose handler panicked.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PanicLabels {
    /// The verb, as [`RequestLabels::verb`].
    pub verb: &'static str,
    /// The resource, empty for non-resource paths.
    pub resource: &'static str,
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

/// A label naming the part of the audit pipeline that lost an event.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabel {
    /// `buffered` (the queue was full) or `log` (the write failed).
    pub plugin: &'static str,
}

/// A label naming an audit level.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LevelLabel {
    /// `None`, `Metadata`, `Request` or `RequestResponse`.
    pub level: &'static str,
}

/// A float gauge.
pub type FloatGauge = Gauge<f64, AtomicU64>;

/// Buckets of `apiserver_request_duration_seconds`, the kube-apiserver's.
const DURATION_BUCKETS: [f64; 21] =
    [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0];

/// Every metric of the server.
pub struct Metrics {
    /// What the server's own metrics' names start with (`widget_apiserver`).
    prefix: String,
    registry: Registry,
    /// Requests served, by verb, resource and code.
    pub requests: Family<RequestLabels, Counter>,
    /// Time to the response head, by verb, resource and code.
    pub request_duration: Family<RequestLabels, Histogram>,
    /// Requests in flight now (watches excluded).
    pub inflight: Gauge,
    /// Requests whose handler panicked (each answered 500), by verb and resource.
    pub request_panics: Family<PanicLabels, Counter>,
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
    /// Watches held open on etcd, by resource.
    pub storage_watches: Family<ResourceLabel, Gauge>,
    /// Objects read and tested by lists served from memory, by resource.
    pub list_evaluated: Family<ResourceLabel, Counter>,
    /// The gauges of each mirror of the cluster's objects, by the mirror's name.
    mirrors: Vec<(String, MirrorGauges)>,
    /// Authentication outcomes: `success`, `failure`, `error`.
    pub authentication: Family<ResultLabel, Counter>,
    /// Authorization decisions: `allowed`, `denied`, `error`.
    pub authorization: Family<ResultLabel, Counter>,
    /// TokenReview cache lookups: `hit`, `miss`.
    pub token_cache: Family<ResultLabel, Counter>,
    /// SubjectAccessReview cache lookups: `hit`, `miss`.
    pub authorization_cache: Family<ResultLabel, Counter>,
    /// Audit events generated (handed to the audit log).
    pub audit_events: Counter,
    /// Audit events lost: dropped from a full queue (`buffered`) or not written (`log`).
    pub audit_errors: Family<PluginLabel, Counter>,
    /// Audit policy decisions, by level.
    pub audit_levels: Family<LevelLabel, Counter>,
    /// When the serving certificate expires (Unix seconds).
    pub certificate_expiry: FloatGauge,
    /// Resident memory.
    pub resident_memory: Gauge,
    /// Bytes the allocator has handed out and not taken back.
    pub heap_allocated: Gauge,
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

/// Metrics of no server in particular (settings built without one: tests), named `server_*`.
impl Default for Metrics {
    fn default() -> Self {
        Self::new("server", &[])
    }
}

/// The state of one mirror of the cluster's objects.
#[derive(Clone, Debug, Default)]
pub struct MirrorGauges {
    /// 1 once the mirror holds the cluster's objects.
    pub synced: Gauge,
    /// The objects it holds.
    pub objects: Gauge,
    /// Seconds since it last heard from the cluster.
    pub last_event_age: FloatGauge,
}

impl Metrics {
    /// Every metric, registered, at zero, the server's own named after `prefix`
    /// (`widget_apiserver` → `widget_apiserver_storage_watches`), with the gauges of each mirror of
    /// the cluster's objects in `mirrors` (`pod` → `widget_apiserver_pod_cache_synced`, …).
    pub fn new(prefix: &str, mirrors: &[&str]) -> Self {
        let mut metrics = Self::unregistered(prefix);
        metrics.register_requests();
        metrics.register_watches_and_storage();
        for mirror in mirrors {
            metrics.register_mirror(mirror);
        }
        metrics.register_auth();
        metrics.register_process();
        metrics
    }

    /// Every metric at zero, none registered yet.
    fn unregistered(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_string(),
            registry: Registry::default(),
            requests: Family::default(),
            request_duration: Family::new_with_constructor((|| Histogram::new(DURATION_BUCKETS)) as fn() -> Histogram),
            inflight: Gauge::default(),
            request_panics: Family::default(),
            watches: Family::default(),
            watch_events: Family::default(),
            watchers_dropped: Family::default(),
            storage_objects: Family::default(),
            watch_history: Family::default(),
            storage_watches: Family::default(),
            list_evaluated: Family::default(),
            mirrors: Vec::new(),
            authentication: Family::default(),
            authorization: Family::default(),
            token_cache: Family::default(),
            authorization_cache: Family::default(),
            audit_events: Counter::default(),
            audit_errors: Family::default(),
            audit_levels: Family::default(),
            certificate_expiry: FloatGauge::default(),
            resident_memory: Gauge::default(),
            heap_allocated: Gauge::default(),
            cpu_seconds: Counter::default(),
            open_fds: Gauge::default(),
            max_fds: Gauge::default(),
            start_time: FloatGauge::default(),
        }
    }

    fn register_requests(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "apiserver_request",
            "Requests served, by verb, resource and HTTP code",
            self.requests.clone(),
        );
        registry.register_with_unit(
            "apiserver_request_duration",
            "Time from a request's arrival to its response head, by verb, resource and HTTP code",
            Unit::Seconds,
            self.request_duration.clone(),
        );
        registry.register(
            "apiserver_current_inflight_requests",
            "Requests being served now (watches excluded), limited by the server's maximum in flight",
            self.inflight.clone(),
        );
        registry.register(
            format!("{}_request_panics", self.prefix),
            "Requests whose handler panicked, each answered with a 500 Status, by verb and resource",
            self.request_panics.clone(),
        );
    }

    fn register_watches_and_storage(&mut self) {
        let registry = &mut self.registry;
        registry.register("apiserver_longrunning_requests", "Open watches, by resource", self.watches.clone());
        registry.register("apiserver_watch_events", "Watch events sent, by resource", self.watch_events.clone());
        registry.register(
            "apiserver_terminated_watchers",
            "Watchers dropped because they fell behind (their buffer filled), by resource",
            self.watchers_dropped.clone(),
        );
        registry.register("apiserver_storage_objects", "Objects stored, by resource", self.storage_objects.clone());
        registry.register(
            format!("{}_watch_history_events", self.prefix),
            "Events kept in memory for watches, paging and exact reads, by resource",
            self.watch_history.clone(),
        );
        registry.register(
            format!("{}_storage_watches", self.prefix),
            "Watches held open on etcd, by resource: one per resource (the watch cache's), whatever the number of watchers",
            self.storage_watches.clone(),
        );
        registry.register(
            "apiserver_cache_list_evaluated_objects",
            "Objects read and tested in the course of serving LISTs from memory (the store or the watch cache), by resource: a page's cost",
            self.list_evaluated.clone(),
        );
    }

    fn register_mirror(&mut self, mirror: &str) {
        let gauges = MirrorGauges::default();
        let (registry, name) = (&mut self.registry, format!("{}_{mirror}_cache", self.prefix));
        registry.register(
            format!("{name}_synced"),
            format!("1 when the {mirror} cache holds the cluster's objects, 0 before"),
            gauges.synced.clone(),
        );
        registry.register(format!("{name}_objects"), format!("Objects in the {mirror} cache"), gauges.objects.clone());
        registry.register_with_unit(
            format!("{name}_last_event_age"),
            format!("Time since the {mirror} cache last heard from the cluster (a list, an event or a bookmark)"),
            Unit::Seconds,
            gauges.last_event_age.clone(),
        );
        self.mirrors.push((mirror.to_string(), gauges));
    }

    /// The gauges of the mirror called `name` (registered by [`Metrics::new`]); unregistered
    /// ones for another name.
    pub fn mirror(&self, name: &str) -> MirrorGauges {
        self.mirrors.iter().find(|(n, _)| n == name).map(|(_, g)| g.clone()).unwrap_or_default()
    }

    fn register_auth(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "apiserver_audit_event",
            "Audit events generated and sent to the audit log",
            self.audit_events.clone(),
        );
        registry.register(
            "apiserver_audit_error",
            "Audit events lost: dropped from the full queue (plugin=buffered) or not written (plugin=log)",
            self.audit_errors.clone(),
        );
        registry.register("apiserver_audit_level", "Audit policy decisions, by level", self.audit_levels.clone());
        registry.register(
            "authentication_attempts",
            "Authentication attempts by result: success, failure (no valid credential) or error",
            self.authentication.clone(),
        );
        registry.register(
            format!("{}_authorization_decisions", self.prefix),
            "Authorization decisions by result: allowed, denied or error (aggregated mode)",
            self.authorization.clone(),
        );
        registry.register(
            format!("{}_token_review_cache_lookups", self.prefix),
            "TokenReview cache lookups by result: hit or miss (aggregated mode)",
            self.token_cache.clone(),
        );
        registry.register(
            format!("{}_subject_access_review_cache_lookups", self.prefix),
            "SubjectAccessReview cache lookups by result: hit or miss (aggregated mode)",
            self.authorization_cache.clone(),
        );
    }

    /// The serving certificate and the process.
    fn register_process(&mut self) {
        let registry = &mut self.registry;
        registry.register_with_unit(
            format!("{}_serving_certificate_expiration_timestamp", self.prefix),
            "When the serving certificate in use expires, in Unix time",
            Unit::Seconds,
            self.certificate_expiry.clone(),
        );
        registry.register_with_unit(
            "process_resident_memory",
            "Resident memory size",
            Unit::Bytes,
            self.resident_memory.clone(),
        );
        #[cfg(feature = "jemalloc")]
        registry.register_with_unit(
            format!("{}_heap_allocated", self.prefix),
            "Memory in use: what the allocator (jemalloc) has handed out and not taken back, without the freed pages it keeps for reuse",
            Unit::Bytes,
            self.heap_allocated.clone(),
        );
        registry.register_with_unit(
            "process_cpu",
            "User and system CPU time spent",
            Unit::Seconds,
            self.cpu_seconds.clone(),
        );
        registry.register("process_open_fds", "Open file descriptors", self.open_fds.clone());
        registry.register("process_max_fds", "The limit of open file descriptors", self.max_fds.clone());
        registry.register_with_unit(
            "process_start_time",
            "When the process started, in Unix time",
            Unit::Seconds,
            self.start_time.clone(),
        );
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
        // jemalloc's statistics are refreshed by advancing its epoch.
        #[cfg(feature = "jemalloc")]
        if tikv_jemalloc_ctl::epoch::advance().is_ok()
            && let Ok(allocated) = tikv_jemalloc_ctl::stats::allocated::read()
        {
            self.heap_allocated.set(i64::try_from(allocated).unwrap_or(i64::MAX));
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
