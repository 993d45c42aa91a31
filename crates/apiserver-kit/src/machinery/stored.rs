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
//! fields and `time`). The resourceVersion is kept as its number. All three are spliced back in
//! when the bytes are written out. The index shares one allocation with the text (`stored/packed.rs`).
//! With 100,000 small objects (about 250 bytes of JSON each) this takes the memory store from 428 MB to the figure in the
//! repository's `docs/performance.md` ("Memory: how objects are stored").

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

mod packed;
use packed::Packed;

/// A change of an encoding: the bytes of `range` replaced by `with` (borrowed, often from the
/// encoding itself, so that an edit costs no allocation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit<'a> {
    /// The bytes replaced.
    pub range: std::ops::Range<usize>,
    /// What replaces them.
    pub with: &'a [u8],
}

/// The two members of `metadata` kept out of an object's body, and where they go back: the
/// managed fields (interned text, commas included) and the resourceVersion (written from the
/// number, so that the text of each object is as short as it can be).
#[derive(Clone, Default)]
struct Holes {
    /// The managed-fields text, when kept apart.
    managed: Option<Arc<[u8]>>,
    /// Where the managed fields go in the body.
    managed_at: u32,
    /// Where `"resourceVersion":"…"` goes in the body, and which comma goes with it (see
    /// [`Comma`]), when it is kept apart: the offset shifted left by two, the comma below.
    version: u32,
}

/// Which comma goes with a member kept apart (0 in [`Holes::version`]: none is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comma {
    /// After it: it was not the last member.
    After = 1,
    /// Before it: it was the last of several.
    Before = 2,
    /// Neither: it was alone.
    Alone = 3,
}

impl Holes {
    fn version_at(&self) -> Option<(usize, Comma)> {
        let comma = match self.version & 3 {
            1 => Comma::After,
            2 => Comma::Before,
            3 => Comma::Alone,
            _ => return None,
        };
        Some(((self.version >> 2) as usize, comma))
    }

    /// The word of [`Holes::version`] for `at` and `comma`; `None` past what it holds.
    fn version_word(at: usize, comma: Comma) -> Option<u32> {
        let at = u32::try_from(at).ok().filter(|a| *a < 1 << 30)?;
        Some((at << 2) | comma as u32)
    }

    /// Both places moved by `shift`; `None` if one leaves what an offset holds.
    fn moved(mut self, shift: impl Fn(u32) -> Option<u32>) -> Option<Self> {
        if self.managed.is_some() {
            self.managed_at = shift(self.managed_at)?;
        }
        if let Some((at, comma)) = self.version_at() {
            self.version = Self::version_word(shift(u32::try_from(at).ok()?)? as usize, comma)?;
        }
        Some(self)
    }

    /// Both moved `by` bytes earlier (the head cut off); `None` if one would start before.
    fn shifted_back(self, by: usize) -> Option<Self> {
        let by = u32::try_from(by).ok()?;
        self.moved(|at| at.checked_sub(by))
    }

    /// Both moved `by` bytes later (a head put before).
    fn shifted_on(self, by: usize) -> Option<Self> {
        let by = u32::try_from(by).ok()?;
        self.moved(|at| at.checked_add(by))
    }

    /// The last place a hole goes (0 with none): an edit after it leaves both where they are.
    fn last(&self) -> usize {
        let managed = if self.managed.is_some() { self.managed_at as usize } else { 0 };
        managed.max(self.version_at().map_or(0, |(at, _)| at))
    }
}

/// An immutable stored object: its encoding and its index, in 64 bytes (80 with the `Arc`
/// that shares it) besides one allocation for its text and index.
pub struct Stored<K> {
    /// The start of the encoding, up to the `{` of `metadata`: the same for every object of a
    /// type (`{"apiVersion":…,"kind":…,"metadata":{`), so interned.
    head: Arc<[u8]>,
    /// The rest of the encoding without what [`Holes`] keeps apart (the body), and its spans:
    /// `metadata.namespace`, `metadata.name`, the value of each of the resource's selectable
    /// fields in `K::info()`'s order ([`Span::EMPTY`] when unset), then the key and value of each
    /// label, in key order.
    packed: Packed,
    holes: Holes,
    /// `metadata.resourceVersion` (0 when unset, as on a dry-run create).
    resource_version: u64,
    kind: PhantomData<fn() -> K>,
}

/// Where the selectable fields start in the spans.
const FIELDS: usize = 2;

fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    super::json::to_vec(value).map_err(|e| Error::Internal(format!("encoding an object: {e}")))
}

impl<K: ApiResource> Stored<K> {
    /// The stored form of `object`.
    pub fn new(object: K) -> Result<Self> {
        let (json, holes, resource_version) = cut_holes(encode(&object)?);
        Ok(Self::index(json, holes, resource_version))
    }

    /// Indexes `json` (an object's encoding without what `holes` keeps apart, its offsets in
    /// `json`) and cuts off its head.
    fn index(json: Vec<u8>, holes: Holes, resource_version: u64) -> Self {
        let metadata = json_scan::find(&json, &["metadata"]);
        // One pass over metadata's members.
        let (mut namespace, mut name, mut labels) = (None, None, None);
        for (key, value) in metadata.into_iter().flat_map(|m| json_scan::members(&json, m)) {
            match &*key.text(&json) {
                "namespace" => namespace = json_scan::scalar(&json, value),
                "name" => name = json_scan::scalar(&json, value),
                "labels" => labels = Some(value),
                _ => {}
            }
        }
        let mut spans = vec![namespace.unwrap_or_default(), name.unwrap_or_default()];
        spans.extend(K::info().selectable_fields.iter().map(|path| {
            let path: Vec<&str> = path.split('.').collect();
            json_scan::find(&json, &path).and_then(|at| json_scan::scalar(&json, at)).unwrap_or_default()
        }));
        spans.extend(labels.into_iter().flat_map(|at| json_scan::string_members(&json, at)).flat_map(|(k, v)| [k, v]));
        // The head ends at metadata's opening brace, before every indexed field and the holes.
        let head_len = metadata.map_or(0, |m| m + 1);
        let cut = holes
            .clone()
            .shifted_back(head_len)
            .filter(|_| spans.iter().all(|s| *s == Span::EMPTY || s.start() >= head_len));
        let (head_len, holes) = match cut {
            Some(cut) => (head_len, cut),
            None => (0, holes),
        };
        let spans: Vec<Span> = spans.iter().map(|s| s.shifted_back(head_len).unwrap_or_default()).collect();
        let packed = Packed::new(&spans, &json[head_len..]);
        Self { head: intern(&json[..head_len]), packed, holes, resource_version, kind: PhantomData }
    }

    /// This object with `revision` as its `resourceVersion`, encoded as if it had always had it.
    /// Only the number kept apart changes when the encoding holds the member where its hole goes
    /// (any object [`Stored::new`] encoded with a resourceVersion set, short of the rare layouts
    /// `cut_holes` leaves whole); otherwise the object is decoded and encoded again. So a store
    /// encodes an object before it takes its lock, and numbers it under the lock.
    pub fn at_revision(mut self, revision: u64) -> Result<Self> {
        if self.holes.version_at().is_some() {
            self.resource_version = revision;
            return Ok(self);
        }
        let mut object = self.decode()?;
        object.meta_mut().resource_version = Some(revision.to_string());
        Self::new(object)
    }

    /// The object, decoded from its encoding.
    pub fn decode(&self) -> Result<K> {
        let json = self.json();
        serde_json::from_slice(&json).map_err(|e| Error::Internal(format!("decoding a stored {}: {e}", K::info().kind)))
    }

    /// The object decoded without `metadata.managedFields`, for what never reads them (a
    /// Table's cells): decoding the managed fields is most of decoding a small object.
    pub fn decode_without_managed_fields(&self) -> Result<K> {
        let mut json = Vec::with_capacity(self.json_len());
        json.extend_from_slice(&self.head);
        self.write_body(&mut json, false, None);
        serde_json::from_slice(&json).map_err(|e| Error::Internal(format!("decoding a stored {}: {e}", K::info().kind)))
    }

    /// The object's metadata, decoded alone.
    pub fn metadata(&self) -> Result<ObjectMeta> {
        serde_json::from_slice(&self.metadata_json())
            .map_err(|e| Error::Internal(format!("decoding a stored {}'s metadata: {e}", K::info().kind)))
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
        let body = self.packed.body();
        let mut labels = self.packed.spans_from(FIELDS + K::info().selectable_fields.len());
        while let (Some(k), Some(v)) = (labels.next(), labels.next()) {
            if k.text(body) == key {
                return Some(v.text(body));
            }
        }
        None
    }

    /// Where the value of the selectable field `path` (one of `K::info().selectable_fields`) sits
    /// in [`Stored::body`], as it is encoded (a string's contents, escaped, between its quotes);
    /// `None` when it is unset or not one.
    pub fn field_span(&self, path: &str) -> Option<Span> {
        let i = K::info().selectable_fields.iter().position(|f| *f == path)?;
        self.packed.span(FIELDS + i).filter(|s| *s != Span::EMPTY)
    }

    /// The object's selectable field `path` (`metadata.name`, `metadata.namespace` or one of
    /// `K::info().selectable_fields`): its value, empty when unset; `None` for another path.
    pub fn field(&self, path: &str) -> Option<Cow<'_, str>> {
        match path {
            "metadata.name" => Some(self.name()),
            "metadata.namespace" => Some(self.namespace()),
            _ => {
                let i = K::info().selectable_fields.iter().position(|f| *f == path)?;
                Some(self.text(FIELDS + i))
            }
        }
    }
}

impl<K> Stored<K> {
    /// The text of `spans[i]`, empty when there is none.
    fn text(&self, i: usize) -> Cow<'_, str> {
        self.packed.span(i).map_or(Cow::Borrowed(""), |s| s.text(self.packed.body()))
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
        let body = self.packed.body();
        let bytes = |i: usize| self.packed.span(i).map_or(Cow::Borrowed(&b""[..]), |s| s.bytes(body));
        (bytes(0), bytes(1))
    }

    /// The object's key.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.namespace(), self.name())
    }

    /// The length of the object's compact JSON.
    pub fn json_len(&self) -> usize {
        let managed = self.holes.managed.as_ref().map_or(0, |m| m.len());
        let version = match self.holes.version_at() {
            // `"resourceVersion":"…"` and a comma.
            Some((_, comma)) => 21 + decimal_len(self.resource_version) - usize::from(comma == Comma::Alone),
            None => 0,
        };
        self.head.len() + self.packed.body().len() + managed + version
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

    /// The rest of the encoding, without the managed fields and the resourceVersion when they
    /// are kept apart: what an [`Edit`] after them applies to.
    pub fn body(&self) -> &[u8] {
        self.packed.body()
    }

    /// Where `edit` (relative to [`Self::body`]) may be made: after the places of what is kept
    /// apart, and inside the body; its bounds, or `None`.
    fn edit_bounds<'e>(&self, edit: Option<&Edit<'e>>) -> Option<(usize, usize, &'e [u8])> {
        let len = self.packed.body().len();
        match edit {
            None => Some((len, len, &[][..])),
            Some(e) if e.range.start >= self.holes.last() && e.range.start <= e.range.end && e.range.end <= len => {
                Some((e.range.start, e.range.end, e.with))
            }
            Some(_) => None,
        }
    }

    /// Appends the body with what is kept apart put back (the managed fields only when
    /// `managed`), and `edit` (bounds from [`Self::edit_bounds`]) made.
    fn write_body(&self, out: &mut Vec<u8>, managed: bool, edit: Option<(usize, usize, &[u8])>) {
        let body = self.packed.body();
        let (len, holes) = (body.len(), &self.holes);
        let managed_at = holes.managed.as_ref().filter(|_| managed).map(|text| (holes.managed_at as usize, text));
        let version_at = holes.version_at();
        // The managed fields go first, even where both go at one place: `cut_holes` cuts the
        // resourceVersion only after them.
        let mut at = 0;
        if let Some((to, text)) = managed_at {
            at = to.min(len);
            out.extend_from_slice(&body[..at]);
            out.extend_from_slice(text);
        }
        if let Some((to, comma)) = version_at {
            let to = to.clamp(at, len);
            out.extend_from_slice(&body[at..to]);
            write_version(out, self.resource_version, comma);
            at = to;
        }
        match edit {
            Some((from, to, with)) => {
                out.extend_from_slice(body.get(at..from).unwrap_or_default());
                out.extend_from_slice(with);
                out.extend_from_slice(body.get(to..).unwrap_or_default());
            }
            None => out.extend_from_slice(body.get(at..).unwrap_or_default()),
        }
    }

    /// Appends the object's compact JSON to `out`, with `head` in place of its head and `edit`
    /// (relative to [`Self::body`]) made to its body: for conversions that move bytes, with no
    /// copy but the one into `out`. Writes nothing and returns false when `edit` is not after
    /// what is kept apart or not inside the body.
    pub fn write_json_with(&self, out: &mut Vec<u8>, head: &[u8], edit: Option<&Edit<'_>>) -> bool {
        let Some(bounds) = self.edit_bounds(edit) else { return false };
        out.extend_from_slice(head);
        self.write_body(out, true, Some(bounds));
        true
    }

    /// This object at another version `V` whose encoding is this one's with `head` and `edit`,
    /// as [`Self::write_json_with`] writes it; the managed-fields text is shared, not copied.
    pub fn edited<V: ApiResource>(&self, head: &[u8], edit: Option<&Edit<'_>>) -> Option<Stored<V>> {
        let (from, to, with) = self.edit_bounds(edit)?;
        let body = self.packed.body();
        let json = [head, body.get(..from)?, with, body.get(to..)?].concat();
        let holes = self.holes.clone().shifted_on(head.len())?;
        Some(Stored::index(json, holes, self.resource_version))
    }

    /// Appends the object's compact JSON to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        self.write_body(out, true, None);
    }
}

/// How many digits `n` has.
fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Appends the member `"resourceVersion":"<version>"` with its comma.
fn write_version(out: &mut Vec<u8>, version: u64, comma: Comma) {
    if comma == Comma::Before {
        out.push(b',');
    }
    out.extend_from_slice(b"\x22resourceVersion\x22:\x22");
    out.extend_from_slice(itoa::Buffer::new().format(version).as_bytes());
    out.push(b'\x22');
    if comma == Comma::After {
        out.push(b',');
    }
}

/// The range `(from, to)` of the member whose key is `name` and value starts at `value`, with
/// one of the commas beside it, and which.
fn with_comma(json: &[u8], (name, value): (Span, usize)) -> Option<(usize, usize, Comma)> {
    let (start, end) = (name.start().checked_sub(1)?, json_scan::value_end(json, value)?);
    Some(match (json.get(start.wrapping_sub(1)), json.get(end)) {
        (_, Some(b',')) => (start, end + 1, Comma::After),
        (Some(b','), _) => (start - 1, end, Comma::Before),
        _ => (start, end, Comma::Alone),
    })
}

/// Cuts out of `json` (an object's encoding) `metadata.managedFields` (interned) and
/// `metadata.resourceVersion` (kept as a number), each with one of the commas beside it: the
/// rest, where they go back, and the resourceVersion (0 when unset).
///
/// The resourceVersion is cut when it is the decimal it is read as, and after the managed
/// fields (as `ObjectMeta` writes them), so that both go back in the order they were cut.
fn cut_holes(json: Vec<u8>) -> (Vec<u8>, Holes, u64) {
    let Some(metadata) = json_scan::find(&json, &["metadata"]) else { return (json, Holes::default(), 0) };
    let (mut managed, mut version) = (None, None);
    for (key, value) in json_scan::members(&json, metadata) {
        match &*key.bytes(&json) {
            b"managedFields" => managed = Some((key, value)),
            b"resourceVersion" => version = Some((key, value)),
            _ => {}
        }
    }
    let version_text = version.and_then(|(_, at)| json_scan::scalar(&json, at)).map(|v| v.text(&json).into_owned());
    let resource_version = version_text.as_deref().and_then(|t| t.parse().ok()).unwrap_or(0);
    let managed = managed.and_then(|member| with_comma(&json, member));
    let version = version
        .and_then(|member| with_comma(&json, member))
        .filter(|_| version_text.as_deref() == Some(itoa::Buffer::new().format(resource_version)))
        .filter(|(from, _, _)| managed.is_none_or(|(_, to, _)| *from >= to));
    let mut holes = Holes::default();
    let mut rest = Vec::with_capacity(json.len());
    let mut at = 0;
    if let Some((from, to, _)) = managed
        && let Ok(offset) = u32::try_from(from)
    {
        rest.extend_from_slice(&json[..from]);
        holes.managed = Some(intern(&json[from..to]));
        holes.managed_at = offset;
        at = to;
    }
    if let Some((from, to, comma)) = version
        && let Some(word) = Holes::version_word(rest.len() + (from - at), comma)
    {
        rest.extend_from_slice(&json[at..from]);
        holes.version = word;
        at = to;
    }
    rest.extend_from_slice(&json[at..]);
    (rest, holes, resource_version)
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
    use crate::machinery::testing::{Widget, widget};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};

    fn object(name: &str, color: &str) -> Widget {
        let mut object = widget("shop", name, 120.5);
        object.spec.color = Some(color.to_string());
        object.metadata.resource_version = Some("42".into());
        object.metadata.labels = Some([("herd".to_string(), "a".to_string()), ("b".into(), "c\"d".into())].into());
        object.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            operation: Some("Update".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(serde_json::json!({"f:spec": {"f:size": {}}}))),
            ..Default::default()
        }]);
        object
    }

    #[test]
    fn the_bytes_are_the_objects_compact_json_and_decode_to_it() {
        let object = object("dolly", "white \u{e9}\n");
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
        assert_eq!(
            &stored.head[..],
            b"\x7b\"apiVersion\":\"test.example.com/v1\",\"kind\":\"Widget\",\"metadata\":\x7b"
        );
    }

    #[test]
    fn the_index_reads_key_labels_version_and_selectable_fields() {
        let stored = Stored::new(object("dolly", "brown \"and\" white")).unwrap();
        assert_eq!(stored.key(), ObjectKey::new("shop", "dolly"));
        assert_eq!(stored.resource_version(), 42);
        assert_eq!(stored.label("herd").as_deref(), Some("a"));
        assert_eq!(stored.label("b").as_deref(), Some("c\"d"));
        assert_eq!(stored.label("none"), None);
        assert_eq!(stored.field("spec.color").as_deref(), Some("brown \"and\" white"));
        assert_eq!(stored.field("metadata.name").as_deref(), Some("dolly"));
        assert_eq!(stored.field("spec.size"), None, "not a selectable field");
        let mut bare = object("x", "");
        bare.spec.color = None;
        bare.metadata.resource_version = None;
        let bare = Stored::new(bare).unwrap();
        assert_eq!(bare.field("spec.color").as_deref(), Some(""), "an unset field selects as empty");
        assert_eq!(bare.resource_version(), 0);
    }

    #[test]
    fn managed_fields_come_back_where_they_were_whatever_is_beside_them() {
        let mut alone = object("x", "white");
        alone.metadata = ObjectMeta { managed_fields: alone.metadata.managed_fields.take(), ..Default::default() };
        let mut last = object("x", "white");
        last.metadata = ObjectMeta {
            labels: last.metadata.labels.take(),
            managed_fields: last.metadata.managed_fields.take(),
            ..Default::default()
        };
        let mut empty = object("x", "white");
        empty.metadata.managed_fields = Some(Vec::new());
        for object in [alone, last, empty] {
            let stored = Stored::new(object.clone()).unwrap();
            assert_eq!(stored.json(), serde_json::to_vec(&object).unwrap());
            assert_eq!(stored.decode().unwrap(), object);
        }
    }

    #[test]
    fn equal_managed_fields_are_kept_once() {
        let a = Stored::new(object("a", "white")).unwrap();
        let b = Stored::new(object("b-longer-name", "brown")).unwrap();
        let (Some(ma), Some(mb)) = (&a.holes.managed, &b.holes.managed) else { panic!("managed fields kept apart") };
        assert!(Arc::ptr_eq(ma, mb));
        assert!(!a.body().windows(13).any(|w| w == b"managedFields"));
    }

    #[test]
    fn the_resource_version_is_kept_as_a_number_wherever_it_sits() {
        assert_eq!(std::mem::size_of::<Stored<Widget>>(), 64, "80 with its Arc: an allocator size class");
        let mut alone = object("x", "white");
        alone.metadata = ObjectMeta { resource_version: Some("7".into()), ..Default::default() };
        let mut last = object("x", "white");
        last.metadata.uid = None;
        let mut first = object("x", "white");
        first.metadata =
            ObjectMeta { resource_version: Some("1234567890".into()), uid: Some("u".into()), ..Default::default() };
        for object in [alone, last, first, object("x", "white")] {
            let stored = Stored::new(object.clone()).unwrap();
            assert!(stored.holes.version_at().is_some(), "{stored:?}");
            assert!(!stored.body().windows(15).any(|w| w == b"resourceVersion"));
            assert_eq!(stored.json(), serde_json::to_vec(&object).unwrap());
            assert_eq!(stored.json_len(), stored.json().len());
            assert_eq!(stored.decode().unwrap(), object);
            let mut plain = object.clone();
            plain.metadata.managed_fields = None;
            assert_eq!(stored.decode_without_managed_fields().unwrap(), plain);
        }
        for kept in ["007", "x", "-1", "18446744073709551616"] {
            let mut object = object("x", "white");
            object.metadata.resource_version = Some(kept.into());
            let stored = Stored::new(object.clone()).unwrap();
            assert!(stored.holes.version_at().is_none(), "{kept} is not the number it reads as");
            assert_eq!(stored.json(), serde_json::to_vec(&object).unwrap());
            assert_eq!(stored.resource_version(), kept.parse().unwrap_or(0));
        }
    }

    #[test]
    fn an_edited_copy_keeps_what_is_kept_apart() {
        let stored = Stored::new(object("dolly", "white")).unwrap();
        let colour = stored.field_span("spec.color").unwrap();
        let edit = Edit { range: colour.start()..colour.end(), with: b"brown" };
        let head = stored.head().to_vec();
        let edited: Stored<Widget> = stored.edited(&head, Some(&edit)).unwrap();
        let mut expected = object("dolly", "brown");
        assert_eq!(edited.json(), serde_json::to_vec(&expected).unwrap());
        assert_eq!((edited.resource_version(), edited.field("spec.color").as_deref()), (42, Some("brown")));
        let mut written = Vec::new();
        assert!(stored.write_json_with(&mut written, &head, Some(&edit)));
        assert_eq!(written, edited.json());
        let before_holes = Edit { range: 1..2, with: b"" };
        assert!(!stored.write_json_with(&mut written, &head, Some(&before_holes)));
        expected.metadata.managed_fields = None;
        assert_eq!(edited.decode_without_managed_fields().unwrap(), expected);
    }

    proptest::proptest! {
        /// Whatever the metadata, the stored bytes are the object's compact JSON, their length
        /// is known without writing them, and the index reads the object's own values.
        #[test]
        fn any_object_is_stored_as_its_json(name in "[a-z\x22\x5c\x5cé]{0,6}", version in proptest::option::of(0u64..u64::MAX), labels in proptest::collection::btree_map("[a-z\x22]{1,4}", "[a-z\x22]{0,4}", 0..4), managed in proptest::bool::ANY, uid in proptest::option::of("[a-z]{1,3}")) {
            let mut object = object(&name, "white");
            object.metadata.resource_version = version.map(|v| v.to_string());
            object.metadata.labels = Some(labels.clone());
            object.metadata.uid = uid;
            if !managed {
                object.metadata.managed_fields = None;
            }
            let stored = Stored::new(object.clone()).unwrap();
            proptest::prop_assert_eq!(stored.json(), serde_json::to_vec(&object).unwrap());
            proptest::prop_assert_eq!(stored.json_len(), stored.json().len());
            proptest::prop_assert_eq!(stored.resource_version(), version.unwrap_or(0));
            proptest::prop_assert_eq!(stored.name(), name.as_str());
            for (k, v) in &labels {
                proptest::prop_assert_eq!(stored.label(k).map(|l| l.into_owned()), Some(v.clone()));
            }
        }
    }
}
