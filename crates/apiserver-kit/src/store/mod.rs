//! Storage of objects behind one trait, so the memory store (the default) and the etcd store
//! (for several replicas sharing one durable state) are interchangeable.
//!
//! The contract mirrors the kube-apiserver's storage interface: every committed write gets the
//! next value of one global, increasing revision, which becomes the object's `resourceVersion`;
//! updates run a caller's function on the current object under the store's write serialization
//! (the equivalent of `GuaranteedUpdate`), so preconditions and validation see the state they
//! change.
//!
//! Every committed write is also an [`Event`], kept in a bounded history (the window a watch or a
//! paged/`Exact` list can reach back to) and fanned out to subscribers through bounded channels:
//! a subscriber that does not keep up is dropped, never waited for.

pub mod buffer;
pub mod etcd;
pub mod memory;
pub mod objects;
mod pages;

use crate::machinery::error::Result;
pub use crate::machinery::key::ObjectKey;
pub use crate::machinery::stored::{Current, Stored};
use std::sync::Arc;

/// What an update function decided to do with the current object.
#[derive(Debug, Clone)]
pub enum Mutation<K> {
    /// Store this new state.
    Put(K),
    /// Remove the object (its last state is the given one, e.g. with its finalizers gone).
    Delete(K),
    /// Leave the object as it is; no revision is used.
    Unchanged,
}

/// The result of a committed (or dry-run) mutation.
#[derive(Debug, Clone)]
pub struct Committed<K> {
    /// The object as stored, or as it was when deleted (with the deletion's resourceVersion).
    pub object: Arc<Stored<K>>,
    /// Whether the object is gone.
    pub deleted: bool,
    /// The resourceVersion of the object the mutation was decided on.
    pub decided_on: u64,
}

impl<K: crate::machinery::resource::ApiResource> Committed<K> {
    /// What a write of the object (an update, a patch, an apply) answers with: the object
    /// stored; or, when the write removed the last finalizer of an object being deleted and so
    /// deleted it, the object as the write made it, at the resourceVersion it was decided on, as
    /// the kube-apiserver's store answers "the object in the request" then (its watchers see the
    /// deleted object at the deletion's resourceVersion).
    pub fn written(self) -> Result<Arc<Stored<K>>> {
        if !self.deleted {
            return Ok(self.object);
        }
        Ok(Arc::new(Stored::new(self.object.decode()?)?.at_revision(self.decided_on)?))
    }
}

/// A snapshot of a collection.
#[derive(Debug, Clone)]
pub struct Listing<K> {
    /// Objects sorted by namespace then name.
    pub items: Vec<Arc<Stored<K>>>,
    /// The store's revision at the time of the snapshot.
    pub revision: u64,
}

/// Which page of a collection to read (see [`Store::list_page`]).
pub struct PageRequest<'a, K> {
    /// One namespace, or all.
    pub namespace: Option<&'a str>,
    /// The state to read.
    pub at: ReadAt,
    /// Only objects after this key (a continue token's).
    pub after: Option<&'a ObjectKey>,
    /// At most this many objects.
    pub limit: Option<usize>,
    /// Only objects this selects (label and field selectors).
    pub selects: &'a (dyn Fn(&Stored<K>) -> bool + Sync),
    /// Whether the page's `remaining` is wanted (a list without selectors reports it).
    pub count_remaining: bool,
}

/// Selects every object.
fn every<K>(_: &Stored<K>) -> bool {
    true
}

impl<'a, K> PageRequest<'a, K> {
    /// Every object of `namespace` (or all) at `at`, in one page.
    pub fn whole(namespace: Option<&'a str>, at: ReadAt) -> Self {
        Self { namespace, at, after: None, limit: None, selects: &every::<K>, count_remaining: false }
    }
}

/// One page of a collection.
#[derive(Debug)]
pub struct Page<K> {
    /// The selected objects, in key order.
    pub items: Vec<Arc<Stored<K>>>,
    /// The revision the page was read at.
    pub revision: u64,
    /// The key of the last item, when more selected objects follow.
    pub more_after: Option<ObjectKey>,
    /// How many objects follow the page (exact when every object is selected).
    pub remaining: usize,
}

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Changed.
    Modified,
    /// Gone.
    Deleted,
}

/// One committed change, shared by the history and every subscriber.
#[derive(Debug)]
pub struct Event<K> {
    /// The revision of the change (the object's new resourceVersion, or its deletion's).
    pub revision: u64,
    /// What happened.
    pub kind: EventType,
    /// The object after the change; for a deletion, its last state stamped with the deletion's revision.
    pub object: Arc<Stored<K>>,
    /// The object before the change; `None` for a creation.
    pub previous: Option<Arc<Stored<K>>>,
    /// The plain JSON watch frame, encoded once by the first watcher that needs it.
    pub frame: std::sync::OnceLock<bytes::Bytes>,
    /// The plain JSON watch frame at another served version (named by its type), converted and
    /// encoded once by the first watcher at that version.
    pub served_frame: std::sync::OnceLock<(std::any::TypeId, bytes::Bytes)>,
}

/// Which state a read is served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAt {
    /// The latest state: every write acknowledged before the read is in it.
    Latest,
    /// Any state the store has at hand, at least as new as every revision the caller waited
    /// for with [`Store::revision`] (`resourceVersion=0`, or a `NotOlderThan` read after waiting).
    Any,
    /// The state exactly at this revision (from the event history); 410 beyond the history.
    Exact(u64),
}

/// Where a subscription starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchFrom {
    /// From now, with a snapshot of the current objects for synthetic `ADDED` events.
    Now,
    /// Every event after this revision (replayed from the history); 410 beyond it.
    After(u64),
}

/// A live subscription to a store's events.
#[derive(Debug)]
pub struct Subscription<K> {
    /// For [`WatchFrom::Now`]: the objects at [`Subscription::revision`].
    pub snapshot: Vec<Arc<Stored<K>>>,
    /// For [`WatchFrom::After`]: the history events after the requested revision, in order.
    pub replay: Vec<Arc<Event<K>>>,
    /// The revision the subscription starts from; later events arrive on `receiver`.
    pub revision: u64,
    /// Events committed after `revision`, in order. It closes when the subscriber fell behind
    /// (or, for a remote store, when the store's watch broke).
    pub receiver: buffer::Buffered<Arc<Event<K>>>,
    /// How far the events in `receiver` reach: a bookmark may carry this revision.
    pub progress: Progress,
    /// Why the store closed `receiver`, once it has.
    pub closing: Closing,
}

/// Why a store ended a subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Its buffer was full: the subscriber did not keep up and was dropped.
    FellBehind,
    /// The storage's own watch ended (etcd unreachable, compacted, cancelled).
    StorageWatchEnded,
}

/// Where a store records, before closing a subscription's buffer, why it does.
#[derive(Clone, Debug, Default)]
pub struct Closing(Arc<std::sync::OnceLock<CloseReason>>);

impl Closing {
    /// Records `reason` (the first one wins).
    pub fn set(&self, reason: CloseReason) {
        let _ = self.0.set(reason);
    }

    /// The recorded reason, if any.
    pub fn reason(&self) -> Option<CloseReason> {
        self.0.get().copied()
    }
}

/// The revision up to which every event of a subscription is already in its buffer (or was
/// before the subscription started), so a bookmark at it never skips an event.
#[derive(Clone, Debug, Default)]
pub struct Progress(Arc<std::sync::atomic::AtomicU64>);

impl Progress {
    /// Progress starting at `revision`.
    pub fn at(revision: u64) -> Self {
        Self(Arc::new(std::sync::atomic::AtomicU64::new(revision)))
    }

    /// The revision reached.
    pub fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Moves to `revision` when it is newer.
    pub fn advance_to(&self, revision: u64) {
        self.0.fetch_max(revision, std::sync::atomic::Ordering::AcqRel);
    }
}

/// The stored form of `object` committed at `revision`, which becomes its `resourceVersion`.
pub fn stamp<K: crate::machinery::resource::ApiResource>(object: K, revision: u64) -> Result<Arc<Stored<K>>> {
    Ok(Arc::new(unstamped(object)?.at_revision(revision)?))
}

/// The stored form of `object`, to be given its revision by [`Stored::at_revision`] once it is
/// known: the encoding, most of a write's cost for a large object, done before a lock is taken.
pub fn unstamped<K: crate::machinery::resource::ApiResource>(mut object: K) -> Result<Stored<K>> {
    // A placeholder, so that the encoding holds the member whose number the revision replaces.
    object.meta_mut().resource_version = Some("1".to_string());
    Stored::new(object)
}

/// The function a [`Store::mutate`] runs on the current object, decoded, to decide the change.
pub type UpdateFn<'f, K> = dyn FnMut(&Current<K>) -> Result<Mutation<K>> + Send + 'f;

/// Storage for one resource type. Implementations set `metadata.resourceVersion` on commit.
///
/// Every method may fail with 503 `Unavailable` when the storage cannot be reached.
#[async_trait::async_trait]
pub trait Store<K: crate::machinery::resource::ApiResource>: Send + Sync + 'static {
    /// The object at `key`, if any, as of now (a linearizable read).
    async fn get(&self, key: &ObjectKey) -> Result<Option<Arc<Stored<K>>>>;

    /// The object at `key` in any state the store has at hand ([`ReadAt::Any`]).
    async fn get_any(&self, key: &ObjectKey) -> Result<Option<Arc<Stored<K>>>> {
        self.get(key).await
    }

    /// Every object, or those of one namespace, at one consistent revision.
    async fn list(&self, namespace: Option<&str>) -> Result<Listing<K>> {
        self.list_at(namespace, ReadAt::Latest).await
    }

    /// Like [`Store::list`], at the latest or an exact past revision: the one page of it all.
    async fn list_at(&self, namespace: Option<&str>, at: ReadAt) -> Result<Listing<K>> {
        let page = self.list_page(PageRequest::whole(namespace, at)).await?;
        Ok(Listing { items: page.items, revision: page.revision })
    }

    /// The objects `request` selects after its key, at most its limit, read at one revision
    /// (each store reads the key range, not the whole list).
    async fn list_page(&self, request: PageRequest<'_, K>) -> Result<Page<K>>;

    /// Subscribes to the events of one namespace (or all) from `from`; the subscriber's buffer
    /// holds `capacity` events.
    async fn subscribe(&self, namespace: Option<&str>, from: WatchFrom, capacity: usize) -> Result<Subscription<K>>;

    /// Stores a new object; 409 `AlreadyExists` if its key is taken. With `dry_run` the checks
    /// run but nothing is stored, and the answer is `object` as given (no resourceVersion is
    /// stamped; one it carries stays).
    async fn create(&self, key: ObjectKey, object: K, dry_run: bool) -> Result<Arc<Stored<K>>>;

    /// Runs `update` on the current object at `key` and applies its decision atomically;
    /// 404 when there is no object. With `dry_run` the decision is returned but not applied.
    /// `update` may run more than once: again on the newer object when another writer won.
    async fn mutate(&self, key: &ObjectKey, dry_run: bool, update: &mut UpdateFn<'_, K>) -> Result<Committed<K>>;

    /// The latest revision committed; every event up to it can be read and watched.
    async fn revision(&self) -> Result<u64>;

    /// Sizes, for metrics.
    async fn stats(&self) -> Result<StoreStats>;
}

/// A store's sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Objects stored.
    pub objects: usize,
    /// Events held for watches and paging, for a store that keeps its own history.
    pub history: Option<usize>,
    /// Watches the store holds open on its storage (etcd), for a store that has any.
    pub storage_watches: Option<usize>,
    /// Objects read and tested by the lists served from memory so far, for a store that serves
    /// them (the kube-apiserver's `apiserver_cache_list_evaluated_objects_total`).
    pub list_evaluated: Option<u64>,
    /// Watchers dropped so far for falling behind (their buffer full), for a store that serves
    /// watchers from memory.
    pub watchers_dropped: Option<u64>,
}

/// The global revision counter shared by every store of a server.
#[derive(Debug, Default)]
pub struct Revision(std::sync::atomic::AtomicU64);

impl Revision {
    /// The next revision; only called while the calling store serializes its writes.
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
    }

    /// The latest revision handed out.
    pub fn current(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Moves to `revision` when it is newer (for revisions that come from elsewhere).
    pub fn advance_to(&self, revision: u64) {
        self.0.fetch_max(revision, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::ObjectKey;

    #[test]
    fn keys_order_as_the_bytes_of_namespace_slash_name() {
        let mut keys: Vec<ObjectKey> =
            [("a", "z"), ("a-b", "x"), ("ab", "a"), ("a", "b"), ("a.b", "c")].map(|(n, m)| ObjectKey::new(n, m)).into();
        keys.sort();
        let paths: Vec<String> = keys.iter().map(|k| format!("{}/{}", k.namespace, k.name)).collect();
        let mut bytewise = paths.clone();
        bytewise.sort();
        assert_eq!(paths, bytewise);
        assert_eq!(paths, ["a-b/x", "a.b/c", "a/b", "a/z", "ab/a"]);
    }
}
