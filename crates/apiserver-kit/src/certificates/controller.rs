//! The loop that keeps the Secret, the APIServices and the listener in step: read the Secret
//! and the APIServices' caBundles, write what [`plan::decide`] says (a conflict with another
//! replica's write just means reading again), publish the Secret's bundle in each APIService,
//! serve the Secret's certificate; then sleep until something falls due, the Secret changes or
//! the resync period ends.

use super::material::Material;
use super::plan::{self, Decision, Policy};
use crate::tls::ReloadingCertificate;
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Errors of one pass.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster refused or failed a request.
    #[error("{what}: {source}")]
    Cluster {
        /// Which request.
        what: String,
        /// Why.
        source: kube::Error,
    },
    /// A certificate could not be made or served.
    #[error(transparent)]
    Tls(#[from] crate::tls::Error),
}

/// Everything one manager works with.
pub struct Manager {
    /// The Secret's namespace.
    pub secrets: Api<Secret>,
    /// The APIServices (cluster-scoped).
    pub apiservices: Api<DynamicObject>,
    /// The Secret's name.
    pub secret: String,
    /// The APIServices whose caBundle this manager writes.
    pub apiservice_names: Vec<String>,
    /// What the certificates must be.
    pub policy: Policy,
    /// The listener's certificate.
    pub certificate: Arc<ReloadingCertificate>,
    /// Set once the Secret's certificate is served.
    pub serving: Arc<AtomicBool>,
    /// The field manager of the APIServices' caBundle.
    pub field_manager: String,
    /// The longest sleep between two passes.
    pub resync: Duration,
}

/// The resource of APIServices, which k8s-openapi does not carry.
pub fn apiservice_resource() -> ApiResource {
    let gvk = kube::api::GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService");
    ApiResource::from_gvk_with_plural(&gvk, "apiservices")
}

impl Manager {
    /// Runs passes until `stopping`, woken by changes of the Secret.
    pub async fn run(self, stopping: tokio_util::sync::CancellationToken) {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.secret));
        let mut changes = watcher(self.secrets.clone(), config).default_backoff().boxed();
        let (mut failures, mut writes) = (0u32, 0u32);
        loop {
            let wait = match self.pass().await {
                // A write is read back at once; writes without end would be a bug of the plan
                // (it never agreeing with what it wrote): they wait, and say so.
                Ok(wait) if wait.is_zero() => {
                    writes += 1;
                    if writes <= 5 {
                        continue;
                    }
                    tracing::error!(secret = %self.secret, writes, "the certificates are written again and again");
                    self.resync
                }
                Ok(wait) => {
                    (failures, writes) = (0, 0);
                    wait.min(self.resync)
                }
                Err(error) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(%error, secret = %self.secret, "managing the serving certificate");
                    Duration::from_millis(250u64 << failures.min(7)).min(self.resync)
                }
            };
            tokio::select! {
                () = stopping.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
                event = changes.next() => if let Some(Err(error)) = event {
                    tracing::debug!(%error, "watching the certificate Secret");
                },
            }
        }
    }

    /// One pass; returns how long to sleep (zero: go again at once).
    pub async fn pass(&self) -> Result<Duration, Error> {
        let cluster = |what: String| move |source| Error::Cluster { what, source };
        let secret =
            self.secrets.get_opt(&self.secret).await.map_err(cluster(format!("reading Secret {}", self.secret)))?;
        let current = secret.as_ref().and_then(|s| match Material::from_data(s.data.as_ref()?) {
            Ok(material) => Some(material),
            Err(reason) => {
                tracing::warn!(secret = %self.secret, %reason, "the certificate Secret is unreadable: it is made anew");
                None
            }
        });
        let published = self.published().await?;
        let now = unix_now();
        match plan::decide(now, current.as_ref(), &published, &self.policy)? {
            Decision::Write { material, changes } => {
                if self.write(secret, &material).await? {
                    tracing::info!(secret = %self.secret, ?changes, "wrote the serving certificates");
                }
                Ok(Duration::ZERO)
            }
            Decision::Keep { recheck_at } => {
                let Some(material) = current else { return Ok(Duration::ZERO) };
                self.publish(&material.bundle(), &published).await?;
                self.serve(&material)?;
                Ok(Duration::from_secs(u64::try_from(recheck_at - now).unwrap_or(0).max(1)))
            }
        }
    }

    /// Each APIService's caBundle as PEM (`None` without one, or when it is missing).
    async fn published(&self) -> Result<Vec<Option<String>>, Error> {
        let mut bundles = Vec::with_capacity(self.apiservice_names.len());
        for name in &self.apiservice_names {
            let apiservice = self
                .apiservices
                .get_opt(name)
                .await
                .map_err(|source| Error::Cluster { what: format!("reading APIService {name}"), source })?;
            let bundle = apiservice
                .and_then(|a| a.data.pointer("/spec/caBundle").and_then(|b| b.as_str()).map(str::to_string))
                .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
                .and_then(|pem| String::from_utf8(pem).ok());
            bundles.push(bundle);
        }
        Ok(bundles)
    }

    /// Creates or replaces the Secret; false when another writer was first (no error: the next
    /// pass reads what won).
    async fn write(&self, existing: Option<Secret>, material: &Material) -> Result<bool, Error> {
        let mut secret = existing.unwrap_or_default();
        secret.metadata.name = Some(self.secret.clone());
        secret
            .metadata
            .labels
            .get_or_insert_default()
            .insert("app.kubernetes.io/managed-by".to_string(), self.field_manager.clone());
        secret.type_ = Some("kubernetes.io/tls".to_string());
        secret.data = Some(material.to_data());
        let written = match secret.metadata.resource_version {
            None => self.secrets.create(&PostParams::default(), &secret).await,
            Some(_) => self.secrets.replace(&self.secret, &PostParams::default(), &secret).await,
        };
        match written {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::debug!(secret = %self.secret, "another replica wrote the certificates first");
                Ok(false)
            }
            Err(source) => Err(Error::Cluster { what: format!("writing Secret {}", self.secret), source }),
        }
    }

    /// Writes `bundle` into each APIService that publishes another one.
    async fn publish(&self, bundle: &str, published: &[Option<String>]) -> Result<(), Error> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(bundle);
        let params = PatchParams { field_manager: Some(self.field_manager.clone()), ..PatchParams::default() };
        let patch = serde_json::json!({"spec": {"caBundle": encoded}});
        for (name, current) in self.apiservice_names.iter().zip(published) {
            if current.as_deref() == Some(bundle) {
                continue;
            }
            match self.apiservices.patch(name, &params, &Patch::Merge(&patch)).await {
                Ok(_) => tracing::info!(apiservice = %name, "published the CA bundle"),
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    tracing::info!(apiservice = %name, "no such APIService yet: its caBundle is written once it exists")
                }
                Err(source) => return Err(Error::Cluster { what: format!("writing APIService {name}"), source }),
            }
        }
        Ok(())
    }

    /// Serves the Secret's certificate, if it is not served already.
    fn serve(&self, material: &Material) -> Result<(), Error> {
        if self.certificate.serves(&material.leaf.cert_pem) {
            return Ok(());
        }
        self.certificate.replace(&material.serving())?;
        self.serving.store(true, Ordering::SeqCst);
        tracing::info!(
            secret = %self.secret,
            not_after = material.leaf.facts.not_after,
            "serving the certificate of the Secret"
        );
        Ok(())
    }
}

fn unix_now() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}
