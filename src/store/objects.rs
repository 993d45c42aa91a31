//! The objects of a memory store: a sorted set of stored objects ordered by their own key
//! (namespace, then name, as etcd orders its keys), so the set holds one pointer per object and
//! no copy of its key. Looked up by an [`ObjectKey`] through a borrowed view both share.

use super::{ObjectKey, Stored};
use crate::machinery::key::order;
use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

/// What the set is ordered by: a key's namespace and name, as bytes.
trait Keyed {
    fn key_bytes(&self) -> (Cow<'_, [u8]>, Cow<'_, [u8]>);
}

impl Keyed for ObjectKey {
    fn key_bytes(&self) -> (Cow<'_, [u8]>, Cow<'_, [u8]>) {
        (Cow::Borrowed(self.namespace.as_bytes()), Cow::Borrowed(self.name.as_bytes()))
    }
}

/// A stored object as a member of the set.
struct Entry<K>(Arc<Stored<K>>);

impl<K> Keyed for Entry<K> {
    fn key_bytes(&self) -> (Cow<'_, [u8]>, Cow<'_, [u8]>) {
        self.0.key_bytes()
    }
}

impl Ord for dyn Keyed + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        let ((a_namespace, a_name), (b_namespace, b_name)) = (self.key_bytes(), other.key_bytes());
        order((&a_namespace, &a_name), (&b_namespace, &b_name))
    }
}

impl PartialOrd for dyn Keyed + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for dyn Keyed + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for dyn Keyed + '_ {}

impl<'a, K: 'a> Borrow<dyn Keyed + 'a> for Entry<K> {
    fn borrow(&self) -> &(dyn Keyed + 'a) {
        self
    }
}

impl<K> Ord for Entry<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self as &dyn Keyed).cmp(other as &dyn Keyed)
    }
}

impl<K> PartialOrd for Entry<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> PartialEq for Entry<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K> Eq for Entry<K> {}

/// Stored objects in key order.
pub struct Objects<K>(BTreeSet<Entry<K>>);

impl<K> Default for Objects<K> {
    fn default() -> Self {
        Self(BTreeSet::new())
    }
}

impl<K> Objects<K> {
    /// The object at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<Stored<K>>> {
        self.0.get(key as &dyn Keyed).map(|e| &e.0)
    }

    /// Stores `object` at its key, in place of the object there.
    pub fn insert(&mut self, object: Arc<Stored<K>>) {
        self.0.replace(Entry(object));
    }

    /// Removes the object at `key`.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<Arc<Stored<K>>> {
        self.0.take(key as &dyn Keyed).map(|e| e.0)
    }

    /// How many objects there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Stored<K>>> {
        self.0.iter().map(|e| &e.0)
    }

    /// The objects of `namespace` (or all) after `after` (or from the first), in key order:
    /// found in the tree, then walked, with no copy of the rest.
    pub fn after<'a>(
        &'a self,
        namespace: Option<&'a str>,
        after: Option<&ObjectKey>,
    ) -> impl Iterator<Item = &'a Arc<Stored<K>>> + 'a {
        let first = ObjectKey::new(namespace.unwrap_or_default(), "");
        let from: Bound<&dyn Keyed> = match after {
            Some(after) => Bound::Excluded(after),
            None => Bound::Included(&first),
        };
        // Keys order as `<namespace>/<name>`: every key of `ns` is before `ns0/` ('0' follows '/'),
        // and none other is between. Bounded at both ends, the walk compares no key.
        let end = namespace.map(|ns| ObjectKey::new(format!("{ns}0"), ""));
        let to: Bound<&dyn Keyed> = match &end {
            Some(end) => Bound::Excluded(end),
            None => Bound::Unbounded,
        };
        let ordered = match (&from, &to) {
            (Bound::Excluded(a) | Bound::Included(a), Bound::Excluded(b)) => (*a).cmp(*b).is_lt(),
            _ => true,
        };
        // An `after` past the namespace's end (a token of another namespace) reads nothing.
        let range = ordered.then(|| self.0.range::<dyn Keyed, _>((from, to)));
        range.into_iter().flatten().map(|e| &e.0)
    }

    /// The objects of `namespace` (or all), in key order.
    pub fn in_namespace(&self, namespace: Option<&str>) -> Vec<Arc<Stored<K>>> {
        self.after(namespace, None).cloned().collect()
    }
}

impl<K> FromIterator<Arc<Stored<K>>> for Objects<K> {
    fn from_iter<I: IntoIterator<Item = Arc<Stored<K>>>>(objects: I) -> Self {
        Self(objects.into_iter().map(Entry).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::llama::{Llama, LlamaSpec};

    fn stored(namespace: &str, name: &str) -> Arc<Stored<Llama>> {
        let mut llama = Llama::new(name, LlamaSpec { weight: 1.0, height: 1.0, color: None });
        llama.metadata.namespace = Some(namespace.into());
        Arc::new(Stored::new(llama).unwrap())
    }

    #[test]
    fn objects_are_found_by_key_and_listed_in_etcd_key_order() {
        let mut objects: Objects<Llama> =
            [("a", "z"), ("a-b", "x"), ("ab", "a"), ("a", "b")].map(|(ns, n)| stored(ns, n)).into_iter().collect();
        objects.insert(stored("a.b", "c"));
        let replaced = stored("a", "b");
        objects.insert(replaced.clone());
        assert_eq!(objects.len(), 5);
        assert!(Arc::ptr_eq(objects.get(&ObjectKey::new("a", "b")).unwrap(), &replaced));
        fn keys(objects: &Objects<Llama>, ns: Option<&str>) -> Vec<String> {
            objects.in_namespace(ns).iter().map(|o| format!("{}/{}", o.namespace(), o.name())).collect()
        }
        assert_eq!(keys(&objects, None), ["a-b/x", "a.b/c", "a/b", "a/z", "ab/a"]);
        assert_eq!(keys(&objects, Some("a")), ["a/b", "a/z"]);
        assert_eq!(keys(&objects, Some("b")), Vec::<String>::new());
        assert!(objects.remove(&ObjectKey::new("a", "z")).is_some());
        assert!(objects.remove(&ObjectKey::new("a", "z")).is_none());
        assert_eq!(keys(&objects, Some("a")), ["a/b"]);
        objects.insert(stored("a", "c"));
        let after = |ns: Option<&str>, key: Option<ObjectKey>| -> Vec<String> {
            objects.after(ns, key.as_ref()).map(|o| format!("{}/{}", o.namespace(), o.name())).collect()
        };
        assert_eq!(after(None, None), ["a-b/x", "a.b/c", "a/b", "a/c", "ab/a"]);
        assert_eq!(after(None, Some(ObjectKey::new("a", "b"))), ["a/c", "ab/a"]);
        assert_eq!(after(Some("a"), None), ["a/b", "a/c"]);
        assert_eq!(after(Some("a"), Some(ObjectKey::new("a", "b"))), ["a/c"]);
        assert_eq!(after(Some("a"), Some(ObjectKey::new("a", "bb"))), ["a/c"], "after a key that is not there");
        assert_eq!(after(Some("a"), Some(ObjectKey::new("a", "c"))), Vec::<String>::new());
    }
}
