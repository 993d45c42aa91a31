//! A mirror of a cluster's objects, the source of a read-only view (of Pods, say): one
//! list-then-watch loop over one kind of the cluster's objects (in all namespaces, or one),
//! started once, projecting each object into the view's resource in a replicated [`MemoryStore`]. get, list and watch of the view are served from that store; no
//! request calls the kube-apiserver.
//!
//! The loop uses kube-rs's `Api::list` and `Api::watch` directly rather than `kube::runtime::watcher`
//! because the view keeps its sources' resourceVersions: a re-list must know the list's
//! resourceVersion to date the deletions it discovers, which the runtime watcher does not expose.
//! Watches ask for bookmarks, so the store's revision follows the cluster even when nothing
//! changes. On 410 the loop re-lists and the store emits only the differences. Errors are retried
//! with exponential backoff, and a 403 is logged with the RBAC rule to add.

use crate::machinery::resource::ApiResource;
use crate::store::ObjectKey;
use crate::store::memory::MemoryStore;
use futures::TryStreamExt;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::core::NamespaceResourceScope;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Page size of the source's lists.
const LIST_PAGE: u32 = 500;
/// Seconds each watch of the source asks for (the client re-watches after).
const WATCH_TIMEOUT: u32 = 290;
const BACKOFF_MIN: Duration = Duration::from_millis(200);

/// What the mirror knows about itself, for `/readyz` and logs.
#[derive(Debug)]
pub struct CacheStatus {
    /// The mirror's name (`pod`: messages call it the `pod cache`).
    name: String,
    /// Whether the first list has completed.
    synced: std::sync::atomic::AtomicBool,
    /// The last error, cleared by the next success.
    last_error: Mutex<Option<String>>,
    /// When the cluster last answered (a list, an event or a bookmark).
    last_heard: Mutex<Option<std::time::Instant>>,
}

impl CacheStatus {
    fn new(name: String) -> Self {
        Self { name, synced: Default::default(), last_error: Default::default(), last_heard: Default::default() }
    }

    /// `Ok` once synced; otherwise why not.
    pub fn check(&self) -> Result<(), String> {
        if self.synced.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        Err(self.last_error.lock().clone().unwrap_or_else(|| format!("the {} cache has not synced yet", self.name)))
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

/// A running mirror.
pub struct Mirrored {
    /// Becomes `true` once the first list has been stored.
    pub ready: watch::Receiver<bool>,
    /// Sync state and last error.
    pub status: Arc<CacheStatus>,
}

/// Explains a failure to read `S` so that an operator knows what to fix.
fn explain<S: kube::Resource<DynamicType = ()>>(err: &kube::Error, server: &str, namespace: Option<&str>) -> String {
    let scope = namespace.map(|n| format!("in namespace {n:?}")).unwrap_or_else(|| "in all namespaces".into());
    let (group, plural) = (S::group(&()), S::plural(&()));
    match err {
        kube::Error::Api(status) if status.code == 403 => format!(
            "RBAC forbids the server to list or watch {plural} {scope}: {}. Grant its ServiceAccount a {} with the rule \
             {{apiGroups: [\"{group}\"], resources: [\"{plural}\"], verbs: [\"get\", \"list\", \"watch\"]}}",
            status.message,
            if namespace.is_some() { "Role" } else { "ClusterRole" }
        ),
        kube::Error::Api(status) if status.code == 401 => {
            format!("the kube-apiserver at {server} refused the server's credentials: {}", status.message)
        }
        other => format!("cannot list or watch {plural} {scope} at {server}: {other}"),
    }
}

/// The objects a mirror may read: a namespaced kind of the cluster, as kube-rs types them.
pub trait SourceObject:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + DeserializeOwned
    + Clone
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<S> SourceObject for S where
    S: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + DeserializeOwned
        + Clone
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// Where a mirror reads its objects `S` from, and how it makes each the view's `K`.
pub struct Source<S, K> {
    /// The mirror's name, in its metrics' names and its messages (`pod`: the `pod cache`).
    pub name: String,
    /// The view of one object; `None` leaves it out (it must keep the object's namespace and
    /// name: deletions are found by them).
    pub project: fn(&S) -> Option<K>,
    /// A client of the cluster.
    pub client: kube::Client,
    /// The cluster's URL, for messages.
    pub server: String,
    /// Only this namespace, when set.
    pub namespace: Option<String>,
    /// The longest wait between retries.
    pub max_backoff: Duration,
}

/// Starts the mirror of `source`, feeding `store`.
pub fn start<S: SourceObject, K: ApiResource>(source: Source<S, K>, store: Arc<MemoryStore<K>>) -> Mirrored {
    let Source { name, project, client, server, namespace, max_backoff } = source;
    let (ready_tx, ready) = watch::channel(false);
    let status = Arc::new(CacheStatus::new(name));
    let api: Api<S> = match &namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let mirror = Mirror {
        api,
        project,
        server,
        namespace,
        max_backoff: max_backoff.max(BACKOFF_MIN),
        backoff: BACKOFF_MIN,
        store,
        ready: ready_tx,
        status: status.clone(),
    };
    tokio::spawn(mirror.run());
    Mirrored { ready, status }
}

fn revision_of(value: Option<&str>) -> Option<u64> {
    value.and_then(|v| v.parse().ok())
}

/// Lists every object, page by page; returns their views and the list's resourceVersion.
async fn list_all<S: SourceObject, K>(
    api: &Api<S>,
    project: fn(&S) -> Option<K>,
) -> Result<(Vec<K>, u64), kube::Error> {
    let mut params = ListParams::default().limit(LIST_PAGE);
    let mut out = Vec::new();
    loop {
        let page = api.list(&params).await?;
        let revision = revision_of(page.metadata.resource_version.as_deref()).unwrap_or_default();
        out.extend(page.items.iter().filter_map(project));
        match page.metadata.continue_.as_deref() {
            Some(token) if !token.is_empty() => params = ListParams::default().limit(LIST_PAGE).continue_token(token),
            _ => return Ok((out, revision)),
        }
    }
}

/// The task that keeps `store` a mirror of the cluster's objects: list, then watch from the
/// list's revision, re-listing when the watch expires, and backing off (up to `max_backoff`) on
/// errors.
struct Mirror<S: SourceObject, K: ApiResource> {
    api: Api<S>,
    project: fn(&S) -> Option<K>,
    /// The cluster's URL and the namespace watched, for messages.
    server: String,
    namespace: Option<String>,
    max_backoff: Duration,
    /// The wait before the next retry; doubles on each failure, reset by a success.
    backoff: Duration,
    store: Arc<MemoryStore<K>>,
    ready: watch::Sender<bool>,
    status: Arc<CacheStatus>,
}

impl<S: SourceObject, K: ApiResource> Mirror<S, K> {
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
        let err = explain::<S>(err, &self.server, self.namespace.as_deref());
        tracing::warn!(error = %err, retry_in_ms = self.backoff.as_millis() as u64, "{} cache", self.status.name);
        self.status.error(err);
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(self.max_backoff);
        tokio::time::sleep(wait).await;
    }

    /// Lists every object into the store; the revision to watch from, or `None` to list again.
    async fn relist(&mut self) -> Option<u64> {
        match list_all(&self.api, self.project).await {
            Ok((objects, revision)) => {
                let count = objects.len();
                if let Err(err) = self.store.replace_all(objects, revision) {
                    tracing::error!(error = %err, "{} cache: storing the listed objects", self.status.name);
                }
                self.status.heard();
                self.backoff = BACKOFF_MIN;
                *self.status.last_error.lock() = None;
                if !self.status.synced.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    tracing::info!(objects = count, revision, "{} cache synced", self.status.name);
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
                        tracing::info!(from, "{} cache: the watch expired; re-listing", self.status.name);
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
    fn apply(&self, event: WatchEvent<S>) -> Applied {
        match event {
            WatchEvent::Added(object) | WatchEvent::Modified(object) => {
                let Some(revision) = revision_of(object.meta().resource_version.as_deref()) else {
                    return Applied::Skipped;
                };
                if let Some(view) = (self.project)(&object) {
                    let stored = self.store.replicate(ObjectKey::of(&view), Some(view), revision);
                    if let Err(err) = stored {
                        tracing::error!(error = %err, "{} cache: storing an object", self.status.name);
                    }
                }
                Applied::At(revision)
            }
            WatchEvent::Deleted(object) => {
                let Some(revision) = revision_of(object.meta().resource_version.as_deref()) else {
                    return Applied::Skipped;
                };
                if let Err(err) = self.store.replicate(ObjectKey::of(&object), None, revision) {
                    tracing::error!(error = %err, "{} cache: deleting an object", self.status.name);
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
