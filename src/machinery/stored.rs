//! An object as the stores keep and share it: the decoded value, for rules, selectors and
//! tables, and its JSON encoding, made the first time a read (GET or LIST) needs it and then
//! shared by every later read. A stored object never changes (a write stores a new one), so the
//! encoding never goes stale, and a GET or a LIST writes those bytes as they are instead of
//! encoding the object again for each request. Writes and watch events use the kept encoding when
//! there is one but do not keep theirs: an object nobody reads does not pay for it in memory.

use super::error::{Error, Result};
use bytes::Bytes;
use serde::Serialize;
use std::sync::OnceLock;

/// An immutable stored object and, once made, its compact JSON encoding.
pub struct Stored<K> {
    /// The object.
    object: K,
    /// `serde_json::to_vec(&object)`, made at most once (two first readers racing both encode,
    /// one result is kept).
    json: OnceLock<Bytes>,
}

impl<K> Stored<K> {
    /// The stored form of `object`, not encoded yet.
    pub fn new(object: K) -> Self {
        Self { object, json: OnceLock::new() }
    }

    /// The object.
    pub fn object(&self) -> &K {
        &self.object
    }
}

impl<K: Serialize> Stored<K> {
    /// The object's compact JSON, encoded on the first call and kept, then shared (not copied)
    /// by every later call: for reads, which come back to the same object.
    pub fn json(&self) -> Result<Bytes> {
        if let Some(json) = self.json.get() {
            return Ok(json.clone());
        }
        let mut encoded = self.encode_now()?;
        encoded.shrink_to_fit();
        Ok(self.json.get_or_init(|| Bytes::from(encoded)).clone())
    }

    /// The object's compact JSON: the kept encoding when a read has made it, else a new one that
    /// is not kept (for a write's response or a watch event: an object that nobody reads does not
    /// hold its encoding as well).
    pub fn encode(&self) -> Result<Bytes> {
        match self.json.get() {
            Some(json) => Ok(json.clone()),
            None => self.encode_now().map(Bytes::from),
        }
    }

    fn encode_now(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(&self.object).map_err(|e| Error::Internal(format!("encoding an object: {e}")))
    }
}

impl<K> std::ops::Deref for Stored<K> {
    type Target = K;

    fn deref(&self) -> &K {
        &self.object
    }
}

impl<K: std::fmt::Debug> std::fmt::Debug for Stored<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.object.fmt(f)
    }
}

/// Serializes as the object itself (for pretty output and the representations that embed it).
impl<K: Serialize> Serialize for Stored<K> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.object.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::Stored;
    use serde_json::json;

    #[test]
    fn the_encoding_is_the_objects_compact_json_made_once_by_a_read_and_shared() {
        let stored = Stored::new(json!({"kind": "Llama", "spec": {"weight": 3}}));
        let written = stored.encode().unwrap();
        assert_ne!(written.as_ptr(), stored.encode().unwrap().as_ptr(), "a write's encoding is not kept");
        let first = stored.json().unwrap();
        assert_eq!(first, written);
        assert_eq!(first.as_ptr(), stored.encode().unwrap().as_ptr(), "once kept, writes share it too");
        assert_eq!(&first[..], serde_json::to_vec(stored.object()).unwrap().as_slice());
        assert_eq!(first.as_ptr(), stored.json().unwrap().as_ptr(), "the second call shares the first's bytes");
        assert_eq!(serde_json::to_value(&stored).unwrap(), *stored.object());
    }
}
