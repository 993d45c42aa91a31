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

use crate::resources::farmpod::FarmPod;
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
    let task_status = status.clone();
    tokio::spawn(async move {
        run(api, server, namespace, max_backoff.max(BACKOFF_MIN), store, ready_tx, task_status).await;
    });
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

async fn run(
    api: Api<Pod>,
    server: String,
    namespace: Option<String>,
    max_backoff: Duration,
    store: Arc<MemoryStore<FarmPod>>,
    ready: watch::Sender<bool>,
    status: Arc<CacheStatus>,
) {
    let mut backoff = BACKOFF_MIN;
    let mut resume: Option<u64> = None;
    // Logs and records what went wrong; returns how long to wait before retrying.
    let fail = |err: &kube::Error, backoff: &mut Duration| {
        let err = explain(err, &server, namespace.as_deref());
        tracing::warn!(error = %err, retry_in_ms = backoff.as_millis() as u64, "pod cache");
        status.error(err);
        let wait = *backoff;
        *backoff = (*backoff * 2).min(max_backoff);
        wait
    };
    loop {
        let Some(from) = resume else {
            match list_all(&api).await {
                Ok((pods, revision)) => {
                    let count = pods.len();
                    store.replace_all(pods, revision);
                    status.heard();
                    resume = Some(revision);
                    backoff = BACKOFF_MIN;
                    *status.last_error.lock() = None;
                    if !status.synced.swap(true, std::sync::atomic::Ordering::SeqCst) {
                        tracing::info!(pods = count, revision, "pod cache synced");
                    }
                    let _ = ready.send(true);
                }
                Err(err) => {
                    tokio::time::sleep(fail(&err, &mut backoff)).await;
                }
            }
            continue;
        };
        let params = WatchParams::default().timeout(WATCH_TIMEOUT);
        let stream = match api.watch(&params, &from.to_string()).await {
            Ok(stream) => stream,
            Err(err) => {
                tokio::time::sleep(fail(&err, &mut backoff)).await;
                continue;
            }
        };
        futures::pin_mut!(stream);
        loop {
            let next = stream.try_next().await;
            if matches!(next, Ok(Some(_))) {
                status.heard();
            }
            match next {
                Ok(Some(WatchEvent::Added(pod) | WatchEvent::Modified(pod))) => {
                    let Some(revision) = revision_of(pod.metadata.resource_version.as_deref()) else { continue };
                    if let Some(farm_pod) = FarmPod::project(&pod) {
                        store.replicate(ObjectKey::of(&farm_pod), Some(farm_pod), revision);
                    }
                    resume = Some(revision);
                }
                Ok(Some(WatchEvent::Deleted(pod))) => {
                    let Some(revision) = revision_of(pod.metadata.resource_version.as_deref()) else { continue };
                    store.replicate(ObjectKey::of(&pod), None, revision);
                    resume = Some(revision);
                }
                Ok(Some(WatchEvent::Bookmark(bookmark))) => {
                    if let Some(revision) = revision_of(Some(&bookmark.metadata.resource_version)) {
                        store.advance(revision);
                        resume = Some(revision);
                    }
                }
                Ok(Some(WatchEvent::Error(err))) if err.code == 410 => {
                    tracing::info!(from, "pod watch expired; re-listing");
                    resume = None;
                    break;
                }
                Ok(Some(WatchEvent::Error(err))) => {
                    tokio::time::sleep(fail(&kube::Error::Api(err), &mut backoff)).await;
                    break;
                }
                Ok(None) => {
                    backoff = BACKOFF_MIN;
                    break;
                }
                Err(err) => {
                    tokio::time::sleep(fail(&err, &mut backoff)).await;
                    break;
                }
            }
        }
    }
}
