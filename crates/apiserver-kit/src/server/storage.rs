//! The storage factory, after k8s.io/apiserver's `StorageFactory`: the configured backend is set
//! up once (memory, or etcd with its connection, readiness check and compactor), then gives
//! every resource mounted from it a store of its own type (over etcd, behind a watch cache).

use super::StartError;
use crate::health::{Check, Health};
use crate::machinery::resource::ApiResource;
use crate::store::etcd::{self, EtcdStore, cache::WatchCache, client::EtcdClient, connection::EtcdConfig};
use crate::store::{Revision, Store, memory::MemoryStore};
use std::sync::Arc;
use std::time::Duration;

/// How often the etcd TLS files are read again: a Secret mounted in a Pod changes within the
/// kubelet's sync period (a minute by default), so this adds little to a renewal's delay.
const TLS_RELOAD_INTERVAL: Duration = Duration::from_secs(10);

/// Where a server keeps the objects of the resources it stores.
#[derive(Clone, Debug, Default)]
pub enum StorageOptions {
    /// In the server's memory: lost when it stops, one replica only.
    #[default]
    Memory,
    /// In etcd, shared by every replica configured alike.
    Etcd {
        /// How to reach it, and the prefix of the server's keys.
        config: EtcdConfig,
        /// How often the server compacts etcd's history (`None`: never; someone else does).
        compaction_interval: Option<Duration>,
    },
}

impl StorageOptions {
    /// The options with an etcd prefix left empty made `/registry/<group>`, where the
    /// kube-apiserver keeps a CustomResourceDefinition's objects.
    pub fn with_default_prefix(&self, group: &str) -> Self {
        match self {
            Self::Etcd { config, compaction_interval } if config.prefix.is_empty() => Self::Etcd {
                config: EtcdConfig { prefix: format!("/registry/{group}"), ..config.clone() },
                compaction_interval: *compaction_interval,
            },
            other => other.clone(),
        }
    }
}

/// Where the stores of this run keep their objects.
pub enum StorageFactory {
    /// In this process: stores share one revision counter, as resources in one etcd share its
    /// revision.
    Memory {
        /// The revision every memory store draws from.
        revision: Arc<Revision>,
        /// Events each store keeps for watches and paged lists.
        history: usize,
    },
    /// In etcd, under `prefix`, shared with every replica configured alike.
    Etcd {
        /// The connection every store uses (boxed: it is much larger than the memory variant).
        client: Box<EtcdClient>,
        /// The key prefix of this server's objects.
        prefix: String,
        /// Events each watch cache keeps.
        history: usize,
        /// Stops the watch caches.
        stopping: tokio_util::sync::CancellationToken,
    },
}

impl StorageFactory {
    /// Sets up the backend `options` ask for, each store keeping `history` events for watches
    /// and paged lists. With etcd, also starts the compactor and adds the `etcd` readiness check
    /// to `health`.
    pub async fn new(
        options: &StorageOptions,
        history: usize,
        stopping: &tokio_util::sync::CancellationToken,
        health: Health,
    ) -> Result<(Self, Health), StartError> {
        let (config, compaction_interval) = match options {
            StorageOptions::Memory => {
                // Info, as "storing objects in etcd" is: a normal start logs no warning.
                tracing::info!(
                    "storing objects in this process's memory: a restart loses them all (storage in etcd keeps them)"
                );
                return Ok((Self::Memory { revision: Arc::default(), history }, health));
            }
            StorageOptions::Etcd { config, compaction_interval } => {
                let config = EtcdConfig { prefix: config.prefix.trim_end_matches('/').to_string(), ..config.clone() };
                (config, *compaction_interval)
            }
        };
        let client = etcd::connection::connect(&config).await.map_err(|e| StartError::Storage(e.to_string()))?;
        tracing::info!(endpoints = ?config.endpoints, prefix = config.prefix, "storing objects in etcd");
        let probe = format!("{}/health", config.prefix);
        let etcd_health = etcd::connection::monitor(client.clone(), probe, Duration::from_secs(1), stopping.clone());
        etcd::connection::reload_tls(client.clone(), config.clone(), TLS_RELOAD_INTERVAL, stopping.clone());
        if let Some(interval) = compaction_interval {
            let clock = format!("{}/compact_rev_key", config.prefix);
            etcd::compactor::start(client.clone(), clock, interval, stopping.clone());
        }
        let health = health.with_required("etcd", Arc::new(move || etcd_health.check()));
        let etcd = Self::Etcd { client: Box::new(client), prefix: config.prefix, history, stopping: stopping.clone() };
        Ok((etcd, health))
    }

    /// A store of `K` in this backend, and the readiness check it needs, if any: a watch cache
    /// over etcd is ready once it has listed the resource (until then every read goes to etcd).
    pub fn store<K: ApiResource>(&self) -> (Arc<dyn Store<K>>, Option<Check>) {
        match self {
            Self::Memory { revision, history } => (Arc::new(MemoryStore::<K>::new(revision.clone(), *history)), None),
            Self::Etcd { client, prefix, history, stopping } => {
                let etcd = EtcdStore::<K>::new((**client).clone(), prefix);
                let cache = WatchCache::start(etcd, *history, stopping);
                let ready = cache.readiness();
                (Arc::new(cache), Some(ready))
            }
        }
    }
}
