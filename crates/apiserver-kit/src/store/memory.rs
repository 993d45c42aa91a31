//! The in-memory store: a sorted set of `Arc` objects ([`super::objects`]), a bounded event
//! history and the list of subscribers, behind one `parking_lot::RwLock`.
//!
//! Sorted (not hashed) because lists are answered in key order and paged by key.
//! Readers hold the lock only to clone `Arc`s. An update function runs outside it, on the object
//! as read; the writer then holds the lock to check that the object is still the one it decided
//! on (else it decides again) and while the event is appended and offered to subscribers. That
//! makes read-check-write atomic, keeps revisions in commit order, and lets a new subscription
//! take a snapshot (or replay the history) and join the fan-out with no gap and no duplicate.
//!
//! Past states for paging and `resourceVersionMatch=Exact` are rebuilt from the history: every
//! event keeps the object's previous state, so undoing the events after revision `r` gives the
//! state at `r`.

use super::buffer::{Feed, Refused, buffer};
use super::objects::Objects;
use super::{
    CloseReason, Closing, Committed, Current, Event, EventType, Listing, Mutation, ObjectKey, Page, PageRequest,
    Progress, ReadAt, Revision, Store, StoreStats, Stored, Subscription, UpdateFn, WatchFrom, pages, stamp, unstamped,
};
use crate::machinery::cpu_bound;
use crate::machinery::error::{Error, Result};
use crate::machinery::resource::ApiResource;
use parking_lot::RwLock;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{self, AtomicU64};

/// A subscriber's end of the fan-out.
struct Subscriber<K> {
    /// Only events of this namespace, when set.
    namespace: Option<String>,
    /// Bounded: a full buffer drops the subscriber.
    sender: Feed<Arc<Event<K>>>,
    /// Told why, when dropped.
    closing: Closing,
}

struct State<K> {
    /// The objects, in key order.
    objects: Objects<K>,
    /// The most recent events, oldest first, at most `history_capacity`.
    history: VecDeque<Arc<Event<K>>>,
    /// The revision of the newest event dropped from the history (0: none dropped yet).
    compacted: u64,
    /// Live subscribers.
    subscribers: Vec<Subscriber<K>>,
    /// Subscribers dropped so far for falling behind.
    dropped: u64,
}

/// Objects of one resource type, in memory.
pub struct MemoryStore<K> {
    state: RwLock<State<K>>,
    /// Shared with the other stores of the server, so resourceVersions are globally increasing.
    revision: Arc<Revision>,
    /// How many events the history keeps.
    history_capacity: usize,
    /// The revision of the newest published event (or bookmark): every subscriber has every
    /// event up to it in its buffer.
    published: Progress,
    /// Objects read and tested by lists so far (their cost, whatever they returned).
    list_evaluated: AtomicU64,
}

impl<K: ApiResource> MemoryStore<K> {
    /// An empty store drawing revisions from `revision`, keeping `history_capacity` events.
    pub fn new(revision: Arc<Revision>, history_capacity: usize) -> Self {
        Self {
            state: RwLock::new(State {
                objects: Objects::default(),
                history: VecDeque::new(),
                compacted: 0,
                subscribers: Vec::new(),
                dropped: 0,
            }),
            revision,
            history_capacity: history_capacity.max(1),
            published: Progress::default(),
            list_evaluated: AtomicU64::new(0),
        }
    }
}

fn too_old(revision: u64, compacted: u64) -> Error {
    Error::Expired(format!("too old resource version: {revision} ({compacted})"))
}

impl<K: ApiResource> State<K> {
    /// Appends an event to the history and offers it to every subscriber of its namespace;
    /// subscribers whose buffer is full or closed are dropped, a full one with what it held.
    fn publish(&mut self, event: Event<K>, capacity: usize) {
        let event = Arc::new(event);
        self.history.push_back(event.clone());
        while self.history.len() > capacity {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.revision;
            }
        }
        let namespace = event.object.namespace();
        self.subscribers.retain(|s| {
            if s.namespace.as_deref().is_some_and(|ns| ns != namespace) {
                return !s.sender.is_closed();
            }
            match s.sender.try_send(event.clone()) {
                Ok(()) => true,
                Err(Refused::Full) => {
                    tracing::info!(revision = event.revision, "dropping a watcher that fell behind");
                    s.closing.set(CloseReason::FellBehind);
                    s.sender.discard();
                    self.dropped += 1;
                    false
                }
                Err(Refused::Closed) => false,
            }
        });
    }
}

/// Replication: a store that mirrors objects kept elsewhere (a view of the cluster's Pods mirrors them)
/// takes their changes at the revisions they had there, instead of drawing its own.
impl<K: ApiResource> MemoryStore<K> {
    /// Appends `event` to the history, fans it out, and records it as published.
    fn publish(&self, state: &mut State<K>, event: Event<K>) {
        let revision = event.revision;
        state.publish(event, self.history_capacity);
        self.published.advance_to(revision);
    }

    /// Applies an upsert (`Some`) or a deletion (`None`) of `key` observed at `revision`.
    /// Changes older than the store's revision are ignored, so the history stays ordered.
    pub fn replicate(&self, key: ObjectKey, object: Option<K>, revision: u64) -> Result<()> {
        let mut state = self.state.write();
        if revision <= self.revision.current() {
            tracing::debug!(
                revision,
                current = self.revision.current(),
                "ignoring a replicated change that is not newer"
            );
            return Ok(());
        }
        self.apply_replicated(&mut state, key, object, revision)?;
        self.revision.advance_to(revision);
        Ok(())
    }

    fn apply_replicated(&self, state: &mut State<K>, key: ObjectKey, object: Option<K>, revision: u64) -> Result<()> {
        let event = match object {
            Some(object) => {
                let stored = stamp(object, revision)?;
                let previous = state.objects.insert(stored.clone());
                let kind = if previous.is_some() { EventType::Modified } else { EventType::Added };
                Event {
                    revision,
                    kind,
                    object: stored,
                    previous,
                    frame: Default::default(),
                    served_frame: Default::default(),
                }
            }
            None => {
                let Some(previous) = state.objects.remove(&key) else { return Ok(()) };
                let last = stamp(previous.decode()?, revision)?;
                Event {
                    revision,
                    kind: EventType::Deleted,
                    object: last,
                    previous: Some(previous),
                    frame: Default::default(),
                    served_frame: Default::default(),
                }
            }
        };
        self.publish(state, event);
        Ok(())
    }

    /// Records that the source has reached `revision` with no change here (a watch bookmark).
    pub fn advance(&self, revision: u64) {
        let _state = self.state.write();
        self.revision.advance_to(revision);
        self.published.advance_to(revision);
    }

    /// Starts over from `objects`, listed at `revision`, with no history: reads and watches
    /// before `revision` get 410, and every subscriber is told the storage's watch ended (a
    /// watch cache that lost events it cannot replay, so its watchers re-watch or re-list).
    pub fn reset(&self, objects: Vec<Arc<Stored<K>>>, revision: u64) {
        let mut state = self.state.write();
        state.objects = objects.into_iter().collect();
        state.history.clear();
        state.compacted = revision;
        for subscriber in state.subscribers.drain(..) {
            subscriber.closing.set(CloseReason::StorageWatchEnded);
        }
        self.revision.advance_to(revision);
        self.published.advance_to(revision);
    }

    /// Replaces the whole content with `objects`, as listed at `revision` (each object carrying
    /// its own resourceVersion): changed and new objects become events at their own revisions,
    /// in order, and objects gone become deletions at `revision`.
    pub fn replace_all(&self, objects: Vec<K>, revision: u64) -> Result<()> {
        let mut state = self.state.write();
        let current = self.revision.current();
        let mut incoming: BTreeMap<ObjectKey, K> = objects.into_iter().map(|o| (ObjectKey::of(&o), o)).collect();
        let gone: Vec<ObjectKey> =
            state.objects.iter().map(|o| o.key()).filter(|k| !incoming.contains_key(k)).collect();
        let mut changes: Vec<(u64, ObjectKey, K)> = Vec::new();
        for (key, object) in std::mem::take(&mut incoming) {
            let rv: u64 = object.meta().resource_version.as_deref().and_then(|r| r.parse().ok()).unwrap_or(revision);
            let unchanged = state.objects.get(&key).is_some_and(|o| {
                object.meta().resource_version.as_deref().and_then(|r| r.parse().ok()) == Some(o.resource_version())
            });
            if !unchanged {
                changes.push((rv.max(current + 1), key, object));
            }
        }
        changes.sort_by_key(|(rv, _, _)| *rv);
        for (rv, key, object) in changes {
            self.apply_replicated(&mut state, key, Some(object), rv)?;
        }
        let deletion = revision.max(current + 1);
        for key in gone {
            self.apply_replicated(&mut state, key, None, deletion)?;
        }
        self.revision.advance_to(revision);
        self.published.advance_to(revision);
        Ok(())
    }
}

/// The [`Store`] operations, synchronous: nothing here waits for anything but the lock.
impl<K: ApiResource> MemoryStore<K> {
    /// See [`Store::get`].
    pub fn get(&self, key: &ObjectKey) -> Result<Option<Arc<Stored<K>>>> {
        Ok(self.state.read().objects.get(key).cloned())
    }

    /// See [`Store::list`].
    pub fn list(&self, namespace: Option<&str>) -> Result<Listing<K>> {
        self.list_at(namespace, ReadAt::Latest)
    }

    /// See [`Store::list_at`].
    pub fn list_at(&self, namespace: Option<&str>, at: ReadAt) -> Result<Listing<K>> {
        let page = self.list_page(PageRequest::whole(namespace, at))?;
        Ok(Listing { items: page.items, revision: page.revision })
    }

    /// See [`Store::list_page`]: the page alone is read (see `store/pages.rs`), at the latest
    /// state or, for an exact revision, with the keys changed since undone from the history.
    pub fn list_page(&self, request: PageRequest<'_, K>) -> Result<Page<K>> {
        let state = self.state.read();
        let (revision, past) = match request.at {
            // Latest and Any: a memory store has nothing older at hand.
            ReadAt::Latest | ReadAt::Any => (self.revision.current(), Vec::new()),
            ReadAt::Exact(revision) if revision < state.compacted => return Err(too_old(revision, state.compacted)),
            ReadAt::Exact(revision) => (revision, pages::past_of(&state.history, revision)),
        };
        let cut = pages::page(&state.objects, &past, &request);
        self.list_evaluated.fetch_add(cut.evaluated as u64, atomic::Ordering::Relaxed);
        Ok(Page { items: cut.items, revision, more_after: cut.more_after, remaining: cut.remaining })
    }

    /// See [`Store::subscribe`].
    pub fn subscribe(&self, namespace: Option<&str>, from: WatchFrom, capacity: usize) -> Result<Subscription<K>> {
        let mut state = self.state.write();
        let (sender, receiver) = buffer(capacity);
        let current = self.revision.current();
        let (snapshot, replay, revision) = match from {
            WatchFrom::Now => (state.objects.in_namespace(namespace), Vec::new(), current),
            WatchFrom::After(revision) => {
                if revision < state.compacted {
                    return Err(too_old(revision, state.compacted));
                }
                let replay: Vec<_> = state
                    .history
                    .iter()
                    .filter(|e| e.revision > revision)
                    .filter(|e| namespace.is_none_or(|ns| e.object.namespace() == ns))
                    .cloned()
                    .collect();
                (Vec::new(), replay, revision.max(current))
            }
        };
        let closing = Closing::default();
        state.subscribers.push(Subscriber {
            namespace: namespace.map(str::to_string),
            sender,
            closing: closing.clone(),
        });
        Ok(Subscription { snapshot, replay, revision, receiver, progress: self.published.clone(), closing })
    }

    /// The newest revision that can no longer be read or watched from: reads at or after it
    /// are served, older ones get 410.
    pub fn compacted_revision(&self) -> u64 {
        self.state.read().compacted
    }

    /// See [`Store::create`].
    pub fn create(&self, key: ObjectKey, object: K, dry_run: bool) -> Result<Arc<Stored<K>>> {
        let exists = || Error::AlreadyExists { resource: K::info().group_resource(), name: key.name.clone() };
        if dry_run {
            return match self.state.read().objects.get(&key) {
                Some(_) => Err(exists()),
                None => Ok(Arc::new(Stored::new(object)?)),
            };
        }
        // Encoded before the lock, which readers wait for: only its number is written under it.
        let encoded = unstamped(object)?;
        let mut state = self.state.write();
        if state.objects.get(&key).is_some() {
            return Err(exists());
        }
        let revision = self.revision.next();
        let stored = Arc::new(encoded.at_revision(revision)?);
        state.objects.add(stored.clone());
        let event = Event {
            revision,
            kind: EventType::Added,
            object: stored.clone(),
            previous: None,
            frame: Default::default(),
            served_frame: Default::default(),
        };
        self.publish(&mut state, event);
        Ok(stored)
    }

    /// See [`Store::mutate`]. `update` runs outside the lock, on the object as read; the
    /// decision commits only if that object is still the stored one, else `update` runs again
    /// on the newer object (optimistic concurrency, as over etcd). So a write's decoding,
    /// validation and field tracking never hold up other writers.
    pub fn mutate(&self, key: &ObjectKey, dry_run: bool, update: &mut UpdateFn<'_, K>) -> Result<Committed<K>> {
        loop {
            let current = self.state.read().objects.get(key).cloned();
            let current = current
                .ok_or_else(|| Error::NotFound { resource: K::info().group_resource(), name: key.name.clone() })?;
            // Decoding, deciding and encoding a large object run off the runtime's worker, and
            // before the lock: only the revision is written under it.
            let decided = cpu_bound::run(current.json_len(), || -> Result<_> {
                let decoded = Current::decode(current.clone())?;
                // A dry run answers the object as decided; a write's is numbered below.
                let encode = |object| if dry_run { Stored::new(object) } else { unstamped(object) };
                Ok(match update(&decoded)? {
                    Mutation::Unchanged => None,
                    Mutation::Put(object) => Some((EventType::Modified, encode(object)?)),
                    Mutation::Delete(object) => Some((EventType::Deleted, encode(object)?)),
                })
            })?;
            let decided_on = current.resource_version();
            let Some((kind, object)) = decided else {
                return Ok(Committed { object: current, deleted: false, decided_on });
            };
            if dry_run {
                return Ok(Committed { object: Arc::new(object), deleted: kind == EventType::Deleted, decided_on });
            }
            let mut state = self.state.write();
            // Taken out and put back unless it is still the object decided on: one lookup to
            // check, one to store.
            match state.objects.remove(key) {
                Some(stored) if Arc::ptr_eq(&stored, &current) => {}
                other => {
                    // Another writer won, or deleted the object: decide again on what is there now.
                    if let Some(newer) = other {
                        state.objects.add(newer);
                    }
                    continue;
                }
            }
            let revision = self.revision.next();
            let stored = match object.at_revision(revision) {
                Ok(stored) => Arc::new(stored),
                Err(error) => {
                    state.objects.add(current);
                    return Err(error);
                }
            };
            if kind != EventType::Deleted {
                state.objects.add(stored.clone());
            }
            let event = Event {
                revision,
                kind,
                object: stored.clone(),
                previous: Some(current),
                frame: Default::default(),
                served_frame: Default::default(),
            };
            self.publish(&mut state, event);
            return Ok(Committed { object: stored, deleted: kind == EventType::Deleted, decided_on });
        }
    }

    /// See [`Store::stats`].
    pub fn stats(&self) -> StoreStats {
        let state = self.state.read();
        StoreStats {
            objects: state.objects.len(),
            history: Some(state.history.len()),
            storage_watches: None,
            list_evaluated: Some(self.list_evaluated.load(atomic::Ordering::Relaxed)),
            watchers_dropped: Some(state.dropped),
        }
    }

    /// See [`Store::revision`]: every event up to it has been published.
    pub fn revision(&self) -> u64 {
        self.published.get()
    }
}

#[async_trait::async_trait]
impl<K: ApiResource> Store<K> for MemoryStore<K> {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Arc<Stored<K>>>> {
        MemoryStore::get(self, key)
    }

    async fn list_page(&self, request: PageRequest<'_, K>) -> Result<Page<K>> {
        MemoryStore::list_page(self, request)
    }

    async fn subscribe(&self, namespace: Option<&str>, from: WatchFrom, capacity: usize) -> Result<Subscription<K>> {
        MemoryStore::subscribe(self, namespace, from, capacity)
    }

    async fn create(&self, key: ObjectKey, object: K, dry_run: bool) -> Result<Arc<Stored<K>>> {
        MemoryStore::create(self, key, object, dry_run)
    }

    async fn mutate(&self, key: &ObjectKey, dry_run: bool, update: &mut UpdateFn<'_, K>) -> Result<Committed<K>> {
        MemoryStore::mutate(self, key, dry_run, update)
    }

    async fn revision(&self) -> Result<u64> {
        Ok(MemoryStore::revision(self))
    }

    async fn stats(&self) -> Result<StoreStats> {
        Ok(MemoryStore::stats(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::testing::{Widget, widget};
    use crate::store::buffer::{Buffered, Empty};

    fn store(history: usize) -> MemoryStore<Widget> {
        MemoryStore::new(Arc::new(Revision::default()), history)
    }

    fn put(s: &MemoryStore<Widget>, ns: &str, name: &str, size: f64) {
        let key = ObjectKey::new(ns, name);
        if s.get(&key).unwrap().is_some() {
            s.mutate(&key, false, &mut |cur| {
                let mut next = (**cur).clone();
                next.spec.size = size;
                Ok(Mutation::Put(next))
            })
            .unwrap();
        } else {
            s.create(key, widget(ns, name, size), false).unwrap();
        }
    }

    #[test]
    fn an_update_that_lost_a_race_runs_again_on_the_winners_object() {
        let s = store(10);
        put(&s, "a", "x", 1.0);
        let key = ObjectKey::new("a", "x");
        let mut calls = 0;
        let committed = s
            .mutate(&key, false, &mut |cur| {
                calls += 1;
                if calls == 1 {
                    // Another writer commits while this update is being decided.
                    put(&s, "a", "x", 5.0);
                }
                let mut next = (**cur).clone();
                next.spec.size = cur.spec.size + 1.0;
                Ok(Mutation::Put(next))
            })
            .unwrap();
        assert_eq!(calls, 2);
        assert_eq!(
            committed.object.decode().unwrap().spec.size,
            6.0,
            "the increment applies on top of the winner's write"
        );
        assert_eq!(s.get(&key).unwrap().unwrap().decode().unwrap().spec.size, 6.0);
    }

    fn delete(s: &MemoryStore<Widget>, ns: &str, name: &str) {
        s.mutate(&ObjectKey::new(ns, name), false, &mut |cur| Ok(Mutation::Delete((**cur).clone()))).unwrap();
    }

    fn names(l: &Listing<Widget>) -> Vec<String> {
        l.items.iter().map(|o| format!("{}={}", o.name(), o.decode().unwrap().spec.size)).collect()
    }

    #[test]
    fn revisions_increase_across_writes_and_are_stamped() {
        let s = store(10);
        put(&s, "a", "x", 1.0);
        put(&s, "b", "x", 1.0);
        let b = s.get(&ObjectKey::new("b", "x")).unwrap().unwrap();
        assert_eq!(b.resource_version(), 2);
        assert_eq!(s.revision(), 2);
    }

    #[test]
    fn lists_are_sorted_and_filtered_by_namespace() {
        let s = store(10);
        for (ns, name) in [("b", "z"), ("a", "y"), ("a", "x"), ("ab", "w")] {
            put(&s, ns, name, 1.0);
        }
        assert_eq!(names(&s.list(None).unwrap()), ["x=1", "y=1", "w=1", "z=1"]);
        assert_eq!(names(&s.list(Some("a")).unwrap()), ["x=1", "y=1"]);
    }

    #[test]
    fn exact_reads_rebuild_past_states_from_the_history() {
        let s = store(100);
        put(&s, "a", "x", 1.0); // 1
        put(&s, "a", "y", 1.0); // 2
        put(&s, "a", "x", 2.0); // 3
        delete(&s, "a", "y"); // 4
        put(&s, "a", "z", 1.0); // 5
        assert_eq!(names(&s.list_at(None, ReadAt::Exact(2)).unwrap()), ["x=1", "y=1"]);
        assert_eq!(names(&s.list_at(None, ReadAt::Exact(3)).unwrap()), ["x=2", "y=1"]);
        assert_eq!(names(&s.list_at(None, ReadAt::Exact(4)).unwrap()), ["x=2"]);
        assert_eq!(names(&s.list_at(Some("a"), ReadAt::Exact(5)).unwrap()), ["x=2", "z=1"]);
        assert_eq!(s.list_at(None, ReadAt::Exact(0)).unwrap().items.len(), 0);
    }

    #[test]
    fn reads_and_watches_beyond_the_history_are_expired() {
        let s = store(2);
        for w in 1..=4 {
            put(&s, "a", "x", w as f64);
        }
        assert_eq!(s.compacted_revision(), 2);
        assert_eq!(s.list_at(None, ReadAt::Exact(1)).unwrap_err().code(), 410);
        assert_eq!(s.subscribe(None, WatchFrom::After(1), 10).unwrap_err().code(), 410);
        assert_eq!(names(&s.list_at(None, ReadAt::Exact(2)).unwrap()), ["x=2"]);
        let sub = s.subscribe(None, WatchFrom::After(2), 10).unwrap();
        assert_eq!(sub.replay.iter().map(|e| e.revision).collect::<Vec<_>>(), [3, 4]);
    }

    #[test]
    fn subscribers_get_events_of_their_namespace_in_order() {
        let s = store(10);
        put(&s, "a", "x", 1.0);
        let mut all = s.subscribe(None, WatchFrom::Now, 10).unwrap();
        let mut only_b = s.subscribe(Some("b"), WatchFrom::Now, 10).unwrap();
        assert_eq!(all.snapshot.len(), 1);
        assert_eq!(all.revision, 1);
        put(&s, "b", "y", 1.0);
        put(&s, "a", "x", 2.0);
        delete(&s, "b", "y");
        let kinds = |r: &mut Buffered<Arc<Event<Widget>>>| {
            let mut out = Vec::new();
            while let Ok(e) = r.try_recv() {
                out.push((e.revision, e.kind));
            }
            out
        };
        assert_eq!(
            kinds(&mut all.receiver),
            [(2, EventType::Added), (3, EventType::Modified), (4, EventType::Deleted)]
        );
        assert_eq!(kinds(&mut only_b.receiver), [(2, EventType::Added), (4, EventType::Deleted)]);
    }

    #[test]
    fn a_subscriber_that_falls_behind_is_dropped_without_blocking_writes() {
        let s = store(100);
        let mut slow = s.subscribe(None, WatchFrom::Now, 2).unwrap();
        let mut fast = s.subscribe(None, WatchFrom::Now, 100).unwrap();
        for i in 0..10 {
            put(&s, "a", &format!("l{i}"), 1.0);
        }
        assert!(
            matches!(slow.receiver.try_recv(), Err(Empty::Closed)),
            "the slow subscriber was dropped, and the events it had not taken with it"
        );
        assert_eq!(slow.closing.reason(), Some(CloseReason::FellBehind));
        assert_eq!(s.stats().watchers_dropped, Some(1));
        let mut fast_got = 0;
        while fast.receiver.try_recv().is_ok() {
            fast_got += 1;
        }
        assert_eq!(fast_got, 10);
    }

    #[test]
    fn dry_run_writes_nothing_and_publishes_nothing() {
        let s = store(10);
        let mut sub = s.subscribe(None, WatchFrom::Now, 10).unwrap();
        s.create(ObjectKey::new("a", "x"), widget("a", "x", 1.0), true).unwrap();
        assert!(s.get(&ObjectKey::new("a", "x")).unwrap().is_none());
        assert_eq!(s.revision(), 0);
        assert!(sub.receiver.try_recv().is_err());
    }

    #[test]
    fn replicated_changes_keep_their_revisions_and_relists_emit_only_differences() {
        let s = store(100);
        let at = |name: &str, rv: u64| {
            let mut l = widget("a", name, 1.0);
            l.metadata.resource_version = Some(rv.to_string());
            l
        };
        s.replace_all(vec![at("x", 10), at("y", 12)], 15).unwrap();
        assert_eq!(s.revision(), 15);
        let mut sub = s.subscribe(None, WatchFrom::Now, 100).unwrap();
        s.replicate(ObjectKey::new("a", "x"), Some(at("x", 16)), 16).unwrap();
        s.replicate(ObjectKey::new("a", "x"), Some(at("x", 14)), 14).unwrap(); // stale: ignored
        s.advance(20);
        assert_eq!(s.revision(), 20);
        // Re-list at 30: y changed at 25, x gone, z new at 22.
        s.replace_all(vec![at("y", 25), at("z", 22)], 30).unwrap();
        let mut got = Vec::new();
        while let Ok(e) = sub.receiver.try_recv() {
            got.push((e.revision, e.kind, e.object.name().into_owned()));
        }
        assert_eq!(
            got,
            [
                (16, EventType::Modified, "x".to_string()),
                (22, EventType::Added, "z".to_string()),
                (25, EventType::Modified, "y".to_string()),
                (30, EventType::Deleted, "x".to_string()),
            ]
        );
        assert_eq!(names(&s.list_at(None, ReadAt::Exact(20)).unwrap()), ["x=1", "y=1"]);
        assert_eq!(s.revision(), 30);
    }

    #[test]
    fn deleted_objects_carry_the_deletion_revision() {
        let s = store(10);
        put(&s, "a", "x", 1.0);
        let deleted =
            s.mutate(&ObjectKey::new("a", "x"), false, &mut |cur| Ok(Mutation::Delete((**cur).clone()))).unwrap();
        assert!(deleted.deleted);
        assert_eq!(deleted.object.resource_version(), 2);
    }

    proptest::proptest! {
        /// Every page, at the latest state or at any revision still in the history, is the cut
        /// of the whole list at that revision that a model of the writes gives: the same items,
        /// the same next key and the same count of what follows.
        #[test]
        fn a_page_read_in_place_is_the_page_of_the_whole_list_at_its_revision(
            writes in proptest::collection::vec((0u8..3, 0u8..6, proptest::option::of(0u8..4)), 1..40),
            history in 1usize..30,
            at in 0usize..40,
            namespace in proptest::option::of(0u8..3),
            after in proptest::option::of(0u8..6),
            limit in proptest::option::of(1usize..4),
            odd_only in proptest::bool::ANY,
        ) {
            let s = store(history);
            let mut model: BTreeMap<ObjectKey, u8> = BTreeMap::new();
            let mut states = vec![(0u64, model.clone())];
            for (ns, name, size) in writes {
                // Namespaces whose keys sort next to each other's ("ns/…" < "ns0/…", "ns-/…" first).
                let (ns, name) = (["ns", "ns0", "ns-"][usize::from(ns)].to_string(), format!("l{name}"));
                let key = ObjectKey::new(&ns, &name);
                match size {
                    Some(w) => { put(&s, &ns, &name, f64::from(w)); model.insert(key, w); }
                    None if model.remove(&key).is_some() => delete(&s, &ns, &name),
                    None => continue,
                }
                states.push((s.revision(), model.clone()));
            }
            let (revision, state) = &states[at % states.len()];
            let namespace = namespace.map(|n| ["ns", "ns0", "ns-"][usize::from(n)].to_string());
            let after = after.map(|n| ObjectKey::new(namespace.as_deref().unwrap_or("ns0"), format!("l{n}")));
            let selects = |o: &Stored<Widget>| !odd_only || o.decode().unwrap().spec.size as u8 % 2 == 1;
            let request = |at| PageRequest {
                namespace: namespace.as_deref(), at, after: after.as_ref(), limit, selects: &selects, count_remaining: !odd_only,
            };
            let at = if *revision == s.revision() { ReadAt::Latest } else { ReadAt::Exact(*revision) };
            let page = match s.list_page(request(at)) {
                Err(Error::Expired(_)) => return Ok(()),
                other => other.unwrap(),
            };
            let whole: Vec<(ObjectKey, u8)> = state.iter()
                .filter(|(k, _)| namespace.as_deref().is_none_or(|ns| k.namespace == ns))
                .filter(|(k, _)| after.as_ref().is_none_or(|a| *k > a))
                .map(|(k, w)| (k.clone(), *w))
                .collect();
            let selected: Vec<&(ObjectKey, u8)> = whole.iter().filter(|(_, w)| !odd_only || w % 2 == 1).collect();
            let wanted = limit.unwrap_or(usize::MAX).min(selected.len());
            let got: Vec<(ObjectKey, u8)> = page.items.iter().map(|o| (o.key(), o.decode().unwrap().spec.size as u8)).collect();
            let expected: Vec<(ObjectKey, u8)> = selected[..wanted].iter().map(|p| (*p).clone()).collect();
            proptest::prop_assert_eq!(&got, &expected);
            let more = wanted < selected.len();
            proptest::prop_assert_eq!(page.more_after.clone(), more.then(|| expected.last().unwrap().0.clone()));
            if more && !odd_only {
                let last = &expected.last().unwrap().0;
                proptest::prop_assert_eq!(page.remaining, whole.iter().filter(|(k, _)| k > last).count());
            }
            proptest::prop_assert_eq!(page.revision, *revision);
        }
    }
}
