//! The objects of a memory store: a sorted set of stored objects ordered by their own key
//! (namespace, then name, as etcd orders its keys), so the set holds one pointer per object and
//! no copy of its key. Looked up by an [`ObjectKey`] through a borrowed view both share.
//!
//! The set is an order-statistic B-tree (the `indexset` crate: sorted runs of up to 1,024
//! pointers and a Fenwick tree of their lengths), so how many objects lie between two keys is
//! two rank lookups, not a walk: a page's `remainingItemCount` costs the same at a million
//! objects as at a thousand.

use super::{ObjectKey, Stored};
use crate::machinery::key::order;
use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
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
pub struct Objects<K>(indexset::BTreeSet<Entry<K>>);

impl<K> Default for Objects<K> {
    fn default() -> Self {
        Self(indexset::BTreeSet::new())
    }
}

impl<K> Objects<K> {
    /// The object at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<Stored<K>>> {
        self.0.get(key as &dyn Keyed).map(|e| &e.0)
    }

    /// Stores `object` at its key, in place of the object there, which it returns.
    pub fn insert(&mut self, object: Arc<Stored<K>>) -> Option<Arc<Stored<K>>> {
        self.0.replace(Entry(object)).map(|e| e.0)
    }

    /// Stores `object` at its key when no object is there (one lookup); whether it did.
    pub fn add(&mut self, object: Arc<Stored<K>>) -> bool {
        self.0.insert(Entry(object))
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
        let (first, end) = namespace_bounds(namespace);
        let range = bounds(&first, end.as_ref(), after).map(|range| self.0.range::<_, dyn Keyed>(range));
        range.into_iter().flatten().map(|e| &e.0)
    }

    /// How many objects of `namespace` (or all) come after `after` (or from the first): two rank
    /// lookups, whatever the number.
    pub fn count_after(&self, namespace: Option<&str>, after: Option<&ObjectKey>) -> usize {
        let (first, end) = namespace_bounds(namespace);
        let Some((from, to)) = bounds(&first, end.as_ref(), after) else { return 0 };
        let start = match from {
            Bound::Included(key) => self.0.rank(key),
            Bound::Excluded(key) => self.0.rank(key) + usize::from(self.0.contains(key)),
            Bound::Unbounded => 0,
        };
        let end = match to {
            Bound::Excluded(key) => self.0.rank(key),
            Bound::Included(key) => self.0.rank(key) + usize::from(self.0.contains(key)),
            Bound::Unbounded => self.0.len(),
        };
        end.saturating_sub(start)
    }

    /// The objects of `namespace` (or all), in key order.
    pub fn in_namespace(&self, namespace: Option<&str>) -> Vec<Arc<Stored<K>>> {
        self.after(namespace, None).cloned().collect()
    }
}

/// The first key of `namespace` (or of all), and the key every key of it is before (none for all).
fn namespace_bounds(namespace: Option<&str>) -> (ObjectKey, Option<ObjectKey>) {
    // Keys order as `<namespace>/<name>`: every key of `ns` is before `ns0/` ('0' follows '/'),
    // and none other is between. Bounded at both ends, a walk compares no key.
    let first = ObjectKey::new(namespace.unwrap_or_default(), "");
    (first, namespace.map(|ns| ObjectKey::new(format!("{ns}0"), "")))
}

/// A range of keys, each end borrowed.
type KeyRange<'a> = (Bound<&'a dyn Keyed>, Bound<&'a dyn Keyed>);

/// The range from `first` (or after `after`) to `end` (or the last key); none when `after` is
/// past `end` (a continue token of another namespace reads nothing).
fn bounds<'a>(first: &'a ObjectKey, end: Option<&'a ObjectKey>, after: Option<&'a ObjectKey>) -> Option<KeyRange<'a>> {
    let from: Bound<&dyn Keyed> = match after {
        Some(after) => Bound::Excluded(after),
        None => Bound::Included(first),
    };
    let to: Bound<&dyn Keyed> = match end {
        Some(end) => Bound::Excluded(end),
        None => Bound::Unbounded,
    };
    let ordered = match (&from, &to) {
        (Bound::Excluded(a) | Bound::Included(a), Bound::Excluded(b)) => (*a).cmp(*b).is_lt(),
        _ => true,
    };
    ordered.then_some((from, to))
}

impl<K> FromIterator<Arc<Stored<K>>> for Objects<K> {
    fn from_iter<I: IntoIterator<Item = Arc<Stored<K>>>>(objects: I) -> Self {
        Self(objects.into_iter().map(Entry).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::testing::{Widget, widget};
    use proptest::arbitrary::Arbitrary;

    fn stored(namespace: &str, name: &str) -> Arc<Stored<Widget>> {
        Arc::new(Stored::new(widget(namespace, name, 1.0)).unwrap())
    }

    #[test]
    fn objects_are_found_by_key_and_listed_in_etcd_key_order() {
        let mut objects: Objects<Widget> =
            [("a", "z"), ("a-b", "x"), ("ab", "a"), ("a", "b")].map(|(ns, n)| stored(ns, n)).into_iter().collect();
        objects.insert(stored("a.b", "c"));
        let replaced = stored("a", "b");
        objects.insert(replaced.clone());
        assert_eq!(objects.len(), 5);
        assert!(Arc::ptr_eq(objects.get(&ObjectKey::new("a", "b")).unwrap(), &replaced));
        fn keys(objects: &Objects<Widget>, ns: Option<&str>) -> Vec<String> {
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
        assert_eq!(
            after(Some("a"), Some(ObjectKey::new("b", ""))),
            Vec::<String>::new(),
            "a token of another namespace"
        );
        assert_eq!(objects.count_after(Some("a"), Some(&ObjectKey::new("b", ""))), 0);
        assert_eq!(objects.count_after(None, None), 5);
        assert_eq!(objects.count_after(Some("a"), Some(&ObjectKey::new("a", "b"))), 1);
    }

    proptest::proptest! {
        /// Counting by rank gives what walking counts, for any set, namespace and start key,
        /// through inserts and removals (that split and empty the tree's runs).
        #[test]
        fn counting_by_rank_is_counting_the_walk(
            keys in proptest::collection::vec((0..4usize, "[a-c.-]{0,3}"), 0..3000),
            removed in proptest::collection::vec(proptest::sample::Index::arbitrary(), 0..2000),
            asked in proptest::collection::vec((proptest::option::of(0..4usize), proptest::option::of((0..4usize, "[a-c.-]{0,3}"))), 1..20),
        ) {
            const NAMESPACES: [&str; 4] = ["ns", "ns-", "ns0", "nt"];
            let mut objects: Objects<Widget> = Objects::default();
            for (ns, name) in &keys {
                objects.insert(stored(NAMESPACES[*ns], &format!("n{name}")));
            }
            for index in &removed {
                if !keys.is_empty() {
                    let (ns, name) = index.get(&keys);
                    objects.remove(&ObjectKey::new(NAMESPACES[*ns], format!("n{name}")));
                }
            }
            for (namespace, after) in &asked {
                let namespace = namespace.map(|ns| NAMESPACES[ns]);
                let after = after.as_ref().map(|(ns, name)| ObjectKey::new(NAMESPACES[*ns], format!("n{name}")));
                proptest::prop_assert_eq!(
                    objects.count_after(namespace, after.as_ref()),
                    objects.after(namespace, after.as_ref()).count()
                );
            }
            proptest::prop_assert_eq!(objects.count_after(None, None), objects.len());
        }
    }
}
