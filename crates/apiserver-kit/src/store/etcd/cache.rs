//! The watch cache in front of an [`EtcdStore`], as the kube-apiserver's cacher: one etcd watch
//! per resource feeds an in-memory copy ([`MemoryStore`]: an index by key and a bounded window
//! of events), and GET, LIST and WATCH are served from it; writes go to etcd.
//!
//! ```text
//!   writes ──────────────────────────► etcd ◄── latest-write reads (one at a time, shared)
//!                                        │
//!                                        │ one watch of <prefix>/<plural>/ (no previous values)
//!                                        ▼
//!   reads, watches ◄── MemoryStore: objects by key + event window ◄── feed task
//! ```
//!
//! **Consistent reads.** A read without a resourceVersion must see every write acknowledged
//! before it began, on every replica. etcd 3.4.23 (Debian's) answers a requested progress
//! notification with a revision that may run ahead of events still queued on the stream (etcd
//! issue 15220, fixed in 3.4.25), so the kube-apiserver's mechanism is not safe on it. Instead,
//! every write of the resource also puts the resource's *write marker* in the same transaction
//! ([`EtcdStore::latest_write`]): one linearizable read of that key gives `M`, the revision of the
//! latest write acknowledged so far, and the read is served once the cache has applied the
//! watch's events up to `M`. The etcd watch delivers every event of the prefix in revision order,
//! so at that point the cache holds exactly etcd's state at the read's revision `R` (no write of
//! the resource happened in `(M, R]`, or the marker would say so). Reads arriving while such a
//! read is under way share the next one, so etcd sees at most one per round trip whatever the
//! load. Reads fall back to etcd while the cache is not watching (starting, or re-watching after
//! etcd failed) or does not catch up within [`CATCH_UP_WAIT`]: never to stale data.
//!
//! **Other reads.** `resourceVersion=0` reads the cache as it is; a read at a resourceVersion
//! waits (in the registry) until [`Store::revision`] reaches it, then reads the cache; exact
//! reads within the window come from the cache and older ones from etcd's history. A watch
//! from a revision before the window gets 410, as from the kube-apiserver's cache.
//!
//! **Failures.** A broken etcd watch is re-established from the last applied revision, with
//! no gap; while it is down the cache is not ready. When etcd compacted the revisions the
//! cache still needed, it lists again and starts a new window, ending its watchers'
//! streams so they re-watch (and get 410 if they were behind the new window).

use super::{EtcdStore, LatestWrite, revision_of};
use crate::machinery::error::{Error, Result};
use crate::machinery::resource::ApiResource;
use crate::store::memory::MemoryStore;
use crate::store::{
    Committed, ObjectKey, Page, PageRequest, ReadAt, Revision, Store, StoreStats, Stored, Subscription, UpdateFn,
    WatchFrom,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How long a consistent read waits for the cache to catch up before reading etcd instead
/// (the kube-apiserver's cacher waits 3 s).
pub const CATCH_UP_WAIT: Duration = Duration::from_secs(3);

/// One resource's objects in etcd, read through a watch cache.
pub struct WatchCache<K> {
    etcd: Arc<EtcdStore<K>>,
    cache: Arc<MemoryStore<K>>,
    /// Whether the feed is watching etcd, with the cache complete up to its last event.
    watching: watch::Receiver<bool>,
    /// The revision up to which the cache has applied every event of the resource.
    applied: watch::Receiver<u64>,
    /// Whether the cache has been filled once (an `resourceVersion=0` read may use it).
    listed: watch::Receiver<bool>,
    /// Reads of the write marker, shared by concurrent consistent reads.
    latest: Arc<SharedReads>,
    /// Stops the feed when the store goes.
    _stop: DropGuard,
}

impl<K: ApiResource> WatchCache<K> {
    /// A cache of `etcd` keeping `history` events, fed until `stopping` (or until dropped).
    pub fn start(etcd: EtcdStore<K>, history: usize, stopping: &CancellationToken) -> Self {
        let etcd = Arc::new(etcd);
        let cache = Arc::new(MemoryStore::new(Arc::new(Revision::default()), history));
        let (watching, watching_rx) = watch::channel(false);
        let (applied, applied_rx) = watch::channel(0);
        let (listed, listed_rx) = watch::channel(false);
        let stop = stopping.child_token();
        let feed = Feed { etcd: etcd.clone(), cache: cache.clone(), watching, applied, listed };
        tokio::spawn(feed.run(stop.clone()));
        let reader = etcd.clone();
        let latest = SharedReads::new(Box::new(move || {
            let reader = reader.clone();
            Box::pin(async move { reader.latest_write().await })
        }));
        Self {
            etcd,
            cache,
            watching: watching_rx,
            applied: applied_rx,
            listed: listed_rx,
            latest,
            _stop: stop.drop_guard(),
        }
    }

    /// Waits until the cache holds every write acknowledged before the call, and returns the
    /// etcd revision its state is then known to match; `None` when the cache cannot say (not
    /// watching, no marker yet, or not caught up in time): the caller reads etcd instead. Fails
    /// (503) when etcd cannot be read: a consistent read is refused rather than served stale.
    async fn catch_up(&self) -> Result<Option<u64>> {
        if !*self.watching.borrow() {
            return Ok(None);
        }
        let LatestWrite { marker, revision } = self.latest.read().await?;
        let Some(marker) = marker else { return Ok(None) };
        let mut applied = self.applied.clone();
        match tokio::time::timeout(CATCH_UP_WAIT, applied.wait_for(|a| *a >= marker)).await {
            Ok(Ok(_)) => Ok(Some(revision)),
            _ => {
                tracing::debug!(marker, resource = K::info().plural, "the watch cache is behind; reading etcd");
                Ok(None)
            }
        }
    }

    /// Whether the cache was ever filled and may answer a read that accepts any state.
    fn has_listed(&self) -> bool {
        *self.listed.borrow()
    }

    /// A readiness check (for `/readyz`) that passes once the cache has listed the resource
    /// from etcd.
    pub fn readiness(&self) -> Arc<dyn Fn() -> std::result::Result<(), String> + Send + Sync> {
        let listed = self.listed.clone();
        let plural = K::info().plural;
        Arc::new(move || if *listed.borrow() { Ok(()) } else { Err(format!("{plural} not listed from etcd yet")) })
    }
}

#[async_trait::async_trait]
impl<K: ApiResource> Store<K> for WatchCache<K> {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Arc<Stored<K>>>> {
        match self.catch_up().await? {
            Some(_) => self.cache.get(key),
            None => self.etcd.get(key).await,
        }
    }

    async fn get_any(&self, key: &ObjectKey) -> Result<Option<Arc<Stored<K>>>> {
        if self.has_listed() { self.cache.get(key) } else { self.etcd.get(key).await }
    }

    async fn list_page(&self, request: PageRequest<'_, K>) -> Result<Page<K>> {
        match request.at {
            ReadAt::Latest => match self.catch_up().await? {
                Some(revision) => {
                    let mut page = Store::list_page(&*self.cache, request).await?;
                    page.revision = page.revision.max(revision);
                    Ok(page)
                }
                None => self.etcd.list_page(request).await,
            },
            ReadAt::Any if self.has_listed() => Store::list_page(&*self.cache, request).await,
            ReadAt::Exact(revision) if self.has_listed() && revision >= self.cache.compacted_revision() => {
                Store::list_page(&*self.cache, request).await
            }
            _ => self.etcd.list_page(request).await,
        }
    }

    async fn subscribe(&self, namespace: Option<&str>, from: WatchFrom, capacity: usize) -> Result<Subscription<K>> {
        let cached = match from {
            WatchFrom::Now => self.catch_up().await?.is_some(),
            WatchFrom::After(_) => self.has_listed(),
        };
        if cached {
            self.cache.subscribe(namespace, from, capacity)
        } else {
            self.etcd.subscribe(namespace, from, capacity).await
        }
    }

    async fn create(&self, key: ObjectKey, object: K, dry_run: bool) -> Result<Arc<Stored<K>>> {
        self.etcd.create(key, object, dry_run).await
    }

    async fn mutate(&self, key: &ObjectKey, dry_run: bool, update: &mut UpdateFn<'_, K>) -> Result<Committed<K>> {
        // The cached copy saves a read when it is current; the transaction checks that it is.
        let cached = if self.has_listed() { self.cache.get(key)? } else { None };
        self.etcd.mutate_from(key, cached, dry_run, update).await
    }

    async fn revision(&self) -> Result<u64> {
        match self.catch_up().await? {
            Some(revision) => Ok(revision.max(self.cache.revision())),
            None => self.etcd.revision().await,
        }
    }

    async fn stats(&self) -> Result<StoreStats> {
        let mut stats = if self.has_listed() { self.cache.stats() } else { self.etcd.stats().await? };
        stats.storage_watches = Some(self.etcd.watches());
        Ok(stats)
    }
}

/// A future of one latest-write read.
type ReadFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<LatestWrite>> + Send>>;

/// Latest-write reads shared between callers: a caller is answered by a read that *started*
/// after it called (an earlier one may predate writes it must see), and while one read is
/// under way every new caller waits for the single next one.
struct SharedReads {
    read: Box<dyn Fn() -> ReadFuture + Send + Sync>,
    rounds: parking_lot::Mutex<Rounds>,
    done: watch::Sender<Done>,
}

#[derive(Default)]
struct Rounds {
    /// The number of the latest read started.
    started: u64,
    /// Whether a read is under way.
    running: bool,
    /// Whether a caller is waiting for the read after the one under way.
    wanted: bool,
}

/// The last read finished and its result (errors shared: [`Error`] is not `Clone`).
#[derive(Clone)]
struct Done {
    round: u64,
    result: std::result::Result<LatestWrite, Arc<Error>>,
}

impl SharedReads {
    fn new(read: Box<dyn Fn() -> ReadFuture + Send + Sync>) -> Arc<Self> {
        let (done, _) = watch::channel(Done { round: 0, result: Ok(LatestWrite { marker: None, revision: 0 }) });
        Arc::new(Self { read, rounds: parking_lot::Mutex::default(), done })
    }

    /// The result of a read that started after this call.
    async fn read(self: &Arc<Self>) -> Result<LatestWrite> {
        let mut done = self.done.subscribe();
        let needed = {
            let mut rounds = self.rounds.lock();
            if rounds.running {
                rounds.wanted = true;
                rounds.started + 1
            } else {
                rounds.running = true;
                rounds.started += 1;
                tokio::spawn(self.clone().run());
                rounds.started
            }
        };
        let done = done
            .wait_for(|d| d.round >= needed)
            .await
            .map_err(|_| Error::Internal("the latest-write reads stopped".into()))?
            .clone();
        done.result.map_err(|error| match &*error {
            Error::Unavailable { message, retry_after } => {
                Error::Unavailable { message: message.clone(), retry_after: *retry_after }
            }
            other => Error::Internal(other.to_string()),
        })
    }

    /// Reads until no caller waits for another round.
    async fn run(self: Arc<Self>) {
        loop {
            let round = self.rounds.lock().started;
            let result = (self.read)().await.map_err(Arc::new);
            self.done.send_replace(Done { round, result });
            let mut rounds = self.rounds.lock();
            if !rounds.wanted {
                rounds.running = false;
                return;
            }
            rounds.wanted = false;
            rounds.started += 1;
        }
    }
}

/// The task that fills the cache and keeps it following etcd.
struct Feed<K> {
    etcd: Arc<EtcdStore<K>>,
    cache: Arc<MemoryStore<K>>,
    watching: watch::Sender<bool>,
    applied: watch::Sender<u64>,
    listed: watch::Sender<bool>,
}

/// Why the cache's etcd watch ended.
enum WatchEnd {
    /// It broke (etcd unreachable, a member gone): watch again from the last applied revision.
    Broken(Error),
    /// etcd no longer has the revisions the cache needs: list again.
    Compacted,
}

/// The longest pause between attempts to reach etcd again.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

impl<K: ApiResource> Feed<K> {
    /// Lists, then watches, re-watching after a break and re-listing after a compaction, until
    /// `stop`.
    async fn run(self, stop: CancellationToken) {
        let mut backoff = Duration::from_millis(50);
        let mut from = None;
        while !stop.is_cancelled() {
            let attempt = async {
                let revision = match from {
                    Some(revision) => revision,
                    None => self.list().await.map_err(WatchEnd::Broken)?,
                };
                from = Some(revision);
                self.follow(revision, &mut from).await
            };
            let end = tokio::select! {
                end = attempt => end,
                () = stop.cancelled() => break,
            };
            self.watching.send_replace(false);
            match end {
                Ok(()) => backoff = Duration::from_millis(50),
                Err(WatchEnd::Compacted) => {
                    tracing::warn!(resource = K::info().plural, "etcd compacted past the watch cache; listing again");
                    from = None;
                }
                Err(WatchEnd::Broken(error)) => {
                    tracing::warn!(%error, resource = K::info().plural, ?backoff, "the watch cache lost etcd; retrying");
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = stop.cancelled() => break,
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// Fills the cache from a consistent list (after putting the write marker if there is none
    /// yet, so consistent reads can wait for the cache from the start); returns its revision.
    async fn list(&self) -> Result<u64> {
        self.etcd.ensure_marker().await?;
        let listing = self.etcd.list_at(None, ReadAt::Latest).await?;
        let count = listing.items.len();
        self.cache.reset(listing.items, listing.revision);
        self.applied.send_replace(listing.revision);
        self.listed.send_replace(true);
        tracing::info!(resource = K::info().plural, objects = count, revision = listing.revision, "watch cache listed");
        Ok(listing.revision)
    }

    /// Applies the events after `revision` until the watch ends, keeping `from` at the last
    /// revision applied.
    async fn follow(&self, revision: u64, from: &mut Option<u64>) -> std::result::Result<(), WatchEnd> {
        let mut stream = self.etcd.watch_range(None, revision, false).await.map_err(WatchEnd::Broken)?;
        loop {
            let response = match stream.message().await {
                Ok(Some(response)) => response,
                Ok(None) => return Err(WatchEnd::Broken(Error::Internal("etcd ended the watch".into()))),
                Err(status) => return Err(WatchEnd::Broken(super::connection::api_error(status))),
            };
            if response.canceled {
                if response.compact_revision > 0 {
                    return Err(WatchEnd::Compacted);
                }
                return Err(WatchEnd::Broken(Error::Internal(format!(
                    "etcd cancelled the watch: {}",
                    response.cancel_reason
                ))));
            }
            if response.created {
                self.watching.send_replace(true);
            }
            let Some(last) = response.events.iter().filter_map(|e| e.kv.as_ref()).map(|kv| kv.mod_revision).max()
            else {
                continue;
            };
            for event in &response.events {
                self.apply(event).map_err(WatchEnd::Broken)?;
            }
            let last = revision_of(last);
            self.cache.advance(last);
            *from = Some(last);
            self.applied.send_replace(last);
        }
    }

    /// Applies one etcd event to the cache (the write marker's only move the revision on).
    fn apply(&self, event: &super::grpc::mvccpb::Event) -> Result<()> {
        use super::grpc::mvccpb::event::EventType;
        let kv = event.kv.as_ref().ok_or_else(|| Error::Internal("an etcd event without a key".into()))?;
        let Some(key) = self.etcd.object_key(&kv.key) else { return Ok(()) };
        let revision = revision_of(kv.mod_revision);
        match EventType::try_from(event.r#type) {
            Ok(EventType::Put) => self.cache.replicate(key, Some(super::decode(kv)?), revision),
            Ok(EventType::Delete) => self.cache.replicate(key, None, revision),
            Err(_) => Err(Error::Internal(format!("an etcd event of unknown type {}", event.r#type))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Shared reads that count the reads made; each returns its number once `gate` lets it.
    fn gated() -> (Arc<SharedReads>, Arc<AtomicU64>, Arc<tokio::sync::Semaphore>) {
        let made = Arc::new(AtomicU64::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let (counter, permits) = (made.clone(), gate.clone());
        let reads = SharedReads::new(Box::new(move || {
            let (counter, permits) = (counter.clone(), permits.clone());
            Box::pin(async move {
                let number = counter.fetch_add(1, Ordering::SeqCst) + 1;
                permits.acquire().await.map_err(|_| Error::Internal("closed".into()))?.forget();
                Ok(LatestWrite { marker: Some(number), revision: number })
            })
        }));
        (reads, made, gate)
    }

    fn caller(reads: &Arc<SharedReads>) -> tokio::task::JoinHandle<u64> {
        let reads = reads.clone();
        tokio::spawn(async move { reads.read().await.unwrap().revision })
    }

    #[tokio::test]
    async fn callers_during_a_read_share_the_next_one_and_never_an_earlier_one() {
        let (reads, made, gate) = gated();
        let first = caller(&reads);
        while made.load(Ordering::SeqCst) < 1 {
            tokio::task::yield_now().await;
        }
        // Ten callers arrive while the first read is under way: it started before them.
        let late: Vec<_> = (0..10).map(|_| caller(&reads)).collect();
        while reads.done.receiver_count() < 11 {
            tokio::task::yield_now().await;
        }
        gate.add_permits(2);
        // The first caller may see the second read's answer too: it also started after it called.
        first.await.unwrap();
        for caller in late {
            assert_eq!(caller.await.unwrap(), 2, "answered by the one read that started after it called");
        }
        assert_eq!(made.load(Ordering::SeqCst), 2);
        // An idle caller starts a read of its own.
        gate.add_permits(1);
        assert_eq!(reads.read().await.unwrap().revision, 3);
    }

    #[tokio::test]
    async fn a_failed_read_fails_its_callers_and_the_next_caller_reads_again() {
        let failures = Arc::new(AtomicU64::new(1));
        let left = failures.clone();
        let reads = SharedReads::new(Box::new(move || {
            let left = left.clone();
            Box::pin(async move {
                if left.fetch_sub(1, Ordering::SeqCst) > 0 {
                    return Err(Error::Unavailable { message: "etcd is down".into(), retry_after: 1 });
                }
                Ok(LatestWrite { marker: Some(7), revision: 9 })
            })
        }));
        let err = reads.read().await.unwrap_err();
        assert_eq!(err.code(), 503);
        assert_eq!(reads.read().await.unwrap(), LatestWrite { marker: Some(7), revision: 9 });
    }
}
