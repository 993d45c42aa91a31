//! Storage of objects behind one trait, so the memory store of today and the etcd store of a
//! later issue are interchangeable.
//!
//! The contract mirrors the kube-apiserver's storage interface: every committed write gets the
//! next value of one global, increasing revision, which becomes the object's `resourceVersion`;
//! updates run a caller's function on the current object under the store's write serialization
//! (the equivalent of `GuaranteedUpdate`), so preconditions and validation see the state they
//! change.

pub mod memory;

use crate::api::error::Result;
use std::sync::Arc;

/// Identifies an object: namespace and name. Orders by namespace then name, as lists are sorted.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// A key for `namespace`/`name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self { namespace: namespace.into(), name: name.into() }
    }
}

/// What an update function decided to do with the current object.
#[derive(Debug)]
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
    pub object: Arc<K>,
    /// Whether the object is gone.
    pub deleted: bool,
}

/// A snapshot of a collection.
#[derive(Debug, Clone)]
pub struct Listing<K> {
    /// Objects sorted by namespace then name.
    pub items: Vec<Arc<K>>,
    /// The store's revision at the time of the snapshot.
    pub revision: u64,
}

/// Storage for one resource type. Implementations set `metadata.resourceVersion` on commit.
pub trait Store<K>: Send + Sync + 'static {
    /// The object at `key`, if any.
    fn get(&self, key: &ObjectKey) -> Result<Option<Arc<K>>>;

    /// Every object, or those of one namespace, at one consistent revision.
    fn list(&self, namespace: Option<&str>) -> Result<Listing<K>>;

    /// Stores a new object; 409 `AlreadyExists` if its key is taken. With `dry_run` the checks
    /// run but nothing is stored.
    fn create(&self, key: ObjectKey, object: K, dry_run: bool) -> Result<Arc<K>>;

    /// Runs `update` on the current object at `key` and applies its decision atomically;
    /// 404 when there is no object. With `dry_run` the decision is returned but not applied.
    fn mutate(
        &self,
        key: &ObjectKey,
        dry_run: bool,
        update: &mut dyn FnMut(&Arc<K>) -> Result<Mutation<K>>,
    ) -> Result<Committed<K>>;

    /// The latest revision handed out.
    fn revision(&self) -> u64;
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
}
