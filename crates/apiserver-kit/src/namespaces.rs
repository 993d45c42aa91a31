//! The cluster's Namespaces, for the namespace lifecycle of creates in aggregated mode
//! ([`crate::machinery::lifecycle`]), the `namespaceSelector` of admission webhooks and policies
//! and policies' `namespaceObject`: a kube-rs reflector keeps every Namespace in
//! memory, and a namespace the cache does not hold (not yet synced, or created a moment ago) is
//! looked up with one live GET before a create is refused, as the kube-apiserver's
//! `NamespaceLifecycle` plugin does, so a namespace created just before its first object is never
//! refused. The server's ServiceAccount needs get, list and watch on namespaces
//! (`manifests/base/rbac.yaml`).

use crate::machinery::error::GroupResource;
use crate::machinery::error::{Error, Result};
use crate::machinery::lifecycle::{NamespacePhase, Namespaces};
use crate::reflect::{Purpose, reflect};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef};
use std::collections::BTreeMap;
use tokio_util::sync::CancellationToken;

/// The resource of namespaces, for the 404 of a namespace that does not exist.
const NAMESPACES: GroupResource = GroupResource { group: "", resource: "namespaces" };

/// The Namespace cache and the client for its misses.
pub struct NamespaceCache {
    reader: reflector::Store<Namespace>,
    api: Api<Namespace>,
}

impl NamespaceCache {
    /// Starts watching the cluster's Namespaces until `stopping` is cancelled.
    pub fn start(client: kube::Client, stopping: CancellationToken) -> Self {
        let api: Api<Namespace> = Api::all(client);
        let purpose = Purpose {
            waiting: "each create and admission's selectors look their namespace up in the cluster until it can",
            keep_managed_fields: false,
        };
        let reader = reflect(api.clone(), (), stopping, purpose, || {});
        Self { reader, api }
    }
}

impl NamespaceCache {
    /// The labels of `namespace`, for admission webhooks' `namespaceSelector`: from the cache,
    /// else from one live GET; 404 when it does not exist.
    pub async fn labels(&self, namespace: &str) -> Result<BTreeMap<String, String>> {
        Ok(self.namespace(namespace).await?.metadata.labels.clone().unwrap_or_default())
    }

    /// The Namespace `namespace`, for admission policies' `namespaceObject`: from the cache,
    /// else from one live GET; 404 when it does not exist.
    pub async fn namespace(&self, namespace: &str) -> Result<std::sync::Arc<Namespace>> {
        if let Some(cached) = self.reader.get(&ObjectRef::new(namespace)) {
            return Ok(cached);
        }
        match self.api.get_opt(namespace).await {
            Ok(Some(found)) => Ok(std::sync::Arc::new(found)),
            Ok(None) => Err(Error::NotFound { resource: NAMESPACES, name: namespace.to_string() }),
            Err(err) => Err(Error::Internal(format!("looking up namespace {namespace:?} in the cluster: {err}"))),
        }
    }
}

/// A Namespace's phase; one whose deletion has begun counts as terminating even before the
/// namespace controller has written the phase.
fn phase_of(namespace: &Namespace) -> NamespacePhase {
    let phase = namespace.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase == Some("Terminating") || namespace.metadata.deletion_timestamp.is_some() {
        NamespacePhase::Terminating
    } else {
        NamespacePhase::Active
    }
}

#[async_trait::async_trait]
impl Namespaces for NamespaceCache {
    async fn phase(&self, namespace: &str) -> Result<Option<NamespacePhase>> {
        if let Some(cached) = self.reader.get(&ObjectRef::new(namespace)) {
            return Ok(Some(phase_of(&cached)));
        }
        match self.api.get_opt(namespace).await {
            Ok(found) => Ok(found.as_ref().map(phase_of)),
            Err(err) => Err(Error::Internal(format!("looking up namespace {namespace:?} in the cluster: {err}"))),
        }
    }
}
