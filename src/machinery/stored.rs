//! An object as the stores keep and share it: its compact JSON encoding, the only form kept,
//! plus an index of the few fields that keys, lists and selectors read (name, namespace,
//! labels, resourceVersion, the resource's selectable fields), as spans into those bytes.
//!
//! A GET, a LIST and a watch event copy the bytes into the response as they are, never decoding
//! or encoding; the typed object is decoded only where a rule needs it (a write deciding on the
//! current object, a Table, a metadata-only response, admission). A stored object never changes
//! (a write stores a new one), so neither bytes nor index go stale.
//!
//! Two runs of the text are shared between objects rather than kept by each (interned: one copy
//! of each distinct text, held by the objects that have it): the head up to `metadata`'s `{`,
//! the same for every object of a type, and `metadata.managedFields`, most of a small object's
//! encoding and the same for objects written alike within a second (same manager, operation,
//! fields and `time`). They are spliced back in when the bytes are written out. With 100,000
//! llamas this takes the memory store from 428 MB to the figure in the README's storage section.

use super::error::{Error, Result};
use super::json_scan::{self, Span};
use super::key::ObjectKey;
use super::resource::ApiResource;
use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::borrow::Cow;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::Arc;

/// A change of an encoding: the bytes of `range` replaced by `with` (borrowed, often from the
/// encoding itself, so that an edit costs no allocation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit<'a> {
    /// The bytes replaced.
    pub range: std::ops::Range<usize>,
    /// What replaces them.
    pub with: &'a [u8],
}

/// The interned managed-fields text of an object and the offset in its `body` where it goes.
struct Managed {
    at: u32,
    text: Arc<[u8]>,
}

/// An immutable stored object: its encoding and its index, in 96 bytes besides the text.
pub struct Stored<K> {
    /// The start of the encoding, up to the `{` of `metadata`: the same for every object of a
    /// type (`{"apiVersion":…,"kind":…,"metadata":{`), so interned.
    head: Arc<[u8]>,
    /// The rest of the encoding, without the managed-fields text when that is kept apart.
    body: Box<[u8]>,
    /// The managed-fields text, when kept apart.
    managed: Option<Managed>,
    /// `metadata.resourceVersion` (0 when unset, as on a dry-run create).
    resource_version: u64,
    /// Spans into `body`: `metadata.namespace`, `metadata.name`, the value of each of the
    /// resource's selectable fields in `K::INFO`'s order ([`Span::EMPTY`] when unset), then the
    /// key and value of each label, in key order.
    spans: Box<[Span]>,
    kind: PhantomData<fn() -> K>,
}

/// Where the selectable fields start in [`Stored::spans`].
const FIELDS: usize = 2;

fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::Internal(format!("encoding an object: {e}")))
}

impl<K: ApiResource> Stored<K> {
    /// The stored form of `object`.
    pub fn new(object: K) -> Result<Self> {
        let (json, managed) = cut_managed_fields(encode(&object)?);
        Ok(Self::index(json, managed))
    }

    /// Indexes `json` (an object's encoding, without the managed fields when `managed` is set)
    /// and cuts off its head.
    fn index(json: Vec<u8>, mut managed: Option<Managed>) -> Self {
        let metadata = json_scan::find(&json, &["metadata"]);
        // One pass over metadata's members.
        let (mut namespace, mut name, mut version, mut labels) = (None, None, None, None);
        for (key, value) in metadata.into_iter().flat_map(|m| json_scan::members(&json, m)) {
            match &*key.text(&json) {
                "namespace" => namespace = json_scan::scalar(&json, value),
                "name" => name = json_scan::scalar(&json, value),
                "resourceVersion" => version = json_scan::scalar(&json, value),
                "labels" => labels = Some(value),
                _ => {}
            }
        }
        let resource_version = version.and_then(|s| s.text(&json).parse().ok()).unwrap_or(0);
        let mut spans = vec![namespace.unwrap_or_default(), name.unwrap_or_default()];
        spans.extend(K::INFO.selectable_fields.iter().map(|path| {
            let path: Vec<&str> = path.split('.').collect();
            json_scan::find(&json, &path).and_then(|at| json_scan::scalar(&json, at)).unwrap_or_default()
        }));
        spans.extend(labels.into_iter().flat_map(|at| json_scan::string_members(&json, at)).flat_map(|(k, v)| [k, v]));
        // The head ends at metadata's opening brace, before every indexed field and the managed
        // fields.
        let head_len = metadata.map_or(0, |m| m + 1);
        let movable = managed.as_ref().is_none_or(|m| m.at as usize >= head_len)
            && spans.iter().all(|s| *s == Span::EMPTY || s.start() >= head_len);
        let head_len = if movable { head_len } else { 0 };
        let spans = spans.iter().map(|s| s.shifted_back(head_len).unwrap_or_default()).collect();
        if let Some(managed) = &mut managed {
            managed.at -= head_len as u32;
        }
        Self {
            head: intern(&json[..head_len]),
            body: json[head_len..].into(),
            managed,
            resource_version,
            spans,
            kind: PhantomData,
        }
    }

    /// The object, decoded from its encoding.
    pub fn decode(&self) -> Result<K> {
        let json = self.json();
        serde_json::from_slice(&json).map_err(|e| Error::Internal(format!("decoding a stored {}: {e}", K::INFO.kind)))
    }

    /// The object decoded without `metadata.managedFields`, for what never reads them (a
    /// Table's cells): decoding the managed fields is most of decoding a small object.
    pub fn decode_without_managed_fields(&self) -> Result<K> {
        let mut json = Vec::with_capacity(self.head.len() + self.body.len());
        json.extend_from_slice(&self.head);
        json.extend_from_slice(&self.body);
        serde_json::from_slice(&json).map_err(|e| Error::Internal(format!("decoding a stored {}: {e}", K::INFO.kind)))
    }

    /// The object's metadata, decoded alone.
    pub fn metadata(&self) -> Result<ObjectMeta> {
        serde_json::from_slice(&self.metadata_json())
            .map_err(|e| Error::Internal(format!("decoding a stored {}'s metadata: {e}", K::INFO.kind)))
    }

    /// The compact JSON of the object's `metadata` (`{}` when it has none), as it is stored.
    pub fn metadata_json(&self) -> Vec<u8> {
        let json = self.json();
        let raw = json_scan::find(&json, &["metadata"])
            .and_then(|at| json.get(at..json_scan::value_end(&json, at)?))
            .unwrap_or(b"{}");
        raw.to_vec()
    }

    /// The value of the label `key`.
    pub fn label(&self, key: &str) -> Option<Cow<'_, str>> {
        let labels = self.spans.get(FIELDS + K::INFO.selectable_fields.len()..).unwrap_or_default();
        let pair = labels.chunks_exact(2).find(|pair| pair[0].text(&self.body) == key)?;
        Some(pair[1].text(&self.body))
    }

    /// Where the value of the selectable field `path` (one of `K::INFO.selectable_fields`) sits
    /// in [`Stored::body`], as it is encoded (a string's contents, escaped, between its quotes);
    /// `None` when it is unset or not one.
    pub fn field_span(&self, path: &str) -> Option<Span> {
        let i = K::INFO.selectable_fields.iter().position(|f| *f == path)?;
        self.spans.get(FIELDS + i).copied().filter(|s| *s != Span::EMPTY)
    }

    /// The object's selectable field `path` (`metadata.name`, `metadata.namespace` or one of
    /// `K::INFO.selectable_fields`): its value, empty when unset; `None` for another path.
    pub fn field(&self, path: &str) -> Option<Cow<'_, str>> {
        match path {
            "metadata.name" => Some(self.name()),
            "metadata.namespace" => Some(self.namespace()),
            _ => {
                let i = K::INFO.selectable_fields.iter().position(|f| *f == path)?;
                Some(self.text(FIELDS + i))
            }
        }
    }
}

impl<K> Stored<K> {
    /// The text of `spans[i]`, empty when there is none.
    fn text(&self, i: usize) -> Cow<'_, str> {
        self.spans.get(i).map_or(Cow::Borrowed(""), |s| s.text(&self.body))
    }

    /// `metadata.resourceVersion`, 0 when unset.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// `metadata.namespace`, empty when unset.
    pub fn namespace(&self) -> Cow<'_, str> {
        self.text(0)
    }

    /// `metadata.name`, empty when unset.
    pub fn name(&self) -> Cow<'_, str> {
        self.text(1)
    }

    /// The bytes of `metadata.namespace` and `metadata.name`, for ordering by key without
    /// making one ([`super::key::order`]).
    pub fn key_bytes(&self) -> (Cow<'_, [u8]>, Cow<'_, [u8]>) {
        let bytes = |i: usize| self.spans.get(i).map_or(Cow::Borrowed(&b""[..]), |s| s.bytes(&self.body));
        (bytes(0), bytes(1))
    }

    /// The object's key.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.namespace(), self.name())
    }

    /// The length of the object's compact JSON.
    pub fn json_len(&self) -> usize {
        self.head.len() + self.body.len() + self.managed.as_ref().map_or(0, |m| m.text.len())
    }

    /// The object's compact JSON.
    pub fn json(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.json_len());
        self.write_json(&mut out);
        Bytes::from(out)
    }

    /// The start of the encoding, up to `metadata`'s `{` (empty when it could not be cut).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The rest of the encoding, without the managed fields.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Where `edit` (relative to [`Self::body`]) may be made: after the managed fields' place
    /// and inside the body; its bounds, or `None`.
    fn edit_bounds<'e>(&self, edit: Option<&Edit<'e>>) -> Option<(usize, usize, &'e [u8])> {
        let at = self.managed.as_ref().map_or(0, |m| (m.at as usize).min(self.body.len()));
        match edit {
            None => Some((self.body.len(), self.body.len(), &[][..])),
            Some(e) if e.range.start >= at && e.range.start <= e.range.end && e.range.end <= self.body.len() => {
                Some((e.range.start, e.range.end, e.with))
            }
            Some(_) => None,
        }
    }

    /// Appends the object's compact JSON to `out`, with `head` in place of its head and `edit`
    /// (relative to [`Self::body`]) made to its body: for conversions that move bytes, with no
    /// copy but the one into `out`. Writes nothing and returns false when `edit` is not after
    /// the managed fields' place or not inside the body.
    pub fn write_json_with(&self, out: &mut Vec<u8>, head: &[u8], edit: Option<&Edit<'_>>) -> bool {
        let Some((from, to, with)) = self.edit_bounds(edit) else { return false };
        let at = self.managed.as_ref().map_or(0, |m| (m.at as usize).min(self.body.len()));
        out.extend_from_slice(head);
        out.extend_from_slice(&self.body[..at]);
        if let Some(managed) = &self.managed {
            out.extend_from_slice(&managed.text);
        }
        out.extend_from_slice(&self.body[at..from]);
        out.extend_from_slice(with);
        out.extend_from_slice(&self.body[to..]);
        true
    }

    /// This object at another version `V` whose encoding is this one's with `head` and `edit`,
    /// as [`Self::write_json_with`] writes it; the managed-fields text is shared, not copied.
    pub fn edited<V: ApiResource>(&self, head: &[u8], edit: Option<&Edit<'_>>) -> Option<Stored<V>> {
        let (from, to, with) = self.edit_bounds(edit)?;
        let json = [head, &self.body[..from], with, &self.body[to..]].concat();
        let managed = match &self.managed {
            None => None,
            Some(m) => Some(Managed { at: m.at.checked_add(u32::try_from(head.len()).ok()?)?, text: m.text.clone() }),
        };
        Some(Stored::index(json, managed))
    }

    /// Appends the object's compact JSON to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        match &self.managed {
            None => out.extend_from_slice(&self.body),
            Some(managed) => {
                let (before, after) = self.body.split_at((managed.at as usize).min(self.body.len()));
                out.extend_from_slice(before);
                out.extend_from_slice(&managed.text);
                out.extend_from_slice(after);
            }
        }
    }
}

/// Cuts `metadata.managedFields` (the member, with one of the commas beside it) out of `json`,
/// an object's encoding: the rest, and the interned text cut with the offset it goes back at.
fn cut_managed_fields(json: Vec<u8>) -> (Vec<u8>, Option<Managed>) {
    let member = json_scan::find(&json, &["metadata"]).and_then(|metadata| {
        let (key, value) = json_scan::members(&json, metadata).find(|(key, _)| key.text(&json) == "managedFields")?;
        Some((key.start().checked_sub(1)?, json_scan::value_end(&json, value)?))
    });
    let Some((start, end)) = member else { return (json, None) };
    let (from, to) = match (json.get(start.wrapping_sub(1)), json.get(end)) {
        (_, Some(b',')) => (start, end + 1),
        (Some(b','), _) => (start - 1, end),
        _ => (start, end),
    };
    let Ok(at) = u32::try_from(from) else { return (json, None) };
    let text = intern(&json[from..to]);
    let mut rest = Vec::with_capacity(json.len() - (to - from));
    rest.extend_from_slice(&json[..from]);
    rest.extend_from_slice(&json[to..]);
    (rest, Some(Managed { at, text }))
}

/// The distinct managed-fields texts of every stored object. An entry only the set still holds
/// is dropped when the set has doubled since the last sweep, so the set stays at most twice the
/// texts in use, at a cost per insertion that is constant on average.
struct Interned {
    texts: HashSet<Arc<[u8]>, foldhash::fast::RandomState>,
    sweep_at: usize,
}

static INTERNED: parking_lot::Mutex<Option<Interned>> = parking_lot::Mutex::new(None);

/// The shared copy of `text`.
fn intern(text: &[u8]) -> Arc<[u8]> {
    let mut guard = INTERNED.lock();
    let interned = guard.get_or_insert_with(|| Interned { texts: HashSet::default(), sweep_at: 1024 });
    if let Some(shared) = interned.texts.get(text) {
        return shared.clone();
    }
    let shared: Arc<[u8]> = Arc::from(text);
    interned.texts.insert(shared.clone());
    if interned.texts.len() >= interned.sweep_at {
        // Only this lock hands out copies, so a count of one stays one.
        interned.texts.retain(|t| Arc::strong_count(t) > 1);
        interned.sweep_at = (2 * interned.texts.len()).max(1024);
    }
    shared
}

/// A stored object decoded, for the rules of a write that decides on it (see `store::UpdateFn`).
pub struct Current<K> {
    stored: Arc<Stored<K>>,
    object: K,
}

impl<K: ApiResource> Current<K> {
    /// `stored`, decoded.
    pub fn decode(stored: Arc<Stored<K>>) -> Result<Self> {
        Ok(Self { object: stored.decode()?, stored })
    }
}

impl<K> Current<K> {
    /// The stored form.
    pub fn stored(&self) -> &Arc<Stored<K>> {
        &self.stored
    }

    /// The decoded object.
    pub fn object(&self) -> &K {
        &self.object
    }
}

impl<K> std::ops::Deref for Current<K> {
    type Target = K;

    fn deref(&self) -> &K {
        &self.object
    }
}

impl<K> std::fmt::Debug for Stored<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.json()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::resource::ResourceInfo;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A resource with a selectable field, as Llama (which this layer does not import).
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    #[kube(group = "farm.example.com", version = "v1alpha", kind = "Llama", namespaced, derive = "PartialEq")]
    struct LlamaSpec {
        weight: f64,
        height: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        color: Option<String>,
    }

    impl ApiResource for Llama {
        const INFO: ResourceInfo = ResourceInfo {
            kind: "Llama",
            list_kind: "LlamaList",
            plural: "llamas",
            singular: "llama",
            short_names: &[],
            categories: &[],
            namespaced: true,
            verbs: &[],
            description: "",
            selectable_fields: &["spec.color"],
            subresources: &[],
        };

        fn body_properties() -> (serde_json::Map<String, serde_json::Value>, Vec<&'static str>) {
            (serde_json::Map::new(), Vec::new())
        }
    }

    fn llama(name: &str, color: &str) -> Llama {
        let mut llama = Llama::new(name, LlamaSpec { weight: 120.5, height: 170.0, color: Some(color.to_string()) });
        llama.metadata.namespace = Some("farm".into());
        llama.metadata.resource_version = Some("42".into());
        llama.metadata.labels = Some([("herd".to_string(), "a".to_string()), ("b".into(), "c\"d".into())].into());
        llama.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            operation: Some("Update".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(serde_json::json!({"f:spec": {"f:weight": {}}}))),
            ..Default::default()
        }]);
        llama
    }

    #[test]
    fn the_bytes_are_the_objects_compact_json_and_decode_to_it() {
        let object = llama("dolly", "white \u{e9}\n");
        let stored = Stored::new(object.clone()).unwrap();
        assert_eq!(stored.json(), serde_json::to_vec(&object).unwrap());
        let mut written = b"[".to_vec();
        stored.write_json(&mut written);
        assert_eq!(&written[1..], &stored.json()[..]);
        assert_eq!(stored.json_len(), stored.json().len());
        assert_eq!(stored.decode().unwrap(), object);
        assert_eq!(stored.metadata_json(), serde_json::to_vec(&object.metadata).unwrap());
        let mut plain = object.clone();
        plain.metadata.managed_fields = None;
        assert!(object.metadata.managed_fields.is_some());
        assert_eq!(stored.decode_without_managed_fields().unwrap(), plain);
        let plain = Stored::new(plain).unwrap();
        assert_eq!(plain.json(), serde_json::to_vec(&plain.decode().unwrap()).unwrap());
        assert!(Arc::ptr_eq(&plain.head, &stored.head), "the head is shared");
        assert_eq!(&stored.head[..], br#"{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{"#);
    }

    #[test]
    fn the_index_reads_key_labels_version_and_selectable_fields() {
        let stored = Stored::new(llama("dolly", "brown \"and\" white")).unwrap();
        assert_eq!(stored.key(), ObjectKey::new("farm", "dolly"));
        assert_eq!(stored.resource_version(), 42);
        assert_eq!(stored.label("herd").as_deref(), Some("a"));
        assert_eq!(stored.label("b").as_deref(), Some("c\"d"));
        assert_eq!(stored.label("none"), None);
        assert_eq!(stored.field("spec.color").as_deref(), Some("brown \"and\" white"));
        assert_eq!(stored.field("metadata.name").as_deref(), Some("dolly"));
        assert_eq!(stored.field("spec.weight"), None, "not a selectable field");
        let mut bare = llama("x", "");
        bare.spec.color = None;
        bare.metadata.resource_version = None;
        let bare = Stored::new(bare).unwrap();
        assert_eq!(bare.field("spec.color").as_deref(), Some(""), "an unset field selects as empty");
        assert_eq!(bare.resource_version(), 0);
    }

    #[test]
    fn managed_fields_come_back_where_they_were_whatever_is_beside_them() {
        let mut alone = llama("x", "white");
        alone.metadata = ObjectMeta { managed_fields: alone.metadata.managed_fields.take(), ..Default::default() };
        let mut last = llama("x", "white");
        last.metadata = ObjectMeta {
            labels: last.metadata.labels.take(),
            managed_fields: last.metadata.managed_fields.take(),
            ..Default::default()
        };
        let mut empty = llama("x", "white");
        empty.metadata.managed_fields = Some(Vec::new());
        for object in [alone, last, empty] {
            let stored = Stored::new(object.clone()).unwrap();
            assert_eq!(stored.json(), serde_json::to_vec(&object).unwrap());
            assert_eq!(stored.decode().unwrap(), object);
        }
    }

    #[test]
    fn equal_managed_fields_are_kept_once() {
        let a = Stored::new(llama("a", "white")).unwrap();
        let b = Stored::new(llama("b-longer-name", "brown")).unwrap();
        let (Some(ma), Some(mb)) = (&a.managed, &b.managed) else { panic!("managed fields kept apart") };
        assert!(Arc::ptr_eq(&ma.text, &mb.text));
        assert!(!a.body.windows(13).any(|w| w == b"managedFields"));
    }
}
