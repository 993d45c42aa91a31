//! The Pod cache that feeds FarmPods: one list-then-watch loop over the cluster's Pods (all
//! namespaces, or one given by `--pod-namespace`), started once, projecting each Pod into a
//! FarmPod in a replicated [`MemoryStore`]. get, list and watch of FarmPods are served from that
//! store; no request calls the kube-apiserver.
//!
//! The loop uses kube-rs's `Api::list` and `Api::watch` directly rather than `kube::runtime::watcher`
//! because FarmPods keep the Pods' resourceVersions: a re-list must know the list's
//! resourceVersion to date the deletions it discovers, which the runtime watcher does not expose.
//! Watches ask for bookmarks, so the store's revision follows the cluster even when nothing
//! changes. On 410 the loop re-lists and the store emits only the differences. Errors are retried
//! with exponential backoff, and a 403 is logged with the RBAC rule to add.

use crate::resources::farmpod::v1::FarmPod;
use crate::store::ObjectKey;
use crate::store::memory::MemoryStore;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Page size of the Pod lists.
const LIST_PAGE: u32 = 500;
/// Seconds each Pod watch asks for (the client re-watches after).
const WATCH_TIMEOUT: u32 = 290;
const BACKOFF_MIN: Duration = Duration::from_millis(200);

/// What the cache knows about itself, for `/readyz` and logs.
#[derive(Debug, Default)]
pub struct CacheStatus {
    /// Whether the first list has completed.
    synced: std::sync::atomic::AtomicBool,
    /// The last error, cleared by the next success.
    last_error: Mutex<Option<String>>,
    /// When the cluster last answered (a list, an event or a bookmark).
    last_heard: Mutex<Option<std::time::Instant>>,
}

impl CacheStatus {
    /// `Ok` once synced; otherwise why not.
    pub fn check(&self) -> Result<(), String> {
        if self.synced.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        Err(self.last_error.lock().clone().unwrap_or_else(|| "the Pod cache has not synced yet".into()))
    }

    fn error(&self, message: String) {
        *self.last_error.lock() = Some(message);
    }

    fn heard(&self) {
        *self.last_heard.lock() = Some(std::time::Instant::now());
    }

    /// Whether the first list has completed.
    pub fn synced(&self) -> bool {
        self.synced.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How long ago the cluster last answered; `None` before it ever did.
    pub fn last_heard_age(&self) -> Option<Duration> {
        self.last_heard.lock().map(|at| at.elapsed())
    }
}

/// A running Pod cache.
pub struct PodCache {
    /// Becomes `true` once the first list has been stored.
    pub ready: watch::Receiver<bool>,
    /// Sync state and last error.
    pub status: Arc<CacheStatus>,
}

/// Explains a failure so that an operator knows what to fix.
fn explain(err: &kube::Error, server: &str, namespace: Option<&str>) -> String {
    let scope = namespace.map(|n| format!("in namespace {n:?}")).unwrap_or_else(|| "in all namespaces".into());
    match err {
        kube::Error::Api(status) if status.code == 403 => format!(
            "RBAC forbids the server to list or watch pods {scope}: {}. Grant its ServiceAccount a {} with the rule \
             {{apiGroups: [\"\"], resources: [\"pods\"], verbs: [\"get\", \"list\", \"watch\"]}} (manifests/rbac.yaml has it)",
            status.message,
            if namespace.is_some() { "Role" } else { "ClusterRole" }
        ),
        kube::Error::Api(status) if status.code == 401 => {
            format!("the kube-apiserver at {server} refused the server's credentials: {}", status.message)
        }
        other => format!("cannot list or watch pods {scope} at {server}: {other}"),
    }
}

/// Where the cache reads Pods from.
pub struct Source {
    /// A client of the cluster.
    pub client: kube::Client,
    /// The cluster's URL, for messages.
    pub server: String,
    /// Only this namespace, when set.
    pub namespace: Option<String>,
    /// The longest wait between retries.
    pub max_backoff: Duration,
}

/// Starts the cache over the Pods of `source`, feeding `store`.
pub fn start(source: Source, store: Arc<MemoryStore<FarmPod>>) -> PodCache {
    let Source { client, server, namespace, max_backoff } = source;
    let (ready_tx, ready) = watch::channel(false);
    let status = Arc::new(CacheStatus::default());
    let api: Api<Pod> = match &namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let mirror = Mirror {
        api,
        server,
        namespace,
        max_backoff: max_backoff.max(BACKOFF_MIN),
        backoff: BACKOFF_MIN,
        store,
        ready: ready_tx,
        status: status.clone(),
    };
    tokio::spawn(mirror.run());
    PodCache { ready, status }
}

fn revision_of(value: Option<&str>) -> Option<u64> {
    value.and_then(|v| v.parse().ok())
}

/// Lists every Pod, page by page; returns the FarmPods and the list's resourceVersion.
async fn list_all(api: &Api<Pod>) -> Result<(Vec<FarmPod>, u64), kube::Error> {
    let mut params = ListParams::default().limit(LIST_PAGE);
    let mut out = Vec::new();
    loop {
        let page = api.list(&params).await?;
        let revision = revision_of(page.metadata.resource_version.as_deref()).unwrap_or_default();
        out.extend(page.items.iter().filter_map(FarmPod::project));
        match page.metadata.continue_.as_deref() {
            Some(token) if !token.is_empty() => params = ListParams::default().limit(LIST_PAGE).continue_token(token),
            _ => return Ok((out, revision)),
        }
    }
}

/// The task that keeps `store` a mirror of the cluster's Pods: list, then watch from the list's
/// revision, re-listing when the watch expires, and backing off (up to `max_backoff`) on errors.
struct Mirror {
    api: Api<Pod>,
    /// The cluster's URL and the namespace watched, for messages.
    server: String,
    namespace: Option<String>,
    max_backoff: Duration,
    /// The wait before the next retry; doubles on each failure, reset by a success.
    backoff: Duration,
    store: Arc<MemoryStore<FarmPod>>,
    ready: watch::Sender<bool>,
    status: Arc<CacheStatus>,
}

impl Mirror {
    async fn run(mut self) {
        let mut resume: Option<u64> = None;
        loop {
            resume = match resume {
                None => self.relist().await,
                Some(from) => self.follow(from).await,
            };
        }
    }

    /// Logs and records what went wrong, then waits before the retry.
    async fn fail(&mut self, err: &kube::Error) {
        let err = explain(err, &self.server, self.namespace.as_deref());
        tracing::warn!(error = %err, retry_in_ms = self.backoff.as_millis() as u64, "pod cache");
        self.status.error(err);
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(self.max_backoff);
        tokio::time::sleep(wait).await;
    }

    /// Lists every Pod into the store; the revision to watch from, or `None` to list again.
    async fn relist(&mut self) -> Option<u64> {
        match list_all(&self.api).await {
            Ok((pods, revision)) => {
                let count = pods.len();
                if let Err(err) = self.store.replace_all(pods, revision) {
                    tracing::error!(error = %err, "pod cache: storing the listed pods");
                }
                self.status.heard();
                self.backoff = BACKOFF_MIN;
                *self.status.last_error.lock() = None;
                if !self.status.synced.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    tracing::info!(pods = count, revision, "pod cache synced");
                }
                let _ = self.ready.send(true);
                Some(revision)
            }
            Err(err) => {
                self.fail(&err).await;
                None
            }
        }
    }

    /// Follows one watch from `from` until it ends; the revision to watch from next, or `None`
    /// to list again (the watch expired).
    async fn follow(&mut self, from: u64) -> Option<u64> {
        let params = WatchParams::default().timeout(WATCH_TIMEOUT);
        let stream = match self.api.watch(&params, &from.to_string()).await {
            Ok(stream) => stream,
            Err(err) => {
                self.fail(&err).await;
                return Some(from);
            }
        };
        futures::pin_mut!(stream);
        let mut resume = from;
        loop {
            let next = stream.try_next().await;
            if matches!(next, Ok(Some(_))) {
                self.status.heard();
            }
            match next {
                Ok(Some(event)) => match self.apply(event) {
                    Applied::At(revision) => resume = revision,
                    Applied::Skipped => {}
                    Applied::Expired => {
                        tracing::info!(from, "pod watch expired; re-listing");
                        return None;
                    }
                    Applied::Failed(err) => {
                        self.fail(&kube::Error::Api(err)).await;
                        return Some(resume);
                    }
                },
                Ok(None) => {
                    self.backoff = BACKOFF_MIN;
                    return Some(resume);
                }
                Err(err) => {
                    self.fail(&err).await;
                    return Some(resume);
                }
            }
        }
    }

    /// Applies one watch event to the store.
    fn apply(&self, event: WatchEvent<Pod>) -> Applied {
        match event {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                let Some(revision) = revision_of(pod.metadata.resource_version.as_deref()) else {
                    return Applied::Skipped;
                };
                if let Some(farm_pod) = FarmPod::project(&pod) {
                    let stored = self.store.replicate(ObjectKey::of(&farm_pod), Some(farm_pod), revision);
                    if let Err(err) = stored {
                        tracing::error!(error = %err, "pod cache: storing a pod");
                    }
                }
                Applied::At(revision)
            }
            WatchEvent::Deleted(pod) => {
                let Some(revision) = revision_of(pod.metadata.resource_version.as_deref()) else {
                    return Applied::Skipped;
                };
                if let Err(err) = self.store.replicate(ObjectKey::of(&pod), None, revision) {
                    tracing::error!(error = %err, "pod cache: deleting a pod");
                }
                Applied::At(revision)
            }
            WatchEvent::Bookmark(bookmark) => match revision_of(Some(&bookmark.metadata.resource_version)) {
                Some(revision) => {
                    self.store.advance(revision);
                    Applied::At(revision)
                }
                None => Applied::Skipped,
            },
            WatchEvent::Error(err) if err.code == 410 => Applied::Expired,
            WatchEvent::Error(err) => Applied::Failed(err),
        }
    }
}

/// What one watch event did.
enum Applied {
    /// The store is now at this revision.
    At(u64),
    /// Nothing (an event without a usable resourceVersion).
    Skipped,
    /// The watch's revision is gone: list again.
    Expired,
    /// The cluster sent an error.
    Failed(Box<kube::core::Status>),
}
