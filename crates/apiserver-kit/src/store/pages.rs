//! One page of a list read from memory (the memory store's, which is also the watch cache's):
//! the current objects walked from the page's start key, and for the keys changed since the
//! page's revision, the state the event history says they had then. A page costs its own
//! objects, those its selectors pass over and the changes since its revision, whatever the size
//! of the collection; `remaining` is counted by rank in the set (two lookups), corrected by the
//! changes since the page's revision.

use super::objects::Objects;
use super::{Event, ObjectKey, PageRequest, Stored};
use crate::machinery::key::order;
use std::cmp::Ordering;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The keys changed after a revision, in key order, with their state at it (`None`: absent).
pub(super) type Past<K> = Vec<(ObjectKey, Option<Arc<Stored<K>>>)>;

/// The keys `history` (oldest first) changed after `revision`, with their state at it: the
/// previous state of the earliest such event of each key.
pub(super) fn past_of<K>(history: &VecDeque<Arc<Event<K>>>, revision: u64) -> Past<K> {
    let mut past: BTreeMap<ObjectKey, Option<Arc<Stored<K>>>> = BTreeMap::new();
    for event in history.iter().rev().take_while(|e| e.revision > revision) {
        past.insert(event.object.key(), event.previous.clone());
    }
    past.into_iter().collect()
}

/// Whether `key` is in `namespace` (or all) and after `after`.
fn in_range(key: &ObjectKey, namespace: Option<&str>, after: Option<&ObjectKey>) -> bool {
    namespace.is_none_or(|ns| key.namespace == ns) && after.is_none_or(|a| key > a)
}

/// The objects of `namespace` (or all) after `after`, at the revision `past` goes back to (the
/// current objects when it is empty), in key order.
fn at_revision<'a, K>(
    objects: &'a Objects<K>,
    past: &'a Past<K>,
    namespace: Option<&'a str>,
    after: Option<&ObjectKey>,
) -> impl Iterator<Item = &'a Arc<Stored<K>>> + 'a {
    let past = past.iter().filter(|(key, _)| in_range(key, namespace, after)).collect();
    MergedWithPast { current: objects.after(namespace, after).peekable(), past, next_past: 0 }
}

/// The current objects merged with the past states of the keys changed since: a changed key
/// takes its past state (or is left out when it had none), in key order.
struct MergedWithPast<'a, K, I: Iterator<Item = &'a Arc<Stored<K>>>> {
    current: std::iter::Peekable<I>,
    past: Vec<&'a (ObjectKey, Option<Arc<Stored<K>>>)>,
    next_past: usize,
}

impl<'a, K, I: Iterator<Item = &'a Arc<Stored<K>>>> Iterator for MergedWithPast<'a, K, I> {
    type Item = &'a Arc<Stored<K>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some((key, state)) = self.past.get(self.next_past).copied() else { return self.current.next() };
            let ordering = self.current.peek().map_or(Ordering::Greater, |object| {
                let (namespace, name) = object.key_bytes();
                order((&namespace, &name), (key.namespace.as_bytes(), key.name.as_bytes()))
            });
            if ordering == Ordering::Less {
                return self.current.next();
            }
            if ordering == Ordering::Equal {
                self.current.next();
            }
            self.next_past += 1;
            if let Some(state) = state {
                return Some(state);
            }
        }
    }
}

/// A page: its objects, the key after which more selected objects follow (if they do), how
/// many objects follow it (counted when `request.count_remaining`, else 0), and how many objects
/// the page read and tested to find its own (its cost).
pub(super) struct Cut<K> {
    pub items: Vec<Arc<Stored<K>>>,
    pub more_after: Option<ObjectKey>,
    pub remaining: usize,
    pub evaluated: usize,
}

/// How many objects of `namespace` (or all) after `after` there were at the revision `past`
/// goes back to: the current count, less the keys created since, plus those deleted since.
fn count_at_revision<K>(
    objects: &Objects<K>,
    past: &Past<K>,
    namespace: Option<&str>,
    after: Option<&ObjectKey>,
) -> usize {
    let current = objects.count_after(namespace, after);
    let changed = past.iter().filter(|(key, _)| in_range(key, namespace, after));
    changed.fold(current, |count, (key, then)| match (objects.get(key).is_some(), then.is_some()) {
        (true, false) => count.saturating_sub(1),
        (false, true) => count + 1,
        _ => count,
    })
}

/// The page `request` asks for, from `objects` at the revision `past` goes back to.
pub(super) fn page<K>(objects: &Objects<K>, past: &Past<K>, request: &PageRequest<'_, K>) -> Cut<K> {
    let limit = request.limit.unwrap_or(usize::MAX);
    let mut walk = at_revision(objects, past, request.namespace, request.after);
    let mut items = Vec::new();
    let mut evaluated = 0;
    for object in walk.by_ref() {
        evaluated += 1;
        if (request.selects)(object) {
            items.push(object.clone());
            if items.len() >= limit {
                break;
            }
        }
    }
    // More follow when one more is selected.
    let more = items.len() >= limit
        && walk.any(|object| {
            evaluated += 1;
            (request.selects)(object)
        });
    let more_after = if more { items.last().map(|o| o.key()) } else { None };
    let remaining = match (&more_after, request.count_remaining) {
        (Some(last), true) => count_at_revision(objects, past, request.namespace, Some(last)),
        _ => 0,
    };
    Cut { items, more_after, remaining, evaluated }
}
