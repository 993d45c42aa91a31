//! The in-memory store: a `BTreeMap` of `Arc` objects behind a `parking_lot::RwLock`.
//!
//! A sorted map (not a hash map) because lists are answered in key order and later paged by key.
//! Readers hold the lock only to clone `Arc`s; writers hold it while the update function runs,
//! which makes read-check-write atomic and keeps revisions in commit order.

use super::{Committed, Listing, Mutation, ObjectKey, Revision, Store};
use crate::api::error::{Error, Result};
use crate::resources::ApiResource;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Objects of one resource type, in memory.
pub struct MemoryStore<K> {
    /// The objects by key.
    objects: RwLock<BTreeMap<ObjectKey, Arc<K>>>,
    /// Shared with the other stores of the server, so resourceVersions are globally increasing.
    revision: Arc<Revision>,
}

impl<K: ApiResource> MemoryStore<K> {
    /// An empty store drawing revisions from `revision`.
    pub fn new(revision: Arc<Revision>) -> Self {
        Self { objects: RwLock::new(BTreeMap::new()), revision }
    }
}

fn stamp<K: ApiResource>(mut object: K, revision: u64) -> Arc<K> {
    object.meta_mut().resource_version = Some(revision.to_string());
    Arc::new(object)
}

impl<K: ApiResource> Store<K> for MemoryStore<K> {
    fn get(&self, key: &ObjectKey) -> Result<Option<Arc<K>>> {
        Ok(self.objects.read().get(key).cloned())
    }

    fn list(&self, namespace: Option<&str>) -> Result<Listing<K>> {
        let objects = self.objects.read();
        let revision = self.revision.current();
        let items = match namespace {
            None => objects.values().cloned().collect(),
            Some(ns) => objects
                .range(ObjectKey::new(ns, "")..)
                .take_while(|(k, _)| k.namespace == ns)
                .map(|(_, v)| v.clone())
                .collect(),
        };
        Ok(Listing { items, revision })
    }

    fn create(&self, key: ObjectKey, object: K, dry_run: bool) -> Result<Arc<K>> {
        let mut objects = self.objects.write();
        if objects.contains_key(&key) {
            return Err(Error::AlreadyExists { resource: K::INFO.group_resource(), name: key.name });
        }
        if dry_run {
            return Ok(Arc::new(object));
        }
        let stored = stamp(object, self.revision.next());
        objects.insert(key, stored.clone());
        Ok(stored)
    }

    fn mutate(
        &self,
        key: &ObjectKey,
        dry_run: bool,
        update: &mut dyn FnMut(&Arc<K>) -> Result<Mutation<K>>,
    ) -> Result<Committed<K>> {
        let mut objects = self.objects.write();
        let current = objects
            .get(key)
            .cloned()
            .ok_or_else(|| Error::NotFound { resource: K::INFO.group_resource(), name: key.name.clone() })?;
        match update(&current)? {
            Mutation::Unchanged => Ok(Committed { object: current, deleted: false }),
            Mutation::Put(object) if dry_run => Ok(Committed { object: Arc::new(object), deleted: false }),
            Mutation::Delete(object) if dry_run => Ok(Committed { object: Arc::new(object), deleted: true }),
            Mutation::Put(object) => {
                let stored = stamp(object, self.revision.next());
                objects.insert(key.clone(), stored.clone());
                Ok(Committed { object: stored, deleted: false })
            }
            Mutation::Delete(object) => {
                objects.remove(key);
                Ok(Committed { object: stamp(object, self.revision.next()), deleted: true })
            }
        }
    }

    fn revision(&self) -> u64 {
        self.revision.current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::llama::{Llama, LlamaSpec};

    fn llama(ns: &str, name: &str) -> Llama {
        let mut l = Llama::new(name, LlamaSpec { weight: 1.0, height: 1.0, color: None });
        l.metadata.namespace = Some(ns.into());
        l
    }

    fn store() -> MemoryStore<Llama> {
        MemoryStore::new(Arc::new(Revision::default()))
    }

    #[test]
    fn revisions_increase_across_writes_and_are_stamped() {
        let s = store();
        let a = s.create(ObjectKey::new("a", "x"), llama("a", "x"), false).unwrap();
        let b = s.create(ObjectKey::new("b", "x"), llama("b", "x"), false).unwrap();
        assert_eq!(a.metadata.resource_version.as_deref(), Some("1"));
        assert_eq!(b.metadata.resource_version.as_deref(), Some("2"));
        assert_eq!(s.revision(), 2);
    }

    #[test]
    fn lists_are_sorted_and_filtered_by_namespace() {
        let s = store();
        for (ns, name) in [("b", "z"), ("a", "y"), ("a", "x"), ("ab", "w")] {
            s.create(ObjectKey::new(ns, name), llama(ns, name), false).unwrap();
        }
        let names =
            |l: Listing<Llama>| -> Vec<String> { l.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect() };
        assert_eq!(names(s.list(None).unwrap()), ["x", "y", "w", "z"]);
        assert_eq!(names(s.list(Some("a")).unwrap()), ["x", "y"]);
    }

    #[test]
    fn dry_run_writes_nothing() {
        let s = store();
        s.create(ObjectKey::new("a", "x"), llama("a", "x"), true).unwrap();
        assert!(s.get(&ObjectKey::new("a", "x")).unwrap().is_none());
        assert_eq!(s.revision(), 0);
    }

    #[test]
    fn a_failing_update_function_changes_nothing() {
        let s = store();
        let key = ObjectKey::new("a", "x");
        s.create(key.clone(), llama("a", "x"), false).unwrap();
        let err = s.mutate(&key, false, &mut |_| Err(Error::BadRequest("no".into()))).unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(s.revision(), 1);
        let deleted = s.mutate(&key, false, &mut |cur| Ok(Mutation::Delete((**cur).clone()))).unwrap();
        assert!(deleted.deleted);
        assert_eq!(deleted.object.metadata.resource_version.as_deref(), Some("2"));
        assert!(s.get(&key).unwrap().is_none());
    }
}
