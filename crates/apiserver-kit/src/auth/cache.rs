//! A small TTL cache for authentication and authorization answers: bounded in entries (the
//! oldest-expiring entry goes first when full), keyed by a SHA-256 of the question so secrets such
//! as bearer tokens are never kept.

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A bounded map from question digests to answers that expire.
pub struct TtlCache<V> {
    entries: Mutex<HashMap<[u8; 32], (V, Instant)>>,
    capacity: usize,
}

impl<V: Clone> TtlCache<V> {
    /// An empty cache holding at most `capacity` answers.
    pub fn new(capacity: usize) -> Self {
        Self { entries: Mutex::new(HashMap::new()), capacity: capacity.max(1) }
    }

    /// The digest used as the key of `question`.
    pub fn key(question: &[u8]) -> [u8; 32] {
        Sha256::digest(question).into()
    }

    /// The cached answer, if present and fresh.
    pub fn get(&self, key: &[u8; 32]) -> Option<V> {
        let mut entries = self.entries.lock();
        match entries.get(key) {
            Some((value, expires)) if *expires > Instant::now() => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Stores `value` for `ttl`; a zero TTL stores nothing.
    pub fn insert(&self, key: [u8; 32], value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock();
        let now = Instant::now();
        if entries.len() >= self.capacity {
            entries.retain(|_, (_, expires)| *expires > now);
        }
        if entries.len() >= self.capacity
            && let Some(oldest) = entries.iter().min_by_key(|(_, (_, e))| *e).map(|(k, _)| *k)
        {
            entries.remove(&oldest);
        }
        entries.insert(key, (value, now + ttl));
    }

    /// How many answers are held.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_expire() {
        let c = TtlCache::new(10);
        let k = TtlCache::<bool>::key(b"token");
        c.insert(k, true, Duration::from_millis(30));
        assert_eq!(c.get(&k), Some(true));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(c.get(&k), None);
        assert!(c.is_empty());
    }

    #[test]
    fn the_cache_is_bounded() {
        let c = TtlCache::new(3);
        for i in 0..10u8 {
            c.insert(TtlCache::<u8>::key(&[i]), i, Duration::from_secs(60 + u64::from(i)));
        }
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(&TtlCache::<u8>::key(&[9])), Some(9), "the newest stays");
        assert_eq!(c.get(&TtlCache::<u8>::key(&[0])), None, "the oldest went");
    }

    #[test]
    fn a_zero_ttl_caches_nothing() {
        let c = TtlCache::new(3);
        c.insert(TtlCache::<u8>::key(b"x"), 1, Duration::ZERO);
        assert!(c.is_empty());
    }
}
