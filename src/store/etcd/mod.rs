//! The etcd store: objects as JSON under `<prefix>/<plural>/<namespace>/<name>`, shared by every
//! replica pointed at the same etcd and prefix, as the kube-apiserver keeps its own objects.
//!
//! - resourceVersion = the key's etcd mod revision (not stored in the JSON; stamped on read);
//! - create is a transaction "the key does not exist" → put (409 `AlreadyExists` otherwise);
//! - update and delete read the object, run the caller's decision, and commit it in a
//!   transaction "the mod revision is still the one read", retrying on the newer object when
//!   another writer (another replica) won, as `GuaranteedUpdate` does;
//! - get and lists at the latest revision are linearizable reads; lists at an exact revision
//!   (paging, `resourceVersionMatch=Exact`) read etcd's history at it; a page reads from its
//!   continue key on, only as far as its limit needs; reads and watches before etcd's last
//!   compaction get 410;
//! - every watcher has its own etcd watch from its revision, with the previous values, so each
//!   sees every event in order with no gap, whatever replica wrote it.

pub mod client;
pub mod compactor;
pub mod connection;
pub mod grpc;

use super::{
    CloseReason, Closing, Committed, Event, EventType, Listing, Mutation, ObjectKey, Page, PageRequest, Progress,
    ReadAt, Store, StoreStats, Stored, Subscription, UpdateFn, WatchFrom,
};
use crate::machinery::error::{Error, Result};
use crate::machinery::resource::ApiResource;
use client::{EtcdClient, WatchStream, create_revision_is, delete_op, first_read, get_op, mod_revision_is, put_op};
use connection::api_error;
use grpc::etcdserverpb::{RangeRequest, ResponseHeader, WatchCreateRequest};
use grpc::mvccpb::{KeyValue, event::EventType as EtcdEventType};
use std::marker::PhantomData;
use std::sync::Arc;
use tokio::sync::mpsc;

/// How many objects one etcd range request of a list reads at most.
const LIST_CHUNK: usize = 1000;

/// Objects of one resource type, in etcd.
pub struct EtcdStore<K> {
    client: EtcdClient,
    /// `<prefix>/<plural>/`: every key of this resource starts with it.
    prefix: String,
    _kind: PhantomData<fn() -> K>,
}

impl<K: ApiResource> EtcdStore<K> {
    /// A store of `K` under `prefix` (without a trailing slash) in the etcd `client` talks to.
    pub fn new(client: EtcdClient, prefix: &str) -> Self {
        Self { client, prefix: format!("{}/{}/", prefix.trim_end_matches('/'), K::INFO.plural), _kind: PhantomData }
    }

    fn key(&self, key: &ObjectKey) -> String {
        format!("{}{}/{}", self.prefix, key.namespace, key.name)
    }

    /// The key prefix of one namespace, or of all.
    fn range(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) => format!("{}{ns}/", self.prefix),
            None => self.prefix.clone(),
        }
    }
}

fn encode<K: ApiResource>(object: &K) -> Result<Vec<u8>> {
    let mut stored = object.clone();
    // The revision is etcd's to give; it is stamped back on every read.
    stored.meta_mut().resource_version = None;
    serde_json::to_vec(&stored).map_err(|e| Error::Internal(format!("encoding for storage: {e}")))
}

fn revision_of(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The revision a read at `at` asks etcd for: 0 for the latest.
fn read_revision(at: ReadAt) -> Result<u64> {
    match at {
        ReadAt::Latest => Ok(0),
        ReadAt::Exact(0) => Err(Error::BadRequest("resourceVersion 0 cannot be read exactly".into())),
        ReadAt::Exact(revision) => Ok(revision),
    }
}

/// A resourceVersion as etcd's signed revision.
fn etcd_revision(revision: u64) -> Result<i64> {
    i64::try_from(revision).map_err(|_| Error::BadRequest(format!("resourceVersion {revision} is too large")))
}

fn decode<K: ApiResource>(kv: &KeyValue) -> Result<K> {
    let mut object: K = serde_json::from_slice(&kv.value).map_err(|e| {
        Error::Internal(format!("the object stored at {} cannot be decoded: {e}", String::from_utf8_lossy(&kv.key)))
    })?;
    object.meta_mut().resource_version = Some(kv.mod_revision.to_string());
    Ok(object)
}

fn stamp<K: ApiResource>(mut object: K, revision: u64) -> Arc<Stored<K>> {
    object.meta_mut().resource_version = Some(revision.to_string());
    Arc::new(Stored::new(object))
}

fn header_revision(header: Option<&ResponseHeader>) -> Result<u64> {
    header.map(|h| revision_of(h.revision)).ok_or_else(|| Error::Internal("etcd answered without a revision".into()))
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
    async fn read(&self, key: &str) -> Result<Option<(Arc<Stored<K>>, i64)>> {
        let response = self.client.get(key).await.map_err(api_error)?;
        match response.kvs.first() {
            Some(kv) => Ok(Some((Arc::new(Stored::new(decode(kv)?)), kv.mod_revision))),
            None => Ok(None),
        }
    }

    /// 410 when `revision` is older than etcd's last compaction.
    async fn ensure_readable(&self, namespace: Option<&str>, revision: u64) -> Result<()> {
        let at = etcd_revision(revision)?;
        // A read of one (absent) key at the revision fails the same way a range would.
        let read = RangeRequest { key: self.range(namespace).into_bytes(), revision: at, ..Default::default() };
        self.client.range(read).await.map_err(api_error)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl<K: ApiResource> Store<K> for EtcdStore<K> {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Arc<Stored<K>>>> {
        Ok(self.read(&self.key(key)).await?.map(|(object, _)| object))
    }

    async fn list_at(&self, namespace: Option<&str>, at: ReadAt) -> Result<Listing<K>> {
        let every = |_: &K| true;
        let request = PageRequest { namespace, at, after: None, limit: None, selects: &every };
        let page = self.list_page(request).await?;
        Ok(Listing { items: page.items, revision: page.revision })
    }

    async fn list_page(&self, request: PageRequest<'_, K>) -> Result<Page<K>> {
        let range = self.range(request.namespace);
        let end = prefix_end(&range);
        let mut start = match request.after {
            Some(after) => {
                let mut key = self.key(after).into_bytes();
                key.push(0);
                key
            }
            None => range.into_bytes(),
        };
        let mut at = etcd_revision(read_revision(request.at)?)?;
        // One more than the limit tells whether more follow.
        let wanted = request.limit.map(|limit| limit.saturating_add(1));
        let mut items: Vec<Arc<Stored<K>>> = Vec::new();
        'chunks: loop {
            let chunk = wanted.map_or(LIST_CHUNK, |w| w.saturating_sub(items.len()).clamp(1, LIST_CHUNK));
            let read = RangeRequest {
                key: start.clone(),
                range_end: end.clone(),
                limit: chunk as i64,
                revision: at,
                ..Default::default()
            };
            let response = self.client.range(read).await.map_err(api_error)?;
            if at == 0 {
                // Later chunks read at the first one's revision: one consistent snapshot.
                at = etcd_revision(header_revision(response.header.as_ref())?)?;
            }
            for kv in &response.kvs {
                start = kv.key.clone();
                start.push(0);
                let object = decode::<K>(kv)?;
                if (request.selects)(&object) {
                    items.push(Arc::new(Stored::new(object)));
                    if Some(items.len()) == wanted {
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
        if let Some(limit) = request.limit.filter(|limit| items.len() > *limit) {
            items.truncate(limit);
            let last = items.last().map(|o| ObjectKey::of(o.object()));
            if let Some(last) = &last {
                let mut from = self.key(last).into_bytes();
                from.push(0);
                let count =
                    RangeRequest { key: from, range_end: end, count_only: true, revision: at, ..Default::default() };
                let response = self.client.range(count).await.map_err(api_error)?;
                remaining = usize::try_from(response.count).unwrap_or_default();
            }
            more_after = last;
        }
        Ok(Page { items, revision: revision_of(at), more_after, remaining })
    }

    async fn subscribe(&self, namespace: Option<&str>, from: WatchFrom, capacity: usize) -> Result<Subscription<K>> {
        let range = self.range(namespace);
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
        let start = etcd_revision(revision.saturating_add(1))?;
        let request = WatchCreateRequest {
            range_end: prefix_end(&range),
            key: range.into_bytes(),
            start_revision: start,
            prev_kv: true,
            ..Default::default()
        };
        let stream = self.client.watch(request).await.map_err(api_error)?;
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        let progress = Progress::at(revision);
        let closing = Closing::default();
        tokio::spawn(forward::<K>(stream, sender, progress.clone(), closing.clone()));
        Ok(Subscription { snapshot, replay: Vec::new(), revision, receiver, progress, closing })
    }

    async fn create(&self, key: ObjectKey, object: K, dry_run: bool) -> Result<Arc<Stored<K>>> {
        let path = self.key(&key);
        let exists = || Error::AlreadyExists { resource: K::INFO.group_resource(), name: key.name.clone() };
        if dry_run {
            return match self.read(&path).await? {
                Some(_) => Err(exists()),
                None => Ok(Arc::new(Stored::new(object))),
            };
        }
        let absent = create_revision_is(path.clone(), 0);
        let response =
            self.client.txn(vec![absent], vec![put_op(path, encode(&object)?)], Vec::new()).await.map_err(api_error)?;
        if !response.succeeded {
            return Err(exists());
        }
        Ok(stamp(object, header_revision(response.header.as_ref())?))
    }

    async fn mutate(&self, key: &ObjectKey, dry_run: bool, update: &mut UpdateFn<'_, K>) -> Result<Committed<K>> {
        let path = self.key(key);
        let not_found = || Error::NotFound { resource: K::INFO.group_resource(), name: key.name.clone() };
        let (mut current, mut read_at) = self.read(&path).await?.ok_or_else(not_found)?;
        loop {
            let (object, deleted) = match update(&current)? {
                Mutation::Unchanged => return Ok(Committed { object: current, deleted: false }),
                Mutation::Put(object) => (object, false),
                Mutation::Delete(object) => (object, true),
            };
            if dry_run {
                return Ok(Committed { object: Arc::new(Stored::new(object)), deleted });
            }
            let write = if deleted { delete_op(path.clone()) } else { put_op(path.clone(), encode(&object)?) };
            let unchanged = mod_revision_is(path.clone(), read_at);
            let response =
                self.client.txn(vec![unchanged], vec![write], vec![get_op(path.clone())]).await.map_err(api_error)?;
            if response.succeeded {
                return Ok(Committed { object: stamp(object, header_revision(response.header.as_ref())?), deleted });
            }
            // Another writer changed the object since it was read: decide again on its state.
            let newer =
                first_read(&response).and_then(|read| read.kvs.first()).map(|kv| (decode::<K>(kv), kv.mod_revision));
            match newer {
                Some((object, revision)) => {
                    current = Arc::new(Stored::new(object?));
                    read_at = revision;
                }
                None => return Err(not_found()),
            }
        }
    }

    async fn stats(&self) -> Result<StoreStats> {
        let count = RangeRequest {
            key: self.prefix.clone().into_bytes(),
            range_end: prefix_end(&self.prefix),
            count_only: true,
            ..Default::default()
        };
        let response = self.client.range(count).await.map_err(api_error)?;
        Ok(StoreStats { objects: usize::try_from(response.count).unwrap_or_default(), history: None })
    }

    async fn revision(&self) -> Result<u64> {
        // Any read answers with etcd's current revision; this key never exists.
        let response = self.client.get(self.prefix.as_bytes()).await.map_err(api_error)?;
        header_revision(response.header.as_ref())
    }
}

/// The API event of one etcd event.
fn event_of<K: ApiResource>(event: &grpc::mvccpb::Event) -> Result<Event<K>> {
    let kv = event.kv.as_ref().ok_or_else(|| Error::Internal("an etcd event without a key".into()))?;
    let revision = revision_of(kv.mod_revision);
    let previous = event.prev_kv.as_ref().map(|p| decode::<K>(p).map(|o| Arc::new(Stored::new(o)))).transpose()?;
    let kind = EtcdEventType::try_from(event.r#type)
        .map_err(|_| Error::Internal(format!("an etcd event of unknown type {}", event.r#type)))?;
    match kind {
        EtcdEventType::Put => {
            let kind = if kv.create_revision == kv.mod_revision { EventType::Added } else { EventType::Modified };
            let object = Arc::new(Stored::new(decode::<K>(kv)?));
            Ok(Event { revision, kind, object, previous, frame: Default::default() })
        }
        EtcdEventType::Delete => {
            let last = previous.clone().ok_or_else(|| {
                Error::Internal(format!(
                    "the deletion of {} came without the object's last state",
                    String::from_utf8_lossy(&kv.key)
                ))
            })?;
            let object = stamp((*last).clone(), revision);
            Ok(Event { revision, kind: EventType::Deleted, object, previous, frame: Default::default() })
        }
    }
}

/// Moves one etcd watch's events into a watcher's buffer until the watcher goes away, falls
/// behind (its buffer is full: it is dropped, as in memory), or the etcd watch ends. Closing the
/// buffer ends the API watch; the client re-watches from the last revision it saw.
async fn forward<K: ApiResource>(
    mut stream: WatchStream,
    sender: mpsc::Sender<Arc<Event<K>>>,
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
        for event in &response.events {
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
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::info!(revision, "dropping a watcher that fell behind");
                    closing.set(CloseReason::FellBehind);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_at_the_next_key() {
        assert_eq!(prefix_end("/a/"), b"/a0".to_vec());
        assert_eq!(prefix_end("a\u{7f}"), b"a\x80".to_vec());
        assert_eq!(prefix_end(""), vec![0]);
    }
}
