//! The state read at each scrape: requests in flight, the stores' sizes, the Pod cache, the
//! serving certificate.

use crate::limits::Limits;
use crate::machinery::resource::ApiResource;
use crate::metrics::{Metrics, MirrorGauges, Source};
use crate::mirror::CacheStatus;
use crate::store::Store;
use crate::store::memory::MemoryStore;
use crate::tls::ReloadingCertificate;
use std::sync::Arc;

/// Requests in flight, from the limiter that counts them.
pub struct Inflight(pub Limits);

#[async_trait::async_trait]
impl Source for Inflight {
    async fn read(&self, metrics: &Metrics) {
        metrics.inflight.set(i64::try_from(self.0.in_flight()).unwrap_or(i64::MAX));
    }
}

/// The sizes of one resource's store.
pub struct StoreSize<K: ApiResource>(pub Arc<dyn Store<K>>);

#[async_trait::async_trait]
impl<K: ApiResource> Source for StoreSize<K> {
    async fn read(&self, metrics: &Metrics) {
        let label = Metrics::resource(K::info().plural);
        match self.0.stats().await {
            Ok(stats) => {
                metrics.storage_objects.get_or_create(&label).set(i64::try_from(stats.objects).unwrap_or(i64::MAX));
                if let Some(history) = stats.history {
                    metrics.watch_history.get_or_create(&label).set(i64::try_from(history).unwrap_or(i64::MAX));
                }
                if let Some(watches) = stats.storage_watches {
                    metrics.storage_watches.get_or_create(&label).set(i64::try_from(watches).unwrap_or(i64::MAX));
                }
                if let Some(evaluated) = stats.list_evaluated {
                    count_up_to(&metrics.list_evaluated.get_or_create(&label), evaluated);
                }
                if let Some(dropped) = stats.watchers_dropped {
                    count_up_to(&metrics.watchers_dropped.get_or_create(&label), dropped);
                }
            }
            // Storage unreachable: the last value stays; readiness and request errors say why.
            Err(error) => tracing::debug!(%error, resource = K::info().plural, "no store sizes for this scrape"),
        }
    }
}

/// Moves `counter` up to `total`, what a store counted so far: the store's source alone moves it.
fn count_up_to(counter: &prometheus_client::metrics::counter::Counter, total: u64) {
    counter.inc_by(total.saturating_sub(counter.get()));
}

/// A mirror's state.
pub struct MirrorCache<K> {
    /// Its gauges.
    pub gauges: MirrorGauges,
    /// Sync state and when the cluster last answered.
    pub status: Arc<CacheStatus>,
    /// The view's objects it holds.
    pub store: Arc<MemoryStore<K>>,
}

#[async_trait::async_trait]
impl<K: ApiResource> Source for MirrorCache<K> {
    async fn read(&self, metrics: &Metrics) {
        self.gauges.synced.set(i64::from(self.status.synced()));
        let stats = self.store.stats();
        self.gauges.objects.set(i64::try_from(stats.objects).unwrap_or(i64::MAX));
        if let Some(dropped) = stats.watchers_dropped {
            count_up_to(&metrics.watchers_dropped.get_or_create(&Metrics::resource(K::info().plural)), dropped);
        }
        if let Some(age) = self.status.last_heard_age() {
            self.gauges.last_event_age.set(age.as_secs_f64());
        }
    }
}

/// The serving certificate's expiry.
pub struct Certificate(pub Arc<ReloadingCertificate>);

#[async_trait::async_trait]
impl Source for Certificate {
    async fn read(&self, metrics: &Metrics) {
        if let Some(not_after) = self.0.not_after() {
            metrics.certificate_expiry.set(not_after as f64);
        }
    }
}
