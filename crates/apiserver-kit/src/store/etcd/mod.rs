//! The etcd store: objects as JSON under `<prefix>/<plural>/<namespace>/<name>` (`<prefix>/<plural>/<name>`
//! for a cluster-scoped resource), shared by every
//! replica pointed at the same etcd and prefix, as the kube-apiserver keeps its own objects.
//!
//! - resourceVersion = the key's etcd mod revision (not stored in the JSON; stamped on read);
//! - create is a transaction "the key does not exist" → put (409 `AlreadyExists` otherwise);
//! - update and delete read the object, run the caller's decision, and commit it in a
//!   transaction "the mod revision is still the one read", retrying on the newer object when
//!   another writer (another replica) won, as `GuaranteedUpdate` does;
//! - every write also puts the resource's *write marker*, the key `<prefix>/<plural>/` itself, in
//!   the same transaction: the marker's mod revision is always the revision of the resource's
//!   latest write, which is what a consistent read from the watch cache waits for ([`cache`]);
//! - get and lists at the latest revision are linearizable reads; lists at an exact revision
//!   (paging, `resourceVersionMatch=Exact`) read etcd's history at it; a page reads from its
//!   continue key on, only as far as its limit needs; reads and watches before etcd's last
//!   compaction get 410;
//! - a watch of this store alone is an etcd watch of its own, from its revision, with the
//!   previous values; the server puts a [`cache::WatchCache`] in front, which holds one etcd
//!   watch per resource and serves every watcher from it.

pub mod cache;
pub mod client;
pub mod compactor;
pub mod connection;
pub mod grpc;
mod whole_range;

use super::buffer::{Feed, Refused, buffer};
use super::{
    CloseReason, Closing, Committed, Event, EventType, Mutation, ObjectKey, Page, PageRequest, Progress, ReadAt, Store,
    StoreStats, Stored, Subscription, UpdateFn, WatchFrom, stamp,
};
use crate::machinery::cpu_bound;
use crate::machinery::error::{Error, Result};
use crate::machinery::resource::ApiResource;
use client::{EtcdClient, WatchStream, create_revision_is, delete_op, first_read, get_op, mod_revision_is, put_op};
use connection::api_error;
use grpc::etcdserverpb::{RangeRequest, ResponseHeader, WatchCreateRequest};
use grpc::mvccpb::{KeyValue, event::EventType as EtcdEventType};
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many objects one etcd range request of a page reads at most (a list without a limit
/// reads in chunks by bytes: [`whole_range`]).
const LIST_CHUNK: usize = 1000;

/// Objects of one resource type, in etcd.
pub struct EtcdStore<K> {
    client: EtcdClient,
    /// `<prefix>/<plural>/`: every key of this resource starts with it, and the key itself is
    /// the write marker.
    prefix: String,
    /// The etcd watches this store holds open, for the `<prefix>_storage_watches` metric.
    watches: Arc<AtomicUsize>,
    _kind: PhantomData<fn() -> K>,
}

/// The resource's latest write as etcd knew it at one linearizable read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatestWrite {
    /// The write marker's mod revision: the revision of the latest write of the resource
    /// (`None` before its first write).
    pub marker: Option<u64>,
    /// etcd's revision at the read: no write of the resource happened after `marker` up to it.
    pub revision: u64,
}

impl<K: ApiResource> EtcdStore<K> {
    /// A store of `K` under `prefix` (without a trailing slash) in the etcd `client` talks to.
    pub fn new(client: EtcdClient, prefix: &str) -> Self {
        Self {
            client,
            prefix: format!("{}/{}/", prefix.trim_end_matches('/'), K::info().plural),
            watches: Arc::default(),
            _kind: PhantomData,
        }
    }

    /// The etcd key of an object: `<prefix>/<plural>/<namespace>/<name>`, or
    /// `<prefix>/<plural>/<name>` for a cluster-scoped resource, as the kube-apiserver lays out.
    fn key(&self, key: &ObjectKey) -> String {
        if K::info().namespaced {
            format!("{}{}/{}", self.prefix, key.namespace, key.name)
        } else {
            format!("{}{}", self.prefix, key.name)
        }
    }

    /// The key prefix of one namespace, or of all (which also holds the write marker).
    fn range(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) => format!("{}{ns}/", self.prefix),
            None => self.prefix.clone(),
        }
    }

    /// The first key and the end of the objects of one namespace, or of all: the write marker
    /// sorts first and is not an object.
    fn span(&self, namespace: Option<&str>) -> (Vec<u8>, Vec<u8>) {
        let range = self.range(namespace);
        let end = prefix_end(&range);
        let mut start = range.into_bytes();
        if namespace.is_none() {
            start.push(0);
        }
        (start, end)
    }

    /// The write marker put by every write's transaction.
    fn marker_op(&self) -> grpc::etcdserverpb::RequestOp {
        put_op(self.prefix.clone(), Vec::new())
    }

    /// The object key of an etcd key of this store; `None` for the write marker (or a key that
    /// is not an object's).
    fn object_key(&self, key: &[u8]) -> Option<ObjectKey> {
        let rest = std::str::from_utf8(key.strip_prefix(self.prefix.as_bytes())?).ok()?;
        if !K::info().namespaced {
            return Some(ObjectKey::new("", rest)).filter(|_| !rest.is_empty());
        }
        let (namespace, name) = rest.split_once('/')?;
        Some(ObjectKey::new(namespace, name))
    }

    /// The etcd watches this store holds open.
    pub fn watches(&self) -> usize {
        self.watches.load(Ordering::Relaxed)
    }

    /// The revision of the resource's latest write and etcd's current revision, read at once
    /// (linearizable).
    pub async fn latest_write(&self) -> Result<LatestWrite> {
        let response = self.client.get(self.prefix.as_bytes()).await.map_err(api_error)?;
        let revision = header_revision(response.header.as_ref())?;
        let marker = response.kvs.first().map(|kv| revision_of(kv.mod_revision));
        Ok(LatestWrite { marker, revision })
    }

    /// Puts the write marker if it is missing (objects written before markers existed): from
    /// then on a consistent read waits for a state that includes them.
    pub async fn ensure_marker(&self) -> Result<()> {
        let absent = create_revision_is(self.prefix.clone(), 0);
        self.client.txn(vec![absent], vec![self.marker_op()], Vec::new()).await.map_err(api_error)?;
        Ok(())
    }

    /// An etcd watch of the keys of one namespace, or of all (the write marker too), after
    /// `revision`, counted in [`EtcdStore::watches`] while it lives.
    async fn watch_range(&self, namespace: Option<&str>, revision: u64, prev_kv: bool) -> Result<WatchStream> {
        let range = self.range(namespace);
        let request = WatchCreateRequest {
            range_end: prefix_end(&range),
            key: range.into_bytes(),
            start_revision: etcd_revision(revision.saturating_add(1))?,
            prev_kv,
            ..Default::default()
        };
        let stream = self.client.watch(request).await.map_err(api_error)?;
        Ok(stream.counted(self.watches.clone()))
    }
}

/// The JSON etcd keeps: `object` without its resourceVersion, which is etcd's to give and is
/// stamped back on every read (taken out for the encoding and put back, not cloned).
fn encode<K: ApiResource>(object: &mut K) -> Result<Vec<u8>> {
    let revision = object.meta_mut().resource_version.take();
    let encoded =
        crate::machinery::json::to_vec(&*object).map_err(|e| Error::Internal(format!("encoding for storage: {e}")));
    object.meta_mut().resource_version = revision;
    encoded
}

fn revision_of(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The revision a read at `at` asks etcd for: 0 for the latest.
fn read_revision(at: ReadAt) -> Result<u64> {
    match at {
        ReadAt::Latest | ReadAt::Any => Ok(0),
        ReadAt::Exact(0) => Err(Error::BadRequest("resourceVersion 0 cannot be read exactly".into())),
        ReadAt::Exact(revision) => Ok(revision),
    }
}

/// A resourceVersion as etcd's signed revision.
fn etcd_revision(revision: u64) -> Result<i64> {
    i64::try_from(revision).map_err(|_| Error::BadRequest(format!("resourceVersion {revision} is too large")))
}

fn decode<K: ApiResource>(kv: &KeyValue) -> Result<K> {
    let mut object = K::decode_stored(&kv.value).map_err(|e| {
        Error::Internal(format!("the object stored at {} cannot be decoded: {e}", String::from_utf8_lossy(&kv.key)))
    })?;
    object.meta_mut().resource_version = Some(kv.mod_revision.to_string());
    Ok(object)
}

/// The stored form of what etcd holds at `kv`.
fn stored<K: ApiResource>(kv: &KeyValue) -> Result<Arc<Stored<K>>> {
    Ok(Arc::new(Stored::new(decode(kv)?)?))
}

fn header_revision(header: Option<&ResponseHeader>) -> Result<u64> {
    header.map(|h| revision_of(h.revision)).ok_or_else(|| Error::Internal("etcd answered without a revision".into()))
}

/// The first key after `key`.
fn key_after(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

/// The key after every key starting with `prefix` (etcd's "range end" of a prefix).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

impl<K: ApiResource> EtcdStore<K> {
    /// The object at `key` with its mod revision, read now.
    async fn read(&self, key: &str) -> Result<Option<Candidate<K>>> {
        let response = self.client.get(key).await.map_err(api_error)?;
        response.kvs.first().map(Candidate::read).transpose()
    }

    /// How many keys follow `last` before `end` at etcd revision `at`.
    async fn count_after(&self, last: &ObjectKey, end: Vec<u8>, at: i64) -> Result<usize> {
        let from = key_after(self.key(last).as_bytes());
        let count = RangeRequest { key: from, range_end: end, count_only: true, revision: at, ..Default::default() };
        let response = self.client.range(count).await.map_err(api_error)?;
        Ok(usize::try_from(response.count).unwrap_or_default())
    }

    /// 410 when `revision` is older than etcd's last compaction.
    async fn ensure_readable(&self, namespace: Option<&str>, revision: u64) -> Result<()> {
        let at = etcd_revision(revision)?;
        // A read of one key at the revision fails the same way a range would.
        let read = RangeRequest { key: self.range(namespace).into_bytes(), revision: at, ..Default::default() };
        self.client.range(read).await.map_err(api_error)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl<K: ApiResource> Store<K> for EtcdStore<K> {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Arc<Stored<K>>>> {
        Ok(self.read(&self.key(key)).await?.map(|current| current.object))
    }

    async fn list_page(&self, request: PageRequest<'_, K>) -> Result<Page<K>> {
        let (first, end) = self.span(request.namespace);
        let mut start = match request.after {
            Some(after) => key_after(self.key(after).as_bytes()),
            None => first,
        };
        let mut at = etcd_revision(read_revision(request.at)?)?;
        let Some(limit) = request.limit else {
            let (items, at) = whole_range::read(&self.client, start, end, at, request.selects).await?;
            return Ok(Page { items, revision: revision_of(at), more_after: None, remaining: 0 });
        };
        // One more than the limit tells whether more follow.
        let wanted = limit.saturating_add(1);
        let mut items: Vec<Arc<Stored<K>>> = Vec::new();
        // The most a chunk asks for: LIST_CHUNK, or less once an answer was too large for gRPC.
        let mut most = LIST_CHUNK;
        'chunks: loop {
            let mut chunk = wanted.saturating_sub(items.len()).clamp(1, most);
            let response = whole_range::fetch(&self.client, &mut chunk, &start, &end, &mut at).await?;
            most = most.min(chunk);
            for kv in &response.kvs {
                start = key_after(&kv.key);
                let object = stored::<K>(kv)?;
                if (request.selects)(&object) {
                    items.push(object);
                    if items.len() == wanted {
                        break 'chunks;
                    }
                }
            }
            if !response.more || response.kvs.is_empty() {
                break;
            }
        }
        let mut more_after = None;
        let mut remaining = 0;
        if items.len() > limit {
            items.truncate(limit);
            more_after = items.last().map(|o| o.key());
            if let Some(last) = &more_after {
                remaining = self.count_after(last, end, at).await?;
            }
        }
        Ok(Page { items, revision: revision_of(at), more_after, remaining })
    }

    async fn subscribe(&self, namespace: Option<&str>, from: WatchFrom, capacity: usize) -> Result<Subscription<K>> {
        let (snapshot, revision) = match from {
            WatchFrom::Now => {
                let listing = self.list_at(namespace, ReadAt::Latest).await?;
                (listing.items, listing.revision)
            }
            WatchFrom::After(revision) => {
                self.ensure_readable(namespace, revision).await?;
                (Vec::new(), revision)
            }
        };
        let stream = self.watch_range(namespace, revision, true).await?;
        let (sender, receiver) = buffer(capacity);
        let progress = Progress::at(revision);
        let closing = Closing::default();
        let marker = self.prefix.clone().into_bytes();
        tokio::spawn(forward::<K>(stream, marker, sender, progress.clone(), closing.clone()));
        Ok(Subscription { snapshot, replay: Vec::new(), revision, receiver, progress, closing })
    }

    async fn create(&self, key: ObjectKey, object: K, dry_run: bool) -> Result<Arc<Stored<K>>> {
        let path = self.key(&key);
        let exists = || Error::AlreadyExists { resource: K::info().group_resource(), name: key.name.clone() };
        if dry_run {
            return match self.read(&path).await? {
                Some(_) => Err(exists()),
                None => Ok(Arc::new(Stored::new(object)?)),
            };
        }
        let absent = create_revision_is(path.clone(), 0);
        let mut object = object;
        let writes = vec![put_op(path, encode(&mut object)?), self.marker_op()];
        let response = self.client.txn(vec![absent], writes, Vec::new()).await.map_err(api_error)?;
        if !response.succeeded {
            return Err(exists());
        }
        stamp(object, header_revision(response.header.as_ref())?)
    }

    async fn mutate(&self, key: &ObjectKey, dry_run: bool, update: &mut UpdateFn<'_, K>) -> Result<Committed<K>> {
        self.mutate_from(key, None, dry_run, update).await
    }

    async fn stats(&self) -> Result<StoreStats> {
        let (key, range_end) = self.span(None);
        let count = RangeRequest { key, range_end, count_only: true, ..Default::default() };
        let response = self.client.range(count).await.map_err(api_error)?;
        Ok(StoreStats {
            objects: usize::try_from(response.count).unwrap_or_default(),
            history: None,
            storage_watches: Some(self.watches()),
            list_evaluated: None,
            watchers_dropped: None,
        })
    }

    async fn revision(&self) -> Result<u64> {
        // Any read answers with etcd's current revision.
        Ok(self.latest_write().await?.revision)
    }
}

impl<K: ApiResource> EtcdStore<K> {
    /// [`Store::mutate`], deciding first on `cached` (a copy of the object that may be stale)
    /// when given, which saves reading the object from etcd: the transaction commits only if
    /// that copy is still the stored object. A decision that does not commit (no change, an
    /// error, a dry run) is made again on the object read from etcd, so a stale copy never
    /// decides an answer.
    pub async fn mutate_from(
        &self,
        key: &ObjectKey,
        cached: Option<Arc<Stored<K>>>,
        dry_run: bool,
        update: &mut UpdateFn<'_, K>,
    ) -> Result<Committed<K>> {
        let path = self.key(key);
        let not_found = || Error::NotFound { resource: K::info().group_resource(), name: key.name.clone() };
        let cached = cached.filter(|_| !dry_run).and_then(|object| {
            let revision = i64::try_from(object.resource_version()).ok().filter(|r| *r > 0)?;
            Some(Candidate { object, revision, cached: true, outdated: false })
        });
        let mut current = match cached {
            Some(cached) => cached,
            None => self.read(&path).await?.ok_or_else(not_found)?,
        };
        loop {
            // Off the runtime's worker for a large object (see `cpu_bound`).
            let decision = cpu_bound::run(current.object.json_len(), || -> Result<Result<Mutation<K>>> {
                Ok(update(&super::Current::decode(current.object.clone())?))
            })?;
            if current.cached && !matches!(decision, Ok(Mutation::Put(_) | Mutation::Delete(_))) {
                current = self.read(&path).await?.ok_or_else(not_found)?;
                continue;
            }
            let decided_on = current.object.resource_version();
            let (mut object, deleted) = match decision? {
                Mutation::Unchanged if current.outdated && !dry_run => (current.object.decode()?, false),
                Mutation::Unchanged => return Ok(Committed { object: current.object, deleted: false, decided_on }),
                Mutation::Put(object) => (object, false),
                Mutation::Delete(object) => (object, true),
            };
            if dry_run {
                return Ok(Committed { object: Arc::new(Stored::new(object)?), deleted, decided_on });
            }
            let write = if deleted { delete_op(path.clone()) } else { put_op(path.clone(), encode(&mut object)?) };
            let response = self.commit(&path, current.revision, write, deleted).await?;
            if response.succeeded {
                let object = stamp(object, header_revision(response.header.as_ref())?)?;
                return Ok(Committed { object, deleted, decided_on });
            }
            // Another writer changed the object since it was read: decide again on its state.
            current = match first_read(&response).and_then(|read| read.kvs.first()) {
                Some(kv) => Candidate::read(kv)?,
                None => return Err(not_found()),
            };
        }
    }
}

impl<K: ApiResource> EtcdStore<K> {
    /// Commits `write` to `path` with the write marker if the object's mod revision is still
    /// `revision`, reading the object back when it is not. With etcd's quota full (only reads
    /// and deletes succeed) a deletion deletes the marker instead of putting it: consistent reads
    /// then read etcd until the next write puts it again, and space can still be freed.
    async fn commit(
        &self,
        path: &str,
        revision: i64,
        write: grpc::etcdserverpb::RequestOp,
        deleted: bool,
    ) -> Result<grpc::etcdserverpb::TxnResponse> {
        let unchanged = || vec![mod_revision_is(path, revision)];
        let writes = vec![write.clone(), self.marker_op()];
        match self.client.txn(unchanged(), writes, vec![get_op(path)]).await.map_err(api_error) {
            Err(Error::InsufficientStorage(_)) if deleted => {
                let writes = vec![write, delete_op(self.prefix.clone())];
                self.client.txn(unchanged(), writes, vec![get_op(path)]).await.map_err(api_error)
            }
            other => other,
        }
    }
}

/// The object an update decides on and the mod revision its transaction compares with.
struct Candidate<K> {
    object: Arc<Stored<K>>,
    revision: i64,
    /// A copy from the watch cache, which may be stale: only a commit proves it was not.
    cached: bool,
    /// etcd holds it at an older version than the storage version: an update that changes
    /// nothing still writes it, so it moves to the storage version (the kube-apiserver compares
    /// the bytes it would write with the bytes stored).
    outdated: bool,
}

impl<K: ApiResource> Candidate<K> {
    fn read(kv: &KeyValue) -> Result<Self> {
        Ok(Self {
            object: stored(kv)?,
            revision: kv.mod_revision,
            cached: false,
            outdated: !K::stored_current(&kv.value),
        })
    }
}

/// The API event of one etcd event.
fn event_of<K: ApiResource>(event: &grpc::mvccpb::Event) -> Result<Event<K>> {
    let kv = event.kv.as_ref().ok_or_else(|| Error::Internal("an etcd event without a key".into()))?;
    let revision = revision_of(kv.mod_revision);
    let previous = event.prev_kv.as_ref().map(stored::<K>).transpose()?;
    let kind = EtcdEventType::try_from(event.r#type)
        .map_err(|_| Error::Internal(format!("an etcd event of unknown type {}", event.r#type)))?;
    match kind {
        EtcdEventType::Put => {
            let kind = if kv.create_revision == kv.mod_revision { EventType::Added } else { EventType::Modified };
            let object = stored::<K>(kv)?;
            Ok(Event { revision, kind, object, previous, frame: Default::default(), served_frame: Default::default() })
        }
        EtcdEventType::Delete => {
            let last = previous.clone().ok_or_else(|| {
                Error::Internal(format!(
                    "the deletion of {} came without the object's last state",
                    String::from_utf8_lossy(&kv.key)
                ))
            })?;
            let object = stamp(last.decode()?, revision)?;
            Ok(Event {
                revision,
                kind: EventType::Deleted,
                object,
                previous,
                frame: Default::default(),
                served_frame: Default::default(),
            })
        }
    }
}

/// Moves one etcd watch's events into a watcher's buffer until the watcher goes away, falls
/// behind (its buffer is full: it is dropped, as in memory), or the etcd watch ends. Closing the
/// buffer ends the API watch; the client re-watches from the last revision it saw.
async fn forward<K: ApiResource>(
    mut stream: WatchStream,
    marker: Vec<u8>,
    sender: Feed<Arc<Event<K>>>,
    progress: Progress,
    closing: Closing,
) {
    // Whatever ends this loop, other than the watcher leaving or falling behind, is the end of
    // etcd's watch.
    let ended = |closing: &Closing| closing.set(CloseReason::StorageWatchEnded);
    loop {
        let message = tokio::select! {
            message = stream.message() => message,
            () = sender.closed() => return,
        };
        let response = match message {
            Ok(Some(response)) => response,
            Ok(None) => {
                tracing::debug!("etcd watch ended");
                ended(&closing);
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "etcd watch broke; the watcher will re-watch");
                ended(&closing);
                return;
            }
        };
        if response.canceled {
            tracing::debug!(
                compact_revision = response.compact_revision,
                reason = response.cancel_reason,
                "etcd cancelled a watch"
            );
            ended(&closing);
            return;
        }
        for event in response.events.iter().filter(|e| e.kv.as_ref().is_none_or(|kv| kv.key != marker)) {
            let event = match event_of::<K>(event) {
                Ok(event) => event,
                Err(error) => {
                    tracing::warn!(%error, "ending a watch on an event that cannot be read");
                    ended(&closing);
                    return;
                }
            };
            let revision = event.revision;
            match sender.try_send(Arc::new(event)) {
                Ok(()) => progress.advance_to(revision),
                Err(Refused::Full) => {
                    tracing::info!(revision, "dropping a watcher that fell behind");
                    closing.set(CloseReason::FellBehind);
                    sender.discard();
                    return;
                }
                Err(Refused::Closed) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_after_a_key_is_the_key_and_a_zero_byte() {
        assert_eq!(key_after(b"/p/widgets/a/b"), b"/p/widgets/a/b\0");
    }

    #[test]
    fn a_prefix_ends_at_the_next_key() {
        assert_eq!(prefix_end("/a/"), b"/a0".to_vec());
        assert_eq!(prefix_end("a\u{7f}"), b"a\x80".to_vec());
        assert_eq!(prefix_end(""), vec![0]);
    }
}
